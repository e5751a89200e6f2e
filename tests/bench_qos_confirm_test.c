// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tools/bench-qos-confirm.awk, bench-qos's confirmation walk, run as
 * bench-qos runs it (awk -f, the search's points on stdin). The searches
 * below are made by hand: medium 30 passes, grow 45 passes, 67.5 fails,
 * bisect 55.114 passes and 60.990 fails (LO 55.114, HI 60.990, ratio
 * 1.10662), two tenants. Bench-qos before the walk took LO as the search's
 * QoS-QPS whatever more queries at LO and HI would say; the walk's
 * expectations are worked by hand from the pooled counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "bench_qos_awk.h"

#define SEARCH                                          \
	"medium 30.000 a 44 1\\nmedium 30.000 b 100 0.99\\n" \
	"grow 45.000 a 60 0.983\\ngrow 45.000 b 140 0.98\\n" \
	"grow 67.500 a 90 0.9\\ngrow 67.500 b 200 0.95\\n"   \
	"bisect 55.114 a 74 0.959\\nbisect 55.114 b 160 0.97\\n" \
	"bisect 60.990 a 80 0.925\\nbisect 60.990 b 180 0.96\\n"

FIXTURE(bench_qos_confirm)
{
	char out[256];
};

FIXTURE_SETUP(bench_qos_confirm)
{
}

FIXTURE_TEARDOWN(bench_qos_confirm)
{
}

/* The walk's answer to the points in input, into out; its exit status returned. */
static int walk(const char *input, int points, char *out, size_t len)
{
	char vars[32];

	snprintf(vars, sizeof(vars), "-v walk=%d", points);
	return bench_qos_awk("bench-qos-confirm.awk", vars, input, out, len);
}

TEST_F(bench_qos_confirm, walk__starts_at_the_bisections_highest_pass)
{
	ASSERT_EQ(0, walk(SEARCH, 3, self->out, sizeof(self->out)));
	ASSERT_STREQ("run 55.114\n", self->out);
}

/* a at LO: 3 misses of 74 (a pass), then 11 of 148: 14 of 222 pooled, 6.3 % */
TEST_F(bench_qos_confirm, walk__steps_down_from_a_pass_the_pooled_queries_refute)
{
	ASSERT_EQ(0, walk(SEARCH "confirm 55.114 a 148 0.926\\nconfirm 55.114 b 320 0.97\\n", 3,
			  self->out, sizeof(self->out)));
	/* 55.114 / 1.10662 */
	ASSERT_STREQ("run 49.804\n", self->out);
}

/* a at HI: 6 misses of 80, then 2 of 160: 8 of 240 pooled, 3.3 %; b 4.1 % */
TEST_F(bench_qos_confirm, walk__steps_up_past_a_failure_the_pooled_queries_overturn)
{
	ASSERT_EQ(0, walk(SEARCH "confirm 55.114 a 148 0.98\\nconfirm 55.114 b 320 0.97\\n"
				 "confirm 60.990 a 160 0.988\\nconfirm 60.990 b 360 0.96\\n",
			  3, self->out, sizeof(self->out)));
	/* 60.990 x 1.10662 = 67.492, within 0.1 % of the grow point's load */
	ASSERT_STREQ("run 67.500\n", self->out);

	/* pooled with the grow point's 9 misses of 90 */
	ASSERT_EQ(0, walk(SEARCH "confirm 55.114 a 148 0.98\\nconfirm 55.114 b 320 0.97\\n"
				 "confirm 60.990 a 160 0.988\\nconfirm 60.990 b 360 0.96\\n"
				 "confirm 67.500 a 180 0.96\\nconfirm 67.500 b 400 0.96\\n",
			  5, self->out, sizeof(self->out)));
	ASSERT_STREQ("done 60.990\n", self->out);
}

TEST_F(bench_qos_confirm, walk__ends_between_a_confirmed_pass_and_failure)
{
	ASSERT_EQ(0, walk(SEARCH "confirm 55.114 a 148 0.98\\nconfirm 55.114 b 320 0.97\\n"
				 "confirm 60.990 a 160 0.9\\nconfirm 60.990 b 360 0.96\\n",
			  3, self->out, sizeof(self->out)));
	ASSERT_STREQ("done 55.114\n", self->out);
}

/* b fails at every confirmed load: the highest pass below them is grow's 45 */
TEST_F(bench_qos_confirm, walk__of_failures_only_falls_back_to_the_highest_pass_below)
{
	ASSERT_EQ(0, walk(SEARCH "confirm 55.114 a 148 1\\nconfirm 55.114 b 320 0.9\\n"
				 "confirm 49.804 a 148 1\\nconfirm 49.804 b 320 0.9\\n",
			  2, self->out, sizeof(self->out)));
	ASSERT_STREQ("done 45.000\n", self->out);
}

TEST_F(bench_qos_confirm, walk__stops_after_its_number_of_loads)
{
	ASSERT_EQ(0, walk(SEARCH "confirm 55.114 a 148 0.98\\nconfirm 55.114 b 320 0.97\\n", 1,
			  self->out, sizeof(self->out)));
	ASSERT_STREQ("done 55.114\n", self->out);
}

TEST_F(bench_qos_confirm, walk__needs_a_pass_and_a_failure)
{
	ASSERT_EQ(0, walk("medium 30.000 a 44 1\\ngrow 45.000 a 60 1\\n", 3, self->out,
			  sizeof(self->out)));
	ASSERT_STREQ("done 45.000\n", self->out);
	ASSERT_EQ(0, walk("medium 30.000 a 44 0.5\\nshrink 20.000 a 30 0\\n", 3, self->out,
			  sizeof(self->out)));
	ASSERT_STREQ("done 0.000\n", self->out);
}

/* a tenant that sent nothing at a load fails it: 30 is HI, not LO */
TEST_F(bench_qos_confirm, walk__a_tenant_with_no_queries_fails_the_load)
{
	ASSERT_EQ(0, walk("medium 30.000 a 0 0\\nmedium 30.000 b 100 1\\n"
			  "shrink 20.000 a 10 1\\nshrink 20.000 b 60 1\\n",
			  3, self->out, sizeof(self->out)));
	ASSERT_STREQ("run 20.000\n", self->out);
}

TEST_F(bench_qos_confirm, input__a_line_that_is_not_a_point_is_refused)
{
	ASSERT_EQ(1, walk("medium 30.000 a 44 1\\nmedium 30.000 b many 1\\n", 3, self->out,
			  sizeof(self->out)));
	ASSERT_NE(NULL, strstr(self->out, "line 2 is not PHASE")) TH_LOG("%s", self->out);
}

TEST_HARNESS_MAIN
