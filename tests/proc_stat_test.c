// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of common/proc_stat.c, the one reader of /proc's stat files: the
 * fields of a stat line written here by hand, after a command name of
 * spaces and parentheses; a short or missing file refused; and this
 * thread's own stat against what the kernel says elsewhere (sched_getcpu,
 * getrusage).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "proc_stat.h"

/* Writes line into a new file of a new directory under /tmp; its path into path. */
static int write_stat(const char *line, char *path, size_t len)
{
	char dir[] = "/tmp/coloc-proc-stat-XXXXXX";
	FILE *f;

	if (!mkdtemp(dir))
		return -errno;
	snprintf(path, len, "%s/stat", dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs(line, f);
	return fclose(f) ? -errno : 0;
}

static void remove_stat(const char *path)
{
	char dir[256];

	unlink(path);
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path), path);
	rmdir(dir);
}

TEST(proc_stat_read__fields_by_number_after_a_name_of_spaces_and_parens)
{
	/* fields 4..39 are 4, 5, ... 39 but priority (18) is -20; flags (9) is 4194560 */
	char line[1024] = "1234 (a) (b c) d) S", path[256];
	unsigned long long f[PROC_STAT_PROCESSOR + 1];
	char state = 0;

	for (int n = 4; n <= PROC_STAT_PROCESSOR + 2; n++) {
		size_t at = strlen(line);

		if (n == PROC_STAT_FLAGS)
			snprintf(line + at, sizeof(line) - at, " 4194560");
		else
			snprintf(line + at, sizeof(line) - at, " %d", n == 18 ? -20 : n);
	}
	strcat(line, "\n");
	ASSERT_EQ(0, write_stat(line, path, sizeof(path)));
	ASSERT_EQ(0, proc_stat_read(path, &state, f, PROC_STAT_PROCESSOR + 1));
	EXPECT_EQ('S', state);
	EXPECT_EQ(4u, f[4]);
	EXPECT_EQ(4194560u, f[PROC_STAT_FLAGS]);
	EXPECT_EQ(14u, f[PROC_STAT_UTIME]);
	EXPECT_EQ(15u, f[PROC_STAT_STIME]);
	EXPECT_EQ(-20, (long long)f[18]);
	EXPECT_EQ(39u, f[PROC_STAT_PROCESSOR]);
	remove_stat(path);
}

TEST(proc_stat_read__a_short_or_missing_file_is_refused)
{
	unsigned long long f[PROC_STAT_STIME + 1];
	char path[256], state;

	ASSERT_EQ(0, write_stat("77 (x y) R 1 2 3 4 5 6 7 8 9 10\n", path, sizeof(path)));
	EXPECT_EQ(0, proc_stat_read(path, &state, f, 14));
	EXPECT_EQ(10u, f[13]);
	EXPECT_EQ(-EINVAL, proc_stat_read(path, &state, f, PROC_STAT_STIME + 1));
	remove_stat(path);
	ASSERT_EQ(0, write_stat("77 (no end\n", path, sizeof(path)));
	EXPECT_EQ(-EINVAL, proc_stat_read(path, &state, NULL, 0));
	remove_stat(path);
	EXPECT_EQ(-ENOENT, proc_stat_read(path, &state, NULL, 0));
}

TEST(proc_stat_read__this_thread_runs_and_its_time_agrees_with_getrusage)
{
	unsigned long long f[PROC_STAT_PROCESSOR + 1], ns;
	volatile unsigned long spin = 0;
	struct rusage ru;
	cpu_set_t one;
	char path[64], state = 0;
	long long ru_ns;
	int cpu = sched_getcpu();

	ASSERT_LE(0, cpu);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	for (unsigned long i = 0; i < 50000000; i++)
		spin += i;
	snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", (long)syscall(SYS_gettid));
	ASSERT_EQ(0, proc_stat_read(path, &state, f, PROC_STAT_PROCESSOR + 1));
	EXPECT_EQ('R', state);
	EXPECT_EQ((unsigned long long)cpu, f[PROC_STAT_PROCESSOR]);
	/* the harness forks each test: this process is this one thread */
	ASSERT_EQ(0, proc_stat_cpu_ns("/proc/self/stat", &ns));
	ASSERT_EQ(0, getrusage(RUSAGE_SELF, &ru));
	ru_ns = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ll +
		(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ll;
	EXPECT_GT(ns, 0u);
	/* stat counts whole clock ticks of the same time getrusage gives in us */
	EXPECT_LE(llabs((long long)ns - ru_ns), 30000000ll)
	TH_LOG("stat %llu ns, getrusage %lld ns", ns, ru_ns);
}

TEST_HARNESS_MAIN
