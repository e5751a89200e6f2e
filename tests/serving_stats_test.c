// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving statistics (daemon/serving_stats.c) from hand-made numbers:
 * the prediction error over blocks, the nearest-rank percentile, and rates
 * over the last window only.
 */
#include <math.h>
#include <stdint.h>
#include "kselftest_harness.h"
#include "serving_stats.h"

TEST(serving_stats__block_mape_and_bias_over_two_blocks)
{
	struct serving_stats st = { 0 };
	struct serving_stats_summary sum;

	/* 900 predicted, 1000 measured: +0.1; 1500 predicted, 1000 measured: -0.5 */
	serving_stats_block(&st, 900, 1000);
	serving_stats_block(&st, 1500, 1000);
	/* no prediction, or no measurement: nothing to compare, not counted */
	serving_stats_block(&st, 0, 1000);
	serving_stats_block(&st, 1000, 0);
	serving_stats_summarise(&st, 0, &sum);
	EXPECT_EQ(2, sum.blocks);
	EXPECT_LE(fabs((0.1 + 0.5) / 2 - sum.prediction_mape), 1e-12);
	EXPECT_LE(fabs((0.1 - 0.5) / 2 - sum.prediction_bias), 1e-12);
}

TEST(serving_stats__percentile_is_nearest_rank)
{
	uint64_t v[10] = { 10, 1, 9, 2, 8, 3, 7, 4, 6, 5 }, one[1] = { 42 };

	/* nearest rank: ceil(p/100 * n)-th smallest */
	EXPECT_EQ(5, serving_stats_percentile(v, 10, 50));
	EXPECT_EQ(10, serving_stats_percentile(v, 10, 95));
	EXPECT_EQ(10, serving_stats_percentile(v, 10, 99));
	EXPECT_EQ(1, serving_stats_percentile(v, 10, 1));
	EXPECT_EQ(42, serving_stats_percentile(one, 1, 50));
	EXPECT_EQ(0, serving_stats_percentile(v, 0, 50));
}

TEST(serving_stats__rates_count_the_last_window_only)
{
	struct serving_stats st = { 0 };
	struct serving_stats_summary sum;
	uint64_t now = 100 * SERVING_STATS_WINDOW_NS;

	/* 5 old arrivals, out of the window; 20 recent ones, 15 served, 12 in QoS */
	for (int i = 0; i < 5; i++)
		serving_stats_offered(&st, now - 2 * SERVING_STATS_WINDOW_NS);
	for (int i = 0; i < 20; i++)
		serving_stats_offered(&st, now - 1000);
	for (int i = 0; i < 15; i++)
		serving_stats_served(&st, now - 500, i < 12 ? 1000 : 3000, 2000, NULL);
	serving_stats_summarise(&st, now, &sum);
	EXPECT_EQ(25, sum.offered);
	EXPECT_EQ(20.0 / (SERVING_STATS_WINDOW_NS / 1e9), sum.offered_rate);
	EXPECT_EQ(15.0 / (SERVING_STATS_WINDOW_NS / 1e9), sum.served_rate);
	EXPECT_EQ(12.0 / 15.0, sum.within_qos);
	EXPECT_EQ(1000, sum.p50_ns);
	EXPECT_EQ(3000, sum.p95_ns);
}

TEST_HARNESS_MAIN
