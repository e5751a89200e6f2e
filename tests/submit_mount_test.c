// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * daemon/submit_files.c's judgement of a file's mount, from mounts made
 * for the test: in colocd's own table (here the test's: it unshares its
 * mount namespace first), in init's only, and in namespaces neither
 * shares, a member's own (user and mount namespaces, as `unshare -Urm`)
 * or root's (a disk mounted for a container). A file on a mount neither
 * table lists is refused unless it is shmem or on a block device; a
 * stacked filesystem is refused wherever it is. Needs root (a member uid,
 * mounts); SKIPs what the kernel refuses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "submit_files.h"
#include "submit_ns.h"
#include "testutil.h"

#define MEMBER_UID 64990
#define MODEL_BYTES "the model's bytes, as the member wrote them"
#define UNSEEN_MOUNT                                                                         \
	"the model is on a mount colocd cannot see (another mount namespace's: a container's, " \
	"or one of your own), so colocd cannot tell what its reads reach; copy it into a "     \
	"memfd, or onto a disk mounted where colocd runs, and submit that"

/* Writes MODEL_BYTES into dir/model: NULL, or the step that failed. */
static const char *write_model(const char *dir)
{
	char path[160];
	int fd;

	snprintf(path, sizeof(path), "%s/model", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return "creating the model";
	if (write(fd, MODEL_BYTES, sizeof(MODEL_BYTES)) != (ssize_t)sizeof(MODEL_BYTES)) {
		close(fd);
		return "writing the model";
	}
	close(fd);
	return NULL;
}

FIXTURE(submit_mount)
{
	char dir[64]; /* the member's, with m/ its mount point and host/ a plain directory */
	char m[96], host[96], model[128];
	struct submit_ns_child child;
	int fd;
};

FIXTURE_SETUP(submit_mount)
{
	self->child.pid = -1;
	self->child.sock = -1;
	self->fd = -1;
	if (geteuid())
		SKIP(return, "needs root: a member's uid and mounts");
	strcpy(self->dir, "/tmp/coloc-submit-mount-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->m, sizeof(self->m), "%s/m", self->dir);
	snprintf(self->host, sizeof(self->host), "%s/host", self->dir);
	snprintf(self->model, sizeof(self->model), "%s/model", self->m);
	ASSERT_EQ(0, mkdir(self->m, 0755));
	ASSERT_EQ(0, mkdir(self->host, 0755));
	ASSERT_EQ(NULL, write_model(self->host));
	ASSERT_EQ(0, chown(self->dir, MEMBER_UID, MEMBER_UID));
	ASSERT_EQ(0, chown(self->m, MEMBER_UID, MEMBER_UID));
}

FIXTURE_TEARDOWN(submit_mount)
{
	char path[128];

	if (!self->dir[0])
		return;
	submit_ns_end(&self->child, &self->fd);
	umount2(self->m, MNT_DETACH);
	snprintf(path, sizeof(path), "%s/model", self->host);
	unlink(path);
	snprintf(path, sizeof(path), "%s/disk.img", self->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/lower2", self->dir);
	rmdir(path);
	rmdir(self->host);
	rmdir(self->m);
	rmdir(self->dir);
}

/* submit_file_seal of fd: its answer, with the copy's bytes checked when it is taken. */
static int seal(struct __test_metadata *_metadata, int fd, struct coloc_err *err)
{
	uint64_t budget = COLOC_MAX_SUBMIT_BYTES;
	char back[sizeof(MODEL_BYTES)];
	int mfd, ret = submit_file_seal(fd, "the model", &budget, &mfd, err);

	if (ret) {
		EXPECT_EQ(-1, mfd);
		return ret;
	}
	EXPECT_EQ((ssize_t)sizeof(back), pread(mfd, back, sizeof(back), 0));
	EXPECT_EQ(0, memcmp(MODEL_BYTES, back, sizeof(back)));
	close(mfd);
	return 0;
}

static const char *mount_ramfs(void *arg)
{
	const char *m = arg;

	return mount("member", m, "ramfs", 0, NULL) ? "mounting ramfs" : write_model(m);
}

static const char *mount_tmpfs(void *arg)
{
	const char *m = arg;

	return mount("member", m, "tmpfs", 0, NULL) ? "mounting tmpfs" : write_model(m);
}

/* arg: { the directory to bind, the mount point } */
static const char *bind_host_dir(void *arg)
{
	const char *const *dirs = arg;

	return mount(dirs[0], dirs[1], NULL, MS_BIND, NULL) ? "bind-mounting the host directory" :
							      NULL;
}

/* arg: { the disk image, the mount point }; mount(8) sets up the loop device */
static const char *mount_disk_image(void *arg)
{
	const char *const *paths = arg;
	char cmd[320], out[512];

	snprintf(cmd, sizeof(cmd), "mount -o loop '%s' '%s'", paths[0], paths[1]);
	if (tu_run(cmd, out, sizeof(out))) {
		errno = EIO;
		return "mount -o loop (see mount(8))";
	}
	return write_model(paths[1]);
}

/* The child's descriptor of its model, or the test SKIPs with the step the kernel refused. */
#define OPEN_IN_CHILD(uid, prepare, arg)                                                  \
	do {                                                                              \
		char why[320];                                                            \
		if (submit_ns_open(uid, prepare, arg, self->model, &self->child, &self->fd, \
				   why, sizeof(why)))                                     \
			SKIP(return, "the child's mount: %s", why);                       \
	} while (0)

TEST_F(submit_mount, seal__file_on_a_members_own_ramfs_refused)
{
	struct coloc_err err = { 0 };

	if (_metadata->skip) /* by the fixture's setup */
		return;

	OPEN_IN_CHILD(MEMBER_UID, mount_ramfs, self->m);
	EXPECT_EQ(-EINVAL, seal(_metadata, self->fd, &err));
	EXPECT_STREQ(UNSEEN_MOUNT, coloc_err_str(&err));
}

TEST_F(submit_mount, seal__file_on_a_members_own_tmpfs_taken_as_shmem)
{
	struct coloc_err err = { 0 };

	if (_metadata->skip) /* by the fixture's setup */
		return;

	OPEN_IN_CHILD(MEMBER_UID, mount_tmpfs, self->m);
	EXPECT_EQ(0, seal(_metadata, self->fd, &err)) TH_LOG("%s", coloc_err_str(&err));
}

TEST_F(submit_mount, seal__host_disk_through_a_members_bind_mount_taken)
{
	const char *dirs[] = { self->host, self->m };
	struct coloc_err err = { 0 };

	if (_metadata->skip) /* by the fixture's setup */
		return;

	OPEN_IN_CHILD(MEMBER_UID, bind_host_dir, dirs);
	EXPECT_EQ(0, seal(_metadata, self->fd, &err)) TH_LOG("%s", coloc_err_str(&err));
}

TEST_F(submit_mount, seal__disk_mounted_only_in_another_namespace_taken)
{
	char img[128], cmd[192], out[512];
	const char *paths[] = { img, self->m };
	struct coloc_err err = { 0 };

	if (_metadata->skip) /* by the fixture's setup */
		return;

	snprintf(img, sizeof(img), "%s/disk.img", self->dir);
	snprintf(cmd, sizeof(cmd), "mkfs.ext4 -q -F '%s' 4M", img);
	if (tu_run(cmd, out, sizeof(out)))
		SKIP(return, "cannot make an ext4 image: %s", out);
	OPEN_IN_CHILD(0, mount_disk_image, paths);
	EXPECT_EQ(0, seal(_metadata, self->fd, &err)) TH_LOG("%s", coloc_err_str(&err));
}

TEST_F(submit_mount, seal__memfd_taken)
{
	struct coloc_err err = { 0 };

	if (_metadata->skip) /* by the fixture's setup */
		return;

	self->fd = memfd_create("member-model", MFD_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ((ssize_t)sizeof(MODEL_BYTES), write(self->fd, MODEL_BYTES, sizeof(MODEL_BYTES)));
	EXPECT_EQ(0, seal(_metadata, self->fd, &err)) TH_LOG("%s", coloc_err_str(&err));
}

/* Mounts of colocd's own table: the test's, in a mount namespace of its own. */
TEST_F(submit_mount, seal__bind_mount_in_colocds_table_taken)
{
	struct coloc_err err = { 0 };

	if (_metadata->skip) /* by the fixture's setup */
		return;

	ASSERT_EQ(0, unshare(CLONE_NEWNS));
	ASSERT_EQ(0, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	ASSERT_EQ(0, mount(self->host, self->m, NULL, MS_BIND, NULL));
	self->fd = open(self->model, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(0, seal(_metadata, self->fd, &err)) TH_LOG("%s", coloc_err_str(&err));
}

TEST_F(submit_mount, seal__overlay_in_colocds_table_refused)
{
	char opts[256], lower2[128];
	struct coloc_err err = { 0 };

	if (_metadata->skip) /* by the fixture's setup */
		return;

	snprintf(lower2, sizeof(lower2), "%s/lower2", self->dir);
	ASSERT_EQ(0, mkdir(lower2, 0755));
	snprintf(opts, sizeof(opts), "lowerdir=%s:%s", self->host, lower2);
	ASSERT_EQ(0, unshare(CLONE_NEWNS));
	ASSERT_EQ(0, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	if (mount("overlay", self->m, "overlay", 0, opts))
		SKIP(return, "cannot mount overlayfs: %s", strerror(errno));
	self->fd = open(self->model, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(-EINVAL, seal(_metadata, self->fd, &err));
	EXPECT_STREQ("the model is on a stacked (overlay) filesystem, whose reads can stall "
		     "colocd; copy it to a local disk or into a memfd first",
		     coloc_err_str(&err));
}

/* Whether init's mount table lists the mount of path (statx's mount id). */
static bool in_inits_table(const char *path)
{
	struct statx stx;
	char line[512], id[32];
	bool found = false;
	FILE *f;

	if (statx(AT_FDCWD, path, 0, STATX_MNT_ID, &stx) || !(f = fopen("/proc/1/mountinfo", "re")))
		return false;
	snprintf(id, sizeof(id), "%llu ", (unsigned long long)stx.stx_mnt_id);
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, id, strlen(id));
	fclose(f);
	return found;
}

/*
 * colocd in a mount namespace of its own, as its systemd unit runs it, and
 * the member's file on a host mount whose device colocd's copy of the
 * table does not list (as btrfs gives each subvolume a device of its own):
 * found in init's table. Here a ramfs of the test's namespace, unmounted
 * from the namespace the test then makes for itself.
 */
TEST_F(submit_mount, seal__host_mount_colocds_namespace_lacks_found_in_inits_table)
{
	struct coloc_err err = { 0 };
	int host_ns, ret;

	if (_metadata->skip) /* by the fixture's setup */
		return;

	host_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, host_ns);
	ASSERT_EQ(0, mount("host", self->m, "ramfs", 0, NULL));
	if (!in_inits_table(self->m)) {
		umount2(self->m, MNT_DETACH);
		close(host_ns);
		SKIP(return, "this test's mount namespace is not init's");
	}
	ASSERT_EQ(NULL, write_model(self->m));
	self->fd = open(self->model, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, unshare(CLONE_NEWNS));
	ret = mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ?:
	      umount2(self->m, MNT_DETACH) ?: seal(_metadata, self->fd, &err);
	ASSERT_EQ(0, setns(host_ns, CLONE_NEWNS));
	close(host_ns);
	EXPECT_EQ(0, ret) TH_LOG("%s", coloc_err_str(&err));
}

TEST(submit_file_refused_fs__stacked_filesystems_by_magic)
{
	EXPECT_STREQ("stacked (overlay)", submit_file_refused_fs(0x794c7630));
	EXPECT_STREQ("stacked (eCryptfs)", submit_file_refused_fs(0xf15f));
}

TEST_HARNESS_MAIN
