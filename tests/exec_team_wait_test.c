// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The doorbell rung early (exec_team_wait_ready, struct coloc_shm_ready in
 * coloc/shm.h), with one waiter pinned to a core as a lane's command
 * thread is: an early ring that names its core wakes it, and it takes a
 * command already posted; one that names another core leaves it asleep
 * (its FUTEX_WAIT_BITSET bit is not rung), so a command posted without a
 * wake of its own stays unseen until the doorbell's FUTEX_WAKE; and a
 * waiter woken early with no command spins at most its bound, then sleeps
 * again (its CPU time over 200 ms of wall time).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "coloc/shm.h"
#include "executor.h"
#include "testutil.h"

#define WAIT_MS 10000

FIXTURE(exec_team_wait)
{
	pthread_t thread;
	bool joined;
	int cpu; /* the waiter's core */
	uint32_t word; /* the doorbell: cmd.seq */
	struct coloc_shm_ready ready;
	int tid; /* the waiter's, once it runs */
	int returned; /* 1 once exec_team_wait_ready came back */
};

static void *waiter(void *arg)
{
	FIXTURE_DATA(exec_team_wait) *self = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(self->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return NULL;
	__atomic_store_n(&self->tid, (int)gettid(), __ATOMIC_RELEASE);
	exec_team_wait_ready(&self->word, 0, &self->ready);
	__atomic_store_n(&self->returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The waiter's state letter in /proc (S: asleep), '?' if unread. */
static char state_of(int tid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	return p && p[1] == ' ' ? p[2] : '?';
}

static bool returned_within(FIXTURE_DATA(exec_team_wait) * self, int ms)
{
	for (int i = 0; i < ms; i++) {
		if (__atomic_load_n(&self->returned, __ATOMIC_ACQUIRE))
			return true;
		usleep(1000);
	}
	return __atomic_load_n(&self->returned, __ATOMIC_ACQUIRE);
}

/* Rings early for the command after 0, naming cpu, with the futex bits of wake_cpu. */
static void ring_early(FIXTURE_DATA(exec_team_wait) * self, int cpu, int wake_cpu)
{
	memset(self->ready.cpus, 0, sizeof(self->ready.cpus));
	self->ready.cpus[cpu / 64] |= 1ull << (cpu % 64);
	__atomic_store_n(&self->ready.seq, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &self->word, FUTEX_WAKE_BITSET, INT_MAX, NULL, NULL,
		1u << (wake_cpu % 32));
}

static void post(FIXTURE_DATA(exec_team_wait) * self, bool wake)
{
	__atomic_store_n(&self->word, 1, __ATOMIC_RELEASE);
	if (wake)
		syscall(SYS_futex, &self->word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

FIXTURE_SETUP(exec_team_wait)
{
	self->cpu = sched_getcpu();
	ASSERT_LE(0, self->cpu);
	ASSERT_EQ(0, pthread_create(&self->thread, NULL, waiter, self));
	/* asleep on the doorbell: the rings below find it in FUTEX_WAIT_BITSET */
	for (int i = 0; i < WAIT_MS; i++) {
		int tid = __atomic_load_n(&self->tid, __ATOMIC_ACQUIRE);

		if (tid && state_of(tid) == 'S')
			return;
		usleep(1000);
	}
	ASSERT_TRUE(false) TH_LOG("the waiter did not sleep on the doorbell in %d ms", WAIT_MS);
}

FIXTURE_TEARDOWN(exec_team_wait)
{
	post(self, true);
	pthread_join(self->thread, NULL);
}

TEST_F(exec_team_wait, ring_early__naming_its_core_wakes_it_for_the_command)
{
	post(self, false);
	ring_early(self, self->cpu, self->cpu);
	EXPECT_TRUE(returned_within(self, WAIT_MS));
}

TEST_F(exec_team_wait, ring_early__naming_another_core_leaves_it_asleep)
{
	int other = self->cpu + 1;

	post(self, false);
	ring_early(self, other, other);
	/* the command is posted, but nothing woke the waiter to see it */
	EXPECT_FALSE(returned_within(self, 200));
	EXPECT_EQ('S', state_of(self->tid));
	post(self, true);
	EXPECT_TRUE(returned_within(self, WAIT_MS));
}

TEST_F(exec_team_wait, ring_early__without_a_command_it_spins_bounded_then_sleeps)
{
	clockid_t clock;
	struct timespec t0, t1;
	double spun_ms;

	ASSERT_EQ(0, pthread_getcpuclockid(self->thread, &clock));
	ASSERT_EQ(0, clock_gettime(clock, &t0));
	ring_early(self, self->cpu, self->cpu);
	EXPECT_FALSE(returned_within(self, 200));
	ASSERT_EQ(0, clock_gettime(clock, &t1));
	spun_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	TH_LOG("the waiter ran %.3f ms of 200 (bound %.3f)", spun_ms,
	       COLOC_SHM_READY_SPIN_NS / 1e6);
	/* an unbounded spin runs for the 200 ms: 20 ms is 66 x the bound */
	EXPECT_LT(spun_ms, 20.0);
	EXPECT_EQ('S', state_of(self->tid));
	post(self, true);
	EXPECT_TRUE(returned_within(self, WAIT_MS));
}

TEST_HARNESS_MAIN
