// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-profile's whole-model runs (profiler.h): the model on every core
 * this process may use, version 0 everywhere, on the live query the cells
 * are timed on, PROFILE_SOLO_RUNS rounds at a time (after one untimed run) before each core count and at
 * the end. Each round is a run back to back after the one before (hot, as
 * the cells are timed), then a run after each gap of the cold ramp, the
 * shortest first (cold, as a query served at some load starts). The hot
 * runs' median and spread, the load average and the stolen CPU time make
 * the profile's conditions: a wide spread says other work shared the
 * cores while the cells were timed. Each gap's cold / hot ratios make a
 * point of its cold ramp: interleaved, each ratio is taken within a
 * round, so the machine's slow drift cancels in it.
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

/* The ramp's gaps: the short ones below the long gap, then the long one. */
static void set_gaps(struct profiler *pr, uint64_t hot_ns)
{
	static const uint64_t short_gaps[] = PROFILE_COLD_SHORT_GAPS_NS;

	_Static_assert(sizeof(short_gaps) / sizeof(short_gaps[0]) < PROFILE_MAX_COLD_POINTS,
		       "the short gaps and the long one fit a profile");
	if (!pr->cold_gap_ns)
		pr->cold_gap_ns = default_gap_ns(hot_ns);
	pr->nr_gaps = 0;
	for (size_t i = 0; i < sizeof(short_gaps) / sizeof(short_gaps[0]); i++)
		if (short_gaps[i] < pr->cold_gap_ns)
			pr->gaps_ns[pr->nr_gaps++] = short_gaps[i];
	pr->gaps_ns[pr->nr_gaps++] = pr->cold_gap_ns;
}

/* One round's cold runs after hot_ns, each gap's ratio kept. 0 or -errno. */
static int cold_round(struct profiler *pr, int n, uint64_t hot_ns)
{
	for (int g = 0; g < pr->nr_gaps; g++) {
		struct exec_block_stats cold;
		int ret;

		idle_for(pr->gaps_ns[g]);
		ret = exec_run_block(pr->em, pr->q, 0, n, NULL, &pr->allowed, &cold);
		if (ret)
			return ret;
		pr->cold_ratio[g][pr->nr_cold] = (double)cold.latency_ns / (double)hot_ns;
	}
	pr->nr_cold++;
	return 0;
}

int profiler_time_solo(struct profiler *pr)
{
	int n = pr->model->nr_layers, ret;

	if (pr->nr_solo + PROFILE_SOLO_RUNS > (int)(sizeof(pr->solo_ns) / sizeof(pr->solo_ns[0])))
		return -ENOSPC;
	ret = exec_run_block(pr->em, pr->q, 0, n, NULL, &pr->allowed, NULL);
	for (int r = 0; r < PROFILE_SOLO_RUNS && !ret; r++) {
		struct exec_block_stats hot;

		ret = exec_run_block(pr->em, pr->q, 0, n, NULL, &pr->allowed, &hot);
		if (ret)
			break;
		pr->solo_ns[pr->nr_solo++] = hot.latency_ns;
		if (!pr->nr_gaps)
			set_gaps(pr, hot.latency_ns);
		if (hot.latency_ns)
			ret = cold_round(pr, n, hot.latency_ns);
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
	double ratios[sizeof(pr->cold_ratio[0]) / sizeof(pr->cold_ratio[0][0])];
	struct profile_cpu_ticks now;

	memset(c, 0, sizeof(*c));
	if (!pr->nr_solo)
		return;
	memcpy(runs, pr->solo_ns, (size_t)pr->nr_solo * sizeof(runs[0]));
	profile_solo_summary(runs, pr->nr_solo, &c->solo_ns, &c->spread);
	for (int g = 0; pr->nr_cold && g < pr->nr_gaps; g++) {
		struct profile_cold_point *pt = &c->cold[c->nr_cold++];

		memcpy(ratios, pr->cold_ratio[g], (size_t)pr->nr_cold * sizeof(ratios[0]));
		profile_ratio_summary(ratios, pr->nr_cold, &pt->ratio, &pt->spread);
		/* what the parser takes: a disturbed run still makes a readable profile */
		if (pt->ratio > PROFILE_MAX_COLD_RATIO)
			pt->ratio = PROFILE_MAX_COLD_RATIO;
		pt->gap_ns = pr->gaps_ns[g];
		pt->pairs = pr->nr_cold;
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
	for (int g = 0; g < c->nr_cold; g++)
		printf("coloc-profile: %s: cold start %.3f x hot (median of %d pairs, spread %.1f %%) after %.1f ms idle\n",
		       what, c->cold[g].ratio, c->cold[g].pairs, c->cold[g].spread * 100,
		       (double)c->cold[g].gap_ns / 1e6);
}
