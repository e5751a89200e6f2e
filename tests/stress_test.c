// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of bin/coloc-stress as a real process: that it really loads the
 * cores it is given, that its threads run only on the listed core, that it
 * stops cleanly on SIGTERM with its report, and that bad arguments exit 2
 * with a message.
 *
 * How much it loads a core is not its share of that core, which other
 * processes on a busy machine can take, but the share of wall time its
 * thread wants a CPU: the kernel's time on a CPU plus time waiting on the
 * run queue (/proc/PID/task/TID/schedstat), measured over the same second.
 * Contention turns running into waiting and leaves the sum alone; only time
 * a hypervisor steals from the vCPU is in neither, and the machine's steal
 * over that second (/proc/stat) widens the lower bound by that much.
 */
#define _GNU_SOURCE
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
#include "binpath.h"
#include "proc_stat.h"
#include "proc_tasks.h"
#include "testutil.h"

struct stress_run {
	struct tu_child c;
	double cpu_s; /* utime + stime of the whole process */
};

/* The coloc-stress this test started and has not reaped: the teardown kills it if an ASSERT left it. */
static pid_t stress_live;

static int stress_start(const char *bin, const char *const *args, struct stress_run *run)
{
	int ret = tu_child_start(bin, args, &run->c);

	if (!ret)
		stress_live = run->c.pid;
	return ret;
}

/* Waits for the exit, reads the zombie's CPU time, then reaps it. */
static int stress_finish(struct stress_run *run)
{
	unsigned long long ns;
	char path[64];
	siginfo_t si;

	tu_child_read_output(&run->c);
	if (waitid(P_PID, (id_t)run->c.pid, &si, WEXITED | WNOWAIT))
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/stat", run->c.pid);
	if (proc_stat_cpu_ns(path, &ns))
		return -EIO;
	run->cpu_s = (double)ns / 1e9;
	if (waitpid(run->c.pid, &run->c.status, 0) != run->c.pid)
		return -errno;
	stress_live = 0;
	return 0;
}

static int stress_run(const char *bin, const char *const *args, struct stress_run *run)
{
	int ret = stress_start(bin, args, run);

	return ret ? ret : stress_finish(run);
}

/* What the kernel has accounted for one thread so far. */
struct thread_sample {
	__u64 on_cpu_ns, waiting_ns; /* schedstat: on a CPU, on a run queue */
	__u64 voluntary; /* context switches because it slept */
};

static int read_thread_sample(pid_t pid, pid_t tid, struct thread_sample *t)
{
	unsigned long long run, wait, vol = 0;
	char path[64], line[128];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	found = fscanf(f, "%llu %llu", &run, &wait) == 2;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		found += sscanf(line, "voluntary_ctxt_switches: %llu", &vol) == 1;
	fclose(f);
	if (found != 2)
		return -EINVAL;
	t->on_cpu_ns = run;
	t->waiting_ns = wait;
	t->voluntary = vol;
	return 0;
}

#define STRESS_MAX_WORKERS 2

/* What the workers of a running coloc-stress did over about a second. */
struct stress_demand {
	int workers;
	double runnable[STRESS_MAX_WORKERS]; /* (on a CPU + waiting for one) / wall */
	double on_cpu[STRESS_MAX_WORKERS]; /* on a CPU / wall */
	unsigned long long sleeps[STRESS_MAX_WORKERS]; /* voluntary context switches */
	double steal; /* the machine's stolen time / wall, all vCPUs together */
};

struct stress_workers {
	pid_t *tids;
	int n;
};

static void add_worker(pid_t pid, pid_t tid, void *ctx)
{
	struct stress_workers *w = ctx;

	if (tid == pid)
		return;
	if (w->n < STRESS_MAX_WORKERS)
		w->tids[w->n] = tid;
	w->n++;
}

/* The worker threads (all but the main one) of pid: how many, or -errno. */
static int stress_workers(pid_t pid, pid_t *tids)
{
	struct stress_workers w = { .tids = tids };

	if (tu_tasks_each(pid, add_worker, &w) < 0)
		return -ESRCH;
	return w.n > STRESS_MAX_WORKERS ? -E2BIG : w.n;
}

/* The CPU each worker thread of pid last ran on (field 39 of its stat): how many, or -errno. */
static int stress_worker_cpus(pid_t pid, int *cpus)
{
	pid_t tids[STRESS_MAX_WORKERS];
	int n = stress_workers(pid, tids);

	for (int w = 0; w < n; w++) {
		unsigned long long f[PROC_STAT_PROCESSOR + 1];
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tids[w]);
		if (proc_stat_read(path, NULL, f, PROC_STAT_PROCESSOR + 1))
			return -EIO;
		cpus[w] = (int)f[PROC_STAT_PROCESSOR];
	}
	return n;
}

/*
 * Samples every worker thread twice, 1 s apart. A thread gone at the second
 * sample was one of the short-lived threads that fault the buffer in: the
 * measurement is taken again. schedstat adds a wait to the total only when
 * it ends, so each ratio is off by at most the wait in progress at either
 * sample.
 */
static int stress_measure_demand(pid_t pid, struct stress_demand *d)
{
	struct timespec second = { .tv_sec = 1 }, settle = { .tv_nsec = 300000000 };

	for (int attempt = 0; attempt < 3; attempt++) {
		struct thread_sample a[STRESS_MAX_WORKERS], b[STRESS_MAX_WORKERS];
		pid_t tids[STRESS_MAX_WORKERS];
		__u64 t0, t1, steal0, steal1;
		bool gone = false;
		double wall;

		nanosleep(&settle, NULL);
		memset(d, 0, sizeof(*d));
		d->workers = stress_workers(pid, tids);
		if (d->workers <= 0)
			return d->workers ? d->workers : -ESRCH;
		if (tu_steal_ns(&steal0))
			return -EIO;
		t0 = coloc_now_ns();
		for (int w = 0; w < d->workers; w++)
			if (read_thread_sample(pid, tids[w], &a[w]))
				return -EIO;
		nanosleep(&second, NULL);
		for (int w = 0; w < d->workers && !gone; w++)
			gone = read_thread_sample(pid, tids[w], &b[w]) != 0;
		t1 = coloc_now_ns();
		if (gone)
			continue;
		if (tu_steal_ns(&steal1))
			return -EIO;
		wall = (double)(t1 - t0);
		for (int w = 0; w < d->workers; w++) {
			d->on_cpu[w] = (double)(b[w].on_cpu_ns - a[w].on_cpu_ns) / wall;
			d->runnable[w] =
				d->on_cpu[w] + (double)(b[w].waiting_ns - a[w].waiting_ns) / wall;
			d->sleeps[w] = b[w].voluntary - a[w].voluntary;
		}
		d->steal = (double)(steal1 - steal0) / wall;
		return 0;
	}
	return -ESRCH;
}

/*
 * Runs coloc-stress with args (one core) for about a second, then stops it
 * (SIGTERM: exit 0 with its report in run->c.output): its one worker never
 * slept (a duty-cycled thread sleeps about once a millisecond; a rare wait
 * for a lock is allowed), so it wanted its CPU all the time, however much
 * of it others took. label names the run in the log.
 */
static void run_one_worker_wanting_its_core(struct __test_metadata *_metadata, const char *bin,
					    const char *const *args, const char *label,
					    struct stress_run *run)
{
	struct stress_demand d;

	ASSERT_EQ(0, stress_start(bin, args, run));
	ASSERT_EQ(0, stress_measure_demand(run->c.pid, &d));
	ASSERT_EQ(0, kill(run->c.pid, SIGTERM));
	ASSERT_EQ(0, stress_finish(run));
	ASSERT_TRUE(WIFEXITED(run->c.status) && WEXITSTATUS(run->c.status) == 0)
	TH_LOG("%s", run->c.output);
	TH_LOG("%s: runnable %.2f of wall (on a CPU %.2f), %llu sleeps, steal %.2f", label,
	       d.runnable[0], d.on_cpu[0], d.sleeps[0], d.steal);
	ASSERT_EQ(1, d.workers);
	ASSERT_LT(d.sleeps[0], 10);
	ASSERT_GE(d.runnable[0] + d.steal, 0.8);
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

	if (binpath_find("coloc-stress", self->bin, sizeof(self->bin)))
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
	if (stress_live > 0) {
		kill(stress_live, SIGKILL);
		waitpid(stress_live, NULL, 0);
	}
}

TEST_F(stress, level_100__wants_its_core_all_the_time)
{
	const char *args[] = { "--cores", self->cpu, "--level", "100", "--buffer-mb", "16", NULL };
	struct stress_run run;

	run_one_worker_wanting_its_core(_metadata, self->bin, args, "level 100", &run);
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

/*
 * --fill spin at level 0 is what a profile's "alone" runs next to: the core
 * as wanted as at level 100 (it never sleeps), yet no byte of memory moved.
 */
TEST_F(stress, fill_spin_level_0__wants_its_core_and_moves_no_memory)
{
	const char *args[] = { "--cores", self->cpu, "--level", "0", "--fill", "spin", NULL };
	struct stress_run run;

	run_one_worker_wanting_its_core(_metadata, self->bin, args, "spin level 0", &run);
	ASSERT_NE(NULL, strstr(run.c.output, "buffer=none")) TH_LOG("%s", run.c.output);
	ASSERT_NE(NULL, strstr(run.c.output, "total: 0.000 GB/s")) TH_LOG("%s", run.c.output);
}

/*
 * --control: each level read from stdin is acknowledged in order, EOF
 * stops it, and the report gives each level its own rate: none moved at
 * level 0, some at level 100 (it ran there for 0.3 s).
 */
TEST_F(stress, control__levels_from_stdin_acknowledged_and_reported_per_level)
{
	char cmd[PATH_MAX + 256], out[8192], *acks;
	double at_100;

	snprintf(cmd, sizeof(cmd),
		 "(echo 100; sleep 0.3; echo 0; sleep 0.2) | %s --cores %s --level 0 "
		 "--fill spin --control --buffer-mb 16",
		 self->bin, self->cpu);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	acks = strstr(out, "level 100\nlevel 0\n");
	ASSERT_NE(NULL, acks) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(acks, "level 0: 0.000 GB/s")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(acks, "level 100: ")) TH_LOG("%s", out);
	at_100 = strtod(strstr(acks, "level 100: ") + 11, NULL);
	ASSERT_GT(at_100, 0.0) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(acks, "total: ")) TH_LOG("%s", out);

	snprintf(cmd, sizeof(cmd), "echo 101 | %s --cores %s --control --buffer-mb 16 2>&1",
		 self->bin, self->cpu);
	ASSERT_NE(0, tu_run(cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "'101' is not a level 0..100")) TH_LOG("%s", out);
}

TEST_F(stress, level_50__wants_its_core_half_the_time)
{
	const char *args[] = { "--cores", self->cpu, "--level", "50", "--buffer-mb", "16", NULL };
	struct stress_demand d;
	struct stress_run run;

	ASSERT_EQ(0, stress_start(self->bin, args, &run));
	ASSERT_EQ(0, stress_measure_demand(run.c.pid, &d));
	ASSERT_EQ(0, kill(run.c.pid, SIGTERM));
	ASSERT_EQ(0, stress_finish(&run));
	ASSERT_TRUE(WIFEXITED(run.c.status) && WEXITSTATUS(run.c.status) == 0)
	TH_LOG("%s", run.c.output);
	TH_LOG("level 50: runnable %.2f of wall (on a CPU %.2f), %llu sleeps, steal %.2f",
	       d.runnable[0], d.on_cpu[0], d.sleeps[0], d.steal);
	ASSERT_EQ(1, d.workers);
	/*
	 * Each 1 ms period it spins until 0.5 ms after the period began, whether
	 * it ran or waited meanwhile, and a period is never shorter than 1 ms:
	 * it takes at most half a CPU (contention can only lower that) and wants
	 * one at least half the time, less the timer's lateness (contention
	 * turns running into waiting, and can only raise that).
	 */
	ASSERT_LE(d.on_cpu[0], 0.6);
	ASSERT_GE(d.runnable[0] + d.steal, 0.35);
}

TEST_F(stress, cores__one_busy_thread_per_core_pinned_there)
{
	const char *args[] = { "--cores", self->cpu,	 "--kind", "membw", "--level",
			       "100",	  "--buffer-mb", "16",	   NULL };
	struct stress_run run;
	struct timespec wait = { .tv_nsec = 400000000 };
	int cpus[STRESS_MAX_WORKERS], workers;

	ASSERT_EQ(0, stress_start(self->bin, args, &run));
	nanosleep(&wait, NULL);
	workers = stress_worker_cpus(run.c.pid, cpus);
	/* No --duration: it runs until SIGTERM, then reports. */
	ASSERT_EQ(0, kill(run.c.pid, SIGTERM));
	ASSERT_EQ(0, stress_finish(&run));
	ASSERT_EQ(1, workers);
	ASSERT_EQ(atoi(self->cpu), cpus[0]);
	ASSERT_TRUE(WIFEXITED(run.c.status) && WEXITSTATUS(run.c.status) == 0)
	TH_LOG("%s", run.c.output);
	ASSERT_NE(NULL, strstr(run.c.output, "words streamed")) TH_LOG("%s", run.c.output);
	ASSERT_NE(NULL, strstr(run.c.output, "total: ")) TH_LOG("%s", run.c.output);
}

TEST_F(stress, cores__every_listed_core_gets_a_busy_thread)
{
	char list[16];
	const char *args[] = { "--cores", list, "--level", "100", "--buffer-mb", "16", NULL };
	int first, last = atoi(self->cpu), on_first = 0, on_last = 0;
	int cpus[STRESS_MAX_WORKERS], workers;
	struct stress_demand d;
	struct stress_run run;
	cpu_set_t set;

	if (self->nr_allowed < 2)
		SKIP(return, "needs 2 CPUs, this test may use %d", self->nr_allowed);
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	for (first = 0; !CPU_ISSET(first, &set); first++)
		;
	snprintf(list, sizeof(list), "%d,%d", first, last);
	ASSERT_EQ(0, stress_start(self->bin, args, &run));
	ASSERT_EQ(0, stress_measure_demand(run.c.pid, &d));

	workers = stress_worker_cpus(run.c.pid, cpus);
	for (int w = 0; w < workers; w++) {
		on_first += cpus[w] == first;
		on_last += cpus[w] == last;
	}
	ASSERT_EQ(0, kill(run.c.pid, SIGTERM));
	ASSERT_EQ(0, stress_finish(&run));
	ASSERT_TRUE(WIFEXITED(run.c.status) && WEXITSTATUS(run.c.status) == 0)
	TH_LOG("%s", run.c.output);
	ASSERT_EQ(2, d.workers);
	ASSERT_EQ(1, on_first);
	ASSERT_EQ(1, on_last);
	TH_LOG("each thread at level 100: runnable %.2f, %.2f (on a CPU %.2f, %.2f), sleeps %llu, %llu",
	       d.runnable[0], d.runnable[1], d.on_cpu[0], d.on_cpu[1], d.sleeps[0], d.sleeps[1]);
	/* both really spin: neither sleeps, each wants its CPU all along, however busy it is */
	for (int w = 0; w < 2; w++) {
		ASSERT_LT(d.sleeps[w], 10);
		ASSERT_GE(d.runnable[w] + d.steal, 0.8);
	}
}

TEST_F(stress, args__version_and_help_cover_every_option)
{
	static const char *const options[] = { "--cores",    "--kind",	    "--level",
					       "--duration", "--buffer-mb", "--fill",
					       "--control",  "--help",	    "--version" };
	const char *version[] = { "--version", NULL }, *help[] = { "--help", NULL };
	struct stress_run run;

	ASSERT_EQ(0, stress_run(self->bin, version, &run));
	ASSERT_TRUE(WIFEXITED(run.c.status) && WEXITSTATUS(run.c.status) == 0);
	ASSERT_EQ(0, strncmp(run.c.output, "coloc-stress (coloc) ", 21)) TH_LOG("%s", run.c.output);
	ASSERT_EQ(0, stress_run(self->bin, help, &run));
	ASSERT_TRUE(WIFEXITED(run.c.status) && WEXITSTATUS(run.c.status) == 0);
	for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
		ASSERT_NE(NULL, strstr(run.c.output, options[i])) TH_LOG("%s", options[i]);
	}
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
		{ "--level", "10", "extra", NULL }, { "--fill", "busy", NULL },
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct stress_run run;

		ASSERT_EQ(0, stress_run(self->bin, bad[i], &run));
		ASSERT_TRUE(WIFEXITED(run.c.status)) TH_LOG("case %zu", i);
		ASSERT_EQ(2, WEXITSTATUS(run.c.status)) TH_LOG("case %zu: %s", i, run.c.output);
		ASSERT_NE(NULL, strstr(run.c.output, "coloc-stress: ")) TH_LOG("case %zu", i);
	}
}

TEST_HARNESS_MAIN
