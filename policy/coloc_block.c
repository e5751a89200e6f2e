// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A coloc block's extent and cores: where q's next block ends (the next
 * pivot, its budget from the queue's headroom), how far it may grow on
 * spare cores (up to avg_C + thres, no further than its knee, or every free
 * core that pays in coloc-wide and for a tenant that may run alone), and
 * model-wise's whole rest as a candidate. coloc.c's serve() puts them together;
 * docs/design/coloc-policy.md says why each rule is there.
 */
#include <math.h>
#include "coloc_internal.h"

#define COLOC_LOOKAHEAD 4

/* The first count index whose count is above limit (a need there makes a pivot); nc when none. */
static int pivot_index(const struct policy_costs *m, double limit)
{
	int lo = 0, hi = m->nr_core_counts;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (m->core_counts[mid] > limit)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/*
 * The first layer from first on with work (MACs), or the last layer: the
 * layers before it (a model's input, a pool or add after a block's end)
 * take no time worth a dispatch, so a block never ends with them alone.
 * Cut there by the cap, a model's input made a block of its own: 21 % of
 * Tiny-YOLOv2's queries in colocd paid one more round trip (2.4 ms on the
 * 2-vCPU VM) for a 1.5 us layer.
 */
int coloc_first_with_work(const struct policy_costs *m, int first)
{
	while (m->layer_ops && first + 1 < m->nr_layers && !m->layer_ops[first])
		first++;
	return first;
}

/*
 * The end of q's next block: the next pivot after next_layer, per the flags'
 * unit. Also the block's budget (its layers' budgets summed in layer order)
 * and the least core need among its layers (0 unless blocks are cut).
 */
int coloc_block_end(const struct coloc_state *st, struct coloc_tenant *ct,
		    const struct policy_costs *m, int first, double scale, double thres, double pos,
		    int *min_need, double *budget)
{
	double limit = ct->avg_need + thres;
	struct coloc_cache *c = coloc_cache_at(ct, pos);
	int pivot, least, l;
	double sum;

	*min_need = 0;
	*budget = 0;
	if (st->flags.unit != COLOC_UNIT_BLOCK) {
		int last = st->flags.unit == COLOC_UNIT_MODEL ? m->nr_layers : first + 1;

		for (l = first; l < last; l++)
			*budget += scale * coloc_layer_share(ct, m, l);
		return last;
	}
	/* layers without work ride with the first one that has some: its need starts the block */
	for (int w = coloc_first_with_work(m, first); first < w; first++)
		*budget += scale * coloc_layer_share(ct, m, first);
	*budget += scale * coloc_layer_share(ct, m, first);
	*min_need = coloc_layer_need(st, ct, first, scale * coloc_layer_share(ct, m, first), pos);
	/*
	 * A block that starts at a pivot runs on the cores the pivot needs, so
	 * the layers after it that need no more join it: without this, when a
	 * tight headroom lifts every need over avg_C + thres, each layer became
	 * a block of its own (SSD-MobileNet: 2.4 layers a block in colocd),
	 * paying a dispatch each.
	 */
	if (m->core_counts[*min_need] > limit)
		limit = m->core_counts[*min_need];
	if (!c) {
		for (l = first + 1; l < m->nr_layers; l++) {
			double b = scale * coloc_layer_share(ct, m, l);
			int need = coloc_layer_need(st, ct, l, b, pos);

			if (m->core_counts[need] > limit)
				break;
			*budget += b;
			if (need < *min_need)
				*min_need = need;
		}
		return l;
	}
	/*
	 * A layer is a pivot when its need is at or above the first count over
	 * the limit; it lowers the block's least need when below it. Both are
	 * comparisons on the layer's cached row; a need is searched only when
	 * it is the new least.
	 */
	pivot = pivot_index(m, limit);
	least = *min_need;
	sum = *budget;
	for (l = first + 1; l < m->nr_layers; l++) {
		double b = scale * c->share[l];

		if (!coloc_need_below(st, ct, c, l, pos, b, pivot))
			break;
		sum += b;
		if (coloc_need_below(st, ct, c, l, pos, b, least))
			least = coloc_layer_need(st, ct, l, b, pos);
	}
	*min_need = least;
	*budget = sum;
	return l;
}

/*
 * What a layer's budget is per unit of share (layer ops / model ops): the
 * tenant's QoS, or with headroom budgets the time q's tenant has for the
 * rest of q's model. That is the tightest (deadline - now) / w over the
 * tenant's queued queries in order, i = 1, 2, ..., w = 1 + (i - 1) / E (its
 * E executors run them one after another, so the i-th waits for its share
 * of the i - 1 before it), spread over the rest of q's work. Only the
 * first COLOC_LOOKAHEAD queries count: each costs a pass over the queue,
 * and a long queue is late anyway.
 */
double coloc_budget_scale(const struct coloc_state *st, const struct policy_input *in,
			  const struct round *r, const struct coloc_tenant *ct,
			  const struct policy_query *q)
{
	const struct policy_costs *m = in->tenants[q->tenant].costs;
	double rest, head = 0, e = policy_tenant_executors(&in->tenants[q->tenant]);
	int i = 1;

	if (!st->flags.headroom_budget)
		return (double)in->tenants[q->tenant].qos_ns;
	for (const struct policy_query *p = q; p && i <= COLOC_LOOKAHEAD;
	     p = coloc_next_query(st, in, r, q->tenant, p), i++) {
		double h = p->deadline_ns > in->now_ns ?
				   (double)(p->deadline_ns - in->now_ns) / (1 + (i - 1) / e) :
				   0;

		if (p == q || h < head)
			head = h;
	}
	rest = coloc_rest_share(ct, m, q->next_layer);
	return rest > 0 ? head / rest : 0;
}

/*
 * The knee of the span [first, last)'s scaling curve: of the counts up to its
 * fastest, the one whose throughput (1 / latency) lies furthest above the
 * chord from the fewest cores to the fastest (Kneedle's rule, no constant):
 * past it each core added buys less than the average core did. The fastest
 * count when no count lies above the chord (the curve scales linearly).
 */
static int knee_index(const struct coloc_state *st, struct coloc_tenant *ct, int first, int last,
		      double pos)
{
	const struct policy_costs *m = ct->costs;
	double f[POLICY_MAX_CORE_COUNTS], best_d = 0;
	int fast = -1, knee;

	for (int c = 0; c < m->nr_core_counts && m->core_counts[c] <= st->nr_online; c++) {
		uint64_t ns = coloc_span_ns(st, ct, first, last, c, pos, NULL, 0);

		f[c] = ns ? 1.0 / (double)ns : 0;
		if (fast < 0 || f[c] > f[fast])
			fast = c;
	}
	knee = fast;
	for (int c = 0; fast > 0 && c < fast; c++) {
		double chord = f[0] + (f[fast] - f[0]) * (m->core_counts[c] - m->core_counts[0]) /
					      (m->core_counts[fast] - m->core_counts[0]);

		if (f[c] > 0 && f[c] - chord > best_d) {
			best_d = f[c] - chord;
			knee = c;
		}
	}
	return knee;
}

/*
 * Whether the block [first, last) on count index wide keeps at least
 * COLOC_SPARE_EFFICIENCY of its per-core speed on index ci (its time x its
 * cores against theirs): where it does, the cores past the need cost little
 * that the others could have used, and the block ends sooner
 * (coloc-wide; docs/design/coloc-policy.md, "Every free core that pays").
 */
static bool spare_pays(const struct coloc_state *st, struct coloc_tenant *ct, int first, int last,
		       int ci, int wide, double pos)
{
	const struct policy_costs *m = ct->costs;
	uint64_t need_ns = coloc_span_ns(st, ct, first, last, ci, pos, NULL, 0);
	uint64_t wide_ns = coloc_span_ns(st, ct, first, last, wide, pos, NULL, 0);

	return need_ns && wide_ns &&
	       (double)need_ns * m->core_counts[ci] >=
		       COLOC_SPARE_EFFICIENCY * (double)wide_ns * m->core_counts[wide];
}

/*
 * The count index the block [first, last) of q may grow to on spare cores,
 * from ci (the fewest that fit its budget): cores nobody needs are not left
 * idle, up to avg_C + thres (the model's fair share under the current load)
 * and what is free. With spare_to_knee and another tenant to keep cores for,
 * no further than the block's knee while q, ending there (its rest priced
 * cold, times cold, when the block starts cold), leaves its tenant's next
 * query QoS - slack (its solo time, at most 0.9 QoS) before q's deadline (a
 * query of the tenant that arrives now waits for q's end, as the tenant's
 * executor runs one block at a time, then needs its model on every core):
 * past the knee each core buys less time than the average
 * one, and the cores it holds are the ones a query arriving behind it waits
 * for (docs/design/coloc-policy.md, "Spare cores up to the knee"). A
 * tenant that may run alone (coloc_alone_tenant(): its query costs the
 * socket no less alone than beside others) takes every free core that pays
 * as in coloc-wide, also in the rounds it does not run alone
 * (docs/design/coloc-policy.md, "Alone on the socket"). With spare_priced
 * and the socket-wide slowdown known, every block does: the socket's price
 * (socket_index()) then picks its count up to there, in place of the knee
 * (docs/design/coloc-policy.md, "Spare cores that pay, priced").
 */
static int spare_limit(const struct coloc_state *st, const struct policy_input *in,
		       const struct round *r, struct coloc_tenant *ct, const struct policy_query *q,
		       int first, int last, int ci, double pos, double cold)
{
	const struct policy_costs *m = ct->costs;
	double limit = ct->avg_need + r->thres[q->tenant], corr, fixed, margin;
	int ci_spare = policy_costs_core_index(m, limit < r->nr_free ? (int)limit : r->nr_free);
	int knee;
	uint64_t rest;

	if (st->flags.spare_efficient || ct->alone_ns > 0 ||
	    (st->flags.spare_priced && st->socket_per_core > 0)) {
		int wide = policy_costs_core_index(m, r->nr_free);

		if (wide > ci && spare_pays(st, ct, first, last, ci, wide, pos))
			return wide;
	}
	if (!st->flags.spare_to_knee || ci_spare <= ci || r->nr_tables < 2)
		return ci_spare;
	knee = knee_index(st, ct, first, last, pos);
	if (knee >= ci_spare)
		return ci_spare;
	corr = st->flags.predict ? coloc_aged_corr(ct, in->now_ns) : 1.0;
	fixed = st->flags.predict ? coloc_aged_fixed(ct, in->now_ns) : 0;
	margin = st->flags.predict ? coloc_aged_margin(ct, in->now_ns) : 1.0;
	rest = policy_scale_ns(
		coloc_rest_of_model(st, ct, first, knee, pos, corr, fixed, in->now_ns), cold);
	if (!rest || (double)in->now_ns + (double)rest * margin +
				     ((double)in->tenants[q->tenant].qos_ns - r->slack[q->tenant]) >
			     (double)q->deadline_ns)
		return ci_spare;
	return knee > ci ? knee : ci;
}

/*
 * Of the counts from ci to spare, the one whose block costs the least time
 * once the socket's price is counted: its own time, slowed by the cores
 * busy beside it, plus what its cores add to each block running beside it
 * (r->nr_blocks) over that time (st->socket_per_core a core). Without
 * a socket-wide slowdown known, spare.
 */
static int socket_index(const struct coloc_state *st, const struct round *r,
			struct coloc_tenant *ct, int first, int last, int ci, int spare, double pos)
{
	double best = INFINITY, busy = st->nr_online - r->nr_free;
	int pick = spare;

	if (!(st->socket_per_core > 0))
		return spare;
	for (int c = ci; c <= spare; c++) {
		uint64_t ns = coloc_span_ns(st, ct, first, last, c, pos, NULL, 0);
		double cost = (double)ns *
			      (1 + st->socket_per_core *
					   (busy + r->nr_blocks * ct->costs->core_counts[c]));

		if (ns && cost < best) {
			best = cost;
			pick = c;
		}
	}
	return pick;
}

/* The spare cores' limit (spare_limit()), then their price (socket_index()). */
int coloc_spare_index(const struct coloc_state *st, const struct policy_input *in,
		      const struct round *r, struct coloc_tenant *ct, const struct policy_query *q,
		      int first, int last, int ci, double pos, double cold)
{
	int spare = spare_limit(st, in, r, ct, q, first, last, ci, pos, cold);

	return spare > ci ? socket_index(st, r, ct, first, last, ci, spare, pos) : spare;
}

/*
 * Model-wise's choice, one of coloc's candidates: the rest of q whole, from
 * first, on the fewest cores up to count index ci (the block's) whose
 * prediction, times margin and cold, fits budget (q's whole rest's) and, as
 * a block cut to the knee, leaves its tenant's next query its solo time.
 * Taken when it keeps no one waiting: it ends before every waiting head's
 * latest start that its cores would delay (coloc_wait_bound()), and within the
 * block cap (tcap) unless every other tenant's next query can start at
 * once beside it. Fewer cores than the block's run the same layers in less core
 * time where a model scales less than linearly, and one block saves the
 * round trips between blocks (docs/design/coloc-policy.md, "The whole rest
 * as a candidate"). Its count index, or -1.
 */
int coloc_whole_rest_index(const struct coloc_state *st, const struct policy_input *in,
			   const struct round *r, const struct policy_output *out,
			   struct coloc_tenant *ct, const struct policy_query *q, int ci,
			   double pos, double cold, double budget, double tcap, double corr,
			   double fixed, double margin)
{
	const struct policy_costs *m = ct->costs;
	int first = q->next_layer;

	if (!st->flags.whole_candidate || r->nr_tables < 2 ||
	    out->nr_versions + (m->nr_layers - first) > out->max_versions)
		return -1;
	for (int c = 0; c <= ci; c++) {
		double ns = (double)policy_scale_ns(
			coloc_rest_of_model(st, ct, first, c, pos, corr, fixed, in->now_ns), cold);

		if (!ns || ns * margin > budget)
			continue;
		if ((double)in->now_ns + ns * margin +
			    ((double)in->tenants[q->tenant].qos_ns - r->slack[q->tenant]) >
		    (double)q->deadline_ns)
			continue;
		if (ns > coloc_wait_bound(in, r, q->tenant, r->nr_free - m->core_counts[c]))
			return -1;
		if (ns > tcap &&
		    !coloc_leaves_enough(in, r, out, q->tenant, r->nr_free - m->core_counts[c]))
			return -1;
		return c;
	}
	return -1;
}

/*
 * A block [first, last) with no count that fits its budget: on the count
 * index up to hi (*ci) where it runs fastest, whole. coloc-layercounts
 * runs each layer on its own fastest count instead: *ci is its first
 * layer with work's, and the block ends before the layer where staying
 * there has cost, over the layers since the first, more than a block's
 * own cost (fixed, learnt) and that layer runs COLOC_COUNT_SLACK slower
 * there than on its own fastest count; the next block starts on that
 * layer's. The block's end (last when it stays whole).
 * docs/design/coloc-policy.md, "Each layer on its own count".
 */
int coloc_fastest_block(const struct coloc_state *st, struct coloc_tenant *ct, int first,
			int last, int hi, double pos, double fixed, int *ci)
{
	int lead = coloc_first_with_work(ct->costs, first), c0, l;
	double lost = 0;

	*ci = coloc_fastest_index(st, ct, first, last, hi, pos);
	if (!st->flags.layer_counts || *ci < 0)
		return last;
	c0 = coloc_fastest_index(st, ct, lead, lead + 1, hi, pos);
	if (c0 < 0)
		return last;
	for (l = lead + 1; l < last; l++) {
		uint64_t at = coloc_span_ns(st, ct, l, l + 1, c0, pos, NULL, 0), best;
		int own = coloc_fastest_index(st, ct, l, l + 1, hi, pos);

		if (own < 0 || !at)
			break;
		best = coloc_span_ns(st, ct, l, l + 1, own, pos, NULL, 0);
		lost += (double)(at - best);
		if (lost > fixed && (double)at > (1 + COLOC_COUNT_SLACK) * (double)best)
			break;
	}
	*ci = c0;
	return l;
}
