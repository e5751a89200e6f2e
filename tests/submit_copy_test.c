// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * daemon/submit_copy.c's deadline on a real loop and real threads: one
 * member's submit whose file read never returns is answered "timed out"
 * and another member's submit is copied after it; stalled copies are
 * bounded per member; a copy given up on stops at its next chunk and
 * frees what it copied. A read that never returns (a FUSE or network file
 * whose server does not answer) cannot be made on this machine, so this
 * binary alone is linked with --wrap=sendfile (Makefile): a read of the
 * file named stall_ino blocks on a pipe the test writes to (at its end, or
 * to let one read go), then goes on to the real sendfile. colocd has no
 * such hook.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "loop.h"
#include "mono_clock.h"
#include "submit_copy.h"
#include "submit_files.h"
#include "submit_stalled.h"

#define MS 1000000ull
#define TIMEOUT_MS 300
/* a loaded 2-vCPU machine under ASan: the answer comes within the deadline and this */
#define MARGIN_MS 3000
#define MEMBER_A 60001
#define MEMBER_B 60002

static ino_t stall_ino;
static int stall_pipe[2] = { -1, -1 };
/* bytes the copies of stall_ino read, after the pipe let them go */
static size_t stalled_bytes_read;

ssize_t __real_sendfile(int out_fd, int in_fd, off_t *offset, size_t count);

ssize_t __wrap_sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	struct stat st;
	ssize_t n;
	char byte;

	if (fstat(in_fd, &st) || st.st_ino != stall_ino)
		return __real_sendfile(out_fd, in_fd, offset, count);
	while (read(stall_pipe[0], &byte, 1) < 0 && errno == EINTR)
		;
	n = __real_sendfile(out_fd, in_fd, offset, count);
	if (n > 0)
		__atomic_add_fetch(&stalled_bytes_read, (size_t)n, __ATOMIC_RELAXED);
	return n;
}

struct answer {
	struct loop *loop;
	int *pending;
	bool answered;
	int ret;
	uint64_t at_ns;
	char msg[COLOC_ERR_MSG_MAX];
};

static void on_copied(void *ctx, int ret, const int *sealed, int nr, const struct profile_key *key,
		      const struct coloc_err *err)
{
	struct answer *a = ctx;

	(void)sealed;
	(void)nr;
	(void)key;
	a->answered = true;
	a->ret = ret;
	a->at_ns = coloc_now_ns();
	snprintf(a->msg, sizeof(a->msg), "%s", ret ? coloc_err_str(err) : "");
	if (!--*a->pending)
		loop_exit(a->loop, 0);
}

static void on_watchdog(struct loop_source *src, __u64 now_ns, void *ctx)
{
	(void)src;
	(void)now_ns;
	loop_exit(ctx, -ETIMEDOUT);
}

/* A file of bytes (size bytes, 0: a few), open for reading, its inode in *ino. */
static int model_file(off_t size, ino_t *ino)
{
	char path[] = "/tmp/coloc-submit-copy-XXXXXX";
	const char bytes[] = "a model's bytes";
	int fd = mkstemp(path);
	struct stat st;

	if (fd < 0)
		return -1;
	unlink(path);
	if (write(fd, bytes, sizeof(bytes)) != (ssize_t)sizeof(bytes) ||
	    (size && ftruncate(fd, size)) || fstat(fd, &st)) {
		close(fd);
		return -1;
	}
	*ino = st.st_ino;
	return fd;
}

/* How many of this process's descriptors are memfds named name. */
static int memfds_named(const char *name)
{
	char want[64], link[128];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	ssize_t n;
	int nr = 0;

	snprintf(want, sizeof(want), "/memfd:%s ", name);
	while (d && (e = readdir(d))) {
		n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = '\0';
			nr += !strncmp(link, want, strlen(want));
		}
	}
	if (d)
		closedir(d);
	return nr;
}

FIXTURE(submit_copy)
{
	struct loop *loop;
	struct submit_copier *copier;
	int stalled_fd, good_fd;
	int pending;
	/* here, not on a test's stack: a copy still queued at teardown is answered then */
	struct answer a, b, again, stalled[SUBMIT_STALLED_MAX_PER_UID];
};

FIXTURE_SETUP(submit_copy)
{
	struct coloc_err err = { 0 };
	ino_t ino;

	ASSERT_EQ(0, pipe2(stall_pipe, O_CLOEXEC));
	self->stalled_fd = model_file(0, &stall_ino);
	self->good_fd = model_file(0, &ino);
	ASSERT_LE(0, self->stalled_fd);
	ASSERT_LE(0, self->good_fd);
	ASSERT_EQ(0, loop_new(&self->loop, &err));
	ASSERT_EQ(0, submit_copier_new(self->loop, TIMEOUT_MS, &self->copier));
	self->a = self->b = self->again =
		(struct answer){ .loop = self->loop, .pending = &self->pending };
	for (int i = 0; i < SUBMIT_STALLED_MAX_PER_UID; i++)
		self->stalled[i] = self->a;
}

FIXTURE_TEARDOWN(submit_copy)
{
	struct coloc_err err = { 0 };
	uint64_t until = coloc_now_ns() + 10000 * MS;

	/* the stalled reads return; their threads end and free their jobs */
	if (stall_pipe[1] >= 0)
		close(stall_pipe[1]);
	while ((submit_stalled_check(MEMBER_A, &err) || submit_stalled_check(MEMBER_B, &err)) &&
	       coloc_now_ns() < until)
		usleep(10000);
	EXPECT_EQ(0, submit_stalled_check(MEMBER_A, &err));
	submit_copier_free(self->copier);
	loop_free(self->loop);
	close(stall_pipe[0]);
	close(self->stalled_fd);
	close(self->good_fd);
}

static int submit(struct submit_copier *q, uid_t uid, int fd, struct answer *a,
		  struct coloc_err *err)
{
	const char what[1][SUBMIT_COPY_WHAT_LEN] = { "the model" };
	struct submit_copy_roles roles = { 0 };

	return submit_copier_add(q, uid, COLOC_MAX_SUBMIT_BYTES, &fd, what, 1, &roles, on_copied, a,
				 err);
}

/* Runs the loop until every answer pending came, or the watchdog's -ETIMEDOUT. */
static int run_loop(struct loop *loop)
{
	struct coloc_err err = { 0 };
	struct loop_source *watchdog;
	int ret;

	if (loop_add_timer(loop, &watchdog, (TIMEOUT_MS * 4 + MARGIN_MS) * MS, 0, on_watchdog,
			   loop))
		return -ENOMEM;
	ret = loop_run(loop, &err);
	loop_source_remove(watchdog);
	return ret;
}

TEST_F(submit_copy, add__stalled_file_timed_out_and_next_member_copied)
{
	struct answer *a = &self->a, *b = &self->b;
	struct coloc_err err = { 0 };
	uint64_t start = coloc_now_ns();

	self->pending = 2;
	ASSERT_EQ(0, submit(self->copier, MEMBER_A, self->stalled_fd, a, &err));
	ASSERT_EQ(0, submit(self->copier, MEMBER_B, self->good_fd, b, &err));
	EXPECT_EQ(0, run_loop(self->loop));
	ASSERT_TRUE(a->answered);
	EXPECT_EQ(-ETIMEDOUT, a->ret);
	EXPECT_NE(NULL, strstr(a->msg, "timed out reading its files"))
	TH_LOG("%s", a->msg);
	EXPECT_LE(start + TIMEOUT_MS * MS, a->at_ns);
	EXPECT_GT(start + (TIMEOUT_MS + MARGIN_MS) * MS, a->at_ns);
	/* B waited for A's deadline, not for A's read */
	ASSERT_TRUE(b->answered);
	EXPECT_EQ(0, b->ret)
	TH_LOG("%s", b->msg);
	EXPECT_LE(a->at_ns, b->at_ns);
	EXPECT_GT(a->at_ns + MARGIN_MS * MS, b->at_ns);
}

TEST_F(submit_copy, add__member_with_stalled_copies_refused_others_served)
{
	struct answer *b = &self->b;
	struct coloc_err err = { 0 };

	self->pending = SUBMIT_STALLED_MAX_PER_UID;
	for (int i = 0; i < SUBMIT_STALLED_MAX_PER_UID; i++)
		ASSERT_EQ(0, submit(self->copier, MEMBER_A, self->stalled_fd, &self->stalled[i],
				    &err));
	EXPECT_EQ(0, run_loop(self->loop));
	for (int i = 0; i < SUBMIT_STALLED_MAX_PER_UID; i++)
		EXPECT_EQ(-ETIMEDOUT, self->stalled[i].ret);
	/* A's threads are still stuck: A is refused at once, B is served */
	EXPECT_EQ(-EAGAIN, submit(self->copier, MEMBER_A, self->good_fd, &self->again, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "still stuck reading their files"))
	TH_LOG("%s", coloc_err_str(&err));
	self->pending = 1;
	ASSERT_EQ(0, submit(self->copier, MEMBER_B, self->good_fd, b, &err));
	EXPECT_EQ(0, run_loop(self->loop));
	EXPECT_EQ(0, b->ret)
	TH_LOG("%s", b->msg);
	EXPECT_FALSE(self->again.answered);
}

/*
 * The stalled read of a file of 4 chunks returns after the copy was given
 * up on: the copy stops before its next chunk and frees the copied part
 * (main went on and read the whole file into a copy nobody would take).
 */
TEST_F(submit_copy, add__given_up_copy_stops_at_its_next_chunk_and_frees_it)
{
	struct coloc_err err = { 0 };
	uint64_t until;
	int big = model_file(4 * (off_t)SUBMIT_FILE_CHUNK_BYTES, &stall_ino);

	ASSERT_LE(0, big);
	self->pending = 1;
	ASSERT_EQ(0, submit(self->copier, MEMBER_A, big, &self->a, &err));
	EXPECT_EQ(0, run_loop(self->loop));
	EXPECT_EQ(-ETIMEDOUT, self->a.ret);
	/* its copy, made before the read that stalls, is still there */
	EXPECT_EQ(1, memfds_named("coloc-submit"));
	close(stall_pipe[1]);
	stall_pipe[1] = -1;
	until = coloc_now_ns() + 10000 * MS;
	while (memfds_named("coloc-submit") && coloc_now_ns() < until)
		usleep(10000);
	ASSERT_EQ(0, memfds_named("coloc-submit")) TH_LOG("the stalled copy never ended");
	EXPECT_EQ(SUBMIT_FILE_CHUNK_BYTES, stalled_bytes_read);
	close(big);
}

TEST_HARNESS_MAIN
