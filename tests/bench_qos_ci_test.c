// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tools/bench-qos-ci.awk, bench-qos's bootstrap intervals, run as bench-qos
 * runs it (awk -f, searches on stdin). The expectations are worked by hand
 * from the order statistics of a resampled median: of 3 searches, the
 * median of a resample is the least one with probability 7/27 (two or three
 * draws of it), far above 2.5 %, so the 95 % interval is exactly [min, max];
 * of 9 searches 1..9 it is 1 with probability ~0.1 %, so the interval lies
 * strictly inside. A ratio's groups of as many searches are resampled as
 * pairs (search k of each drawn together), others each on its own.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "bench_qos_awk.h"

FIXTURE(bench_qos_ci)
{
	char unused;
};

FIXTURE_SETUP(bench_qos_ci)
{
}

FIXTURE_TEARDOWN(bench_qos_ci)
{
}

/* Runs the script in mode on input; its output in out, its exit status returned. */
static int ci(const char *mode, const char *input, char *out, size_t len)
{
	char vars[64];

	snprintf(vars, sizeof(vars), "-v mode=%s", mode);
	return bench_qos_awk("bench-qos-ci.awk", vars, input, out, len);
}

TEST_F(bench_qos_ci, cell__three_searches_span_their_least_and_greatest)
{
	char out[256];
	double m, lo, hi;

	ASSERT_EQ(0, ci("cell", "c 10\\nc 12\\nc 11\\n", out, sizeof(out)));
	ASSERT_EQ(3, sscanf(out, "%lf %lf %lf", &m, &lo, &hi)) TH_LOG("%s", out);
	ASSERT_EQ(11.0, m);
	ASSERT_EQ(10.0, lo);
	ASSERT_EQ(12.0, hi);
}

TEST_F(bench_qos_ci, cell__nine_searches_give_an_interval_inside_their_range)
{
	char out[256];
	double m, lo, hi;

	ASSERT_EQ(0, ci("cell", "c 9\\nc 1\\nc 8\\nc 2\\nc 7\\nc 3\\nc 6\\nc 4\\nc 5\\n", out,
			sizeof(out)));
	ASSERT_EQ(3, sscanf(out, "%lf %lf %lf", &m, &lo, &hi)) TH_LOG("%s", out);
	ASSERT_EQ(5.0, m);
	ASSERT_LT(1.0, lo);
	ASSERT_GE(5.0, lo);
	ASSERT_LE(5.0, hi);
	ASSERT_GT(9.0, hi);
}

TEST_F(bench_qos_ci, cell__one_search_has_no_interval)
{
	char out[256];

	ASSERT_EQ(0, ci("cell", "c 42\\n", out, sizeof(out)));
	ASSERT_STREQ("42.000 n/a n/a\n", out);
}

/* A ratio's line, parsed: ratio, interval, verdict and best baseline. */
struct ratio {
	double r, lo, hi;
	char verdict[16], best[32];
	char out[256];
};

/* Runs mode=ratio on input; the number of fields parsed (5 for a ratio with an interval). */
static int ratio_of(const char *input, struct ratio *q)
{
	if (ci("ratio", input, q->out, sizeof(q->out)))
		return -1;
	return sscanf(q->out, "%lf %lf %lf %15s %31s", &q->r, &q->lo, &q->hi, q->verdict, q->best);
}

TEST_F(bench_qos_ci, ratio__separated_searches_are_a_win_over_the_best_baseline)
{
	struct ratio q;

	ASSERT_EQ(5,
		  ratio_of("num 30\\nnum 31\\nnum 29\\ntemporal 20\\ntemporal 21\\ntemporal 19\\n"
			   "os 10\\nos 11\\nos 12\\n",
			   &q))
	TH_LOG("%s", q.out);
	ASSERT_EQ(1.5, q.r);
	/* paired: num's and temporal's medians are the same search, so the
	 * interval spans that search's ratios, 31 / 21 to 29 / 19 */
	ASSERT_GT(1e-3, fabs(31.0 / 21 - q.lo));
	ASSERT_GT(1e-3, fabs(29.0 / 19 - q.hi));
	ASSERT_STREQ("win", q.verdict);
	ASSERT_STREQ("temporal", q.best);

	/* a fourth os search: unpaired, the worst mix of three each, 29 / 21 to 31 / 19 */
	ASSERT_EQ(5,
		  ratio_of("num 30\\nnum 31\\nnum 29\\ntemporal 20\\ntemporal 21\\ntemporal 19\\n"
			   "os 10\\nos 11\\nos 12\\nos 13\\n",
			   &q))
	TH_LOG("%s", q.out);
	ASSERT_GT(1e-3, fabs(29.0 / 21 - q.lo));
	ASSERT_GT(1e-3, fabs(31.0 / 19 - q.hi));
}

TEST_F(bench_qos_ci, ratio__a_slow_spell_shared_by_one_search_of_each_is_paired_out)
{
	struct ratio q;

	/* every search 1.25x its baseline's, the machine 2x slower in the second */
	ASSERT_EQ(5, ratio_of("num 100\\nnum 50\\nnum 120\\nbase 80\\nbase 40\\nbase 96\\n", &q))
	TH_LOG("%s", q.out);
	ASSERT_GT(1e-3, fabs(1.25 - q.r));
	ASSERT_GT(1e-3, fabs(1.25 - q.lo));
	ASSERT_GT(1e-3, fabs(1.25 - q.hi));
	ASSERT_STREQ("win", q.verdict);
}

TEST_F(bench_qos_ci, ratio__overlapping_searches_are_a_tie_and_lower_ones_a_loss)
{
	struct ratio q;

	ASSERT_EQ(5, ratio_of("num 30\\nnum 18\\nnum 29\\nbase 20\\nbase 21\\nbase 31\\n", &q))
	TH_LOG("%s", q.out);
	ASSERT_LT(1.0, q.r);
	ASSERT_GT(1.0, q.lo);
	ASSERT_STREQ("tie", q.verdict);

	ASSERT_EQ(5, ratio_of("num 10\\nnum 11\\nbase 20\\nbase 21\\n", &q)) TH_LOG("%s", q.out);
	ASSERT_GT(1.0, q.hi);
	ASSERT_STREQ("loss", q.verdict);
	ASSERT_STREQ("base", q.best);
}

TEST_F(bench_qos_ci, ratio__one_search_gives_a_ratio_without_verdict)
{
	char out[256];

	ASSERT_EQ(0, ci("ratio", "num 10\\nnum 11\\nbase 20\\n", out, sizeof(out)));
	ASSERT_STREQ("0.525 n/a n/a n/a base\n", out);
}

TEST_F(bench_qos_ci, input__a_line_that_is_not_a_search_is_refused)
{
	char out[256];

	ASSERT_EQ(1, ci("cell", "c 10\\nc ten\\n", out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "line 2 is not GROUP VALUE")) TH_LOG("%s", out);
}

TEST_HARNESS_MAIN
