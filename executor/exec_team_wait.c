// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Waiting for the next block with the OpenMP team parked on the doorbell
 * (exec_team_wait). libgomp's pool threads wait between parallel regions
 * by spinning GOMP_SPINCOUNT times and then sleeping on a futex of
 * libgomp's; the count is read once at start-up. Spinning is what a block
 * wants between its layers, and what no core should see between blocks,
 * when colocd may have given it to another tenant. So between blocks the
 * team waits inside one parallel region of our own, each thread asleep on
 * the doorbell's futex word: no libgomp spin runs, and the doorbell's one
 * FUTEX_WAKE wakes every thread at once, before the block's first layer
 * instead of one parallel region after the caller. docs/design/serving-path.md.
 * In a process of lanes taking turns (exec_team_turns.c) the team also
 * wakes when another lane asks for its threads, and ends before sleeping on.
 * colocd may ring early (struct coloc_shm_ready, shm.h): the threads on the
 * cores it names then spin on the doorbell, bounded, until the command lands.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <omp.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "coloc/shm.h"
#include "exec_internal.h"

static bool waiting(const uint32_t *word, uint32_t seen, const atomic_uint *asked)
{
	return __atomic_load_n(word, __ATOMIC_ACQUIRE) == seen && !(asked && atomic_load(asked));
}

/* colocd rang early for the command after seen, naming cpu among its cores. */
static bool rung_early_for(const struct coloc_shm_ready *ready, uint32_t seen, int cpu)
{
	if (!ready || cpu < 0 || cpu >= COLOC_MAX_CPUS ||
	    __atomic_load_n(&ready->seq, __ATOMIC_ACQUIRE) != seen + 1)
		return false;
	return __atomic_load_n(&ready->cpus[cpu / 64], __ATOMIC_RELAXED) >> (cpu % 64) & 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* At most COLOC_SHM_READY_SPIN_NS on the doorbell, on a core colocd named. */
static void spin_on(const uint32_t *word, uint32_t seen, const atomic_uint *asked)
{
	uint64_t until = mono_ns() + COLOC_SHM_READY_SPIN_NS;

	while (waiting(word, seen, asked) && mono_ns() < until)
		for (int i = 0; i < 64; i++)
			__builtin_ia32_pause();
}

/*
 * At most COLOC_SHM_READY_SPIN_NS until all n threads are awake: a thread
 * woken early is awake well before the one on colocd's core, which runs
 * only once colocd sleeps; without this it would fall asleep in the park
 * region's closing barrier and need a wake of its halted vCPU again.
 */
static void spin_until_whole(const unsigned int *awake, unsigned int n)
{
	uint64_t until = mono_ns() + COLOC_SHM_READY_SPIN_NS;

	while (__atomic_load_n(awake, __ATOMIC_ACQUIRE) < n && mono_ns() < until)
		for (int i = 0; i < 64; i++)
			__builtin_ia32_pause();
}

/*
 * Sleeps until *word != seen or *asked (shared futex: the waker may be
 * another process; a lane asking for the team wakes word too), in
 * FUTEX_WAIT_BITSET on its core's bit, so that colocd's early ring wakes
 * only the threads of the cores it names; those spin once (spin_on).
 * true when it spun.
 */
static bool sleep_on(uint32_t *word, uint32_t seen, const atomic_uint *asked,
		     const struct coloc_shm_ready *ready)
{
	int cpu = ready ? sched_getcpu() : -1;
	uint32_t bit = cpu >= 0 ? 1u << (cpu % 32) : FUTEX_BITSET_MATCH_ANY;
	bool spun = false;

	while (waiting(word, seen, asked)) {
		if (!spun && rung_early_for(ready, seen, cpu)) {
			spun = true;
			spin_on(word, seen, asked);
			continue;
		}
		syscall(SYS_futex, word, FUTEX_WAIT_BITSET, seen, NULL, NULL, bit);
	}
	return spun;
}

uint32_t exec_team_wait(uint32_t *word, uint32_t seen)
{
	return exec_team_wait_ready(word, seen, NULL);
}

uint32_t exec_team_wait_ready(uint32_t *word, uint32_t seen, const struct coloc_shm_ready *ready)
{
	const atomic_uint *asked = exec_team_turns_asked();

	for (;;) {
		int n;
		bool woken = false;
		unsigned int awake = 0;

		/* another lane asked for this one's threads: they go before it sleeps */
		exec_team_turns_yield();
		n = exec_team_last_size();
		if (n <= 1) {
			sleep_on(word, seen, asked, ready);
		} else {
#pragma omp parallel num_threads(n) shared(woken, awake)
			{
				bool spun = sleep_on(word, seen, asked, ready);

				/* a waker that woke one waiter only: the first awake wakes the others */
				if (!__atomic_exchange_n(&woken, true, __ATOMIC_ACQ_REL))
					syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
				__atomic_add_fetch(&awake, 1, __ATOMIC_ACQ_REL);
				if (spun && __atomic_load_n(word, __ATOMIC_ACQUIRE) != seen)
					spin_until_whole(&awake, (unsigned int)n);
			}
		}
		if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != seen)
			return __atomic_load_n(word, __ATOMIC_ACQUIRE);
	}
}
