// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of coloc-sim --capacity's two ceilings, the plain one
 * (sim/capacity.c) and the bound with the socket (sim/capacity_bound.c),
 * on hand-built tables whose ceilings are worked out by hand below:
 * sim_fixture.h's steps, one layer of 8, 5 and 3 ms on 1, 2 and 4 cores (8,
 * 10 and 12 core-ms), and leveled, one layer whose two versions slow
 * differently; a 4-core machine. The bound is also checked against every
 * policy's searched QoS-QPS. The figures by hand are the bound's before
 * hindsight (queue_qps): with hindsight it is bisected to 0.1 %
 * (sim_hindsight_test.c checks that part).
 */
#include <errno.h>
#include <math.h>
#include "kselftest_harness.h"
#include "sim.h"
#include "sim_fixture.h"

#define NEAR(want, got) ASSERT_LT(fabs((got) - (want)), 1e-6 * (want))

/*
 * One tenant, one executor: without the bound, every query on 1 core (8
 * core-ms) side by side gives 4000 / 8 = 500 QPS; with it the executor's
 * time a query is at most 1000 / X ms, and the cheapest mix that fits uses
 * the whole machine at X = 333.3 (every query on 4 cores, 3 ms):
 * temporal's own rate, a ratio of 1.
 */
TEST(sim_capacity__one_executor_bounds_a_tenant_by_its_own_time)
{
	struct sim_capacity_tenant t = { .costs = &steps, .qos_ms = 10, .share = 1 };
	struct coloc_err err = { 0 };
	struct sim_capacity c;

	ASSERT_EQ(0, sim_capacity(&t, 1, 4, 1, &c, &err));
	ASSERT_EQ(4, c.fast_k[0]);
	NEAR(3.0, c.fast_ms[0]);
	NEAR(1000.0 / 3, c.temporal_qps);
	NEAR(500.0, c.unbounded_qps);
	NEAR(1000.0 / 3, c.ceiling_qps);
	ASSERT_EQ(4, c.pick[0].k[1]);
	ASSERT_LT(c.pick[0].frac, 1e-6);
}

/*
 * Two such tenants (equal shares), or one with two executors: each
 * executor may take 2000 / X ms a query. On 1 and 2 cores (8 and 5 ms,
 * 8 and 10 core-ms) a share f on 1 core costs 10 - 2f core-ms and takes
 * 5 + 3f ms; X (10 - 2f) = 4000 and 5 + 3f = 2000 / X meet at f = 0,
 * X = 400: every query on 2 cores, 1.2x temporal.
 */
TEST(sim_capacity__two_executors_run_two_queries_side_by_side)
{
	struct sim_capacity_tenant two[2] = {
		{ .costs = &steps, .qos_ms = 10, .share = 1 },
		{ .costs = &steps, .qos_ms = 10, .share = 1 },
	};
	struct coloc_err err = { 0 };
	struct sim_capacity c;

	ASSERT_EQ(0, sim_capacity(two, 2, 4, 1, &c, &err));
	NEAR(1000.0 / 3, c.temporal_qps);
	NEAR(500.0, c.unbounded_qps);
	NEAR(400.0, c.ceiling_qps);
	for (int i = 0; i < 2; i++) {
		const struct sim_capacity_pick *p = &c.pick[i];
		double ms = p->frac * p->ms[0] + (1 - p->frac) * p->ms[1];

		NEAR(5.0, ms);
	}
	ASSERT_EQ(0, sim_capacity(two, 1, 4, 2, &c, &err));
	NEAR(400.0, c.ceiling_qps);
	ASSERT_EQ(0, sim_capacity(two, 1, 4, 8, &c, &err));
	NEAR(500.0, c.ceiling_qps);
}

/* Counts above the machine are not used; a QoS nothing meets gives no ceiling. */
TEST(sim_capacity__counts_past_the_machine_and_an_unmeetable_qos)
{
	struct sim_capacity_tenant t = { .costs = &steps, .qos_ms = 10, .share = 1 };
	struct coloc_err err = { 0 };
	struct sim_capacity c;

	/* 2 cores: fastest 5 ms; one executor: 200 QPS at 5 ms, 2 cores busy */
	ASSERT_EQ(0, sim_capacity(&t, 1, 2, 1, &c, &err));
	ASSERT_EQ(2, c.fast_k[0]);
	NEAR(200.0, c.temporal_qps);
	NEAR(250.0, c.unbounded_qps);
	NEAR(200.0, c.ceiling_qps);
	t.qos_ms = 2;
	ASSERT_EQ(0, sim_capacity(&t, 1, 4, 1, &c, &err));
	ASSERT_EQ(0.0, c.unbounded_qps);
	ASSERT_EQ(0.0, c.ceiling_qps);
	ASSERT_EQ(0, c.pick[0].k[0]);
	ASSERT_EQ(-EINVAL, sim_capacity(&t, 1, 4, 0, &c, &err));
	t.share = 0;
	ASSERT_EQ(-EINVAL, sim_capacity(&t, 1, 4, 1, &c, &err));
}

/*
 * The bound with the socket, by hand: leveled's layer (v0 10 -> 20 ms, v1
 * 12 -> 15 ms from level 1 to 2) on 1 of 4 cores, M = 1.6. With all 4
 * busy its level is 1.6: v1 takes 13.8 ms (v0 16) and a quarter of the
 * socket, 3.45 socket-ms; at 3 busy 1.4: 13.2 ms, 4.4 socket-ms; alone 10,
 * 10. So 1000 / 3.45 = 289.86 QPS, where every query slowed 1.6 times its
 * time alone (main's estimate) gave 4000 / 16 = 250. M = 1: 10 ms on each
 * core, 400.
 */
TEST(capacity_bound__a_layer_whose_versions_slow_less_than_the_socket)
{
	struct sim_capacity_tenant t = { .costs = &leveled, .qos_ms = 20, .share = 1 };
	struct coloc_err err = { 0 };
	struct sim_capacity_bound b;

	ASSERT_EQ(0, sim_capacity_bound(&t, 1, 4, 64, 1.6, SIM_QOS_FRACTION, &b, &err));
	NEAR(1000 / 3.45, b.queue_qps);
	NEAR(13.8, b.ms[0]);
	NEAR(3.45, b.socket_ms[0]);
	NEAR(10.0, b.fastest_ms[0]);
	ASSERT_EQ(0, sim_capacity_bound(&t, 1, 4, 64, 1.0, SIM_QOS_FRACTION, &b, &err));
	NEAR(400.0, b.queue_qps);
	ASSERT_EQ(-EINVAL, sim_capacity_bound(&t, 1, 4, 0, 1.6, SIM_QOS_FRACTION, &b, &err));
}

/*
 * steps (8, 5, 3 ms on 1, 2, 4 cores) with no slowdown: its cheapest
 * options are 8 ms for a quarter of the socket (2 socket-ms), 5 for half
 * (2.5), 3 for all (3). One lane: a query's time at most 1000 / X ms,
 * met at 3 ms and X = 333.3 (the plain ceiling's), the socket's part (its
 * queue binds below: sim_queue_test.c). QoS 4 ms with lanes
 * enough: 95 % of the queries at a mean of 4 ms (half at 3, half at 5:
 * 2.75 socket-ms) and the 5 % a search lets miss at 8 (2): 2.7125, X =
 * 368.66; with every query within QoS 2.75, 363.64.
 */
TEST(capacity_bound__lanes_and_the_share_within_qos_by_hand)
{
	struct sim_capacity_tenant t = { .costs = &steps, .qos_ms = 10, .share = 1 };
	struct coloc_err err = { 0 };
	struct sim_capacity_bound b;

	ASSERT_EQ(0, sim_capacity_bound(&t, 1, 4, 1, 1.0, SIM_QOS_FRACTION, &b, &err));
	NEAR(1000.0 / 3, b.socket_qps);
	ASSERT_LT(b.qps, b.socket_qps);
	t.qos_ms = 4;
	ASSERT_EQ(0, sim_capacity_bound(&t, 1, 4, 64, 1.0, SIM_QOS_FRACTION, &b, &err));
	NEAR(1000 / 2.7125, b.queue_qps);
	ASSERT_EQ(0, sim_capacity_bound(&t, 1, 4, 64, 1.0, 1.0, &b, &err));
	NEAR(1000 / 2.75, b.queue_qps);
	t.qos_ms = 2;
	ASSERT_EQ(0, sim_capacity_bound(&t, 1, 4, 64, 1.0, SIM_QOS_FRACTION, &b, &err));
	ASSERT_EQ(0.0, b.qps);
}

/*
 * Every policy's QoS-QPS, searched on leveled's tenant with lanes enough
 * and a QoS that lets queries queue, on 4 cores at M = 1.6 (LLC domains of
 * one core: the socket's part only), stays under the bound; main's
 * estimate (250 QPS) is passed.
 */
TEST(capacity_bound__no_policy_passes_it)
{
	struct sim_tenant st = { .costs = &leveled, .qos_ns = 100 * MS, .share = 1 };
	struct sim_capacity_tenant t = { .costs = &leveled, .qos_ms = 100, .share = 1 };
	struct sim_search_result *s = malloc(sizeof(*s));
	struct coloc_err err = { 0 };
	struct sim_capacity_bound b;
	double most = 0;

	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, sim_capacity_bound(&t, 1, 4, 8, 1.6, SIM_QOS_FRACTION, &b, &err));
	for (size_t i = 0; i < NR_EVERY_POLICY; i++) {
		ASSERT_EQ(0, search_alone_on_4(every_policy[i], &st, 8, 1.6, s, &err))
			TH_LOG("%s", coloc_err_str(&err));
		TH_LOG("%s: %.1f QoS-QPS, the bound %.1f", every_policy[i], s->qos_qps, b.qps);
		ASSERT_LE(s->qos_qps, b.qps);
		most = fmax(most, s->qos_qps);
	}
	ASSERT_GT(most, 250);
	free(s);
}

TEST_HARNESS_MAIN
