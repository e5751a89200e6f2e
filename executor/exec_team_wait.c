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
 */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <omp.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "exec_internal.h"

/*
 * Sleeps until *word != seen or *asked (shared futex: the waker may be
 * another process; a lane asking for the team wakes word too).
 */
static void sleep_on(uint32_t *word, uint32_t seen, const atomic_uint *asked)
{
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == seen && !(asked && atomic_load(asked)))
		syscall(SYS_futex, word, FUTEX_WAIT, seen, NULL, NULL, 0);
}

uint32_t exec_team_wait(uint32_t *word, uint32_t seen)
{
	const atomic_uint *asked = exec_team_turns_asked();

	for (;;) {
		int n;
		bool woken = false;

		/* another lane asked for this one's threads: they go before it sleeps */
		exec_team_turns_yield();
		n = exec_team_last_size();
		if (n <= 1) {
			sleep_on(word, seen, asked);
		} else {
#pragma omp parallel num_threads(n) shared(woken)
			{
				sleep_on(word, seen, asked);
				/* a waker that woke one waiter only: the first awake wakes the others */
				if (!__atomic_exchange_n(&woken, true, __ATOMIC_ACQ_REL))
					syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
			}
		}
		if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != seen)
			return __atomic_load_n(word, __ATOMIC_ACQUIRE);
	}
}
