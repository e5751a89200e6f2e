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
 * The first block sets the norm (its evidence is 1.0: no interference
 * yet); the second, twice as slow, is evidence 2.0 over that norm, and
 * moves the norm by its weighted share of POLICY_LEVEL_NORM_WEIGHT.
 */
TEST_F(level_estimate, tenant_block__first_block_sets_the_norm_the_next_moves_it)
{
	double w = weight_of(MS);

	ASSERT_TRUE(policy_level_tenant_block(&self->t, MS, 2 * MS, false, &self->ev));
	EXPECT_TRUE(NEAR(self->t.norm, 2.0));
	EXPECT_TRUE(NEAR(self->ev.ratio, 1.0));
	EXPECT_TRUE(NEAR(self->ev.weight, w));
	ASSERT_TRUE(policy_level_tenant_block(&self->t, MS, 4 * MS, false, &self->ev));
	EXPECT_TRUE(NEAR(self->ev.ratio, 2.0));
	EXPECT_TRUE(NEAR(self->t.norm, (1 - POLICY_LEVEL_NORM_WEIGHT * w) * 2.0 +
					       POLICY_LEVEL_NORM_WEIGHT * w * 4.0));
	/* not alone: the tenant's own noise is untouched */
	EXPECT_EQ(0u, self->t.nr_alone);
	EXPECT_EQ(0.0, self->t.alone_var);
}

/*
 * Blocks alone count in the tenant's noise: a running mean of (ratio -
 * 1)^2 over the first 1 / POLICY_LEVEL_NORM_WEIGHT (weight 1 / n, times
 * the block's weight), an EWMA after. With the norm held at 1.0 by hand
 * between blocks, the ratios are the times.
 */
TEST_F(level_estimate, tenant_block__alone_blocks_make_the_tenants_noise)
{
	const double times[] = { 1.0, 3.0, 1.0, 0.5 };
	uint64_t alone = 10 * MS;
	double w = weight_of(alone), var = 0;

	for (int i = 0; i < 4; i++) {
		double aw = w * fmax(1.0 / (i + 1), POLICY_LEVEL_NORM_WEIGHT);

		self->t.norm = 1.0;
		ASSERT_TRUE(policy_level_tenant_block(
			&self->t, alone, (uint64_t)(times[i] * (double)alone), true, &self->ev));
		var = (1 - aw) * var + aw * (times[i] - 1) * (times[i] - 1);
		EXPECT_TRUE(NEAR(self->t.alone_var, var));
		EXPECT_TRUE(NEAR(self->ev.alone_var, var));
	}
	EXPECT_EQ(4u, self->t.nr_alone);
	/* by hand, w = 10 / 10.1: 1.9802, 1.3267, then 1.0602 */
	EXPECT_LT(fabs(self->t.alone_var - 1.0602), 1e-3);
}

/*
 * A core's first block moves it from the prior 1.0 by
 * POLICY_LEVEL_CORE_WEIGHT x the block's weight; its variance takes the
 * same share of the squared step, its floor of the tenant's alone_var.
 */
TEST_F(level_estimate, core_block__first_block_moves_from_the_prior_by_its_weight)
{
	struct policy_level_evidence ev = { .ratio = 3.0, .weight = 0.5, .alone_var = 0.2 };
	double a = POLICY_LEVEL_CORE_WEIGHT * 0.5;

	EXPECT_EQ(1.0, policy_level_core_aged(&self->c, 7 * MS));
	policy_level_core_block(&self->c, &ev, 7 * MS);
	EXPECT_TRUE(self->c.live);
	EXPECT_EQ(7 * MS, self->c.at_ns);
	EXPECT_TRUE(NEAR(self->c.slowdown, 1.0 + a * 2.0));
	EXPECT_TRUE(NEAR(self->c.var, a * 4.0));
	EXPECT_TRUE(NEAR(self->c.floor_var, a * 0.2));
	/* the second, at the same time, from the first's value */
	policy_level_core_block(&self->c, &ev, 7 * MS);
	EXPECT_TRUE(NEAR(self->c.slowdown, (1 - a) * (1.0 + a * 2.0) + a * 3.0));
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
 * Through the whole path, a tenant whose blocks run at their norm, then
 * slow down 3x for good: the first slow block is no level (its step is
 * its own noise), twenty in a row are (by hand without the ageing between
 * them, 1.29; the norm has learnt part of the 3x by then, 2.28), below the
 * mean; a second after its last block its excess has halved twice.
 */
TEST_F(level_estimate, core_level__one_slow_block_is_no_level_a_run_of_them_is)
{
	uint64_t now = 0, alone = 10 * MS;
	double level;

	for (int i = 0; i < 10; i++, now += 10 * MS) {
		ASSERT_TRUE(policy_level_tenant_block(&self->t, alone, alone, true, &self->ev));
		policy_level_core_block(&self->c, &self->ev, now);
	}
	EXPECT_EQ(1.0, policy_level_core_level(&self->c, now));
	ASSERT_TRUE(policy_level_tenant_block(&self->t, alone, 3 * alone, false, &self->ev));
	policy_level_core_block(&self->c, &self->ev, now);
	EXPECT_EQ(1.0, policy_level_core_level(&self->c, now));
	for (int i = 0; i < 19; i++, now += 30 * MS) {
		ASSERT_TRUE(
			policy_level_tenant_block(&self->t, alone, 3 * alone, false, &self->ev));
		policy_level_core_block(&self->c, &self->ev, now);
	}
	level = policy_level_core_level(&self->c, now);
	TH_LOG("level after 20 blocks at 3x: %.4f (mean %.4f)", level,
	       policy_level_core_aged(&self->c, now));
	EXPECT_GT(level, 1.2);
	EXPECT_LT(level, policy_level_core_aged(&self->c, now));
	EXPECT_GT(self->t.norm, 2.0);
	EXPECT_LT(self->t.norm, 2.5);
	EXPECT_TRUE(NEAR(
		policy_level_core_aged(&self->c, self->c.at_ns + 2 * POLICY_LEVEL_HALF_LIFE_NS),
		1.0 + (self->c.slowdown - 1.0) / 4));
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
	struct policy_level_tenant before;
	uint64_t now = UINT64_MAX - 1000;

	ASSERT_FALSE(policy_level_tenant_block(&self->t, 0, MS, true, &self->ev));
	ASSERT_FALSE(policy_level_tenant_block(&self->t, MS, 0, true, &self->ev));
	EXPECT_EQ(0.0, self->t.norm);
	EXPECT_EQ(0u, self->t.nr_alone);

	ASSERT_TRUE(policy_level_tenant_block(&self->t, 1, UINT64_MAX, true, &self->ev));
	EXPECT_EQ(POLICY_LEVEL_MAX_RATIO, self->t.norm);
	before = self->t;
	ASSERT_TRUE(policy_level_tenant_block(&self->t, UINT64_MAX, 1, true, &self->ev));
	EXPECT_TRUE(NEAR(self->ev.ratio, 1.0 / POLICY_LEVEL_MAX_RATIO / before.norm));
	for (int i = 0; i < 1000; i++, now++) {
		bool slow = i % 3;

		ASSERT_TRUE(policy_level_tenant_block(&self->t, slow ? 1 : UINT64_MAX,
						      slow ? UINT64_MAX : 1, i % 2, &self->ev));
		policy_level_core_block(&self->c, &self->ev, now);
		ASSERT_TRUE(isfinite(self->t.norm) && isfinite(self->t.alone_var));
		ASSERT_TRUE(isfinite(self->c.slowdown) && isfinite(self->c.var) &&
			    isfinite(self->c.floor_var));
	}
	EXPECT_GE(self->t.norm, 1.0 / POLICY_LEVEL_MAX_RATIO);
	EXPECT_LE(self->t.norm, POLICY_LEVEL_MAX_RATIO);
	EXPECT_LE(self->c.slowdown, POLICY_LEVEL_MAX_RATIO * POLICY_LEVEL_MAX_RATIO);
	EXPECT_GE(policy_level_core_level(&self->c, now), 1.0);
	EXPECT_TRUE(isfinite(policy_level_core_level(&self->c, UINT64_MAX)));
	/* the clock at its end, the evidence far in the past: aged back to 1.0 */
	self->c.at_ns = 0;
	EXPECT_TRUE(NEAR(policy_level_core_aged(&self->c, UINT64_MAX), 1.0));
}

TEST_HARNESS_MAIN
