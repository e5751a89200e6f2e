// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests that coloc predicts a block of a class it has not measured (layers
 * cut where no block of the tenant was cut before) from the blocks on its
 * own core count: a tenant whose 1-core blocks run at 1.3x the table and
 * whose 4-core blocks run at 0.8x has a new 4-core block predicted near
 * 0.8x and a new 1-core block near 1.3x, where the tenant's correction
 * alone (learnt on both) is 20-25 % off; a class once measured three times
 * predicts from its own median again; coloc-ewma is unchanged. A tenant
 * whose new cuts its own correction has predicted better than their core
 * count's blocks has the next predicted by its correction. The engine's
 * state is read directly (coloc_internal.h).
 * docs/design/coloc-policy.md, "A block never seen".
 */
#include <math.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_engine_fixture.h"

/* tiny's layers at version 0 (policy_fixture.h), µs: 1 core 900 400 600, 4 cores 300 130 200 */
#define ONE_WHOLE_NS 1900000.0
#define FOUR_WHOLE_NS 630000.0
#define FOUR_L01_NS 430000.0 /* layers 0-1 on 4 cores */
#define ONE_L12_NS 1000000.0 /* layers 1-2 on 1 core */
#define ONE_RATIO 1.3
#define FOUR_RATIO 0.8
#define GAP_NS 1000000ULL

/* engine_start with every layer at version 0, the prices the tests work from. */
static bool engine_start_v0(FIXTURE_DATA(pol) * self, struct engine *g, const char *name)
{
	if (!engine_start(self, g, name))
		return false;
	memset(g->versions, 0, sizeof(g->versions));
	return true;
}

/* Layers [first, last) on nr cores measured at ratio x raw_ns, GAP_NS after the last block. */
static void engine_measure(struct engine *g, int first, int last, int nr, double raw_ns,
			   double ratio)
{
	uint64_t m = (uint64_t)(ratio * raw_ns * (g->n % 2 ? 0.97 : 1.03));

	g->d.first_layer = first;
	g->d.last_layer = last;
	g->d.nr_cores = nr;
	g->d.decided_ns = g->now + GAP_NS;
	g->now = g->d.decided_ns + m;
	g->e->block_done(g->state, &g->d, m);
	g->n++;
}

/* 30 whole-model blocks on 1 core at 1.3x and 30 on 4 cores at 0.8x, in turn. */
static void engine_two_speeds(struct engine *g)
{
	for (int i = 0; i < 30; i++) {
		engine_measure(g, 0, 3, 1, ONE_WHOLE_NS, ONE_RATIO);
		engine_measure(g, 0, 3, 4, FOUR_WHOLE_NS, FOUR_RATIO);
	}
}

TEST_F(pol, coloc_predict__a_block_never_measured_is_predicted_from_its_core_counts_blocks)
{
	struct engine g;
	double four, one;

	ASSERT_TRUE(engine_start_v0(self, &g, "coloc"));
	engine_two_speeds(&g);
	/* the classes measured: their own medians */
	ASSERT_TRUE(
		within(engine_predict(&g, 0, 3, 0, ONE_WHOLE_NS), ONE_RATIO * ONE_WHOLE_NS, 1.05));
	ASSERT_TRUE(within(engine_predict(&g, 0, 3, 2, FOUR_WHOLE_NS), FOUR_RATIO * FOUR_WHOLE_NS,
			   1.05));
	four = engine_predict(&g, 0, 2, 2, FOUR_L01_NS);
	one = engine_predict(&g, 1, 3, 0, ONE_L12_NS);
	TH_LOG("never measured: layers 0-1 on 4 cores %.0f us (at 0.8x: %.0f), layers 1-2 on 1 core %.0f us (at 1.3x: %.0f)",
	       four / 1e3, FOUR_RATIO * FOUR_L01_NS / 1e3, one / 1e3, ONE_RATIO * ONE_L12_NS / 1e3);
	EXPECT_TRUE(within(four, FOUR_RATIO * FOUR_L01_NS, 1.1));
	EXPECT_TRUE(within(one, ONE_RATIO * ONE_L12_NS, 1.1));
	g.e->destroy(g.state);
}

TEST_F(pol, coloc_predict__a_class_measured_three_times_predicts_from_its_own_median)
{
	struct engine g;
	double four;

	ASSERT_TRUE(engine_start_v0(self, &g, "coloc"));
	engine_two_speeds(&g);
	/* layers 0-1 on 4 cores run at 1.5x, unlike the core count's other blocks */
	for (int i = 0; i < 3; i++)
		engine_measure(&g, 0, 2, 4, FOUR_L01_NS, 1.5);
	four = engine_predict(&g, 0, 2, 2, FOUR_L01_NS);
	TH_LOG("layers 0-1 on 4 cores after three at 1.5x: %.0f us (%.0f)", four / 1e3,
	       1.5 * FOUR_L01_NS / 1e3);
	EXPECT_TRUE(within(four, 1.5 * FOUR_L01_NS, 1.05));
	g.e->destroy(g.state);
}

/*
 * The 4-core blocks are mostly the whole model, at 0.8x its table; every
 * new 4-core cut of it runs at 1.3x, as the 1-core blocks do, so the
 * tenant's correction (learnt on both, near 1.05x) is nearer than the core
 * count's 0.8x: after six such cuts, each between two whole-model blocks,
 * the next new cut is predicted by the tenant's correction and per-block
 * cost, nearer its time than by the core count's median.
 */
TEST_F(pol, coloc_predict__new_cuts_the_tenants_correction_predicted_better_are_predicted_by_it)
{
	/* cuts never measured three times, and their table times on 4 cores, µs: 300 130 200 a layer */
	static const int cut[6][2] = { { 0, 1 }, { 1, 2 }, { 1, 3 }, { 2, 3 }, { 0, 1 }, { 1, 2 } };
	static const double cut_ns[6] = { 300e3, 130e3, 330e3, 200e3, 300e3, 130e3 };
	struct engine g;
	struct coloc_tenant *ct;
	double group, next;

	ASSERT_TRUE(engine_start_v0(self, &g, "coloc"));
	engine_two_speeds(&g);
	ct = &((struct coloc_state *)g.state)->t[0];
	for (int i = 0; i < 6; i++) {
		engine_measure(&g, 0, 3, 4, FOUR_WHOLE_NS, FOUR_RATIO);
		engine_measure(&g, 0, 3, 4, FOUR_WHOLE_NS, FOUR_RATIO);
		engine_measure(&g, cut[i][0], cut[i][1], 4, cut_ns[i], ONE_RATIO);
	}
	TH_LOG("relative errors of the two predictions of new cuts: own %.3f, core count's %.3f",
	       ct->unseen_err_own, ct->unseen_err_group);
	group = ct->grp[2].median * FOUR_L01_NS;
	next = engine_predict(&g, 0, 2, 2, FOUR_L01_NS);
	TH_LOG("layers 0-1 on 4 cores, never measured: %.0f us (at 1.3x: %.0f, by the core count's median: %.0f)",
	       next / 1e3, ONE_RATIO * FOUR_L01_NS / 1e3, group / 1e3);
	EXPECT_LT(ct->unseen_err_own, ct->unseen_err_group);
	EXPECT_EQ(coloc_aged_corr(ct, g.now) * FOUR_L01_NS + coloc_aged_fixed(ct, g.now), next);
	EXPECT_LT(fabs(next - ONE_RATIO * FOUR_L01_NS), fabs(group - ONE_RATIO * FOUR_L01_NS));
	g.e->destroy(g.state);
}

TEST_F(pol, coloc_predict__coloc_ewma_predicts_a_new_block_from_the_tenants_correction)
{
	struct engine g;
	struct coloc_tenant *ct;

	ASSERT_TRUE(engine_start_v0(self, &g, "coloc-ewma"));
	engine_two_speeds(&g);
	ct = &((struct coloc_state *)g.state)->t[0];
	/* its class never measured: the tenant's correction and per-block cost, nothing else */
	EXPECT_EQ(coloc_aged_corr(ct, g.now) * FOUR_L01_NS + coloc_aged_fixed(ct, g.now),
		  engine_predict(&g, 0, 2, 2, FOUR_L01_NS));
	g.e->destroy(g.state);
}

TEST_HARNESS_MAIN
