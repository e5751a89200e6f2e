// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-profile's whole-model runs (profiler.h): the model on every core
 * this process may use, version 0 everywhere, on the live query the cells
 * are timed on, PROFILE_SOLO_RUNS pairs at a time (after one untimed run)
 * before each core count and at the end. Each pair is a run back to back
 * after the one before (hot, as the cells are timed) and a run after an
 * idle gap (cold, as a query served alone at low load starts). The hot
 * runs' median and spread, the load average and the stolen CPU time make
 * the profile's conditions: a wide spread says other work shared the
 * cores while the cells were timed. The pairs' cold / hot ratios make its
 * cold start: interleaved, each ratio is taken within a few milliseconds,
 * so the machine's slow drift cancels in it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "profiler.h"

/* Sleeps ns, resuming after a signal unless the run is interrupted. */
static void idle_for(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ULL),
			       .tv_nsec = (long)(ns % 1000000000ULL) };

	while (nanosleep(&ts, &ts) && errno == EINTR && !profiler_interrupted)
		;
}

/* 9 x the model's latency (what 10 % load leaves between queries), within the bounds. */
static uint64_t default_gap_ns(uint64_t hot_ns)
{
	uint64_t gap = 9 * hot_ns;

	if (gap < PROFILE_COLD_GAP_MIN_NS)
		return PROFILE_COLD_GAP_MIN_NS;
	return gap > PROFILE_COLD_GAP_MAX_NS ? PROFILE_COLD_GAP_MAX_NS : gap;
}

int profiler_time_solo(struct profiler *pr)
{
	int n = pr->model->nr_layers, ret;

	if (pr->nr_solo + PROFILE_SOLO_RUNS > (int)(sizeof(pr->solo_ns) / sizeof(pr->solo_ns[0])))
		return -ENOSPC;
	ret = exec_run_block(pr->em, pr->q, 0, n, NULL, &pr->allowed, NULL);
	for (int r = 0; r < PROFILE_SOLO_RUNS && !ret; r++) {
		struct exec_block_stats hot, cold;

		ret = exec_run_block(pr->em, pr->q, 0, n, NULL, &pr->allowed, &hot);
		if (ret)
			break;
		pr->solo_ns[pr->nr_solo++] = hot.latency_ns;
		if (!pr->cold_gap_ns)
			pr->cold_gap_ns = default_gap_ns(hot.latency_ns);
		idle_for(pr->cold_gap_ns);
		ret = exec_run_block(pr->em, pr->q, 0, n, NULL, &pr->allowed, &cold);
		if (!ret && hot.latency_ns)
			pr->cold_ratio[pr->nr_cold++] =
				(double)cold.latency_ns / (double)hot.latency_ns;
	}
	pr->at = ret ? 0 : n;
	if (ret)
		fprintf(stderr, "\ncoloc-profile: running the whole model on %d cores: %s\n",
			pr->allowed.nr, strerror(-ret));
	return ret;
}

void profiler_conditions(struct profiler *pr, struct profile_conditions *c)
{
	uint64_t runs[sizeof(pr->solo_ns) / sizeof(pr->solo_ns[0])];
	double ratios[sizeof(pr->cold_ratio) / sizeof(pr->cold_ratio[0])];
	struct profile_cpu_ticks now;

	memset(c, 0, sizeof(*c));
	if (!pr->nr_solo)
		return;
	memcpy(runs, pr->solo_ns, (size_t)pr->nr_solo * sizeof(runs[0]));
	profile_solo_summary(runs, pr->nr_solo, &c->solo_ns, &c->spread);
	if (pr->nr_cold) {
		memcpy(ratios, pr->cold_ratio, (size_t)pr->nr_cold * sizeof(ratios[0]));
		profile_ratio_summary(ratios, pr->nr_cold, &c->cold_ratio, &c->cold_spread);
		/* what the parser takes: a disturbed run still makes a readable profile */
		if (c->cold_ratio > PROFILE_MAX_COLD_RATIO)
			c->cold_ratio = PROFILE_MAX_COLD_RATIO;
		c->cold_gap_ns = pr->cold_gap_ns;
		c->cold_pairs = pr->nr_cold;
	}
	if (profile_loadavg_read(&c->loadavg))
		c->loadavg = 0;
	if (!profile_cpu_ticks_read(&now))
		c->steal = profile_steal_share(&pr->ticks_start, &now);
	c->known = true;
}

void profiler_print_conditions(const char *what, const struct profile_conditions *c)
{
	printf("coloc-profile: %s: whole model %.3f ms (spread %.1f %%), load average %.2f, steal %.1f %%\n",
	       what, (double)c->solo_ns / 1e6, c->spread * 100, c->loadavg, c->steal * 100);
	if (c->cold_ratio > 0)
		printf("coloc-profile: %s: cold start %.3f x hot (median of %d pairs, spread %.1f %%) after %.1f ms idle\n",
		       what, c->cold_ratio, c->cold_pairs, c->cold_spread * 100,
		       (double)c->cold_gap_ns / 1e6);
}
