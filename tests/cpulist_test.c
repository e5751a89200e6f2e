// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of common/cpulist.c, the one CPU-list parser: the kernel's syntax,
 * sysfs files' whitespace, the COLOC_MAX_CPUS bound, and an error for every
 * malformed list. The machine's own /sys/devices/system/cpu/online is
 * checked against the online files of each CPU, read one by one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "coloc/limits.h"
#include "cpulist.h"
#include "util.h"

TEST(cpulist_parse__ranges_and_singles_in_written_order)
{
	static const int expect[] = { 8, 0, 1, 2, 3, 10, 11 };
	struct coloc_err err = { 0 };
	int cpus[16];

	ASSERT_EQ((int)ARRAY_SIZE(expect), cpulist_parse("8,0-3,10-11", 0, cpus, 16, &err))
	TH_LOG("%s", coloc_err_str(&err));
	for (size_t i = 0; i < ARRAY_SIZE(expect); i++) {
		ASSERT_EQ(expect[i], cpus[i]) TH_LOG("index %zu", i);
	}
	ASSERT_EQ(1, cpulist_parse("5-5", 0, cpus, 16, NULL));
	ASSERT_EQ(5, cpus[0]);
}

TEST(cpulist_parse__sysfs_tolerates_whitespace_and_empty)
{
	int cpus[8];

	ASSERT_EQ(2, cpulist_parse("0,28\n", CPULIST_SYSFS, cpus, 8, NULL));
	ASSERT_EQ(0, cpus[0]);
	ASSERT_EQ(28, cpus[1]);
	ASSERT_EQ(4, cpulist_parse("  0-3 \n", CPULIST_SYSFS, cpus, 8, NULL));
	ASSERT_EQ(3, cpus[3]);
	ASSERT_EQ(0, cpulist_parse("\n", CPULIST_SYSFS, cpus, 8, NULL));
	ASSERT_EQ(0, cpulist_parse("", CPULIST_SYSFS, cpus, 8, NULL));
	/* whitespace inside a list is not sysfs's */
	ASSERT_EQ(-EINVAL, cpulist_parse("0, 1", CPULIST_SYSFS, cpus, 8, NULL));
}

TEST(cpulist_parse__strict_rejects_with_a_message)
{
	static const struct {
		const char *text;
		int ret;
		const char *says;
	} bad[] = {
		{ "", -EINVAL, "empty" },	    { "0\n", -EINVAL, "expected" },
		{ " 0", -EINVAL, "expected" },	    { "0,", -EINVAL, "expected" },
		{ ",0", -EINVAL, "expected" },	    { "1-", -EINVAL, "expected" },
		{ "-1", -EINVAL, "expected" },	    { "a", -EINVAL, "expected" },
		{ "0;1", -EINVAL, "expected" },	    { "3-1", -EINVAL, "backwards" },
		{ "0,2,0", -EINVAL, "twice" },	    { "0-3,2", -EINVAL, "twice" },
		{ "1024", -ERANGE, "0 to 1023" },   { "0-99999999999", -ERANGE, "0 to" },
		{ "0-16", -E2BIG, "more than 16" },
	};
	int cpus[16];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct coloc_err err = { 0 };

		ASSERT_EQ(bad[i].ret, cpulist_parse(bad[i].text, 0, cpus, 16, &err))
		TH_LOG("'%s'", bad[i].text);
		ASSERT_EQ(bad[i].ret, err.code);
		ASSERT_NE(NULL, strstr(err.msg, bad[i].says))
		TH_LOG("'%s': %s", bad[i].text, err.msg);
	}
}

TEST(cpulist_parse__bound_is_coloc_max_cpus)
{
	static int cpus[COLOC_MAX_CPUS];
	char text[32];

	snprintf(text, sizeof(text), "0-%d", COLOC_MAX_CPUS - 1);
	ASSERT_EQ(COLOC_MAX_CPUS, cpulist_parse(text, 0, cpus, COLOC_MAX_CPUS, NULL));
	ASSERT_EQ(COLOC_MAX_CPUS - 1, cpus[COLOC_MAX_CPUS - 1]);
	snprintf(text, sizeof(text), "%d", COLOC_MAX_CPUS);
	ASSERT_EQ(-ERANGE, cpulist_parse(text, 0, cpus, COLOC_MAX_CPUS, NULL));
	ASSERT_EQ(-EINVAL, cpulist_parse("0", 0x2, cpus, 1, NULL));
	ASSERT_EQ(-EINVAL, cpulist_parse(NULL, 0, cpus, 1, NULL));
}

/* Whether cpu's sysfs directory says it is online (cpu0 often has no 'online' file). */
static int sysfs_cpu_online(int cpu)
{
	char path[96];
	FILE *f;
	int c;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
	if (access(path, F_OK))
		return 0;
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	f = fopen(path, "r");
	if (!f)
		return 1;
	c = fgetc(f);
	fclose(f);
	return c == '1';
}

TEST(cpulist_parse__machine_online_list_matches_per_cpu_files)
{
	static int cpus[COLOC_MAX_CPUS];
	struct coloc_err err = { 0 };
	char text[4096];
	int n, expected = 0;
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");

	ASSERT_NE(NULL, f);
	n = (int)fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	n = cpulist_parse(text, CPULIST_SYSFS, cpus, COLOC_MAX_CPUS, &err);
	ASSERT_LT(0, n) TH_LOG("%s", coloc_err_str(&err));
	for (int i = 0; i < n; i++) {
		ASSERT_TRUE(sysfs_cpu_online(cpus[i])) TH_LOG("cpu %d", cpus[i]);
	}
	for (int cpu = 0; cpu < COLOC_MAX_CPUS; cpu++)
		expected += sysfs_cpu_online(cpu);
	ASSERT_EQ(expected, n);
}

TEST_HARNESS_MAIN
