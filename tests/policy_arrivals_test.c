// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A tenant's measured interval between arrivals (policy/arrivals.c), what
 * colocd and coloc-sim pass the policy in policy_tenant.interval_ns for
 * the overdue check: unknown before two arrivals, the first gap, then an
 * EWMA weighing the newest gap 1/16, and once the time since the last
 * arrival is longer (a tenant gone quiet) the EWMA as if one came now.
 * Expected values by hand.
 */
#include "kselftest_harness.h"
#include "policy.h"

#define MS 1000000ull

TEST(arrivals_interval__unknown_before_two_then_the_first_gap)
{
	struct policy_arrivals a = { 0 };

	EXPECT_EQ(0u, policy_arrivals_interval_ns(&a, 5 * MS));
	policy_arrivals_note(&a, 10 * MS);
	EXPECT_EQ(0u, policy_arrivals_interval_ns(&a, 10 * MS));
	policy_arrivals_note(&a, 14 * MS);
	EXPECT_EQ(4 * MS, policy_arrivals_interval_ns(&a, 14 * MS));
}

/* gaps 4 ms then 20 ms: 4 + (20 - 4) / 16 = 5 ms */
TEST(arrivals_interval__weighs_the_newest_gap_one_sixteenth)
{
	struct policy_arrivals a = { 0 };

	policy_arrivals_note(&a, 10 * MS);
	policy_arrivals_note(&a, 14 * MS);
	policy_arrivals_note(&a, 34 * MS);
	EXPECT_EQ(5 * MS, policy_arrivals_interval_ns(&a, 34 * MS));
	EXPECT_EQ(5 * MS, policy_arrivals_interval_ns(&a, 39 * MS));
	/* quiet for 50 ms: 5 + (50 - 5) / 16 = 7.8125 ms, and the mean itself unchanged */
	EXPECT_EQ(7812500u, policy_arrivals_interval_ns(&a, 84 * MS));
	policy_arrivals_note(&a, 84 * MS);
	EXPECT_EQ(7812500u, policy_arrivals_interval_ns(&a, 84 * MS));
}

/* an arrival noted out of order (before the last) is taken as the last, with no gap */
TEST(arrivals_note__an_earlier_time_adds_no_gap)
{
	struct policy_arrivals a = { 0 };

	policy_arrivals_note(&a, 10 * MS);
	policy_arrivals_note(&a, 14 * MS);
	policy_arrivals_note(&a, 12 * MS);
	EXPECT_EQ(4 * MS, policy_arrivals_interval_ns(&a, 12 * MS));
	policy_arrivals_note(&a, 16 * MS);
	EXPECT_EQ(4 * MS, policy_arrivals_interval_ns(&a, 16 * MS));
}

TEST_HARNESS_MAIN
