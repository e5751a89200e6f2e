// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the queue and the socket together in coloc-sim --capacity's
 * bound (sim/capacity_hindsight.c): a tenant's queries scheduled with
 * hindsight, on cases worked by hand (evenly spaced arrivals; a QoS that
 * lets no query wait, Erlang's loss formula), and the bound it tightens
 * searched under every policy.
 */
#include <math.h>
#include <stdlib.h>
#include "kselftest_harness.h"
#include "sim.h"
#include "sim_fixture.h"

/*
 * sim_fixture.h's steps on 4 cores with no slowdown, by hand: a query of 8
 * ms on 1 core costs a quarter of the socket (2 socket-ms), 5 ms on 2 cores
 * half (2.5), 3 ms on 4 all (3); between them the mix of the two, so the
 * least socket ms of a query of x ms is 3 - (x - 3) / 4 up to 5 ms, 2.5 -
 * (x - 5) / 6 up to 8, 2 past it.
 */
static double steps_cost(double x)
{
	if (x < 3)
		return INFINITY;
	if (x < 5)
		return 3 - (x - 3) / 4;
	return x < 8 ? 2.5 - (x - 5) / 6 : 2;
}

static void steps_problem(double qos_ms, int lanes, struct sim_hindsight *h)
{
	*h = (struct sim_hindsight){
		.qos_ms = qos_ms, .fast_ms = 3, .fraction = SIM_QOS_FRACTION, .lanes = lanes
	};
	for (int i = 0; i <= SIM_HINDSIGHT_GRID; i++)
		h->cost[i] = steps_cost(qos_ms * i / SIM_HINDSIGHT_GRID);
}

/*
 * One lane, QoS 10 ms, a query every 4.75 ms: giving up every 20th query
 * lets the other 19 take 5 ms each back to back (19 x 5 = 20 x 4.75; the
 * last of them waits 4.5 ms and ends 9.5 ms after it came), 0.95 x 2.5 =
 * 2.375 socket-ms a query, and no schedule does better: the kept queries'
 * times add up to the lane's time at most, and the cost is convex. The
 * programme's backlog is rounded down to a 32nd of the QoS, which gives a
 * query at most that much more time: 0.95 x the cost at 5.3125 ms, 2.326
 * (less 1 % for the first queries' idle lane and the price's bisection).
 * Every 2.5 ms the lane cannot keep 95 % within QoS at 3 ms each.
 */
TEST(sim_hindsight__evenly_spaced_queries_by_hand)
{
	double *gap = malloc(SIM_HINDSIGHT_QUERIES * sizeof(*gap)), cost;
	struct sim_hindsight *h = malloc(sizeof(*h));

	ASSERT_NE(NULL, gap);
	ASSERT_NE(NULL, h);
	for (long n = 0; n < SIM_HINDSIGHT_QUERIES; n++)
		gap[n] = 1;
	steps_problem(10, 1, h);
	cost = sim_hindsight_cost(gap, 1000 / 4.75, h);
	TH_LOG("a query every 4.75 ms: %.4f socket-ms a query", cost);
	ASSERT_LE(cost, 0.95 * 2.5 + 1e-9);
	ASSERT_GE(cost, 0.99 * 0.95 * steps_cost(5 + 10.0 / SIM_HINDSIGHT_STATES));
	ASSERT_EQ(INFINITY, sim_hindsight_cost(gap, 1000 / 2.5, h));
	free(h);
	free(gap);
}

/*
 * QoS = the fastest time (3 ms): no kept query waits or runs slower, so at
 * most the queries a loss system keeps are kept, 1 / (1 + a) of them at
 * load a (Erlang's loss formula on one lane; with hindsight the earliest
 * end first is still the most kept). a = 0.03 (10 QPS): 97 % can be kept,
 * 95 % at 3 socket-ms each, 2.85 a query; a = 0.09 (30 QPS): 91.7 %, too
 * few.
 */
TEST(sim_hindsight__no_wait_keeps_what_a_loss_system_keeps)
{
	double *gap = sim_queue_stream(), cost;
	struct sim_hindsight *h = malloc(sizeof(*h));

	ASSERT_NE(NULL, gap);
	ASSERT_NE(NULL, h);
	steps_problem(3, 1, h);
	cost = sim_hindsight_cost(gap, 10, h);
	TH_LOG("10 QPS: %.4f socket-ms a query", cost);
	ASSERT_LE(cost, 0.95 * 3 + 1e-9);
	ASSERT_GE(cost, 0.99 * 0.95 * 3);
	ASSERT_EQ(INFINITY, sim_hindsight_cost(gap, 30, h));
	free(h);
	free(gap);
}

/*
 * Eight tenants of steps, one lane each, QoS 8 ms, sharing the 4 cores:
 * the bound without hindsight runs every query at 8 ms on 1 core (2
 * socket-ms: 500 QPS, 62.5 a tenant), each lane half busy, where its
 * queue at the fastest time (3 ms) hardly waits. With hindsight a query
 * of 8 ms that another arrives behind makes that one late, so the queries
 * that meet must run faster and cost more: the bound falls, and every
 * policy's searched QoS-QPS still stays under it.
 */
TEST(sim_hindsight__tightens_the_bound_and_no_policy_passes_it)
{
	struct sim_tenant st[8];
	struct sim_capacity_tenant t[8];
	struct sim_search_result *s = malloc(sizeof(*s));
	struct coloc_err err = { 0 };
	struct sim_capacity_bound b;

	ASSERT_NE(NULL, s);
	for (int i = 0; i < 8; i++) {
		st[i] = (struct sim_tenant){ .costs = &steps, .qos_ns = 8 * MS, .share = 1 };
		t[i] = (struct sim_capacity_tenant){ .costs = &steps, .qos_ms = 8, .share = 1 };
	}
	ASSERT_EQ(0, sim_capacity_bound(t, 8, 4, 1, 1.0, SIM_QOS_FRACTION, &b, &err));
	TH_LOG("the bound %.1f QPS, with the queue at the fastest time %.1f, the socket's %.1f",
	       b.qps, b.queue_qps, b.socket_qps);
	ASSERT_LT(fabs(b.socket_qps - 500), 1e-3);
	ASSERT_LT(b.qps, 0.97 * b.queue_qps);
	for (size_t i = 0; i < NR_EVERY_POLICY; i++) {
		ASSERT_EQ(0, search_on_4(every_policy[i], st, 8, 1, 1.0, s, &err))
		TH_LOG("%s", coloc_err_str(&err));
		TH_LOG("%s: %.1f QoS-QPS", every_policy[i], s->qos_qps);
		ASSERT_LE(s->qos_qps, b.qps);
	}
	free(s);
}

TEST_HARNESS_MAIN
