// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Plan ahead (daemon/serving_plan.c) in colocd's serving core, with real
 * executor processes running models/mobilenet_v2.model under the
 * layer-wise policy (one layer a block, each in its fastest version alone,
 * so that the blocks and their kernels do not depend on timing): a query
 * alone runs its blocks in one command; with plan ahead off, one command a
 * block; the outputs are the same bytes either way; and a second tenant's
 * query makes the plan in flight stop at its next boundary. Beside it, the
 * doorbell rung early (serving_queries.c's ring_early): under temporal, a
 * query alone rings its executor before its round, one that comes while
 * another runs does not. The profile is
 * made once by bin/coloc-profile with one iteration, in a temporary cache.
 * Blocks are counted as they finish (serving_config.block_done), not by
 * the tenant's stats, which leave out those of a command that overran its
 * bound (serving_overrun.c: by the wall clock here, where the tenant has
 * no CPU pressure total to read, so on a loaded machine).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "profile_host.h"
#include "reference.h"
#include "serving.h"
#include "serving_util.h"
#include "testutil.h"

#define READY_MS 180000
#define DONE_MS 120000
#define QOS_NS 60000000000ull /* 60 s: nothing is dropped on a loaded machine */
#define NR_Q 3
#define TOL 1e-3f

static char cache_dir[64]; /* made once, shared by the forked tests */

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("serving-plan-test", cache_dir, sizeof(cache_dir));
}

struct qrec {
	bool done;
	enum serving_status status;
	char reason[256];
	float *out;
	size_t out_bytes;
};

static void on_done(void *ctx, const struct serving_completion *c)
{
	struct qrec *r = ctx;

	r->done = true;
	r->status = c->status;
	snprintf(r->reason, sizeof(r->reason), "%s", c->reason);
	if (c->output) {
		r->out = malloc(c->output_bytes);
		if (r->out)
			memcpy(r->out, c->output, c->output_bytes);
		r->out_bytes = c->output_bytes;
	}
}

FIXTURE(serving_plan)
{
	struct serving *s;
	char model[512];
	size_t in_bytes;
	float *input;
	struct qrec q[NR_Q + 1];
	uint64_t ran[2]; /* blocks finished: [0] tenant mnv2 or a, [1] tenant b */
};

static void on_block(void *ctx, const struct serving_block_record *r)
{
	FIXTURE_DATA(serving_plan) *self = ctx;

	self->ran[!strcmp(r->tenant, "b")]++;
}

static int make_serving_of(FIXTURE_DATA(serving_plan) * self, const char *policy, bool plan_ahead,
			   struct coloc_err *err)
{
	char bin[512];
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)),
				      .cache_dir = cache_dir,
				      .policy = policy,
				      .no_plan_ahead = !plan_ahead,
				      .block_done = on_block,
				      .ctx = self };

	serving_destroy(self->s);
	self->s = NULL;
	memset(self->ran, 0, sizeof(self->ran));
	return serving_create(&cfg, &self->s, err);
}

static int make_serving(FIXTURE_DATA(serving_plan) * self, bool plan_ahead, struct coloc_err *err)
{
	return make_serving_of(self, "layer-wise", plan_ahead, err);
}

FIXTURE_SETUP(serving_plan)
{
	const char *root = getenv("COLOC_ROOT");
	char out[8192];

	snprintf(self->model, sizeof(self->model), "%s/models/mobilenet_v2.model",
		 root ? root : ".");
	if (access(self->model, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", self->model);
	ASSERT_NE(0, cache_dir[0]);
	ASSERT_EQ(0, tu_serving_profile(self->model, cache_dir, out, sizeof(out)))
	TH_LOG("%s", out);
}

FIXTURE_TEARDOWN(serving_plan)
{
	serving_destroy(self->s);
	for (int i = 0; i < NR_Q + 1; i++)
		free(self->q[i].out);
	free(self->input);
}

/* Polls the module's fds as an event loop would until records [from, to) are done. */
static bool pump(FIXTURE_DATA(serving_plan) * self, int from, int to)
{
	uint64_t end = coloc_now_ns() + (uint64_t)DONE_MS * 1000000ull;

	for (;;) {
		bool done = true;

		for (int i = from; i < to; i++)
			done &= self->q[i].done;
		if (done)
			return true;
		if (coloc_now_ns() >= end)
			return false;
		tu_serving_turn(self->s, 100);
	}
}

/* Admits name, waits until it serves, and makes the test's input for it. */
static int admit(FIXTURE_DATA(serving_plan) * self, const char *name, struct coloc_err *err)
{
	struct serving_tenant_spec spec = { .name = name,
					    .model_name = self->model,
					    .qos_ns = QOS_NS };
	struct serving_tenant_info info;
	int ret = tu_serving_admit(self->s, spec, self->model, NULL, READY_MS, err);

	for (int i = 0; !ret && i < READY_MS / 10; i++) {
		if (!serving_tenant_info(self->s, name, &info) &&
		    info.state == SERVING_TENANT_READY)
			break;
		serving_tick(self->s);
		for (int fds[16], n = serving_fds(self->s, fds, 16), k = 0; k < n; k++)
			serving_handle_fd(self->s, fds[k]);
		usleep(10000);
	}
	if (ret || serving_tenant_info(self->s, name, &info))
		return ret ? ret : -ENOENT;
	self->in_bytes = info.in_bytes;
	free(self->input);
	self->input = malloc(self->in_bytes);
	for (size_t i = 0; self->input && i < self->in_bytes / sizeof(float); i++)
		self->input[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
	return info.state == SERVING_TENANT_READY ? 0 : -ETIMEDOUT;
}

static int submit(FIXTURE_DATA(serving_plan) * self, const char *name, int rec,
		  struct coloc_err *err)
{
	return serving_submit(self->s, name, self->input, self->in_bytes, on_done, &self->q[rec],
			      NULL, err);
}

/* NR_Q queries of mnv2, one after the other (each alone), into records 0.. */
static void serve_alone(struct __test_metadata *_metadata, FIXTURE_DATA(serving_plan) * self,
			struct serving_tenant_info *info)
{
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, admit(self, "mnv2", &err)) TH_LOG("%s", coloc_err_str(&err));
	for (int i = 0; i < NR_Q; i++) {
		ASSERT_EQ(0, submit(self, "mnv2", i, &err)) TH_LOG("%s", coloc_err_str(&err));
		ASSERT_TRUE(pump(self, i, i + 1));
		ASSERT_EQ(SERVING_QUERY_OK, self->q[i].status) TH_LOG("%s", self->q[i].reason);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", info));
}

/*
 * The blocks the tenant's stats counted against the ran it finished: all
 * of them, but those of a command that overran its bound.
 */
static void expect_counted(struct __test_metadata *_metadata,
			   const struct serving_tenant_info *info, uint64_t ran)
{
	if (info->overruns) {
		EXPECT_LT(info->stats.blocks, ran);
	} else {
		EXPECT_EQ(info->stats.blocks, ran);
	}
}

/* Records 0.. against the model run in this process. */
static void expect_outputs(struct __test_metadata *_metadata, FIXTURE_DATA(serving_plan) * self,
			   int from, int to)
{
	size_t out_elems = 0;
	float *want = tu_model_outputs(self->model, self->input, &out_elems);

	ASSERT_NE(NULL, want);
	for (int i = from; i < to; i++) {
		float max_err, max_ref;

		ASSERT_NE(NULL, self->q[i].out);
		ASSERT_EQ(out_elems * sizeof(float), self->q[i].out_bytes);
		ref_compare(self->q[i].out, want, (int64_t)out_elems, &max_err, &max_ref);
		EXPECT_LE(max_err, TOL * (1.0f + max_ref))
		TH_LOG("query %d: max err %g", i, max_err);
	}
	free(want);
}

TEST_F_TIMEOUT(serving_plan, alone__a_query_runs_its_blocks_in_one_command, 600)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;

	ASSERT_EQ(0, make_serving(self, true, &err)) TH_LOG("%s", coloc_err_str(&err));
	serve_alone(_metadata, self, &info);
	TH_LOG("%llu blocks in %llu commands, %llu yielded, %llu overran",
	       (unsigned long long)self->ran[0], (unsigned long long)info.stats.commands,
	       (unsigned long long)info.stats.yields, (unsigned long long)info.overruns);
	/* layer-wise: a block a layer, every one of them run */
	EXPECT_EQ(0, self->ran[0] % NR_Q);
	EXPECT_GT(self->ran[0], 10 * NR_Q);
	expect_counted(_metadata, &info, self->ran[0]);
	/* alone, on the same cores throughout: one command a query, nothing yielded */
	EXPECT_EQ(NR_Q, info.stats.commands);
	EXPECT_EQ(0, info.stats.yields);
	expect_outputs(_metadata, self, 0, NR_Q);
}

TEST_F_TIMEOUT(serving_plan, off__one_command_a_block, 600)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;

	ASSERT_EQ(0, make_serving(self, false, &err)) TH_LOG("%s", coloc_err_str(&err));
	serve_alone(_metadata, self, &info);
	EXPECT_GT(self->ran[0], 10 * NR_Q);
	EXPECT_EQ(self->ran[0], info.stats.commands);
	expect_counted(_metadata, &info, self->ran[0]);
	EXPECT_EQ(0, info.stats.yields);
	expect_outputs(_metadata, self, 0, NR_Q);
}

TEST_F_TIMEOUT(serving_plan, outputs__the_same_bytes_with_and_without, 900)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	float *with;
	size_t bytes;

	ASSERT_EQ(0, make_serving(self, true, &err)) TH_LOG("%s", coloc_err_str(&err));
	serve_alone(_metadata, self, &info);
	ASSERT_LT(info.stats.commands, self->ran[0]);
	bytes = self->q[0].out_bytes;
	with = self->q[0].out;
	self->q[0].out = NULL;
	for (int i = 0; i < NR_Q; i++)
		self->q[i].done = false;
	ASSERT_EQ(0, make_serving(self, false, &err)) TH_LOG("%s", coloc_err_str(&err));
	serve_alone(_metadata, self, &info);
	ASSERT_EQ(info.stats.commands, self->ran[0]);
	ASSERT_EQ(bytes, self->q[0].out_bytes);
	EXPECT_EQ(0, memcmp(with, self->q[0].out, bytes));
	free(with);
}

TEST_F_TIMEOUT(serving_plan, yield__another_tenants_query_stops_the_plan_at_a_boundary, 900)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info a, b;

	ASSERT_EQ(0, make_serving(self, true, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "b", &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "a", &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	ASSERT_GT(a.pid, 0);
	/*
	 * a's executor is stopped before its plan is sent, so b's query arrives before a
	 * runs a block, whatever the load (stopped as the plan started, a loaded machine
	 * could run the whole plan between the command and the signal)
	 */
	ASSERT_EQ(0, kill(a.pid, SIGSTOP));
	ASSERT_EQ(0, submit(self, "a", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, submit(self, "b", 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, kill(a.pid, SIGCONT));
	ASSERT_TRUE(pump(self, 0, 2));
	ASSERT_EQ(SERVING_QUERY_OK, self->q[0].status) TH_LOG("%s", self->q[0].reason);
	ASSERT_EQ(SERVING_QUERY_OK, self->q[1].status) TH_LOG("%s", self->q[1].reason);
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	ASSERT_EQ(0, serving_tenant_info(self->s, "b", &b));
	TH_LOG("a: %llu blocks in %llu commands, %llu yielded; b: %llu in %llu",
	       (unsigned long long)self->ran[0], (unsigned long long)a.stats.commands,
	       (unsigned long long)a.stats.yields, (unsigned long long)self->ran[1],
	       (unsigned long long)b.stats.commands);
	/* a's plan ran its first block (at least) and stopped there; the rest came as it was decided */
	EXPECT_EQ(1, a.stats.yields);
	EXPECT_GE(a.stats.commands, 2);
	EXPECT_EQ(self->ran[0], self->ran[1]);
	expect_counted(_metadata, &a, self->ran[0]);
	expect_counted(_metadata, &b, self->ran[1]);
	expect_outputs(_metadata, self, 0, 2);
}

/*
 * This process is colocd's serving core here: pinned, once its executors
 * run, to the second of two CPUs. temporal's blocks take the fastest
 * count of the lowest free cores (both, or the first alone where the
 * profile says one core is faster, as under ASan), so the early ring
 * always has the first core to name.
 */
TEST_F_TIMEOUT(serving_plan, early__a_query_alone_rings_its_doorbell_before_its_round, 900)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info a, b;
	cpu_set_t set;
	int cpus[2], n = 0;

	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (exec_cpu_online(c))
			cpus[n++] = c;
	if (n < 2)
		SKIP(return, "the early ring names a core besides colocd's: two online CPUs");
	ASSERT_EQ(0, make_serving_of(self, "temporal", true, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "b", &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "mnv2", &err)) TH_LOG("%s", coloc_err_str(&err));
	CPU_ZERO(&set);
	CPU_SET(cpus[1], &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	for (int i = 0; i < NR_Q; i++) {
		ASSERT_EQ(0, submit(self, "mnv2", i, &err)) TH_LOG("%s", coloc_err_str(&err));
		ASSERT_TRUE(pump(self, i, i + 1));
		ASSERT_EQ(SERVING_QUERY_OK, self->q[i].status) TH_LOG("%s", self->q[i].reason);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &a));
	/* the first query's executor has no last block, so no cores to name */
	EXPECT_EQ(NR_Q - 1, a.early_rings);
	expect_outputs(_metadata, self, 0, NR_Q);
	/* b's first query alone (no cores to name), then one while mnv2's runs */
	ASSERT_EQ(0, submit(self, "b", NR_Q, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(pump(self, NR_Q, NR_Q + 1));
	for (int i = 0; i < 2; i++) {
		free(self->q[i].out);
		memset(&self->q[i], 0, sizeof(self->q[i]));
	}
	ASSERT_EQ(0, kill(a.pid, SIGSTOP));
	ASSERT_EQ(0, submit(self, "mnv2", 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, submit(self, "b", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, kill(a.pid, SIGCONT));
	ASSERT_TRUE(pump(self, 0, 2));
	ASSERT_EQ(SERVING_QUERY_OK, self->q[0].status) TH_LOG("%s", self->q[0].reason);
	ASSERT_EQ(SERVING_QUERY_OK, self->q[1].status) TH_LOG("%s", self->q[1].reason);
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &a));
	ASSERT_EQ(0, serving_tenant_info(self->s, "b", &b));
	EXPECT_EQ(NR_Q, a.early_rings);
	EXPECT_EQ(0, b.early_rings);
}

TEST_HARNESS_MAIN
