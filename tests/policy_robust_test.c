// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests that coloc's learnt prediction (coloc_predict.c) survives one
 * stalled block: after a steady stream, one block 20x its prediction (the
 * VM descheduled a vCPU, a page-fault storm) moves neither the prediction
 * of a block not yet measured, nor coloc-ewma's, nor the tenant's margin
 * by more than 1.5x; and that a real shift (every block from then on 1.5x
 * or 2x slower) is still learnt within a few blocks. The engine's state is
 * read directly (coloc_internal.h): the margin is not in a decision.
 */
#include <math.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_engine_fixture.h"

/* tiny's whole model on 4 cores (540 us in the table) and on 2 (960 us) */
#define FOUR_RAW_NS 540000.0
#define TWO_RAW_NS 960000.0
/* the steady stream: 1.2x the table, +-5 % in turn, one block a millisecond */
#define STEADY_RATIO 1.2
#define STEADY_BLOCKS 30
#define GAP_NS 1000000ULL

static struct coloc_tenant *engine_tenant(struct engine *g)
{
	return &((struct coloc_state *)g->state)->t[0];
}

/* The engine's prediction of tiny's whole model on 2^ci cores. */
static double engine_predict_whole(struct engine *g, int ci, double raw)
{
	return engine_predict(g, 0, 3, ci, raw);
}

static double engine_margin(struct engine *g)
{
	return coloc_aged_margin(engine_tenant(g), g->now);
}

/* The 4-core block measured at ratio x its table, starting GAP_NS after the last one ended. */
static void engine_measure(struct engine *g, double ratio)
{
	uint64_t m = (uint64_t)(ratio * FOUR_RAW_NS);

	g->d.decided_ns = g->now + GAP_NS;
	g->now = g->d.decided_ns + m;
	g->e->block_done(g->state, &g->d, m);
	g->n++;
}

static void engine_steady(struct engine *g, double ratio, int blocks)
{
	for (int i = 0; i < blocks; i++)
		engine_measure(g, ratio * (g->n % 2 ? 0.95 : 1.05));
}

/* What a plan sees of the engine: the 2-core block (never measured), the 4-core one, the margin. */
struct seen {
	double two, four, margin;
};

static struct seen engine_seen(struct engine *g)
{
	return (struct seen){ engine_predict_whole(g, 1, TWO_RAW_NS),
			      engine_predict_whole(g, 2, FOUR_RAW_NS), engine_margin(g) };
}

/*
 * After 30 steady blocks, one measured 20x the 4-core block's prediction
 * (~12 ms), then 10 steady again: after each, the prediction of the 2-core
 * block (the tenant's correction and per-block cost), of the 4-core block
 * (its median under coloc; the EWMAs under coloc-ewma) and the tenant's
 * margin stay within 1.5x of what they were before the stall. Unclipped,
 * the EWMAs moved coloc's margin from 1.10 to 5.9 and the 2-core
 * prediction to 6x.
 */
static void one_stall(struct __test_metadata *_metadata, FIXTURE_DATA(pol) * self, const char *name)
{
	struct engine g;
	struct seen steady, s;

	ASSERT_TRUE(engine_start(self, &g, name));
	ASSERT_EQ(540000ULL, g.d.predicted_ns);
	engine_steady(&g, STEADY_RATIO, STEADY_BLOCKS);
	steady = engine_seen(&g);
	ASSERT_TRUE(within(steady.four, STEADY_RATIO * FOUR_RAW_NS, 1.1));
	ASSERT_LT(steady.margin, 1.2);

	engine_measure(&g, 20 * steady.four / FOUR_RAW_NS);
	for (int i = 0; i <= 10; i++) {
		s = engine_seen(&g);
		TH_LOG("%s, %d after the stall: 2 cores %.0f us (steady %.0f), 4 cores %.0f us (%.0f), margin %.3f (%.3f)",
		       name, i, s.two / 1e3, steady.two / 1e3, s.four / 1e3, steady.four / 1e3,
		       s.margin, steady.margin);
		EXPECT_TRUE(within(s.two, steady.two, 1.5));
		EXPECT_TRUE(within(s.four, steady.four, 1.5));
		EXPECT_TRUE(within(s.margin, steady.margin, 1.5));
		engine_steady(&g, STEADY_RATIO, 1);
	}
	g.e->destroy(g.state);
}

TEST_F(pol, coloc_block_done__one_stalled_block_moves_no_prediction_nor_the_margin_past_1_5x)
{
	one_stall(_metadata, self, "coloc");
}

TEST_F(pol, coloc_block_done__one_stalled_block_moves_the_ewma_prediction_no_more_than_1_5x)
{
	one_stall(_metadata, self, "coloc-ewma");
}

/*
 * After 30 steady blocks, every block shift x slower: within 6 blocks the
 * 4-core block is predicted within 10 % of its new time, by the EWMAs
 * (coloc-ewma) and by coloc, and the 2-core block's prediction has moved
 * by at least half the shift's square root (the tenant's correction
 * carries its share: the block's own correction takes the rest).
 */
static void real_shift(struct __test_metadata *_metadata, FIXTURE_DATA(pol) * self,
		       const char *name, double shift)
{
	struct engine g;
	struct seen steady, s;

	ASSERT_TRUE(engine_start(self, &g, name));
	ASSERT_EQ(540000ULL, g.d.predicted_ns);
	engine_steady(&g, STEADY_RATIO, STEADY_BLOCKS);
	steady = engine_seen(&g);
	for (int i = 0; i < 6; i++) {
		engine_measure(&g, shift * STEADY_RATIO);
		s = engine_seen(&g);
		TH_LOG("%s, %.1fx, %d blocks on: 4 cores %.0f us (new %.0f), 2 cores %.0f us (steady %.0f), margin %.3f",
		       name, shift, i + 1, s.four / 1e3, shift * STEADY_RATIO * FOUR_RAW_NS / 1e3,
		       s.two / 1e3, steady.two / 1e3, s.margin);
	}
	EXPECT_TRUE(within(s.four, shift * STEADY_RATIO * FOUR_RAW_NS, 1.1));
	EXPECT_LT(1 + (sqrt(shift) - 1) / 2, s.two / steady.two);
	g.e->destroy(g.state);
}

TEST_F(pol, coloc_block_done__a_shift_to_1_5x_is_learnt_within_six_blocks)
{
	real_shift(_metadata, self, "coloc", 1.5);
	real_shift(_metadata, self, "coloc-ewma", 1.5);
}

TEST_F(pol, coloc_block_done__a_shift_to_2x_is_learnt_within_six_blocks)
{
	real_shift(_metadata, self, "coloc", 2.0);
	real_shift(_metadata, self, "coloc-ewma", 2.0);
}

TEST_HARNESS_MAIN
