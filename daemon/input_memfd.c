// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An infer's input in a client's memfd (input_memfd.h): the checks that
 * make a hostile descriptor safe for root to read, and the read itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include "coloc/protocol.h"
#include "input_memfd.h"

int input_memfd_check(int fd, size_t offset, size_t bytes, struct coloc_err *err)
{
	struct stat st;
	int seals, flags;

	/*
	 * F_GET_SEALS first: only shmem and hugetlbfs answer it, from the
	 * inode without asking any filesystem, so nothing before it can wait
	 * on a client's file (an fstat of a FUSE or overlayfs file can block
	 * for as long as its server likes).
	 */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return coloc_err_set(err, -EINVAL,
				     "the input's descriptor is not a memfd (it has no seals: "
				     "a pipe, socket, directory or another filesystem's file)");
	/* a tmpfs file answers too, with F_SEAL_SEAL: it can never be sealed */
	if ((seals & F_SEAL_SEAL) && !(seals & F_SEAL_SHRINK))
		return coloc_err_set(err, -EINVAL,
				     "the input's descriptor is not a sealable memfd (a tmpfs "
				     "file, or a memfd made without MFD_ALLOW_SEALING)");
	if (!(seals & F_SEAL_SHRINK))
		return coloc_err_set(err, -EPERM,
				     "the input's memfd is not sealed against shrinking: seal it "
				     "with F_SEAL_SHRINK before sending it");
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_ACCMODE) == O_WRONLY || (flags & O_PATH))
		return coloc_err_set(err, -EBADF, "the input's memfd is not open for reading");
	if (fstat(fd, &st))
		return coloc_err_set(err, -errno, "the input's memfd: fstat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return coloc_err_set(err, -EINVAL, "the input's descriptor is not a memfd");
	if (offset > COLOC_MAX_PAYLOAD_OFFSET || st.st_size < 0 ||
	    (unsigned long long)st.st_size < offset + bytes)
		return coloc_err_set(
			err, -EINVAL,
			"the input's memfd holds %lld bytes, fewer than input_offset + "
			"input_bytes (%zu + %zu)",
			(long long)st.st_size, offset, bytes);
	return 0;
}

bool input_memfd_frozen(int fd, size_t offset, size_t bytes)
{
	const int all = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
	int seals = fcntl(fd, F_GET_SEALS);
	struct statfs fs;
	struct stat st;

	/*
	 * shmem only: a hugetlbfs memfd's hole, mapped, faults with SIGBUS
	 * when the pool is empty (a shmem hole reads as a page of zeros)
	 */
	return seals >= 0 && (seals & all) == all && !offset && bytes && !fstat(fd, &st) &&
	       S_ISREG(st.st_mode) && st.st_size == (off_t)bytes && !fstatfs(fd, &fs) &&
	       fs.f_type == TMPFS_MAGIC;
}

int input_memfd_read(int fd, size_t offset, void *dst, size_t bytes)
{
	size_t got = 0;

	while (got < bytes) {
		ssize_t n = pread(fd, (char *)dst + got, bytes - got, (off_t)(offset + got));

		if (n < 0 && errno == EINTR)
			continue;
		/* neither can happen below a shrink seal; zeros rather than a stale tail */
		if (n <= 0) {
			int ret = n < 0 ? -errno : -ENODATA;

			memset((char *)dst + got, 0, bytes - got);
			return ret;
		}
		got += (size_t)n;
	}
	return 0;
}
