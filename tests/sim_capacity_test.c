// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the ceiling the tables allow (sim/capacity.c, coloc-sim
 * --capacity) on a hand-built table whose ceilings are worked out by hand
 * below: sim_fixture.h's steps, one layer of 8, 5 and 3 ms on 1, 2 and 4
 * cores (8, 10 and 12 core-ms), QoS 10 ms, a 4-core machine.
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
 * The socket's part at the ceiling's own occupancy: with executors enough,
 * every query on 1 core (8 ms, 8 core-ms) gives 500 QPS alone. At M =
 * 1.25 a query takes 8 (1 + 0.25 u) ms, u = D / 4 the busy share, still
 * within QoS on 1 core (10 ms at u = 1); D = 0.008 X (1 + D / 16) is 4 at
 * X = 400: 80 % of the ceiling. M = 1 leaves it.
 */
TEST(sim_capacity__the_socket_slowdown_at_its_own_occupancy_lowers_the_ceiling)
{
	struct sim_capacity_tenant t = { .costs = &steps, .qos_ms = 10, .share = 1 };
	struct coloc_err err = { 0 };
	struct sim_capacity c;

	ASSERT_EQ(0, sim_capacity(&t, 1, 4, 64, &c, &err));
	NEAR(500.0, c.ceiling_qps);
	ASSERT_LT(fabs(400.0 - sim_capacity_socket_qps(&t, 1, 4, 64, 1.25, &c)), 1e-3);
	NEAR(500.0, sim_capacity_socket_qps(&t, 1, 4, 64, 1.0, &c));
}

TEST_HARNESS_MAIN
