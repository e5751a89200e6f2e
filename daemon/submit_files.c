// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Sealed copies of the files a client hands over with a submit
 * (submit_files.h): the mount table, then fstat and fstatfs decide before
 * any read (FUSE, network and stacked filesystems refused: a user can stall
 * their reads, and their fstat, so the mount table's answer comes first; a
 * mount the table lacks is refused unless the file is shmem or on a block
 * device, which no member can mount), sendfile
 * copies in the kernel (no user-space buffer, nothing mapped in colocd), a
 * chunk at a time so that a copy given up on stops, F_ADD_SEALS fixes the
 * bytes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include "coloc/protocol.h"
#include "profile.h"
#include "submit_files.h"
#include "submit_mount.h"

#define SUBMIT_SEALS (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

/* Network filesystems linux/magic.h does not name */
#define SUBMIT_LUSTRE_MAGIC 0x0bd00bd0
#define SUBMIT_GPFS_MAGIC 0x47504653
#define SUBMIT_ORANGEFS_MAGIC 0x20030528
#define SUBMIT_AFS_FS_MAGIC 0x6b414653 /* kAFS, beside OpenAFS's AFS_SUPER_MAGIC */

/*
 * Filesystems whose reads a user can stall (FUSE; a network filesystem whose
 * server or link the user controls, or that hangs when the server does; a
 * stacked one, whose layers, FUSE among them, the mount table does not show)
 * or whose files are not data: statfs's magic, and the types mountinfo names
 * them by (one with a subtype, "fuse.sshfs", too).
 */
static const struct {
	unsigned long magic;
	const char *name;
	const char *types; /* space-separated */
} submit_refused_fs[] = {
	{ FUSE_SUPER_MAGIC, "FUSE", "fuse fuseblk virtiofs" },
	{ OVERLAYFS_SUPER_MAGIC, "stacked (overlay)", "overlay" },
	{ ECRYPTFS_SUPER_MAGIC, "stacked (eCryptfs)", "ecryptfs" },
	{ NFS_SUPER_MAGIC, "NFS", "nfs nfs4" },
	{ SMB_SUPER_MAGIC, "SMB", "smbfs" },
	{ CIFS_SUPER_MAGIC, "CIFS", "cifs" },
	{ SMB2_SUPER_MAGIC, "SMB2", "smb3" },
	{ V9FS_MAGIC, "9p", "9p" },
	{ CEPH_SUPER_MAGIC, "Ceph", "ceph" },
	{ AFS_SUPER_MAGIC, "AFS", "afs" },
	{ SUBMIT_AFS_FS_MAGIC, "AFS", "afs" },
	{ CODA_SUPER_MAGIC, "Coda", "coda" },
	{ NCP_SUPER_MAGIC, "NCP", "ncpfs" },
	{ SUBMIT_LUSTRE_MAGIC, "Lustre", "lustre" },
	{ SUBMIT_GPFS_MAGIC, "GPFS", "gpfs" },
	{ SUBMIT_ORANGEFS_MAGIC, "OrangeFS", "pvfs2" },
	{ PROC_SUPER_MAGIC, "proc", "proc" },
	{ SYSFS_MAGIC, "sysfs", "sysfs" },
	{ DEBUGFS_MAGIC, "debugfs", "debugfs" },
	{ TRACEFS_MAGIC, "tracefs", "tracefs" },
	{ SECURITYFS_MAGIC, "securityfs", "securityfs" },
	{ CGROUP2_SUPER_MAGIC, "cgroup2", "cgroup2" },
	{ BPF_FS_MAGIC, "bpf", "bpf" },
};

/* The refused filesystem f_type names, or NULL. */
const char *submit_file_refused_fs(unsigned long f_type)
{
	for (size_t i = 0; i < sizeof(submit_refused_fs) / sizeof(submit_refused_fs[0]); i++)
		if ((f_type & 0xffffffffu) == submit_refused_fs[i].magic)
			return submit_refused_fs[i].name;
	return NULL;
}

/* Whether the mountinfo type (subtype and all) is one of types. */
static bool submit_type_in(const char *type, const char *types)
{
	size_t n = strcspn(type, ".");

	for (const char *t = types; *t; t += strspn(t, " ")) {
		size_t len = strcspn(t, " ");

		if (len == n && !strncmp(t, type, n))
			return true;
		t += len;
	}
	return false;
}

/* The refused filesystem a mountinfo type names, or NULL. */
static const char *submit_file_refused_type(const char *type)
{
	for (size_t i = 0; i < sizeof(submit_refused_fs) / sizeof(submit_refused_fs[0]); i++)
		if (submit_type_in(type, submit_refused_fs[i].types))
			return submit_refused_fs[i].name;
	return NULL;
}

static int submit_file_refuse_fs(const char *what, const char *fs, struct coloc_err *err)
{
	return coloc_err_set(err, -EINVAL,
			     "%s is on a %s filesystem, whose reads can stall colocd; copy it to a "
			     "local disk or into a memfd first",
			     what, fs);
}

/*
 * The filesystem judged before any call that reaches it (submit_mount.h).
 * F_GET_SEALS answers for shmem alone (a memfd, whose internal mount no
 * mountinfo lists, or tmpfs): memory, no server behind it. A mount colocd's
 * table lacks is another mount namespace's, perhaps a member's own FUSE or
 * overlay: taken only on a block device (a disk root mounted, as a
 * container's volume), which no user namespace can mount.
 */
static int submit_file_check_mount(int fd, const char *what, struct coloc_err *err)
{
	struct submit_mount m;
	const char *fs;
	int ret;

	if (fcntl(fd, F_GET_SEALS) >= 0)
		return 0;
	ret = submit_mount_find(fd, &m);
	if (ret)
		return coloc_err_set(err, ret, "%s: cannot tell its filesystem: %s", what,
				     strerror(-ret));
	if (!m.type[0] && !m.block_dev)
		return coloc_err_set(err, -EINVAL,
				     "%s is on a mount colocd cannot see (another mount "
				     "namespace's: a container's, or one of your own), so colocd "
				     "cannot tell what its reads reach; copy it into a memfd, or "
				     "onto a disk mounted where colocd runs, and submit that",
				     what);
	fs = m.type[0] ? submit_file_refused_type(m.type) : NULL;
	return fs ? submit_file_refuse_fs(what, fs, err) : 0;
}

static const char *submit_file_kind(mode_t mode)
{
	return S_ISFIFO(mode) ? "a FIFO" :
	       S_ISCHR(mode)  ? "a character device" :
	       S_ISBLK(mode)  ? "a block device" :
	       S_ISSOCK(mode) ? "a socket" :
	       S_ISDIR(mode)  ? "a directory" :
				"not a regular file";
}

static int submit_file_check(int fd, const char *what, const struct stat *st, uint64_t budget,
			     struct coloc_err *err)
{
	struct statfs sfs;
	const char *fs;
	int fl;

	if (!S_ISREG(st->st_mode))
		return coloc_err_set(err, -EINVAL, "%s is %s; colocd takes regular files only",
				     what, submit_file_kind(st->st_mode));
	if (fstatfs(fd, &sfs))
		return coloc_err_set(err, -errno, "%s: fstatfs: %s", what, strerror(errno));
	fs = submit_file_refused_fs((unsigned long)sfs.f_type);
	if (fs)
		return submit_file_refuse_fs(what, fs, err);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_WRONLY || (fl & O_PATH))
		return coloc_err_set(err, -EBADF, "%s was not opened for reading", what);
	if (st->st_size <= 0)
		return coloc_err_set(err, -EINVAL, "%s is empty", what);
	if ((uint64_t)st->st_size > COLOC_MAX_SUBMIT_FILE_BYTES)
		return coloc_err_set(err, -EFBIG,
				     "%s is %lld bytes, over colocd's limit of %llu MiB", what,
				     (long long)st->st_size, COLOC_MAX_SUBMIT_FILE_BYTES >> 20);
	if ((uint64_t)st->st_size > budget)
		return coloc_err_set(err, -EDQUOT,
				     "%s is %lld bytes, past the %.1f MiB the submit may still "
				     "bring: colocd takes %llu MiB a submit at most, and no more "
				     "than its owner's quota of submitted files and colocd's over "
				     "all users leave (colocd --max-submit-mib-per-uid, "
				     "--max-submit-mib; remove a tenant to free some)",
				     what, (long long)st->st_size, (double)budget / (1 << 20),
				     COLOC_MAX_SUBMIT_BYTES >> 20);
	return 0;
}

int submit_file_seal(int fd, const char *what, uint64_t *budget, int *out, struct coloc_err *err)
{
	static const int never;

	return submit_file_seal_until(fd, what, &never, budget, out, err);
}

int submit_file_seal_until(int fd, const char *what, const int *cancel, uint64_t *budget, int *out,
			   struct coloc_err *err)
{
	struct stat st;
	off_t off = 0;
	int mfd, ret;

	*out = -1;
	ret = submit_file_check_mount(fd, what, err);
	if (ret)
		return ret;
	if (fstat(fd, &st))
		return coloc_err_set(err, -errno, "%s: fstat: %s", what, strerror(errno));
	ret = submit_file_check(fd, what, &st, *budget, err);
	if (ret)
		return ret;
	mfd = memfd_create("coloc-submit", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return coloc_err_set(err, -errno, "memfd_create: %s", strerror(errno));
	while (off < st.st_size) {
		size_t left = (size_t)(st.st_size - off);
		ssize_t n;

		if (__atomic_load_n(cancel, __ATOMIC_ACQUIRE)) {
			close(mfd);
			return coloc_err_set(err, -ECANCELED,
					     "%s: copy stopped after %lld of %lld bytes", what,
					     (long long)off, (long long)st.st_size);
		}
		n = sendfile(mfd, fd, &off,
			     left < SUBMIT_FILE_CHUNK_BYTES ? left : SUBMIT_FILE_CHUNK_BYTES);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			close(mfd);
			return coloc_err_set(err, ret,
					     "%s: reading it failed after %lld of %lld bytes%s",
					     what, (long long)off, (long long)st.st_size,
					     n ? "" : " (it shrank meanwhile)");
		}
	}
	if (fcntl(mfd, F_ADD_SEALS, SUBMIT_SEALS)) {
		ret = -errno;
		close(mfd);
		return coloc_err_set(err, ret, "sealing the copy of %s: %s", what, strerror(-ret));
	}
	*budget -= (uint64_t)st.st_size;
	*out = mfd;
	return 0;
}

int submit_file_check_sealed(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0)
		return -errno;
	return (seals & SUBMIT_SEALS) == SUBMIT_SEALS ? 0 : -EPERM;
}
