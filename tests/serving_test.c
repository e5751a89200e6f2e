// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's serving core (daemon/serving.c) serving queries with real
 * executor processes (tests/serving_fixture.h): outputs equal the model run
 * in-process, the latency's parts add up, a query past its deadline is
 * dropped with the reason, two tenants never share a core, the queue bounds
 * reject the excess with a reason, and the prediction error reported is
 * the one the completions give. A tenant's life: serving_tenants_test.c;
 * several executors a tenant: serving_executors_test.c.
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

TEST_F(serving, submit__outputs_equal_in_process_run)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	size_t out_elems = 0;
	float *want, max_err, max_ref;
	int range[2] = { 0, 1 };

	ASSERT_EQ(0, admit(self, "mnv2", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &info));
	EXPECT_GT(info.pid, 0);
	EXPECT_EQ(3, self->w.nr); /* its doorbell, its pidfd and its output */
	ASSERT_TRUE(wait_ready(self, "mnv2"));
	make_input(self, "mnv2");
	want = tu_model_outputs(self->model, self->input, &out_elems);
	ASSERT_NE(NULL, want);

	/* one query alone: its latency is the submit -> output round trip */
	ASSERT_EQ(0, submit(self, "mnv2", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	ASSERT_EQ(SERVING_QUERY_OK, self->q[0].status) TH_LOG("%s", self->q[0].reason);
	TH_LOG("one mobilenet_v2 query alone, submit -> output: %.3f ms, of which %.3f ms inside "
	       "the executor's block (profiled solo %.3f ms; loaded machine)",
	       self->q[0].latency_ns / 1e6, self->q[0].exec_ns / 1e6, info.solo_ns / 1e6);

	/* then 8 at once: more than the executor's 4 slots, so some wait for one */
	for (int i = 1; i < 9; i++)
		ASSERT_EQ(0, submit(self, "mnv2", i, &err)) TH_LOG("%s", coloc_err_str(&err));
	range[1] = 9;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	for (int i = 0; i < 9; i++) {
		ASSERT_EQ(SERVING_QUERY_OK, self->q[i].status) TH_LOG("%s", self->q[i].reason);
		ASSERT_EQ(out_elems * sizeof(float), self->q[i].out_bytes);
		ref_compare(self->q[i].out, want, (int64_t)out_elems, &max_err, &max_ref);
		EXPECT_LE(max_err, TOL * (1.0f + max_ref))
		TH_LOG("query %d: max |error| %g, max |value| %g", i, max_err, max_ref);
	}
	/* and one alone again, now that the executor has run every block once */
	ASSERT_EQ(0, submit(self, "mnv2", 9, &err)) TH_LOG("%s", coloc_err_str(&err));
	range[0] = 9;
	range[1] = 10;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	ASSERT_EQ(SERVING_QUERY_OK, self->q[9].status) TH_LOG("%s", self->q[9].reason);
	TH_LOG("the same after 9 queries: %.3f ms, of which %.3f ms inside the executor's block",
	       self->q[9].latency_ns / 1e6, self->q[9].exec_ns / 1e6);
	EXPECT_LE(self->q[9].exec_ns, self->q[9].latency_ns);
	EXPECT_GT(self->q[9].exec_ns, 0);
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &info));
	EXPECT_EQ(10, info.stats.served);
	EXPECT_EQ(10, info.stats.offered);
	EXPECT_EQ(1.0, info.stats.within_qos);
	EXPECT_LE(info.stats.p50_ns, info.stats.p95_ns);
	EXPECT_LE(info.stats.p95_ns, info.stats.p99_ns);
	EXPECT_EQ(0, info.queued + info.in_flight);
	free(want);
}

TEST_F(serving, breakdown__parts_add_up_to_the_latency_compute_is_the_executors)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	int range[2] = { 0, 3 };

	ASSERT_EQ(0, admit(self, "mnv2", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "mnv2"));
	make_input(self, "mnv2");
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, submit(self, "mnv2", i, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	for (int i = 0; i < 3; i++) {
		const struct qrec *q = &self->q[i];
		uint64_t sum = 0;

		ASSERT_EQ(SERVING_QUERY_OK, q->status) TH_LOG("%s", q->reason);
		for (int p = 0; p < SERVING_NR_PARTS; p++) {
			TH_LOG("query %d %s: %.3f ms", i, serving_part_names[p],
			       q->parts.ns[p] / 1e6);
			sum += q->parts.ns[p];
		}
		EXPECT_EQ(q->latency_ns, sum);
		/* the executor's own block times, which it measures inside its run */
		EXPECT_EQ(q->exec_ns, q->parts.ns[COLOC_PART_COMPUTE]);
		/* a doorbell and a completion each take a system call and a wake-up */
		EXPECT_GT(q->parts.ns[COLOC_PART_DISPATCH], 0);
		EXPECT_GT(q->parts.ns[COLOC_PART_NOTICE], 0);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "mnv2", &info));
	for (int p = 0; p < SERVING_NR_PARTS; p++) {
		uint64_t v[3], lo = UINT64_MAX, hi = 0;

		for (int i = 0; i < 3; i++) {
			v[i] = self->q[i].parts.ns[p];
			lo = v[i] < lo ? v[i] : lo;
			hi = v[i] > hi ? v[i] : hi;
		}
		/* nearest rank of 3: the middle one, and the largest */
		EXPECT_EQ(serving_stats_percentile(v, 3, 50), info.stats.part_p50_ns[p]);
		EXPECT_EQ(hi, info.stats.part_p95_ns[p]);
		EXPECT_LE(lo, info.stats.part_p50_ns[p]);
	}
}

TEST_F(serving, drop__query_past_its_deadline_dropped_with_reason)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	cpu_set_t mask;
	uint64_t solo_ns, t0, waited;
	int range[2] = { 0, 1 };

	sched_getaffinity(0, sizeof(mask), &mask);
	solo_ns = profiled_solo_ns(self->model, CPU_COUNT(&mask));
	ASSERT_GT(solo_ns, 0);
	/* the tightest QoS admitted; queries sent while the executor loads wait past it */
	ASSERT_EQ(0, admit(self, "late", solo_ns, &err)) TH_LOG("%s", coloc_err_str(&err));
	make_input(self, "late");
	t0 = coloc_now_ns();
	ASSERT_EQ(0, submit(self, "late", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "late"));
	waited = coloc_now_ns() - t0;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	/*
	 * Dropped as past its deadline once its wait at the decision passed 3
	 * QoS (late.c: deadline + POLICY_OVERDUE_QOS x QoS; short of that, with
	 * nothing waiting for it, an overdue query is served); this wait, read
	 * after the decision, can be longer by the poll's lag, so only a wait
	 * past 3 QoS is surely one.
	 */
	if (waited <= 3 * solo_ns)
		SKIP(return, "the executor was ready in %.3f ms, within 3 x the QoS %.3f ms",
			   waited / 1e6, solo_ns / 1e6);
	EXPECT_EQ(SERVING_QUERY_DROPPED, self->q[0].status) TH_LOG("%s", self->q[0].reason);
	EXPECT_NE(NULL,
		  strstr(self->q[0].reason, policy_drop_reason_name(POLICY_DROP_DEADLINE_PASSED)))
	TH_LOG("%s", self->q[0].reason);
	ASSERT_EQ(0, serving_tenant_info(self->s, "late", &info));
	EXPECT_EQ(1, info.stats.dropped);
	EXPECT_EQ(0, info.stats.served);
	EXPECT_STREQ(self->q[0].reason, info.last_drop);
	EXPECT_EQ(0, info.queued + info.in_flight);
}

struct overlap {
	int both_busy; /* observations with both tenants holding cores */
	int bad; /* observations breaking a rule */
	char why[256];
};

/* Checks the core table after every event: each busy core has one tenant, per tenant one block. */
static void check_cores(FIXTURE_DATA(serving) * self, void *arg)
{
	struct overlap *o = arg;
	struct serving_core_info cores[POLICY_MAX_CPUS];
	int n = serving_cores(self->s, cores, POLICY_MAX_CPUS), busy_a = 0, busy_b = 0;
	uint64_t qa = 0, qb = 0;

	for (int i = 0; i < n; i++) {
		if (!cores[i].busy)
			continue;
		if (!strcmp(cores[i].tenant, "a")) {
			if (busy_a++ && cores[i].query_id != qa)
				snprintf(o->why, sizeof(o->why), "tenant a runs two blocks");
			qa = cores[i].query_id;
		} else {
			if (busy_b++ && cores[i].query_id != qb)
				snprintf(o->why, sizeof(o->why), "tenant b runs two blocks");
			qb = cores[i].query_id;
		}
		if (cores[i].last_layer <= cores[i].first_layer || !cores[i].versions)
			snprintf(o->why, sizeof(o->why), "core %d: empty block", cores[i].cpu);
	}
	if (o->why[0])
		o->bad++;
	if (busy_a && busy_b)
		o->both_busy++;
}

static bool served_and_checked(FIXTURE_DATA(serving) * self, void *arg)
{
	int range[2] = { 0, 12 };

	(void)arg;
	return queries_done(self, range);
}

TEST_F(serving, two_tenants__both_served_no_core_shared)
{
	struct coloc_err err = { 0 };
	struct overlap o = { 0 };
	struct serving_tenant_info a, b;
	const char *last;

	/* static splits the cores between the tenants, so their blocks run side by side */
	ASSERT_EQ(0, make_serving(self, "static", 0, 0, cache_dir, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit(self, "a", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "b", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "a"));
	ASSERT_TRUE(wait_ready(self, "b"));
	make_input(self, "a");
	for (int i = 0; i < 6; i++) {
		ASSERT_EQ(0, submit(self, "a", i, &err)) TH_LOG("%s", coloc_err_str(&err));
		ASSERT_EQ(0, submit(self, "b", 6 + i, &err)) TH_LOG("%s", coloc_err_str(&err));
	}
	ASSERT_TRUE(pump(self, served_and_checked, &o, DONE_MS, check_cores));
	EXPECT_EQ(0, o.bad) TH_LOG("%s", o.why);
	for (int i = 0; i < 12; i++) {
		EXPECT_EQ(SERVING_QUERY_OK, self->q[i].status)
		TH_LOG("%d: %s", i, self->q[i].reason);
	}
	/* both executors computed the same model on the same input */
	for (int i = 1; i < 12; i++) {
		float max_err, max_ref;

		ASSERT_EQ(self->q[0].out_bytes, self->q[i].out_bytes);
		ref_compare(self->q[i].out, self->q[0].out,
			    (int64_t)(self->q[0].out_bytes / sizeof(float)), &max_err, &max_ref);
		EXPECT_LE(max_err, TOL * (1.0f + max_ref)) TH_LOG("query %d", i);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &a));
	ASSERT_EQ(0, serving_tenant_info(self->s, "b", &b));
	EXPECT_EQ(6, a.stats.served);
	EXPECT_EQ(6, b.stats.served);
	TH_LOG("observations with both tenants' blocks running at once: %d", o.both_busy);
	/* policy_check_output accepted every round: no core in two decisions, none outside free */
	EXPECT_EQ(0, serving_policy_errors(self->s, &last)) TH_LOG("%s", last);
}

TEST_F(serving, submit__queue_bounds_reject_the_excess_with_a_reason)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	int accepted = 0, rejected = 0, range[2] = { 0, 0 };

	ASSERT_EQ(0, make_serving(self, NULL, 8, 12, cache_dir, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit(self, "a", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "b", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* while a is still starting: its queries wait, its queue fills */
	make_input(self, "a");
	for (int i = 0; i < 20; i++) {
		int ret = submit(self, "a", i, &err);

		if (!ret) {
			accepted++;
			continue;
		}
		rejected++;
		EXPECT_EQ(-EAGAIN, ret);
		EXPECT_NE(NULL, strstr(err.msg, "8 queries queued or running"))
		TH_LOG("%s", err.msg);
		coloc_err_clear(&err);
	}
	EXPECT_EQ(8, accepted);
	EXPECT_EQ(12, rejected);
	/* b has room of its own but the total (12) leaves it 4 */
	for (int i = 20; i < 30; i++) {
		int ret = submit(self, "b", i, &err);

		if (i < 24) {
			EXPECT_EQ(0, ret) TH_LOG("%s", coloc_err_str(&err));
			continue;
		}
		EXPECT_EQ(-EAGAIN, ret);
		EXPECT_NE(NULL, strstr(err.msg, "over all tenants")) TH_LOG("%s", err.msg);
		coloc_err_clear(&err);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &info));
	EXPECT_EQ(12, info.stats.rejected);
	EXPECT_EQ(20, info.stats.offered);
	EXPECT_NE(NULL, strstr(info.last_reject, "the most it may")) TH_LOG("%s", info.last_reject);
	/* nothing accepted is lost */
	range[1] = 8;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	range[0] = 20;
	range[1] = 24;
	ASSERT_TRUE(pump(self, queries_done, range, DONE_MS, NULL));
	for (int i = 0; i < 24; i++) {
		if (i >= 8 && i < 20)
			continue;
		EXPECT_EQ(SERVING_QUERY_OK, self->q[i].status)
		TH_LOG("%d: %s", i, self->q[i].reason);
	}
	for (int i = 8; i < 20; i++)
		EXPECT_FALSE(self->q[i].done);
}

/*
 * Under fcfs, with one tenant, each query runs as one block on all cores,
 * predicted at the profiled solo latency on all cores (solo_ns; temporal
 * would pick the count its profile finds fastest), and its exec_ns is that block's
 * measured time: the prediction error colocd reports is recomputed here
 * from what each completion says. Each query is sent 10 ms after the one
 * before finished, so every block starts on idle cores, as solo_ns is
 * priced (the profile's cold start, docs/design/profile-cold-start.md).
 */
TEST_F(serving, block__prediction_error_matches_the_completions)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	double ape = 0, signed_err = 0;
	int range[2] = { 0, 5 };

	ASSERT_EQ(0, make_serving(self, "fcfs", 0, 0, cache_dir, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, admit(self, "a", QOS_NS, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_TRUE(wait_ready(self, "a"));
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &info));
	EXPECT_EQ(0, info.stats.blocks);
	EXPECT_EQ(0.0, info.stats.prediction_mape);
	make_input(self, "a");
	for (int i = range[0]; i < range[1]; i++) {
		int one[2] = { i, i + 1 };

		ASSERT_EQ(0, submit(self, "a", i, &err)) TH_LOG("%s", coloc_err_str(&err));
		ASSERT_TRUE(pump(self, queries_done, one, DONE_MS, NULL));
		/* past the profile's longest cold gap (50 ms): each block priced at the solo */
		usleep(60000);
	}
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &info));
	ASSERT_NE(0, info.solo_ns);
	for (int i = range[0]; i < range[1]; i++) {
		double e;

		ASSERT_EQ(SERVING_QUERY_OK, self->q[i].status) TH_LOG("%s", self->q[i].reason);
		ASSERT_NE(0, self->q[i].exec_ns);
		e = ((double)self->q[i].exec_ns - (double)info.solo_ns) /
		    (double)self->q[i].exec_ns;
		ape += e < 0 ? -e : e;
		signed_err += e;
	}
	EXPECT_EQ(range[1] - range[0], info.stats.blocks);
	EXPECT_LE(fabs(ape / (range[1] - range[0]) - info.stats.prediction_mape), 1e-9);
	EXPECT_LE(fabs(signed_err / (range[1] - range[0]) - info.stats.prediction_bias), 1e-9);
	TH_LOG("fcfs, mobilenet_v2 alone: MAPE %.1f%%, bias %+.1f%% over %llu blocks",
	       100 * info.stats.prediction_mape, 100 * info.stats.prediction_bias,
	       (unsigned long long)info.stats.blocks);
}

TEST_HARNESS_MAIN
