// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of common/binpath.c: $COLOC_BIN wins when set, only an executable
 * counts, and without it a test binary finds the bin/ of its own build tree
 * (checked against the path worked out from /proc/self/exe by hand).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "binpath.h"

TEST(binpath_find__coloc_bin_wins_and_needs_an_executable)
{
	char dir[] = "/tmp/coloc-binpath-XXXXXX", file[64], found[PATH_MAX];
	FILE *f;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/coloc-x", dir);
	f = fopen(file, "w");
	ASSERT_NE(NULL, f);
	fclose(f);
	ASSERT_EQ(0, setenv("COLOC_BIN", dir, 1));
	ASSERT_EQ(-ENOENT, binpath_find("coloc-x", found, sizeof(found)));
	ASSERT_EQ(0, chmod(file, 0755));
	ASSERT_EQ(0, binpath_find("coloc-x", found, sizeof(found)));
	ASSERT_STREQ(file, found);
	ASSERT_EQ(-ENOENT, binpath_find("coloc-y", found, sizeof(found)));
	ASSERT_EQ(-ENAMETOOLONG, binpath_find("coloc-x", found, 8));
	ASSERT_EQ(-EINVAL, binpath_find("../coloc-x", found, sizeof(found)));
	unlink(file);
	rmdir(dir);
}

TEST(binpath_find__test_binary_finds_its_trees_bin)
{
	char exe[PATH_MAX / 2], expect[PATH_MAX], found[PATH_MAX];
	char real_found[PATH_MAX], real_expect[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t len;
	char *tests;

	ASSERT_LT(0, n);
	exe[n] = '\0';
	/* ROOT/build/obj/tests/binpath_test -> ROOT/bin; ROOT/build/san/tests/... -> ROOT/build/san/bin */
	tests = strstr(exe, "/tests/");
	ASSERT_NE(NULL, tests);
	*tests = '\0';
	len = strlen(exe);
	if (len > 10 && !strcmp(exe + len - 10, "/build/obj"))
		exe[len - 10] = '\0';
	snprintf(expect, sizeof(expect), "%s/bin/coloc-stress", exe);
	if (access(expect, X_OK))
		SKIP(return, "coloc-stress is not built in this tree (run make)");
	ASSERT_EQ(0, unsetenv("COLOC_BIN"));
	ASSERT_EQ(0, binpath_find("coloc-stress", found, sizeof(found)));
	ASSERT_NE(NULL, realpath(found, real_found));
	ASSERT_NE(NULL, realpath(expect, real_expect));
	ASSERT_STREQ(real_expect, real_found);
}

TEST_HARNESS_MAIN
