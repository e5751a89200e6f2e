// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The parse gate (parse_gate.h): one counting semaphore, sized on first
 * use from the CPUs online, waited on with CLOCK_MONOTONIC deadlines.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <time.h>
#include <unistd.h>
#include "parse_gate.h"

static sem_t parse_turns;
static pthread_once_t parse_turns_once = PTHREAD_ONCE_INIT;

static void parse_gate_init(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long turns = (cpus > 0 ? cpus : 1) * GW_PARSES_PER_CPU;

	sem_init(&parse_turns, 0, (unsigned int)(turns < GW_PARSES_MAX ? turns : GW_PARSES_MAX));
}

int gw_parse_gate_enter(uint64_t deadline_ns)
{
	struct timespec until = { .tv_sec = (time_t)(deadline_ns / 1000000000ull),
				  .tv_nsec = (long)(deadline_ns % 1000000000ull) };

	pthread_once(&parse_turns_once, parse_gate_init);
	while (sem_clockwait(&parse_turns, CLOCK_MONOTONIC, &until))
		if (errno != EINTR)
			return -ETIMEDOUT;
	return 0;
}

void gw_parse_gate_leave(void)
{
	sem_post(&parse_turns);
}
