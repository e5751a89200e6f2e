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
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "exec_build.h"

/* A buffer's reach while it is planned: its root layer and, once placed, its offset. */
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
	if (s->swish_elems)
		touch_buf(em, b, &s->dst, at);
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

/*
 * Every layer's reach into the buffers: its own output, its inputs, its
 * plans' steps. read[] (nr_layers, zeroed) gets which layers a later layer reads.
 */
static void find_lives(const struct exec_model *em, struct live_buf *b, bool *read)
{
	const struct model *m = em->graph;
	int end = m->nr_layers;

	for (int li = 0; li < end; li++) {
		b[li] = (struct live_buf){ .root = li, .lo = end, .hi = -1 };
		for (int j = 0; j < m->layers[li].nr_inputs; j++)
			if (m->layers[li].inputs[j] >= 0 && m->layers[li].inputs[j] < li)
				read[m->layers[li].inputs[j]] = true;
	}
	for (int li = 0; li < end; li++) {
		const struct exec_layer *xl = &em->layers[li];

		touch(em, b, li, li);
		for (int j = 0; j < m->layers[li].nr_inputs; j++)
			touch(em, b, m->layers[li].inputs[j], li);
		for (int v = 0; v < EXEC_MAX_VERSIONS; v++)
			for (int s = 0; xl->plans[v] && s < em->nr_slots; s++)
				for (int i = 0; i < xl->plans[v][s].nr_steps; i++)
					touch_step(em, b, &xl->plans[v][s].steps[i], li);
		if (m->layers[li].op == MODEL_OP_INPUT)
			touch(em, b, li, 0);
		if (m->layers[li].op == MODEL_OP_INPUT || !read[li])
			touch(em, b, li, end);
	}
}

/*
 * The packing (exec_arena_pack): largest first (ties: lower index first),
 * each at the lowest offset clear of every placed buffer alive at the same
 * time, the greedy packing of intervals by size. The placed buffers alive
 * with the next one are found in a segment tree over the buffers sorted by
 * first layer, holding the latest last layer of the placed ones below each
 * node: O((k + 1) log n) for the k found. Where the buffers found add up
 * to more than PACK_BUDGET_PER_BUF per buffer (a hostile model of many
 * buffers alive at once), each buffer gets bytes of its own instead: a
 * larger arena, planned in linear time. docs/design/arena-plan.md.
 */
#define PACK_BUDGET_PER_BUF 64

struct packer {
	const struct exec_live_buf *b;
	int n, leaves;
	int *by_lo; /* buffer indices by first layer */
	int *rank; /* each buffer's place in by_lo */
	int *hi_max; /* per tree node: latest hi of a placed buffer below, -1: none */
	int *found; /* the placed buffers alive with the one being placed */
	size_t *offsets;
};

static int by_size_desc(const void *a, const void *b, void *bufs)
{
	const struct exec_live_buf *bb = bufs;
	int x = *(const int *)a, y = *(const int *)b;

	if (bb[x].bytes != bb[y].bytes)
		return bb[x].bytes < bb[y].bytes ? 1 : -1;
	return x - y;
}

static int by_lo(const void *a, const void *b, void *bufs)
{
	const struct exec_live_buf *bb = bufs;
	int x = *(const int *)a, y = *(const int *)b;

	if (bb[x].lo != bb[y].lo)
		return bb[x].lo < bb[y].lo ? -1 : 1;
	return x - y;
}

static int by_offset(const void *a, const void *b, void *offsets)
{
	const size_t *o = offsets;
	size_t x = o[*(const int *)a], y = o[*(const int *)b];

	return x < y ? -1 : x > y;
}

/* Placed buffers in node (leaves [l, l + span) of by_lo) born before `born` and alive at `from`. */
static void collect(struct packer *pk, int node, int l, int span, int born, int from, int *nr)
{
	if (l >= born || pk->hi_max[node] < from)
		return;
	if (span == 1) {
		pk->found[(*nr)++] = pk->by_lo[l];
		return;
	}
	collect(pk, 2 * node, l, span / 2, born, from, nr);
	collect(pk, 2 * node + 1, l + span / 2, span / 2, born, from, nr);
}

/* The placed buffers whose lives overlap buffer x's, into pk->found; their count. */
static int find_alive(struct packer *pk, int x)
{
	const struct exec_live_buf *bx = &pk->b[x];
	int lo = 0, hi = pk->n, nr = 0;

	/* by_lo[0, lo): the buffers born no later than x dies */
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (pk->b[pk->by_lo[mid]].lo <= bx->hi)
			lo = mid + 1;
		else
			hi = mid;
	}
	collect(pk, 1, 0, pk->leaves, lo, bx->lo, &nr);
	return nr;
}

static void mark_placed(struct packer *pk, int x)
{
	for (int node = pk->leaves + pk->rank[x]; node; node >>= 1)
		if (pk->hi_max[node] < pk->b[x].hi)
			pk->hi_max[node] = pk->b[x].hi;
}

/* Every buffer at bytes of its own, in index order. */
static size_t pack_apart(const struct exec_live_buf *b, int n, size_t *offsets)
{
	size_t total = 0;

	for (int i = 0; i < n; i++) {
		offsets[i] = total;
		total += b[i].bytes;
	}
	return total;
}

static size_t pack_greedy(struct packer *pk, int *order, bool *over)
{
	size_t total = 0, budget = (size_t)PACK_BUDGET_PER_BUF * (size_t)pk->n, spent = 0;

	for (int i = 0; i < pk->n; i++) {
		int x = order[i], nb = find_alive(pk, x);
		size_t at = 0;

		spent += (size_t)nb;
		if (spent > budget) {
			*over = true;
			return 0;
		}
		qsort_r(pk->found, (size_t)nb, sizeof(*pk->found), by_offset, pk->offsets);
		for (int j = 0; j < nb; j++) {
			const struct exec_live_buf *y = &pk->b[pk->found[j]];
			size_t y_at = pk->offsets[pk->found[j]];

			if (y_at >= at + pk->b[x].bytes)
				break;
			if (y_at + y->bytes > at)
				at = y_at + y->bytes;
		}
		pk->offsets[x] = at;
		if (at + pk->b[x].bytes > total)
			total = at + pk->b[x].bytes;
		mark_placed(pk, x);
	}
	return total;
}

ssize_t exec_arena_pack(const struct exec_live_buf *b, int n, size_t *offsets)
{
	struct packer pk = { .b = b, .n = n, .leaves = 1, .offsets = offsets };
	int *order = calloc((size_t)(n > 0 ? n : 1), sizeof(*order));
	bool over = false;
	ssize_t total = -ENOMEM;

	while (pk.leaves < n)
		pk.leaves <<= 1;
	pk.by_lo = calloc((size_t)pk.leaves, sizeof(int));
	pk.rank = calloc((size_t)pk.leaves, sizeof(int));
	pk.found = calloc((size_t)pk.leaves, sizeof(int));
	pk.hi_max = malloc(2 * (size_t)pk.leaves * sizeof(int));
	if (n < 0 || !order || !pk.by_lo || !pk.rank || !pk.found || !pk.hi_max)
		goto out;
	for (int i = 0; i < n; i++)
		order[i] = pk.by_lo[i] = i;
	for (int i = 0; i < 2 * pk.leaves; i++)
		pk.hi_max[i] = -1;
	qsort_r(order, (size_t)n, sizeof(*order), by_size_desc, (void *)b);
	qsort_r(pk.by_lo, (size_t)n, sizeof(*pk.by_lo), by_lo, (void *)b);
	for (int i = 0; i < n; i++)
		pk.rank[pk.by_lo[i]] = i;
	total = (ssize_t)pack_greedy(&pk, order, &over);
	if (over)
		total = (ssize_t)pack_apart(b, n, offsets);
out:
	free(order);
	free(pk.by_lo);
	free(pk.rank);
	free(pk.found);
	free(pk.hi_max);
	return total;
}

/*
 * The model's buffers (roots, in layer order) as exec_arena_pack takes
 * them, into packed[]; buf_of[li] each root layer's index there. Their count.
 */
static int live_bufs(const struct exec_model *em, struct live_buf *b, bool *read,
		     struct exec_live_buf *packed, int *buf_of)
{
	int nr = em->graph->nr_layers, n = 0;

	find_lives(em, b, read);
	for (int li = 0; li < nr; li++) {
		if (root_of(em, li) != li)
			continue;
		b[li].bytes = (md_bytes(&em->layers[li].out_md) + EXEC_ALIGN - 1) / EXEC_ALIGN *
			      EXEC_ALIGN;
		packed[n] = (struct exec_live_buf){ .lo = b[li].lo,
						    .hi = b[li].hi,
						    .bytes = b[li].bytes };
		buf_of[li] = n++;
	}
	return n;
}

/*
 * Plans into em (out != NULL: only reports the buffers and the offsets
 * planned already, for exec_arena_bufs). Returns the buffer count or -ENOMEM.
 */
static int plan(struct exec_model *em, struct exec_live_buf *out, size_t *out_offsets)
{
	int nr = em->graph->nr_layers, n = -ENOMEM;
	struct live_buf *b = calloc((size_t)nr, sizeof(*b));
	struct exec_live_buf *packed = calloc((size_t)nr, sizeof(*packed));
	size_t *offsets = calloc((size_t)nr, sizeof(*offsets));
	bool *read = calloc((size_t)nr, sizeof(*read));
	int *buf_of = calloc((size_t)nr, sizeof(*buf_of));
	ssize_t total;

	if (!b || !packed || !offsets || !read || !buf_of)
		goto out;
	n = live_bufs(em, b, read, packed, buf_of);
	if (out) {
		for (int li = 0; li < nr; li++) {
			if (root_of(em, li) != li)
				continue;
			out[buf_of[li]] = packed[buf_of[li]];
			out_offsets[buf_of[li]] = em->live_offsets[li];
		}
		goto out;
	}
	total = exec_arena_pack(packed, n, offsets);
	if (total < 0) {
		n = (int)total;
		goto out;
	}
	em->live_bytes = (size_t)total;
	for (int li = 0; li < nr; li++) {
		int r = root_of(em, li);

		em->live_offsets[li] = offsets[buf_of[r]];
		em->live_kept[li] = b[r].hi >= nr;
	}
out:
	free(b);
	free(packed);
	free(offsets);
	free(read);
	free(buf_of);
	return n;
}

int exec_arena_plan(struct exec_model *em, struct coloc_err *err)
{
	int nr = em->graph->nr_layers;

	em->live_offsets = calloc((size_t)nr, sizeof(*em->live_offsets));
	em->live_kept = calloc((size_t)nr, sizeof(*em->live_kept));
	if (!em->live_offsets || !em->live_kept || plan(em, NULL, NULL) < 0)
		return coloc_err_set(err, -ENOMEM, "out of memory planning the activations");
	return 0;
}

int exec_arena_bufs(const struct exec_model *em, struct exec_live_buf *bufs, size_t *offsets)
{
	if (!em || !bufs || !offsets)
		return -EINVAL;
	return plan((struct exec_model *)em, bufs, offsets);
}
