// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The coloc engine's late queries (docs/design/coloc-policy.md, "Late
 * queries are demoted, not dropped"): a query past its deadline, or
 * predicted to end past it even at the fast end of its usual error, is
 * demoted, not dropped: served after every query that can still meet its
 * deadline, on the cores and executors they leave, its block cut to half
 * the least slack of every tenant. It is dropped only when even the least
 * of its prediction and the table says that its answer would come after
 * its deadline plus its QoS and serving it would make a query on time late
 * (policy_late_overdue_test), or after its deadline plus 2 QoS. Before, coloc and model-wise dropped every
 * query predicted late (issue 27: coloc left 8.7-18.4 % of the queries
 * unanswered at medium load on the 2-vCPU VM, model-wise 0.8-1.3 %).
 * A late query whose rest fits in the least slack of the queries on time
 * is served in its turn, not demoted ("A late query that delays no one is
 * served in its turn"): here the queries on time are made tight enough
 * that it would delay them, except where that rule is the subject.
 */
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_fixture.h"

#include "policy_two_models.h"

/* the two models' tenants (the large one's QoS 22 ms) on 2 idle cores, at 108 ms */
static void two_tenants_at_108(FIXTURE_DATA(pol) * self)
{
	two_cores(self, &large_model, 22 * MS);
	self->in.now_ns = 108 * MS;
}

static const struct policy_decision *decision_of(FIXTURE_DATA(pol) * self, uint64_t id)
{
	for (int d = 0; d < self->out.nr_decisions; d++)
		if (self->decisions[d].query_id == id)
			return &self->decisions[d];
	return NULL;
}

/*
 * The small tenant's query 1 arrived at 100 ms (deadline 111 ms): 3 ms
 * left, and its model takes 3.6 ms on both cores: late. The large
 * tenant's query 2 arrived at 95 ms (deadline 117 ms), on time, and can
 * wait 2.6 ms (117 - 108 - its 6.4 ms on both cores), less than query 1
 * takes: query 1 is demoted. Both tenants'
 * models meet their QoS on one core, so query 2 takes one, though query 1
 * comes first by deadline, and query 1 runs on the other, late, not
 * dropped: its block cut to half the least slack of both tenants (the
 * small one's: 11 - 3.6 ms, so 3.7 ms), two layers. model-wise does the
 * same, its blocks whole. Before, both dropped query 1 ("cannot meet its
 * deadline").
 */
TEST_F(pol, late__a_late_query_is_served_on_the_core_an_on_time_one_leaves)
{
	static const char *const names[] = { "coloc", "coloc-whole", "coloc-noversions",
					     "model-wise" };

	for (unsigned int i = 0; i < ARRAY_SIZE(names); i++) {
		const struct policy_decision *late, *fresh;
		bool whole = !strcmp(names[i], "model-wise");

		two_tenants_at_108(self);
		add_query(&self->in, self->queries, 1, 0, 100 * MS, 111 * MS);
		add_query(&self->in, self->queries, 2, 1, 95 * MS, 117 * MS);
		ASSERT_EQ(0, run_round(self, names[i]));
		EXPECT_EQ(0, self->out.nr_drops) TH_LOG("%s dropped the late query", names[i]);
		ASSERT_EQ(2, self->out.nr_decisions) TH_LOG("%s", names[i]);
		EXPECT_EQ(2u, self->decisions[0].query_id) TH_LOG("%s: the late one first", names[i]);
		fresh = decision_of(self, 2);
		late = decision_of(self, 1);
		ASSERT_NE(NULL, fresh);
		ASSERT_NE(NULL, late);
		EXPECT_EQ(1, fresh->nr_cores);
		EXPECT_EQ(1, late->nr_cores);
		EXPECT_EQ(0, late->first_layer);
		EXPECT_EQ(whole ? 4 : 2, late->last_layer)
		TH_LOG("%s: the late block [0, %d)", names[i], late->last_layer);
		EXPECT_EQ(0, policy_check_output(policy_find(names[i]), &self->in, &self->out,
						 &self->err));
	}
}

/*
 * The late query and an on-time query of its own tenant (arrived at 101
 * ms, deadline 112 ms, so it can wait 0.4 ms, less than the late one's
 * 3.6): the tenant's one executor takes the on-time one,
 * on both cores (coloc's spare core); the late one waits, not dropped.
 * Once the on-time one is running, the late one is still not served on
 * the cores it leaves: its tenant has no executor left.
 */
TEST_F(pol, late__an_on_time_query_of_the_same_tenant_goes_first)
{
	two_tenants_at_108(self);
	add_query(&self->in, self->queries, 1, 0, 100 * MS, 111 * MS);
	add_query(&self->in, self->queries, 2, 0, 101 * MS, 112 * MS);
	ASSERT_EQ(0, run_round(self, "coloc"));
	EXPECT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(1, self->out.nr_decisions);
	EXPECT_EQ(2u, self->decisions[0].query_id);

	/* query 2 runs on core 0 alone: core 1 is free, but the executor is not */
	self->running[0] = self->decisions[0];
	self->running[0].nr_cores = 1;
	self->running[0].cores = cpus_of((const int[]){ 0 }, 1);
	self->in.nr_running = 1;
	self->queries[1].in_flight = true;
	self->free = cpus_of((const int[]){ 1 }, 1);
	ASSERT_EQ(0, run_round(self, "coloc"));
	EXPECT_EQ(0, self->out.nr_drops);
	EXPECT_EQ(0, self->out.nr_decisions);
}

/*
 * The bench's case (issue 27, docs/measurements/qos.md 2026-12-07): one
 * core free, the other running a large block of tenant 2 (query 3,
 * deadline 129 ms). The small tenant's query 1 (deadline 111 ms) is late;
 * the large tenant's query 2 arrived at 100 ms (deadline 122 ms) can wait
 * 7.6 ms (122 - 108 - 6.4) and query 3 14.6: query 1's rest on the free
 * core, 5 ms, fits, so it is served there in its turn, its block a late
 * one's (half the least slack of the active tenants, the small one's: 3.7
 * ms, two layers), and query 2 waits for a core. Before, query 2 took the
 * core and query 1, demoted, waited behind it: on a machine of long
 * blocks it was dropped by the time a core came free.
 */
TEST_F(pol, late__a_late_query_that_delays_no_one_takes_the_free_core_first)
{
	static const char *const names[] = { "coloc", "coloc-whole", "coloc-noversions",
					     "model-wise" };

	for (unsigned int i = 0; i < ARRAY_SIZE(names); i++) {
		bool whole = !strcmp(names[i], "model-wise");

		two_tenants_at_108(self);
		self->tenants[2] = (struct policy_tenant){ .costs = &large_model,
							   .qos_ns = 22 * MS,
							   .uid = 2 };
		self->in.nr_tenants = 3;
		add_query(&self->in, self->queries, 1, 0, 100 * MS, 111 * MS);
		add_query(&self->in, self->queries, 2, 1, 100 * MS, 122 * MS);
		add_query(&self->in, self->queries, 3, 2, 107 * MS, 129 * MS);
		self->queries[2].in_flight = true;
		self->running[0] = (struct policy_decision){
			.query_id = 3,
			.tenant = 2,
			.first_layer = 0,
			.last_layer = 4,
			.versions = (const uint8_t[]){ 0, 0, 0, 0 },
			.cores = cpus_of((const int[]){ 1 }, 1),
			.nr_cores = 1,
			.decided_ns = 107 * MS,
			.level = 1.0,
			.alone_ns = 8 * MS,
			.predicted_ns = 8 * MS,
		};
		self->in.nr_running = 1;
		self->free = cpus_of((const int[]){ 0 }, 1);
		ASSERT_EQ(0, run_round(self, names[i]));
		EXPECT_EQ(0, self->out.nr_drops) TH_LOG("%s dropped the late query", names[i]);
		ASSERT_EQ(1, self->out.nr_decisions) TH_LOG("%s", names[i]);
		EXPECT_EQ(1u, self->decisions[0].query_id)
		TH_LOG("%s: the late one first", names[i]);
		EXPECT_EQ(1, self->decisions[0].nr_cores);
		EXPECT_EQ(whole ? 4 : 2, self->decisions[0].last_layer)
		TH_LOG("%s: the late block [0, %d)", names[i], self->decisions[0].last_layer);
		EXPECT_EQ(0, policy_check_output(policy_find(names[i]), &self->in, &self->out,
						 &self->err));
	}
}

/*
 * Given up, alone: at 129.4 ms the late query's rest (3.6 ms on both
 * cores, the table and the prediction alike) would end at 133 ms, its
 * deadline plus 2 QoS: dropped as one it cannot meet; at 133 ms, as past
 * its deadline. At 129.3 ms it ends 0.1 ms before that, and with no query
 * on time to delay it is served, alone, whole on both cores (3.6 ms,
 * within the cap of half its own slack, 3.7 ms). Past its deadline plus
 * one QoS (122 ms) it is overdue, and given up only as
 * policy_late_overdue_test says; before, it was given up there.
 */
TEST_F(pol, late__a_query_alone_is_dropped_only_when_its_answer_would_come_after_its_deadline_plus_two_qos)
{
	two_tenants_at_108(self);
	add_query(&self->in, self->queries, 1, 0, 100 * MS, 111 * MS);
	self->in.now_ns = 129 * MS + 400000;
	ASSERT_EQ(0, run_round(self, "coloc"));
	ASSERT_EQ(1, self->out.nr_drops);
	EXPECT_EQ(POLICY_DROP_CANNOT_MEET, self->drops[0].reason);
	EXPECT_EQ(3600000u, self->drops[0].predicted_ns);
	EXPECT_EQ(0, self->out.nr_decisions);

	self->in.now_ns = 133 * MS;
	ASSERT_EQ(0, run_round(self, "coloc"));
	ASSERT_EQ(1, self->out.nr_drops);
	EXPECT_EQ(POLICY_DROP_DEADLINE_PASSED, self->drops[0].reason);

	self->in.now_ns = 129 * MS + 300000;
	ASSERT_EQ(0, run_round(self, "coloc"));
	EXPECT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(1, self->out.nr_decisions);
	EXPECT_EQ(2, self->decisions[0].nr_cores);
	EXPECT_EQ(4, self->decisions[0].last_layer);
}

/*
 * What gives up is the least evidence: a tenant whose blocks all ran 3x
 * the table (a slow spell) is predicted at 10.8 ms for its model on both
 * cores, so with 4 ms to its deadline a query is late by any margin, and
 * was dropped; the table (3.6 ms) says its answer can still come before
 * its deadline plus its QoS: it is served, alone, demoted (its block cut
 * to half its slack, at least a tenth of its QoS: one layer), and measured.
 */
TEST_F(pol, late__a_prediction_lifted_by_a_slow_spell_does_not_drop_a_query)
{
	struct policy *p;
	struct policy_decision first;
	const struct policy_decision *d = &self->decisions[0];
	uint8_t versions[4];

	two_tenants_at_108(self);
	self->in.nr_tenants = 1;
	self->in.now_ns = 100 * MS;
	add_query(&self->in, self->queries, 1, 0, 100 * MS, 111 * MS);
	p = policy_create(policy_find("coloc"), &self->cfg, &self->err);
	ASSERT_NE(NULL, p);
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(4, d->last_layer);
	ASSERT_EQ(2, d->nr_cores);
	first = *d;
	memcpy(versions, first.versions, sizeof(versions));
	first.versions = versions;
	for (int i = 0; i < 12; i++) {
		first.decided_ns = 100 * MS + i * 11 * MS;
		policy_block_done(p, &first, 3 * first.alone_ns);
	}
	self->in.now_ns = first.decided_ns + 3 * first.alone_ns;
	self->in.nr_queries = 0;
	add_query(&self->in, self->queries, 2, 0, self->in.now_ns - 7 * MS,
		  self->in.now_ns + 4 * MS);
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	EXPECT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(1, self->out.nr_decisions);
	EXPECT_EQ(2u, d->query_id);
	EXPECT_EQ(1, d->last_layer);
	EXPECT_LT(2 * d->alone_ns, d->predicted_ns)
	TH_LOG("predicted %.3f ms, alone %.3f ms", d->predicted_ns / 1e6, d->alone_ns / 1e6);
	policy_destroy(p);
}

TEST_HARNESS_MAIN
