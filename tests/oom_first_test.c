// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * common/oom_first.c's oom_score_self, the one writer of a process's
 * /proc/self/oom_score_adj (colocd's -900, its executors' 500 and 1000,
 * root's tools' 1000): what the kernel reads back is the number written,
 * negative ones and one digit included; a number out of the kernel's range
 * is refused before anything is written. The harness forks each test, so a
 * score set here is this test's process's alone. Raising needs no
 * privilege; a negative score needs CAP_SYS_RESOURCE (skipped without).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>
#include <linux/capability.h>

#include "kselftest_harness.h"
#include "oom_first.h"

/* /proc/self/oom_score_adj as the kernel reads it, or -2000 if unread. */
static int oom_score_read(void)
{
	FILE *f = fopen("/proc/self/oom_score_adj", "re");
	int v = -2000;

	if (f && fscanf(f, "%d", &v) != 1)
		v = -2000;
	if (f)
		fclose(f);
	return v;
}

/* Whether this process may lower its score below 0: CAP_SYS_RESOURCE in CapEff. */
static bool may_lower(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	unsigned long long caps = 0;
	char line[256];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	if (f)
		fclose(f);
	return caps & (1ull << CAP_SYS_RESOURCE);
}

TEST(oom_score_self__the_kernel_reads_back_the_number_written)
{
	static const int raised[] = { 7, 42, 500, 999, 1000 };

	/* rising, as any user may */
	for (unsigned int i = 0; i < sizeof(raised) / sizeof(raised[0]); i++) {
		ASSERT_EQ(0, oom_score_self(raised[i]));
		EXPECT_EQ(raised[i], oom_score_read());
	}
}

TEST(oom_score_self__negative_scores_read_back_with_their_sign)
{
	if (!may_lower())
		SKIP(return, "no CAP_SYS_RESOURCE here: a score below 0 is refused (EACCES)");
	for (int v = -1000; v <= 0; v += 100) {
		ASSERT_EQ(0, oom_score_self(v));
		EXPECT_EQ(v, oom_score_read());
	}
	ASSERT_EQ(0, oom_score_self(-17));
	EXPECT_EQ(-17, oom_score_read());
}

TEST(oom_score_self__out_of_range_refused_before_a_write)
{
	ASSERT_EQ(0, oom_score_self(OOM_SCORE_FIRST));
	EXPECT_EQ(-EINVAL, oom_score_self(1001));
	EXPECT_EQ(-EINVAL, oom_score_self(-1001));
	EXPECT_EQ(-EINVAL, oom_score_self(-2147483647 - 1));
	EXPECT_EQ(OOM_SCORE_FIRST, oom_score_read());
}

TEST_HARNESS_MAIN
