// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One tenant's executor process (bin/coloc-executor) driven through the
 * shared memory by daemon/execproc.c, with a real model: its outputs equal
 * the in-process executor's, block by block or whole; a SIGKILL mid-block is
 * noticed through the pidfd with the reason (the delay is printed, never
 * asserted); malformed commands are refused with a reason and the executor
 * keeps serving; a shared block (the os policy's) runs its team unpinned on
 * all its cores; idle, its threads sleep; asked to stop, it exits; once
 * ready, its slots' input and output pages are mapped on both sides.
 * Its isolation: execproc_isolation_test.c; hostile executors:
 * execproc_hostile_test.c.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "execproc_fixture.h"

TEST_F(execproc, submit_block__whole_model_matches_in_process)
{
	const struct coloc_shm_header *h = execproc_header(self->ep);
	struct execproc_result res;
	struct coloc_err err = { 0 };

	EXPECT_EQ(self->m->nr_layers, (int)h->nr_layers);
	EXPECT_EQ(self->in_elems * sizeof(float), h->in_bytes);
	EXPECT_EQ(self->out_elems * sizeof(float), h->out_bytes);
	memcpy(execproc_input(self->ep, 0), self->input, self->in_elems * sizeof(float));
	ASSERT_EQ(1, run_block(self->ep, 0, 0, self->m->nr_layers, NULL, self->cpus.cpus,
			       self->cpus.nr, &res, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(COLOC_SHM_DONE_OK, res.status) TH_LOG("%s", res.reason);
	EXPECT_EQ(0, res.error);
	EXPECT_GT(res.block_ns, 0);
	EXPECT_LE(res.block_ns, res.round_trip_ns);
	EXPECT_FALSE(res.clamped); /* an honest executor's times are never changed */
	expect_output(_metadata, self, 0, "one block in the executor vs in-process");
}

/*
 * Three blocks in slot 3, each on its own core set and with its own
 * versions (the last version of every layer in the middle block), equal the
 * in-process query run as one block at version 0.
 */
TEST_F(execproc, submit_block__blocks_with_versions_and_cores_equal_one_block)
{
	int n = self->m->nr_layers, bounds[4] = { 0, n / 3, 2 * n / 3, n };
	int one[1] = { self->cpus.cpus[0] }, other[1] = { self->cpus.cpus[self->cpus.nr - 1] };
	const int *sets[3] = { one, other, self->cpus.cpus };
	int nr[3] = { 1, 1, self->cpus.nr };
	int *versions = calloc((size_t)n, sizeof(int));
	struct execproc_result res;
	struct coloc_err err = { 0 };

	ASSERT_NE(NULL, versions);
	for (int li = bounds[1]; li < bounds[2]; li++)
		versions[li] = exec_layer_nr_versions(self->em, li) - 1;
	memcpy(execproc_input(self->ep, 3), self->input, self->in_elems * sizeof(float));
	for (int blk = 0; blk < 3; blk++) {
		ASSERT_EQ(1, run_block(self->ep, 3, bounds[blk], bounds[blk + 1],
				       versions + bounds[blk], sets[blk], nr[blk], &res, &err))
		TH_LOG("%s", coloc_err_str(&err));
		ASSERT_EQ(COLOC_SHM_DONE_OK, res.status) TH_LOG("%s", res.reason);
		EXPECT_EQ((unsigned int)bounds[blk], res.first);
		EXPECT_EQ((unsigned int)bounds[blk + 1], res.last);
	}
	expect_output(_metadata, self, 3, "three blocks in the executor vs one in-process");
	free(versions);
}

/* What thread_masks counts. */
struct masks {
	int nr_all, single, all;
};

/* Counts tid by the size of its CPU mask; false when it cannot be read. */
static bool count_mask(pid_t pid, pid_t tid, void *ctx)
{
	struct masks *m = ctx;
	cpu_set_t set;

	(void)pid;
	if (sched_getaffinity(tid, sizeof(set), &set))
		return false;
	m->single += CPU_COUNT(&set) == 1;
	m->all += CPU_COUNT(&set) == m->nr_all;
	return true;
}

/*
 * The executor's threads by the size of their CPU mask: how many may run on
 * exactly one CPU, and how many on all nr_all; the total is returned.
 */
static int thread_masks(pid_t pid, int nr_all, int *single, int *all)
{
	struct masks m = { .nr_all = nr_all };
	int n = tu_count_threads(pid, count_mask, &m, NULL);

	*single = m.single;
	*all = m.all;
	return n;
}

/*
 * A block marked shared (the os policy's) leaves every thread of the
 * executor free to run on all the block's cores, and computes the same
 * outputs; a pinned block before and after it puts a team thread alone on
 * one core.
 */
TEST_F(execproc, submit_block__shared_runs_unpinned_on_all_cores_pinned_one_per_core)
{
	struct execproc_block b = { .first = 0,
				    .last = (unsigned int)self->m->nr_layers,
				    .cpus = self->cpus.cpus,
				    .nr_cpus = self->cpus.nr };
	pid_t pid = execproc_pid(self->ep);
	struct execproc_result res;
	struct coloc_err err = { 0 };
	int single, all, n;

	if (self->cpus.nr < 2)
		SKIP(return, "one CPU: pinned and shared are the same mask");
	for (int round = 0; round < 3; round++) {
		b.slot = (unsigned int)round;
		b.shared = round == 1;
		memcpy(execproc_input(self->ep, b.slot), self->input,
		       self->in_elems * sizeof(float));
		ASSERT_EQ(0, execproc_submit_block(self->ep, &b, &err))
		TH_LOG("%s", coloc_err_str(&err));
		ASSERT_EQ(1, execproc_wait_done(self->ep, &res, DONE_MS, &err))
		TH_LOG("%s", coloc_err_str(&err));
		ASSERT_EQ(COLOC_SHM_DONE_OK, res.status) TH_LOG("%s", res.reason);
		expect_output(_metadata, self, b.slot, b.shared ? "shared block" : "pinned block");
		n = thread_masks(pid, self->cpus.nr, &single, &all);
		TH_LOG("%s block: %d threads, %d on one CPU, %d on all %d",
		       b.shared ? "shared" : "pinned", n, single, all, self->cpus.nr);
		ASSERT_GT(n, 1);
		if (b.shared) {
			EXPECT_EQ(n, all);
			EXPECT_EQ(0, single);
		} else {
			EXPECT_GE(single, 1);
		}
	}
}

/* SIGKILL from outside while a whole-model block runs on one core. */
TEST_F(execproc, kill__mid_block_noticed_through_pidfd_with_reason)
{
	struct execproc_block b = { .slot = 1,
				    .first = 0,
				    .last = (unsigned int)self->m->nr_layers,
				    .cpus = self->cpus.cpus,
				    .nr_cpus = 1 };
	struct execproc_result res;
	struct coloc_err err = { 0 };
	__u64 t0, t1;
	int ret;

	/*
	 * The executor is stopped (every thread, waitid) once the block has
	 * started; a block that finished before the stop is run again, so the
	 * SIGKILL always lands mid-block however late this process is scheduled.
	 */
	for (int attempt = 0;; attempt++) {
		siginfo_t si = { 0 };

		ASSERT_LT(attempt, 50) TH_LOG("every block finished before the stop");
		ASSERT_EQ(0, execproc_submit_block(self->ep, &b, &err)) TH_LOG("%s", coloc_err_str(&err));
		t0 = coloc_now_ns();
		while (!execproc_started(self->ep) && coloc_now_ns() - t0 < 10000000000ull)
			usleep(50);
		ASSERT_TRUE(execproc_started(self->ep));
		ASSERT_EQ(0, kill(execproc_pid(self->ep), SIGSTOP));
		ASSERT_EQ(0, waitid(P_PID, (id_t)execproc_pid(self->ep), &si, WSTOPPED | WNOWAIT));
		ret = execproc_poll(self->ep, &res, &err);
		ASSERT_LE(0, ret) TH_LOG("%s", coloc_err_str(&err));
		if (ret == 0)
			break;
		ASSERT_EQ(0, kill(execproc_pid(self->ep), SIGCONT));
		TH_LOG("attempt %d: the block finished before the stop; again", attempt);
	}
	t0 = coloc_now_ns();
	ASSERT_EQ(0, kill(execproc_pid(self->ep), SIGKILL));
	ret = execproc_wait_done(self->ep, &res, DONE_MS, &err);
	t1 = coloc_now_ns();
	ASSERT_EQ(-EPIPE, ret) TH_LOG("the block completed before the kill (%d)", ret);
	TH_LOG("SIGKILL to detection: %.3f ms; reason: %s", (t1 - t0) / 1e6, coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(err.msg, "signal 9"));
	EXPECT_NE(NULL, strstr(err.msg, "while running layers [0, "));
	/* dead stays dead: the next submit says why, and nothing is left to reap */
	coloc_err_clear(&err);
	EXPECT_EQ(-EPIPE, execproc_submit_nop(self->ep, &err));
	EXPECT_NE(NULL, strstr(err.msg, "signal 9"));
	EXPECT_EQ(-1, waitpid(execproc_pid(self->ep), NULL, WNOHANG));
	EXPECT_EQ(ECHILD, errno);
}

TEST_F(execproc, submit_block__malformed_refused_and_executor_keeps_serving)
{
	int n = self->m->nr_layers, conv = -1, input_v1[1] = { 1 };
	int *bad_version = calloc((size_t)n, sizeof(int));
	int far_cpu[1] = { COLOC_MAX_CPUS - 1 };
	struct execproc_result res;
	struct coloc_err err = { 0 };
	pid_t pid = execproc_pid(self->ep);

	for (int li = 0; li < n && conv < 0; li++)
		if (exec_layer_nr_versions(self->em, li) > 1)
			conv = li;
	ASSERT_NE(NULL, bad_version);
	ASSERT_GE(conv, 1);
	ASSERT_FALSE(exec_cpu_online(far_cpu[0]));
	/* a fresh query: version 0 up to conv, then one past conv's count */
	bad_version[conv] = exec_layer_nr_versions(self->em, conv);
	struct {
		const char *what;
		int slot, first, last;
		const int *versions;
		const int *cpus;
		int nr_cpus;
		const char *says;
	} bad[] = {
		{ "past the last layer", 0, 0, n + 1, NULL, self->cpus.cpus, 1, "not a block" },
		{ "empty range", 0, 5, 5, NULL, self->cpus.cpus, 1, "not a block" },
		{ "reversed range", 0, 6, 5, NULL, self->cpus.cpus, 1, "not a block" },
		{ "activations never computed", 2, 10, 20, NULL, self->cpus.cpus, 1,
		  "never computed" },
		{ "version past the layer's count", 0, 0, conv + 1, bad_version, self->cpus.cpus, 1,
		  "version" },
		{ "version 1 of the input layer", 0, 0, 1, input_v1, self->cpus.cpus, 1,
		  "has 1 version;" },
		{ "no cores", 0, 0, n, NULL, self->cpus.cpus, 0, "no cores" },
		{ "a core not online", 0, 0, n, NULL, far_cpu, 1, "not one of the cores" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		coloc_err_clear(&err);
		ASSERT_EQ(1,
			  run_block(self->ep, (unsigned int)bad[i].slot, bad[i].first, bad[i].last,
				    bad[i].versions, bad[i].cpus, bad[i].nr_cpus, &res, &err))
		TH_LOG("%s: %s", bad[i].what, coloc_err_str(&err));
		EXPECT_EQ(COLOC_SHM_DONE_REFUSED, res.status) TH_LOG("%s", bad[i].what);
		EXPECT_EQ(-EINVAL, res.error);
		EXPECT_EQ(0, res.block_ns);
		EXPECT_NE(NULL, strstr(res.reason, bad[i].says))
		TH_LOG("%s: reason '%s'", bad[i].what, res.reason);
	}
	/* the driver refuses what the layout cannot carry, without a round trip */
	far_cpu[0] = COLOC_MAX_CPUS;
	coloc_err_clear(&err);
	EXPECT_EQ(-EINVAL, run_block(self->ep, 0, 0, n, NULL, far_cpu, 1, &res, &err));
	coloc_err_clear(&err);
	EXPECT_EQ(-EINVAL, run_block(self->ep, COLOC_SHM_NR_SLOTS, 0, n, NULL, self->cpus.cpus, 1,
				     &res, &err));
	/* still the same process, and it still computes the right answer */
	memcpy(execproc_input(self->ep, 2), self->input, self->in_elems * sizeof(float));
	ASSERT_EQ(1, run_block(self->ep, 2, 0, n, NULL, self->cpus.cpus, self->cpus.nr, &res, &err))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(COLOC_SHM_DONE_OK, res.status) TH_LOG("%s", res.reason);
	EXPECT_EQ(pid, execproc_pid(self->ep));
	EXPECT_EQ(0, kill(pid, 0));
	expect_output(_metadata, self, 2, "after the refusals");
	free(bad_version);
}

/* Whether thread tid of pid sleeps in futex(2). */
static bool in_futex(pid_t pid, pid_t tid, void *ctx)
{
	char path[96];
	long nr = -1;
	FILE *f;

	(void)ctx;
	/* the syscall the thread is blocked in, by number */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	if (f)
		fclose(f);
	return tu_thread_state(pid, tid) == 'S' && nr == SYS_futex;
}

/* Whether every thread of pid sleeps in futex(2); the count of threads in n. */
static bool all_threads_in_futex(pid_t pid, int *n)
{
	int asleep = tu_count_threads(pid, in_futex, NULL, n);

	return asleep >= 0 && asleep == *n && *n > 0;
}

/* After a block on every core, the executor's threads all sleep in futex: none spins. */
TEST_F(execproc, executor__idle_threads_sleep_in_futex)
{
	pid_t pid = execproc_pid(self->ep);
	struct execproc_result res;
	struct coloc_err err = { 0 };
	__u64 t0;
	bool asleep;
	int n;

	memcpy(execproc_input(self->ep, 0), self->input, self->in_elems * sizeof(float));
	ASSERT_EQ(1, run_block(self->ep, 0, 0, self->m->nr_layers, NULL, self->cpus.cpus,
			       self->cpus.nr, &res, &err))
	TH_LOG("%s", coloc_err_str(&err));
	t0 = coloc_now_ns();
	while (!(asleep = all_threads_in_futex(pid, &n)) && coloc_now_ns() - t0 < 5000000000ull)
		usleep(200);
	EXPECT_TRUE(asleep) TH_LOG("some of the %d threads still run 5 s after the block", n);
	TH_LOG("all %d threads asleep in futex %.3f ms after the completion was seen", n,
	       (coloc_now_ns() - t0) / 1e6);
}

/*
 * Once ready, before any query, every slot's input and output pages are
 * allocated and mapped on both sides (the rest of the slots' capacity is
 * not): no query pays their page faults.
 */
TEST_F(execproc, ready__slots_mapped_before_the_first_query)
{
	long want = COLOC_SHM_NR_SLOTS * (long)((self->in_elems + self->out_elems) *
						sizeof(float) / 1024);
	long size = 0, rss = 0;
	void *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool can = probe != MAP_FAILED && !madvise(probe, 4096, MADV_POPULATE_WRITE);

	if (probe != MAP_FAILED)
		munmap(probe, 4096);
	if (!can)
		SKIP(return, "no MADV_POPULATE_WRITE here (Linux 5.14): pages map at first use");
	ASSERT_TRUE(shm_mapping_kb(getpid(), "mnv2", &size, &rss));
	EXPECT_GE(rss, want) TH_LOG("colocd's side: %ld of %ld kB mapped", rss, size);
	EXPECT_LT(rss, size / 2); /* not the whole default capacity */
	size = rss = 0;
	ASSERT_TRUE(shm_mapping_kb(execproc_pid(self->ep), "mnv2", &size, &rss));
	EXPECT_GE(rss, want) TH_LOG("the executor's side: %ld of %ld kB mapped", rss, size);
}

/*
 * stop_begin asks an idle executor to exit and returns without waiting
 * for it: the process is reaped later, by a poll after its pidfd says so.
 */
TEST_F(execproc, stop_begin__asks_to_exit_and_the_exit_is_reaped_later)
{
	pid_t pid = execproc_pid(self->ep);
	struct coloc_err err = { 0 };

	execproc_stop_begin(self->ep);
	EXPECT_FALSE(execproc_reaped(self->ep)); /* nothing waited for */
	EXPECT_EQ(1, poll_until(self->ep, NULL, DONE_MS, &err)); /* the exit acknowledged */
	EXPECT_EQ(-EPIPE, poll_until(self->ep, NULL, DONE_MS, &err));
	EXPECT_TRUE(execproc_reaped(self->ep));
	EXPECT_NE(NULL, strstr(err.msg, "exited with status 0")) TH_LOG("%s", err.msg);
	EXPECT_EQ(-1, kill(pid, 0));
}

TEST_F(execproc, stop__exits_cleanly_when_asked)
{
	pid_t pid = execproc_pid(self->ep);
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, execproc_stop(self->ep, DONE_MS, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* reaped through the pidfd: nothing left for waitpid */
	EXPECT_EQ(-1, waitpid(pid, NULL, WNOHANG));
	EXPECT_EQ(ECHILD, errno);
	EXPECT_EQ(-EPIPE, execproc_submit_nop(self->ep, &err));
	EXPECT_NE(NULL, strstr(err.msg, "exited with status 0")) TH_LOG("%s", err.msg);
}

TEST_HARNESS_MAIN
