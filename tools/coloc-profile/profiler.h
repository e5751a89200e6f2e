/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What coloc-profile's files share: the profiler's state, the measuring of
 * every cell under stress (measure.c) and the whole-model runs that say how
 * busy the machine was (solo.c); tools/coloc-profile.c parses the command
 * line, finds the cache and writes the profile.
 *
 * Every run is on one live query (exec_query_new_live), the arena serving
 * uses: a block runs only where the query's last block ended, so timing a
 * layer first runs, untimed, the layers before it (profiler_seek).
 */
#ifndef COLOC_TOOLS_COLOC_PROFILE_PROFILER_H
#define COLOC_TOOLS_COLOC_PROFILE_PROFILER_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "executor.h"
#include "model_open.h"
#include "profile_host.h"

/* Whole-model runs before each core count and at the end (PROFILE_SOLO_RUNS each). */
#define PROFILE_SOLO_RUNS 9

struct profiler {
	struct model_source src;
	struct model *model; /* src's */
	struct exec_model *em;
	struct exec_query *q; /* live */
	int at; /* the layer q's next block must start at (0: any) */
	struct profile *p;
	struct exec_cpuset allowed;
	char stress_bin[PATH_MAX];
	char partial[PATH_MAX];
	size_t cells_total, cells_done;
	uint64_t started_ns, last_save_ns;
	bool tty, verbose;
	/* whole-model latencies on every allowed core, pooled over the profile (solo.c) */
	uint64_t solo_ns[PROFILE_SOLO_RUNS * (PROFILE_MAX_CORES + 1)];
	int nr_solo;
	/*
	 * per run above (a round), the latency of the run after each gap of
	 * the cold ramp over its own: cold_ratio[gap][round] (solo.c)
	 */
	double cold_ratio[PROFILE_MAX_COLD_POINTS][PROFILE_SOLO_RUNS * (PROFILE_MAX_CORES + 1)];
	int nr_cold; /* rounds */
	uint64_t cold_gap_ns; /* the long gap, the ramp's last; 0: from the first run */
	uint64_t gaps_ns[PROFILE_MAX_COLD_POINTS]; /* the ramp's gaps, set with the long one */
	int nr_gaps;
	struct profile_cpu_ticks ticks_start;
};

/* Set by coloc-profile's SIGINT and SIGTERM handler. */
extern volatile sig_atomic_t profiler_interrupted;

/* Every missing cell of pr->p, one core count after the other (measure.c). 0 or -errno. */
int profiler_measure_all(struct profiler *pr);
/* Saves pr->p in pr->partial; 0 or -errno, the reason printed. */
int profiler_save_partial(struct profiler *pr);
/*
 * Brings q to layer `layer` (the next block starts there): runs layers
 * [0, layer) untimed, version 0, on set, unless q is there already. 0 or -errno.
 */
int profiler_seek(struct profiler *pr, const struct exec_cpuset *set, int layer);

/*
 * The idle gap before a cold run when --cold-gap-ms is not given: what 10 %
 * load leaves a model between queries on average (9 x its latency), within
 * these bounds (docs/design/profile-cold-start.md).
 */
#define PROFILE_COLD_GAP_MIN_NS 20000000ULL
#define PROFILE_COLD_GAP_MAX_NS 50000000ULL
/*
 * The ramp's shorter gaps, each measured where it is below the long one:
 * where the cold price rises fastest (1-5 ms) and between there and the
 * long gap (docs/design/profile-cold-start.md).
 */
#define PROFILE_COLD_SHORT_GAPS_NS                  \
	{                                           \
		1000000ULL, 4000000ULL, 12000000ULL \
	}

/*
 * PROFILE_SOLO_RUNS rounds of whole-model runs on every allowed core, kept
 * in pr (solo.c): one back to back after the run before (hot), then one
 * after each of pr->gaps_ns idle, the shortest first, the long gap
 * pr->cold_gap_ns last (cold). 0 or -errno.
 */
int profiler_time_solo(struct profiler *pr);
/* The conditions of pr->p from the runs kept so far and the machine's counters now. */
void profiler_conditions(struct profiler *pr, struct profile_conditions *c);
/* Prints c as a line of coloc-profile's output, prefixed by what. */
void profiler_print_conditions(const char *what, const struct profile_conditions *c);

#endif /* COLOC_TOOLS_COLOC_PROFILE_PROFILER_H */
