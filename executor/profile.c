// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Latency profiles (profile.h) in memory: the table of cells by layer,
 * version, core count and stress level, with their confidence intervals;
 * the slowdown per level, medians, the sanity check, lookup with
 * interpolation between stress levels, whether two profiles were
 * measured the same way, and whether a profile is stale. Its text format is written by profile_save.c and
 * read by profile_parse.c; the cache key is computed in profile_cache.c.
 */
#define _GNU_SOURCE
#include "profile.h"
#include "profile_versions.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PROFILE_MAX_CELLS (32u << 20) /* 256 MiB of latencies: far beyond any real model */

const char *profile_stress_kind_name(enum profile_stress_kind kind)
{
	return kind == PROFILE_STRESS_MEMBW ? "membw" : "llc";
}

static size_t cells_per_version(const struct profile *p)
{
	return (size_t)p->nr_cores * (size_t)p->nr_levels;
}

struct profile *profile_new(int nr_layers, const int *nr_versions, int nr_cores, int nr_levels,
			    const int *levels, struct coloc_err *err)
{
	struct profile *p;
	size_t cells = 0;

	if (nr_layers < 1 || nr_layers > PROFILE_MAX_LAYERS) {
		coloc_err_set(err, -EINVAL, "layer count %d outside 1..%d", nr_layers,
			      PROFILE_MAX_LAYERS);
		return NULL;
	}
	if (nr_cores < 1 || nr_cores > PROFILE_MAX_CORES) {
		coloc_err_set(err, -EINVAL, "core count %d outside 1..%d", nr_cores,
			      PROFILE_MAX_CORES);
		return NULL;
	}
	if (nr_levels < 1 || nr_levels > PROFILE_MAX_LEVELS || levels[0] != 0) {
		coloc_err_set(err, -EINVAL, "levels must be 0 then up to %d stress levels",
			      PROFILE_MAX_LEVELS - 1);
		return NULL;
	}
	for (int k = 1; k < nr_levels; k++) {
		if (levels[k] <= levels[k - 1] || levels[k] > 100) {
			coloc_err_set(err, -EINVAL,
				      "stress levels must increase strictly within 1..100");
			return NULL;
		}
	}
	for (int i = 0; i < nr_layers; i++) {
		if (nr_versions[i] < 1 || nr_versions[i] > PROFILE_MAX_VERSIONS) {
			coloc_err_set(err, -EINVAL, "layer %d: version count %d outside 1..%d", i,
				      nr_versions[i], PROFILE_MAX_VERSIONS);
			return NULL;
		}
		cells += (size_t)nr_versions[i] * (size_t)nr_cores * (size_t)nr_levels;
	}
	if (cells > PROFILE_MAX_CELLS) {
		coloc_err_set(err, -E2BIG, "table of %zu cells is larger than the limit of %u",
			      cells, PROFILE_MAX_CELLS);
		return NULL;
	}

	p = calloc(1, sizeof(*p));
	if (!p)
		goto nomem;
	p->nr_layers = nr_layers;
	p->nr_cores = nr_cores;
	p->nr_levels = nr_levels;
	memcpy(p->levels, levels, (size_t)nr_levels * sizeof(*levels));
	p->iters = 1;
	p->layers = calloc((size_t)nr_layers, sizeof(*p->layers));
	p->layer_offset = calloc((size_t)nr_layers, sizeof(*p->layer_offset));
	p->latency_ns = calloc(cells, sizeof(*p->latency_ns));
	p->ci_lo_ns = calloc(cells, sizeof(*p->ci_lo_ns));
	p->ci_hi_ns = calloc(cells, sizeof(*p->ci_hi_ns));
	p->stress_gbps = calloc(cells_per_version(p), sizeof(*p->stress_gbps));
	if (!p->layers || !p->layer_offset || !p->latency_ns || !p->ci_lo_ns || !p->ci_hi_ns ||
	    !p->stress_gbps)
		goto nomem;
	cells = 0;
	for (int i = 0; i < nr_layers; i++) {
		p->layers[i].nr_versions = nr_versions[i];
		p->layer_offset[i] = cells;
		cells += (size_t)nr_versions[i] * cells_per_version(p);
	}
	for (size_t i = 0; i < cells_per_version(p); i++)
		p->stress_gbps[i] = -1;
	return p;
nomem:
	profile_free(p);
	coloc_err_set(err, -ENOMEM, "out of memory for a profile of %zu cells", cells);
	return NULL;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	free(p->layers);
	free(p->layer_offset);
	free(p->latency_ns);
	free(p->ci_lo_ns);
	free(p->ci_hi_ns);
	free(p->stress_gbps);
	free(p);
}

const uint64_t *profile_latency_cell_const(const struct profile *p, int layer, int version,
					   int cores, int level_idx)
{
	if (layer < 0 || layer >= p->nr_layers || version < 0 ||
	    version >= p->layers[layer].nr_versions || cores < 1 || cores > p->nr_cores ||
	    level_idx < 0 || level_idx >= p->nr_levels)
		return NULL;
	return &p->latency_ns[p->layer_offset[layer] + (size_t)version * cells_per_version(p) +
			      (size_t)(cores - 1) * (size_t)p->nr_levels + (size_t)level_idx];
}

uint64_t *profile_latency_cell(struct profile *p, int layer, int version, int cores, int level_idx)
{
	return (uint64_t *)profile_latency_cell_const(p, layer, version, cores, level_idx);
}

void profile_ci_cells(struct profile *p, int layer, int version, int cores, int level_idx,
		      uint64_t **lo, uint64_t **hi)
{
	uint64_t *cell = profile_latency_cell(p, layer, version, cores, level_idx);

	*lo = cell ? p->ci_lo_ns + (cell - p->latency_ns) : NULL;
	*hi = cell ? p->ci_hi_ns + (cell - p->latency_ns) : NULL;
}

size_t profile_nr_missing(const struct profile *p)
{
	size_t cells = 0, missing = 0;

	for (int i = 0; i < p->nr_layers; i++)
		cells += (size_t)p->layers[i].nr_versions * cells_per_version(p);
	for (size_t i = 0; i < cells; i++)
		missing += p->latency_ns[i] == 0;
	return missing;
}

/*
 * When the machine has several cores, only core counts below the maximum
 * count: there the stressor ran on other cores and the ratio is contention
 * for the cache and memory, whereas at the maximum it shared the layer's
 * cores and the ratio is mostly time-slicing.
 */
static int slowdown_max_cores(const struct profile *p)
{
	return p->nr_cores > 1 ? p->nr_cores - 1 : 1;
}

void profile_update_slowdown(struct profile *p)
{
	int max_cores = slowdown_max_cores(p);

	for (int l = 0; l < p->nr_layers; l++) {
		struct profile_layer *layer = &p->layers[l];

		layer->slowdown[0] = 0;
		for (int k = 1; k < p->nr_levels; k++) {
			double log_sum = 0;
			int n = 0;

			for (int v = 0; v < layer->nr_versions; v++) {
				for (int c = 1; c <= max_cores; c++) {
					uint64_t alone = *profile_latency_cell(p, l, v, c, 0);
					uint64_t loaded = *profile_latency_cell(p, l, v, c, k);

					if (alone && loaded) {
						log_sum += log((double)loaded / (double)alone);
						n++;
					}
				}
			}
			layer->slowdown[k] = n ? exp(log_sum / n) : 0;
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void profile_median_ci(uint64_t *v, int n, uint64_t *median, uint64_t *lo, uint64_t *hi)
{
	double below = 0, term = ldexp(1.0, -n); /* P(Binom(n, 1/2) = 0) */
	int j = 1;

	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	/*
	 * [v(j), v(n+1-j)] (1-based) misses the median with probability
	 * 2 P(B <= j-1), B ~ Binom(n, 1/2): take the largest j keeping that <= 5 %.
	 */
	for (int i = 0; i < n / 2; i++) {
		below += term;
		if (2 * below > 0.05)
			break;
		j = i + 1;
		term = term * (n - i) / (i + 1);
	}
	*lo = v[j - 1];
	*hi = v[n - j];
}

void profile_solo_summary(uint64_t *v, int n, uint64_t *median, double *spread)
{
	int p10 = n / 10, p90 = n - 1 - n / 10;

	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	*spread = *median ? (double)(v[p90] - v[p10]) / (double)*median : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void profile_ratio_summary(double *v, int n, double *median, double *spread)
{
	int p10 = n / 10, p90 = n - 1 - n / 10;

	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	*spread = *median > 0 ? (v[p90] - v[p10]) / *median : 0;
}

bool profile_is_stale(const struct profile *p, uint64_t now_ns, double now_spread)
{
	double allowed = p->conditions.spread, ratio;

	if (!p->conditions.known || !p->conditions.solo_ns)
		return false;
	if (now_spread > allowed)
		allowed = now_spread;
	if (allowed < PROFILE_STALE_FLOOR)
		allowed = PROFILE_STALE_FLOOR;
	/* as a ratio, so that 3 x too slow and 3 x too fast weigh alike */
	ratio = (double)now_ns / (double)p->conditions.solo_ns;
	if (ratio < 1)
		ratio = 1 / ratio;
	return ratio > 1 + allowed;
}

void profile_check(const struct profile *p, struct profile_check *out)
{
	int max_cores = slowdown_max_cores(p);
	double log_sum[PROFILE_MAX_LEVELS] = { 0 };

	memset(out, 0, sizeof(*out));
	for (int l = 0; l < p->nr_layers; l++) {
		for (int v = 0; v < p->layers[l].nr_versions; v++) {
			for (int c = 1; c <= max_cores; c++) {
				const uint64_t *med = profile_latency_cell_const(p, l, v, c, 0);
				size_t at = (size_t)(med - p->latency_ns);
				const uint64_t *lo = p->ci_lo_ns + at, *hi = p->ci_hi_ns + at;
				bool pass = true, complete = true;

				for (int k = 0; k < p->nr_levels; k++)
					complete &= med[k] && lo[k] && hi[k];
				if (!complete)
					continue;
				out->nr_rows++;
				for (int k = 1; k < p->nr_levels; k++) {
					log_sum[k] += log((double)med[k] / (double)med[0]);
					if (hi[k] < lo[0]) {
						out->below_one[k]++;
						pass = false;
					}
					if (k >= 2 && hi[k] < lo[k - 1]) {
						out->falling[k]++;
						pass = false;
					}
				}
				out->nr_pass += pass;
			}
		}
	}
	for (int k = 1; k < p->nr_levels && out->nr_rows; k++)
		out->mean_slowdown[k] = exp(log_sum[k] / out->nr_rows);
	if (out->nr_rows)
		out->mean_slowdown[0] = 1;
}

int profile_lookup(const struct profile *p, int layer, int version, int cores, double level,
		   uint64_t *latency_ns)
{
	const uint64_t *row = profile_latency_cell_const(p, layer, version, cores, 0);
	int hi = 1;
	double lo_ns, hi_ns, frac;

	if (!row || !(level >= 0 && level <= 100))
		return -EINVAL;
	if (level == 0 || p->nr_levels == 1) {
		if (!row[0])
			return -ENOENT;
		*latency_ns = row[0];
		return 0;
	}
	while (hi < p->nr_levels - 1 && p->levels[hi] < level)
		hi++;
	if (level >= p->levels[hi]) {
		if (!row[hi])
			return -ENOENT;
		*latency_ns = row[hi];
		return 0;
	}
	if (!row[hi - 1] || !row[hi])
		return -ENOENT;
	lo_ns = (double)row[hi - 1];
	hi_ns = (double)row[hi];
	frac = (level - p->levels[hi - 1]) / (double)(p->levels[hi] - p->levels[hi - 1]);
	*latency_ns = (uint64_t)llround(lo_ns + (hi_ns - lo_ns) * frac);
	return 0;
}

bool profile_machine_equal(const struct profile_machine *a, const struct profile_machine *b)
{
	return !strcmp(a->cpu_model, b->cpu_model) && !strcmp(a->isa, b->isa) &&
	       a->nr_cores == b->nr_cores && a->llc_bytes == b->llc_bytes;
}

bool profile_same_setup(const struct profile *a, const struct profile *b)
{
	/* another oneDNN may pick other kernels: its latencies are not ours */
	if (strcmp(a->model_name, b->model_name) || a->model_key_old || b->model_key_old ||
	    !profile_key_equal(&a->model_key, &b->model_key) ||
	    strcmp(a->onednn_version, b->onednn_version) ||
	    !profile_machine_equal(&a->machine, &b->machine) || a->stress_kind != b->stress_kind ||
	    a->nr_cores != b->nr_cores || a->nr_levels != b->nr_levels ||
	    memcmp(a->levels, b->levels, (size_t)a->nr_levels * sizeof(a->levels[0])) ||
	    a->nr_layers != b->nr_layers)
		return false;
	for (int i = 0; i < a->nr_layers; i++) {
		const struct profile_layer *la = &a->layers[i], *lb = &b->layers[i];

		if (strcmp(la->name, lb->name) ||
		    profile_versions_differ(la->nr_versions, la->version_names, lb->nr_versions,
					    lb->version_names) >= 0)
			return false;
	}
	return true;
}
