// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the raw event table (daemon/pmu_events.c): every generation has
 * the five hardware events, encoded as worked out by hand from the
 * vendors' manuals (AMD's PPRs, Intel's SDM); unknown CPUs fall back and
 * say so; /proc/cpuinfo text is parsed for its first processor only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/perf_event.h>
#include "kselftest_harness.h"
#include "pmu.h"

/* ---- the event table --------------------------------------------------------- */

FIXTURE(pmu_events){};

FIXTURE_SETUP(pmu_events)
{
}

FIXTURE_TEARDOWN(pmu_events)
{
}

struct test_cpu {
	const char *vendor;
	int family, model;
	const char *table;
};

/* A model from each generation the table encodes, as CPUID reports them. */
static const struct test_cpu test_encoded_cpus[] = {
	{ "GenuineIntel", 6, 0x5e, "intel-skylake" }, /* Skylake client */
	{ "GenuineIntel", 6, 0x9e, "intel-skylake" }, /* Coffee Lake */
	{ "GenuineIntel", 6, 0x55, "intel-skylakex" }, /* Skylake-SP / Cascade Lake */
	{ "GenuineIntel", 6, 0x7e, "intel-icelake" }, /* Ice Lake client */
	{ "GenuineIntel", 6, 0x8c, "intel-icelake" }, /* Tiger Lake */
	{ "GenuineIntel", 6, 0x6a, "intel-icelakex" }, /* Ice Lake-SP */
	{ "GenuineIntel", 6, 0x8f, "intel-sapphirerapids" },
	{ "GenuineIntel", 6, 0xcf, "intel-sapphirerapids" }, /* Emerald Rapids */
	{ "AuthenticAMD", 0x17, 0x01, "amd-zen1" }, /* Naples / Summit Ridge */
	{ "AuthenticAMD", 0x17, 0x08, "amd-zen1" }, /* Zen+ Pinnacle Ridge */
	{ "HygonGenuine", 0x18, 0x00, "amd-zen1" }, /* Dhyana */
	{ "AuthenticAMD", 0x17, 0x31, "amd-zen2" }, /* Rome / Threadripper 3990X */
	{ "AuthenticAMD", 0x17, 0x71, "amd-zen2" }, /* Matisse */
	{ "AuthenticAMD", 0x19, 0x01, "amd-zen3" }, /* Milan */
	{ "AuthenticAMD", 0x19, 0x21, "amd-zen3" }, /* Vermeer */
	{ "AuthenticAMD", 0x19, 0x50, "amd-zen3" }, /* Cezanne */
	{ "AuthenticAMD", 0x19, 0x11, "amd-zen4" }, /* Genoa */
	{ "AuthenticAMD", 0x19, 0x61, "amd-zen4" }, /* Raphael */
	{ "AuthenticAMD", 0x19, 0xa0, "amd-zen4" }, /* Bergamo */
	{ "AuthenticAMD", 0x1a, 0x02, "amd-zen5" }, /* Turin */
	{ "AuthenticAMD", 0x1a, 0x44, "amd-zen5" }, /* Granite Ridge */
};

TEST_F(pmu_events, table_lookup__each_generation_has_all_five_hardware_events)
{
	for (size_t i = 0; i < ARRAY_SIZE(test_encoded_cpus); i++) {
		const struct test_cpu *cpu = &test_encoded_cpus[i];
		const struct pmu_event *ev;
		const char *table;

		ASSERT_EQ(0, pmu_event_table_lookup(cpu->vendor, cpu->family, cpu->model, &ev,
						    &table));
		ASSERT_STREQ(cpu->table, table)
		TH_LOG("%s %#x %#x", cpu->vendor, cpu->family, cpu->model);
		for (int c = 0; c < COLOC_NR_COUNTERS; c++) {
			bool hw = COLOC_HW_COUNTER_MASK & (1u << c);

			ASSERT_EQ(c, (int)ev[c].ctr);
			ASSERT_NE(NULL, ev[c].name) TH_LOG("%s: %s", table, pmu_counter_name(c));
			ASSERT_NE(NULL, ev[c].source);
			ASSERT_LT(10, strlen(ev[c].source));
			ASSERT_EQ(hw ? PERF_TYPE_RAW : PERF_TYPE_SOFTWARE, ev[c].type);
			if (hw)
				ASSERT_NE(0, ev[c].config);
		}
	}
}

TEST_F(pmu_events, table_lookup__amd_codes_match_hand_encoding)
{
	const struct pmu_event *zen1, *zen2, *zen4, *zen5;
	const char *t;

	/* PerfEvtSel: event[7:0] -> 7:0, umask -> 15:8, event[11:8] -> 35:32 */
	/* PMCx120 umask 0x01: the kernel's Zen 4 ref-cycles value, 0x100000120 */
	ASSERT_EQ(0x100000120ull, pmu_amd_raw_config(0x120, 0x01));
	ASSERT_EQ(0x100000020ull, pmu_amd_raw_config(0x120, 0x00));
	ASSERT_EQ(0x2000038c7ull, pmu_amd_raw_config(0x2c7, 0x38));
	ASSERT_EQ(0x4844ull, pmu_amd_raw_config(0x044, 0x48));

	ASSERT_EQ(0, pmu_event_table_lookup("AuthenticAMD", 0x17, 0x01, &zen1, &t));
	ASSERT_EQ(0, pmu_event_table_lookup("AuthenticAMD", 0x17, 0x31, &zen2, &t));
	ASSERT_EQ(0, pmu_event_table_lookup("AuthenticAMD", 0x19, 0x11, &zen4, &t));
	ASSERT_EQ(0, pmu_event_table_lookup("AuthenticAMD", 0x1a, 0x02, &zen5, &t));
	/* the kernel's own family 17h map: cycles 0x0076, instructions 0x00c0, misses 0x0964 */
	ASSERT_EQ(0x76ull, zen1[COLOC_CTR_CYCLES].config);
	ASSERT_EQ(0xc0ull, zen1[COLOC_CTR_INSTRUCTIONS].config);
	ASSERT_EQ(0x0964ull, zen2[COLOC_CTR_LLC_REFS].config);
	/* PMCx043 with LclDram|RmtDram = 0x08|0x40 */
	ASSERT_EQ(0x4843ull, zen2[COLOC_CTR_DRAM_FILLS].config);
	/* PMCx044 dram_io_all 0x48; beyond the CCX: 0x04|0x08|0x10|0x40 (near/far cache, DRAM) */
	ASSERT_EQ(0x4844ull, zen4[COLOC_CTR_DRAM_FILLS].config);
	ASSERT_EQ(0x5c44ull, zen4[COLOC_CTR_LLC_MISSES].config);
	ASSERT_EQ(0x4844ull, zen5[COLOC_CTR_DRAM_FILLS].config);
	for (int c = COLOC_CTR_CYCLES; c <= COLOC_CTR_DRAM_FILLS; c++)
		/* nothing in 31:16 or above 35: no stray enable, OS/USR or host/guest bits */
		ASSERT_EQ(0, zen4[c].config & ~0xf0000ffffull);
}

TEST_F(pmu_events, table_lookup__intel_codes_match_sdm)
{
	const struct pmu_event *skx, *spr;
	const char *t;

	ASSERT_EQ(0, pmu_event_table_lookup("GenuineIntel", 6, 0x55, &skx, &t));
	ASSERT_EQ(0, pmu_event_table_lookup("GenuineIntel", 6, 0x8f, &spr, &t));
	/* SDM Table 20-1: UMask << 8 | Event Select */
	ASSERT_EQ(0x003cull, skx[COLOC_CTR_CYCLES].config);
	ASSERT_EQ(0x00c0ull, skx[COLOC_CTR_INSTRUCTIONS].config);
	ASSERT_EQ(0x4f2eull, skx[COLOC_CTR_LLC_REFS].config);
	ASSERT_EQ(0x412eull, skx[COLOC_CTR_LLC_MISSES].config);
	ASSERT_EQ(0x10b0ull, skx[COLOC_CTR_DRAM_FILLS].config);
	ASSERT_EQ(0x01d3ull, spr[COLOC_CTR_DRAM_FILLS].config);
	ASSERT_EQ(0x4f2eull, pmu_intel_raw_config(0x2e, 0x4f));
	ASSERT_STREQ("LONGEST_LAT_CACHE.MISS", spr[COLOC_CTR_LLC_MISSES].name);
}

TEST_F(pmu_events, table_lookup__unknown_cpus_fall_back_and_say_so)
{
	static const struct test_cpu others[] = {
		{ "CentaurHauls", 7, 0x1b, "generic" },
		{ "AuthenticAMD", 0x15, 0x02, "generic" }, /* Bulldozer family: not encoded */
		{ "AuthenticAMD", 0x19, 0xff, "generic" },
		{ "GenuineIntel", 6, 0x01, "intel-architectural" },
	};
	static const __u64 generic[] = { PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS,
					 PERF_COUNT_HW_CACHE_REFERENCES,
					 PERF_COUNT_HW_CACHE_MISSES };

	for (size_t i = 0; i < ARRAY_SIZE(others); i++) {
		const struct pmu_event *ev;
		const char *table;

		ASSERT_EQ(0, pmu_event_table_lookup(others[i].vendor, others[i].family,
						    others[i].model, &ev, &table));
		ASSERT_STREQ(others[i].table, table);
		ASSERT_NULL(ev[COLOC_CTR_DRAM_FILLS].name);
		ASSERT_NE(NULL, strstr(ev[COLOC_CTR_DRAM_FILLS].source, "none"));
		if (strcmp(table, "generic"))
			continue;
		for (int c = COLOC_CTR_CYCLES; c <= COLOC_CTR_LLC_MISSES; c++) {
			ASSERT_EQ(PERF_TYPE_HARDWARE, ev[c].type);
			ASSERT_EQ(generic[c], ev[c].config);
		}
	}
}

TEST_F(pmu_events, table_lookup__rejects_null_vendor)
{
	const struct pmu_event *ev;
	const char *table;

	ASSERT_EQ(-EINVAL, pmu_event_table_lookup(NULL, 6, 0x55, &ev, &table));
}

TEST_F(pmu_events, parse_cpuinfo__reads_first_processor_only)
{
	static const char text[] = "processor\t: 0\n"
				   "vendor_id\t: AuthenticAMD\n"
				   "cpu family\t: 25\n"
				   "model\t\t: 17\n"
				   "model name\t: AMD EPYC 9654 96-Core Processor\n"
				   "\n"
				   "processor\t: 1\n"
				   "vendor_id\t: GenuineIntel\n"
				   "cpu family\t: 6\n"
				   "model\t\t: 85\n";
	char vendor[16];
	int family, model;

	ASSERT_EQ(0, pmu_parse_cpuinfo(text, vendor, sizeof(vendor), &family, &model));
	ASSERT_STREQ("AuthenticAMD", vendor);
	ASSERT_EQ(0x19, family);
	ASSERT_EQ(0x11, model);
}

TEST_F(pmu_events, parse_cpuinfo__rejects_missing_or_bad_fields)
{
	char vendor[16];
	int family, model;

	ASSERT_EQ(-ENOENT, pmu_parse_cpuinfo("vendor_id : GenuineIntel\nmodel : 3\n", vendor,
					     sizeof(vendor), &family, &model));
	ASSERT_EQ(-EINVAL, pmu_parse_cpuinfo("vendor_id : X\ncpu family : six\nmodel : 3\n", vendor,
					     sizeof(vendor), &family, &model));
	ASSERT_EQ(-EINVAL, pmu_parse_cpuinfo(NULL, vendor, sizeof(vendor), &family, &model));
}

TEST_HARNESS_MAIN
