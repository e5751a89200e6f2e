// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The threads of a block's run: running queries creates no thread and no
 * oneDNN primitive (the count the executor keeps and oneDNN's own verbose
 * log agree); each team thread is pinned to its core and every thread of
 * the process is observed only on the block's cores while blocks run
 * (sampled from /proc); the cost of moving the team between core sets is
 * measured and printed, never asserted (timings on this 2-core box are
 * noisy).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "exec_fixture.h"
#include "proc_stat.h"
#include "proc_tasks.h"
#include "testutil.h"

/* oneDNN writes its verbose log to stdout: capture it in a file. */
static int capture_stdout(char *path, size_t len, int *saved)
{
	int fd;

	snprintf(path, len, "/tmp/coloc-exec-verbose-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	fflush(stdout);
	*saved = dup(1);
	dup2(fd, 1);
	close(fd);
	return 0;
}

static int count_lines(const char *path, const char *needle)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* Threads of this process. */
static int nr_tasks(void)
{
	return tu_tasks_each(getpid(), NULL, NULL);
}

TEST_F(exec, run_block__creates_no_primitives_nor_threads)
{
	int tasks = nr_tasks();
	struct exec_cpuset sets[2] = { { .nr = 1, .cpus = { 0 } }, { .nr = 2, .cpus = { 0, 1 } } };
	uint64_t before = exec_model_nr_primitives(self->em);
	int n = self->m->nr_layers, saved = -1, *versions = calloc((size_t)n, sizeof(int));
	char path[64];

	ASSERT_GT(before, (uint64_t)n);
	ASSERT_EQ(0, capture_stdout(path, sizeof(path), &saved));
	ASSERT_EQ(dnnl_success, dnnl_set_verbose(2));
	for (int v = 0; v < 3; v++) {
		for (int li = 0; li < n; li++)
			versions[li] = v < exec_layer_nr_versions(self->em, li) ? v : 0;
		for (int s = 0; s < self->opts.cpus.nr; s++)
			ASSERT_EQ(0, exec_run_block(self->em, self->q, 0, n, versions, &sets[s],
						    NULL));
	}
	dnnl_set_verbose(0);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	EXPECT_EQ(before, exec_model_nr_primitives(self->em));
	EXPECT_EQ(tasks, nr_tasks());
	EXPECT_EQ(0, count_lines(path, ",create"));
	EXPECT_GT(count_lines(path, ",exec,"), n);
	unlink(path);
	free(versions);
}

/* ---- pinning ------------------------------------------------------------------ */

#define SAMPLER_MAX_TASKS 64

/*
 * Watches every thread of the process but itself: a thread that gained CPU
 * time since the last look is recorded as having run on the CPU it last ran
 * on (field 39 of its stat). Idle threads are not counted where they sleep.
 */
struct sampler {
	pthread_t thread;
	volatile int stop;
	pid_t self;
	int nr;
	pid_t tids[SAMPLER_MAX_TASKS];
	uint64_t ticks[SAMPLER_MAX_TASKS];
	uint64_t ran_on; /* bit c: some thread of the process ran on cpu c */
	int samples;
};

/* CPU time (utime + stime) and the CPU last run on, from /proc/self/task/TID/stat. */
static int task_stat(pid_t tid, uint64_t *ticks, int *cpu)
{
	unsigned long long f[PROC_STAT_PROCESSOR + 1];
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (proc_stat_read(path, NULL, f, PROC_STAT_PROCESSOR + 1))
		return -1;
	*ticks = f[PROC_STAT_UTIME] + f[PROC_STAT_STIME];
	*cpu = (int)f[PROC_STAT_PROCESSOR];
	return 0;
}

static void sampler_look_at(pid_t pid, pid_t tid, void *ctx)
{
	struct sampler *s = ctx;
	uint64_t ticks;
	int i, cpu;

	(void)pid;
	if (tid == s->self || task_stat(tid, &ticks, &cpu))
		return;
	for (i = 0; i < s->nr && s->tids[i] != tid; i++)
		;
	if (i == s->nr) {
		if (s->nr == SAMPLER_MAX_TASKS)
			return;
		s->tids[s->nr++] = tid;
		s->ticks[i] = ticks;
		return;
	}
	if (ticks > s->ticks[i] && cpu >= 0 && cpu < 64)
		s->ran_on |= 1ull << cpu;
	s->ticks[i] = ticks;
}

static void sampler_look(struct sampler *s)
{
	if (tu_tasks_each(getpid(), sampler_look_at, s) >= 0)
		s->samples++;
}

static void *sample_cpus(void *arg)
{
	struct sampler *s = arg;
	cpu_set_t all;

	s->self = (pid_t)syscall(SYS_gettid);
	/* Created by a pinned thread: free the sampler to run beside the team. */
	CPU_ZERO(&all);
	for (int c = 0; c < nr_cpus() && c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	sched_setaffinity(0, sizeof(all), &all);
	while (!s->stop) {
		sampler_look(s);
		usleep(2000);
	}
	return NULL;
}

/* The calling thread (team thread 0, and the parent of any new team thread) is confined. */
static bool caller_confined_to(uint64_t allowed)
{
	cpu_set_t mask;

	if (sched_getaffinity(0, sizeof(mask), &mask))
		return false;
	for (int c = 0; c < 64 && c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mask) && !(allowed & (1ull << c)))
			return false;
	return CPU_COUNT(&mask) > 0;
}

TEST_F(exec, run_block__threads_run_only_on_block_cores)
{
	struct exec_cpuset sets[3] = { { .nr = 1, .cpus = { 0 } },
				       { .nr = 1, .cpus = { 1 } },
				       { .nr = 2, .cpus = { 0, 1 } } };
	int n = self->m->nr_layers;

	if (self->opts.cpus.nr < 2)
		SKIP(return, "needs 2 online CPUs");
	for (int s = 0; s < 3; s++) {
		struct sampler smp = { .self = -1 };
		uint64_t allowed = 0;
		int cpus[2] = { -1, -1 };

		for (int i = 0; i < sets[s].nr; i++)
			allowed |= 1ull << sets[s].cpus[i];
		ASSERT_EQ(0, exec_run_block(self->em, self->q, 0, n, NULL, &sets[s], NULL));
		/* Inside the team, thread i runs on cpus[i] (libgomp reuses its threads). */
#pragma omp parallel num_threads(sets[s].nr)
		cpus[omp_get_thread_num()] = sched_getcpu();
		for (int i = 1; i < sets[s].nr; i++)
			EXPECT_EQ(sets[s].cpus[i], cpus[i]);
		EXPECT_TRUE(caller_confined_to(allowed));

		/*
		 * Threads left out of the team were moved off the set and may spin
		 * there briefly (GOMP_SPINCOUNT) after the pinning: let that end, then
		 * no thread at all may gain CPU time outside the set while blocks run.
		 */
		usleep(100000);
		ASSERT_EQ(0, pthread_create(&smp.thread, NULL, sample_cpus, &smp));
		/* Run until the sampler has looked often enough (bounded). */
		for (int it = 0; it < 30 || (smp.samples < 20 && it < 5000); it++)
			ASSERT_EQ(0, exec_run_block(self->em, self->q, 0, n, NULL, &sets[s], NULL));
		smp.stop = 1;
		pthread_join(smp.thread, NULL);
		EXPECT_GT(smp.samples, 0);
		EXPECT_NE(0, smp.ran_on & allowed);
		EXPECT_EQ(0, smp.ran_on & ~allowed);
		EXPECT_TRUE(caller_confined_to(allowed));
		TH_LOG("set %d: %d threads watched, ran on cpus %#llx, allowed %#llx", s, smp.nr,
		       (unsigned long long)smp.ran_on, (unsigned long long)allowed);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

TEST_F(exec, run_block__measures_core_switch_cost)
{
	struct exec_cpuset sets[3] = { { .nr = 1, .cpus = { 0 } },
				       { .nr = 2, .cpus = { 0, 1 } },
				       { .nr = 1, .cpus = { 1 } } };
	enum { RUNS = 300 };
	uint64_t sw[RUNS];

	if (self->opts.cpus.nr < 2)
		SKIP(return, "needs 2 online CPUs");
	for (int i = 0; i < RUNS; i++) {
		struct exec_block_stats st;

		/* One cheap layer (the pool), so the switch dominates the block. */
		ASSERT_EQ(0, exec_run_block(self->em, self->q, 2, 3, NULL, &sets[i % 3], &st));
		ASSERT_LE(st.switch_ns, st.latency_ns);
		sw[i] = st.switch_ns;
	}
	qsort(sw, RUNS, sizeof(sw[0]), cmp_u64);
	printf("# block switch cost over %d switches: p50 %.1f us, p99 %.1f us, max %.1f us\n",
	       RUNS, sw[RUNS / 2] / 1e3, sw[RUNS * 99 / 100] / 1e3, sw[RUNS - 1] / 1e3);
	fflush(stdout);
}

TEST_HARNESS_MAIN
