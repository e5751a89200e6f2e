// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-profile's whole-model runs (profiler.h): the model on every core
 * this process may use, version 0 everywhere, on the live query the cells
 * are timed on, PROFILE_SOLO_RUNS at a time (after one untimed run) before
 * each core count and at the end. Their median and spread, the load
 * average and the stolen CPU time make the profile's conditions: a wide
 * spread says other work shared the cores while the cells were timed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "profiler.h"

int profiler_time_solo(struct profiler *pr)
{
	int n = pr->model->nr_layers, ret;

	if (pr->nr_solo + PROFILE_SOLO_RUNS > (int)(sizeof(pr->solo_ns) / sizeof(pr->solo_ns[0])))
		return -ENOSPC;
	ret = exec_run_block(pr->em, pr->q, 0, n, NULL, &pr->allowed, NULL);
	for (int r = 0; r < PROFILE_SOLO_RUNS && !ret; r++) {
		struct exec_block_stats st;

		ret = exec_run_block(pr->em, pr->q, 0, n, NULL, &pr->allowed, &st);
		pr->solo_ns[pr->nr_solo++] = st.latency_ns;
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
	struct profile_cpu_ticks now;

	memset(c, 0, sizeof(*c));
	if (!pr->nr_solo)
		return;
	memcpy(runs, pr->solo_ns, (size_t)pr->nr_solo * sizeof(runs[0]));
	profile_solo_summary(runs, pr->nr_solo, &c->solo_ns, &c->spread);
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
}
