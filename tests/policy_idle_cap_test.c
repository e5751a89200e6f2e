// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The block cap weighs only tenants that may have a query behind the
 * block soon: a query queued or in flight, or a block that ended within
 * COLOC_ACTIVE_QOS x its QoS (docs/design/coloc-policy.md, "Whose slack
 * caps a block"). Before, every tenant with a table weighed, queried or
 * not, so a member's tenant submitted at its solo latency and never
 * queried cut every other tenant's queries into blocks of one layer
 * (review of 2026-12-06 s15, MEDIUM 2). And a tenant weighs only when its
 * QoS is at least 1.11 x its solo time (COLOC_CAP_MIN_SLACK), and no cap is
 * below the capped tenant's solo time / COLOC_CAP_FLOOR_DIV (8): a member's
 * tenant at its solo time kept active by a thin stream of queries cut the
 * others' queries into 7-13 blocks (review of 2026-12-06 s16, MEDIUM 2).
 * Tenant 0 is the small model (QoS 11 ms, 3.6 ms on both cores); tenant 1
 * the same model at QoS 3.6 ms, its solo time (it weighs in no cap), or at
 * 5.6 ms (1.56 x: slack 2 ms, a cap of 1 ms, so a block it caps is one
 * layer of 0.9 ms long).
 */
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_fixture.h"

#include "policy_two_models.h"

#define TIGHT_QOS 3600000ull
#define MEETABLE_QOS 5600000ull

static const char *const engines[] = { "coloc", "coloc-whole", "coloc-noversions" };

/* the two tenants (tenant 1 at its solo time) on `cores` idle cores */
static void beside_tight(FIXTURE_DATA(pol) * self, int cores)
{
	two_cores(self, &small_model, TIGHT_QOS);
	for (int c = 0; c < cores; c++)
		policy_cpuset_set(&self->cfg.online, c);
	self->free = self->cfg.online;
}

static const struct policy_decision *decision_of(FIXTURE_DATA(pol) * self, uint64_t id)
{
	for (int d = 0; d < self->out.nr_decisions; d++)
		if (self->decisions[d].query_id == id)
			return &self->decisions[d];
	return NULL;
}

/*
 * Tenant 1 never sent a query: tenant 0's query is one block of the whole
 * model, as when tenant 1 has no table (an empty machine): on both cores
 * (coloc-whole: on one, 5 ms, leaving the other to a query arriving; with
 * no other table it takes both, as coloc).
 */
TEST_F(pol, idle_cap__an_idle_tenant_at_its_solo_time_cuts_no_block)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(engines); i++) {
		const struct policy_decision *d;

		beside_tight(self, 2);
		add_query(&self->in, self->queries, 1, 0, 0, 11 * MS);
		ASSERT_EQ(0, run_round(self, engines[i]));
		ASSERT_EQ(1, self->out.nr_decisions) TH_LOG("%s", engines[i]);
		d = &self->decisions[0];
		EXPECT_EQ(0, d->first_layer);
		EXPECT_EQ(4, d->last_layer)
		TH_LOG("%s: [0, %d) beside an idle tenant", engines[i], d->last_layer);
		EXPECT_EQ(strcmp(engines[i], "coloc-whole") ? 2 : 1, d->nr_cores)
		TH_LOG("%s", engines[i]);

		self->tenants[1].costs = NULL;
		ASSERT_EQ(0, run_round(self, engines[i]));
		ASSERT_EQ(1, self->out.nr_decisions);
		EXPECT_EQ(4, self->decisions[0].last_layer) TH_LOG("%s alone", engines[i]);
		EXPECT_EQ(2, self->decisions[0].nr_cores);
	}
}

/*
 * With a query of tenant 1 (at 1.56 x its solo time) queued, on 4 cores:
 * tenant 1 (the earlier deadline) takes 2, tenant 0 the other 2, its block
 * cut to one layer by tenant 1's slack. The cap still binds where a query may arrive behind it.
 * (coloc-whole runs tenant 0's whole rest on one core there, as before:
 * tenant 1's next query waits for its own block, then has its 2 cores.)
 */
TEST_F(pol, idle_cap__the_same_tenant_with_a_query_queued_cuts_the_block)
{
	static const char *const cutting[] = { "coloc", "coloc-noversions" };

	for (unsigned int i = 0; i < ARRAY_SIZE(cutting); i++) {
		const struct policy_decision *d;

		beside_tight(self, 4);
		self->tenants[1].qos_ns = MEETABLE_QOS;
		add_query(&self->in, self->queries, 1, 0, 0, 11 * MS);
		add_query(&self->in, self->queries, 2, 1, 0, MEETABLE_QOS);
		ASSERT_EQ(0, run_round(self, cutting[i]));
		ASSERT_EQ(2, self->out.nr_decisions) TH_LOG("%s", cutting[i]);
		d = decision_of(self, 1);
		ASSERT_NE(NULL, d);
		EXPECT_EQ(1, d->last_layer)
		TH_LOG("%s: [0, %d) beside a queued tenant", cutting[i], d->last_layer);
		EXPECT_EQ(0, policy_check_output(policy_find(cutting[i]), &self->in, &self->out,
						 &self->err));
	}
}

/*
 * One policy over three rounds: tenant 1's query (QoS 5.6 ms) arrives at
 * 0, is decided and measured (3.6 ms, its block's end); at 10 ms (within
 * 10 x 5.6 ms of that end) tenant 0's query is still cut, though tenant 1
 * holds none; at 65 ms, past the window, it is one block.
 */
TEST_F(pol, idle_cap__a_recent_block_weighs_for_ten_times_its_qos)
{
	static const uint64_t at_ms[] = { 10, 65 };
	static const int want_last[] = { 1, 4 };
	struct policy *p;

	beside_tight(self, 4);
	self->tenants[1].qos_ns = MEETABLE_QOS;
	p = policy_create(policy_find("coloc"), &self->cfg, &self->err);
	ASSERT_NE(NULL, p);
	add_query(&self->in, self->queries, 2, 1, 0, MEETABLE_QOS);
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(2u, self->decisions[0].query_id);
	ASSERT_EQ(4, self->decisions[0].last_layer);
	policy_block_done(p, &self->decisions[0], TIGHT_QOS);

	for (unsigned int i = 0; i < ARRAY_SIZE(at_ms); i++) {
		self->in.now_ns = at_ms[i] * MS;
		self->in.nr_queries = 0;
		add_query(&self->in, self->queries, 10 + i, 0, at_ms[i] * MS, (at_ms[i] + 11) * MS);
		policy_output_reset(&self->out);
		ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
		ASSERT_EQ(1, self->out.nr_decisions);
		EXPECT_EQ(want_last[i], self->decisions[0].last_layer)
		TH_LOG("at %llu ms: [0, %d)", (unsigned long long)at_ms[i],
		       self->decisions[0].last_layer);
	}
	policy_destroy(p);
}

/*
 * A demoted query's block is cut to half the least slack of the active
 * tenants, its own included, not of an idle one: tenant 0's query arrived
 * at 100 ms (deadline 111 ms) and at 108 ms needs 3.6 ms: late, demoted,
 * and, with its own slack (11 - 3.6 ms) the least, cut at 3.7 ms: the
 * whole model on both cores.
 */
TEST_F(pol, idle_cap__an_idle_tenant_does_not_cut_a_demoted_query)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(engines); i++) {
		beside_tight(self, 2);
		self->in.now_ns = 108 * MS;
		add_query(&self->in, self->queries, 1, 0, 100 * MS, 111 * MS);
		ASSERT_EQ(0, run_round(self, engines[i]));
		EXPECT_EQ(0, self->out.nr_drops) TH_LOG("%s", engines[i]);
		ASSERT_EQ(1, self->out.nr_decisions) TH_LOG("%s", engines[i]);
		EXPECT_EQ(4, self->decisions[0].last_layer)
		TH_LOG("%s: the late block [0, %d)", engines[i], self->decisions[0].last_layer);
	}
}

/*
 * The attack of review s16 MEDIUM 2: tenant 1 at its solo time with a
 * query queued (one of a thin stream its member does not need answered)
 * cut tenant 0's query into one-layer blocks. It cannot meet its QoS
 * beside anyone: it weighs in no cap, and tenant 0's query is one block.
 */
TEST_F(pol, idle_cap__a_tenant_at_its_solo_time_with_a_query_cuts_no_block)
{
	static const char *const cutting[] = { "coloc", "coloc-noversions" };

	for (unsigned int i = 0; i < ARRAY_SIZE(cutting); i++) {
		const struct policy_decision *d;

		beside_tight(self, 4);
		add_query(&self->in, self->queries, 1, 0, 0, 11 * MS);
		add_query(&self->in, self->queries, 2, 1, 0, TIGHT_QOS);
		ASSERT_EQ(0, run_round(self, cutting[i]));
		d = decision_of(self, 1);
		ASSERT_NE(NULL, d) TH_LOG("%s", cutting[i]);
		EXPECT_EQ(4, d->last_layer)
		TH_LOG("%s: [0, %d) beside a queued tenant at its solo time", cutting[i],
		       d->last_layer);
		EXPECT_EQ(0, policy_check_output(policy_find(cutting[i]), &self->in, &self->out,
						 &self->err));
	}
}

/* tenant 1's model for the floor: small's layers ten times shorter (0.36 ms whole on 2 cores) */
static const uint64_t pico_ns[4 * 2] = {
	125000, 90000, 125000, 90000, 125000, 90000, 125000, 90000
};
static const struct policy_costs pico_model = {
	.nr_layers = 4,
	.nr_versions = 1,
	.nr_core_counts = 2,
	.nr_levels = 1,
	.core_counts = two_counts,
	.latency_ns = pico_ns,
	.layer_ops = four_ops,
};

/* tenant 0's model for the floor: 16 layers of small's (0.9 ms on 2 cores, 14.4 ms whole) */
static const uint64_t sixteen_ops[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
static uint64_t long_ns[16 * 2];
static const struct policy_costs long_model = {
	.nr_layers = 16,
	.nr_versions = 1,
	.nr_core_counts = 2,
	.nr_levels = 1,
	.core_counts = two_counts,
	.latency_ns = long_ns,
	.layer_ops = sixteen_ops,
};

/*
 * The floor: a tenant of a tiny model at a QoS it can meet (0.56 ms,
 * 1.56 x its 0.36 ms) caps the others at 0.1 ms, below any layer of
 * theirs: a 16-layer query ran as 16 blocks, and a tinier model would cut
 * as finely. No cap is below the capped tenant's own solo time / 8
 * (14.4 ms / 8 = 1.8 ms): a block of more than one layer, at most 8
 * blocks a query on 2 cores. Demoted, the same floor holds.
 */
TEST_F(pol, idle_cap__no_tenant_cuts_a_block_below_an_eighth_of_its_solo)
{
	static const char *const cutting[] = { "coloc", "coloc-noversions" };

	for (int i = 0; i < 16 * 2; i++)
		long_ns[i] = i % 2 ? 900000 : 1250000;
	for (unsigned int i = 0; i < ARRAY_SIZE(cutting); i++) {
		const struct policy_decision *d;

		beside_tight(self, 4);
		self->tenants[0].costs = &long_model;
		self->tenants[0].qos_ns = 40 * MS;
		self->tenants[1].costs = &pico_model;
		self->tenants[1].qos_ns = 560000;
		add_query(&self->in, self->queries, 1, 0, 0, 40 * MS);
		add_query(&self->in, self->queries, 2, 1, 0, 560000);
		ASSERT_EQ(0, run_round(self, cutting[i]));
		d = decision_of(self, 1);
		ASSERT_NE(NULL, d) TH_LOG("%s", cutting[i]);
		EXPECT_LE(2, d->last_layer)
		TH_LOG("%s: [0, %d) on %d cores beside a tiny tenant's query", cutting[i],
		       d->last_layer, d->nr_cores);
		EXPECT_EQ(0, policy_check_output(policy_find(cutting[i]), &self->in, &self->out,
						 &self->err));

		/* demoted (arrived 30 ms ago, 14.4 ms left of 40): cut no finer */
		self->in.now_ns = 30 * MS;
		self->in.nr_queries = 0;
		add_query(&self->in, self->queries, 3, 0, 0, 40 * MS);
		add_query(&self->in, self->queries, 4, 1, 30 * MS, 30 * MS + 560000);
		ASSERT_EQ(0, run_round(self, cutting[i]));
		d = decision_of(self, 3);
		ASSERT_NE(NULL, d) TH_LOG("%s demoted", cutting[i]);
		EXPECT_LE(2, d->last_layer)
		TH_LOG("%s: the demoted block [0, %d) on %d cores", cutting[i], d->last_layer,
		       d->nr_cores);
	}
}

TEST_HARNESS_MAIN
