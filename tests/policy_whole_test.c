// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-whole: coloc with model-wise's choice as one of its candidates
 * (docs/design/coloc-policy.md, "The whole rest as a candidate"). On 2
 * cores, where a model on both runs well under 2x faster than on one, a
 * query whose whole rest meets its budget on one core runs there, whole,
 * and a query of the other tenant arriving behind it starts at once on the
 * other core; model-wise decides the same, coloc takes both cores. Where
 * the whole rest on fewer cores would keep another tenant's query waiting
 * past the block cap, or leave its own tenant's next query less than its
 * solo time, coloc's own block stands.
 */
#include <limits.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_fixture.h"

#include "policy_two_models.h"

/*
 * The small tenant's query arrives alone at 100 ms (QoS 11 ms): its whole
 * model fits on 1 core (5 ms), and the large tenant's next query would
 * start at once on the other (8 ms of its 22). coloc takes the spare
 * core (the knee of a 2-count curve is its fastest count) and runs it on
 * both, 3.6 ms; the large tenant's query arriving 1 ms later then waits
 * 2.6 ms for a core. coloc-whole runs it on 1 core, whole, as model-wise
 * does, and the large query is decided at once on the other core, whole.
 */
TEST_F(pol, coloc_whole__a_query_that_fits_on_one_core_leaves_the_other_to_the_next_tenant)
{
	static const char *const names[] = { "coloc-whole", "model-wise" };

	for (unsigned int i = 0; i < ARRAY_SIZE(names); i++) {
		const struct policy_decision *d = &self->decisions[0];
		struct policy_decision small;

		two_cores(self, &large_model, 22 * MS);
		self->in.now_ns = 100 * MS;
		add_query(&self->in, self->queries, 1, 0, 100 * MS, 111 * MS);
		ASSERT_EQ(0, run_round(self, names[i]));
		ASSERT_EQ(1, self->out.nr_decisions);
		EXPECT_EQ(1, d->nr_cores) TH_LOG("%s: the small query on both cores", names[i]);
		EXPECT_EQ(0, d->first_layer);
		EXPECT_EQ(4, d->last_layer) TH_LOG("%s: cut at layer %d", names[i], d->last_layer);

		/* 1 ms later the large tenant's query arrives: a core is free for it */
		small = *d;
		self->queries[0].in_flight = true;
		self->running[self->in.nr_running++] = small;
		policy_cpuset_andnot(&self->free, &small.cores);
		self->in.now_ns = 101 * MS;
		add_query(&self->in, self->queries, 2, 1, 101 * MS, 123 * MS);
		ASSERT_EQ(0, run_round(self, names[i]));
		ASSERT_EQ(1, self->out.nr_decisions) TH_LOG("%s: the large query waits", names[i]);
		EXPECT_EQ(2u, d->query_id);
		EXPECT_EQ(1, d->nr_cores);
		EXPECT_EQ(4, d->last_layer) TH_LOG("%s: cut at layer %d", names[i], d->last_layer);
	}
	/* coloc itself takes the spare core */
	two_cores(self, &large_model, 22 * MS);
	self->in.now_ns = 100 * MS;
	add_query(&self->in, self->queries, 1, 0, 100 * MS, 111 * MS);
	ASSERT_EQ(0, run_round(self, "coloc"));
	ASSERT_EQ(1, self->out.nr_decisions);
	EXPECT_EQ(2, self->decisions[0].nr_cores);
}

/*
 * The other tenant's model meets its QoS (6 ms) only on both cores (5 ms;
 * 8 ms on one), so its slack is 1 ms and the small tenant's block cap 0.5
 * ms (a block of it has just ended: it is active). The small query's whole
 * model on 1 core (5 ms) would leave a query of the other tenant arriving
 * now a single core, on which it is late: the
 * candidate is not taken, and coloc's block, cut at the cap, stands: one
 * layer.
 */
TEST_F(pol, coloc_whole__not_taken_when_it_leaves_another_tenant_too_few_cores)
{
	static const uint64_t tight_ns[4 * 2] = { 2 * MS, 1250000, 2 * MS, 1250000,
						  2 * MS, 1250000, 2 * MS, 1250000 };
	static const struct policy_costs tight_model = {
		.nr_layers = 4,
		.nr_versions = 1,
		.nr_core_counts = 2,
		.nr_levels = 1,
		.core_counts = two_counts,
		.latency_ns = tight_ns,
		.layer_ops = four_ops,
	};

	two_cores(self, &tight_model, 6 * MS);
	self->in.now_ns = 100 * MS;
	add_query(&self->in, self->queries, 1, 0, 100 * MS, 111 * MS);
	ASSERT_EQ(0, run_round_after_block_of(self, "coloc-whole", 1));
	ASSERT_EQ(1, self->out.nr_decisions);
	EXPECT_EQ(1, self->decisions[0].last_layer);
}

/*
 * The candidate leaves its tenant's next query its solo time, as a block
 * cut at the knee does: a query of the tenant arriving now waits for this
 * one, then needs its model on every core. With a QoS of 8 ms the small
 * query's whole model on 1 core (5 ms) leaves 3 ms, under its solo 3.6 ms:
 * not taken; on 2 cores (3.6 + 3.6 <= 8) it is, whole. Arrived 2 ms ago,
 * even 2 cores leave too little (2 + 3.6 + 3.6 > 8): coloc's own block,
 * cut at the cap (half the large tenant's slack, 7.8 ms: not binding),
 * runs, on both cores.
 */
TEST_F(pol, coloc_whole__leaves_the_tenants_next_query_its_solo_time)
{
	const struct policy_decision *d = &self->decisions[0];

	two_cores(self, &large_model, 22 * MS);
	self->tenants[0].qos_ns = 8 * MS;
	self->in.now_ns = 100 * MS;
	add_query(&self->in, self->queries, 1, 0, 100 * MS, 108 * MS);
	ASSERT_EQ(0, run_round(self, "coloc-whole"));
	ASSERT_EQ(1, self->out.nr_decisions);
	EXPECT_EQ(2, d->nr_cores);
	EXPECT_EQ(4, d->last_layer);

	self->queries[0].arrival_ns = 98 * MS;
	self->queries[0].deadline_ns = 106 * MS;
	ASSERT_EQ(0, run_round(self, "coloc-whole"));
	ASSERT_EQ(1, self->out.nr_decisions);
	EXPECT_EQ(2, d->nr_cores);
	EXPECT_EQ(4, d->last_layer);
}

TEST_HARNESS_MAIN
