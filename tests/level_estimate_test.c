// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the level estimator (policy/level_estimate.c) as a pure unit,
 * the clock passed in: a tenant's norm and its noise alone from finished
 * blocks, a core's EWMA from the prior 1.0, its ageing by the half-life at
 * times given, the test against noise, and hostile block times (0, years,
 * a clock that goes back) that must leave every estimate finite. Each
 * expected value is worked out by hand from the formulas the header states.
 */
#include <math.h>
#include <stdint.h>
#include "kselftest_harness.h"
#include "level_estimate.h"

#define MS 1000000ULL
#define NEAR(a, b) (fabs((a) - (b)) <= 1e-12 * fmax(1.0, fabs(b)))

FIXTURE(level_estimate)
{
	struct policy_level_tenant t;
	struct policy_level_core c;
	struct policy_level_evidence ev;
};

FIXTURE_SETUP(level_estimate)
{
	*self = (FIXTURE_DATA(level_estimate)){ 0 };
}

FIXTURE_TEARDOWN(level_estimate)
{
}

/* A block's weight in the norm and the level, by hand. */
static double weight_of(uint64_t alone_ns)
{
	return (double)alone_ns / ((double)alone_ns + POLICY_LEVEL_SMALL_BLOCK_NS);
}

/*
 * Blocks alone make the norm of their core count (the first sets it) and
 * are no evidence; a block beside another tenant's is none either until
 * POLICY_LEVEL_MIN_ALONE blocks alone on its count (no noise to test it
 * against), then its ratio over that count's norm, and leaves the norm.
 * Another count's blocks (two cores, here twice as slow alone) have a
 * norm of their own.
 */
TEST_F(level_estimate, tenant_block__blocks_alone_make_the_norm_blocks_beside_others_evidence)
{
	struct policy_level_alone *one = &self->t.alone[0], *two = &self->t.alone[1];
	int k;

	ASSERT_FALSE(policy_level_tenant_block(&self->t, 1, MS, 3 * MS, false, &self->ev));
	EXPECT_EQ(0.0, one->norm);
	for (k = 0; k < POLICY_LEVEL_MIN_ALONE; k++) {
		ASSERT_FALSE(policy_level_tenant_block(&self->t, 1, MS, 2 * MS, true, &self->ev));
		EXPECT_TRUE(NEAR(one->norm, 2.0));
		if (k < POLICY_LEVEL_MIN_ALONE - 1)
			ASSERT_FALSE(policy_level_tenant_block(&self->t, 1, MS, 3 * MS, false,
							       &self->ev));
	}
	EXPECT_EQ((uint64_t)POLICY_LEVEL_MIN_ALONE, one->nr);
	EXPECT_EQ(0.0, one->var);
	ASSERT_TRUE(policy_level_tenant_block(&self->t, 1, MS, 6 * MS, false, &self->ev));
	EXPECT_TRUE(NEAR(self->ev.ratio, 3.0));
	EXPECT_TRUE(NEAR(self->ev.weight, weight_of(MS)));
	EXPECT_TRUE(NEAR(one->norm, 2.0));
	/* nr_cores below 1 counts as 1; two cores are a count of their own */
	ASSERT_TRUE(policy_level_tenant_block(&self->t, 0, MS, 6 * MS, false, &self->ev));
	ASSERT_FALSE(policy_level_tenant_block(&self->t, 2, MS, 6 * MS, false, &self->ev));
	for (k = 0; k < POLICY_LEVEL_MIN_ALONE; k++)
		ASSERT_FALSE(policy_level_tenant_block(&self->t, 2, MS, 4 * MS, true, &self->ev));
	ASSERT_TRUE(policy_level_tenant_block(&self->t, 2, MS, 6 * MS, false, &self->ev));
	EXPECT_TRUE(NEAR(self->ev.ratio, 1.5));
	EXPECT_TRUE(NEAR(two->norm, 4.0));
	EXPECT_TRUE(NEAR(one->norm, 2.0));
	/* 3-4 cores share a count, 65 and more the last */
	for (k = 0; k < POLICY_LEVEL_MIN_ALONE; k++)
		ASSERT_FALSE(policy_level_tenant_block(&self->t, 3, MS, MS, true, &self->ev));
	ASSERT_TRUE(policy_level_tenant_block(&self->t, 4, MS, 2 * MS, false, &self->ev));
	EXPECT_TRUE(NEAR(self->ev.ratio, 2.0));
	ASSERT_FALSE(policy_level_tenant_block(&self->t, 1000, MS, MS, true, &self->ev));
	EXPECT_EQ(1u, self->t.alone[POLICY_LEVEL_COUNT_BUCKETS - 1].nr);
}

/*
 * Blocks alone count in the tenant's noise on their count: a running mean
 * of (ratio - 1)^2 over the first 1 / POLICY_LEVEL_NORM_WEIGHT (weight 1 /
 * n, times the block's weight), an EWMA after; and a core's EWMA of their
 * ratios (weight POLICY_LEVEL_CORE_WEIGHT x the block's) as its excess over
 * 1.0, whose square is averaged alike. With the norm held at 1.0 by hand
 * between blocks, the ratios are the times.
 */
TEST_F(level_estimate, tenant_block__alone_blocks_make_the_tenants_noise)
{
	const double times[] = { 1.0, 3.0, 1.0, 0.5 };
	struct policy_level_alone *a = &self->t.alone[0];
	uint64_t alone = 10 * MS;
	double w = weight_of(alone), var = 0, lev = 0, lvar = 0;

	for (int i = 0; i < 4; i++) {
		double aw = w * fmax(1.0 / (i + 1), POLICY_LEVEL_NORM_WEIGHT);
		double cw = POLICY_LEVEL_CORE_WEIGHT * w;

		a->norm = 1.0;
		ASSERT_FALSE(policy_level_tenant_block(
			&self->t, 1, alone, (uint64_t)(times[i] * (double)alone), true, &self->ev));
		var = (1 - aw) * var + aw * (times[i] - 1) * (times[i] - 1);
		lev = (1 - cw) * lev + cw * (times[i] - 1);
		lvar = (1 - aw) * lvar + aw * lev * lev;
		EXPECT_TRUE(NEAR(a->var, var));
		EXPECT_TRUE(NEAR(a->level_excess, lev));
		EXPECT_TRUE(NEAR(a->level_var, lvar));
	}
	EXPECT_EQ(4u, a->nr);
	/* by hand, w = 10 / 10.1: 1.9802, 1.3267, then 1.0602 */
	EXPECT_LT(fabs(a->var - 1.0602), 1e-3);
	/* and a block beside others then carries both */
	a->nr = POLICY_LEVEL_MIN_ALONE;
	ASSERT_TRUE(policy_level_tenant_block(&self->t, 1, alone, alone, false, &self->ev));
	EXPECT_EQ(a->var, self->ev.alone_var);
	EXPECT_EQ(a->level_var, self->ev.alone_level_var);
}

/*
 * A core's first block moves it from the prior 1.0 by
 * POLICY_LEVEL_CORE_WEIGHT x the block's weight; its variance takes the
 * same share of the squared step, its floors of the tenant's alone var and
 * level_var, its weight_sum that share of 1.
 */
TEST_F(level_estimate, core_block__first_block_moves_from_the_prior_by_its_weight)
{
	struct policy_level_evidence ev = {
		.ratio = 3.0, .weight = 0.5, .alone_var = 0.2, .alone_level_var = 0.05
	};
	double a = POLICY_LEVEL_CORE_WEIGHT * 0.5;

	EXPECT_EQ(1.0, policy_level_core_aged(&self->c, 7 * MS));
	policy_level_core_block(&self->c, &ev, 7 * MS);
	EXPECT_TRUE(self->c.live);
	EXPECT_EQ(7 * MS, self->c.at_ns);
	EXPECT_TRUE(NEAR(self->c.slowdown, 1.0 + a * 2.0));
	EXPECT_TRUE(NEAR(self->c.var, a * 4.0));
	EXPECT_TRUE(NEAR(self->c.floor_var, a * 0.2));
	EXPECT_TRUE(NEAR(self->c.floor_level_var, a * 0.05));
	EXPECT_TRUE(NEAR(self->c.weight_sum, a));
	/* the second, at the same time, from the first's value */
	policy_level_core_block(&self->c, &ev, 7 * MS);
	EXPECT_TRUE(NEAR(self->c.slowdown, (1 - a) * (1.0 + a * 2.0) + a * 3.0));
	EXPECT_TRUE(NEAR(self->c.weight_sum, (1 - a) * a + a));
}

/*
 * A core's level reads its EWMAs over the weight they took (weight_sum),
 * and its floor is the larger of the tenants' block spread and their alone
 * level's spread as the block spread that gives it (x (2 - w) / w): by
 * hand, each case against policy_level_beyond_noise().
 */
TEST_F(level_estimate, core_level__its_spreads_over_their_weight_the_larger_floor)
{
	const double w = POLICY_LEVEL_CORE_WEIGHT;

	self->c = (struct policy_level_core){ .live = true,
					      .slowdown = 2.0,
					      .at_ns = MS,
					      .var = 0.1,
					      .floor_var = 0.02,
					      .floor_level_var = 0.001,
					      .weight_sum = 0.5 };
	EXPECT_TRUE(NEAR(policy_level_core_level(&self->c, MS),
			 policy_level_beyond_noise(2.0, 0.2, 0.04, w)));
	self->c.floor_level_var = 0.05;
	EXPECT_TRUE(NEAR(policy_level_core_level(&self->c, MS),
			 policy_level_beyond_noise(2.0, 0.2, 0.1 * (2 - w) / w, w)));
	/* its se is the level_var's own: 2.0 - 2 sqrt(0.1) */
	EXPECT_TRUE(NEAR(policy_level_core_level(&self->c, MS), 2.0 - 2 * sqrt(0.1)));
}

/*
 * Ageing with the clock passed in: the excess over 1.0 halves every
 * POLICY_LEVEL_HALF_LIFE_NS after the last evidence; a time before it (a
 * clock read out of order) sees the value as it is; so does the level, and
 * a later block starts from the aged value.
 */
TEST_F(level_estimate, core_aged__excess_halves_every_half_life_of_the_clock_given)
{
	uint64_t t0 = 5000 * MS, h = POLICY_LEVEL_HALF_LIFE_NS;
	struct policy_level_evidence ev = { .ratio = 1.0, .weight = 1.0 };

	policy_level_core_set(&self->c, 3.0, t0);
	EXPECT_EQ(3.0, policy_level_core_aged(&self->c, t0));
	EXPECT_EQ(3.0, policy_level_core_aged(&self->c, t0 - 1));
	EXPECT_TRUE(NEAR(policy_level_core_aged(&self->c, t0 + h), 2.0));
	EXPECT_TRUE(NEAR(policy_level_core_aged(&self->c, t0 + 2 * h), 1.5));
	/* no variance: the level is the aged mean */
	EXPECT_TRUE(NEAR(policy_level_core_level(&self->c, t0 + 2 * h), 1.5));
	policy_level_core_block(&self->c, &ev, t0 + h);
	EXPECT_TRUE(NEAR(self->c.slowdown,
			 (1 - POLICY_LEVEL_CORE_WEIGHT) * 2.0 + POLICY_LEVEL_CORE_WEIGHT * 1.0));
}

/*
 * The noise test: the level is the mean less two standard errors of the
 * EWMA, sqrt(max(var, floor) x w / (2 - w)), never below 1.0; the larger
 * of var and floor counts; without a usable weight there is no error.
 */
TEST_F(level_estimate, beyond_noise__two_standard_errors_of_the_larger_variance)
{
	double se = sqrt(0.25 * 0.3 / 1.7);

	EXPECT_TRUE(NEAR(policy_level_beyond_noise(2.0, 0.25, 0.0, 0.3), 2.0 - 2 * se));
	EXPECT_TRUE(NEAR(policy_level_beyond_noise(2.0, 0.0, 0.25, 0.3), 2.0 - 2 * se));
	EXPECT_TRUE(NEAR(policy_level_beyond_noise(2.0, 0.01, 0.25, 0.3), 2.0 - 2 * se));
	EXPECT_EQ(1.0, policy_level_beyond_noise(1.1, 0.25, 0.0, 0.3));
	EXPECT_EQ(1.0, policy_level_beyond_noise(0.5, 0.0, 0.0, 0.3));
	EXPECT_EQ(2.0, policy_level_beyond_noise(2.0, 0.25, 0.0, 0.0));
	EXPECT_EQ(2.0, policy_level_beyond_noise(2.0, 0.25, 0.0, 2.0));
}

/*
 * Through the whole path, a tenant whose blocks alone run at their norm,
 * then beside another tenant's at 3x for good: the first slow block is no
 * level (its step is its own noise), twenty in a row are, below the mean,
 * and the norm stays the one alone (the slowdown beside others is not
 * learnt away); a second after its last block its excess has halved twice.
 */
TEST_F(level_estimate, core_level__one_slow_block_is_no_level_a_run_of_them_is)
{
	uint64_t now = 0, alone = 10 * MS;
	double level;

	for (int i = 0; i < 10; i++, now += 10 * MS)
		ASSERT_FALSE(policy_level_tenant_block(&self->t, 1, alone, alone, true, &self->ev));
	EXPECT_FALSE(self->c.live);
	ASSERT_TRUE(policy_level_tenant_block(&self->t, 1, alone, 3 * alone, false, &self->ev));
	policy_level_core_block(&self->c, &self->ev, now);
	EXPECT_EQ(1.0, policy_level_core_level(&self->c, now));
	for (int i = 0; i < 19; i++, now += 30 * MS) {
		ASSERT_TRUE(
			policy_level_tenant_block(&self->t, 1, alone, 3 * alone, false, &self->ev));
		policy_level_core_block(&self->c, &self->ev, now);
	}
	level = policy_level_core_level(&self->c, now);
	TH_LOG("level after 20 blocks at 3x: %.4f (mean %.4f)", level,
	       policy_level_core_aged(&self->c, now));
	EXPECT_GT(level, 1.5);
	EXPECT_LT(level, policy_level_core_aged(&self->c, now));
	EXPECT_EQ(1.0, self->t.alone[0].norm);
	EXPECT_TRUE(NEAR(
		policy_level_core_aged(&self->c, self->c.at_ns + 2 * POLICY_LEVEL_HALF_LIFE_NS),
		1.0 + (self->c.slowdown - 1.0) / 4));
}

/*
 * Slow blocks alone, however many and however slow (a VM's spell with
 * nothing beside them), are no level: they move the tenant's norm and
 * noise, never a core. A spell of three slow blocks beside others, of a
 * tenant whose blocks alone came in such spells, is within its noise; the
 * same three are a level for a tenant whose blocks alone never slowed.
 */
TEST_F(level_estimate, core_level__slow_blocks_alone_are_no_level_a_spell_beside_others_is_noise)
{
	struct policy_level_tenant spelly = { 0 }, steady = { 0 };
	struct policy_level_core c_spelly = { 0 }, c_steady = { 0 };
	uint64_t now = 0, alone = 10 * MS;

	for (int i = 0; i < 40; i++, now += 10 * MS) {
		uint64_t spell = i % 10 >= 7 ? 3 * alone : alone;

		ASSERT_FALSE(policy_level_tenant_block(&spelly, 1, alone, spell, true, &self->ev));
		ASSERT_FALSE(policy_level_tenant_block(&steady, 1, alone, alone, true, &self->ev));
	}
	EXPECT_FALSE(c_spelly.live);
	for (int i = 0; i < 3; i++, now += 10 * MS) {
		ASSERT_TRUE(
			policy_level_tenant_block(&spelly, 1, alone, 3 * alone, false, &self->ev));
		policy_level_core_block(&c_spelly, &self->ev, now);
		ASSERT_TRUE(policy_level_tenant_block(&steady, 1, alone,
						      (uint64_t)(3 * steady.alone[0].norm * alone),
						      false, &self->ev));
		policy_level_core_block(&c_steady, &self->ev, now);
	}
	TH_LOG("after a spell of 3 beside others: %.4f (spells alone), %.4f (steady alone); "
	       "means %.4f, %.4f",
	       policy_level_core_level(&c_spelly, now), policy_level_core_level(&c_steady, now),
	       policy_level_core_aged(&c_spelly, now), policy_level_core_aged(&c_steady, now));
	EXPECT_EQ(1.0, policy_level_core_level(&c_spelly, now));
	EXPECT_GT(policy_level_core_level(&c_steady, now), 1.0);
}

/*
 * Hostile times (an executor reports what it likes, clamped or not): a 0
 * on either side is no evidence and changes nothing; 1 ns against years,
 * and years against 1 ns, count as one block at POLICY_LEVEL_MAX_RATIO or
 * its inverse; a long run of them leaves the norm, the variances and the
 * level finite and within the ratio's bounds.
 */
TEST_F(level_estimate, tenant_block__hostile_times_stay_finite_and_bounded)
{
	struct policy_level_alone before;
	uint64_t now = UINT64_MAX - 1000;

	struct policy_level_alone *a = &self->t.alone[0];

	ASSERT_FALSE(policy_level_tenant_block(&self->t, 1, 0, MS, true, &self->ev));
	ASSERT_FALSE(policy_level_tenant_block(&self->t, 1, MS, 0, true, &self->ev));
	EXPECT_EQ(0.0, a->norm);
	EXPECT_EQ(0u, a->nr);

	ASSERT_FALSE(policy_level_tenant_block(&self->t, 1, 1, UINT64_MAX, true, &self->ev));
	EXPECT_TRUE(NEAR(a->norm, POLICY_LEVEL_MAX_RATIO));
	a->nr = POLICY_LEVEL_MIN_ALONE;
	before = *a;
	ASSERT_TRUE(policy_level_tenant_block(&self->t, 1, UINT64_MAX, 1, false, &self->ev));
	EXPECT_TRUE(NEAR(self->ev.ratio, 1.0 / POLICY_LEVEL_MAX_RATIO / before.norm));
	for (int i = 0; i < 1000; i++, now++) {
		bool slow = i % 3;

		if (policy_level_tenant_block(&self->t, 1, slow ? 1 : UINT64_MAX,
					      slow ? UINT64_MAX : 1, i % 2, &self->ev))
			policy_level_core_block(&self->c, &self->ev, now);
		ASSERT_TRUE(isfinite(a->norm) && isfinite(a->var) && isfinite(a->level_var));
		ASSERT_TRUE(isfinite(self->c.slowdown) && isfinite(self->c.var) &&
			    isfinite(self->c.floor_var) && isfinite(self->c.floor_level_var));
	}
	EXPECT_GE(a->norm, 1.0 / POLICY_LEVEL_MAX_RATIO);
	EXPECT_LE(a->norm, POLICY_LEVEL_MAX_RATIO);
	EXPECT_LE(self->c.slowdown, POLICY_LEVEL_MAX_RATIO * POLICY_LEVEL_MAX_RATIO);
	EXPECT_GE(policy_level_core_level(&self->c, now), 1.0);
	EXPECT_TRUE(isfinite(policy_level_core_level(&self->c, UINT64_MAX)));
	/* the clock at its end, the evidence far in the past: aged back to 1.0 */
	self->c.at_ns = 0;
	EXPECT_TRUE(NEAR(policy_level_core_aged(&self->c, UINT64_MAX), 1.0));
}

TEST_HARNESS_MAIN
