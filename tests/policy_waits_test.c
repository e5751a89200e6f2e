// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A short-QoS tenant's query that arrives while a long tenant holds every
 * core waits for the long one's blocks no longer than its slack (its QoS
 * less its model alone on every core): coloc cuts each block to end by the
 * waiting query's latest start, and gives way when not even one layer fits
 * (docs/design/coloc-policy.md, "No wait past the slack"). The rounds are
 * played on 2 cores, each block running exactly its predicted time.
 */
#include <math.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_fixture.h"

#define MS 1000000ull

/*
 * Two models of one version, at 1 and 2 cores, every layer the same work.
 * long: 6 layers of 2 ms on 1 core, 1 ms on 2 (6 ms alone on both).
 * short: 2 layers of 1.5 ms on 1 core, 1 ms on 2 (2 ms alone on both).
 */
static const int two_counts[] = { 1, 2 };
static const uint64_t long_ops[] = { 1, 1, 1, 1, 1, 1 };
static const uint64_t long_ns[6 * 2] = { 2 * MS, MS, 2 * MS, MS, 2 * MS, MS,
					 2 * MS, MS, 2 * MS, MS, 2 * MS, MS };
static const uint64_t short_ops[] = { 1, 1 };
static const uint64_t short_ns[2 * 2] = { 3 * MS / 2, MS, 3 * MS / 2, MS };
static const struct policy_costs long_model = {
	.nr_layers = 6,
	.nr_versions = 1,
	.nr_core_counts = 2,
	.nr_levels = 1,
	.core_counts = two_counts,
	.latency_ns = long_ns,
	.layer_ops = long_ops,
};
static const struct policy_costs short_model = {
	.nr_layers = 2,
	.nr_versions = 1,
	.nr_core_counts = 2,
	.nr_levels = 1,
	.core_counts = two_counts,
	.latency_ns = short_ns,
	.layer_ops = short_ops,
};

/*
 * Plays rounds of policy name from now on 2 cores until query id has a
 * block decided, each block running its predicted time (cores freed, the
 * query advanced, at its end); returns when that was (0: never, within 64
 * rounds). A query whose last layer ran, or that the policy drops, leaves.
 */
static uint64_t first_decided(FIXTURE_DATA(pol) * self, const char *name, uint64_t now, uint64_t id)
{
	struct policy *p = policy_create(policy_find(name), &self->cfg, &self->err);
	uint64_t end[MAX_Q] = { 0 }, at = 0;

	for (int round = 0; p && round < 64 && !at; round++) {
		uint64_t next = UINT64_MAX;

		self->in.now_ns = now;
		self->in.nr_running = 0;
		policy_cpuset_zero(&self->free);
		policy_cpuset_set(&self->free, 0);
		policy_cpuset_set(&self->free, 1);
		for (int i = 0; i < self->in.nr_queries; i++)
			if (self->queries[i].in_flight) {
				self->running[self->in.nr_running++] = (struct policy_decision){
					.query_id = self->queries[i].id,
					.tenant = self->queries[i].tenant,
					.cores = self->free,
					.nr_cores = 2,
				};
				policy_cpuset_zero(&self->free);
			}
		policy_output_reset(&self->out);
		if (policy_decide(p, &self->in, &self->out, &self->err))
			break;
		for (int d = 0; d < self->out.nr_decisions; d++) {
			const struct policy_decision *dec = &self->decisions[d];

			for (int i = 0; i < self->in.nr_queries; i++)
				if (self->queries[i].id == dec->query_id) {
					self->queries[i].in_flight = true;
					self->queries[i].next_layer = dec->last_layer;
					end[i] = now + dec->predicted_ns;
				}
			if (dec->query_id == id)
				at = now;
		}
		for (int k = 0; k < self->out.nr_drops; k++)
			for (int i = 0; i < self->in.nr_queries; i++)
				if (self->queries[i].id == self->drops[k].query_id) {
					end[i] = end[self->in.nr_queries - 1];
					self->queries[i] = self->queries[--self->in.nr_queries];
				}
		for (int i = 0; i < self->in.nr_queries; i++)
			if (self->queries[i].in_flight && end[i] < next)
				next = end[i];
		if (next == UINT64_MAX)
			break;
		now = next;
		for (int i = self->in.nr_queries - 1; i >= 0; i--) {
			struct policy_query *q = &self->queries[i];

			if (!q->in_flight || end[i] != now)
				continue;
			q->in_flight = false;
			if (q->next_layer == self->tenants[q->tenant].costs->nr_layers) {
				end[i] = end[self->in.nr_queries - 1];
				*q = self->queries[--self->in.nr_queries];
			}
		}
	}
	policy_destroy(p);
	return at;
}

static void two_tenants_on_two_cores(FIXTURE_DATA(pol) * self)
{
	policy_cpuset_zero(&self->cfg.online);
	policy_cpuset_set(&self->cfg.online, 0);
	policy_cpuset_set(&self->cfg.online, 1);
	self->tenants[0] = (struct policy_tenant){ .costs = &long_model, .qos_ns = 20 * MS };
	self->tenants[1] =
		(struct policy_tenant){ .costs = &short_model, .qos_ns = 6 * MS, .uid = 1 };
	self->in.nr_tenants = 2;
	self->in.nr_queries = 0;
}

/*
 * The long tenant's query arrived at 85 ms (deadline 105 ms) and has 4
 * layers left (4 ms on both cores); the short tenant's arrived at 99.5 ms
 * (QoS 6 ms, deadline 105.5 ms, alone 2 ms: slack 4 ms, latest start
 * 103.5 ms). At 100 ms the long one is first by deadline and needs both
 * cores. Before the rule it ran [2, 4) and [4, 6), 2 ms each (within the
 * cap, half the short one's slack), and at 104 ms, 4.5 ms after it
 * arrived, the short one could no longer end in time and was dropped. Now
 * the long one's blocks end by 103.5 ms: [2, 4) to 102 ms, [4, 5) to 103
 * ms, then no layer fits and the short one starts at 103 ms, 3.5 ms after
 * it arrived, and ends at 105 ms. Of the two, the long one (deadline 105
 * ms, 1 ms left at 105 ms) is the one late.
 */
TEST_F(pol, coloc_waits__a_short_query_behind_a_long_tenant_waits_no_longer_than_its_slack)
{
	uint64_t at, waited;

	two_tenants_on_two_cores(self);
	add_query(&self->in, self->queries, 1, 0, 85 * MS, 105 * MS);
	self->queries[0].next_layer = 2;
	add_query(&self->in, self->queries, 2, 1, 99 * MS + MS / 2, 105 * MS + MS / 2);
	at = first_decided(self, "coloc", 100 * MS, 2);
	ASSERT_NE(0, at);
	EXPECT_EQ(103 * MS, at);
	waited = at - (99 * MS + MS / 2);
	EXPECT_LE(waited, 4 * MS) TH_LOG("waited %.3f ms, slack 4 ms", waited / 1e6);

	/* coloc-nocap runs [2, 6) first, 4 ms: the short one is dropped at 104 ms */
	two_tenants_on_two_cores(self);
	add_query(&self->in, self->queries, 1, 0, 85 * MS, 105 * MS);
	self->queries[0].next_layer = 2;
	add_query(&self->in, self->queries, 2, 1, 99 * MS + MS / 2, 105 * MS + MS / 2);
	EXPECT_EQ(0, first_decided(self, "coloc-nocap", 100 * MS, 2));
}

TEST_HARNESS_MAIN
