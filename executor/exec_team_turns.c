// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Lanes taking turns at OpenMP teams. libgomp counts every pool thread of
 * the process and, once that count exceeds the CPUs the process started
 * on, throttles the spin of every team of the process (docs/design/lanes.md).
 * A lane that joins here keeps its team parked between commands, as a
 * process of one lane does, as long as the process's pools fit its CPUs:
 * before a block on n cores a lane reserves n - 1 pool threads, and where
 * the lanes' reservations would exceed the count, it asks the lanes that
 * hold threads they are not using to end their teams: a flag and a wake on
 * the doorbell they sleep on (exec_team_wait returns to end the team; a
 * lane running a block of one core ends it before its next block). It
 * waits until they have, at most EXEC_TEAM_TURN_WAIT_MS. So a team is made
 * anew only when lanes take turns at the cores, not at every block.
 *
 * The count: libgomp starts at one (the initial thread) and adds a pool's
 * threads but its master; lanes' blocks run on disjoint cores, so the
 * reservations of running blocks always fit together.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "exec_internal.h"
#include "mono_clock.h"

#define TURNS_MAX_LANES 64

/* One lane's share of the process's pool threads. */
struct team_turn {
	atomic_int held; /* pool threads its team holds or is about to make */
	atomic_uint asked; /* another lane wants them ended */
	atomic_bool taken; /* a lane holds this slot; one that leaves frees it */
	uint32_t *doorbell; /* the futex word the lane sleeps on between commands */
};

static struct team_turn turns[TURNS_MAX_LANES];
static atomic_int nr_turns; /* slots ever taken: those below it are looked at */
static atomic_int turn_cpus = INT_MAX; /* libgomp's CPUs, as the lanes know them */
static atomic_uint released; /* futex word: bumped whenever a lane ends its team */
static atomic_ulong overruns; /* claims that stopped waiting before the count fitted */
static __thread struct team_turn *mine;

/* A doorbell may be shared memory (another process rings it too): a shared futex. */
static void wake_doorbell(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int exec_team_turns_join(uint32_t *doorbell, int nr_cpus)
{
	int i, cpus;

	if (!doorbell || nr_cpus < 1)
		return -EINVAL;
	if (mine)
		return -EALREADY;
	for (i = 0; i < TURNS_MAX_LANES; i++) {
		bool free_slot = false;

		if (atomic_compare_exchange_strong(&turns[i].taken, &free_slot, true))
			break;
	}
	if (i == TURNS_MAX_LANES)
		return -ENOSPC;
	for (int n = atomic_load(&nr_turns); n < i + 1;)
		if (atomic_compare_exchange_weak(&nr_turns, &n, i + 1))
			break;
	cpus = atomic_load(&turn_cpus);
	while (nr_cpus < cpus && !atomic_compare_exchange_weak(&turn_cpus, &cpus, nr_cpus))
		;
	turns[i].doorbell = doorbell;
	/* whatever pool the thread made so far goes, and teams are lean from now on */
	exec_team_release();
	mine = &turns[i];
	return 0;
}

const atomic_uint *exec_team_turns_asked(void)
{
	return mine ? &mine->asked : NULL;
}

static void end_team(struct team_turn *me)
{
	exec_team_release();
	atomic_store(&me->held, 0);
	atomic_fetch_add(&released, 1);
	syscall(SYS_futex, &released, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void exec_team_turns_yield(void)
{
	struct team_turn *me = mine;

	if (!me || !atomic_exchange(&me->asked, 0))
		return;
	if (atomic_load(&me->held) > 0)
		end_team(me);
}

/* Pool threads the process would hold: libgomp's initial thread and every lane's. */
static int process_threads(void)
{
	int sum = 1, n = atomic_load(&nr_turns);

	for (int i = 0; i < n && i < TURNS_MAX_LANES; i++)
		sum += atomic_load(&turns[i].held);
	return sum;
}

/* Asks every other lane holding threads to end its team. */
static void ask_others(const struct team_turn *me)
{
	int n = atomic_load(&nr_turns);

	for (int i = 0; i < n && i < TURNS_MAX_LANES; i++) {
		struct team_turn *t = &turns[i];

		if (t == me || atomic_load(&t->held) == 0)
			continue;
		atomic_store(&t->asked, 1);
		wake_doorbell(t->doorbell);
	}
}

void exec_team_turns_claim(int n)
{
	struct team_turn *me = mine;
	uint64_t deadline;

	if (!me)
		return;
	if (atomic_exchange(&me->asked, 0) && atomic_load(&me->held) > n - 1)
		end_team(me);
	/* a team of one leaves libgomp's pool as it is */
	if (n <= 1)
		return;
	atomic_store(&me->held, n - 1);
	deadline = coloc_now_ns() + EXEC_TEAM_TURN_WAIT_MS * 1000000ull;
	for (;;) {
		unsigned int gen = atomic_load(&released);
		struct timespec tick = { .tv_nsec = 200000 };

		if (process_threads() <= atomic_load(&turn_cpus))
			return;
		if (coloc_now_ns() > deadline) {
			atomic_fetch_add(&overruns, 1);
			return;
		}
		/* again at every tick: a wake that landed before its lane slept is lost */
		ask_others(me);
		syscall(SYS_futex, &released, FUTEX_WAIT_PRIVATE, gen, &tick, NULL, 0);
	}
}

void exec_team_turns_leave(void)
{
	struct team_turn *me = mine;

	if (!me)
		return;
	end_team(me);
	atomic_store(&me->asked, 0);
	mine = NULL;
	atomic_store(&me->taken, false);
}

unsigned long exec_team_turns_overruns(void)
{
	return atomic_load(&overruns);
}
