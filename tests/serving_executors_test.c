// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A tenant with two executors in colocd's serving core (daemon/serving.c),
 * with real executor processes (tests/serving_fixture.h): two of its
 * queries run at once; queries move off a stopped executor, and interleave
 * block by block, each keeping its own input's output; one executor killed
 * fails the tenant and stops the other, and a restart serves again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "serving_fixture.h"

/* Blocks of tenant `name` running now, and whether two of them are of different queries. */
static int blocks_of(FIXTURE_DATA(serving) * self, const char *name, bool *two_queries)
{
	struct serving_core_info cores[POLICY_MAX_CPUS];
	int n = serving_cores(self->s, cores, POLICY_MAX_CPUS), nr = 0;
	uint64_t first = 0;

	*two_queries = false;
	for (int i = 0; i < n; i++) {
		if (!cores[i].busy || strcmp(cores[i].tenant, name))
			continue;
		if (nr++ && cores[i].query_id != first)
			*two_queries = true;
		first = first ? first : cores[i].query_id;
	}
	return nr;
}

/*
 * model-wise gives each query one core (the fewest that meet a 60 s QoS):
 * with two executors a tenant's first two queries start at once, on a core
 * each; with one, the second waits for the first.
 */
TEST_F(serving, executors__two_run_two_queries_of_a_tenant_at_once)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	int range[2] = { 0, 6 };
	bool two;
	char want[96];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs to run two blocks at once");
	/* the two executors as two lanes of one process (docs/design/lanes.md) */
	self->executor_lanes = true;
	ASSERT_EQ(0, make_serving(self, "model-wise", 0, 0, cache_dir, &err))
	TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit_executors(self, "two", QOS_NS, 2, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "one", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, serving_tenant_info(self->s, "two", &info));
	EXPECT_EQ(2, info.executors);
	EXPECT_GT(info.pids[0], 0);
	/* two lanes of one process (docs/design/lanes.md) */
	EXPECT_EQ(info.pids[0], info.pids[1]);
	EXPECT_EQ(info.pid, info.pids[0]);
	/* a doorbell and a pidfd per lane, the process's log once; "one"'s three */
	EXPECT_EQ(8, self->w.nr);
	/* the attribution is told the process once */
	snprintf(want, sizeof(want), "two:starting:%d", (int)info.pids[0]);
	EXPECT_STREQ(want, self->w.events[0]);
	ASSERT_TRUE(wait_ready(self, "two"));
	ASSERT_TRUE(wait_ready(self, "one"));
	make_input(self, "two");

	ASSERT_EQ(0, submit(self, "one", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, submit(self, "one", 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(1, blocks_of(self, "one", &two));
	range[1] = 2;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));

	ASSERT_EQ(0, submit(self, "two", 2, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, submit(self, "two", 3, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(2, blocks_of(self, "two", &two));
	EXPECT_TRUE(two);
	range[0] = 2;
	range[1] = 4;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(SERVING_QUERY_OK, self->q[i].status)
		TH_LOG("%d: %s", i, self->q[i].reason);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "two", &info));
	EXPECT_EQ(2, info.stats.served);
	EXPECT_EQ(0, serving_policy_errors(self->s, NULL));
}

/* Query k's own input: the shared one scaled by 1 + k / 8, so each output differs. */
static float *query_input(FIXTURE_DATA(serving) * self, int k)
{
	float *in = malloc(self->in_bytes);

	for (size_t i = 0; in && i < self->in_bytes / sizeof(float); i++)
		in[i] = self->input[i] * (1.0f + (float)k / 8);
	return in;
}

/* n queries' own inputs and their outputs computed in-process; false when out of memory. */
static bool own_inputs(FIXTURE_DATA(serving) * self, int n, float **in, float **want,
		       size_t *out_elems)
{
	for (int k = 0; k < n; k++) {
		in[k] = query_input(self, k);
		if (!in[k])
			return false;
	}
	return !tu_model_outputs_n(self->model, (const float *const *)in, n, want, out_elems);
}

/* Whether queries 0..n-1 were served with the outputs of their own inputs; why not into why. */
static bool own_outputs(FIXTURE_DATA(serving) * self, int n, float **want, size_t out_elems,
			char *why, size_t len)
{
	float max_err, max_ref;

	for (int k = 0; k < n; k++) {
		if (self->q[k].status != SERVING_QUERY_OK ||
		    self->q[k].out_bytes != out_elems * sizeof(float)) {
			snprintf(why, len, "query %d: status %d, %zu bytes: %s", k,
				 (int)self->q[k].status, self->q[k].out_bytes, self->q[k].reason);
			return false;
		}
		ref_compare(self->q[k].out, want[k], (int64_t)out_elems, &max_err, &max_ref);
		if (max_err > TOL * (1.0f + max_ref)) {
			snprintf(why, len, "query %d: max |error| %g, max |value| %g", k, max_err,
				 max_ref);
			return false;
		}
	}
	return true;
}

/* Queries range[0]..range[1]-1 done, or a block of tenant "two" past its overrun bound. */
static bool done_or_overrun(FIXTURE_DATA(serving) * self, void *arg)
{
	struct serving_tenant_info info;

	return queries_done(self, arg) ||
	       (!serving_tenant_info(self->s, "two", &info) && info.overruns > 0);
}

/*
 * Queries take slots on both executors in turn. With the first executor
 * stopped (SIGSTOP) inside its first block, the queries it holds and that
 * have not started move to the second one as it frees up: into a free slot,
 * or swapping inputs with a later query there. Every query gets the output
 * of its own input (computed here in-process), so a wrong copy would show.
 */
TEST_F(serving, executors__queries_move_off_a_stopped_executor_with_their_inputs)
{
	enum { N = 12 };
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	float *in[N] = { 0 }, *want[N] = { 0 };
	char why[160];
	int range[2] = { 0, 0 };
	size_t out_elems = 0;
	bool overran;

	ASSERT_EQ(0, make_serving(self, "model-wise", 0, 0, cache_dir, &err))
	TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit_executors(self, "two", QOS_NS, 2, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "two"));
	make_input(self, "two");
	ASSERT_TRUE(own_inputs(self, N, in, want, &out_elems));
	ASSERT_EQ(0, serving_tenant_info(self->s, "two", &info));
	/* stopped before its first block: the block is handed over but does not run */
	ASSERT_EQ(0, kill(info.pids[0], SIGSTOP));
	for (int k = 0; k < N; k++) {
		ASSERT_EQ(0, serving_submit(self->s, "two", in[k], self->in_bytes, on_done,
					    &self->q[k], NULL, &err))
		TH_LOG("%s", coloc_err_str(&err));
	}
	/*
	 * The second executor serves query 1, then query 2 (on the stopped one,
	 * not started) and 3; resumed well inside the hang limit (2 s at least).
	 * Unless the stopped block overran first (8x its table + 10 ms: under
	 * ASan at load, queries 1-3 can take longer): its tenant then starts no
	 * block while the late one is out (serving_overrun.c), so it is resumed
	 * at once, and whether a query moved is the machine's speed's to say.
	 */
	range[0] = 1;
	range[1] = 4;
	ASSERT_TRUE(pump(self, done_or_overrun, range, DONE_MS, NULL));
	ASSERT_EQ(0, serving_tenant_info(self->s, "two", &info));
	overran = info.overruns > 0;
	EXPECT_FALSE(self->q[0].done);
	ASSERT_EQ(0, kill(info.pids[0], SIGCONT));
	range[0] = 0;
	range[1] = N;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	ASSERT_TRUE(own_outputs(self, N, want, out_elems, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, serving_tenant_info(self->s, "two", &info));
	if (!overran)
		EXPECT_GE(info.moved, 1);
	TH_LOG("queries moved to the running executor: %llu%s", (unsigned long long)info.moved,
	       overran ? " (the stopped block overran before queries 1-3 were served)" : "");
	EXPECT_EQ(0, serving_policy_errors(self->s, NULL));
	for (int k = 0; k < N; k++) {
		free(in[k]);
		free(want[k]);
	}
}

/*
 * layer-wise runs each layer as a block of its own on one core, so with two
 * executors a tenant's queries interleave block by block: each waits between
 * its blocks on its own executor while the other runs, and queries that have
 * not started move to whichever is idle. Every query still gets its own
 * input's output, and no round breaks the policy's contract.
 */
TEST_F(serving, executors__queries_interleaved_block_by_block_keep_their_own_outputs)
{
	enum { N = 10 };
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	float *in[N] = { 0 }, *want[N] = { 0 };
	char why[160];
	int range[2] = { 0, N };
	size_t out_elems = 0;
	const char *last;

	ASSERT_EQ(0, make_serving(self, "layer-wise", 0, 0, cache_dir, &err))
	TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit_executors(self, "two", QOS_NS, 2, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "two"));
	make_input(self, "two");
	ASSERT_TRUE(own_inputs(self, N, in, want, &out_elems));
	for (int k = 0; k < N; k++) {
		ASSERT_EQ(0, serving_submit(self->s, "two", in[k], self->in_bytes, on_done,
					    &self->q[k], NULL, &err))
		TH_LOG("%s", coloc_err_str(&err));
	}
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	ASSERT_TRUE(own_outputs(self, N, want, out_elems, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(0, serving_tenant_info(self->s, "two", &info));
	EXPECT_EQ(N, info.stats.served);
	EXPECT_EQ(0, serving_policy_errors(self->s, &last)) TH_LOG("%s", last);
	for (int k = 0; k < N; k++) {
		free(in[k]);
		free(want[k]);
	}
}

TEST_F(serving, executors__one_killed_fails_the_tenant_and_stops_the_other)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info a;
	const char *failed[2] = { "a", "failed" };
	int range[2] = { 0, 4 };
	char want[96];
	pid_t pids[2];

	ASSERT_EQ(-EINVAL, admit_executors(self, "a", QOS_NS, SERVING_MAX_EXECUTORS + 1, &err));
	EXPECT_NE(NULL, strstr(err.msg, "executors")) TH_LOG("%s", err.msg);
	coloc_err_clear(&err);
	/* lanes of one process: a kill reaches both, as a failing executor failed both */
	self->executor_lanes = true;
	ASSERT_EQ(0, make_serving(self, "model-wise", 0, 0, cache_dir, &err))
	TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit_executors(self, "a", QOS_NS, 2, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "b", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "a"));
	ASSERT_TRUE(wait_ready(self, "b"));
	make_input(self, "a");
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	pids[0] = a.pids[0];
	pids[1] = a.pids[1];
	ASSERT_EQ(0, kill(pids[1], SIGKILL));
	ASSERT_TRUE(pump(self, tenant_in_state, failed, DONE_MS, NULL));
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	EXPECT_NE(NULL, strstr(a.reason, "killed by signal 9")) TH_LOG("%s", a.reason);
	EXPECT_EQ(0, a.pids[0]);
	EXPECT_EQ(0, a.pids[1]);
	/* both reaped: the one killed and the one colocd stopped with it (not waited for) */
	EXPECT_TRUE(pump(self, process_reaped, &pids[0], DONE_MS, NULL));
	EXPECT_EQ(-1, kill(pids[0], 0));
	EXPECT_EQ(ESRCH, errno);
	EXPECT_EQ(-1, kill(pids[1], 0));
	EXPECT_EQ(ESRCH, errno);
	/* one process, its two lanes: killing it is killing both */
	EXPECT_EQ(pids[0], pids[1]);
	snprintf(want, sizeof(want), "a:failed:%d", (int)pids[0]);
	EXPECT_STREQ(want, self->w.events[self->w.nr_events - 1]);
	/* b's three fds only, once the lane stopped with the other is retired (on its own time) */
	EXPECT_TRUE(pump(self, fds_watched_are, &(int){ 3 }, DONE_MS, NULL))
	TH_LOG("%d fds watched", self->w.nr);
	/* b serves on */
	ASSERT_EQ(0, submit(self, "b", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	range[1] = 1;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	EXPECT_EQ(SERVING_QUERY_OK, self->q[0].status) TH_LOG("%s", self->q[0].reason);
	/* a restarts with two new executors and serves again */
	ASSERT_EQ(0, serving_restart(self->s, "a", &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "a"));
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	EXPECT_GT(a.pids[0], 0);
	EXPECT_GT(a.pids[1], 0);
	for (int i = 1; i < 4; i++)
		ASSERT_EQ(0, submit(self, "a", i, &err)) TH_LOG("%s", coloc_err_str(&err));
	range[0] = 1;
	range[1] = 4;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	for (int i = 1; i < 4; i++) {
		EXPECT_EQ(SERVING_QUERY_OK, self->q[i].status)
		TH_LOG("%d: %s", i, self->q[i].reason);
	}
}

TEST_HARNESS_MAIN
