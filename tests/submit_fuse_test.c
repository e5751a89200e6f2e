// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * daemon/submit_files.c against a real FUSE mount whose server is this
 * test (a thread answering /dev/fuse itself, no libfuse): a member's FUSE
 * file is refused before any request reaches its server, so a server that
 * never answers cannot stall the copy. The server answers every request
 * and counts them; the file's attributes are cached for an hour, as a
 * server may ask, so that only a call the cache cannot answer (fstatfs)
 * reaches it. The same server behind an overlayfs that a member mounts in
 * user and mount namespaces of its own (its FUSE mount beside it, through
 * a device node of /dev/fuse's numbers that the member owns): the overlay
 * asks FUSE with the member's credentials, and colocd's table has neither
 * mount. SKIPs where /dev/fuse cannot be opened or mounted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "submit_files.h"
#include "submit_ns.h"

#define FILE_BYTES 16
#define FILE_INO 2
#define MEMBER_UID 64990

/* after FUSE_INIT, every opcode; shared with a member's child that serves */
static int *requests;

static int count_requests(void)
{
	requests = mmap(NULL, sizeof(*requests), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return requests == MAP_FAILED ? -1 : 0;
}

static void fill_attr(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->mode = ino == FUSE_ROOT_ID ? S_IFDIR | 0555 : S_IFREG | 0444;
	a->nlink = 1;
	a->size = ino == FUSE_ROOT_ID ? 0 : FILE_BYTES;
	a->blksize = 4096;
}

static void reply(int fd, const struct fuse_in_header *in, int error, const void *body, size_t len)
{
	char buf[sizeof(struct fuse_out_header) + 256];
	struct fuse_out_header *out = (struct fuse_out_header *)buf;

	out->len = (uint32_t)(sizeof(*out) + (error ? 0 : len));
	out->error = error;
	out->unique = in->unique;
	if (!error && len)
		memcpy(buf + sizeof(*out), body, len);
	if (write(fd, buf, out->len) < 0)
		return;
}

/* The server: one file, "model", of FILE_BYTES bytes; what else it is asked fails ENOSYS. */
static void *serve(void *arg)
{
	static char buf[FUSE_MIN_READ_BUFFER + 65536];
	int fd = *(int *)arg;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
		const struct fuse_in_header *in = (const struct fuse_in_header *)buf;
		const void *body = buf + sizeof(*in);
		union {
			struct fuse_init_out init;
			struct fuse_entry_out entry;
			struct fuse_attr_out attr;
			struct fuse_open_out open;
			struct fuse_statfs_out statfs;
			char data[FILE_BYTES];
		} out;

		if (n <= 0)
			continue;
		memset(&out, 0, sizeof(out));
		if (in->opcode != FUSE_INIT)
			__atomic_add_fetch(requests, 1, __ATOMIC_RELAXED);
		switch (in->opcode) {
		case FUSE_INIT:
			out.init.major = FUSE_KERNEL_VERSION;
			out.init.minor = ((const struct fuse_init_in *)body)->minor;
			out.init.max_write = 4096;
			reply(fd, in, 0, &out.init, sizeof(out.init));
			break;
		case FUSE_LOOKUP:
			if (strcmp(body, "model")) {
				reply(fd, in, -ENOENT, NULL, 0);
				break;
			}
			out.entry.nodeid = FILE_INO;
			out.entry.entry_valid = out.entry.attr_valid = 3600;
			fill_attr(&out.entry.attr, FILE_INO);
			reply(fd, in, 0, &out.entry, sizeof(out.entry));
			break;
		case FUSE_GETATTR:
			out.attr.attr_valid = 3600;
			fill_attr(&out.attr.attr, in->nodeid);
			reply(fd, in, 0, &out.attr, sizeof(out.attr));
			break;
		case FUSE_OPEN:
			out.open.fh = 1;
			out.open.open_flags = FOPEN_KEEP_CACHE;
			reply(fd, in, 0, &out.open, sizeof(out.open));
			break;
		case FUSE_STATFS:
			out.statfs.st.bsize = 4096;
			out.statfs.st.namelen = 255;
			reply(fd, in, 0, &out.statfs, sizeof(out.statfs));
			break;
		case FUSE_READ:
			memset(out.data, 'm', sizeof(out.data));
			reply(fd, in, 0, out.data, sizeof(out.data));
			break;
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
			break;
		case FUSE_FLUSH:
		case FUSE_RELEASE:
			reply(fd, in, 0, NULL, 0);
			break;
		default:
			reply(fd, in, -ENOSYS, NULL, 0);
		}
	}
	return NULL;
}

FIXTURE(submit_fuse)
{
	char dir[64];
	int dev;
	bool mounted;
	pthread_t server;
};

FIXTURE_SETUP(submit_fuse)
{
	char opts[128];

	ASSERT_EQ(0, count_requests());
	strcpy(self->dir, "/tmp/coloc-submit-fuse-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	self->dev = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (self->dev < 0)
		SKIP(return, "cannot open /dev/fuse: %s", strerror(errno));
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other",
		 self->dev);
	if (mount("coloc-test", self->dir, "fuse.coloc-test", MS_NOSUID | MS_NODEV, opts))
		SKIP(return, "cannot mount FUSE: %s", strerror(errno));
	self->mounted = true;
	ASSERT_EQ(0, pthread_create(&self->server, NULL, serve, &self->dev));
}

FIXTURE_TEARDOWN(submit_fuse)
{
	if (self->mounted) {
		umount2(self->dir, MNT_DETACH);
		close(self->dev);
		pthread_join(self->server, NULL);
	} else if (self->dev >= 0) {
		close(self->dev);
	}
	rmdir(self->dir);
}

TEST_F(submit_fuse, seal__fuse_file_refused_before_its_server_is_asked)
{
	uint64_t budget = COLOC_MAX_SUBMIT_BYTES;
	struct coloc_err err = { 0 };
	char path[96], byte;
	int fd, mfd, before;

	if (_metadata->skip) /* by the fixture's setup */
		return;

	snprintf(path, sizeof(path), "%s/model", self->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
	/* the server answers: a read of the file works */
	ASSERT_EQ(1, pread(fd, &byte, 1, 0));
	EXPECT_EQ('m', byte);
	before = __atomic_load_n(requests, __ATOMIC_RELAXED);
	EXPECT_EQ(-EINVAL, submit_file_seal(fd, "the model", &budget, &mfd, &err));
	EXPECT_STREQ("the model is on a FUSE filesystem, whose reads can stall colocd; copy it to "
		     "a local disk or into a memfd first",
		     coloc_err_str(&err));
	EXPECT_EQ(-1, mfd);
	/* main asked the server for its statfs (the one call its cache could not answer) */
	EXPECT_EQ(before, __atomic_load_n(requests, __ATOMIC_RELAXED));
	close(fd);
}

/*
 * The member's directory: fuse (its device node), f (its FUSE mount), l (a
 * second lower layer, empty), o (the overlay of f and l).
 */
FIXTURE(submit_fuse_overlay)
{
	char dir[64];
	struct submit_ns_child child;
	int fd;
};

static const char *const member_paths[] = { "fuse", "f", "l", "o" };

/* In the member's namespaces: FUSE at dir/f served by a thread, overlayfs of it at dir/o. */
static const char *mount_fuse_overlay(void *arg)
{
	static int dev;
	const char *dir = arg;
	char path[128], opts[256];
	pthread_t server;

	snprintf(path, sizeof(path), "%s/fuse", dir);
	dev = open(path, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return "opening its /dev/fuse node";
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", dev);
	snprintf(path, sizeof(path), "%s/f", dir);
	if (mount("member", path, "fuse.member", MS_NOSUID | MS_NODEV, opts))
		return "mounting FUSE";
	errno = pthread_create(&server, NULL, serve, &dev);
	if (errno)
		return "starting its FUSE server";
	snprintf(opts, sizeof(opts), "lowerdir=%s/f:%s/l", dir, dir);
	snprintf(path, sizeof(path), "%s/o", dir);
	return mount("overlay", path, "overlay", 0, opts) ? "mounting overlayfs over FUSE" : NULL;
}

FIXTURE_SETUP(submit_fuse_overlay)
{
	char path[128], why[320];

	self->child.pid = -1;
	self->child.sock = -1;
	self->fd = -1;
	if (geteuid())
		SKIP(return, "needs root: a member's uid and its /dev/fuse node");
	ASSERT_EQ(0, count_requests());
	strcpy(self->dir, "/tmp/coloc-submit-fuse-ovl-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_EQ(0, chown(self->dir, MEMBER_UID, MEMBER_UID));
	for (size_t i = 0; i < sizeof(member_paths) / sizeof(member_paths[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", self->dir, member_paths[i]);
		ASSERT_EQ(0, i ? mkdir(path, 0755) : mknod(path, S_IFCHR | 0600, makedev(10, 229)));
		ASSERT_EQ(0, chown(path, MEMBER_UID, MEMBER_UID));
	}
	snprintf(path, sizeof(path), "%s/o/model", self->dir);
	if (submit_ns_open(MEMBER_UID, mount_fuse_overlay, self->dir, path, &self->child,
			   &self->fd, why, sizeof(why)))
		SKIP(return, "the member's overlay over FUSE: %s", why);
}

FIXTURE_TEARDOWN(submit_fuse_overlay)
{
	char path[128];

	if (!self->dir[0])
		return;
	submit_ns_end(&self->child, &self->fd);
	for (size_t i = 0; i < sizeof(member_paths) / sizeof(member_paths[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", self->dir, member_paths[i]);
		remove(path);
	}
	rmdir(self->dir);
}

TEST_F(submit_fuse_overlay, seal__members_overlay_over_fuse_refused_before_its_server_is_asked)
{
	uint64_t budget = COLOC_MAX_SUBMIT_BYTES;
	struct coloc_err err = { 0 };
	int mfd, before;
	char byte;

	if (_metadata->skip) /* by the fixture's setup */
		return;

	/* root's read goes through the overlay to the member's server, which answers */
	ASSERT_EQ(1, pread(self->fd, &byte, 1, 0));
	EXPECT_EQ('m', byte);
	before = __atomic_load_n(requests, __ATOMIC_RELAXED);
	EXPECT_EQ(-EINVAL, submit_file_seal(self->fd, "the model", &budget, &mfd, &err));
	EXPECT_STREQ("the model is on a mount colocd cannot see (another mount namespace's: a "
		     "container's, or one of your own), so colocd cannot tell what its reads "
		     "reach; copy it into a memfd, or onto a disk mounted where colocd runs, "
		     "and submit that",
		     coloc_err_str(&err));
	EXPECT_EQ(-1, mfd);
	/* main asked the server for the overlay's statfs, then read the file */
	EXPECT_EQ(before, __atomic_load_n(requests, __ATOMIC_RELAXED));
}

TEST_HARNESS_MAIN
