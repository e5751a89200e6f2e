// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A short-QoS tenant's query that arrives while a long tenant holds every
 * core waits for the long one's blocks no longer than its slack (its QoS
 * less its model alone on every core): coloc cuts each block to end by the
 * waiting query's latest start, and gives way when not even one layer fits
 * (docs/design/coloc-policy.md, "No wait past the slack"). The rounds are
 * played on 2 cores, each block running exactly its predicted time. A
 * waiting query binds no block that leaves it enough cores, and a held one
 * whose cores come after its latest start binds no one.
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

	/*
	 * coloc-nocap runs [2, 6) first, 4 ms: at 104 ms the short one can no
	 * longer end in time; it is demoted, not dropped, and runs then, late
	 */
	two_tenants_on_two_cores(self);
	add_query(&self->in, self->queries, 1, 0, 85 * MS, 105 * MS);
	self->queries[0].next_layer = 2;
	add_query(&self->in, self->queries, 2, 1, 99 * MS + MS / 2, 105 * MS + MS / 2);
	EXPECT_EQ(104 * MS, first_decided(self, "coloc-nocap", 100 * MS, 2));
}

/* Two cores, only: a model that no single core runs (3 layers of 1 ms). */
static const int pair_counts[] = { 2 };
static const uint64_t pair_ops[] = { 1, 1, 1 };
static const uint64_t pair_ns[3] = { MS, MS, MS };
static const struct policy_costs pair_model = {
	.nr_layers = 3,
	.nr_versions = 1,
	.nr_core_counts = 1,
	.nr_levels = 1,
	.core_counts = pair_counts,
	.latency_ns = pair_ns,
	.layer_ops = pair_ops,
};

static void online_cores(FIXTURE_DATA(pol) * self, int n)
{
	policy_cpuset_zero(&self->cfg.online);
	for (int c = 0; c < n; c++)
		policy_cpuset_set(&self->cfg.online, c);
	self->free = self->cfg.online;
	self->in.nr_queries = 0;
	self->in.nr_running = 0;
}

static const struct policy_decision *decision_of(FIXTURE_DATA(pol) * self, uint64_t id)
{
	for (int d = 0; d < self->out.nr_decisions; d++)
		if (self->decisions[d].query_id == id)
			return &self->decisions[d];
	return NULL;
}

/*
 * On 4 cores the long tenant's query (2 layers left, 2 ms on its 2 cores,
 * deadline 2.5 ms from now) goes first; the short tenant's (deadline 3 ms
 * from now, latest start 1 ms from now: 2 ms on 2 cores) waits. The long
 * block leaves 2 cores free, on which the short one's rest ends in time
 * (1 core already does: 3 ms), so it is not cut to 1 ms: both are decided
 * at once, the long one whole. Before, the long block was cut to its
 * first layer, [4, 5).
 */
TEST_F(pol, coloc_waits__a_block_that_leaves_enough_cores_is_not_cut_for_the_waiting)
{
	const struct policy_decision *d;

	online_cores(self, 4);
	self->tenants[0] = (struct policy_tenant){ .costs = &long_model, .qos_ns = 20 * MS };
	self->tenants[1] =
		(struct policy_tenant){ .costs = &short_model, .qos_ns = 6 * MS, .uid = 1 };
	self->in.nr_tenants = 2;
	self->in.now_ns = 100 * MS;
	add_query(&self->in, self->queries, 1, 0, 85 * MS, 102 * MS + MS / 2);
	self->queries[0].next_layer = 4;
	add_query(&self->in, self->queries, 2, 1, 97 * MS, 103 * MS);
	ASSERT_EQ(0, run_round(self, "coloc"));
	d = decision_of(self, 1);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(2, d->nr_cores);
	EXPECT_EQ(6, d->last_layer) TH_LOG("the long block was cut to [4, %d)", d->last_layer);
	EXPECT_NE(NULL, decision_of(self, 2));
}

/*
 * Three tenants on 2 cores. A's block runs on core 0 until 3 ms from now;
 * B's query needs both cores (2 ms), deadline 3 ms (or 3.3 ms) from now:
 * held, and its latest start, 1 ms (1.3 ms) from now, comes before A's
 * core does, so B is late whatever runs on core 1. C's first layer on
 * core 1 takes 1.5 ms, past B's latest start: before, C gave way to B and
 * core 1 idled; now C runs there, whether it comes before B in the order
 * (deadline 3.2 ms from now) or after it (10 ms).
 */
static void held_behind_a_late_core(FIXTURE_DATA(pol) * self, uint64_t b_deadline,
				    uint64_t c_deadline)
{
	static const int core0[] = { 0 };
	static const int core1[] = { 1 };
	uint64_t now = 100 * MS;

	online_cores(self, 2);
	self->tenants[0] = (struct policy_tenant){ .costs = &short_model, .qos_ns = 20 * MS };
	self->tenants[1] = (struct policy_tenant){ .costs = &pair_model, .qos_ns = 5 * MS };
	self->tenants[2] = (struct policy_tenant){ .costs = &short_model, .qos_ns = 20 * MS };
	self->in.nr_tenants = 3;
	self->in.now_ns = now;
	add_query(&self->in, self->queries, 1, 0, 95 * MS, 115 * MS);
	self->queries[0].in_flight = true;
	self->running[self->in.nr_running++] = (struct policy_decision){
		.query_id = 1,
		.tenant = 0,
		.first_layer = 0,
		.last_layer = 1,
		.cores = cpus_of(core0, 1),
		.nr_cores = 1,
		.decided_ns = now - MS,
		.predicted_ns = 4 * MS,
	};
	self->free = cpus_of(core1, 1);
	add_query(&self->in, self->queries, 2, 1, now - MS, now + b_deadline);
	add_query(&self->in, self->queries, 3, 2, now - MS, now + c_deadline);
}

TEST_F(pol, coloc_waits__a_query_held_past_its_latest_start_leaves_no_core_idle)
{
	const struct policy_decision *d;

	held_behind_a_late_core(self, 3 * MS, 10 * MS);
	ASSERT_EQ(0, run_round(self, "coloc"));
	EXPECT_EQ(NULL, decision_of(self, 2));
	d = decision_of(self, 3);
	ASSERT_NE(NULL, d) TH_LOG("C gave way to B, held until after its latest start");
	EXPECT_EQ(1, d->nr_cores);

	held_behind_a_late_core(self, 3 * MS + 3 * MS / 10, 3 * MS + MS / 5);
	ASSERT_EQ(0, run_round(self, "coloc"));
	EXPECT_EQ(NULL, decision_of(self, 2));
	ASSERT_NE(NULL, decision_of(self, 3)) TH_LOG("C, first, gave way to B for good");
}

TEST_HARNESS_MAIN
