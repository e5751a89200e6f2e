// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the cold start in the policy's prices (policy_costs.cold_ratio,
 * policy_input.core_idle_since_ns): the served solo latency is the hot one
 * times the ratio; a block whose cores have all been idle past the
 * threshold is priced cold and one that follows a block is priced hot; and
 * coloc learns from a cold block relative to its cold price, so a cold
 * start does not read as the tenant running slow. Numbers worked out from
 * tiny's table (policy_fixture.h): its whole model on 4 cores is 540 us.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_fixture.h"

#define COLD_AFTER_NS 2000000ULL
#define NOW_NS 50000000ULL

/* tiny with a cold start of 1.25 x after 2 ms idle: 540 us hot, 675 us cold on 4 cores */
static struct policy_costs cold_tiny(double ratio)
{
	struct policy_costs m = tiny;

	m.cold_ratio = ratio;
	m.cold_after_ns = COLD_AFTER_NS;
	return m;
}

TEST(costs__served_solo_is_the_solo_times_the_cold_ratio)
{
	struct policy_costs m = cold_tiny(1.25);

	fill_tiny();
	ASSERT_EQ(540000, policy_costs_solo_ns(&m, 8));
	ASSERT_EQ(675000, policy_costs_served_solo_ns(&m, 8));
	ASSERT_EQ(1200000, policy_costs_served_solo_ns(&m, 2)); /* 960 us x 1.25 */
	/* unknown (a format-6 profile) or below 1 (noise): the hot figure */
	m.cold_ratio = 0;
	ASSERT_EQ(540000, policy_costs_served_solo_ns(&m, 8));
	m.cold_ratio = 0.9;
	ASSERT_EQ(540000, policy_costs_served_solo_ns(&m, 8));
	ASSERT_EQ(0, policy_costs_served_solo_ns(&m, 0));
	/* a ratio past any measurement (a table not from a parsed profile) prices at most 4x */
	m.cold_ratio = 1e6;
	ASSERT_EQ(4 * 540000, policy_costs_served_solo_ns(&m, 8));
}

TEST(scale_ns__saturates_instead_of_overflowing)
{
	ASSERT_EQ(1500, policy_scale_ns(1000, 1.5));
	ASSERT_EQ(UINT64_MAX, policy_scale_ns(UINT64_MAX / 2, 4.0));
	ASSERT_EQ(UINT64_MAX, policy_scale_ns(1000000000000000ull, 1e6));
	ASSERT_EQ(0, policy_scale_ns(0, 4.0));
}

/*
 * policy's one decision for a query of tenant 0 (model m) arriving now,
 * every core free: the whole model on tiny's largest count, cores 0-3.
 */
static int whole_model_block(FIXTURE_DATA(pol) * self, const char *policy,
			     const struct policy_costs *m, const uint64_t *idle_since)
{
	self->tenants[0] = (struct policy_tenant){ .costs = m, .qos_ns = 100000000 };
	self->free = self->cfg.online;
	self->in.now_ns = NOW_NS;
	self->in.nr_queries = 0;
	self->in.core_idle_since_ns = idle_since;
	add_query(&self->in, self->queries, 1, 0, NOW_NS, NOW_NS + 100000000);
	return run_round(self, policy);
}

/*
 * A query of tenant 0 (model m), its QoS and its deadline qos_ns from now,
 * with cores 0-3 free and their last blocks' ends in idle.
 */
static void query_on_four_cores(FIXTURE_DATA(pol) * self, const struct policy_costs *m,
				uint64_t qos_ns, const uint64_t *idle)
{
	self->tenants[0] = (struct policy_tenant){ .costs = m, .qos_ns = qos_ns };
	self->free = cpus_of((const int[]){ 0, 1, 2, 3 }, 4);
	self->in.now_ns = NOW_NS;
	self->in.core_idle_since_ns = idle;
	add_query(&self->in, self->queries, 1, 0, NOW_NS, NOW_NS + qos_ns);
}

TEST_F(pol, start_cold__a_block_on_cores_idle_past_the_threshold_is_priced_cold)
{
	struct policy_costs m = cold_tiny(1.25);
	uint64_t idle[POLICY_MAX_CPUS] = { 0 }; /* never ran a block: idle since ever */

	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, idle));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(4, self->decisions[0].nr_cores);
	ASSERT_TRUE(self->decisions[0].cold);
	ASSERT_EQ(675000, self->decisions[0].alone_ns);
	ASSERT_EQ(675000, self->decisions[0].predicted_ns);

	/* every core's last block ended 3 ms ago: past 2 ms, still cold */
	for (int c = 0; c < 4; c++)
		idle[c] = NOW_NS - 3000000;
	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, idle));
	ASSERT_TRUE(self->decisions[0].cold);
	ASSERT_EQ(675000, self->decisions[0].predicted_ns);
}

TEST_F(pol, start_cold__a_block_after_a_recent_one_or_without_the_ratio_is_priced_hot)
{
	struct policy_costs m = cold_tiny(1.25);
	uint64_t idle[POLICY_MAX_CPUS] = { 0 };

	/* one of its cores ended a block 1 ms ago: it starts hot */
	for (int c = 0; c < 4; c++)
		idle[c] = NOW_NS - 10000000;
	idle[2] = NOW_NS - 1000000;
	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, idle));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_FALSE(self->decisions[0].cold);
	ASSERT_EQ(540000, self->decisions[0].alone_ns);
	ASSERT_EQ(540000, self->decisions[0].predicted_ns);

	/* no idle times from the caller (the simulator): hot */
	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, NULL));
	ASSERT_FALSE(self->decisions[0].cold);
	ASSERT_EQ(540000, self->decisions[0].predicted_ns);

	/* a model without a cold ratio: hot however long the cores were idle */
	memset(idle, 0, sizeof(idle));
	m.cold_ratio = 0;
	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, idle));
	ASSERT_FALSE(self->decisions[0].cold);
	ASSERT_EQ(540000, self->decisions[0].predicted_ns);
}

TEST_F(pol, start_cold__a_core_running_another_block_is_not_idle)
{
	struct policy_costs m = cold_tiny(1.25);
	uint64_t idle[POLICY_MAX_CPUS] = { 0 };

	self->running[0] = (struct policy_decision){ .tenant = 1, .nr_cores = 1 };
	policy_cpuset_set(&self->running[0].cores, 1);
	self->in.nr_running = 1;
	self->tenants[1] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	/* os: every tenant on all cores at once, the kernel sharing them */
	ASSERT_EQ(0, whole_model_block(self, "os", &m, idle));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_TRUE(policy_cpuset_test(&self->decisions[0].cores, 1));
	ASSERT_FALSE(self->decisions[0].cold);
	ASSERT_EQ(540000, self->decisions[0].predicted_ns);
	/* the same with nothing running there: cold */
	self->in.nr_running = 0;
	ASSERT_EQ(0, whole_model_block(self, "os", &m, idle));
	ASSERT_TRUE(self->decisions[0].cold);
	ASSERT_EQ(675000, self->decisions[0].predicted_ns);
}

/*
 * coloc prices a query's first block cold (675 us); measured at exactly
 * that, it has learnt nothing: the next block, on cores just used, is
 * predicted at the hot table, 540 us (within rounding). Learning from the
 * hot price instead would have taken 675 / 540 = 1.25 as the tenant's
 * correction and predicted it near 578 us.
 */
TEST_F(pol, start_cold__coloc_learns_a_cold_block_relative_to_its_cold_price)
{
	struct policy *p = policy_create(policy_find("coloc"), &self->cfg, &self->err);
	struct policy_costs m = cold_tiny(1.25);
	uint64_t idle[POLICY_MAX_CPUS] = { 0 };
	struct policy_decision first;
	uint8_t versions[3];

	ASSERT_NE(NULL, p);
	self->tenants[0] = (struct policy_tenant){ .costs = &m, .qos_ns = 300000 };
	self->free = cpus_of((const int[]){ 0, 1, 2, 3 }, 4);
	self->in.now_ns = NOW_NS;
	self->in.core_idle_since_ns = idle;
	add_query(&self->in, self->queries, 1, 0, NOW_NS, NOW_NS + 100000000);
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(4, self->decisions[0].nr_cores);
	ASSERT_EQ(3, self->decisions[0].last_layer);
	ASSERT_TRUE(self->decisions[0].cold);
	ASSERT_EQ(675000, self->decisions[0].predicted_ns);
	first = self->decisions[0];
	memcpy(versions, first.versions, 3);
	first.versions = versions;

	policy_block_done(p, &first, 675000);
	for (int c = 0; c < 4; c++)
		idle[c] = NOW_NS + 675000;
	self->in.now_ns = NOW_NS + 700000;
	self->queries[0].id = 2;
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_FALSE(self->decisions[0].cold);
	ASSERT_GE(1, llabs((long long)self->decisions[0].predicted_ns - 540000))
	TH_LOG("predicted %llu ns", (unsigned long long)self->decisions[0].predicted_ns);
	policy_destroy(p);
}

/*
 * coloc judges a query at the price its block will be given: tiny cold at
 * 2 x on cores all idle, 540 us hot and 1080 us cold on 4 cores. With 800 us
 * to its deadline the hot price fits and the cold one does not, so it is
 * dropped as one it cannot meet (before, it was kept on the hot price and
 * then predicted late); on cores just used, the same query is served.
 */
TEST_F(pol, start_cold__coloc_drops_a_query_only_its_hot_price_would_meet)
{
	struct policy_costs m = cold_tiny(2.0);
	uint64_t idle[POLICY_MAX_CPUS] = { 0 };

	self->cfg.late = POLICY_LATE_DROP;
	query_on_four_cores(self, &m, 800000, idle);
	ASSERT_EQ(0, run_round(self, "coloc"));
	ASSERT_EQ(0, self->out.nr_decisions);
	ASSERT_EQ(1, self->out.nr_drops);
	ASSERT_EQ(POLICY_DROP_CANNOT_MEET, self->drops[0].reason);

	for (int c = 0; c < 4; c++)
		idle[c] = NOW_NS - 100000; /* a block ended 0.1 ms ago: hot */
	ASSERT_EQ(0, run_round(self, "coloc"));
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_FALSE(self->decisions[0].cold);
	ASSERT_GE(800000, self->decisions[0].predicted_ns);
}

/*
 * coloc sizes a cold block so that its cold price fits its budget: with a
 * deadline that the whole model fits hot on 2 cores (960 us) but cold only
 * on 4 (1080 us cold there, 1920 on 2), the block takes 4 cores and is
 * predicted within the deadline. coloc-nospare, so that spare cores do not
 * hide the count the budget chose.
 */
TEST_F(pol, start_cold__coloc_sizes_a_cold_block_at_its_cold_price)
{
	struct policy_costs m = cold_tiny(2.0);
	uint64_t idle[POLICY_MAX_CPUS] = { 0 };

	query_on_four_cores(self, &m, 1500000, idle);
	ASSERT_EQ(0, run_round(self, "coloc-nospare"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_TRUE(self->decisions[0].cold);
	ASSERT_EQ(4, self->decisions[0].nr_cores);
	ASSERT_GE(1500000, self->decisions[0].predicted_ns)
	TH_LOG("%d cores, layers [%d, %d), predicted %llu ns", self->decisions[0].nr_cores,
	       self->decisions[0].first_layer, self->decisions[0].last_layer,
	       (unsigned long long)self->decisions[0].predicted_ns);
}

/*
 * The same query while another tenant's block runs on cores 4-7: those end
 * hot, so the query is not dropped (its hot price meets the deadline on
 * them). tiny runs on 4 cores at most, which are free: it is served there,
 * cold (waiting gains no cores; a model that could use more would wait).
 */
TEST_F(pol, start_cold__coloc_does_not_drop_while_busy_cores_will_end_hot)
{
	struct policy_costs m = cold_tiny(2.0);
	uint64_t idle[POLICY_MAX_CPUS] = { 0 };

	self->cfg.late = POLICY_LATE_DROP;
	self->tenants[1] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	self->running[0] = (struct policy_decision){ .tenant = 1, .nr_cores = 4 };
	self->running[0].cores = cpus_of((const int[]){ 4, 5, 6, 7 }, 4);
	self->in.nr_running = 1;
	query_on_four_cores(self, &m, 800000, idle);
	ASSERT_EQ(0, run_round(self, "coloc"));
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_TRUE(self->decisions[0].cold);
}

TEST_HARNESS_MAIN
