// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of bin/coloc-stress as a real process: that it really loads the
 * cores it is given (CPU time from /proc/PID/stat, read while the exited
 * child is still a zombie, against the run's duration times the duty cycle),
 * that its threads run only on the listed core, that it stops cleanly on
 * SIGTERM with its report, and that bad arguments exit 2 with a message.
 * Bounds are loose: the duty cycle is real time on a noisy 2-core VM.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "testutil.h"

struct stress_run {
	struct tu_child c;
	double cpu_s; /* utime + stime of the whole process */
};

/* bin/coloc-stress: $COLOC_BIN (make check), else next to the tree this test was built in. */
static int find_stress(char *path, size_t len)
{
	const char *bin = getenv("COLOC_BIN");
	char exe[PATH_MAX / 2], *slash;
	ssize_t n;

	if (bin && *bin) {
		snprintf(path, len, "%s/coloc-stress", bin);
		return access(path, X_OK) ? -ENOENT : 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	/* build/san/tests -> build/san/bin; build/obj/tests -> bin */
	snprintf(path, len, "%s/../bin/coloc-stress", exe);
	if (strstr(exe, "/build/san/") && !access(path, X_OK))
		return 0;
	snprintf(path, len, "%s/../../../bin/coloc-stress", exe);
	return access(path, X_OK) ? -ENOENT : 0;
}

static int stress_start(const char *bin, const char *const *args, struct stress_run *run)
{
	return tu_child_start(bin, args, &run->c);
}

/* Fields of /proc/PID[/task/TID]/stat after the command name; field 3 is index 0. */
static int read_stat_fields(const char *path, unsigned long long *fields, int nr)
{
	char buf[2048], *p;
	FILE *f = fopen(path, "r");
	size_t len;
	int i = 0;

	if (!f)
		return -errno;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p += 2;
	p += strcspn(p, " "); /* the state letter */
	for (i = 0; i < nr && *p; i++)
		fields[i] = strtoull(p, &p, 10);
	return i == nr ? 0 : -EINVAL;
}

/* Waits for the exit, reads the zombie's CPU time, then reaps it. */
static int stress_finish(struct stress_run *run)
{
	unsigned long long f[20];
	char path[64];
	siginfo_t si;

	tu_child_read_output(&run->c);
	if (waitid(P_PID, (id_t)run->c.pid, &si, WEXITED | WNOWAIT))
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/stat", run->c.pid);
	/* f[i] is field i + 4: utime is field 14, stime 15. */
	if (read_stat_fields(path, f, 12))
		return -EIO;
	run->cpu_s = (double)(f[10] + f[11]) / (double)sysconf(_SC_CLK_TCK);
	if (waitpid(run->c.pid, &run->c.status, 0) != run->c.pid)
		return -errno;
	return 0;
}

static int stress_run(const char *bin, const char *const *args, struct stress_run *run)
{
	int ret = stress_start(bin, args, run);

	return ret ? ret : stress_finish(run);
}

/*
 * Runs coloc-stress until its CPU time lands in [lo, hi], at most 3 times:
 * other tenants of this VM can only take CPU away from it, so a run that
 * falls short is repeated in a hopefully quieter moment before failing.
 */
static int stress_run_expecting_cpu(const char *bin, const char *const *args, double lo, double hi,
				    struct stress_run *run)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		int ret = stress_run(bin, args, run);

		if (ret)
			return ret;
		if (!WIFEXITED(run->c.status) || WEXITSTATUS(run->c.status))
			return -ECHILD;
		if (run->cpu_s >= lo && run->cpu_s <= hi)
			return 0;
		fprintf(stderr, "# CPU time %.2f s outside [%.2f, %.2f]: contended? retrying\n",
			run->cpu_s, lo, hi);
	}
	return -ERANGE;
}

FIXTURE(stress)
{
	char bin[PATH_MAX];
	char cpu[16]; /* the last CPU this test may use, as text */
	int nr_allowed;
};

FIXTURE_SETUP(stress)
{
	cpu_set_t set;
	int last = -1;

	if (find_stress(self->bin, sizeof(self->bin)))
		SKIP(return, "bin/coloc-stress is not built (run make, or set COLOC_BIN)");
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			last = c;
	self->nr_allowed = CPU_COUNT(&set);
	snprintf(self->cpu, sizeof(self->cpu), "%d", last);
}

FIXTURE_TEARDOWN(stress)
{
}

TEST_F(stress, level_100__keeps_its_core_busy)
{
	const char *args[] = { "--cores", self->cpu,	 "--level", "100", "--duration",
			       "1",	  "--buffer-mb", "16",	    NULL };
	struct stress_run run;

	ASSERT_EQ(0, stress_run_expecting_cpu(self->bin, args, 0.7, 1.3, &run))
	TH_LOG("level 100 for 1 s: %.2f s of CPU; %s", run.cpu_s, run.c.output);
	TH_LOG("level 100 for 1 s: %.2f s of CPU", run.cpu_s);
	ASSERT_NE(NULL, strstr(run.c.output, "total: ")) TH_LOG("%s", run.c.output);
	ASSERT_GT(strtod(strstr(run.c.output, "total: ") + 7, NULL), 0.0);
}

TEST_F(stress, level_0__stays_idle)
{
	const char *args[] = { "--cores", self->cpu, "--level", "0", "--duration", "1", NULL };
	struct stress_run run;

	ASSERT_EQ(0, stress_run(self->bin, args, &run));
	ASSERT_TRUE(WIFEXITED(run.c.status) && WEXITSTATUS(run.c.status) == 0)
	TH_LOG("%s", run.c.output);
	TH_LOG("level 0 for 1 s: %.2f s of CPU", run.cpu_s);
	ASSERT_LE(run.cpu_s, 0.1);
	ASSERT_NE(NULL, strstr(run.c.output, "total: 0.000 GB/s")) TH_LOG("%s", run.c.output);
}

TEST_F(stress, level_50__uses_about_half_a_core)
{
	const char *args[] = { "--cores", self->cpu,	 "--level", "50", "--duration",
			       "1",	  "--buffer-mb", "16",	    NULL };
	struct stress_run run;

	ASSERT_EQ(0, stress_run_expecting_cpu(self->bin, args, 0.25, 0.75, &run))
	TH_LOG("level 50 for 1 s: %.2f s of CPU; %s", run.cpu_s, run.c.output);
	TH_LOG("level 50 for 1 s: %.2f s of CPU", run.cpu_s);
}

TEST_F(stress, cores__one_busy_thread_per_core_pinned_there)
{
	const char *args[] = { "--cores", self->cpu,	 "--kind", "membw", "--level",
			       "100",	  "--buffer-mb", "16",	   NULL };
	struct stress_run run;
	struct timespec wait = { .tv_nsec = 400000000 };
	char dirpath[64];
	struct dirent *de;
	int workers = 0, wrong_cpu = 0;
	DIR *d;

	ASSERT_EQ(0, stress_start(self->bin, args, &run));
	nanosleep(&wait, NULL);
	snprintf(dirpath, sizeof(dirpath), "/proc/%d/task", run.c.pid);
	d = opendir(dirpath);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		unsigned long long f[40];
		char path[384];

		if (de->d_name[0] == '.' || atoi(de->d_name) == run.c.pid)
			continue;
		snprintf(path, sizeof(path), "%s/%s/stat", dirpath, de->d_name);
		/* f[i] is field i + 4: processor (the CPU it last ran on) is field 39. */
		ASSERT_EQ(0, read_stat_fields(path, f, 36));
		workers++;
		wrong_cpu += f[35] != strtoull(self->cpu, NULL, 10);
	}
	closedir(d);
	/* No --duration: it runs until SIGTERM, then reports. */
	ASSERT_EQ(0, kill(run.c.pid, SIGTERM));
	ASSERT_EQ(0, stress_finish(&run));
	ASSERT_EQ(1, workers);
	ASSERT_EQ(0, wrong_cpu);
	ASSERT_TRUE(WIFEXITED(run.c.status) && WEXITSTATUS(run.c.status) == 0)
	TH_LOG("%s", run.c.output);
	ASSERT_NE(NULL, strstr(run.c.output, "words streamed")) TH_LOG("%s", run.c.output);
	ASSERT_NE(NULL, strstr(run.c.output, "total: ")) TH_LOG("%s", run.c.output);
}

TEST_F(stress, cores__every_listed_core_gets_a_busy_thread)
{
	char list[16];
	const char *args[] = { "--cores", list, "--level", "100", "--buffer-mb", "16", NULL };
	struct timespec wait = { .tv_sec = 1 };
	int first, last = atoi(self->cpu), workers = 0, on_first = 0, on_last = 0;
	double share[2] = { 0, 0 }, uptime = 0;
	struct stress_run run;
	char dirpath[64];
	struct dirent *de;
	cpu_set_t set;
	FILE *f;
	DIR *d;

	if (self->nr_allowed < 2)
		SKIP(return, "needs 2 CPUs, this test may use %d", self->nr_allowed);
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	for (first = 0; !CPU_ISSET(first, &set); first++)
		;
	snprintf(list, sizeof(list), "%d,%d", first, last);
	ASSERT_EQ(0, stress_start(self->bin, args, &run));
	nanosleep(&wait, NULL);

	f = fopen("/proc/uptime", "r");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, fscanf(f, "%lf", &uptime));
	fclose(f);
	snprintf(dirpath, sizeof(dirpath), "/proc/%d/task", run.c.pid);
	d = opendir(dirpath);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		unsigned long long fl[40];
		char path[384];
		double alive;

		if (de->d_name[0] == '.' || atoi(de->d_name) == run.c.pid)
			continue;
		snprintf(path, sizeof(path), "%s/%s/stat", dirpath, de->d_name);
		ASSERT_EQ(0, read_stat_fields(path, fl, 36));
		ASSERT_LT(workers, 2);
		/* fl[i] is field i + 4: utime 14, stime 15, starttime 22, processor 39. */
		alive = uptime - (double)fl[18] / (double)sysconf(_SC_CLK_TCK);
		share[workers++] = (double)(fl[10] + fl[11]) / (double)sysconf(_SC_CLK_TCK) / alive;
		on_first += fl[35] == (unsigned long long)first;
		on_last += fl[35] == (unsigned long long)last;
	}
	closedir(d);
	ASSERT_EQ(0, kill(run.c.pid, SIGTERM));
	ASSERT_EQ(0, stress_finish(&run));
	ASSERT_TRUE(WIFEXITED(run.c.status) && WEXITSTATUS(run.c.status) == 0)
	TH_LOG("%s", run.c.output);
	ASSERT_EQ(2, workers);
	ASSERT_EQ(1, on_first);
	ASSERT_EQ(1, on_last);
	TH_LOG("CPU share of each thread at level 100: %.2f, %.2f", share[0], share[1]);
	/* Both really spin; the bound leaves room for other tenants of this 2-core VM. */
	ASSERT_GE(share[0], 0.3);
	ASSERT_GE(share[1], 0.3);
}

TEST_F(stress, args__bad_values_exit_2_with_a_message)
{
	static const char *const bad[][4] = {
		{ "--level", "101", NULL },	    { "--level", "abc", NULL },
		{ "--level", "-1", NULL },	    { "--kind", "l3", NULL },
		{ "--cores", "99999", NULL },	    { "--cores", "1-0", NULL },
		{ "--cores", "0,0", NULL },	    { "--cores", "0,", NULL },
		{ "--duration", "-1", NULL },	    { "--duration", "1s", NULL },
		{ "--buffer-mb", "0", NULL },	    { "--bogus", NULL },
		{ "--level", "10", "extra", NULL },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct stress_run run;

		ASSERT_EQ(0, stress_run(self->bin, bad[i], &run));
		ASSERT_TRUE(WIFEXITED(run.c.status)) TH_LOG("case %zu", i);
		ASSERT_EQ(2, WEXITSTATUS(run.c.status)) TH_LOG("case %zu: %s", i, run.c.output);
		ASSERT_NE(NULL, strstr(run.c.output, "coloc-stress: ")) TH_LOG("case %zu", i);
	}
}

TEST_HARNESS_MAIN
