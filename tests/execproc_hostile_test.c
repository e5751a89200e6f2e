// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * daemon/execproc.c against executors that lie or break the protocol: one
 * that describes its model wrongly is killed; tests/hostile_executor.c
 * (built beside this test) makes its doorbell blocking, reports times out
 * of bounds, writes malformed completions, floods or closes its doorbell,
 * ignores the exit command: each is refused, clamped or given up with what
 * it did. A model the parser refuses, or no executor at all, is an error
 * with the reason.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "execproc_fixture.h"

/*
 * An executor that lies about its model (a shell script writing the header
 * the way a compromised executor could: its pid, an input size past the
 * capacity, READY) is refused and killed; colocd never uses the size.
 */
TEST(execproc_spawn__lying_executor_is_killed)
{
	char script[] = "/tmp/coloc-execproc-liar-XXXXXX";
	struct execproc_opts o = { .tenant = "liar", .weights_fd = -1, .executor = script };
	struct coloc_err err = { 0 };
	struct execproc *ep;
	char text[1024];
	pid_t pid;
	int fd;

	snprintf(text, sizeof(text),
		 "#!/bin/sh\n"
		 "put() { printf \"$2\" | /bin/dd of=/proc/self/fd/3 bs=1 seek=$1 conv=notrunc "
		 "status=none; }\n"
		 "p=$$\n"
		 "put %zu \"$(printf '\\\\%%03o\\\\%%03o\\\\%%03o\\\\%%03o' $((p & 255)) "
		 "$((p >> 8 & 255)) $((p >> 16 & 255)) $((p >> 24 & 255)))\"\n"
		 "put %zu '\\377\\377\\377\\377\\377\\377\\377\\177'\n"
		 "put %zu '\\001'\n"
		 "printf '\\001\\0\\0\\0\\0\\0\\0\\0' >&4\n"
		 "exec /bin/sleep 60\n",
		 offsetof(struct coloc_shm, hdr.executor_pid),
		 offsetof(struct coloc_shm, hdr.in_bytes), offsetof(struct coloc_shm, hdr.state));
	fd = mkstemp(script);
	ASSERT_GE(fd, 0);
	ASSERT_EQ((ssize_t)strlen(text), write(fd, text, strlen(text)));
	ASSERT_EQ(0, fchmod(fd, 0755));
	close(fd);
	ASSERT_EQ(0, spawn_path(&o, "/dev/null", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	pid = execproc_pid(ep);
	EXPECT_EQ(-EPROTO, execproc_wait_ready(ep, READY_MS, &err));
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(err.msg, "described its model wrongly"));
	EXPECT_NE(NULL, strstr(err.msg, "(pid ")) TH_LOG("%s", err.msg);
	EXPECT_FALSE(execproc_ready(ep));
	EXPECT_EQ(0, execproc_header(ep)->in_bytes);
	EXPECT_EQ(-1, kill(pid, 0)); /* killed and reaped */
	execproc_free(ep);
	unlink(script);
}

/* A hostile executor (tenant hostile-MODE) on mobilenet_v2, waited for until ready. */
static int spawn_hostile(const char *mode, struct execproc **ep, struct coloc_err *err)
{
	char bin[512], path[512], tenant[64];
	struct execproc_opts o = { .tenant = tenant, .weights_fd = -1 };
	int ret;

	model_path(path, sizeof(path), "mobilenet_v2");
	snprintf(tenant, sizeof(tenant), "hostile-%s", mode);
	o.executor = tu_hostile_executor_bin(bin, sizeof(bin));
	ret = spawn_path(&o, path, ep, err);
	return ret ? ret : execproc_wait_ready(*ep, READY_MS, err);
}

/* The flags of fd in process pid (fdinfo), or -1. */
static long fd_flags(pid_t pid, int fd)
{
	char path[64], line[128];
	long flags = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags:", 6))
			flags = strtol(line + 6, NULL, 8);
	fclose(f);
	return flags;
}

static const int one_cpu[] = { 0 };

/*
 * An executor that makes its doorbell descriptor blocking (F_SETFL 0)
 * changes its own open file only: colocd's end keeps O_NONBLOCK, and a poll
 * with nothing to read returns at once (with a shared eventfd it blocked).
 */
TEST(execproc_doorbell__executor_cannot_make_colocds_end_blocking)
{
	struct execproc_result res;
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;
	struct execproc_block b = { .last = 1, .cpus = one_cpu, .nr_cpus = 1 };
	pid_t pid;

	ASSERT_EQ(0, spawn_hostile("flags", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	pid = execproc_pid(ep);
	ASSERT_EQ(0, execproc_submit_block(ep, &b, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* it flips the flags before it takes a command: done by the time it refuses this one */
	ASSERT_EQ(1, execproc_wait_done(ep, &res, DONE_MS, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(COLOC_SHM_DONE_REFUSED, res.status);
	/* the attack happened: its own end is blocking (and write-only) */
	EXPECT_EQ(O_WRONLY, fd_flags(pid, 4) & (O_NONBLOCK | O_ACCMODE));
	EXPECT_EQ(O_NONBLOCK, fcntl(execproc_done_fd(ep), F_GETFL) & O_NONBLOCK);
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(0, execproc_poll(ep, NULL, &err)) TH_LOG("%s", coloc_err_str(&err));
	execproc_free(ep);
}

/*
 * Times out of bounds (~2^64, 0, 2^63 in turn) are clamped to colocd's own
 * round trip of the command and said so; the switch time to the block's.
 */
TEST(execproc_poll__reported_times_clamped_to_the_round_trip)
{
	struct execproc_result res;
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;
	struct execproc_block b = { .last = 1, .cpus = one_cpu, .nr_cpus = 1 };

	ASSERT_EQ(0, spawn_hostile("times", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, execproc_submit_block(ep, &b, &err)) TH_LOG("%s", coloc_err_str(&err));
		ASSERT_EQ(1, execproc_wait_done(ep, &res, DONE_MS, &err))
		TH_LOG("%s", coloc_err_str(&err));
		EXPECT_EQ(COLOC_SHM_DONE_OK, res.status);
		EXPECT_TRUE(res.clamped);
		EXPECT_GT(res.block_ns, 0);
		EXPECT_LE(res.block_ns, res.round_trip_ns);
		EXPECT_LE(res.switch_ns, res.block_ns);
		TH_LOG("block %d: reported times clamped to %llu ns (round trip %llu ns)", i,
		       res.block_ns, res.round_trip_ns);
	}
	execproc_free(ep);
}

/*
 * Each breach of the completion protocol gives the executor up: -EPROTO
 * with what it did, the process killed and reaped, and nothing of the
 * completion delivered.
 */
TEST(execproc_poll__malformed_completions_give_the_executor_up)
{
	static const struct {
		const char *mode, *says;
	} cases[] = {
		{ "status", "with status 77, which is none" },
		{ "reason", "without its end" },
		{ "echo", "the command was slot 2" },
		{ "unsent", "never sent" },
		{ "header", "rewrote the shared memory's header" },
		{ "twice", "rewrote its completion of command 1" },
	};
	struct execproc_block b = {
		.slot = 2, .first = 0, .last = 1, .query_id = 7, .cpus = one_cpu, .nr_cpus = 1
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct execproc_result res = { 0 };
		struct coloc_err err = { 0 };
		struct execproc *ep = NULL;
		pid_t pid;
		int ret;

		ASSERT_EQ(0, spawn_hostile(cases[i].mode, &ep, &err))
		TH_LOG("%s: %s", cases[i].mode, coloc_err_str(&err));
		pid = execproc_pid(ep);
		ASSERT_EQ(0, execproc_submit_block(ep, &b, &err)) TH_LOG("%s", coloc_err_str(&err));
		ret = execproc_wait_done(ep, &res, DONE_MS, &err);
		/* a completion rewritten after it was taken: the first one was fine */
		if (!strcmp(cases[i].mode, "twice")) {
			EXPECT_EQ(1, ret) TH_LOG("%s", coloc_err_str(&err));
			EXPECT_EQ(COLOC_SHM_DONE_REFUSED, res.status);
			ret = poll_until(ep, NULL, DONE_MS, &err);
		}
		EXPECT_EQ(-EPROTO, ret) TH_LOG("%s: %d %s", cases[i].mode, ret, err.msg);
		EXPECT_NE(NULL, strstr(err.msg, cases[i].says))
		TH_LOG("%s: %s", cases[i].mode, err.msg);
		TH_LOG("%s: %s", cases[i].mode, err.msg);
		/* given up for good, and gone */
		EXPECT_EQ(-EPROTO, execproc_submit_nop(ep, &err));
		EXPECT_EQ(0, execproc_kill(ep));
		EXPECT_TRUE(execproc_reaped(ep));
		EXPECT_EQ(-1, kill(pid, 0));
		execproc_free(ep);
	}
}

/* A doorbell rung without end, with nothing to report, gives the executor up. */
TEST(execproc_poll__doorbell_flood_gives_the_executor_up)
{
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;

	ASSERT_EQ(0, spawn_hostile("flood", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EPROTO, poll_until(ep, NULL, DONE_MS, &err));
	EXPECT_NE(NULL, strstr(err.msg, "rang its doorbell")) TH_LOG("%s", err.msg);
	execproc_free(ep);
}

/* An executor that closes its end of the doorbell and keeps running is killed. */
TEST(execproc_poll__closed_doorbell_kills_the_executor)
{
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;

	ASSERT_EQ(0, spawn_hostile("hangup", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EPIPE, poll_until(ep, NULL, DONE_MS, &err));
	EXPECT_NE(NULL, strstr(err.msg, "closed its end of the doorbell")) TH_LOG("%s", err.msg);
	EXPECT_TRUE(execproc_reaped(ep));
	execproc_free(ep);
}

/*
 * stop_begin never waits: an executor that ignores the exit command is
 * still running when it returns; SIGKILL (the caller's deadline) ends it,
 * and a poll reaps it.
 */
TEST(execproc_stop_begin__returns_at_once_and_the_kill_is_reaped_by_poll)
{
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;
	pid_t pid;

	ASSERT_EQ(0, spawn_hostile("silent", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	pid = execproc_pid(ep);
	execproc_stop_begin(ep);
	EXPECT_EQ(0, kill(pid, 0)); /* not waited for, not killed */
	EXPECT_EQ(0, execproc_poll(ep, NULL, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, execproc_signal_kill(ep));
	EXPECT_FALSE(execproc_reaped(ep));
	EXPECT_EQ(-EPIPE, poll_until(ep, NULL, DONE_MS, &err));
	EXPECT_NE(NULL, strstr(err.msg, "killed by signal 9")) TH_LOG("%s", err.msg);
	EXPECT_TRUE(execproc_reaped(ep));
	EXPECT_EQ(-1, kill(pid, 0));
	execproc_free(ep);
}

TEST(execproc_spawn__bad_model_fails_with_the_parser_message)
{
	char bin[512], path[] = "/tmp/coloc-execproc-bad-XXXXXX";
	const char text[] = "model bad\nseed 1\nmacs 1\nparams 1\ninput x shape=1x4\nfrob y\n";
	struct execproc_opts o = { .tenant = "bad", .weights_fd = -1 };
	struct coloc_err err = { 0 };
	struct execproc *ep;
	int fd = mkstemp(path);

	ASSERT_GE(fd, 0);
	ASSERT_EQ((ssize_t)strlen(text), write(fd, text, strlen(text)));
	close(fd);
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	ASSERT_EQ(0, spawn_path(&o, path, &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EPIPE, execproc_wait_ready(ep, READY_MS, &err));
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(err.msg, "exited with status 1 while loading its model"));
	EXPECT_NE(NULL, strstr(err.msg, ":6:")) TH_LOG("no FILE:LINE in '%s'", err.msg);
	EXPECT_EQ(COLOC_SHM_FAILED, execproc_header(ep)->state);
	execproc_free(ep);
	unlink(path);
}

TEST(execproc_spawn__missing_executor_is_an_error_at_once)
{
	struct execproc_opts o = { .tenant = "t",
				   .weights_fd = -1,
				   .executor = "/nonexistent/coloc-executor" };
	struct coloc_err err = { 0 };
	struct execproc *ep;

	EXPECT_EQ(-ENOENT, spawn_path(&o, "/dev/null", &ep, &err));
	EXPECT_EQ(NULL, ep);
	EXPECT_NE(NULL, strstr(err.msg, "/nonexistent/coloc-executor"));
}

/*
 * An executor that gets ready without allocating its slots' pages
 * (hostile-bigkeep, whose slots are 16 MiB in and out) cannot make colocd
 * allocate them: colocd maps a slot's pages at ready only where the
 * executor has allocated every one, so its side of the mapping stays as
 * small as what the executor touched; colocd writes no input into such a
 * slot (the executor is given up for it) and reads the output from the
 * memfd, zeros, allocating nothing either (through the mapping it faulted
 * 16 MiB in).
 */
TEST(execproc_ready__slots_the_executor_left_unallocated_are_not_allocated_by_colocd)
{
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;
	long size = 0, rss = 0, slot_kb;
	unsigned char *out;

	ASSERT_EQ(0, spawn_hostile("bigkeep", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	slot_kb = (long)(execproc_header(ep)->in_bytes / 1024);
	ASSERT_GT(slot_kb, 64);
	out = malloc(execproc_header(ep)->out_bytes);
	ASSERT_NE(NULL, out);
	memset(out, 0xff, execproc_header(ep)->out_bytes);
	EXPECT_EQ(0, execproc_read_output(ep, 1, out, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[execproc_header(ep)->out_bytes - 1]);
	free(out);
	EXPECT_EQ(-EPROTO, execproc_input_allocated(ep, 2, &err));
	EXPECT_NE(NULL, strstr(err.msg, "gave its query slots' pages back")) TH_LOG("%s", err.msg);
	ASSERT_TRUE(shm_mapping_kb(getpid(), "hostile-bigkeep", &size, &rss));
	TH_LOG("colocd's side: %ld of %ld kB mapped; a slot's input is %ld kB", rss, size, slot_kb);
	EXPECT_LT(rss, slot_kb);
	execproc_free(ep);
}

/*
 * An executor that seals its shared memory against further seals before
 * it gets ready (hostile-sealfirst), so that colocd could not seal it
 * against holes, is given up at ready (main sealed it so at the spawn, the
 * executor's seal failed, and it got ready).
 */
TEST(execproc_ready__an_executor_that_seals_first_is_given_up)
{
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;

	EXPECT_EQ(-EPROTO, spawn_hostile("sealfirst", &ep, &err));
	EXPECT_NE(NULL, strstr(err.msg, "kept colocd from sealing its query slots' pages"))
	TH_LOG("%s", err.msg);
	execproc_free(ep);
}

/*
 * An executor that allocated its slots at ready, as coloc-executor does,
 * then, from its first block on, gives them back every way it has
 * (fallocate PUNCH_HOLE, MADV_REMOVE, ftruncate) and takes them again, in
 * a loop (hostile-punch, not sandboxed: no seccomp list of its own): the
 * seals colocd adds at ready refuse every way, so each slot colocd checks
 * stays allocated, and its copy after the check cannot meet a hole. On
 * main the punches went through: a check saw a hole within the first few
 * (the executor given up), and one between a check and its copy made
 * colocd allocate the page.
 */
TEST(execproc_ready__slot_pages_cannot_be_given_back)
{
	struct execproc_block b = { .last = 1, .cpus = one_cpu, .nr_cpus = 1 };
	struct coloc_err err = { 0 };
	struct execproc_result res;
	struct execproc *ep = NULL;

	ASSERT_EQ(0, spawn_hostile("punch", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, execproc_submit_block(ep, &b, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(1, execproc_wait_done(ep, &res, DONE_MS, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(COLOC_SHM_DONE_OK, res.status);
	for (int i = 0; i < 300; i++) {
		ASSERT_EQ(0,
			  execproc_input_allocated(ep, (unsigned int)i % COLOC_SHM_NR_SLOTS, &err))
		TH_LOG("check %d: %s", i, coloc_err_str(&err));
		usleep(1000);
	}
	execproc_free(ep);
}

TEST_HARNESS_MAIN
