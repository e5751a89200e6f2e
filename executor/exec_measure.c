// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Measuring what the executor runs: deterministic query inputs, the median
 * latency of a block over repeats, and the fastest version of each layer at
 * a core count (coloc-run --kernel auto, coloc-bench-executor, profiles).
 * Medians, because single runs on a shared machine are noisy.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "executor.h"

#define EXEC_PICK_MARGIN_PCT 3

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t exec_median_u64(uint64_t *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Smallest vocabulary among embed layers reading input layer `in`, 0 if none. */
static int64_t ids_bound(const struct model *m, int in)
{
	int64_t bound = 0;

	for (int li = in + 1; li < m->nr_layers; li++) {
		const struct model_layer *l = &m->layers[li];

		if (l->op == MODEL_OP_EMBED && l->inputs[0] == in &&
		    (!bound || l->embed.vocab < bound))
			bound = l->embed.vocab;
	}
	return bound;
}

void exec_query_fill_inputs(struct exec_query *q, const struct model *m, uint32_t seed)
{
	uint32_t x = seed ? seed : 1;

	for (int li = 0; li < m->nr_layers; li++) {
		int64_t n = model_shape_elems(&m->layers[li].out), bound;
		float *in;

		if (m->layers[li].op != MODEL_OP_INPUT)
			continue;
		in = exec_query_input(q, li);
		bound = ids_bound(m, li);
		for (int64_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			/* Token ids for embeddings, values in [-1, 1) elsewhere. */
			in[i] = bound ? (float)(x % (uint32_t)bound) :
					(float)(x >> 8) / 8388608.0f - 1.0f;
		}
	}
}

int exec_measure_block(struct exec_model *em, struct exec_query *q, int first, int last,
		       const int *versions, const struct exec_cpuset *cores, int reps,
		       uint64_t *median_ns)
{
	uint64_t *lat;
	int ret = 0;

	if (reps < 1)
		return -EINVAL;
	lat = calloc((size_t)reps, sizeof(*lat));
	if (!lat)
		return -ENOMEM;
	for (int r = 0; r < reps && !ret; r++) {
		struct exec_block_stats st;

		ret = exec_run_block(em, q, first, last, versions, cores, &st);
		lat[r] = st.latency_ns;
	}
	if (!ret)
		*median_ns = exec_median_u64(lat, reps);
	free(lat);
	return ret;
}

/*
 * Whether version v, taking t, replaces the best so far: another version
 * must beat version 0 (oneDNN's own choice) by EXEC_PICK_MARGIN_PCT,
 * smaller gaps being mostly noise here.
 */
static bool pick_better(int v, uint64_t t, uint64_t best)
{
	return (v == 0 || t * (100 + EXEC_PICK_MARGIN_PCT) < best * 100) && t < best;
}

int exec_pick_fastest(struct exec_model *em, struct exec_query *q, const struct exec_cpuset *cores,
		      int reps, int *versions, uint64_t *layer_ns)
{
	const struct model *m = exec_model_graph(em);
	int ret;

	/* One full pass first, so every layer's inputs hold real activations. */
	ret = exec_run_block(em, q, 0, m->nr_layers, NULL, cores, NULL);
	for (int li = 0; li < m->nr_layers && !ret; li++) {
		uint64_t best = UINT64_MAX, t;

		versions[li] = 0;
		for (int v = 0; v < exec_layer_nr_versions(em, li) && !ret; v++) {
			ret = exec_measure_block(em, q, li, li + 1, &v, cores, reps, &t);
			if (!ret && pick_better(v, t, best)) {
				best = t;
				versions[li] = v;
			}
		}
		if (layer_ns)
			layer_ns[li] = best;
	}
	return ret;
}

/* A layer's runs in one version: [rep] */
struct pick_runs {
	uint64_t *ns;
	int nr;
};

/*
 * Every layer, one at a time, in order, on the live query lq: pass p of
 * round r runs each layer at version (p + r) mod its count, as
 * coloc-profile's passes do.
 */
static int pick_passes(struct exec_model *em, struct exec_query *lq,
		       const struct exec_cpuset *cores, int reps, int max_v, struct pick_runs *runs)
{
	const struct model *m = exec_model_graph(em);
	int ret = 0;

	for (int r = 0; r < reps && !ret; r++)
		for (int p = 0; p < max_v && !ret; p++)
			for (int li = 0; li < m->nr_layers && !ret; li++) {
				int v = (p + r) % exec_layer_nr_versions(em, li);
				struct pick_runs *pr = &runs[li * max_v + v];
				struct exec_block_stats st;

				ret = exec_run_block(em, lq, li, li + 1, &v, cores, &st);
				if (!ret)
					pr->ns[pr->nr++] = st.latency_ns;
			}
	return ret;
}

int exec_pick_fastest_live(struct exec_model *em, struct exec_query *lq,
			   const struct exec_cpuset *cores, int reps, int *versions,
			   uint64_t *layer_ns)
{
	const struct model *m = exec_model_graph(em);
	int max_v = 1, ret = -ENOMEM;
	struct pick_runs *runs;
	uint64_t *ns;

	if (reps < 1)
		return -EINVAL;
	for (int li = 0; li < m->nr_layers; li++)
		if (exec_layer_nr_versions(em, li) > max_v)
			max_v = exec_layer_nr_versions(em, li);
	/* a version of a layer with fewer versions runs in more passes: up to max_v per round */
	runs = calloc((size_t)m->nr_layers * (size_t)max_v, sizeof(*runs));
	ns = calloc((size_t)m->nr_layers * (size_t)max_v * (size_t)(reps * max_v), sizeof(*ns));
	if (!runs || !ns)
		goto out;
	for (size_t i = 0; i < (size_t)m->nr_layers * (size_t)max_v; i++)
		runs[i].ns = ns + i * (size_t)(reps * max_v);
	ret = exec_run_block(em, lq, 0, m->nr_layers, NULL, cores, NULL);
	if (!ret)
		ret = pick_passes(em, lq, cores, reps, max_v, runs);
	for (int li = 0; li < m->nr_layers && !ret; li++) {
		uint64_t best = UINT64_MAX;

		versions[li] = 0;
		for (int v = 0; v < exec_layer_nr_versions(em, li); v++) {
			struct pick_runs *pr = &runs[li * max_v + v];
			uint64_t t = exec_median_u64(pr->ns, pr->nr);

			if (pick_better(v, t, best)) {
				best = t;
				versions[li] = v;
			}
		}
		if (layer_ns)
			layer_ns[li] = best;
	}
out:
	free(ns);
	free(runs);
	return ret;
}
