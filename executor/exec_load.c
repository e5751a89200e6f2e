// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Loading a model into the executor: weights (generated, batch norm folded
 * into the convolution), kernel versions, and every oneDNN primitive each
 * version needs at each core-count slot, so that nothing is created when a
 * query runs. oneDNN 2.6 fixes a convolution's thread count when the
 * primitive is created, so each slot's primitives are created after
 * omp_set_num_threads(count) in the loading thread, which is also the
 * thread that later drives blocks. Its brgemm matmul does the same, so
 * every primitive of every layer is made per slot.
 *
 * This file assembles the model: the CPUs and core-count slots, the OpenMP
 * team, each layer built in turn (exec_layer.c), the output arena and the
 * accounting of what the model holds; and frees it all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec_build.h"

static int cpus_resolve(const struct exec_options *opts, struct exec_cpuset *out,
			struct coloc_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!opts || opts->cpus.nr == 0) {
		cpu_set_t allowed;

		/* the online CPUs this process may use (taskset, cpuset cgroups) */
		if (sched_getaffinity(0, sizeof(allowed), &allowed))
			return coloc_err_set(err, -errno, "cannot read this process's CPU mask: %s",
					     strerror(errno));
		for (int c = 0; c < EXEC_MAX_CPUS && c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed) && exec_cpu_online(c))
				out->cpus[out->nr++] = c;
		return out->nr ? 0 :
				 coloc_err_set(err, -ENODEV,
					       "none of the CPUs this process may use is online");
	}
	if (opts->cpus.nr < 0 || opts->cpus.nr > EXEC_MAX_CPUS) {
		coloc_err_set(err, -EINVAL, "bad number of cpus %d (1..%d)", opts->cpus.nr,
			      EXEC_MAX_CPUS);
		return -EINVAL;
	}
	for (int i = 0; i < opts->cpus.nr; i++) {
		int c = opts->cpus.cpus[i];

		if (!exec_cpu_online(c)) {
			coloc_err_set(err, -ENODEV, "cpu %d is not online", c);
			return -ENODEV;
		}
		for (int j = 0; j < i; j++) {
			if (opts->cpus.cpus[j] == c) {
				coloc_err_set(err, -EINVAL, "cpu %d listed twice", c);
				return -EINVAL;
			}
		}
		out->cpus[out->nr++] = c;
	}
	return 0;
}

/*
 * Core counts that get primitives: every count up to 8, then powers of two,
 * then all cores. At 64 cores that is 1..8, 16, 32, 64: 11 slots instead
 * of 64, and a block on n cores runs the largest slot <= n (on its first
 * cores), losing at most a factor 2 in parallelism above 8 cores.
 */
static void slots_make(struct exec_model *em)
{
	int n = em->cpus.nr;

	em->nr_slots = 0;
	for (int c = 1; c <= n && c <= 8; c++)
		em->slot_cores[em->nr_slots++] = c;
	for (int c = 16; c < n && em->nr_slots < EXEC_MAX_SLOTS - 1; c *= 2)
		em->slot_cores[em->nr_slots++] = c;
	if (n > 8)
		em->slot_cores[em->nr_slots++] = n;
	em->max_threads = n;
}

static struct exec_model *load(const struct model *m, const struct exec_options *opts,
			       bool default_only, struct coloc_err *err)
{
	struct exec_weights_file *wf = NULL;
	struct coloc_err unwanted;
	struct exec_model *em;
	size_t off = 0;
	int ret;

	/* building layers asks whether an error was recorded: it needs a place */
	if (!err)
		err = &unwanted;
	coloc_err_clear(err);
	if (!m || m->nr_layers <= 0 || !m->layers) {
		coloc_err_set(err, -EINVAL, "empty model");
		return NULL;
	}
	/* Checked whole before oneDNN builds anything, so a bad file fails fast. */
	if (opts && opts->weights_path) {
		wf = exec_weights_open(m, opts->weights_path, err);
		if (!wf)
			return NULL;
	}
	em = calloc(1, sizeof(*em));
	if (!em) {
		exec_weights_close(wf);
		coloc_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	em->graph = m;
	em->default_only = default_only;
	/*
	 * libgomp reads these at start-up and then places team threads itself,
	 * which breaks pinning team thread i to the block's i-th core.
	 */
	if (getenv("OMP_PLACES") || getenv("OMP_PROC_BIND") || getenv("GOMP_CPU_AFFINITY")) {
		coloc_err_set(err, -EINVAL,
			      "unset OMP_PLACES, OMP_PROC_BIND and GOMP_CPU_AFFINITY: "
			      "the executor pins its threads to each block's cores itself");
		goto fail;
	}
	ret = cpus_resolve(opts, &em->cpus, err);
	if (ret)
		goto fail;
	slots_make(em);
	if (dnnl_engine_create(&em->engine, dnnl_cpu, 0)) {
		coloc_err_set(err, -ENODEV, "cannot create the oneDNN CPU engine");
		goto fail;
	}
	em->streams = calloc((size_t)em->max_threads, sizeof(*em->streams));
	em->scratchpads = calloc((size_t)em->max_threads, sizeof(*em->scratchpads));
	em->layers = calloc((size_t)m->nr_layers, sizeof(*em->layers));
	em->out_offsets = calloc((size_t)m->nr_layers, sizeof(*em->out_offsets));
	if (!em->streams || !em->scratchpads || !em->layers || !em->out_offsets)
		goto oom;
	for (int t = 0; t < em->max_threads; t++)
		if (dnnl_stream_create(&em->streams[t], em->engine, dnnl_stream_default_flags))
			goto oom;
	/*
	 * Start the OpenMP team at its largest size now: libgomp keeps its
	 * threads, so later blocks (of any size up to this) create none; each
	 * flushes denormals, as a thread made later by one that does.
	 */
	omp_set_dynamic(0);
	exec_fp_flush_denormals();
#pragma omp parallel num_threads(em->max_threads)
	{
		exec_fp_flush_denormals();
	}
	for (int li = 0; li < m->nr_layers; li++) {
		const struct model_layer *l = &m->layers[li];

		for (int j = 0; j < l->nr_inputs; j++) {
			if (l->inputs[j] < 0 || l->inputs[j] >= li) {
				coloc_err_set(err, -EINVAL,
					      "layer %d '%s': input %d is not an earlier layer", li,
					      l->name, l->inputs[j]);
				goto fail;
			}
		}
		if (l->out.ndims < 1 || l->out.ndims > MODEL_MAX_DIMS ||
		    model_shape_elems(&l->out) <= 0) {
			coloc_err_set(err, -EINVAL, "layer %d '%s': bad output shape", li, l->name);
			goto fail;
		}
		exec_layer_out_md(em, li);
	}
	exec_fuse_residual_adds(em);
	for (int li = 0; li < m->nr_layers; li++) {
		ret = exec_layer_build(em, li, wf, err);
		if (ret)
			goto fail;
	}
	exec_weights_close(wf);
	wf = NULL;
	omp_set_num_threads(em->max_threads);
	for (int li = 0; li < m->nr_layers; li++) {
		int a = em->layers[li].alias_of;

		if (a >= 0) {
			em->out_offsets[li] = em->out_offsets[a];
			continue;
		}
		em->out_offsets[li] = off;
		off += (md_bytes(&em->layers[li].out_md) + EXEC_ALIGN - 1) / EXEC_ALIGN *
		       EXEC_ALIGN;
	}
	em->out_bytes = off;
	ret = exec_arena_plan(em, err);
	if (ret)
		goto fail;
	for (int t = 0; t < em->max_threads; t++) {
		em->scratchpads[t] = exec_alloc_aligned(em->scratchpad_bytes);
		if (!em->scratchpads[t])
			goto oom;
	}
	em->own_lane = (struct exec_lane){ .em = em,
					   .streams = em->streams,
					   .scratchpads = em->scratchpads };
	em->resident_bytes = sizeof(*em) + (size_t)em->max_threads * em->scratchpad_bytes;
	for (int li = 0; li < m->nr_layers; li++) {
		struct exec_layer *xl = &em->layers[li];

		for (int i = 0; i < xl->nr_weight_bufs; i++)
			em->resident_bytes += xl->weight_bytes[i];
		em->resident_bytes += sizeof(*xl) + (size_t)xl->cap_weight_bufs *
							     (sizeof(*xl->weight_bufs) +
							      sizeof(*xl->weight_bytes));
		for (int v = 0; v < xl->nr_versions; v++)
			for (int s = 0; s < em->nr_slots; s++)
				em->resident_bytes +=
					sizeof(struct exec_plan) +
					(size_t)xl->plans[v][s].nr_steps * sizeof(struct exec_step);
	}
	/*
	 * A oneDNN memory object costs ~1 KiB (measured); a primitive handle
	 * a few hundred bytes. oneDNN's JIT code is not visible from here:
	 * coloc-bench-executor compares this estimate with the RSS delta.
	 */
	em->resident_bytes += em->owned.nr_mems * 1024 + em->owned.nr_prims * 256;
	return em;
oom:
	coloc_err_set(err, -ENOMEM, "out of memory");
fail:
	coloc_err_set(err, -EINVAL, "cannot load the model");
	exec_weights_close(wf);
	exec_model_free(em);
	return NULL;
}

struct exec_model *exec_model_load(const struct model *m, const struct exec_options *opts,
				   struct coloc_err *err)
{
	return load(m, opts, false, err);
}

struct exec_model *exec_model_load_default(const struct model *m, const struct exec_options *opts,
					   struct coloc_err *err)
{
	return load(m, opts, true, err);
}

void exec_model_free(struct exec_model *em)
{
	struct exec_owned *o;

	if (!em)
		return;
	o = &em->owned;
	for (size_t i = 0; i < o->nr_prims; i++)
		dnnl_primitive_destroy(o->prims[i]);
	for (size_t i = 0; i < o->nr_mems; i++)
		dnnl_memory_destroy(o->mems[i]);
	for (size_t i = 0; i < o->nr_item_arrays; i++)
		free(o->item_arrays[i]);
	for (size_t i = 0; i < o->nr_col2ims; i++)
		free(o->col2ims[i]);
	free(o->prims);
	free(o->mems);
	free(o->item_arrays);
	free(o->col2ims);
	if (em->layers) {
		for (int li = 0; li < em->graph->nr_layers; li++) {
			struct exec_layer *xl = &em->layers[li];

			for (int v = 0; v < EXEC_MAX_VERSIONS; v++) {
				for (int s = 0; xl->plans[v] && s < em->nr_slots; s++)
					free(xl->plans[v][s].steps);
				free(xl->plans[v]);
			}
			for (int i = 0; i < xl->nr_weight_bufs; i++)
				free(xl->weight_bufs[i]);
			free(xl->weight_bufs);
			free(xl->weight_bytes);
			free(xl->weight_mds);
			free(xl->weight_srcs);
		}
	}
	if (em->scratchpads)
		for (int t = 0; t < em->max_threads; t++)
			free(em->scratchpads[t]);
	if (em->streams)
		for (int t = 0; t < em->max_threads; t++)
			if (em->streams[t])
				dnnl_stream_destroy(em->streams[t]);
	if (em->engine)
		dnnl_engine_destroy(em->engine);
	free(em->scratchpads);
	free(em->streams);
	free(em->layers);
	free(em->out_offsets);
	free(em->live_offsets);
	free(em->live_kept);
	free(em);
}
