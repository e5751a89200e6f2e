// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * daemon/submit_files.c against a real FUSE mount whose server is this
 * test (a thread answering /dev/fuse itself, no libfuse): a member's FUSE
 * file is refused before any request reaches its server, so a server that
 * never answers cannot stall the copy. The server answers every request
 * and counts them; the file's attributes are cached for an hour, as a
 * server may ask, so that only a call the cache cannot answer (fstatfs)
 * reaches it. SKIPs where /dev/fuse cannot be opened or mounted.
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
#include <sys/mount.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "submit_files.h"

#define FILE_BYTES 16
#define FILE_INO 2

static int requests; /* after FUSE_INIT, every opcode */

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
			__atomic_add_fetch(&requests, 1, __ATOMIC_RELAXED);
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

	snprintf(path, sizeof(path), "%s/model", self->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
	/* the server answers: a read of the file works */
	ASSERT_EQ(1, pread(fd, &byte, 1, 0));
	EXPECT_EQ('m', byte);
	before = __atomic_load_n(&requests, __ATOMIC_RELAXED);
	EXPECT_EQ(-EINVAL, submit_file_seal(fd, "the model", &budget, &mfd, &err));
	EXPECT_STREQ("the model is on a FUSE filesystem, whose reads can stall colocd; copy it to "
		     "a local disk first",
		     coloc_err_str(&err));
	EXPECT_EQ(-1, mfd);
	/* main asked the server for its statfs (the one call its cache could not answer) */
	EXPECT_EQ(before, __atomic_load_n(&requests, __ATOMIC_RELAXED));
	close(fd);
}

TEST_HARNESS_MAIN
