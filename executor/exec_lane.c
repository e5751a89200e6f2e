// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Lanes: several threads of one process running blocks of one loaded model
 * at the same time, each on cores of its own, with one copy of the weights
 * and of every oneDNN primitive. What a running block writes besides its
 * query's activations is made per lane here: a oneDNN stream and a
 * scratchpad per team thread (every primitive is built with a user
 * scratchpad, which oneDNN documents as safe to execute from several
 * threads at once when no two executions share a scratchpad), and a copy of
 * every memory object a step binds to a query's buffers when it runs
 * (dnnl_memory_set_data_handle writes into the object). The weights'
 * memory objects, the primitives and the plans stay the model's, read only.
 * Each lane's thread has its own OpenMP team: libgomp keeps a thread pool
 * per thread that opens a parallel region (docs/design/lanes.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "exec_build.h"

/* The lane's copy of every memory object step s (or its items) binds per run. */
static int copy_step_mems(struct exec_lane *lane, const struct exec_step *s, struct coloc_err *err)
{
	const struct exec_owned *o = &lane->em->owned;

	for (int a = 0; a < s->nr_args; a++) {
		const struct exec_buf *b = &s->bufs[a];
		const dnnl_memory_desc_t *md;

		if (b->kind == EXEC_BUF_FIXED)
			continue;
		if (b->mem < 0 || (size_t)b->mem >= o->nr_mems ||
		    o->mems[b->mem] != s->args[a].memory)
			return coloc_err_set(err, -EINVAL,
					     "a step's memory object is not one the model made");
		if (lane->mems[b->mem])
			continue;
		if (dnnl_memory_get_memory_desc(s->args[a].memory, &md) ||
		    dnnl_memory_create(&lane->mems[b->mem], md, lane->em->engine, DNNL_MEMORY_NONE))
			return coloc_err_set(err, -ENOMEM,
					     "oneDNN cannot make a lane's memory object");
	}
	for (int i = 0; i < s->nr_items; i++) {
		int ret = copy_step_mems(lane, &s->items[i], err);

		if (ret)
			return ret;
	}
	return 0;
}

static int copy_mems(struct exec_lane *lane, struct coloc_err *err)
{
	const struct exec_model *em = lane->em;

	lane->nr_mems = em->owned.nr_mems;
	lane->mems = calloc(lane->nr_mems ? lane->nr_mems : 1, sizeof(*lane->mems));
	if (!lane->mems)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	for (int li = 0; li < em->graph->nr_layers; li++) {
		const struct exec_layer *xl = &em->layers[li];

		for (int v = 0; v < EXEC_MAX_VERSIONS; v++) {
			for (int slot = 0; xl->plans[v] && slot < em->nr_slots; slot++) {
				const struct exec_plan *p = &xl->plans[v][slot];

				for (int i = 0; i < p->nr_steps; i++) {
					int ret = copy_step_mems(lane, &p->steps[i], err);

					if (ret)
						return ret;
				}
			}
		}
	}
	return 0;
}

struct exec_lane *exec_lane_new(struct exec_model *em, struct coloc_err *err)
{
	struct exec_lane *lane;
	int n;

	if (!em) {
		coloc_err_set(err, -EINVAL, "no model");
		return NULL;
	}
	n = em->max_threads;
	lane = calloc(1, sizeof(*lane));
	if (!lane) {
		coloc_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	lane->em = em;
	lane->streams = calloc((size_t)n, sizeof(*lane->streams));
	lane->scratchpads = calloc((size_t)n, sizeof(*lane->scratchpads));
	if (!lane->streams || !lane->scratchpads)
		goto oom;
	for (int t = 0; t < n; t++) {
		if (dnnl_stream_create(&lane->streams[t], em->engine, dnnl_stream_default_flags))
			goto oom;
		lane->scratchpads[t] = exec_alloc_aligned(em->scratchpad_bytes);
		if (!lane->scratchpads[t])
			goto oom;
	}
	if (copy_mems(lane, err))
		goto fail;
	return lane;
oom:
	coloc_err_set(err, -ENOMEM, "out of memory for a lane");
fail:
	exec_lane_free(lane);
	return NULL;
}

void exec_lane_free(struct exec_lane *lane)
{
	if (!lane)
		return;
	for (size_t i = 0; lane->mems && i < lane->nr_mems; i++)
		if (lane->mems[i])
			dnnl_memory_destroy(lane->mems[i]);
	for (int t = 0; t < lane->em->max_threads; t++) {
		if (lane->streams && lane->streams[t])
			dnnl_stream_destroy(lane->streams[t]);
		if (lane->scratchpads)
			free(lane->scratchpads[t]);
	}
	free(lane->mems);
	free(lane->streams);
	free(lane->scratchpads);
	free(lane);
}
