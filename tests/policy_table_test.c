// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the policy library's model-table reads on the hand-worked table
 * (tests/policy_fixture.h): policy_find knows each entry, the core index is
 * the largest profiled count not above, the level position and latency
 * interpolate between columns, the fastest version flips as the level
 * rises (and, with intervals, only beyond its noise), the solo latency,
 * and the tables a policy cannot use are refused; an owned table
 * (policy/table.h) is released whole and left empty.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_fixture.h"
#include "table.h"

TEST(policy_find__knows_each_entry_by_name)
{
	int n = 0;

	ASSERT_NE(NULL, policy_find("fcfs"));
	ASSERT_STREQ("fcfs", policy_find("fcfs")->name);
	ASSERT_STREQ("os", policy_find("os")->name);
	ASSERT_STREQ("static", policy_find("static")->name);
	ASSERT_STREQ("temporal", policy_find("temporal")->name);
	ASSERT_STREQ("model-wise", policy_find("model-wise")->name);
	ASSERT_STREQ("layer-wise", policy_find("layer-wise")->name);
	ASSERT_STREQ("coloc", policy_find("coloc")->name);
	ASSERT_STREQ("coloc-noversions", policy_find("coloc-noversions")->name);
	ASSERT_STREQ("coloc-noblocks", policy_find("coloc-noblocks")->name);
	ASSERT_STREQ("coloc-fixedthres", policy_find("coloc-fixedthres")->name);
	ASSERT_STREQ("coloc-noprediction", policy_find("coloc-noprediction")->name);
	ASSERT_STREQ("coloc-fcfs", policy_find("coloc-fcfs")->name);
	ASSERT_STREQ("coloc-nocap", policy_find("coloc-nocap")->name);
	ASSERT_STREQ("coloc-ewma", policy_find("coloc-ewma")->name);
	ASSERT_STREQ("coloc-nospare", policy_find("coloc-nospare")->name);
	ASSERT_STREQ("coloc-timeshares", policy_find("coloc-timeshares")->name);
	ASSERT_STREQ("coloc-wide", policy_find("coloc-wide")->name);
	ASSERT_STREQ("coloc-noknee", policy_find("coloc-noknee")->name);
	ASSERT_STREQ("coloc-whole", policy_find("coloc-whole")->name);
	ASSERT_STREQ("coloc-shared", policy_find("coloc-shared")->name);
	ASSERT_STREQ("coloc-layercounts", policy_find("coloc-layercounts")->name);
	ASSERT_STREQ("coloc-priced", policy_find("coloc-priced")->name);
	ASSERT_EQ(NULL, policy_find("no-such-policy"));
	ASSERT_EQ(NULL, policy_find(NULL));
	for (const struct policy_entry *e; (e = policy_entry_at(n)); n++) {
		ASSERT_EQ(e, policy_find(e->name));
		ASSERT_NE(NULL, e->description);
		ASSERT_NE(NULL, e->create);
		ASSERT_NE(NULL, e->decide);
		ASSERT_NE(NULL, e->destroy);
	}
	ASSERT_EQ(22, n);
	ASSERT_EQ(NULL, policy_entry_at(-1));
}

TEST(model__core_index_is_the_largest_profiled_count_not_above)
{
	/* VELTAIR's tables: 8, 16, ... 64 cores */
	static const int counts[] = { 8, 16, 24, 32, 40, 48, 56, 64 };
	struct policy_costs m = { .nr_core_counts = 8, .core_counts = counts };

	ASSERT_EQ(-1, policy_costs_core_index(&m, 7));
	ASSERT_EQ(0, policy_costs_core_index(&m, 8));
	ASSERT_EQ(0, policy_costs_core_index(&m, 15));
	ASSERT_EQ(6, policy_costs_core_index(&m, 60));
	ASSERT_EQ(7, policy_costs_core_index(&m, 64));
	ASSERT_EQ(7, policy_costs_core_index(&m, 200));
}

TEST(model__level_pos_and_latency_interpolate_between_columns)
{
	static const double levels[] = { 1.0, 1.5, 2.5 };
	static const int counts[] = { 1 };
	static const uint64_t ns[] = { 300, 390, 590 };
	struct policy_costs m = {
		.nr_layers = 1,
		.nr_versions = 1,
		.nr_core_counts = 1,
		.nr_levels = 3,
		.core_counts = counts,
		.level_slowdown = levels,
		.latency_ns = ns,
	};

	ASSERT_EQ(0, policy_costs_check(&m, NULL));
	/* (1.25 - 1.0) / (1.5 - 1.0) = 0.5; 1 + (2.0 - 1.5) / (2.5 - 1.5) = 1.5 */
	ASSERT_EQ(0.5, policy_costs_level_pos(&m, 1.25));
	ASSERT_EQ(1.5, policy_costs_level_pos(&m, 2.0));
	ASSERT_EQ(2.0, policy_costs_level_pos(&m, 3.0));
	ASSERT_EQ(0.0, policy_costs_level_pos(&m, 0.9)); /* faster than alone: alone */
	ASSERT_EQ(0.0, policy_costs_level_pos(&m, 0)); /* unknown: alone */
	/* 300 + (390 - 300) * 0.5 = 345; 390 + (590 - 390) * 0.5 = 490 */
	ASSERT_EQ(345, policy_costs_latency(&m, 0, 0, 0, 0.5));
	ASSERT_EQ(490, policy_costs_latency(&m, 0, 0, 0, 1.5));
	ASSERT_EQ(590, policy_costs_latency(&m, 0, 0, 0, 2.0));
}

TEST(model__fastest_version_flips_as_the_level_rises)
{
	uint64_t ns;

	fill_tiny();
	ASSERT_EQ(0, policy_costs_check(&tiny, NULL));
	ASSERT_EQ(2, policy_costs_fastest_version(&tiny, 0, 2, 0, &ns));
	ASSERT_EQ(250000, ns);
	ASSERT_EQ(0, policy_costs_fastest_version(&tiny, 0, 2, 1, &ns));
	ASSERT_EQ(390000, ns);
	/* layer 1 has no v2: never chosen, even where 0 would be "fastest" */
	ASSERT_EQ(1, policy_costs_fastest_version(&tiny, 1, 0, 0, &ns));
	ASSERT_EQ(380000, ns);
}

/*
 * One layer of three versions on one core count (counts[0]), with
 * intervals: ns, lo and hi are [version][level] over nr_levels levels.
 */
static struct policy_costs one_layer_three_versions(const int *counts, const double *levels,
						    int nr_levels, const uint64_t *ns,
						    const uint64_t *lo, const uint64_t *hi)
{
	return (struct policy_costs){
		.nr_layers = 1,
		.nr_versions = 3,
		.nr_core_counts = 1,
		.nr_levels = nr_levels,
		.core_counts = counts,
		.level_slowdown = levels,
		.latency_ns = ns,
		.latency_lo_ns = lo,
		.latency_hi_ns = hi,
	};
}

/* m's fastest version of layer 0 on its first core count at level position pos is version, at ns. */
static void fastest_is(struct __test_metadata *_metadata, const struct policy_costs *m, double pos,
		       int version, uint64_t ns)
{
	uint64_t got;

	ASSERT_EQ(version, policy_costs_fastest_version(m, 0, 0, pos, &got))
	TH_LOG("at level position %.1f", pos);
	ASSERT_EQ(ns, got) TH_LOG("at level position %.1f", pos);
}

/*
 * With confidence intervals a later version is faster only when its interval
 * lies wholly below the winner's so far. Three versions of one layer, alone
 * and at one stressed column: v1's median is below v0's alone but the
 * intervals overlap (95-105 vs 100-110): v0 stays; v2's (80-90) is below
 * both: v2. At the stressed column v1 (150-160) clears v0 (200-220) and v2
 * (190-230) does not clear v1. Half way (pos 0.5) every bound is
 * interpolated: v0 150-165, v1 122.5-132.5 wins, v2 135-160 overlaps it.
 * Without the intervals the lowest median wins everywhere.
 */
TEST(model__with_intervals_a_version_wins_only_beyond_its_noise)
{
	static const double levels[] = { 1.0, 2.0 };
	static const int counts[] = { 1 };
	/* [version][level]: median, lower and upper bound */
	static const uint64_t ns[] = { 105, 210, 99, 155, 85, 200 };
	static const uint64_t lo[] = { 100, 200, 95, 150, 80, 190 };
	static const uint64_t hi[] = { 110, 220, 105, 160, 90, 230 };
	struct policy_costs m = one_layer_three_versions(counts, levels, 2, ns, lo, hi);
	uint64_t got;

	ASSERT_EQ(0, policy_costs_check(&m, NULL));
	fastest_is(_metadata, &m, 0, 2, 85);
	fastest_is(_metadata, &m, 1, 1, 155);
	fastest_is(_metadata, &m, 0.5, 1, 127);
	/* v2 overlapping v0 alone: v0 */
	{
		static const uint64_t lo2[] = { 100, 200, 95, 150, 80, 190 };
		static const uint64_t hi2[] = { 110, 220, 105, 160, 101, 230 };

		m.latency_lo_ns = lo2;
		m.latency_hi_ns = hi2;
		fastest_is(_metadata, &m, 0, 0, 105);
	}
	m.latency_lo_ns = NULL;
	ASSERT_EQ(-EINVAL, policy_costs_check(&m, NULL));
	m.latency_hi_ns = NULL;
	ASSERT_EQ(2, policy_costs_fastest_version(&m, 0, 0, 0, &got));
	ASSERT_EQ(1, policy_costs_fastest_version(&m, 0, 0, 1, &got));
}

/*
 * At a level the fastest alone keeps the lead unless an interval says
 * otherwise. MobileNet-V2's layer 40 on 2 cores, as the Zen 4 VM's profile
 * of 2026-12-07 16:23 measured it (ns, alone then stress levels 50 and 100):
 * alone v1 (108.7-118.2 µs) clears v0 (120.9-155.0) and v2's median is
 * higher, so v1 is the fastest alone. Stressed, every interval spans
 * 5-1000 % of its median: none clears v1's, so v1 stays (at column 1 v0's
 * median is 576 µs, 5x v1's). A rule that tried version 0 first kept v0
 * there, since v1's interval does not clear v0's either.
 */
TEST(model__at_a_level_the_fastest_alone_keeps_the_lead_no_interval_takes)
{
	static const double levels[] = { 1.0, 1.2, 1.3 };
	static const int counts[] = { 2 };
	/* [version][level] */
	static const uint64_t ns[] = { 135291, 575766, 116874, 111886, 116132,
				       112377, 154309, 136002, 136322 };
	static const uint64_t lo[] = { 120850, 115512, 110053, 108652, 111416,
				       111495, 132047, 134981, 130905 };
	static const uint64_t hi[] = { 154970, 1064602, 121610, 118156, 585871,
				       119147, 161831,	826728, 4303376 };
	struct policy_costs m = one_layer_three_versions(counts, levels, 3, ns, lo, hi);

	ASSERT_EQ(0, policy_costs_check(&m, NULL));
	fastest_is(_metadata, &m, 0, 1, 111886);
	fastest_is(_metadata, &m, 1, 1, 116132);
	fastest_is(_metadata, &m, 2, 1, 112377);
	/* half way to column 1: (111886 + 116132) / 2 */
	fastest_is(_metadata, &m, 0.5, 1, 114009);
}

TEST(model__solo_ns_is_the_fastest_whole_model_on_the_largest_fitting_count)
{
	fill_tiny();
	ASSERT_EQ(540000, policy_costs_solo_ns(&tiny, 8));
	ASSERT_EQ(960000, policy_costs_solo_ns(&tiny, 3));
	ASSERT_EQ(1870000, policy_costs_solo_ns(&tiny, 1));
	ASSERT_EQ(0, policy_costs_solo_ns(&tiny, 0));
}

TEST(model__check_rejects_tables_a_policy_cannot_use)
{
	static const int bad_counts[] = { 2, 1 };
	static const double bad_levels[] = { 1.0, 0.9 };
	static const uint64_t ns[] = {
		0, 7, 5, 5, 5, 5
	}; /* 2 core counts x 2 levels, from ns or ns + 2 */
	struct policy_costs m = {
		.nr_layers = 1,
		.nr_versions = 1,
		.nr_core_counts = 2,
		.nr_levels = 2,
		.core_counts = tiny_counts,
		.level_slowdown = tiny_levels,
		.latency_ns = ns,
	};
	struct coloc_err err = { 0 };

	/* cell (layer 0, v0, 1 core, alone) is 0: nothing runs alone on one core */
	ASSERT_EQ(-EINVAL, policy_costs_check(&m, &err));
	ASSERT_NE(NULL, strstr(err.msg, "layer 0 has no version measured alone at 1 cores"));
	m.latency_ns = ns + 2;
	ASSERT_EQ(0, policy_costs_check(&m, NULL));
	m.core_counts = bad_counts;
	ASSERT_EQ(-EINVAL, policy_costs_check(&m, NULL));
	m.core_counts = tiny_counts;
	m.level_slowdown = bad_levels;
	ASSERT_EQ(-EINVAL, policy_costs_check(&m, NULL));
}

TEST(policy_table_free__releases_every_array_and_leaves_an_empty_table)
{
	struct policy_table t = { .name = "m", .note = "clamped" };

	t.core_counts = malloc(2 * sizeof(*t.core_counts));
	t.level_slowdown = malloc(2 * sizeof(*t.level_slowdown));
	t.latency_ns = malloc(8 * sizeof(*t.latency_ns));
	t.latency_lo_ns = malloc(8 * sizeof(*t.latency_lo_ns));
	t.latency_hi_ns = malloc(8 * sizeof(*t.latency_hi_ns));
	t.layer_ops = malloc(2 * sizeof(*t.layer_ops));
	t.costs.latency_ns = t.latency_ns;
	t.costs.nr_layers = 2;
	policy_table_free(&t); /* ASan reports any array left behind */
	ASSERT_EQ(NULL, t.core_counts);
	ASSERT_EQ(NULL, t.latency_ns);
	ASSERT_EQ(NULL, t.latency_lo_ns);
	ASSERT_EQ(NULL, t.layer_ops);
	ASSERT_EQ(NULL, t.costs.latency_ns);
	ASSERT_EQ(0, t.costs.nr_layers);
	ASSERT_EQ('\0', t.name[0]);
	ASSERT_EQ('\0', t.note[0]);
	policy_table_free(&t); /* an empty table frees as nothing */
	ASSERT_EQ(NULL, t.level_slowdown);
}

TEST_HARNESS_MAIN
