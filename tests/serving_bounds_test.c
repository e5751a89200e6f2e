// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving core's time bounds made of profile cells (daemon/serving_overrun.c's
 * overrun deadline, serving_events.c's hang deadline) on commands built by
 * hand: a model of 8192 layers whose cells sit at the profile format's cap
 * (1e15 ns, executor/profile_parse.c) makes bounds past 2^64 ns, which must
 * read as never (UINT64_MAX), not wrap to a time that comes; bounds that fit
 * are the plain arithmetic, worked out here.
 */
#include <stdint.h>
#include <string.h>

#include "kselftest_harness.h"
#include "serving_internal.h"
#include "util.h"

#define CELL_CAP_NS 1000000000000000ull /* profile_parse.c's PROFILE_MAX_LATENCY_NS */
#define LAYERS 8192 /* a colocd model's most */
#define SUBMIT_NS 5000000000000ull /* the command's start: 5,000 s after boot */

/* A command of nr blocks, each of layers / nr layers whose cells are cell_ns each. */
static void command(struct sv_exec *x, struct sv_plan_block *plan, int nr, uint64_t cell_ns)
{
	memset(x, 0, sizeof(*x));
	memset(plan, 0, sizeof(*plan) * (size_t)nr);
	for (int i = 0; i < nr; i++) {
		plan[i].first = i * (LAYERS / nr);
		plan[i].last = (i + 1) * (LAYERS / nr);
		/* a block's time alone is the sum of its layers' cells */
		plan[i].alone_ns = (uint64_t)(LAYERS / nr) * cell_ns;
		plan[i].predicted_ns = plan[i].alone_ns;
	}
	x->plan = plan;
	x->plan_nr = nr;
	x->busy = true;
	x->blk_submit_ns = SUBMIT_NS;
}

TEST(saturating_helpers__stop_at_the_top)
{
	EXPECT_EQ(7ull, coloc_sat_add_u64(3, 4));
	EXPECT_EQ(UINT64_MAX, coloc_sat_add_u64(UINT64_MAX - 1, 2));
	EXPECT_EQ(UINT64_MAX - 1, coloc_sat_add_u64(UINT64_MAX - 2, 1));
	EXPECT_EQ(12ull, coloc_sat_mul_u64(3, 4));
	EXPECT_EQ(0ull, coloc_sat_mul_u64(0, UINT64_MAX));
	/* 8 x 8192 x 1e15 = 6.6e19 > 2^64 = 1.8e19 */
	EXPECT_EQ(UINT64_MAX, coloc_sat_mul_u64(8, LAYERS * CELL_CAP_NS));
	EXPECT_EQ(2 * LAYERS * CELL_CAP_NS, coloc_sat_mul_u64(2, LAYERS * CELL_CAP_NS));
}

/* 8192 cells at the cap in two blocks: 8.2e18 ns alone, 8x that is past 2^64: never late. */
TEST(overrun_deadline__never_for_cells_at_the_cap)
{
	struct sv_plan_block plan[2];
	struct sv_tenant t = { 0 };
	struct sv_exec x;

	command(&x, plan, 2, CELL_CAP_NS);
	EXPECT_EQ(UINT64_MAX, sv_overrun_deadline(&t, &x));
	/* one block of it: the same */
	command(&x, plan, 1, CELL_CAP_NS);
	EXPECT_EQ(UINT64_MAX, sv_overrun_deadline(&t, &x));
	/* two strikes: 2x, 1.6e19 ns, fits: the start + 2x + the slack, exactly */
	t.strikes = 2;
	EXPECT_EQ(SUBMIT_NS + 2 * LAYERS * CELL_CAP_NS + SV_OVERRUN_SLACK_NS,
		  sv_overrun_deadline(&t, &x));
}

/* Cells that fit: the start + 8x the sum of the blocks + 10 ms, halved by strikes. */
TEST(overrun_deadline__the_plain_sum_where_it_fits)
{
	struct sv_plan_block plan[4];
	struct sv_tenant t = { 0 };
	struct sv_exec x;

	/* 8192 layers of 1 us: 8.192 ms alone, in 4 blocks */
	command(&x, plan, 4, 1000);
	EXPECT_EQ(SUBMIT_NS + 8 * 8192000ull + SV_OVERRUN_SLACK_NS, sv_overrun_deadline(&t, &x));
	t.strikes = 1;
	EXPECT_EQ(SUBMIT_NS + 4 * 8192000ull + SV_OVERRUN_SLACK_NS, sv_overrun_deadline(&t, &x));
}

/* 50 x 8.2e18 ns is past 2^64: never hung, shared or not, late or not. */
TEST(hang_deadline__never_for_cells_at_the_cap)
{
	struct sv_plan_block plan[2];
	struct sv_exec x;

	command(&x, plan, 2, CELL_CAP_NS);
	EXPECT_EQ(UINT64_MAX, sv_hang_deadline(&x, 0));
	EXPECT_EQ(UINT64_MAX, sv_hang_deadline(&x, 64));
	x.late = true;
	EXPECT_EQ(UINT64_MAX, sv_hang_deadline(&x, 0));
	/* a cell of 1e13 ns: 8.2e16 alone, x 50 = 4.1e18 fits, x 8 sharing = 3.3e19 does not */
	command(&x, plan, 2, 10000000000000ull);
	EXPECT_EQ(SUBMIT_NS + 50 * LAYERS * 10000000000000ull + SERVING_HANG_SLACK_NS,
		  sv_hang_deadline(&x, 0));
	EXPECT_EQ(UINT64_MAX, sv_hang_deadline(&x, 8));
}

/* Cells that fit: the start + 50x the larger of prediction and table (x sharing) + 2 s, doubled once late. */
TEST(hang_deadline__the_plain_sum_where_it_fits)
{
	struct sv_plan_block plan[2];
	struct sv_exec x;

	command(&x, plan, 2, 1000); /* 8.192 ms alone */
	plan[0].predicted_ns = 3 * plan[0].alone_ns; /* the larger counts: 16.384 ms in all */
	EXPECT_EQ(SUBMIT_NS + 50 * 16384000ull + SERVING_HANG_SLACK_NS, sv_hang_deadline(&x, 0));
	EXPECT_EQ(SUBMIT_NS + 50 * 3 * 16384000ull + SERVING_HANG_SLACK_NS,
		  sv_hang_deadline(&x, 3));
	x.late = true;
	EXPECT_EQ(SUBMIT_NS + 2 * (50 * 16384000ull + SERVING_HANG_SLACK_NS),
		  sv_hang_deadline(&x, 1));
}

TEST_HARNESS_MAIN
