// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The baselines' walk over the queue (policy_serve_earliest_whole(),
 * whole_model.c) prices each tenant's rest once a round, not once a
 * demoted query: before, a member's N demoted queries of an L-layer model
 * cost N x L layer look-ups at every call, and os called it once per idle
 * executor (review of 2026-12-06, MEDIUM 7: 1024 x 8192 took 74-228 ms a
 * round, 3 s for os with 16 executors). The work is counted in layers
 * priced (struct policy_whole_prices), not timed. Tenant 0: N queries
 * that arrived half a QoS ago (QoS 1.25x the model alone: demoted, not
 * given up); tenant 1: one query on time, arriving last, with a slack
 * (its QoS less its model alone, 0.25 of the model) too small for any
 * demoted query to be served in its turn (late.c).
 */
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"

#define N 1024
#define L 512
#define LAYER_NS 100000ull
#define QOS (L * LAYER_NS * 5 / 4)
#define NOW (10 * QOS)
#define MAX_OUT 64

static const int counts[] = { 1, 2 };

FIXTURE(walk)
{
	uint64_t ns[L * 2];
	struct policy_costs m;
	struct policy_config cfg;
	struct policy_tenant tenants[POLICY_MAX_TENANTS];
	struct policy_query queries[N + 1];
	struct policy_cpuset free;
	struct policy_input in;
	struct policy_decision decisions[MAX_OUT];
	uint8_t versions[L * MAX_OUT];
	struct policy_drop drops[N];
	struct policy_output out;
	struct policy_whole_prices prices;
	struct coloc_err err;
};

FIXTURE_SETUP(walk)
{
	for (int i = 0; i < L * 2; i++)
		self->ns[i] = LAYER_NS;
	self->m = (struct policy_costs){ .nr_layers = L,
					 .nr_versions = 1,
					 .nr_core_counts = 2,
					 .nr_levels = 1,
					 .core_counts = counts,
					 .latency_ns = self->ns };
	memset(&self->cfg, 0, sizeof(self->cfg));
	policy_cpuset_set(&self->cfg.online, 0);
	policy_cpuset_set(&self->cfg.online, 1);
	self->cfg.late = POLICY_LATE_DROP;
	memset(self->tenants, 0, sizeof(self->tenants));
	self->tenants[0] = (struct policy_tenant){ .costs = &self->m, .qos_ns = QOS, .uid = 1 };
	self->tenants[1] = (struct policy_tenant){ .costs = &self->m, .qos_ns = QOS, .uid = 2 };
	for (int i = 0; i < N; i++) {
		uint64_t arrival = NOW - QOS / 2 - (uint64_t)(N - i);

		self->queries[i] = (struct policy_query){
			.id = (uint64_t)i + 1, .tenant = 0, .arrival_ns = arrival,
			.deadline_ns = arrival + QOS
		};
	}
	self->queries[N] = (struct policy_query){
		.id = N + 1, .tenant = 1, .arrival_ns = NOW, .deadline_ns = NOW + QOS
	};
	self->free = self->cfg.online;
	self->in = (struct policy_input){ .now_ns = NOW,
					  .tenants = self->tenants,
					  .nr_tenants = 2,
					  .queries = self->queries,
					  .nr_queries = N + 1,
					  .free = &self->free };
	self->out = (struct policy_output){ .decisions = self->decisions,
					    .max_decisions = MAX_OUT,
					    .versions = self->versions,
					    .max_versions = L * MAX_OUT,
					    .drops = self->drops,
					    .max_drops = N };
	policy_whole_prices_init(&self->prices);
	memset(&self->err, 0, sizeof(self->err));
}

FIXTURE_TEARDOWN(walk)
{
}

/*
 * fcfs's walk (any tenant): the N demoted queries are passed over, tenant
 * 1's query on time is served. Priced: tenant 0's rest once, tenant 1's
 * once, and the served query's versions: 3 L layers (before: N x L + 2 L).
 */
TEST_F(walk, demoted_queue_is_priced_once_a_tenant)
{
	struct policy_cpuset free = self->free;

	ASSERT_EQ(POLICY_SERVED,
		  policy_serve_earliest_whole(&self->cfg, &self->in, -1, NULL, NULL, &self->prices,
					      &free, &self->out, &self->err));
	ASSERT_EQ(1, self->out.nr_decisions);
	EXPECT_EQ(N + 1, self->decisions[0].query_id);
	EXPECT_EQ(0, self->out.nr_drops);
	EXPECT_LE(self->prices.layers_priced, 3 * L)
	TH_LOG("%ld layers priced for %d demoted queries of %d layers",
	       self->prices.layers_priced, N, L);
}

/*
 * os's walk of tenant 0 with 16 idle executors: each call serves the next
 * demoted query in arrival order (ids 1..16) on every core. Priced: the
 * rest once and each served query's versions: 17 L (before: 16 x N x L).
 */
TEST_F(walk, each_executor_serves_the_next_demoted_query_without_repricing)
{
	for (int e = 0; e < 16; e++) {
		struct policy_cpuset free = self->free;

		ASSERT_EQ(POLICY_SERVED,
			  policy_serve_earliest_whole(&self->cfg, &self->in, 0, NULL, NULL,
						      &self->prices, &free, &self->out, &self->err));
		ASSERT_EQ(e + 1, self->out.nr_decisions);
		EXPECT_EQ((uint64_t)e + 1, self->decisions[e].query_id);
	}
	EXPECT_LE(self->prices.layers_priced, 17 * L)
	TH_LOG("%ld layers priced for 16 calls", self->prices.layers_priced);
}

/*
 * Every fourth of tenant 0's queries arrived four QoS earlier (past its
 * deadline plus 2 QoS: given up whatever, late.c): the walk drops those before the query
 * it serves, each once, over two calls in the same round, and serves
 * tenant 1's query, then the earliest demoted one.
 */
TEST_F(walk, given_up_queries_are_dropped_once)
{
	struct policy_cpuset free = self->free;
	bool seen[N + 2] = { false };

	for (int i = 0; i < N; i += 4) {
		self->queries[i].arrival_ns -= 4 * QOS;
		self->queries[i].deadline_ns -= 4 * QOS;
	}
	ASSERT_EQ(POLICY_SERVED,
		  policy_serve_earliest_whole(&self->cfg, &self->in, -1, NULL, NULL, &self->prices,
					      &free, &self->out, &self->err));
	free = self->free;
	ASSERT_EQ(POLICY_SERVED,
		  policy_serve_earliest_whole(&self->cfg, &self->in, -1, NULL, NULL, &self->prices,
					      &free, &self->out, &self->err));
	ASSERT_EQ(2, self->out.nr_decisions);
	EXPECT_EQ(N + 1, self->decisions[0].query_id);
	EXPECT_EQ(2, self->decisions[1].query_id);
	ASSERT_EQ(N / 4, self->out.nr_drops);
	for (int i = 0; i < self->out.nr_drops; i++) {
		uint64_t id = self->drops[i].query_id;

		ASSERT_TRUE(id >= 1 && id <= N);
		EXPECT_FALSE(seen[id]) TH_LOG("query %llu dropped twice", (unsigned long long)id);
		seen[id] = true;
		EXPECT_EQ(1u, id % 4);
		EXPECT_EQ(POLICY_DROP_DEADLINE_PASSED, self->drops[i].reason);
	}
}

TEST_HARNESS_MAIN
