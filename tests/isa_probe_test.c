// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * daemon/isa_probe.c: colocd's ISA for the profile cache, asked of
 * coloc-executor --print-isa, is the one oneDNN gives in this process
 * (which links it); a binary that prints no ISA name is refused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "kselftest_harness.h"
#include "isa_probe.h"
#include "profile_host.h"
#include "testutil.h"

TEST(isa_probe__the_executors_isa_is_onednns)
{
	char bin[512], isa[PROFILE_ISA_LEN], want[PROFILE_ISA_LEN];
	struct coloc_err err = { 0 };

	ASSERT_NE(NULL, tu_bin("coloc-executor", bin, sizeof(bin)));
	ASSERT_EQ(0, isa_probe(bin, isa, sizeof(isa), &err)) TH_LOG("%s", coloc_err_str(&err));
	profile_isa_name(want, sizeof(want));
	EXPECT_STREQ(want, isa);
}

TEST(isa_probe__no_isa_name_refused)
{
	char isa[PROFILE_ISA_LEN];
	struct coloc_err err = { 0 };

	/* echo prints its argument, "--print-isa": not an ISA name */
	EXPECT_EQ(-EPROTO, isa_probe("/bin/echo", isa, sizeof(isa), &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "did not print an ISA name"))
	TH_LOG("%s", coloc_err_str(&err));
	coloc_err_clear(&err);
	EXPECT_EQ(-EPROTO, isa_probe("/bin/false", isa, sizeof(isa), &err));
	coloc_err_clear(&err);
	EXPECT_EQ(-ENOENT, isa_probe("/nonexistent/coloc-executor", isa, sizeof(isa), &err));
}

TEST_HARNESS_MAIN
