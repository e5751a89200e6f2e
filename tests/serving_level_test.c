// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the level colocd's serving core estimates from finished blocks
 * (daemon/serving.c's sv_update_slowdown, policy/level_estimate.c), read as
 * the policy's round reads it (sv_core_level): slow blocks that ran with no
 * other tenant's block in flight, however many, never lift a core's level
 * above 1.0, so the round sees no interference and coloc keeps every
 * layer's fastest alone version (coloc-noversions' run); the same slowdown
 * beside another tenant's blocks, beyond the noise the tenant's blocks show
 * alone, is a level. Each block's time is given, the clock is colocd's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "kselftest_harness.h"
#include "testutil.h"
#include "serving_internal.h"
#include "mono_clock.h"

FIXTURE(serving_level)
{
	char dir[64];
	struct serving *s;
	struct sv_tenant *t;
	struct policy_decision d;
	struct coloc_err err;
};

FIXTURE_SETUP(serving_level)
{
	char bin[512];
	struct serving_config cfg = {
		.executor = tu_bin("coloc-executor", bin, sizeof(bin)),
		.cores = "0",
	};

	snprintf(self->dir, sizeof(self->dir), "/tmp/serving-level-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	cfg.cache_dir = self->dir;
	ASSERT_EQ(0, serving_create(&cfg, &self->s, &self->err)) TH_LOG("%s", self->err.msg);
	self->t = calloc(1, sizeof(*self->t));
	ASSERT_NE(NULL, self->t);
	/* a 10 ms block on core 0 */
	self->d = (struct policy_decision){ .alone_ns = 10000000, .nr_cores = 1 };
	policy_cpuset_set(&self->d.cores, 0);
}

FIXTURE_TEARDOWN(serving_level)
{
	free(self->t);
	serving_destroy(self->s);
	tu_remove_tree(self->dir);
}

/* A block of x times its alone time, alone or beside another tenant's; core 0's level after it. */
static double block(FIXTURE_DATA(serving_level) * self, double x, bool alone)
{
	sv_update_slowdown(self->s, self->t, &self->d, (uint64_t)(x * (double)self->d.alone_ns),
			   alone);
	return sv_core_level(self->s, 0, coloc_now_ns());
}

/*
 * 20 blocks alone at 0.9x and 1.1x in turn, a tenant whose blocks alone
 * vary by a tenth: the highest level they left.
 */
static double usual_blocks(FIXTURE_DATA(serving_level) * self)
{
	double highest = 1.0;

	for (int i = 0; i < 20; i++)
		highest = fmax(highest, block(self, i % 2 ? 1.1 : 0.9, true));
	return highest;
}

/*
 * A VM's slow spell with nobody else's block in flight: two blocks in a
 * row at 3x, then ten more, none beside another tenant's block. Before,
 * every block moved the core's EWMA, and the second 3x block already
 * passed its noise test (1.02 by hand); now none is a level.
 */
TEST_F(serving_level, blocks_alone__a_slow_spell_never_lifts_the_level)
{
	double highest = 1.0;

	ASSERT_EQ(1.0, usual_blocks(self));
	for (int i = 0; i < 12; i++)
		highest = fmax(highest, block(self, 3.0, true));
	TH_LOG("highest level in the spell: %.4f", highest);
	EXPECT_EQ(1.0, highest);
	EXPECT_FALSE(self->s->core_sig[0].live & POLICY_SIG_SLOWDOWN);
}

/*
 * The tenant runs beside others at its usual speed, then alone through a
 * slow spell: the spell is no level either (only a block beside another
 * tenant's is evidence of interference, and these are at their norm).
 */
TEST_F(serving_level, blocks_alone__slow_while_nobody_else_ran_after_company_is_no_level)
{
	double highest = 1.0;

	ASSERT_EQ(1.0, usual_blocks(self));
	for (int i = 0; i < 10; i++)
		highest = fmax(highest, block(self, i % 2 ? 1.1 : 0.9, false));
	for (int i = 0; i < 12; i++)
		highest = fmax(highest, block(self, 3.0, true));
	TH_LOG("highest level: %.4f", highest);
	EXPECT_EQ(1.0, highest);
}

/*
 * The same tenant slowed 2x beside another tenant's blocks, for good: a
 * slowdown beyond its noise alone, a level within a few blocks, and one
 * below the 2x it is (the test takes two standard errors off); the tenant's
 * blocks alone afterwards at their usual speed do not make it more.
 */
TEST_F(serving_level, blocks_beside_others__a_lasting_slowdown_beyond_the_noise_is_a_level)
{
	double level = 1.0;
	int first = -1;

	ASSERT_EQ(1.0, usual_blocks(self));
	for (int i = 0; i < 10; i++) {
		level = block(self, 2.0, false);
		if (level > 1.0 && first < 0)
			first = i;
	}
	TH_LOG("level after 10 blocks at 2x beside others: %.4f (first above 1.0 at block %d)",
	       level, first + 1);
	EXPECT_GT(level, 1.3);
	EXPECT_LT(level, 2.0);
	EXPECT_GE(first, 1);
	EXPECT_LE(first, 5);
	EXPECT_GE(level, block(self, 1.0, true));
}

TEST_HARNESS_MAIN
