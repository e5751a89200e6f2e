// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-profile's cells (profiler.h): every layer x version x core count,
 * alone and under bin/coloc-stress at each level, each cell the median of
 * iters runs of a one-layer block with its 95 % CI.
 *
 * The layers run on a live query, as served blocks do: each layer's
 * inputs sit where serving's arena puts them, freshly written by the
 * layers before it. A live query runs a block only where its last block
 * ended, so a layer is timed in a pass through the whole model: every
 * pass runs each layer once, in order, one version at a time (pass j of
 * round r: version (j + r) mod the layer's count), and needs no untimed
 * prefix (a pass over fewer layers would start with one, the layers
 * before them: docs/design/profile-freshness.md). The stressor starts
 * once per core count under --control: on the cores the layer does not
 * use, spinning without touching memory at level 0 so that "alone" is
 * measured with those cores as busy as under stress, or on the same cores
 * when the layer uses all of them. Each round visits every level, in an
 * order rotated from round to round, so that alone and stressed runs
 * interleave in time; the version rotation keeps a layer's versions from
 * running back to back (that made every version after the first look
 * faster: its memory was warm). Measuring each level in its own stretch
 * with the other core idle made layers look faster under stress (issue 8).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "profiler.h"
#include "stress_ctl.h"
#include "mono_clock.h"

/* Time given to the stressor after a level change: five of its 1 ms periods. */
#define PROFILE_SETTLE_NS 5000000ULL

/* With --verbose, what the stressor says about itself: its setup, its rates. */
static void echo_stress_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "  %s", line);
}

/*
 * Starts coloc-stress at level 0 under --control, so levels change without
 * a restart: on the cores the layers do not use, filling the rest of each
 * period with a spin that touches no memory (level 0 keeps those cores busy
 * without interfering), or on the layers' own cores when they use all of
 * them, where level 0 must leave the cores to the layer and so sleeps.
 */
static int stressor_start(struct profiler *pr, struct stress_ctl *s, int nr_cores)
{
	char cores[EXEC_MAX_CPUS * 5] = "";
	bool shared = nr_cores >= pr->allowed.nr;
	int first = shared ? 0 : nr_cores;
	size_t off = 0;

	for (int i = first; i < pr->allowed.nr; i++)
		off += (size_t)snprintf(cores + off, sizeof(cores) - off, "%s%d",
					i > first ? "," : "", pr->allowed.cpus[i]);
	return stress_ctl_start(
		s, pr->stress_bin, cores, profile_stress_kind_name(pr->p->stress_kind),
		shared ? "sleep" : "spin", pr->verbose ? echo_stress_line : NULL, NULL, NULL);
}

/*
 * Stops the stressor and takes the bandwidth it reported at each level of
 * the profile into gbps[] (left alone where it reported none). Returns 0 or
 * a negative errno when it failed.
 */
static int stressor_stop(struct stress_ctl *s, const struct profile *p, double *gbps)
{
	int ret = stress_ctl_stop(s, NULL);

	for (int k = 1; k < p->nr_levels; k++)
		if (s->gbps[p->levels[k]] >= 0)
			gbps[k] = s->gbps[p->levels[k]];
	return ret;
}

static void progress(struct profiler *pr, int cores, int layer)
{
	double frac = pr->cells_total ? (double)pr->cells_done / (double)pr->cells_total : 1;
	char bar[41];
	int fill = (int)(frac * 40);

	if (!pr->tty)
		return;
	memset(bar, '#', (size_t)fill);
	memset(bar + fill, '.', (size_t)(40 - fill));
	bar[40] = '\0';
	fprintf(stderr, "\r[%s] %3.0f%%  cores %d  layer %d/%d ", bar, frac * 100, cores, layer + 1,
		pr->p->nr_layers);
	fflush(stderr);
}

int profiler_save_partial(struct profiler *pr)
{
	struct coloc_err err = { 0 };
	int ret;

	profile_update_slowdown(pr->p);
	ret = profile_save(pr->p, pr->partial, &err);
	if (ret)
		fprintf(stderr, "\ncoloc-profile: cannot save progress: %s\n", coloc_err_str(&err));
	pr->last_save_ns = coloc_now_ns();
	return ret;
}

static bool layer_done(const struct profile *p, int layer, int cores)
{
	for (int v = 0; v < p->layers[layer].nr_versions; v++)
		for (int k = 0; k < p->nr_levels; k++)
			if (!*profile_latency_cell_const(p, layer, v, cores, k))
				return false;
	return true;
}

/* Keeps this core busy: a sleep would let it idle, which is not how it runs a layer. */
static void spin_ns(uint64_t ns)
{
	uint64_t until = coloc_now_ns() + ns;

	while (coloc_now_ns() < until)
		;
}

/* Layer l, version v, as a block of its own; the query then stands at l + 1. */
static int run_layer(struct profiler *pr, const struct exec_cpuset *set, int l, int v, uint64_t *ns)
{
	struct exec_block_stats st;
	int ret = exec_run_block(pr->em, pr->q, l, l + 1, &v, set, &st);

	if (ret)
		fprintf(stderr, "\ncoloc-profile: layer %d (%s) version %d on %d cores: %s\n", l,
			pr->p->layers[l].name, v, set->nr, strerror(-ret));
	pr->at = ret ? -1 : l + 1;
	*ns = st.latency_ns;
	return ret;
}

int profiler_seek(struct profiler *pr, const struct exec_cpuset *set, int layer)
{
	int ret;

	if (layer == 0 || pr->at == layer)
		return 0;
	ret = exec_run_block(pr->em, pr->q, 0, layer, NULL, set, NULL);
	if (ret)
		fprintf(stderr, "\ncoloc-profile: layers 0..%d on %d cores: %s\n", layer - 1,
			set->nr, strerror(-ret));
	pr->at = ret ? -1 : layer;
	return ret;
}

/*
 * One pass over layers [first, last) in order, after the layers before
 * them (none but for a resumed profile): pass j of round r runs layer l in version (j + r) % nv and keeps
 * its time in times[] at the cell's (version, level k) run r, unless the
 * layer has no version j (then it runs untimed, so the next layer's inputs
 * are there).
 */
static int pass_layers(struct profiler *pr, const struct exec_cpuset *set, int first, int last,
		      int r, int k, int j, uint64_t *times)
{
	const struct profile *p = pr->p;
	size_t cell = 0; /* the layer's first cell, in (version, level) order */
	int ret = profiler_seek(pr, set, first);

	for (int l = first; l < last && !ret; l++) {
		int nv = p->layers[l].nr_versions, v = (j + r) % nv;
		size_t at =
			(cell + (size_t)v * (size_t)p->nr_levels + (size_t)k) * (size_t)p->iters +
			(size_t)r;
		uint64_t ns;

		cell += (size_t)nv * (size_t)p->nr_levels;
		ret = run_layer(pr, set, l, v, &ns);
		if (j < nv)
			times[at] = ns;
	}
	return ret;
}

/* Each cell of layers [first, last) on set->nr cores: the median of its runs and its CI. */
static void store_layers(struct profiler *pr, const struct exec_cpuset *set, int first, int last,
			uint64_t *times)
{
	struct profile *p = pr->p;
	size_t cell = 0;

	for (int l = first; l < last; l++) {
		for (int v = 0; v < p->layers[l].nr_versions; v++) {
			for (int k = 0; k < p->nr_levels; k++, cell++) {
				uint64_t *med = profile_latency_cell(p, l, v, set->nr, k), *lo, *hi;

				profile_ci_cells(p, l, v, set->nr, k, &lo, &hi);
				profile_median_ci(&times[cell * (size_t)p->iters], p->iters, med,
						  lo, hi);
				/* 0 means "not measured" in a profile; a faster-than-1-ns layer is 1 ns. */
				*med += !*med;
				*lo += !*lo;
				*hi += !*hi;
				pr->cells_done++;
			}
		}
	}
}

/*
 * Measures layers [first, last) on the cores of set: iters rounds, each
 * visiting every level (in an order rotated from round to round) and at
 * each level making one pass per version through the layers, after
 * PROFILE_SETTLE_NS for the stressor's new level to take hold. Alone and
 * stressed runs thus alternate through the whole measurement, so drift
 * (clock, power state, the other tenants of a shared machine) falls on
 * every level alike.
 */
static int measure_layers(struct profiler *pr, struct stress_ctl *s, const struct exec_cpuset *set,
			 int first, int last)
{
	struct profile *p = pr->p;
	int nr_levels = p->nr_levels, iters = p->iters, ret = 0, max_versions = 1;
	size_t nr_cells = 0;
	uint64_t *times;

	for (int l = first; l < last; l++) {
		nr_cells += (size_t)p->layers[l].nr_versions * (size_t)nr_levels;
		if (p->layers[l].nr_versions > max_versions)
			max_versions = p->layers[l].nr_versions;
	}
	times = calloc(nr_cells * (size_t)iters, sizeof(*times));
	if (!times)
		return -ENOMEM;
	for (int r = 0; r < iters && !ret && !profiler_interrupted; r++) {
		for (int i = 0; i < nr_levels && !ret && !profiler_interrupted; i++) {
			int k = (i + r) % nr_levels;

			ret = stress_ctl_set_level(s, p->levels[k], NULL);
			if (ret) {
				/* SIGINT reaches the stressor too: then its silence is expected. */
				if (!profiler_interrupted)
					fprintf(stderr, "\ncoloc-profile: %s stopped answering\n",
						pr->stress_bin);
				break;
			}
			spin_ns(PROFILE_SETTLE_NS);
			for (int j = 0; j < max_versions && !ret; j++)
				ret = pass_layers(pr, set, first, last, r, k, j, times);
		}
		progress(pr, set->nr, last - 1);
	}
	if (!ret && !profiler_interrupted)
		store_layers(pr, set, first, last, times);
	free(times);
	return ret;
}

/*
 * The layers from first on not measured yet (all of them, unless resumed
 * from a partial profile), each version run once in a pass of its own (its
 * warm-up, the first touch of its scratch memory). Returns their end.
 */
static int warm_layers(struct profiler *pr, const struct exec_cpuset *set, int first, int *ret)
{
	int l = first, max_versions = 1;
	uint64_t ns;

	while (l < pr->p->nr_layers && !layer_done(pr->p, l, set->nr)) {
		if (pr->p->layers[l].nr_versions > max_versions)
			max_versions = pr->p->layers[l].nr_versions;
		l++;
	}
	for (int v = 0; v < max_versions && !*ret; v++) {
		*ret = profiler_seek(pr, set, first);
		for (int k = first; k < l && !*ret; k++)
			*ret = run_layer(pr, set, k, v % pr->p->layers[k].nr_versions, &ns);
	}
	return l;
}

static int measure_cores(struct profiler *pr, int cores)
{
	struct profile *p = pr->p;
	struct exec_cpuset set = { .nr = cores };
	struct stress_ctl s;
	double *gbps = &p->stress_gbps[(size_t)(cores - 1) * (size_t)p->nr_levels];
	uint64_t t0 = coloc_now_ns();
	int ret, l = 0;

	memcpy(set.cpus, pr->allowed.cpus, (size_t)cores * sizeof(set.cpus[0]));
	ret = stressor_start(pr, &s, cores);
	if (ret) {
		fprintf(stderr, "\ncoloc-profile: %s did not start: %s\n", pr->stress_bin,
			strerror(-ret));
		return ret;
	}
	while (!ret && !profiler_interrupted && l < p->nr_layers) {
		int last;

		if (layer_done(p, l, cores)) {
			l++;
			continue;
		}
		last = warm_layers(pr, &set, l, &ret);
		if (!ret)
			ret = measure_layers(pr, &s, &set, l, last);
		l = last;
	}
	if (stressor_stop(&s, p, gbps) && !ret && !profiler_interrupted) {
		fprintf(stderr, "\ncoloc-profile: %s failed\n", pr->stress_bin);
		ret = -ECHILD;
	}
	if (pr->verbose)
		fprintf(stderr, "%scores %d: %.2f s\n", pr->tty ? "\n" : "", cores,
			(double)(coloc_now_ns() - t0) / 1e9);
	else if (!pr->tty && !profiler_interrupted && !ret)
		fprintf(stderr, "coloc-profile: cores %d done (%zu/%zu cells)\n", cores,
			pr->cells_done, pr->cells_total);
	return ret;
}

/*
 * Before each core count (and at the end), the whole model alone on every
 * core (solo.c), so the profile's conditions sample the machine through
 * the whole measurement.
 */
int profiler_measure_all(struct profiler *pr)
{
	int ret = profile_cpu_ticks_read(&pr->ticks_start);

	if (ret)
		return ret;
	exec_query_reset(pr->q);
	exec_query_fill_inputs(pr->q, pr->model, pr->model->seed);
	pr->at = -1;
	for (int c = 1; c <= pr->p->nr_cores && !profiler_interrupted; c++) {
		bool done = true;

		for (int l = 0; l < pr->p->nr_layers; l++)
			done &= layer_done(pr->p, l, c);
		if (done)
			continue;
		ret = profiler_time_solo(pr);
		if (!ret)
			ret = measure_cores(pr, c);
		if (ret)
			return ret;
		profiler_save_partial(pr);
	}
	return profiler_interrupted ? 0 : profiler_time_solo(pr);
}
