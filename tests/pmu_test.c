// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of PMU detection and counters (daemon/pmu.c). Run as root: CPU-wide
 * perf events need it. Detection is checked against the machine itself: a
 * direct perf_event_open() of hardware cycles decides whether a PMU is
 * expected, CPUID decides the vendor/family/model, and the software
 * counters are made to count by touching fresh pages, sleeping and
 * migrating on each CPU. The raw event table is tested in
 * pmu_events_test.c, uncore discovery in uncore_test.c.
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
	int fd = tu_perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0);

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
	TU_SKIP_UNLESS_CPU_WIDE();
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

		ASSERT_EQ(0, tu_pin_self(cpu));
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

	TU_SKIP_UNLESS_CPU_WIDE();

	for (int i = 0; i < self->nr_cpus; i++) {
		int cpu = self->cpus[i], fd;
		__u64 before, after;
		char *mem;

		ASSERT_EQ(0, tu_pin_self(cpu));
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

	TU_SKIP_UNLESS_CPU_WIDE();

	for (int i = 0; i < self->nr_cpus; i++) {
		int cpu = self->cpus[i], fd;
		__u64 before, after;

		ASSERT_EQ(0, tu_pin_self(cpu));
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

	TU_SKIP_UNLESS_CPU_WIDE();

	if (self->nr_cpus < 2)
		SKIP(return, "one online CPU: nothing to migrate to");
	/* the migration is counted on whichever CPU performs it: watch them all */
	for (int i = 0; i < self->nr_cpus; i++) {
		fds[i] = pmu_open_counter(&self->info, COLOC_CTR_MIGRATIONS, self->cpus[i]);
		ASSERT_LE(0, fds[i]) TH_LOG("cpu %d", self->cpus[i]);
		before += test_read_count(fds[i]);
	}
	for (int m = 0; m < moves; m++) {
		ASSERT_EQ(0, tu_pin_self(self->cpus[m % 2]));
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

TEST_HARNESS_MAIN
