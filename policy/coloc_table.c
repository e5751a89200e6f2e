// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The coloc engine's view of a tenant's latency table: each layer's version
 * at a level position and core count, its share of the QoS, its core need
 * for a budget, and the latency of a span of layers. A tenant whose table
 * fits keeps what it read in a cache (struct coloc_cache), valid for one
 * level position; running sums make a span's latency two reads.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "coloc_internal.h"

/*
 * The version of layer l at (ci, pos) the flags choose, and its latency; -1
 * when none. Without versions it is the fastest alone at ci, whatever the
 * level: at level 1.0 (pos 0) both choices are then the same version.
 */
static int layer_version(const struct coloc_state *st, const struct policy_costs *m, int l, int ci,
			 double pos, uint64_t *ns)
{
	int v;

	if (st->flags.versions || pos <= 0)
		return policy_costs_fastest_version(m, l, ci, pos, ns);
	v = policy_costs_fastest_version(m, l, ci, 0, ns);
	if (v < 0)
		return v;
	*ns = policy_costs_latency(m, l, v, ci, pos);
	/* a table without that version's column at the level: the fastest that has one */
	return *ns ? v : policy_costs_fastest_version(m, l, ci, pos, ns);
}

double coloc_layer_share(const struct coloc_tenant *ct, const struct policy_costs *m, int l)
{
	uint64_t ns;

	if (ct->cache)
		return ct->cache->share[l];
	if (ct->share_den <= 0)
		return 1.0 / m->nr_layers;
	if (ct->share_ci < 0)
		return (double)m->layer_ops[l] / ct->share_den;
	if (policy_costs_fastest_version(m, l, ct->share_ci, 0, &ns) < 0)
		return 0;
	return (double)ns / ct->share_den;
}

/* Fills cell e of (l, ci) in cache c at pos. */
static void cache_fill(const struct coloc_state *st, const struct coloc_tenant *ct,
		       struct coloc_cache *c, struct coloc_cell *e, int l, int ci, double pos)
{
	e->ver = layer_version(st, ct->costs, l, ci, pos, &e->ns);
	e->gen = c->gen;
}

/* layer_version() of ct's model, through its cache. */
static inline int layer_cell(const struct coloc_state *st, struct coloc_tenant *ct, int l, int ci,
			     double pos, uint64_t *ns)
{
	struct coloc_cache *c = coloc_cache_at(ct, pos);
	struct coloc_cell *e;

	if (!c)
		return layer_version(st, ct->costs, l, ci, pos, ns);
	e = &c->cell[l * ct->costs->nr_core_counts + ci];
	if (e->gen != c->gen)
		cache_fill(st, ct, c, e, l, ci, pos);
	*ns = e->ns;
	return e->ver;
}

/* Extends layer l's running minimum (min_ns) in cache c over its first n counts. */
static void cache_row_fill(const struct coloc_state *st, struct coloc_tenant *ct,
			   struct coloc_cache *c, int l, double pos, int n)
{
	struct coloc_cell *e = &c->cell[l * ct->costs->nr_core_counts];
	struct coloc_row *row = &c->row[l];

	if (row->gen != c->gen)
		*row = (struct coloc_row){ .gen = c->gen };
	for (int ci = row->filled; ci < n; ci++) {
		uint64_t ns;

		if (layer_cell(st, ct, l, ci, pos, &ns) >= 0 && ns &&
		    (!row->min || ns < row->min)) {
			row->min = ns;
			row->fastest = ci;
		}
		/* NAN compares false with every budget, as "no version" never fits */
		e[ci].min_ns = row->min ? (double)row->min : NAN;
	}
	if (n > row->filled)
		row->filled = n;
}

/*
 * Layer l's cells of cache c with their running minimum (min_ns) set over
 * at least the first n counts: a round reads the table only as far as its
 * comparisons look, which matters when the level, so the generation, moves
 * from round to round.
 */
static inline const struct coloc_cell *cache_row(const struct coloc_state *st,
						 struct coloc_tenant *ct, struct coloc_cache *c,
						 int l, double pos, int n)
{
	if (c->row[l].gen != c->gen || c->row[l].filled < n)
		cache_row_fill(st, ct, c, l, pos, n);
	return &c->cell[l * ct->costs->nr_core_counts];
}

/* The shares of layers first.. summed in order (kept per tenant: the same sum, bit for bit). */
double coloc_rest_share(const struct coloc_tenant *ct, const struct policy_costs *m, int first)
{
	double rest = 0;

	if (ct->cache)
		return ct->cache->rest[first];
	for (int l = first; l < m->nr_layers; l++)
		rest += coloc_layer_share(ct, m, l);
	return rest;
}

/* Index of the fewest cores whose latency of layer l at pos fits budget; the fastest when none. */
int coloc_layer_need(const struct coloc_state *st, struct coloc_tenant *ct, int l, double budget,
		     double pos)
{
	const struct policy_costs *m = ct->costs;
	struct coloc_cache *c = coloc_cache_at(ct, pos);
	uint64_t best_ns = 0;
	int best = 0;

	if (c) {
		/*
		 * The first count whose latency fits is the first whose running
		 * minimum fits, and the running minimum only falls with the count.
		 */
		const struct coloc_cell *e = cache_row(st, ct, c, l, pos, 0), *b = e;
		int n = c->row[l].filled, first_fit;

		if (!n || !(e[n - 1].min_ns <= budget)) {
			/* beyond what is read: one more count at a time, each a table read */
			for (; n < m->nr_core_counts; n++) {
				e = cache_row(st, ct, c, l, pos, n + 1);
				if (e[n].min_ns <= budget)
					return n;
			}
			return c->row[l].fastest;
		}
		/* within it, a lower bound without branches on the comparisons, which do not predict */
		while (n > 1) {
			int half = n / 2;

			b = b[half - 1].min_ns <= budget ? b : b + half;
			n -= half;
		}
		first_fit = (int)(b - e) + !(b->min_ns <= budget);
		return first_fit;
	}
	for (int ci = 0; ci < m->nr_core_counts; ci++) {
		uint64_t ns;

		if (layer_version(st, m, l, ci, pos, &ns) < 0 || !ns)
			continue;
		if ((double)ns <= budget)
			return ci;
		if (!best_ns || ns < best_ns) {
			best_ns = ns;
			best = ci;
		}
	}
	return best;
}

/*
 * The count whose alone latencies share out a tenant's QoS over its layers
 * (coloc-timeshares): the fewest cores on which its whole model, each layer
 * in its fastest version alone, fits qos_ns; the largest count when none
 * does or qos_ns is 0. Shares by ops (VELTAIR's, the baselines') give a
 * layer with few ops and a long time (a depthwise convolution, a pool, an
 * add: ops 0) a budget it cannot meet on the cores the whole model needs,
 * so it becomes a pivot of its own, a block of its own, on more cores than
 * the model needs (simulated 64-core mix, 2 executors a tenant:
 * EfficientNet-B0 in 8.5 blocks a query, 1.4 by alone latency). Not
 * coloc's rule yet: it also lowers avg_C, so the dynamic threshold leaves
 * more spare cores, and side by side it was neither clearly better nor
 * worse (sim/README.md).
 */
static int share_index(const struct policy_costs *m, uint64_t qos_ns)
{
	for (int ci = 0; qos_ns && ci < m->nr_core_counts; ci++) {
		double sum = 0;

		for (int l = 0; l < m->nr_layers && sum <= (double)qos_ns; l++) {
			uint64_t ns;

			if (policy_costs_fastest_version(m, l, ci, 0, &ns) < 0 || !ns)
				sum = INFINITY;
			else
				sum += (double)ns;
		}
		if (sum <= (double)qos_ns)
			return ci;
	}
	return m->nr_core_counts - 1;
}

/* The count index, up to max_ci, on which layers [first, last) run fastest at pos; -1 when none. */
int coloc_fastest_index(const struct coloc_state *st, struct coloc_tenant *ct, int first, int last,
			int max_ci, double pos)
{
	uint64_t best_ns = 0;
	int best = -1;

	for (int c = 0; c <= max_ci; c++) {
		uint64_t ns = coloc_span_ns(st, ct, first, last, c, pos, NULL, 0);

		if (ns && (!best_ns || ns < best_ns)) {
			best_ns = ns;
			best = c;
		}
	}
	return best;
}

struct coloc_tenant *coloc_tenant_state(struct coloc_state *st, const struct policy_input *in,
					int t)
{
	struct coloc_tenant *ct = &st->t[t];
	const struct policy_tenant *pt = &in->tenants[t];
	const struct policy_costs *m = pt->costs;
	double sum = 0;

	if (ct->known && ct->uid == pt->uid && ct->costs == m)
		return ct;
	*ct = (struct coloc_tenant){ .known = true, .uid = pt->uid, .costs = m, .corr = 1.0 };
	ct->share_ci = st->flags.time_shares || !m->layer_ops ?
			       share_index(m, st->flags.time_shares ? pt->qos_ns : 0) :
			       -1;
	for (int l = 0; l < m->nr_layers; l++) {
		uint64_t ns = 0;

		if (ct->share_ci < 0)
			ct->share_den += (double)m->layer_ops[l];
		else if (policy_costs_fastest_version(m, l, ct->share_ci, 0, &ns) >= 0)
			ct->share_den += (double)ns;
	}
	if (m->nr_layers <= COLOC_CACHE_LAYERS &&
	    (size_t)m->nr_layers * m->nr_core_counts <= COLOC_CACHE_CELLS) {
		struct coloc_cache *c = &st->cache[t];

		for (int l = 0; l < m->nr_layers; l++)
			c->share[l] = coloc_layer_share(ct, m, l);
		for (int l = 0; l < m->nr_layers; l++)
			c->rest[l] = coloc_rest_share(ct, m, l);
		/* what it held was another tenant's, or another model's */
		c->gen++;
		c->pos = -1;
		ct->cache = c;
	}
	for (int l = 0; l < m->nr_layers; l++)
		sum += m->core_counts[coloc_layer_need(
			st, ct, l, (double)pt->qos_ns * coloc_layer_share(ct, m, l), 0)];
	ct->avg_need = sum / m->nr_layers;
	ct->alone_ns = coloc_alone_tenant(st, m);
	return ct;
}

/*
 * Fills column ci of cache c: per layer the latency of the layers before it
 * (at the level and alone, in the versions chosen), how many lack a version,
 * and the versions side by side.
 */
static void cache_column(const struct coloc_state *st, struct coloc_tenant *ct,
			 struct coloc_cache *c, int ci, double pos)
{
	const struct policy_costs *m = ct->costs;
	int nc = m->nr_core_counts, l;
	uint64_t sum = 0, alone = 0;
	uint32_t bad = 0;

	if (c->col[ci] == c->gen)
		return;
	for (l = 0; l < m->nr_layers; l++) {
		uint64_t ns;
		int ver = layer_cell(st, ct, l, ci, pos, &ns);

		c->sum_before[l * nc + ci] = sum;
		c->bad_before[l * nc + ci] = bad;
		c->alone_before[l * nc + ci] = alone;
		c->ver_col[ci * m->nr_layers + l] = (uint8_t)ver;
		if (ver < 0 || !ns) {
			bad++;
		} else {
			sum += ns;
			alone += policy_costs_cell(m, l, ver, ci, 0);
		}
	}
	c->sum_before[l * nc + ci] = sum;
	c->bad_before[l * nc + ci] = bad;
	c->alone_before[l * nc + ci] = alone;
	c->col[ci] = c->gen;
}

/*
 * Table latency of layers [first, last) at (ci, pos), versions written to v
 * when non-NULL; 0 when a layer has no version there. With stop > 0 it may
 * return any sum above stop, and leave v unwritten, once the sum passes stop
 * (the caller only compares).
 */
uint64_t coloc_span_ns(const struct coloc_state *st, struct coloc_tenant *ct, int first, int last,
		       int ci, double pos, uint8_t *v, double stop)
{
	struct coloc_cache *c = coloc_cache_at(ct, pos);
	uint64_t sum = 0;

	if (c && ci >= 0) {
		/* integer sums: the difference of two running sums is the span's sum exactly */
		int nc = ct->costs->nr_core_counts;

		cache_column(st, ct, c, ci, pos);
		if (c->bad_before[last * nc + ci] != c->bad_before[first * nc + ci])
			return 0;
		sum = c->sum_before[last * nc + ci] - c->sum_before[first * nc + ci];
		if (stop > 0 && (double)sum > stop)
			return sum;
		if (v)
			memcpy(v, &c->ver_col[ci * ct->costs->nr_layers + first],
			       (size_t)(last - first));
		return sum;
	}
	for (int l = first; l < last && !(stop > 0 && (double)sum > stop); l++) {
		uint64_t ns;
		int ver = layer_cell(st, ct, l, ci, pos, &ns);

		if (ver < 0 || !ns)
			return 0;
		if (v)
			v[l - first] = (uint8_t)ver;
		sum += ns;
	}
	return sum;
}

/*
 * Table latency alone (level column 0) of layers [first, last) on
 * core_counts[ci] in versions v, which coloc_span_ns() wrote at (ci, pos).
 */
uint64_t coloc_span_alone_ns(const struct coloc_state *st, struct coloc_tenant *ct, int first,
			     int last, int ci, double pos, const uint8_t *v)
{
	const struct policy_costs *m = ct->costs;
	struct coloc_cache *c = coloc_cache_at(ct, pos);
	uint64_t sum = 0;

	if (c && ci >= 0) {
		int nc = m->nr_core_counts;

		cache_column(st, ct, c, ci, pos);
		/* every layer has its version there, so v holds the column's */
		if (c->bad_before[last * nc + ci] == c->bad_before[first * nc + ci])
			return c->alone_before[last * nc + ci] - c->alone_before[first * nc + ci];
	}
	for (int l = first; l < last; l++)
		sum += policy_costs_cell(m, l, v[l - first], ci, 0);
	return sum;
}

/*
 * Whether layer l's core need (coloc_layer_need() of its budget b) is below count
 * index n, without searching: the first count that fits is below n exactly
 * when the running minimum at n - 1 fits (it only falls with the count),
 * and when no count fits the need is the fastest. Reads the row only as
 * far as that.
 */
bool coloc_need_below_read(const struct coloc_state *st, struct coloc_tenant *ct,
			   struct coloc_cache *c, int l, double pos, double b, int n)
{
	int nc = ct->costs->nr_core_counts;
	const struct coloc_cell *e = cache_row(st, ct, c, l, pos, n);

	if (e[n - 1].min_ns <= b)
		return true;
	/* some count fits when one read already does: then the need is at n or above */
	if (e[c->row[l].filled - 1].min_ns <= b)
		return false;
	e = cache_row(st, ct, c, l, pos, nc);
	return !(e[nc - 1].min_ns <= b) && c->row[l].fastest < n;
}
