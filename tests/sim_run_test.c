// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the simulator's event heap and loop (sim/) on small cases whose
 * completion times are worked out by hand (tests/sim_fixture.h): one core
 * under fcfs, a tenant's executors, drops, block and query costs, the
 * shared penalty, a two-layer model on two cores, two tenants sharing an
 * LLC domain under the interference model, two queries time-sharing one
 * core under a policy that shares cores; where the cores' time went.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "policy_impl.h"
#include "profile.h"
#include "sim.h"
#include "testutil.h"
#include "sim_fixture.h"

/* ---- the event heap ---------------------------------------------------------------- */

TEST(sim_heap__pops_by_time_then_done_before_arrival_then_push_order)
{
	struct sim_heap h;
	struct coloc_rng rng;
	struct sim_event prev = { 0 }, ev;
	int n = 0;

	ASSERT_EQ(0, sim_heap_init(&h, 4, NULL));
	coloc_rng_seed(&rng, 7);
	/* few distinct times, so ties of time and of kind are frequent */
	for (int i = 0; i < 2000; i++)
		ASSERT_EQ(0, sim_heap_push(&h, coloc_rng_next(&rng) % 20, coloc_rng_next(&rng) % 2,
					   i, 0, NULL));
	while (sim_heap_pop(&h, &ev)) {
		if (n) {
			ASSERT_LE(prev.time_ns, ev.time_ns);
			if (prev.time_ns == ev.time_ns) {
				ASSERT_LE(prev.kind, ev.kind);
				if (prev.kind == ev.kind)
					ASSERT_LT(prev.seq, ev.seq);
			}
		}
		/* arg was the push index, which seq numbers too */
		ASSERT_EQ((uint64_t)ev.arg, ev.seq);
		prev = ev;
		n++;
	}
	ASSERT_EQ(2000, n);
	sim_heap_free(&h);
}

/* ---- hand-worked runs ---------------------------------------------------------------- */

/*
 * One core, one layer of 10 ms, arrivals at 0 and 5 ms, fcfs, QoS 100 ms:
 * q0 runs 0..10 ms; q1 waits and runs 10..20 ms. Latencies 10 and 15 ms.
 */
TEST_F(sim, run__fcfs_one_core_two_queries_finish_at_10_and_20_ms)
{
	static const double ms[] = { 0, 5 };
	static const int who[] = { 0, 0 };
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 };
	struct mem_trace mt;
	struct sim_params p;
	const struct sim_query_record *q0, *q1;

	mem_trace_init(&mt, 2, ms, who);
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(2, self->w->nr_q);
	q0 = record_of(self->w, 0);
	q1 = record_of(self->w, 1);
	ASSERT_NE(NULL, q0);
	ASSERT_NE(NULL, q1);
	ASSERT_FALSE(q0->dropped);
	ASSERT_FALSE(q1->dropped);
	ASSERT_EQ(10 * MS, q0->end_ns);
	ASSERT_EQ(20 * MS, q1->end_ns);
	ASSERT_EQ(10 * MS, q0->end_ns - q0->arrival_ns);
	ASSERT_EQ(15 * MS, q1->end_ns - q1->arrival_ns);
	ASSERT_EQ(2, self->r.tenant[0].completed);
	ASSERT_EQ(2, self->r.tenant[0].within);
	/* nearest rank of {10, 15}: p50 the first, p99 the second */
	ASSERT_EQ(10.0, self->r.tenant[0].p50_ms);
	ASSERT_EQ(15.0, self->r.tenant[0].p99_ms);
	ASSERT_EQ(20 * MS, self->r.end_ns);
}

/*
 * Where the time went, in the same run: two blocks of 1 core x 10 ms
 * (20 core-ms), q1 waiting 10 - 5 = 5 ms for its first block, the core
 * held 20 ms of the 1000 ms window.
 */
TEST_F(sim, run__counts_blocks_cores_and_waits_per_tenant)
{
	static const double ms[] = { 0, 5 };
	static const int who[] = { 0, 0 };
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 };
	const struct sim_tenant_result *tr = &self->r.tenant[0];
	struct mem_trace mt;
	struct sim_params p;

	mem_trace_init(&mt, 2, ms, who);
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(2, tr->started);
	ASSERT_EQ(5 * MS, tr->wait_ns);
	ASSERT_EQ(2, tr->blocks);
	ASSERT_EQ(2, tr->block_cores);
	ASSERT_EQ(20 * MS, tr->block_ns);
	ASSERT_EQ(20.0 * MS, tr->core_ns);
	ASSERT_LT(fabs(self->r.busy_fraction - 0.02), 1e-12);
}

/*
 * Where the cores' time went (struct sim_account), core-ms of the 1000 ms
 * window, worked by hand:
 *  - fcfs, the two-layer model on both cores (6 ms, 12 core-ms; 10 on one
 *    core), arrivals at 0 and 1 ms: work 2 x 10, knee 2 x 2, both cores idle
 *    from 12 ms with nothing waiting: 2 x 988;
 *  - static, two tenants of the 10 ms layer on one LLC domain, at 0 and
 *    5 ms (ends 11.5 and 16.5 ms, the test above): contention 2 x 1.5, one
 *    core idle 0..5 and 11.5..16.5, both after: 5 + 5 + 2 x 983.5;
 *  - model-wise, one tenant of one executor, the same arrivals on two
 *    cores: q1 waits behind q0 5..10 ms while a core idles: 5 behind the
 *    tenant's own;
 *  - temporal, two tenants: t1's query (5 ms) waits for t0's (0..10 ms),
 *    which holds one core, the policy's own choice: 5 core-ms idle while
 *    it left a query waiting, one such query over those 5 ms.
 */
TEST_F(sim, run__accounts_idle_cores_the_knee_and_contention)
{
	static const double at01[] = { 0, 1 }, at05[] = { 0, 5 };
	static const int one[] = { 0, 0 }, two[] = { 0, 1 };
	struct sim_tenant t[2] = {
		{ .costs = &two_layers, .qos_ns = 100 * MS, .share = 1 },
		{ .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 },
	};
	const struct sim_account *a = &self->r.account;
	struct mem_trace mt;
	struct sim_params p;

	mem_trace_init(&mt, 2, at01, one);
	p = small_params(policy_find("fcfs"), 2, 2, t, 1, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(20.0 * MS, a->work_ns);
	ASSERT_EQ(4.0 * MS, a->knee_ns);
	ASSERT_EQ(0.0, a->contention_ns);
	ASSERT_EQ(0.0, a->cost_ns);
	ASSERT_EQ(1976.0 * MS, a->idle_empty_ns);
	ASSERT_EQ(0.0, a->idle_runnable_ns + a->idle_lane_ns);

	t[0].costs = &one_layer;
	mem_trace_init(&mt, 2, at05, two);
	p = small_params(policy_find("static"), 2, 2, t, 2, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(20.0 * MS, a->work_ns);
	ASSERT_EQ(0.0, a->knee_ns);
	ASSERT_EQ(3.0 * MS, a->contention_ns);
	ASSERT_EQ(1977.0 * MS, a->idle_empty_ns);
	ASSERT_EQ(0.0, a->idle_runnable_ns + a->idle_lane_ns);

	mem_trace_init(&mt, 2, at05, one);
	p = small_params(policy_find("model-wise"), 2, 1, t, 1, &mt.trace, self->w);
	p.executors = 1;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(5.0 * MS, a->idle_lane_ns);
	ASSERT_EQ(0.0, a->idle_runnable_ns);
	ASSERT_EQ(1975.0 * MS, a->idle_empty_ns);

	mem_trace_init(&mt, 2, at05, two);
	p = small_params(policy_find("temporal"), 2, 1, t, 2, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(5.0 * MS, a->idle_runnable_ns);
	ASSERT_EQ(5.0 * MS, a->runnable_ns);
	ASSERT_EQ(0.0, a->idle_lane_ns);
}

/*
 * One core, one tenant of one 10 ms layer, QoS 15 ms, 90 QPS (the core 90 %
 * busy): evenly spaced (--arrivals even) every query finds the core free
 * and ends in 10 ms; Poisson arrivals of the same rate queue, and more than
 * 5 % wait past 5 ms (an M/D/1 queue at 0.9: about a third).
 */
TEST_F(sim, run__even_arrivals_never_queue_where_poisson_ones_do)
{
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 15 * MS, .share = 1 };
	const struct sim_tenant_result *tr = &self->r.tenant[0];
	struct sim_params p = small_params(policy_find("fcfs"), 1, 1, &t, 1, NULL, self->w);

	p.qps = 90;
	p.duration_ns = 20000 * MS;
	p.even_arrivals = true;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_GT(tr->arrived, 1700);
	ASSERT_EQ(tr->arrived, tr->within);
	ASSERT_EQ(0, tr->wait_ns);
	p.even_arrivals = false;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_GT(tr->arrived, 1700);
	ASSERT_LT(tr->fraction_within, 0.95);
}

/*
 * Two cores (an LLC each: no interference), one tenant of one 10 ms layer
 * on one core, arrivals at 0 and 5 ms. One executor a tenant (colocd's):
 * q1 waits for q0 though a core is free, 0..10 and 10..20 ms. Two: q1
 * runs beside it, 5..15 ms.
 */
TEST_F(sim, run__a_tenant_runs_as_many_queries_at_once_as_it_has_executors)
{
	static const double ms[] = { 0, 5 };
	static const int who[] = { 0, 0 };
	static const char *const names[] = { "model-wise", "coloc" };
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 };
	struct mem_trace mt;

	mem_trace_init(&mt, 2, ms, who);
	for (int i = 0; i < 2; i++)
		for (int e = 1; e <= 2; e++) {
			struct sim_params p = small_params(policy_find(names[i]), 2, 1, &t, 1,
							   &mt.trace, self->w);
			const struct sim_query_record *q1;

			p.executors = e;
			self->w->nr_q = 0;
			ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
			ASSERT_EQ(2, self->w->nr_q);
			ASSERT_EQ(10 * MS, record_of(self->w, 0)->end_ns);
			q1 = record_of(self->w, 1);
			ASSERT_NE(NULL, q1);
			ASSERT_EQ(e == 1 ? 20 * MS : 15 * MS, q1->end_ns);
			ASSERT_EQ(2, self->r.tenant[0].within);
		}
}

/*
 * The same with QoS 12 ms: at 10 ms q1 would end at 20 ms, past its
 * deadline 5 + 12 = 17 ms, but before its deadline plus its QoS (29 ms):
 * fcfs serves it late (before, it dropped it at 10 ms). With QoS 4 ms q0
 * itself ends late (10 ms, past its deadline plus its QoS, 8, but before
 * plus 2 QoS, 12, with nothing queued to delay: served, overdue); q1 would
 * end at 20 ms, past 5 + 3 x 4 = 17 ms (its deadline plus 2 QoS): dropped
 * at 10 ms. (At QoS 7 ms, past 19 ms but not 26, it is served now.)
 */
TEST_F(sim, run__fcfs_serves_a_late_query_and_drops_it_only_past_its_deadline_plus_its_qos)
{
	static const double ms[] = { 0, 5 };
	static const int who[] = { 0, 0 };
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 12 * MS, .share = 1 };
	struct mem_trace mt;
	struct sim_params p;
	const struct sim_query_record *q0, *q1;

	mem_trace_init(&mt, 2, ms, who);
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	q1 = record_of(self->w, 1);
	ASSERT_NE(NULL, q1);
	ASSERT_FALSE(q1->dropped);
	ASSERT_EQ(20 * MS, q1->end_ns);
	ASSERT_EQ(2, self->r.tenant[0].completed);
	ASSERT_EQ(0, self->r.tenant[0].dropped);
	ASSERT_EQ(0.5, self->r.tenant[0].fraction_within);

	t.qos_ns = 4 * MS;
	mem_trace_init(&mt, 2, ms, who);
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &mt.trace, self->w);
	self->w->nr_q = 0;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	q0 = record_of(self->w, 0);
	q1 = record_of(self->w, 1);
	ASSERT_NE(NULL, q0);
	ASSERT_NE(NULL, q1);
	ASSERT_FALSE(q0->dropped);
	ASSERT_EQ(10 * MS, q0->end_ns);
	ASSERT_TRUE(q1->dropped);
	ASSERT_EQ(10 * MS, q1->end_ns);
	ASSERT_EQ(1, self->r.tenant[0].completed);
	ASSERT_EQ(1, self->r.tenant[0].dropped);
	ASSERT_EQ(0.0, self->r.tenant[0].fraction_within);
}

/*
 * Serving costs, one core, QoS 100 ms. Block cost c = 0.5 ms, query cost
 * q = 2 ms.
 *  - layer-wise, the two-layer model (3 + 7 ms on 1 core), one query at 0:
 *    two blocks, 0..3.5 and 3.5..11 ms (each its layer + c; the block's
 *    latency to the policy includes c); the client has it at
 *    L + 2c + q = 10 + 1 + 2 = 13 ms.
 *  - fcfs, the one-layer model (10 ms), arrivals at 0 and 5 ms: q0 holds
 *    the core 0..10.5 ms, answered at 12.5; the query cost holds no core,
 *    so q1 runs 10.5..21 ms, answered at 23 ms (latency 18 ms).
 */
TEST_F(sim, run__block_cost_holds_the_cores_query_cost_adds_latency_only)
{
	static const double one[] = { 0 }, two[] = { 0, 5 };
	static const int who[] = { 0, 0 };
	struct sim_tenant t = {
		.costs = &two_layers, .qos_ns = 100 * MS, .share = 1, .query_cost_ns = 2 * MS
	};
	struct mem_trace mt;
	struct sim_params p;

	mem_trace_init(&mt, 1, one, who);
	p = small_params(policy_find("layer-wise"), 1, 1, &t, 1, &mt.trace, self->w);
	p.block_cost_ns = MS / 2;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, self->w->nr_b);
	ASSERT_EQ(0, self->w->b[0].first);
	ASSERT_EQ(1, self->w->b[0].last);
	ASSERT_EQ(0, self->w->b[0].start_ns);
	ASSERT_EQ(3 * MS + MS / 2, self->w->b[0].end_ns);
	ASSERT_EQ(3 * MS + MS / 2, self->w->b[1].start_ns);
	ASSERT_EQ(11 * MS, self->w->b[1].end_ns);
	ASSERT_EQ(13 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(13.0, self->r.tenant[0].p50_ms);
	ASSERT_EQ(1, self->r.tenant[0].within);

	self->w->nr_q = 0;
	self->w->nr_b = 0;
	t.costs = &one_layer;
	mem_trace_init(&mt, 2, two, who);
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &mt.trace, self->w);
	p.block_cost_ns = MS / 2;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, self->w->nr_b);
	ASSERT_EQ(10 * MS + MS / 2, self->w->b[0].end_ns);
	ASSERT_EQ(10 * MS + MS / 2, self->w->b[1].start_ns);
	ASSERT_EQ(21 * MS, self->w->b[1].end_ns);
	ASSERT_EQ(12 * MS + MS / 2, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(23 * MS, record_of(self->w, 1)->end_ns);
	/* nearest rank of {12.5, 18} */
	ASSERT_EQ(12.5, self->r.tenant[0].p50_ms);
	ASSERT_EQ(18.0, self->r.tenant[0].p99_ms);
	/* QoS 15 ms: q1 (18 ms with the query cost) misses, though its blocks met it */
	t.qos_ns = 15 * MS;
	t.query_cost_ns = 2 * MS;
	p.late = POLICY_LATE_SERVE;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, self->r.tenant[0].completed);
	ASSERT_EQ(1, self->r.tenant[0].within);
}

/*
 * The query cost spent inside the blocks: one core, the one-layer model (10
 * ms, its solo table latency), query cost 10 ms, fcfs, no block cost.
 *  - always cold (no warm-up time): each block takes 10 x (1 + 10 / 10) =
 *    20 ms and holds the core; arrivals at 0 and 5 ms end at 20 and 40 ms,
 *    and nothing is added after the block.
 *  - warm-up time 10 ms: q0 (no query before) 0..20 ms; q1 starts at 20,
 *    right as q0 ended (idle 0): 10 ms, ends at 30; q2 at 100 ms, 70 ms
 *    after q1 ended: 10 x (1 + (1 - exp(-7))) = 19.99088 ms.
 */
TEST_F(sim, run__query_cost_in_blocks_holds_the_core_and_scales_with_idle_time)
{
	static const double arrivals[] = { 0, 5, 100 };
	static const int who[] = { 0, 0, 0 };
	struct sim_tenant t = {
		.costs = &one_layer, .qos_ns = 1000 * MS, .share = 1, .query_cost_ns = 10 * MS
	};
	struct mem_trace mt;
	struct sim_params p;
	double q2_ns = 100 * MS + 10 * MS * (2 - exp(-7.0));

	mem_trace_init(&mt, 2, arrivals, who);
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &mt.trace, self->w);
	p.query_cost_in_blocks = true;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, self->w->nr_b);
	ASSERT_EQ(20 * MS, self->w->b[0].end_ns);
	ASSERT_EQ(40 * MS, self->w->b[1].end_ns);
	ASSERT_EQ(20 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(40 * MS, record_of(self->w, 1)->end_ns);

	self->w->nr_q = 0;
	self->w->nr_b = 0;
	mem_trace_init(&mt, 3, arrivals, who);
	p = small_params(policy_find("fcfs"), 1, 1, &t, 1, &mt.trace, self->w);
	p.query_cost_in_blocks = true;
	p.query_cost_warm_ns = 10 * MS;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(3, self->w->nr_b);
	ASSERT_EQ(20 * MS, self->w->b[0].end_ns);
	ASSERT_EQ(20 * MS, self->w->b[1].start_ns);
	ASSERT_EQ(30 * MS, self->w->b[1].end_ns);
	ASSERT_EQ(100 * MS, self->w->b[2].start_ns);
	ASSERT_GE(1000, llabs((long long)self->w->b[2].end_ns - llround(q2_ns)))
	TH_LOG("q2 ended at %llu ns, want %.0f", (unsigned long long)self->w->b[2].end_ns, q2_ns);
}

/*
 * The query cost's spread: one core, the one-layer model (10 ms), query
 * cost 10 ms, 1 query/s for 1000 s (a queue almost never forms: a query
 * finds the core busy with probability ~1 %). With sigma 0 every latency
 * is 20 ms. With sigma 0.5 the cost is lognormal with median 10 ms, so the
 * latencies' median is 10 + 10 = 20 ms and their 95th percentile
 * 10 + 10 exp(1.645 x 0.5) = 32.76 ms; over ~900 queries their sampling
 * errors are ~0.2 and ~1 ms. The same seed gives the same latencies.
 */
TEST_F(sim, run__query_cost_spread_is_lognormal_around_its_median)
{
	struct sim_tenant t = {
		.costs = &one_layer, .qos_ns = 1000 * MS, .share = 1, .query_cost_ns = 10 * MS
	};
	struct sim_params p = small_params(policy_find("fcfs"), 1, 1, &t, 1, NULL, self->w);
	struct sim_result again;

	p.on_query = NULL;
	p.on_block = NULL;
	p.qps = 1;
	p.duration_ns = 1000000 * MS;
	p.warmup_ns = 0;
	p.seed = 3;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_LT(800, self->r.tenant[0].completed);
	ASSERT_EQ(20.0, self->r.tenant[0].p50_ms);
	p.query_cost_sigma = 0.5;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_LT(fabs(self->r.tenant[0].p50_ms - 20.0), 1.0)
	TH_LOG("p50 %.3f ms", self->r.tenant[0].p50_ms);
	ASSERT_LT(fabs(self->r.tenant[0].p95_ms - 32.76), 4.0)
	TH_LOG("p95 %.3f ms", self->r.tenant[0].p95_ms);
	ASSERT_EQ(0, sim_run(&p, &again, &self->err));
	ASSERT_EQ(self->r.tenant[0].p95_ms, again.tenant[0].p95_ms);
	p.query_cost_sigma = -1;
	ASSERT_EQ(-EINVAL, sim_run(&p, &again, &self->err));
}

/*
 * The time-sharing penalty: os, one core, two 10 ms queries at 0. Ideal
 * sharing ends both at 20 ms; with penalty 1.5 each runs at 1 / (2 x 1.5)
 * of its speed and both end at 30 ms. A policy that does not share cores
 * (fcfs) ignores it: 10 and 20 ms.
 */
TEST_F(sim, run__shared_penalty_slows_only_time_shared_blocks)
{
	static const double both[] = { 0, 0 };
	static const int who[] = { 0, 1 };
	struct sim_tenant t[2] = {
		{ .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 },
		{ .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 },
	};
	struct mem_trace mt;
	struct sim_params p;

	mem_trace_init(&mt, 2, both, who);
	p = small_params(policy_find("os"), 1, 1, t, 2, &mt.trace, self->w);
	p.shared_penalty = 1.5;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(30 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(30 * MS, record_of(self->w, 1)->end_ns);
	self->w->nr_q = 0;
	self->w->nr_b = 0;
	p.policy = policy_find("fcfs");
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(10 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(20 * MS, record_of(self->w, 1)->end_ns);
	p.shared_penalty = 0.4;
	ASSERT_EQ(-EINVAL, sim_run(&p, &self->r, &self->err));
}

/*
 * Two cores, the two-layer model (3 + 7 ms on 1 core, 2 + 4 ms on 2):
 * fcfs serves the whole model as one block [0, 2) on both cores, 6 ms.
 * Arrivals at 0 and 1 ms: q0 0..6 ms, q1 6..12 ms (latency 11 ms).
 */
TEST_F(sim, run__fcfs_two_layer_model_is_one_block_on_both_cores)
{
	static const double ms[] = { 0, 1 };
	static const int who[] = { 0, 0 };
	struct sim_tenant t = { .costs = &two_layers, .qos_ns = 100 * MS, .share = 1 };
	struct mem_trace mt;
	struct sim_params p;

	mem_trace_init(&mt, 2, ms, who);
	p = small_params(policy_find("fcfs"), 2, 2, &t, 1, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(2, self->w->nr_b);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ((uint64_t)i, self->w->b[i].query_id);
		ASSERT_EQ(0, self->w->b[i].first);
		ASSERT_EQ(2, self->w->b[i].last);
		ASSERT_EQ(2, self->w->b[i].nr_cores);
		ASSERT_EQ(6 * i * MS, self->w->b[i].start_ns);
		ASSERT_EQ(6 * (i + 1) * MS, self->w->b[i].end_ns);
	}
	ASSERT_EQ(12 * MS, record_of(self->w, 1)->end_ns);
}

/*
 * static, two tenants of the one-layer model, two cores: each tenant owns
 * one core. With one LLC domain of 2 cores each block sees the other on
 * half its domain: slowdown 1 + (1.6 - 1) * 0.5 = 1.3.
 *  - both arrive at 0: both run 0..13 ms;
 *  - q1 at 5 ms: q0 runs alone 0..5 (5 ms of work left), then at 1.3x:
 *    ends at 5 + 6.5 = 11.5 ms. q1 runs 5..11.5 at 1.3x (5 ms of work
 *    done), then alone: ends at 16.5 ms. Latencies 11.5 and 11.5 ms.
 * With LLC domains of 1 core nothing is shared: 10 ms each.
 */
TEST_F(sim, run__static_co_runners_on_one_llc_domain_slow_each_other)
{
	static const double both[] = { 0, 0 }, staggered[] = { 0, 5 };
	static const int who[] = { 0, 1 };
	struct sim_tenant t[2] = {
		{ .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 },
		{ .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 },
	};
	struct mem_trace mt;
	struct sim_params p;

	mem_trace_init(&mt, 2, both, who);
	p = small_params(policy_find("static"), 2, 2, t, 2, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(13 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(13 * MS, record_of(self->w, 1)->end_ns);

	self->w->nr_q = 0;
	mem_trace_init(&mt, 2, staggered, who);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(11500000ULL, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(16500000ULL, record_of(self->w, 1)->end_ns);

	self->w->nr_q = 0;
	p.machine.llc_size = 1;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(10 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(15 * MS, record_of(self->w, 1)->end_ns);
}

/*
 * static, two tenants of the one-layer model, two cores in LLC domains of
 * one core each: no domain is shared, so before the socket's part only one
 * socket gave 10 and 15 ms, as two do now. With a full-socket slowdown of
 * 1.6 each block sees the socket's other core busy: socket pressure 1,
 * slowdown 1.6.
 *  - both at 0: both run 0..16 ms;
 *  - q1 at 5 ms: q0 alone 0..5, then its 5 ms left at 1.6x: ends at 13 ms;
 *    q1 runs 5..13 at 1.6x (5 ms of work), then alone: ends at 18 ms.
 * On two sockets of one core each nothing is shared: 10 and 15 ms.
 */
TEST_F(sim, run__blocks_in_other_llc_domains_of_one_socket_slow_each_other)
{
	static const double both[] = { 0, 0 }, staggered[] = { 0, 5 };
	static const int who[] = { 0, 1 };
	struct sim_tenant t[2] = {
		{ .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 },
		{ .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 },
	};
	struct mem_trace mt;
	struct sim_params p;

	mem_trace_init(&mt, 2, both, who);
	p = small_params(policy_find("static"), 2, 1, t, 2, &mt.trace, self->w);
	p.interference.socket_slowdown = 1.6;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(16 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(16 * MS, record_of(self->w, 1)->end_ns);

	self->w->nr_q = 0;
	mem_trace_init(&mt, 2, staggered, who);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(13 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(18 * MS, record_of(self->w, 1)->end_ns);

	self->w->nr_q = 0;
	p.machine.nr_sockets = 2;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(10 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(15 * MS, record_of(self->w, 1)->end_ns);

	self->w->nr_q = 0;
	p.machine.nr_sockets = 1;
	p.interference.socket_slowdown = 1.0;
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err));
	ASSERT_EQ(10 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(15 * MS, record_of(self->w, 1)->end_ns);
}

/*
 * Time-shared cores: one core, the one-layer model (10 ms alone), two
 * tenants, each core processor-shared among its blocks.
 *  - both arrive at 0: both run at half speed from 0, both end at 20 ms
 *    (twice the solo time);
 *  - q1 at 5 ms: q0 runs alone 0..5 (5 ms of work left), then at half
 *    speed: ends at 5 + 2 x 5 = 15 ms; by then q1 has done 5 ms of work,
 *    the other 5 alone: ends at 20 ms.
 * No LLC interference between them: a block does not press on its own
 * cores (full_slowdown 1.6 changes nothing here).
 */
TEST_F(sim, run__shared_core_two_queries_each_take_twice_the_solo_time)
{
	static const double both[] = { 0, 0 }, staggered[] = { 0, 5 };
	static const int who[] = { 0, 1 };
	struct sim_tenant t[2] = {
		{ .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 },
		{ .costs = &one_layer, .qos_ns = 100 * MS, .share = 1 },
	};
	struct mem_trace mt;
	struct sim_params p;

	ASSERT_TRUE(policy_find("os")->shares_cores);
	mem_trace_init(&mt, 2, both, who);
	p = small_params(policy_find("os"), 1, 1, t, 2, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, self->w->nr_b);
	ASSERT_EQ(0, self->w->b[0].start_ns);
	ASSERT_EQ(0, self->w->b[1].start_ns);
	ASSERT_EQ(20 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(20 * MS, record_of(self->w, 1)->end_ns);
	ASSERT_EQ(2, self->r.tenant[0].completed + self->r.tenant[1].completed);

	self->w->nr_q = 0;
	self->w->nr_b = 0;
	mem_trace_init(&mt, 2, staggered, who);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(15 * MS, record_of(self->w, 0)->end_ns);
	ASSERT_EQ(20 * MS, record_of(self->w, 1)->end_ns);
}

/*
 * Many blocks at once on shared cores: 2 cores, 8 tenants of the two-layer
 * model (6 ms alone on both cores) arriving together. All 8 run at once at
 * 1/8 speed and end together at 8 x 6 = 48 ms; the simulator grows its
 * block slots past the core count to hold them.
 */
TEST_F(sim, run__shared_cores_hold_more_blocks_than_cores)
{
	static const double at[] = { 0, 0, 0, 0, 0, 0, 0, 0 };
	static const int who[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	struct sim_tenant t[8];
	struct mem_trace mt;
	struct sim_params p;

	for (int i = 0; i < 8; i++)
		t[i] = (struct sim_tenant){ .costs = &two_layers, .qos_ns = 1000 * MS, .share = 1 };
	mem_trace_init(&mt, 8, at, who);
	p = small_params(policy_find("os"), 2, 2, t, 8, &mt.trace, self->w);
	ASSERT_EQ(0, sim_run(&p, &self->r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(8, self->w->nr_q);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(8 * 6 * MS, record_of(self->w, (uint64_t)i)->end_ns);
}

TEST_HARNESS_MAIN
