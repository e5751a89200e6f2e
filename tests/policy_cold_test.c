// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the cold start in the policy's prices (policy_costs.cold, a ramp
 * over idle time; policy_input.core_idle_since_ns): the ramp is 1.0 at 0,
 * linear between its points and flat beyond the last, its points held to
 * 1..4 and a hostile one refused by policy_costs_check(); the served solo
 * latency is the hot one times the long gap's ratio; a block is priced at
 * the ramp at its most recently busy core's idle time, one on a busy core
 * hot; and coloc learns from a cold block relative to the price it was
 * given, so a cold start does not read as the tenant running slow. Numbers
 * worked out from tiny's table (policy_fixture.h): its whole model on 4
 * cores is 540 us.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_fixture.h"

#define LONG_GAP_NS 20000000ULL
#define NOW_NS 50000000ULL

/*
 * tiny with a one-point ramp (a format-7 profile's): ratio after 20 ms idle,
 * so 1 + (ratio - 1) x idle / 20 ms below that. At 1.25: 540 us hot, 675 us
 * after 20 ms or more on 4 cores.
 */
static struct policy_costs cold_tiny(double ratio)
{
	struct policy_costs m = tiny;

	m.nr_cold = 1;
	m.cold[0] = (struct policy_cold_point){ .idle_ns = LONG_GAP_NS, .ratio = ratio };
	return m;
}

/* tiny with a format-8 ramp: 1.1 after 1 ms, 1.2 after 4 ms, 1.3 after 20 ms */
static struct policy_costs ramp_tiny(void)
{
	struct policy_costs m = tiny;

	m.nr_cold = 3;
	m.cold[0] = (struct policy_cold_point){ .idle_ns = 1000000, .ratio = 1.1 };
	m.cold[1] = (struct policy_cold_point){ .idle_ns = 4000000, .ratio = 1.2 };
	m.cold[2] = (struct policy_cold_point){ .idle_ns = LONG_GAP_NS, .ratio = 1.3 };
	return m;
}

#define ASSERT_NEAR(want, got) ASSERT_GT(1e-12, fabs((double)(want) - (double)(got)))

TEST(costs__the_ramp_is_linear_between_its_points_and_flat_beyond)
{
	struct policy_costs m = ramp_tiny();

	ASSERT_NEAR(1.0, policy_costs_cold_scale_at(&m, 0));
	ASSERT_NEAR(1.05, policy_costs_cold_scale_at(&m, 500000));
	ASSERT_NEAR(1.1, policy_costs_cold_scale_at(&m, 1000000));
	ASSERT_NEAR(1.15, policy_costs_cold_scale_at(&m, 2500000));
	ASSERT_NEAR(1.2, policy_costs_cold_scale_at(&m, 4000000));
	ASSERT_NEAR(1.25, policy_costs_cold_scale_at(&m, 12000000));
	ASSERT_NEAR(1.3, policy_costs_cold_scale_at(&m, LONG_GAP_NS));
	ASSERT_NEAR(1.3, policy_costs_cold_scale_at(&m, 1000000000));
	ASSERT_NEAR(1.3, policy_costs_cold_scale_at(&m, UINT64_MAX));
	ASSERT_NEAR(1.3, policy_costs_cold_scale(&m));
	/* a point below 1 (noise at a short gap) is priced hot, one past 4 at 4 */
	m.cold[0].ratio = 0.95;
	ASSERT_NEAR(1.0, policy_costs_cold_scale_at(&m, 1000000));
	ASSERT_NEAR(1.1, policy_costs_cold_scale_at(&m, 2500000));
	m.cold[2].ratio = 1e6;
	ASSERT_NEAR(4.0, policy_costs_cold_scale_at(&m, 30000000));
	ASSERT_NEAR(4.0, policy_costs_cold_scale(&m));
	/* no ramp: hot at any idle time */
	m.nr_cold = 0;
	ASSERT_NEAR(1.0, policy_costs_cold_scale_at(&m, UINT64_MAX));
	ASSERT_NEAR(1.0, policy_costs_cold_scale(&m));
	/* one point (format 7): a line from 1.0 at 0 to it */
	m = cold_tiny(1.25);
	ASSERT_NEAR(1.0625, policy_costs_cold_scale_at(&m, 5000000));
	ASSERT_NEAR(1.25, policy_costs_cold_scale_at(&m, 25000000));
}

TEST(costs__check_refuses_a_hostile_ramp)
{
	static const struct {
		int at;
		uint64_t idle_ns;
		double ratio;
	} cases[] = {
		{ 1, 1000000, 1.2 }, /* as long as the point before */
		{ 1, 500000, 1.2 }, /* shorter */
		{ 0, 0, 1.1 }, /* no idle time */
		{ 2, 30000000, 0 }, /* ratio 0 */
		{ 2, 30000000, -1 },  { 2, 30000000, 4.5 }, /* past the parser's bound */
		{ 2, 30000000, NAN },
	};
	struct policy_costs m = ramp_tiny();
	struct coloc_err err = { 0 };

	fill_tiny();
	ASSERT_EQ(0, policy_costs_check(&m, &err)) TH_LOG("%s", err.msg);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		m = ramp_tiny();
		m.cold[cases[i].at] = (struct policy_cold_point){ .idle_ns = cases[i].idle_ns,
								  .ratio = cases[i].ratio };
		coloc_err_clear(&err);
		EXPECT_EQ(-EINVAL, policy_costs_check(&m, &err)) TH_LOG("case %zu accepted", i);
		EXPECT_NE(NULL, strstr(err.msg, "cold point")) TH_LOG("case %zu: %s", i, err.msg);
	}
	m = ramp_tiny();
	m.nr_cold = POLICY_MAX_COLD_POINTS + 1;
	ASSERT_EQ(-EINVAL, policy_costs_check(&m, &err));
	m.nr_cold = -1;
	ASSERT_EQ(-EINVAL, policy_costs_check(&m, &err));
}

TEST(costs__served_solo_is_the_solo_times_the_long_gaps_ratio)
{
	struct policy_costs m = cold_tiny(1.25);

	fill_tiny();
	ASSERT_EQ(540000, policy_costs_solo_ns(&m, 8));
	ASSERT_EQ(675000, policy_costs_served_solo_ns(&m, 8));
	ASSERT_EQ(1200000, policy_costs_served_solo_ns(&m, 2)); /* 960 us x 1.25 */
	/* a ramp: its last point, not its first */
	m = ramp_tiny();
	ASSERT_EQ(702000, policy_costs_served_solo_ns(&m, 8)); /* 540 us x 1.3 */
	/* unknown (a format-6 profile) or below 1 (noise): the hot figure */
	m = cold_tiny(1.25);
	m.nr_cold = 0;
	ASSERT_EQ(540000, policy_costs_served_solo_ns(&m, 8));
	m = cold_tiny(0.9);
	ASSERT_EQ(540000, policy_costs_served_solo_ns(&m, 8));
	ASSERT_EQ(0, policy_costs_served_solo_ns(&m, 0));
	/* a ratio past any measurement (a table not from a parsed profile) prices at most 4x */
	m = cold_tiny(1e6);
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

TEST_F(pol, start_cold__a_block_on_cores_idle_past_the_long_gap_is_priced_at_its_ratio)
{
	struct policy_costs m = cold_tiny(1.25);
	uint64_t idle[POLICY_MAX_CPUS] = { 0 }; /* never ran a block: idle since ever */

	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, idle));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(4, self->decisions[0].nr_cores);
	ASSERT_TRUE(self->decisions[0].cold);
	ASSERT_NEAR(1.25, self->decisions[0].cold_scale);
	ASSERT_EQ(675000, self->decisions[0].alone_ns);
	ASSERT_EQ(675000, self->decisions[0].predicted_ns);

	/* every core's last block ended 25 ms ago: past the long gap, flat */
	for (int c = 0; c < 4; c++)
		idle[c] = NOW_NS - 25000000;
	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, idle));
	ASSERT_TRUE(self->decisions[0].cold);
	ASSERT_EQ(675000, self->decisions[0].predicted_ns);
}

/*
 * On the ramp: cores idle 10, 10, 2.5 and 10 ms are priced at the most
 * recently busy one's 2.5 ms, 1.15 x (621 us): below the long gap's 1.3
 * (the step before this priced every gap past 2 ms at the long gap's ratio).
 */
TEST_F(pol, start_cold__a_block_is_priced_by_the_ramp_at_its_cores_shortest_idle)
{
	struct policy_costs m = ramp_tiny();
	uint64_t idle[POLICY_MAX_CPUS] = { 0 };

	for (int c = 0; c < 4; c++)
		idle[c] = NOW_NS - 10000000;
	idle[2] = NOW_NS - 2500000;
	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, idle));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_TRUE(self->decisions[0].cold);
	ASSERT_NEAR(1.15, self->decisions[0].cold_scale);
	ASSERT_EQ(621000, self->decisions[0].alone_ns);
	ASSERT_EQ(621000, self->decisions[0].predicted_ns);

	/* the same from a format-7 profile (one point, 1.25 at 20 ms): 1.03125 x */
	m = cold_tiny(1.25);
	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, idle));
	ASSERT_NEAR(1.03125, self->decisions[0].cold_scale);
	ASSERT_EQ(556875, self->decisions[0].predicted_ns);
}

TEST_F(pol, start_cold__a_block_right_after_one_or_without_the_ramp_is_priced_hot)
{
	struct policy_costs m = ramp_tiny();
	uint64_t idle[POLICY_MAX_CPUS] = { 0 };

	/* one of its cores ends a block now: hot */
	for (int c = 0; c < 4; c++)
		idle[c] = NOW_NS - 10000000;
	idle[2] = NOW_NS;
	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, idle));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_FALSE(self->decisions[0].cold);
	ASSERT_NEAR(1.0, self->decisions[0].cold_scale);
	ASSERT_EQ(540000, self->decisions[0].alone_ns);
	ASSERT_EQ(540000, self->decisions[0].predicted_ns);
	/* or ended it after now (a clock the caller read late): hot */
	idle[2] = NOW_NS + 1000;
	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, idle));
	ASSERT_FALSE(self->decisions[0].cold);

	/* no idle times from the caller (the simulator): hot */
	ASSERT_EQ(0, whole_model_block(self, "temporal", &m, NULL));
	ASSERT_FALSE(self->decisions[0].cold);
	ASSERT_EQ(540000, self->decisions[0].predicted_ns);

	/* a model without a cold ramp: hot however long the cores were idle */
	memset(idle, 0, sizeof(idle));
	m.nr_cold = 0;
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
 * coloc decides tenant 0's first block of a query on four free cores idle
 * since idle[] (m, QoS 300 us): one decision, all four cores, layers 0-3.
 */
static void learn_first_block(struct __test_metadata *_metadata, FIXTURE_DATA(pol) * self,
			      struct policy *p, struct policy_costs *m, uint64_t *idle)
{
	self->tenants[0] = (struct policy_tenant){ .costs = m, .qos_ns = 300000 };
	self->free = cpus_of((const int[]){ 0, 1, 2, 3 }, 4);
	self->in.now_ns = NOW_NS;
	self->in.core_idle_since_ns = idle;
	add_query(&self->in, self->queries, 1, 0, NOW_NS, NOW_NS + 100000000);
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(4, self->decisions[0].nr_cores);
	ASSERT_EQ(3, self->decisions[0].last_layer);
}

/*
 * That block measured at measured_ns, its cores idle from its end, and the
 * next query's block decided at NOW_NS + at_ns: one decision.
 */
static void learn_next_block(struct __test_metadata *_metadata, FIXTURE_DATA(pol) * self,
			     struct policy *p, uint64_t *idle, uint64_t measured_ns, uint64_t at_ns)
{
	struct policy_decision first = self->decisions[0];
	uint8_t versions[3];

	memcpy(versions, first.versions, 3);
	first.versions = versions;
	policy_block_done(p, &first, measured_ns);
	for (int c = 0; c < 4; c++)
		idle[c] = NOW_NS + measured_ns;
	self->in.now_ns = NOW_NS + at_ns;
	self->queries[0].id = 2;
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(1, self->out.nr_decisions);
}

/*
 * coloc prices a query's first block cold (675 us); measured at exactly
 * that, it has learnt nothing: the next block, on cores used 25 us before,
 * is predicted at the hot table on the ramp's foot, 540 us x 1.0003125 =
 * 540.17 us (within rounding). Learning from the hot price instead would
 * have taken 675 / 540 = 1.25 as the tenant's correction and predicted it
 * near 578 us.
 */
TEST_F(pol, start_cold__coloc_learns_a_cold_block_relative_to_its_cold_price)
{
	struct policy *p = policy_create(policy_find("coloc"), &self->cfg, &self->err);
	struct policy_costs m = cold_tiny(1.25);
	uint64_t idle[POLICY_MAX_CPUS] = { 0 };

	ASSERT_NE(NULL, p);
	learn_first_block(_metadata, self, p, &m, idle);
	ASSERT_TRUE(self->decisions[0].cold);
	ASSERT_EQ(675000, self->decisions[0].predicted_ns);
	learn_next_block(_metadata, self, p, idle, 675000, 700000);
	ASSERT_NEAR(1.0003125, self->decisions[0].cold_scale);
	ASSERT_GE(2, llabs((long long)self->decisions[0].predicted_ns - 540168))
	TH_LOG("predicted %llu ns", (unsigned long long)self->decisions[0].predicted_ns);
	policy_destroy(p);
}

/*
 * The same on the ramp: cores idle 2.5 ms price the first block at 1.15 x
 * (621 us); measured at exactly that, the next block (cores used 25 us
 * before: 1.0025 x) is predicted near 541.35 us. Learning relative to the
 * long gap's 1.3 instead (the block's cold flag alone) would have read the
 * block as 621 / 702 = 0.885 of its price and predicted it at 513 us.
 */
TEST_F(pol, start_cold__coloc_learns_a_block_relative_to_its_price_on_the_ramp)
{
	struct policy *p = policy_create(policy_find("coloc"), &self->cfg, &self->err);
	struct policy_costs m = ramp_tiny();
	uint64_t idle[POLICY_MAX_CPUS] = { 0 };

	ASSERT_NE(NULL, p);
	for (int c = 0; c < 8; c++)
		idle[c] = NOW_NS - 2500000;
	learn_first_block(_metadata, self, p, &m, idle);
	ASSERT_NEAR(1.15, self->decisions[0].cold_scale);
	ASSERT_EQ(621000, self->decisions[0].predicted_ns);
	learn_next_block(_metadata, self, p, idle, 621000, 646000);
	ASSERT_NEAR(1.0025, self->decisions[0].cold_scale);
	ASSERT_GE(2, llabs((long long)self->decisions[0].predicted_ns - 541350))
	TH_LOG("predicted %llu ns", (unsigned long long)self->decisions[0].predicted_ns);
	policy_destroy(p);
}

/*
 * coloc judges a query at the price its block will be given: tiny cold at
 * 3 x on cores all idle, 540 us hot and 1620 us cold on 4 cores. With 540 us
 * to its deadline (its QoS) the hot price fits and the cold one would end
 * at its deadline plus 2 QoS, so it is dropped as one it cannot meet
 * (before, it was kept on the hot price and then predicted late); on cores
 * just used, the same query is served. (At 2 x it would end at its
 * deadline plus its QoS: overdue, and served, nothing waiting for it.)
 */
TEST_F(pol, start_cold__coloc_drops_a_query_only_its_hot_price_would_meet)
{
	struct policy_costs m = cold_tiny(3.0);
	uint64_t idle[POLICY_MAX_CPUS] = { 0 };

	self->cfg.late = POLICY_LATE_DROP;
	query_on_four_cores(self, &m, 540000, idle);
	ASSERT_EQ(0, run_round(self, "coloc"));
	ASSERT_EQ(0, self->out.nr_decisions);
	ASSERT_EQ(1, self->out.nr_drops);
	ASSERT_EQ(POLICY_DROP_CANNOT_MEET, self->drops[0].reason);

	for (int c = 0; c < 4; c++)
		idle[c] = NOW_NS - 100000; /* a block ended 0.1 ms ago: the ramp's foot, 1.01 x */
	ASSERT_EQ(0, run_round(self, "coloc"));
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_NEAR(1.01, self->decisions[0].cold_scale);
	ASSERT_GE(1620000, self->decisions[0].predicted_ns);
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
