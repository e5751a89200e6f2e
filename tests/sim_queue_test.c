// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the queue's part of coloc-sim --capacity's bound
 * (sim/capacity_queue.c): cases known in closed form (Erlang's loss
 * formula, M/D/1's waiting time), and a tenant whose lanes bind, searched
 * under every policy.
 */
#include <math.h>
#include <stdlib.h>
#include "kselftest_harness.h"
#include "sim.h"
#include "sim_fixture.h"

/* The share within qos_ms of the queue, or -1 */
static double within(double qps, double service_ms, double qos_ms, int lanes)
{
	double *gap = sim_queue_stream();
	struct sim_queue_waits w;
	int ret = gap ? sim_queue_waits(gap, qps, service_ms, qos_ms, lanes, &w) : -1;

	free(gap);
	return ret ? -1 : w.within;
}

/*
 * A QoS of one service time lets no query wait: a loss system, whose share
 * served is 1 - Erlang B whatever the service's law. Load a = 0.5: one
 * lane 1 / 1.5; two 1 - (a^2 / 2) / (1 + a + a^2 / 2) = 12 / 13. One lane
 * at a = 1 / 19 (10 ms a query, 5.263 QPS): 1 / (1 + a) = 0.95.
 */
TEST(sim_queue__no_wait_is_erlang_loss)
{
	ASSERT_LT(fabs(within(50, 10, 10, 1) - 2.0 / 3), 0.003);
	ASSERT_LT(fabs(within(50, 10, 10, 2) - 12.0 / 13), 0.003);
	ASSERT_LT(fabs(within(100.0 / 19, 10, 10, 1) - 0.95), 0.001);
	ASSERT_EQ(-1.0, within(50, 10, 9, 1));
}

/*
 * M/D/1 in arrival order, giving up no query: P(wait <= t) = (1 - r) x sum
 * over k <= t of (r (k - t))^k / k! x e^(-r (k - t)), t in service times.
 * r = 0.8: t = 1, 0.2 e^0.8 = 0.4451; t = 2, 0.2 (e^1.6 - 0.8 e^0.8) =
 * 0.6345. Giving up the queries that would end late only shortens the
 * others' waits, so the queue's share is at least these; and a lane ends
 * at most one query a service time, so at most 1 / r of them.
 */
TEST(sim_queue__giving_up_beats_md1)
{
	double t1 = within(80, 10, 20, 1), t2 = within(80, 10, 30, 1);

	TH_LOG("r 0.8: %.4f within 1 service time's wait, %.4f within 2", t1, t2);
	ASSERT_GT(t1, 0.4451);
	ASSERT_GT(t2, 0.6345);
	ASSERT_GT(t2, t1);
	ASSERT_LT(t2, 1 / 0.8);
}

/*
 * steps (3 ms at its fastest, on 4 cores) on one lane, QoS 6 ms: the
 * socket allows 333.3 QPS, the lane's queue far less; every policy's
 * searched QoS-QPS stays under it, and the best comes within 15 % of it
 * (the socket's figure alone is over 2x the best).
 */
TEST(sim_queue__bounds_every_policy_on_one_lane)
{
	struct sim_tenant st = { .costs = &steps, .qos_ns = 6 * MS, .share = 1 };
	struct sim_capacity_tenant t = { .costs = &steps, .qos_ms = 6, .share = 1 };
	struct sim_search_result *s = malloc(sizeof(*s));
	struct coloc_err err = { 0 };
	struct sim_capacity_bound b;
	double most = 0;

	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, sim_capacity_bound(&t, 1, 4, 1, 1.0, SIM_QOS_FRACTION, &b, &err));
	ASSERT_LT(fabs(b.socket_qps - 1000.0 / 3), 1e-3);
	ASSERT_LT(b.qps, b.socket_qps);
	for (size_t i = 0; i < NR_EVERY_POLICY; i++) {
		ASSERT_EQ(0, search_alone_on_4(every_policy[i], &st, 1, 1.0, s, &err))
		TH_LOG("%s", coloc_err_str(&err));
		TH_LOG("%s: %.1f QoS-QPS, the bound %.1f (the socket's %.1f)", every_policy[i],
		       s->qos_qps, b.qps, b.socket_qps);
		ASSERT_LE(s->qos_qps, b.qps);
		most = fmax(most, s->qos_qps);
	}
	ASSERT_GT(most, 0.85 * b.qps);
	free(s);
}

TEST_HARNESS_MAIN
