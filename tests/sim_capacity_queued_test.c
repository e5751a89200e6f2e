// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the ceiling with a queue (sim/capacity_queued.c, coloc-sim
 * --capacity --search): against an M/D/1 queue's closed form, against
 * even arrivals' exact answer, and its split against every split run
 * whole (a brute force), on the hand-built tables of sim_fixture.h (one
 * 10 ms layer; steps: 8, 5 and 3 ms on 1, 2 and 4 cores).
 */
#include <errno.h>
#include <math.h>
#include "kselftest_harness.h"
#include "capacity_queued.h"
#include "sim_fixture.h"

static struct sim_params queue_params(const struct sim_tenant *t, int nr, int cores, double seconds)
{
	return (struct sim_params){
		.machine = { .nr_cores = cores, .nr_sockets = 1, .llc_size = cores },
		.tenants = t,
		.nr_tenants = nr,
		.duration_ns = (uint64_t)(seconds * 1e9),
		.warmup_ns = (uint64_t)(seconds * 1e8),
		.seed = 1,
	};
}

/*
 * M/D/1, service D, rate L: a query waits at most w < D with probability
 * (1 - L D) e^(L w) (Erlang's formula, its first term). D = 10 ms, QoS
 * 15 ms (w = 5 ms): the rate at which that is 0.95, by bisection (9.33 QPS).
 */
static double md1_rate_at_95(double d_s, double w_s)
{
	double lo = 0, hi = 1 / d_s;

	for (int i = 0; i < 60; i++) {
		double l = (lo + hi) / 2;

		if ((1 - l * d_s) * exp(l * w_s) >= 0.95)
			lo = l;
		else
			hi = l;
	}
	return lo;
}

TEST(capacity_queued__one_server_gives_the_md1_answer)
{
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 15 * MS, .share = 1 };
	struct sim_params p = queue_params(&t, 1, 1, 20000);
	double want = md1_rate_at_95(0.010, 0.005);
	struct sim_capacity_queued q;
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, sim_capacity_queued(&p, 1, 1, false, 1, 0.002, &q, &err));
	ASSERT_EQ(1, q.split.nr[0]);
	ASSERT_EQ(1, q.split.cores[0][0]);
	ASSERT_LT(fabs(want - 9.33), 0.01);
	ASSERT_LT(fabs(q.qos_qps / want - 1), 0.04);
}

/* Evenly spaced, a 10 ms server never queues up to 100 QPS and falls behind past it. */
TEST(capacity_queued__even_arrivals_fill_a_server_to_its_rate)
{
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 15 * MS, .share = 1 };
	struct sim_params p = queue_params(&t, 1, 1, 1000);
	struct sim_capacity_queued q;
	struct coloc_err err = { 0 };

	p.even_arrivals = true;
	ASSERT_EQ(0, sim_capacity_queued(&p, 1, 1, false, 1, 0.001, &q, &err));
	ASSERT_GT(q.qos_qps, 99.0);
	ASSERT_LT(q.qos_qps, 100.5);
	ASSERT_EQ(1.0, q.search.at_best.tenant[0].fraction_within);
}

/*
 * Two tenants of steps (unnamed: not copies of one model, a group each),
 * QoS 10 ms (every count within it), one server each, 4 cores: the
 * split found is the best of the four that fit (1+1, 1+2, 2+1, 2+2
 * cores), each searched whole; and below the fluid ceiling. Pooled, the
 * two tenants' queries share the servers and do at least as well.
 */
TEST(capacity_queued__finds_the_best_split_a_brute_force_finds)
{
	struct sim_tenant t[2] = {
		{ .costs = &steps, .qos_ns = 10 * MS, .share = 1 },
		{ .costs = &steps, .qos_ns = 10 * MS, .share = 1 },
	};
	struct sim_capacity_tenant ct[2] = {
		{ .costs = &steps, .qos_ms = 10, .share = 1 },
		{ .costs = &steps, .qos_ms = 10, .share = 1 },
	};
	struct sim_params p = queue_params(t, 2, 4, 200);
	struct sim_search_result *s = malloc(sizeof(*s));
	struct sim_capacity_queued q;
	struct coloc_err err = { 0 };
	struct sim_capacity fluid;
	double best = 0;

	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, sim_capacity_queued(&p, 4, 1, false, 1, 0.005, &q, &err));
	ASSERT_EQ(1, q.split.nr[0]);
	ASSERT_EQ(1, q.split.nr[1]);
	ASSERT_LE(q.split.cores[0][0] + q.split.cores[1][0], 4);
	ASSERT_EQ(6, q.candidates); /* 1, 2 and 4 cores, each tenant */
	for (int a = 1; a <= 2; a++)
		for (int b = 1; b <= 2; b++) {
			struct sim_servers split = { .nr = { 1, 1 },
						     .cores = { { a }, { b } },
						     .group = { 0, 1 },
						     .lanes = 1 };

			p.servers = &split;
			ASSERT_EQ(0, sim_search_qos_qps(&p, SIM_QOS_FRACTION, 1, 0.005, s, &err));
			best = fmax(best, s->qos_qps);
		}
	ASSERT_GT(best, 0);
	ASSERT_GT(q.qos_qps, 0.99 * best);
	ASSERT_EQ(0, sim_capacity(ct, 2, 4, 1, &fluid, &err));
	ASSERT_LT(q.qos_qps, fluid.ceiling_qps);
	/* pooled, both tenants' queries on the servers of one group, which does at least as well */
	ASSERT_EQ(0, sim_capacity_queued(&p, 4, 1, true, 1, 0.005, &q, &err));
	ASSERT_EQ(1, q.nr_groups);
	ASSERT_EQ(0, q.split.group[1]);
	ASSERT_GT(q.qos_qps, 0.99 * best);
	ASSERT_LT(q.qos_qps, fluid.ceiling_qps);
	free(s);
}

/*
 * Evenly every 1/150 s, two 10 ms servers: with two lanes a query finds
 * one free (each busy 75 %) and all end within 10 ms; with one lane the
 * tenant runs one at a time, 1.5 s of work a second, and falls behind.
 */
TEST(servers_run__a_tenant_runs_no_more_queries_at_once_than_its_lanes)
{
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 15 * MS, .share = 1 };
	struct sim_servers split = { .nr = { 2 }, .cores = { { 1, 1 } }, .lanes = 2 };
	struct sim_params p = queue_params(&t, 1, 2, 10);
	struct coloc_err err = { 0 };
	struct sim_result r;

	p.qps = 150;
	p.even_arrivals = true;
	p.servers = &split;
	ASSERT_EQ(0, sim_run(&p, &r, &err));
	ASSERT_GT(r.tenant[0].arrived, 1300);
	ASSERT_EQ(r.tenant[0].arrived, r.tenant[0].within);
	ASSERT_LT(fabs(r.tenant[0].p95_ms - 10), 1e-6);
	split.lanes = 1;
	ASSERT_EQ(0, sim_run(&p, &r, &err));
	ASSERT_LT(r.tenant[0].fraction_within, 0.05);
}

TEST(servers_run__refuses_a_count_its_table_lacks)
{
	struct sim_tenant t = { .costs = &steps, .qos_ns = 10 * MS, .share = 1 };
	struct sim_servers split = { .nr = { 1 }, .cores = { { 3 } } };
	struct sim_params p = queue_params(&t, 1, 4, 10);
	struct coloc_err err = { 0 };
	struct sim_result r;

	p.qps = 10;
	p.servers = &split;
	ASSERT_EQ(-EINVAL, sim_run(&p, &r, &err));
	split.cores[0][0] = 2;
	ASSERT_EQ(0, sim_run(&p, &r, &err));
	ASSERT_GT(r.tenant[0].arrived, 50);
	ASSERT_EQ(r.tenant[0].arrived, r.tenant[0].within);
}

TEST_HARNESS_MAIN
