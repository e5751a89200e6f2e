// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The activation arena of a serving query (exec_query_new_live), planned by
 * liveness once at load: each layer's output buffer lives from the first
 * layer that touches it to the last one that reads it, and two buffers
 * whose lives do not overlap share bytes. Blocks run layers in index order,
 * so a query stopped after any block still holds every tensor a later
 * layer reads. Input layers live for the whole model (a query may run
 * again on the same input), the model's outputs (model_io_layout: layers
 * no layer reads) to its end. What each layer touches is read from its
 * plans (every version, every core-count slot), not only from the graph.
 * docs/design/lanes.md "Memory".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "exec_build.h"

struct live_buf {
	int root; /* the layer whose buffer it is */
	int lo, hi; /* first and last layer touching it, inclusive */
	size_t bytes, offset;
};

static int root_of(const struct exec_model *em, int li)
{
	while (em->layers[li].alias_of >= 0)
		li = em->layers[li].alias_of;
	return li;
}

static void touch(const struct exec_model *em, struct live_buf *b, int layer, int at)
{
	struct live_buf *r = &b[root_of(em, layer)];

	if (at < r->lo)
		r->lo = at;
	if (at > r->hi)
		r->hi = at;
}

static void touch_buf(const struct exec_model *em, struct live_buf *b, const struct exec_buf *x,
		      int at)
{
	if (x->kind == EXEC_BUF_OUT && x->index >= 0 && x->index < em->graph->nr_layers)
		touch(em, b, x->index, at);
}

static void touch_step(const struct exec_model *em, struct live_buf *b, const struct exec_step *s,
		       int at)
{
	for (int a = 0; a < s->nr_args; a++)
		touch_buf(em, b, &s->bufs[a], at);
	if (s->embed) {
		touch_buf(em, b, &s->ids, at);
		touch_buf(em, b, &s->dst, at);
	}
	if (s->col2im) {
		touch_buf(em, b, &s->col2im->cols, at);
		touch_buf(em, b, &s->col2im->dst, at);
	}
	for (int i = 0; i < s->nr_items; i++)
		touch_step(em, b, &s->items[i], at);
}

/* Every layer's reach into the buffers: its own output, its inputs, its plans' steps. */
static void find_lives(const struct exec_model *em, struct live_buf *b)
{
	const struct model *m = em->graph;
	int end = m->nr_layers;

	for (int li = 0; li < end; li++)
		b[li] = (struct live_buf){ .root = li, .lo = end, .hi = -1 };
	for (int li = 0; li < end; li++) {
		const struct exec_layer *xl = &em->layers[li];
		bool read = false;

		touch(em, b, li, li);
		for (int j = 0; j < m->layers[li].nr_inputs; j++)
			touch(em, b, m->layers[li].inputs[j], li);
		for (int v = 0; v < EXEC_MAX_VERSIONS; v++)
			for (int s = 0; xl->plans[v] && s < em->nr_slots; s++)
				for (int i = 0; i < xl->plans[v][s].nr_steps; i++)
					touch_step(em, b, &xl->plans[v][s].steps[i], li);
		for (int k = li + 1; k < end && !read; k++)
			for (int j = 0; j < m->layers[k].nr_inputs && !read; j++)
				read = m->layers[k].inputs[j] == li;
		if (m->layers[li].op == MODEL_OP_INPUT)
			touch(em, b, li, 0);
		if (m->layers[li].op == MODEL_OP_INPUT || !read)
			touch(em, b, li, end);
	}
}

static int by_size_desc(const void *a, const void *b)
{
	const struct live_buf *x = *(struct live_buf *const *)a, *y = *(struct live_buf *const *)b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->root - y->root;
}

static int by_offset(const void *a, const void *b)
{
	const struct live_buf *x = *(struct live_buf *const *)a, *y = *(struct live_buf *const *)b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * Largest first, each at the lowest offset clear of every placed buffer
 * alive at the same time: the greedy packing of intervals by size.
 */
static size_t place_all(struct live_buf **order, int n, struct live_buf **busy)
{
	size_t total = 0;

	qsort(order, (size_t)n, sizeof(*order), by_size_desc);
	for (int i = 0; i < n; i++) {
		struct live_buf *x = order[i];
		size_t at = 0;
		int nb = 0;

		for (int j = 0; j < i; j++)
			if (order[j]->lo <= x->hi && x->lo <= order[j]->hi)
				busy[nb++] = order[j];
		qsort(busy, (size_t)nb, sizeof(*busy), by_offset);
		for (int j = 0; j < nb; j++) {
			if (busy[j]->offset >= at + x->bytes)
				break;
			if (busy[j]->offset + busy[j]->bytes > at)
				at = busy[j]->offset + busy[j]->bytes;
		}
		x->offset = at;
		if (at + x->bytes > total)
			total = at + x->bytes;
	}
	return total;
}

int exec_arena_plan(struct exec_model *em, struct coloc_err *err)
{
	int nr = em->graph->nr_layers, n = 0;
	struct live_buf *b = calloc((size_t)nr, sizeof(*b));
	struct live_buf **order = calloc((size_t)nr, sizeof(*order));
	struct live_buf **busy = calloc((size_t)nr, sizeof(*busy));

	em->live_offsets = calloc((size_t)nr, sizeof(*em->live_offsets));
	em->live_kept = calloc((size_t)nr, sizeof(*em->live_kept));
	if (!b || !order || !busy || !em->live_offsets || !em->live_kept) {
		free(b);
		free(order);
		free(busy);
		return coloc_err_set(err, -ENOMEM, "out of memory planning the activations");
	}
	find_lives(em, b);
	for (int li = 0; li < nr; li++) {
		if (root_of(em, li) != li)
			continue;
		b[li].bytes = (md_bytes(&em->layers[li].out_md) + EXEC_ALIGN - 1) / EXEC_ALIGN *
			      EXEC_ALIGN;
		order[n++] = &b[li];
	}
	em->live_bytes = place_all(order, n, busy);
	for (int li = 0; li < nr; li++) {
		const struct live_buf *r = &b[root_of(em, li)];

		em->live_offsets[li] = r->offset;
		em->live_kept[li] = r->hi >= nr;
	}
	free(b);
	free(order);
	free(busy);
	return 0;
}
