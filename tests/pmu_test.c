// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of PMU detection (daemon/pmu.c), the raw event table
 * (daemon/pmu_events.c) and uncore memory-bandwidth discovery
 * (daemon/uncore.c). Run as root: CPU-wide perf events need it.
 *
 * Detection is checked against the machine itself: a direct
 * perf_event_open() of hardware cycles decides whether a PMU is expected,
 * CPUID decides the vendor/family/model, and the software counters are
 * made to count by touching fresh pages, sleeping and migrating on each
 * CPU. The table is checked against encodings worked out by hand from the
 * vendors' manuals. Uncore parsing is checked on sysfs trees the tests
 * write into a temporary directory, on machines fed as hwloc XML (with gaps
 * in package ids, and sockets whose memory controllers sysfs does not
 * show); on a machine without an uncore PMU the real uncore_open() must
 * find nothing.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

#include "kselftest_harness.h"
#include "pmu.h"
#include "testutil.h"
#include "uncore.h"

#define SW_MASK                                                          \
	((1u << COLOC_CTR_CTX_SWITCHES) | (1u << COLOC_CTR_MIGRATIONS) | \
	 (1u << COLOC_CTR_PAGE_FAULTS))

static int test_perf_open(__u32 type, __u64 config, int cpu)
{
	struct perf_event_attr attr = { .size = sizeof(attr), .type = type, .config = config };
	int fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/*
 * Counter value of a pmu_open_counter() fd (read_format: value, enabled,
 * running), scaled to the enabled time if the PMU multiplexed it.
 */
static __u64 test_read_count(int fd)
{
	__u64 v[3] = { 0 };

	if (read(fd, v, sizeof(v)) != (ssize_t)sizeof(v))
		return ~0ull;
	if (v[2] && v[2] < v[1])
		return (__u64)((double)v[0] * (double)v[1] / (double)v[2]);
	return v[0];
}

/* CPU-wide perf events need root (or CAP_PERFMON, or perf_event_paranoid <= 0). */
static int test_cpu_wide_errno(void)
{
	int fd = test_perf_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0);

	if (fd < 0)
		return -fd;
	close(fd);
	return 0;
}

#define SKIP_UNLESS_CPU_WIDE()                                                         \
	do {                                                                           \
		int __e = test_cpu_wide_errno();                                       \
		if (__e)                                                               \
			SKIP(return, "CPU-wide perf events refused (%s): run as root", \
				   strerrorname_np(__e));                              \
	} while (0)

static int test_online_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

static int test_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* ---- detection ------------------------------------------------------------- */

FIXTURE(pmu)
{
	struct pmu_info info;
	int cpus[256];
	int nr_cpus;
};

FIXTURE_SETUP(pmu)
{
	ASSERT_EQ(0, pmu_detect(&self->info));
	self->nr_cpus = test_online_cpus(self->cpus, 256);
	ASSERT_LT(0, self->nr_cpus);
}

FIXTURE_TEARDOWN(pmu)
{
}

TEST_F(pmu, detect__present_matches_direct_cycles_open)
{
	int fd = test_perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0);

	if (fd >= 0) {
		close(fd);
		ASSERT_TRUE(self->info.present);
		ASSERT_EQ(0, self->info.open_errno);
	} else {
		ASSERT_FALSE(self->info.present);
		ASSERT_EQ(-fd, self->info.open_errno);
	}
}

TEST_F(pmu, detect__identifies_cpu_like_cpuid)
{
	unsigned int a = 0, b = 0, c = 0, d = 0, base_family, family, model;
	const struct pmu_event *events;
	const char *table;
	char vendor[13];

	ASSERT_TRUE(__get_cpuid(0, &a, &b, &c, &d));
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = '\0';
	ASSERT_TRUE(__get_cpuid(1, &a, &b, &c, &d));
	/* SDM Vol. 2A CPUID leaf 1 / AMD APM Vol. 3: display family and model */
	base_family = (a >> 8) & 0xf;
	family = base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family;
	model = (a >> 4) & 0xf;
	if (base_family == 0x6 || base_family == 0xf)
		model |= ((a >> 16) & 0xf) << 4;

	ASSERT_STREQ(vendor, self->info.vendor);
	ASSERT_EQ((int)family, self->info.family);
	ASSERT_EQ((int)model, self->info.model);
	ASSERT_EQ(0, pmu_event_table_lookup(vendor, (int)family, (int)model, &events, &table));
	ASSERT_STREQ(table, self->info.table);
}

TEST_F(pmu, detect__software_counters_always_available)
{
	SKIP_UNLESS_CPU_WIDE();
	ASSERT_EQ(SW_MASK, self->info.available_mask & SW_MASK);
	ASSERT_EQ(PERF_TYPE_SOFTWARE, self->info.events[COLOC_CTR_PAGE_FAULTS].type);
	ASSERT_EQ(PERF_COUNT_SW_PAGE_FAULTS, self->info.events[COLOC_CTR_PAGE_FAULTS].config);
	ASSERT_EQ(PERF_COUNT_SW_CONTEXT_SWITCHES, self->info.events[COLOC_CTR_CTX_SWITCHES].config);
	ASSERT_EQ(PERF_COUNT_SW_CPU_MIGRATIONS, self->info.events[COLOC_CTR_MIGRATIONS].config);
}

TEST_F(pmu, detect__no_hardware_counter_without_pmu)
{
	if (self->info.present)
		SKIP(return, "a core PMU is present (table %s)", self->info.table);
	ASSERT_EQ(0, self->info.available_mask & COLOC_HW_COUNTER_MASK);
	for (int c = COLOC_CTR_CYCLES; c <= COLOC_CTR_DRAM_FILLS; c++) {
		int fd = pmu_open_counter(&self->info, c, self->cpus[0]);

		if (fd >= 0)
			close(fd);
		ASSERT_GT(0, fd);
	}
	ASSERT_EQ(-self->info.open_errno,
		  pmu_open_counter(&self->info, COLOC_CTR_CYCLES, self->cpus[0]));
}

TEST_F(pmu, open_counter__hardware_events_count_on_every_cpu)
{
	if (!self->info.present) {
		int e = self->info.open_errno;

		SKIP(return, "%s: perf_event_open(cycles) = %s",
			   e == EACCES || e == EPERM ? "hardware PMU not accessible" :
						       "no hardware PMU",
			   strerrorname_np(e));
	}
	for (int i = 0; i < self->nr_cpus; i++) {
		int cpu = self->cpus[i], fds[COLOC_NR_COUNTERS];
		volatile double x = 1.0;

		ASSERT_EQ(0, test_pin(cpu));
		for (int c = COLOC_CTR_CYCLES; c <= COLOC_CTR_DRAM_FILLS; c++) {
			fds[c] = -1;
			if (!(self->info.available_mask & (1u << c)))
				continue;
			fds[c] = pmu_open_counter(&self->info, c, cpu);
			ASSERT_LE(0, fds[c]) TH_LOG("%s on cpu %d", pmu_counter_name(c), cpu);
		}
		for (int k = 0; k < 10 * 1000 * 1000; k++)
			x = x * 1.0000001 + 1e-9;
		for (int c = COLOC_CTR_CYCLES; c <= COLOC_CTR_INSTRUCTIONS; c++) {
			if (fds[c] < 0)
				continue;
			/*
			 * ten million dependent multiply-adds retire at least
			 * that many instructions and take at least that many cycles
			 */
			ASSERT_LE(10 * 1000 * 1000ull, test_read_count(fds[c]))
			TH_LOG("%s on cpu %d", pmu_counter_name(c), cpu);
		}
		for (int c = COLOC_CTR_CYCLES; c <= COLOC_CTR_DRAM_FILLS; c++)
			if (fds[c] >= 0)
				close(fds[c]);
	}
}

TEST_F(pmu, open_counter__page_faults_count_fresh_pages_on_every_cpu)
{
	const int pages = 64;
	long page = sysconf(_SC_PAGESIZE);

	SKIP_UNLESS_CPU_WIDE();

	for (int i = 0; i < self->nr_cpus; i++) {
		int cpu = self->cpus[i], fd;
		__u64 before, after;
		char *mem;

		ASSERT_EQ(0, test_pin(cpu));
		fd = pmu_open_counter(&self->info, COLOC_CTR_PAGE_FAULTS, cpu);
		ASSERT_LE(0, fd);
		mem = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
		ASSERT_NE(MAP_FAILED, mem);
		/* one fault per 4 KiB page only if no huge page backs the range */
		madvise(mem, pages * page, MADV_NOHUGEPAGE);
		before = test_read_count(fd);
		for (int p = 0; p < pages; p++)
			mem[p * page] = 1;
		after = test_read_count(fd);
		munmap(mem, pages * page);
		close(fd);
		/* the counter is CPU-wide: others' faults may add, never subtract */
		ASSERT_LE((__u64)pages, after - before) TH_LOG("cpu %d", cpu);
	}
}

TEST_F(pmu, open_counter__context_switches_count_sleeps_on_every_cpu)
{
	const int sleeps = 20;

	SKIP_UNLESS_CPU_WIDE();

	for (int i = 0; i < self->nr_cpus; i++) {
		int cpu = self->cpus[i], fd;
		__u64 before, after;

		ASSERT_EQ(0, test_pin(cpu));
		fd = pmu_open_counter(&self->info, COLOC_CTR_CTX_SWITCHES, cpu);
		ASSERT_LE(0, fd);
		before = test_read_count(fd);
		for (int s = 0; s < sleeps; s++)
			usleep(500);
		after = test_read_count(fd);
		close(fd);
		/* each sleep switches this thread out of its CPU at least once */
		ASSERT_LE((__u64)sleeps, after - before) TH_LOG("cpu %d", cpu);
	}
}

TEST_F(pmu, open_counter__migrations_count_affinity_moves)
{
	const int moves = 10;
	int fds[256];
	__u64 before = 0, after = 0;

	SKIP_UNLESS_CPU_WIDE();

	if (self->nr_cpus < 2)
		SKIP(return, "one online CPU: nothing to migrate to");
	/* the migration is counted on whichever CPU performs it: watch them all */
	for (int i = 0; i < self->nr_cpus; i++) {
		fds[i] = pmu_open_counter(&self->info, COLOC_CTR_MIGRATIONS, self->cpus[i]);
		ASSERT_LE(0, fds[i]) TH_LOG("cpu %d", self->cpus[i]);
		before += test_read_count(fds[i]);
	}
	for (int m = 0; m < moves; m++) {
		ASSERT_EQ(0, test_pin(self->cpus[m % 2]));
		ASSERT_EQ(self->cpus[m % 2], sched_getcpu());
	}
	for (int i = 0; i < self->nr_cpus; i++) {
		after += test_read_count(fds[i]);
		close(fds[i]);
	}
	/* every pin after the first moves the thread to the other CPU */
	ASSERT_LE((__u64)(moves - 1), after - before);
}

TEST_F(pmu, open_counter__rejects_bad_arguments)
{
	ASSERT_EQ(-EINVAL, pmu_open_counter(&self->info, COLOC_NR_COUNTERS, 0));
	ASSERT_EQ(-EINVAL, pmu_open_counter(&self->info, -1, 0));
	ASSERT_EQ(-EINVAL, pmu_open_counter(&self->info, COLOC_CTR_PAGE_FAULTS, -1));
	ASSERT_EQ(-EINVAL, pmu_open_counter(NULL, COLOC_CTR_PAGE_FAULTS, 0));
}

TEST_F(pmu, counter_name__names_every_counter)
{
	static const char *const expected[COLOC_NR_COUNTERS] = {
		"cycles",     "instructions", "llc_refs",   "llc_misses",
		"dram_fills", "ctx_switches", "migrations", "page_faults",
	};

	for (int c = 0; c < COLOC_NR_COUNTERS; c++)
		ASSERT_STREQ(expected[c], pmu_counter_name(c));
	ASSERT_STREQ("?", pmu_counter_name(COLOC_NR_COUNTERS));
}

/* True when word appears in s as a whole space-separated word. */
static bool test_has_word(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = s; p + n <= s + len; p++) {
		if (strncmp(p, word, n))
			continue;
		if ((p == s || p[-1] == ' ') && (p + n == s + len || p[n] == ' ' || p[n] == ';'))
			return true;
	}
	return false;
}

static void test_describe_sections(const char *line, const char **live, size_t *live_len,
				   const char **absent, size_t *absent_len)
{
	const char *l = strstr(line, "live:"), *a = strstr(line, "; absent:");

	*live = l ? l + 5 : line;
	*live_len = l && a && a > l ? (size_t)(a - *live) : 0;
	*absent = a ? a + 9 : line;
	*absent_len = a ? strlen(*absent) : 0;
}

TEST_F(pmu, describe__names_every_live_and_absent_signal)
{
	const char *live, *absent;
	size_t live_len, absent_len;
	char line[512];

	pmu_describe(&self->info, line, sizeof(line));
	TH_LOG("%s", line);
	test_describe_sections(line, &live, &live_len, &absent, &absent_len);
	ASSERT_LT(0, live_len);
	ASSERT_LT(0, absent_len);
	ASSERT_TRUE(test_has_word(live, live_len, "task_clock"));
	for (int c = 0; c < COLOC_NR_COUNTERS; c++) {
		bool is_live = self->info.available_mask & (1u << c);

		ASSERT_EQ(is_live, test_has_word(live, live_len, pmu_counter_name(c)))
		TH_LOG("%s", pmu_counter_name(c));
		ASSERT_EQ(!is_live, test_has_word(absent, absent_len, pmu_counter_name(c)))
		TH_LOG("%s", pmu_counter_name(c));
	}
	ASSERT_EQ(self->info.membw_sockets > 0, test_has_word(live, live_len, "membw"));
	ASSERT_EQ(self->info.membw_sockets <= 0, test_has_word(absent, absent_len, "membw"));
	if (!self->info.present) {
		int e = self->info.open_errno;
		char why[96];

		snprintf(why, sizeof(why), "(perf cycles: %s", strerrorname_np(e));
		ASSERT_NE(NULL, strstr(line, why));
		if (e != EACCES && e != EPERM)
			ASSERT_NE(NULL, strstr(line, "signals: no hardware PMU (perf cycles: "));
	}
}

TEST_F(pmu, describe__everything_live_says_absent_none)
{
	struct pmu_info all = self->info;
	const char *live, *absent;
	size_t live_len, absent_len;
	char line[512];

	all.present = true;
	all.available_mask = (1u << COLOC_NR_COUNTERS) - 1;
	all.membw_sockets = 2;
	pmu_describe(&all, line, sizeof(line));
	test_describe_sections(line, &live, &live_len, &absent, &absent_len);
	ASSERT_STREQ(" none", absent);
	for (int c = 0; c < COLOC_NR_COUNTERS; c++)
		ASSERT_TRUE(test_has_word(live, live_len, pmu_counter_name(c)));
	ASSERT_TRUE(test_has_word(live, live_len, "membw"));
	ASSERT_NE(NULL, strstr(line, all.table));
}

TEST_F(pmu, describe__truncates_into_small_buffer)
{
	char line[24];

	memset(line, 'x', sizeof(line));
	pmu_describe(&self->info, line, 16);
	ASSERT_EQ(15, strlen(line));
	ASSERT_EQ('x', line[16]);
	ASSERT_EQ(0, strncmp(line, "signals: ", 9));
}

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

/* ---- uncore ----------------------------------------------------------------- */

FIXTURE(uncore)
{
	char root[64];
	struct coloc_err err;
	struct topology *topo; /* packages 0 and 1 of 2 cores each: CPUs 0-1 and 2-3 */
};

FIXTURE_SETUP(uncore)
{
	static const int ids[] = { 0, 1 };
	char xml[8192];

	snprintf(self->root, sizeof(self->root), "/tmp/coloc-uncore-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->root));
	coloc_err_clear(&self->err);
	ASSERT_EQ(0, tu_topology_xml(xml, sizeof(xml), ids, 2, 2, 1, 16ull << 20));
	ASSERT_EQ(0, topology_open(xml, &self->topo, NULL));
}

static int test_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

FIXTURE_TEARDOWN(uncore)
{
	topology_close(self->topo);
	nftw(self->root, test_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes root/rel (creating its directories) with content. */
static int test_write(const char *root, const char *rel, const char *content)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", content);
	return fclose(f) ? -errno : 0;
}

#define DEV "sys/bus/event_source/devices/"

static void test_imc_pmu(struct __test_metadata *_metadata, const char *root, const char *name,
			 const char *type, const char *cpumask)
{
	char rel[256];
	static const char *const files[][2] = {
		{ "format/event", "config:0-7" },
		{ "format/umask", "config:8-15" },
		{ "events/cas_count_read", "event=0x04,umask=0x03" },
		{ "events/cas_count_read.scale", "6.103515625e-5" },
		{ "events/cas_count_read.unit", "MiB" },
		{ "events/cas_count_write", "event=0x04,umask=0x0c" },
		{ "events/cas_count_write.scale", "6.103515625e-5" },
		{ "events/cas_count_write.unit", "MiB" },
	};

	snprintf(rel, sizeof(rel), DEV "%s/type", name);
	ASSERT_EQ(0, test_write(root, rel, type));
	snprintf(rel, sizeof(rel), DEV "%s/cpumask", name);
	ASSERT_EQ(0, test_write(root, rel, cpumask));
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(rel, sizeof(rel), DEV "%s/%s", name, files[i][0]);
		ASSERT_EQ(0, test_write(root, rel, files[i][1]));
	}
}

TEST_F(uncore, encode_terms__places_split_bit_ranges)
{
	char dir[128];
	__u64 cfg[3];

	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/format/event", "config:0-7,32-35,59-60"));
	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/format/umask", "config:8-15"));
	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/format/edge", "config:18"));
	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/format/filter", "config1:0-31"));
	snprintf(dir, sizeof(dir), "%s/" DEV "amd_df", self->root);

	/* 0x1f4: 0xf4 -> 7:0, 0x1 -> 35:32; umask 0x38 -> 15:8; edge -> bit 18 */
	ASSERT_EQ(0, uncore_encode_terms(dir, "event=0x1f4,umask=0x38,edge", cfg, &self->err));
	ASSERT_EQ(0x1000438f4ull, cfg[0]);
	ASSERT_EQ(0, cfg[1]);
	/* 0x3000: 0x00 -> 7:0, 0x0 -> 35:32, 0x3 (bits 13:12) -> 60:59 */
	ASSERT_EQ(0, uncore_encode_terms(dir, "event=0x3000", cfg, NULL));
	ASSERT_EQ(0x1800000000000000ull, cfg[0]);
	ASSERT_EQ(0, uncore_encode_terms(dir, " filter=0xdeadbeef , umask=1", cfg, NULL));
	ASSERT_EQ(0xdeadbeefull, cfg[1]);
	ASSERT_EQ(0x100ull, cfg[0]);
}

TEST_F(uncore, encode_terms__rejects_bad_terms_with_a_message)
{
	char dir[128];
	__u64 cfg[3];

	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/format/umask", "config:8-15"));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/format/bad", "cfg:0-7"));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/format/rev", "config:7-3"));
	snprintf(dir, sizeof(dir), "%s/" DEV "uncore_imc_0", self->root);

	ASSERT_EQ(-ERANGE, uncore_encode_terms(dir, "umask=0x100", cfg, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "config:8-15"));
	coloc_err_clear(&self->err);
	ASSERT_EQ(-ENOENT, uncore_encode_terms(dir, "thresh=1", cfg, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "thresh"));
	ASSERT_EQ(-EINVAL, uncore_encode_terms(dir, "umask=zz", cfg, NULL));
	ASSERT_EQ(-EINVAL, uncore_encode_terms(dir, "umask=-1", cfg, NULL));
	ASSERT_EQ(-EINVAL, uncore_encode_terms(dir, "../../x=1", cfg, NULL));
	ASSERT_EQ(-EINVAL, uncore_encode_terms(dir, "bad=1", cfg, NULL));
	ASSERT_EQ(-EINVAL, uncore_encode_terms(dir, "rev=1", cfg, NULL));
}

TEST_F(uncore, encode_alias__cas_count_scale_is_64_bytes)
{
	char dir[128];
	double bpc = 0;
	bool scaled = false;
	__u64 cfg[3];

	test_imc_pmu(_metadata, self->root, "uncore_imc_0", "13", "0");
	snprintf(dir, sizeof(dir), "%s/" DEV "uncore_imc_0", self->root);
	ASSERT_EQ(0, uncore_encode_alias(dir, "cas_count_write", cfg, &bpc, &scaled, &self->err));
	ASSERT_EQ(0x0c04ull, cfg[0]);
	ASSERT_TRUE(scaled);
	/* 6.103515625e-5 MiB = 2^-14 * 2^20 bytes */
	ASSERT_TRUE(bpc == 64.0);
	ASSERT_EQ(-ENOENT, uncore_encode_alias(dir, "data_reads", cfg, &bpc, &scaled, NULL));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/events/x.unit", "Joules"));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/events/x", "umask=1"));
	ASSERT_EQ(-EINVAL, uncore_encode_alias(dir, "x", cfg, &bpc, &scaled, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "Joules"));
}

TEST_F(uncore, open_at__plans_imc_channels_per_socket)
{
	const struct uncore_channel *ch;
	struct uncore *u;

	/* two sockets: cpu 0 in package 0, cpu 2 in package 1; PMU names sort numerically */
	test_imc_pmu(_metadata, self->root, "uncore_imc_10", "23", "0,2");
	test_imc_pmu(_metadata, self->root, "uncore_imc_2", "15", "0,2");
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_free_running_0/type", "30"));
	ASSERT_EQ(0, test_write(self->root, DEV "power/type", "9"));

	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, UNCORE_PARSE_ONLY, &u, &self->err));
	ASSERT_EQ(2, uncore_nr_sockets(u));
	ASSERT_EQ(4, uncore_nr_channels(u));
	ASSERT_STREQ("uncore membw: 2 sockets via uncore_imc (4 channels)", uncore_describe(u));
	ch = uncore_channel(u, 0);
	ASSERT_STREQ("uncore_imc_2", ch->pmu);
	ASSERT_EQ(15, ch->type);
	ASSERT_EQ(0, ch->cpu);
	ASSERT_EQ(0, ch->socket);
	ASSERT_EQ(0x0304ull, ch->read_config[0]);
	ASSERT_EQ(0x0c04ull, ch->write_config[0]);
	ASSERT_TRUE(ch->read_bytes_per_count == 64.0);
	ch = uncore_channel(u, 3);
	ASSERT_STREQ("uncore_imc_10", ch->pmu);
	ASSERT_EQ(23, ch->type);
	ASSERT_EQ(2, ch->cpu);
	ASSERT_EQ(1, ch->socket);
	ASSERT_EQ(1, ch->package_id);
	ASSERT_NULL(uncore_channel(u, 4));
	{
		__u64 rd, wr;

		/* a parse-only set has no counters to read, and says so */
		ASSERT_EQ(-EBADF, uncore_read(u, 0, &rd, &wr));
		ASSERT_EQ(-EINVAL, uncore_read(u, 2, &rd, &wr));
		ASSERT_EQ(-EINVAL, uncore_read(u, -1, &rd, &wr));
	}
	uncore_close(u);
}

/*
 * The bug a second socket numbering made: packages 0, 2 and 3, and sysfs
 * shows memory controllers only on CPUs of packages 0 and 3. Package 3 is
 * socket 2 everywhere (the raw id would say 3, a count of the sockets with
 * controllers 1), and socket 1 has no bandwidth rather than package 3's.
 */
TEST_F(uncore, open_at__gap_in_package_ids_keeps_the_topology_socket)
{
	static const int ids[] = { 0, 2, 3 };
	const struct uncore_channel *ch;
	struct topology *topo;
	struct uncore *u;
	char xml[16384];
	__u64 rd, wr;

	ASSERT_EQ(0, tu_topology_xml(xml, sizeof(xml), ids, 3, 2, 1, 16ull << 20));
	ASSERT_EQ(0, topology_open(xml, &topo, &self->err)) TH_LOG("%s", self->err.msg);
	test_imc_pmu(_metadata, self->root, "uncore_imc_0", "13", "0,4");
	test_imc_pmu(_metadata, self->root, "uncore_imc_1", "14", "0,4");

	ASSERT_EQ(0, uncore_open_at(self->root, topo, UNCORE_PARSE_ONLY, &u, &self->err));
	ASSERT_EQ(4, uncore_nr_channels(u));
	ASSERT_EQ(2, uncore_nr_sockets(u));
	ASSERT_STREQ("uncore membw: 2 sockets via uncore_imc (4 channels)", uncore_describe(u));
	for (int i = 0; i < 4; i++) {
		ch = uncore_channel(u, i);
		ASSERT_EQ(topology_cpu_socket(topo, ch->cpu), ch->socket) TH_LOG("channel %d", i);
		ASSERT_EQ(ch->cpu == 0 ? 0 : 2, ch->socket) TH_LOG("channel %d cpu %d", i, ch->cpu);
		ASSERT_EQ(ch->cpu == 0 ? 0 : 3, ch->package_id) TH_LOG("channel %d", i);
	}
	/* socket 1 (package 2) exists and shows no memory controller */
	ASSERT_EQ(-ENOENT, uncore_read(u, 1, &rd, &wr));
	ASSERT_EQ(-EBADF, uncore_read(u, 2, &rd, &wr));
	ASSERT_EQ(-EINVAL, uncore_read(u, 3, &rd, &wr));
	uncore_close(u);
	topology_close(topo);
}

TEST_F(uncore, open_at__amd_umc_encodes_rdwrmask_from_format)
{
	const struct uncore_channel *ch;
	struct uncore *u;

	for (int i = 0; i < 2; i++) {
		char rel[128];

		snprintf(rel, sizeof(rel), DEV "amd_umc_%d/type", i);
		ASSERT_EQ(0, test_write(self->root, rel, i ? "26" : "25"));
		snprintf(rel, sizeof(rel), DEV "amd_umc_%d/cpumask", i);
		ASSERT_EQ(0, test_write(self->root, rel, "0"));
		snprintf(rel, sizeof(rel), DEV "amd_umc_%d/format/event", i);
		ASSERT_EQ(0, test_write(self->root, rel, "config:0-7"));
		snprintf(rel, sizeof(rel), DEV "amd_umc_%d/format/rdwrmask", i);
		ASSERT_EQ(0, test_write(self->root, rel, "config:8-9"));
	}
	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/type", "11"));

	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, UNCORE_PARSE_ONLY, &u, &self->err));
	ASSERT_EQ(1, uncore_nr_sockets(u));
	ASSERT_EQ(2, uncore_nr_channels(u));
	ASSERT_STREQ("uncore membw: 1 socket via amd_umc (2 channels)", uncore_describe(u));
	ch = uncore_channel(u, 1);
	ASSERT_STREQ("amd_umc_1", ch->pmu);
	ASSERT_EQ(26, ch->type);
	/* umc_cas_cmd.rd / .wr: event 0x0a, rdwrmask 1 / 2 at config 9:8 */
	ASSERT_EQ(0x10aull, ch->read_config[0]);
	ASSERT_EQ(0x20aull, ch->write_config[0]);
	ASSERT_TRUE(ch->write_bytes_per_count == 64.0);
	uncore_close(u);
}

TEST_F(uncore, open_at__skips_malformed_pmu_and_says_why)
{
	struct uncore *u;

	test_imc_pmu(_metadata, self->root, "uncore_imc_0", "13", "zero");
	ASSERT_EQ(0, test_write(self->root, DEV "amd_df/type", "11"));
	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, UNCORE_PARSE_ONLY, &u, &self->err));
	ASSERT_EQ(0, uncore_nr_sockets(u));
	ASSERT_STREQ("uncore membw: none (uncore_imc_0: missing, empty or bad 'cpumask')",
		     uncore_describe(u));
	uncore_close(u);

	/* a good PMU beside it still counts; a CPU not online drops its whole PMU */
	test_imc_pmu(_metadata, self->root, "uncore_imc_1", "14", "0");
	test_imc_pmu(_metadata, self->root, "uncore_imc_2", "15", "0,9");
	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, UNCORE_PARSE_ONLY, &u, &self->err));
	ASSERT_EQ(1, uncore_nr_sockets(u));
	ASSERT_EQ(1, uncore_nr_channels(u));
	ASSERT_STREQ("uncore_imc_1", uncore_channel(u, 0)->pmu);
	ASSERT_STREQ("uncore membw: 1 socket via uncore_imc (1 channel) "
		     "[skipped uncore_imc_0: missing, empty or bad 'cpumask']",
		     uncore_describe(u));
	uncore_close(u);
}

TEST_F(uncore, open_at__empty_tree_has_no_sockets)
{
	struct uncore *u;
	__u64 rd, wr;

	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, 0, &u, &self->err));
	ASSERT_EQ(0, uncore_nr_sockets(u));
	ASSERT_STREQ("uncore membw: none (no uncore_imc/amd_umc PMU)", uncore_describe(u));
	/* the sockets exist, their memory controllers are not visible */
	ASSERT_EQ(-ENOENT, uncore_read(u, 0, &rd, &wr));
	ASSERT_EQ(-EINVAL, uncore_read(u, 2, &rd, &wr));
	uncore_close(u);
	ASSERT_EQ(-EINVAL, uncore_open_at(self->root, self->topo, 0x80, &u, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "bad arguments"));
}

TEST_F(uncore, open_at__kernel_refusal_leaves_empty_set_that_says_why)
{
	char expected[128];
	struct uncore *u;
	int fd;

	/* a PMU type no kernel registers: the real perf_event_open() refuses it */
	test_imc_pmu(_metadata, self->root, "uncore_imc_0", "2147483000", "0");
	fd = test_perf_open(2147483000u, 0x0304, 0);
	ASSERT_GT(0, fd);
	snprintf(expected, sizeof(expected),
		 "uncore membw: none (perf_event_open(uncore_imc_0 on cpu 0): %s)",
		 strerrorname_np(-fd));

	ASSERT_EQ(0, uncore_open_at(self->root, self->topo, 0, &u, &self->err));
	ASSERT_EQ(0, uncore_nr_sockets(u));
	ASSERT_EQ(0, uncore_nr_channels(u));
	ASSERT_STREQ(expected, uncore_describe(u));
	uncore_close(u);
}

/*
 * The read path on real counters: a tree that puts the kernel's software PMU
 * (type 1) where an IMC would be, page faults as "reads" and context switches
 * as "writes", each scaled to 64 bytes per count like cas_count_*.
 */
TEST_F(uncore, read__sums_real_counts_scaled_to_bytes)
{
	const int pages = 64, sleeps = 20;
	long page = sysconf(_SC_PAGESIZE);
	__u64 rd0, wr0, rd1, wr1;
	struct topology *machine;
	struct uncore *u;
	char text[16];
	int cpu = sched_getcpu(), socket;
	char *mem;

	SKIP_UNLESS_CPU_WIDE();
	ASSERT_LE(0, cpu);
	ASSERT_EQ(0, test_pin(cpu));
	test_imc_pmu(_metadata, self->root, "uncore_imc_0", "1", "");
	snprintf(text, sizeof(text), "%d", cpu);
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/cpumask", text));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/format/event", "config:0-63"));
	ASSERT_EQ(0, test_write(self->root, DEV "uncore_imc_0/events/cas_count_read", "event=0x2"));
	ASSERT_EQ(0,
		  test_write(self->root, DEV "uncore_imc_0/events/cas_count_write", "event=0x3"));
	/* the counters are real, so is the CPU they are opened on: the machine's topology */
	ASSERT_EQ(0, topology_open(NULL, &machine, &self->err)) TH_LOG("%s", self->err.msg);
	socket = topology_cpu_socket(machine, cpu);

	ASSERT_EQ(0, uncore_open_at(self->root, machine, 0, &u, &self->err));
	topology_close(machine);
	ASSERT_EQ(1, uncore_nr_sockets(u)) TH_LOG("%s", uncore_describe(u));
	ASSERT_EQ(PERF_COUNT_SW_PAGE_FAULTS, uncore_channel(u, 0)->read_config[0]);
	ASSERT_EQ(socket, uncore_channel(u, 0)->socket);
	ASSERT_EQ(0, uncore_read(u, socket, &rd0, &wr0));
	mem = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	madvise(mem, pages * page, MADV_NOHUGEPAGE);
	for (int p = 0; p < pages; p++)
		mem[p * page] = 1;
	munmap(mem, pages * page);
	for (int s = 0; s < sleeps; s++)
		usleep(500);
	ASSERT_EQ(0, uncore_read(u, socket, &rd1, &wr1));
	uncore_close(u);

	/* whole 64-byte lines, at least one per fresh page and one per sleep */
	ASSERT_EQ(0, rd1 % 64);
	ASSERT_EQ(0, wr1 % 64);
	ASSERT_LE((__u64)pages * 64, rd1 - rd0);
	ASSERT_LE((__u64)sleeps * 64, wr1 - wr0);
}

TEST_F(uncore, open__matches_the_machines_sysfs)
{
	int imc_or_umc = 0;
	struct dirent *de;
	struct uncore *u;
	DIR *d;

	ASSERT_EQ(0, uncore_open(&u));
	TH_LOG("%s", uncore_describe(u));
	d = opendir("/sys/bus/event_source/devices");
	ASSERT_NE(NULL, d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "uncore_imc", 10) || !strncmp(de->d_name, "amd_umc_", 8))
			imc_or_umc++;
	closedir(d);
	if (!imc_or_umc) {
		ASSERT_EQ(0, uncore_nr_sockets(u));
		ASSERT_NE(NULL, strstr(uncore_describe(u), "none"));
	} else {
		__u64 rd0, wr0, rd1, wr1;

		ASSERT_LT(0, uncore_nr_sockets(u));
		ASSERT_EQ(0, uncore_read(u, 0, &rd0, &wr0));
		usleep(20 * 1000);
		ASSERT_EQ(0, uncore_read(u, 0, &rd1, &wr1));
		ASSERT_LE(rd0, rd1);
		ASSERT_LE(wr0, wr1);
	}
	uncore_close(u);
}

TEST_HARNESS_MAIN
