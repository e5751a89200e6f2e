// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Lanes taking turns at OpenMP teams (executor/exec_team_turns.c): a lane
 * parked on its doorbell with its team (exec_team_wait) keeps the team
 * until another lane's block would take the process's pool threads past
 * its CPUs; then the parked lane's pool threads exit (their thread ids
 * leave /proc/self/task), the busy lane's blocks run with its team
 * spinning between layers as if alone (voluntary context switches per
 * block; libgomp throttles the spin past the CPUs), and a lane that runs
 * block after block keeps the same team (no thread made or ended).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "model.h"
#include "proc_tasks.h"
#include "testutil.h"

#define BLOCKS 24
#define MAX_TIDS 64

FIXTURE(exec_lane_turns)
{
	struct model *m;
	struct exec_model *em;
	struct exec_cpuset cpus;
};

FIXTURE_SETUP(exec_lane_turns)
{
	const char *root = getenv("COLOC_ROOT");
	struct exec_options o = { 0 };
	struct coloc_err err = { 0 };
	char path[4096];

	o.cpus.nr = 0;
	for (int c = 0; c < EXEC_MAX_CPUS && o.cpus.nr < 2; c++)
		if (exec_cpu_online(c))
			o.cpus.cpus[o.cpus.nr++] = c;
	self->cpus = o.cpus;
	if (o.cpus.nr < 2)
		SKIP(return, "a team of two threads needs two online CPUs");
	snprintf(path, sizeof(path), "%s/models/mobilenet_v2.model", root ? root : ".");
	self->m = model_load(path, &err);
	ASSERT_NE(NULL, self->m) TH_LOG("%s", coloc_err_str(&err));
	self->em = exec_model_load(self->m, &o, &err);
	ASSERT_NE(NULL, self->em) TH_LOG("%s", coloc_err_str(&err));
}

FIXTURE_TEARDOWN(exec_lane_turns)
{
	exec_model_free(self->em);
	model_free(self->m);
}

struct thread_ids {
	pid_t *tids;
	int n, max;
};

static void add_thread_id(pid_t pid, pid_t tid, void *ctx)
{
	struct thread_ids *t = ctx;

	(void)pid;
	if (t->n < t->max)
		t->tids[t->n++] = tid;
}

/* This process's thread ids into tids (in the directory's order): how many (max at most), or -1. */
static int thread_ids(pid_t *tids, int max)
{
	struct thread_ids t = { .tids = tids, .max = max };

	return tu_tasks_each(getpid(), add_thread_id, &t) < 0 ? -1 : t.n;
}

static bool has_tid(const pid_t *tids, int n, pid_t tid)
{
	for (int i = 0; i < n; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/* A lane on a thread of its own: one block on every core, then parked on its doorbell. */
struct parked_lane {
	struct exec_model *em;
	struct exec_cpuset cores;
	uint32_t doorbell; /* 0: park, 1: end */
	atomic_int ran; /* 1: the block ran (ret set) */
	pid_t tid;
	int ret;
};

static void *parked_main(void *arg)
{
	struct parked_lane *l = arg;
	struct coloc_err err = { 0 };
	struct exec_lane *lane = exec_lane_new(l->em, &err);
	struct exec_query *q = lane ? exec_query_new_live(l->em, lane) : NULL;

	l->tid = (pid_t)syscall(SYS_gettid);
	l->ret = q ? exec_team_turns_join(&l->doorbell, l->cores.nr) : -ENOMEM;
	if (!l->ret) {
		exec_query_fill_inputs(q, exec_model_graph(l->em), 3);
		l->ret = exec_run_block(l->em, q, 0, exec_model_graph(l->em)->nr_layers, NULL,
					&l->cores, NULL);
	}
	atomic_store(&l->ran, 1);
	while (__atomic_load_n(&l->doorbell, __ATOMIC_ACQUIRE) == 0)
		exec_team_wait(&l->doorbell, 0);
	exec_team_turns_leave();
	exec_query_free(q);
	exec_lane_free(lane);
	return NULL;
}

/* Voluntary switches per whole-model block of q on cores, over BLOCKS blocks. */
static double switches_per_block(struct exec_model *em, struct exec_query *q,
				 const struct exec_cpuset *cores)
{
	int nr = exec_model_graph(em)->nr_layers;
	long before = tu_voluntary_switches(0);

	for (int i = 0; i < BLOCKS; i++) {
		int ret = exec_run_block(em, q, 0, nr, NULL, cores, NULL);

		if (ret) {
			fprintf(stderr, "# a block failed: %s\n", strerror(-ret));
			return -1.0;
		}
	}
	return (double)(tu_voluntary_switches(0) - before) / BLOCKS;
}

/*
 * The parked lane's one pool thread, the busy lane's one and libgomp's
 * initial thread would be three on two CPUs: the busy lane's first block
 * ends the parked lane's team, and its own team then runs unthrottled and
 * stays the same from block to block.
 */
TEST_F(exec_lane_turns, claim__ends_the_parked_lanes_team_and_keeps_its_own)
{
	struct parked_lane l = { .em = self->em, .cores = self->cpus };
	pid_t before[MAX_TIDS], parked[MAX_TIDS], after[MAX_TIDS], again[MAX_TIDS], pool = 0;
	int nr_before, nr_parked, nr_after, nr_again, nr_pool = 0;
	uint32_t own_doorbell = 0;
	struct exec_query *q;
	pthread_t th;
	double busy;

	ASSERT_EQ(0, exec_team_turns_join(&own_doorbell, self->cpus.nr));
	q = exec_query_new_live(self->em, NULL);
	ASSERT_NE(NULL, q);
	exec_query_fill_inputs(q, self->m, 1);
	nr_before = thread_ids(before, MAX_TIDS);
	ASSERT_LT(0, nr_before);
	ASSERT_EQ(0, pthread_create(&th, NULL, parked_main, &l));
	while (!atomic_load(&l.ran))
		usleep(1000);
	ASSERT_EQ(0, l.ret) TH_LOG("%s", strerror(-l.ret));
	/* the parked lane's thread and its one pool thread are new */
	nr_parked = thread_ids(parked, MAX_TIDS);
	ASSERT_LT(0, nr_parked);
	for (int i = 0; i < nr_parked; i++)
		if (parked[i] != l.tid && !has_tid(before, nr_before, parked[i]) && nr_pool++ == 0)
			pool = parked[i];
	ASSERT_EQ(1, nr_pool) TH_LOG("the parked lane holds %d pool threads, not one", nr_pool);

	/* the first block asks the parked lane for its thread */
	ASSERT_EQ(0, exec_run_block(self->em, q, 0, self->m->nr_layers, NULL, &self->cpus, NULL));
	nr_after = thread_ids(after, MAX_TIDS);
	ASSERT_LT(0, nr_after);
	EXPECT_FALSE(has_tid(after, nr_after, pool))
	TH_LOG("the parked lane's pool thread %d is still there", (int)pool);
	EXPECT_EQ(0, exec_team_turns_overruns());
	busy = switches_per_block(self->em, q, &self->cpus);
	ASSERT_LE(0.0, busy);
	nr_again = thread_ids(again, MAX_TIDS);
	EXPECT_EQ(nr_after, nr_again);
	for (int i = 0; i < nr_after; i++) {
		EXPECT_TRUE(has_tid(again, nr_again, after[i]))
		TH_LOG("thread %d ended between blocks of one lane", (int)after[i]);
	}
	TH_LOG("voluntary switches per 2-core block of MobileNet-V2 (%d layers) beside the "
	       "parked lane: %.1f",
	       self->m->nr_layers, busy);
	/* throttled (a spin of 100), the team sleeps at most of the layers' regions */
	if (sysconf(_SC_NPROCESSORS_ONLN) <= 2)
		EXPECT_LT(busy, self->m->nr_layers / 4.0);

	__atomic_store_n(&l.doorbell, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &l.doorbell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	ASSERT_EQ(0, pthread_join(th, NULL));
	exec_query_free(q);
}

/* A lane not joined is refused nothing; a second join of one thread is refused. */
TEST_F(exec_lane_turns, join__twice_is_refused)
{
	uint32_t doorbell = 0;

	EXPECT_EQ(-EINVAL, exec_team_turns_join(NULL, 2));
	EXPECT_EQ(-EINVAL, exec_team_turns_join(&doorbell, 0));
	ASSERT_EQ(0, exec_team_turns_join(&doorbell, 2));
	EXPECT_EQ(-EALREADY, exec_team_turns_join(&doorbell, 2));
}

/* Threads that join and stay until told, so that every slot is held at once. */
struct joiner {
	uint32_t doorbell;
	pthread_barrier_t *joined;
	atomic_int *go_leave;
	int ret;
};

static void *join_and_hold(void *arg)
{
	struct joiner *j = arg;

	j->ret = exec_team_turns_join(&j->doorbell, 2);
	pthread_barrier_wait(j->joined);
	while (!atomic_load(j->go_leave))
		usleep(1000);
	if (!j->ret)
		exec_team_turns_leave();
	return NULL;
}

/* The lanes a process holds at once are bounded, and a lane that left gives its slot back. */
TEST_F(exec_lane_turns, join__slots_are_bounded_and_given_back_on_leave)
{
	enum { HOLDERS = 70 };
	struct joiner *j = calloc(HOLDERS, sizeof(*j));
	pthread_t th[HOLDERS];
	pthread_barrier_t joined;
	atomic_int go_leave = 0;
	uint32_t doorbell = 0;
	int ok = 0, full = 0;

	ASSERT_NE(NULL, j);
	/* one thread joining and leaving many times more than there are slots */
	for (int i = 0; i < 200; i++) {
		ASSERT_EQ(0, exec_team_turns_join(&doorbell, 2)) TH_LOG("join %d", i);
		exec_team_turns_leave();
	}
	/* 70 lanes at once: 64 slots taken, the rest refused */
	ASSERT_EQ(0, pthread_barrier_init(&joined, NULL, HOLDERS + 1));
	for (int i = 0; i < HOLDERS; i++) {
		j[i] = (struct joiner){ .joined = &joined, .go_leave = &go_leave };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, join_and_hold, &j[i]));
	}
	pthread_barrier_wait(&joined);
	for (int i = 0; i < HOLDERS; i++) {
		ok += j[i].ret == 0;
		full += j[i].ret == -ENOSPC;
	}
	EXPECT_EQ(64, ok);
	EXPECT_EQ(HOLDERS - 64, full);
	EXPECT_EQ(-ENOSPC, exec_team_turns_join(&doorbell, 2));
	atomic_store(&go_leave, 1);
	for (int i = 0; i < HOLDERS; i++)
		pthread_join(th[i], NULL);
	/* all gone: this thread joins again */
	EXPECT_EQ(0, exec_team_turns_join(&doorbell, 2));
	exec_team_turns_leave();
	pthread_barrier_destroy(&joined);
	free(j);
}

TEST_HARNESS_MAIN
