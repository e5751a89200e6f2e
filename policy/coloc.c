// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc: the scheduler issue's policy, VELTAIR's layer blocks and
 * interference-chosen versions with Abacus's prediction and headroom order,
 * and the engine its ablations and the model-wise and layer-wise baselines
 * share (struct coloc_flags says which parts are on; each entry is a flag
 * set, no copies). A round: the level, each layer's budget and core need,
 * the dynamic threshold, the next block of each query (cut at a pivot,
 * capped by the other tenants' slack), tenants by headroom, drops, cores by
 * LLC domain. The table cache, the prediction and the round's view of the
 * cores live beside it (coloc_internal.h says which file has what). The
 * algorithm step by step, and why each rule is there:
 * docs/design/coloc-policy.md.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sys/mman.h>
#include "coloc_internal.h"

#define COLOC_LOOKAHEAD 4
/* serve()'s answer beside enum policy_served: q's block cannot end before another's latest start */
#define COLOC_GIVE_WAY (POLICY_OUT_FULL + 1)

double policy_coloc_threshold(int total_cores, double sum_avg, double avg)
{
	double spare = (double)total_cores - sum_avg;

	if (sum_avg <= 0 || spare <= 0)
		return 0;
	return spare * avg / sum_avg;
}

int policy_coloc_engine_create(const struct coloc_flags *flags, const struct policy_config *cfg,
			       void **state, struct coloc_err *err)
{
	/*
	 * Mapped, not calloc'd: the caches are tens of MB that only the
	 * tenants' touched cells ever back, and fresh zero pages cost nothing
	 * until touched, where calloc may clear reused heap (glibc) or poison
	 * its shadow (ASan) in full at every create.
	 */
	struct coloc_state *st =
		mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (st == MAP_FAILED)
		return coloc_err_set(err, -ENOMEM, "out of memory for the policy's %zu MB of state",
				     sizeof(*st) >> 20);
	st->flags = *flags;
	st->nr_online = policy_cpuset_count(&cfg->online);
	*state = st;
	return 0;
}

void policy_coloc_engine_destroy(void *state)
{
	munmap(state, sizeof(struct coloc_state));
}

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
 * The end of q's next block: the next pivot after next_layer, per the flags'
 * unit. Also the block's budget (its layers' budgets summed in layer order)
 * and the least core need among its layers (0 unless blocks are cut).
 */
/*
 * The first layer from first on with work (MACs), or the last layer: the
 * layers before it (a model's input, a pool or add after a block's end)
 * take no time worth a dispatch, so a block never ends with them alone.
 * Cut there by the cap, a model's input made a block of its own: 21 % of
 * Tiny-YOLOv2's queries in colocd paid one more round trip (2.4 ms on the
 * 2-vCPU VM) for a 1.5 us layer.
 */
static int first_with_work(const struct policy_costs *m, int first)
{
	while (m->layer_ops && first + 1 < m->nr_layers && !m->layer_ops[first])
		first++;
	return first;
}

static int block_end(const struct coloc_state *st, struct coloc_tenant *ct,
		     const struct policy_costs *m, int first, double scale, double thres,
		     double pos, int *min_need, double *budget)
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
	for (int w = first_with_work(m, first); first < w; first++)
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
static double budget_scale(const struct coloc_state *st, const struct policy_input *in,
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

/* The error for a rest of model that a layer from first on cannot run on cores. */
static int no_version(struct coloc_err *err, const struct policy_query *q, int first, int cores)
{
	return coloc_err_set(err, -EINVAL,
			     "tenant %d: a layer from %d on has no version at %d cores", q->tenant,
			     first, cores);
}

/*
 * The rest of q's model, priced only to drop, demote or hold q (not when
 * late queries are served). Dropped only when its answer cannot come by its
 * deadline plus its QoS even on the fastest evidence: the least of its
 * learnt prediction's optimistic end (/ margin) and the table at the level,
 * on the whole machine, cold only when every core is. Late
 * on the optimistic end (or past its deadline) but not that late, it is
 * demoted (POLICY_DEMOTED): served after every query that can still meet its
 * deadline, on what they leave. Late on the cores free now (up to count
 * index max_ci), pessimistically, but not on the whole machine, it waits
 * for cores, and less urgent queries may use the free ones meanwhile. The
 * rest is priced cold (times cold, 1 when hot) when the block would start
 * on the free cores gone cold. POLICY_SERVED when none of these (serve()
 * goes on), else the enum policy_served to return, or -EINVAL when a layer
 * has no version. The rule is every policy's (policy_lateness(), late.c);
 * docs/design/coloc-policy.md, "Late queries are demoted, not dropped".
 */
static int drop_or_hold(const struct coloc_state *st, const struct policy_config *cfg,
			const struct policy_input *in, struct coloc_tenant *ct,
			const struct policy_query *q, int max_ci, double pos, double cold,
			struct policy_output *out, struct coloc_err *err)
{
	const struct policy_costs *m = ct->costs;
	double corr = st->flags.predict ? coloc_aged_corr(ct, in->now_ns) : 1.0;
	double fixed = st->flags.predict ? coloc_aged_fixed(ct, in->now_ns) : 0;
	double margin = st->flags.predict ? coloc_aged_margin(ct, in->now_ns) : 1.0;
	int first = q->next_layer, all_ci = policy_costs_core_index(m, st->nr_online);
	uint64_t rest_ns = coloc_rest_at_best(st, ct, first, all_ci, pos, corr, fixed, in->now_ns);
	double all_cold = policy_costs_cold_scale_on(m, in, &cfg->online), sure;

	if (!rest_ns)
		return no_version(err, q, first, m->core_counts[all_ci]);
	/* dropped for good only if late even where every core is cold: a busy one ends hot */
	rest_ns = policy_scale_ns(rest_ns, all_cold);
	sure = fmin(
		(double)rest_ns / margin,
		(double)policy_scale_ns(coloc_table_rest(st, ct, first, all_ci, pos), all_cold));
	switch (policy_lateness(cfg, in, q, (double)rest_ns / margin, sure)) {
	case POLICY_GIVE_UP:
		return policy_append_drop(out, q, POLICY_DROP_CANNOT_MEET, rest_ns);
	case POLICY_DEMOTE:
		return POLICY_DEMOTED;
	case POLICY_ON_TIME:
		break;
	}
	if (max_ci < all_ci) {
		rest_ns = coloc_rest_at_best(st, ct, first, max_ci, pos, corr, fixed, in->now_ns);
		if (!rest_ns)
			return no_version(err, q, first, m->core_counts[max_ci]);
		rest_ns = policy_scale_ns(rest_ns, cold);
		if ((double)in->now_ns + (double)rest_ns * margin > (double)q->deadline_ns)
			return POLICY_WAIT;
	}
	return POLICY_SERVED;
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
 * for (docs/design/coloc-policy.md, "Spare cores up to the knee").
 */
static int spare_index(const struct coloc_state *st, const struct policy_input *in,
		       const struct round *r, struct coloc_tenant *ct, const struct policy_query *q,
		       int first, int last, int ci, double pos, double cold)
{
	const struct policy_costs *m = ct->costs;
	double limit = ct->avg_need + r->thres[q->tenant], corr, fixed, margin;
	int ci_spare = policy_costs_core_index(m, limit < r->nr_free ? (int)limit : r->nr_free);
	int knee;
	uint64_t rest;

	if (st->flags.spare_efficient) {
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
 * How long from now a block of tenant t that leaves `left` cores free may
 * run: until the least latest start among the other tenants' heads still
 * waiting for cores (not served, or held) that `left` cores are too few
 * for, of those that can still start in time and have not given way
 * themselves this round (two that would each make the other late must not
 * both wait); INFINITY when none waits.
 */
static double wait_bound(const struct policy_input *in, const struct round *r, int t, int left)
{
	double bound = INFINITY;

	for (int u = 0; u < in->nr_tenants; u++)
		if (u != t && r->waiting[u] && !r->deferred[u] && r->need[u] > left &&
		    r->latest[u] >= (double)in->now_ns)
			bound = fmin(bound, r->latest[u] - (double)in->now_ns);
	return bound;
}

/* The cores tenant u holds: its blocks running, and those decided for it this round. */
static int cores_held(const struct policy_input *in, const struct policy_output *out, int u)
{
	int n = 0;

	for (int i = 0; i < in->nr_running; i++)
		if (in->running[i].tenant == u)
			n += in->running[i].nr_cores;
	for (int i = 0; i < out->nr_decisions; i++)
		if (out->decisions[i].tenant == u)
			n += out->decisions[i].nr_cores;
	return n;
}

/*
 * Whether a block of tenant t that leaves `left` cores free keeps no other
 * active tenant's next query waiting (an idle one weighs in no cap, as in
 * block_caps()): each can start at once on the cores left and those it
 * holds (a tenant runs one block per executor, so its next query waits for
 * its own block anyway, then has its cores).
 */
static bool leaves_enough(const struct policy_input *in, const struct round *r,
			  const struct policy_output *out, int t, int left)
{
	for (int u = 0; u < in->nr_tenants; u++)
		if (u != t && in->tenants[u].costs && r->active[u] &&
		    (r->fresh[u] == INT_MAX || r->fresh[u] > left + cores_held(in, out, u)))
			return false;
	return true;
}

/*
 * Model-wise's choice, one of coloc's candidates: the rest of q whole, from
 * first, on the fewest cores up to count index ci (the block's) whose
 * prediction, times margin and cold, fits budget (q's whole rest's) and, as
 * a block cut to the knee, leaves its tenant's next query its solo time.
 * Taken when it keeps no one waiting: it ends before every waiting head's
 * latest start that its cores would delay (wait_bound()), and within the
 * block cap (tcap) unless every other tenant's next query can start at
 * once beside it. Fewer cores than the block's run the same layers in less core
 * time where a model scales less than linearly, and one block saves the
 * round trips between blocks (docs/design/coloc-policy.md, "The whole rest
 * as a candidate"). Its count index, or -1.
 */
static int whole_rest_index(const struct coloc_state *st, const struct policy_input *in,
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
		if (ns > wait_bound(in, r, q->tenant, r->nr_free - m->core_counts[c]))
			return -1;
		if (ns > tcap &&
		    !leaves_enough(in, r, out, q->tenant, r->nr_free - m->core_counts[c]))
			return -1;
		return c;
	}
	return -1;
}

/*
 * Decides q's next block, or drops it, or waits, or demotes it; an enum
 * policy_served (POLICY_DEMOTED among them) or COLOC_GIVE_WAY. A demoted q
 * (late) is neither dropped nor held here, and its block is capped by every
 * tenant's slack, its own included: a query of its own tenant arriving
 * waits for it.
 */
static int serve(struct coloc_state *st, const struct policy_config *cfg,
		 const struct policy_input *in, struct round *r, const struct policy_query *q,
		 bool demoted, struct policy_output *out, struct coloc_err *err)
{
	const struct policy_tenant *pt = &in->tenants[q->tenant];
	const struct policy_costs *m = pt->costs;
	struct coloc_tenant *ct = &st->t[q->tenant];
	double slowdown = st->flags.use_level ? r->slowdown : 1.0;
	double pos = policy_costs_level_pos(m, slowdown);
	double corr = st->flags.predict ? coloc_aged_corr(ct, in->now_ns) : 1.0;
	double fixed = st->flags.predict ? coloc_aged_fixed(ct, in->now_ns) : 0;
	double margin = st->flags.predict ? coloc_aged_margin(ct, in->now_ns) : 1.0;
	int max_count = r->nr_free;
	int max_ci = policy_costs_core_index(m, max_count);
	int first = q->next_layer, lead = first_with_work(m, first), last, ci;
	/* every free core cold: the block will start cold, so it is sized and judged at that price */
	double cold = policy_costs_cold_scale_on(m, in, &r->free);
	double tcap = demoted ? fmax(r->cap_late, r->cap_floor[q->tenant]) : r->cap[q->tenant];
	double budget, fit, scale, cap, bound;
	struct block_pred bp;
	int min_need, whole;
	uint64_t raw_ns = 0;
	struct policy_decision *d;
	uint8_t *versions;

	if (policy_lateness(cfg, in, q, 0, 0) == POLICY_GIVE_UP)
		return policy_append_drop(out, q, POLICY_DROP_DEADLINE_PASSED, 0);
	if (max_ci < 0)
		return POLICY_WAIT;
	if (cfg->late == POLICY_LATE_DROP && !demoted) {
		int ret = drop_or_hold(st, cfg, in, ct, q, max_ci, pos, cold, out, err);

		if (ret != POLICY_SERVED)
			return ret;
	}

	scale = budget_scale(st, in, r, ct, q);
	last = block_end(st, ct, m, first, scale, r->thres[q->tenant], pos, &min_need, &budget);
	if (out->nr_decisions >= out->max_decisions ||
	    out->nr_versions + (last - first) > out->max_versions)
		return POLICY_OUT_FULL;
	/*
	 * The fewest cores whose block latency fits its budget, else the
	 * fastest that is free. Each try writes its versions into the pool and
	 * stops summing once past the budget, so the fitting try leaves them.
	 * Below every layer's own need each layer is over its budget, so the
	 * block is too: the search starts at the least need among its layers.
	 */
	versions = &out->versions[out->nr_versions];
	ci = -1;
	fit = budget / cold; /* policy_costs_start_cold() scales the block's prediction by cold */
	for (int c = min_need; c <= max_ci && fit > fixed * margin; c++) {
		bp = coloc_class_pred(st, ct, first, last, c, corr, fixed, in->now_ns);
		if (fit / margin <= bp.fixed)
			continue;
		raw_ns = coloc_span_ns(st, ct, first, last, c, pos, versions,
				       (fit / margin - bp.fixed) / bp.scale);
		if (raw_ns && coloc_predicted(bp, raw_ns) * margin <= fit) {
			ci = c;
			break;
		}
	}
	if (ci < 0) {
		uint64_t best_ns = 0;

		for (int c = 0; c <= max_ci; c++) {
			uint64_t ns = coloc_span_ns(st, ct, first, last, c, pos, NULL, 0);

			if (ns && (!best_ns || ns < best_ns)) {
				best_ns = ns;
				ci = c;
			}
		}
		raw_ns = coloc_span_ns(st, ct, first, last, ci, pos, versions, 0);
	}
	/* spare cores (spare_index()), when they run the block faster */
	if (st->flags.use_spare) {
		int ci_spare = spare_index(st, in, r, ct, q, first, last, ci, pos, cold);

		if (ci_spare > ci) {
			uint64_t ns = coloc_span_ns(st, ct, first, last, ci_spare, pos, NULL, 0);

			if (ns && ns < raw_ns) {
				ci = ci_spare;
				raw_ns = coloc_span_ns(st, ct, first, last, ci, pos, versions, 0);
			}
		}
	}
	/* model-wise's choice, when it costs no more cores and keeps no one waiting */
	whole = whole_rest_index(st, in, r, out, ct, q, ci, pos, cold,
				 scale * coloc_rest_share(ct, m, first), tcap, corr, fixed, margin);
	if (whole >= 0) {
		last = m->nr_layers;
		ci = whole;
		raw_ns = coloc_span_ns(st, ct, first, last, ci, pos, versions, 0);
		bp = coloc_class_pred(st, ct, first, last, ci, corr, fixed, in->now_ns);
		goto decided;
	}
	/*
	 * The cap bounds how long the block holds its cores (a block is not
	 * preempted, and another tenant's query may arrive behind it). It is
	 * checked on the block's predicted time, not its budget: headroom
	 * scaling makes the budget of a query with a distant deadline far
	 * larger than its time, and capping budgets cut such queries into
	 * blocks of one layer (SSD-MobileNet: 2.5 layers a block in colocd).
	 * The longest prefix within the cap stays, at least one layer with work.
	 */
	bound = wait_bound(in, r, q->tenant, r->nr_free - m->core_counts[ci]);
	cap = fmin(tcap, bound);
	bp = coloc_class_pred(st, ct, first, last, ci, corr, fixed, in->now_ns);
	if (last - lead > 1 && coloc_predicted(bp, raw_ns) * cold > cap) {
		int lo = lead + 1, hi = last - 1;

		while (lo < hi) {
			int mid = lo + (hi - lo + 1) / 2;

			if (coloc_predicted(coloc_class_pred(st, ct, first, mid, ci, corr, fixed,
							     in->now_ns),
					    coloc_span_ns(st, ct, first, mid, ci, pos, NULL, 0)) *
				    cold <=
			    cap)
				lo = mid;
			else
				hi = mid - 1;
		}
		last = lo;
		raw_ns = coloc_span_ns(st, ct, first, last, ci, pos, versions, 0);
		bp = coloc_class_pred(st, ct, first, last, ci, corr, fixed, in->now_ns);
	}
	/* even its first layer with work would end past another's latest start: that one first */
	if (coloc_predicted(bp, raw_ns) * cold > bound)
		return COLOC_GIVE_WAY;
decided:
	out->nr_versions += last - first;
	d = &out->decisions[out->nr_decisions++];
	*d = (struct policy_decision){
		.query_id = q->id,
		.tenant = q->tenant,
		.first_layer = first,
		.last_layer = last,
		.versions = versions,
		.nr_cores = m->core_counts[ci],
		.decided_ns = in->now_ns,
		.level = slowdown,
		.predicted_ns = (uint64_t)coloc_predicted(bp, raw_ns),
	};
	d->alone_ns = coloc_span_alone_ns(st, ct, first, last, ci, pos, versions);
	coloc_grant_cores(cfg, in, r, d->nr_cores, &d->cores);
	policy_costs_start_cold(m, in, d);
	return POLICY_SERVED;
}

/*
 * Tenant t's slack: its QoS minus its whole model predicted alone on every
 * core at the round's level (*solo_ns; *table_ns: the same in its table),
 * at least a tenth of its QoS. A query of t that arrives behind another
 * tenant's block waits for it, and meets its QoS only if the wait fits in
 * this.
 */
static double solo_slack(struct coloc_state *st, const struct policy_input *in,
			 const struct round *r, int t, double *solo_ns, double *table_ns)
{
	const struct policy_tenant *pt = &in->tenants[t];
	const struct policy_costs *m = pt->costs;
	struct coloc_tenant *ct = coloc_tenant_state(st, in, t);
	double pos = policy_costs_level_pos(m, st->flags.use_level ? r->slowdown : 1.0);
	int ci = policy_costs_core_index(m, st->nr_online);
	uint64_t raw = ci < 0 ? 0 : coloc_span_ns(st, ct, 0, m->nr_layers, ci, pos, NULL, 0);
	double qos = (double)pt->qos_ns, solo = (double)raw;

	if (st->flags.predict && st->flags.whole_candidate && raw)
		solo = (double)coloc_rest_at_best(st, ct, 0, ci, pos,
						  coloc_aged_corr(ct, in->now_ns),
						  coloc_aged_fixed(ct, in->now_ns), in->now_ns);
	else if (st->flags.predict)
		solo = coloc_predicted(coloc_class_pred(st, ct, 0, m->nr_layers, ci,
							coloc_aged_corr(ct, in->now_ns),
							coloc_aged_fixed(ct, in->now_ns),
							in->now_ns),
				       raw);
	*solo_ns = solo;
	*table_ns = (double)raw;
	return fmax(qos - solo, qos / 10);
}

/*
 * The fewest cores on which a query of tenant t arriving now meets its QoS:
 * its whole model predicted at the round's level, times its margin;
 * INT_MAX when no count does.
 */
static int fresh_need(struct coloc_state *st, const struct policy_input *in, const struct round *r,
		      int t)
{
	const struct policy_costs *m = in->tenants[t].costs;
	struct coloc_tenant *ct = coloc_tenant_state(st, in, t);
	double pos = policy_costs_level_pos(m, st->flags.use_level ? r->slowdown : 1.0);
	double corr = st->flags.predict ? coloc_aged_corr(ct, in->now_ns) : 1.0;
	double fixed = st->flags.predict ? coloc_aged_fixed(ct, in->now_ns) : 0;
	double margin = st->flags.predict ? coloc_aged_margin(ct, in->now_ns) : 1.0;

	for (int c = 0; c < m->nr_core_counts && m->core_counts[c] <= st->nr_online; c++) {
		uint64_t ns = coloc_rest_of_model(st, ct, 0, c, pos, corr, fixed, in->now_ns);

		if (ns && (double)ns * margin <= (double)in->tenants[t].qos_ns)
			return m->core_counts[c];
	}
	return INT_MAX;
}

/*
 * Which tenants may have a query behind a block decided now: those with a
 * query queued or in flight, and those whose last block ended within
 * COLOC_ACTIVE_QOS x their QoS.
 */
static void active_tenants(struct coloc_state *st, const struct policy_input *in, struct round *r)
{
	for (int i = 0; i < in->nr_queries; i++)
		r->active[in->queries[i].tenant] = true;
	for (int t = 0; t < in->nr_tenants; t++) {
		const struct coloc_tenant *ct;

		if (!in->tenants[t].costs || r->active[t])
			continue;
		ct = coloc_tenant_state(st, in, t);
		r->active[t] = ct->ran && (double)in->now_ns - (double)ct->last_end_ns <=
						  COLOC_ACTIVE_QOS * (double)in->tenants[t].qos_ns;
	}
}

/*
 * Each tenant's block cap: block_cap x the least slack among the other
 * active tenants (active_tenants(): a query of theirs may arrive behind
 * the block soon) able to meet their QoS (a slack of at least
 * COLOC_CAP_MIN_SLACK of it over their solo time in their table), never
 * below a COLOC_CAP_FLOOR_DIV-th of its own solo time (cap_floor), so that
 * no tenant, however tight its QoS, cuts another's query into more than a
 * bounded number of blocks; none when no other weighs or the flag is off.
 * A demoted query's block: block_cap x the least slack of all the active
 * ones, its own tenant's included, and the same floor (serve()).
 */
static void block_caps(struct coloc_state *st, const struct policy_input *in, struct round *r)
{
	double min1 = INFINITY, min2 = INFINITY;
	int t1 = -1;

	active_tenants(st, in, r);
	for (int t = 0; t < in->nr_tenants && (st->flags.block_cap > 0 || st->flags.spare_to_knee);
	     t++) {
		double slack, solo = 0, table = 0;

		if (!in->tenants[t].costs)
			continue;
		r->nr_tables++;
		slack = r->slack[t] = solo_slack(st, in, r, t, &solo, &table);
		r->cap_floor[t] = solo / COLOC_CAP_FLOOR_DIV;
		if (st->flags.whole_candidate)
			r->fresh[t] = fresh_need(st, in, r, t);
		if (!r->active[t] || (double)in->tenants[t].qos_ns - table <
					     COLOC_CAP_MIN_SLACK * in->tenants[t].qos_ns)
			continue;
		if (slack < min1) {
			min2 = min1;
			min1 = slack;
			t1 = t;
		} else if (slack < min2) {
			min2 = slack;
		}
	}
	for (int t = 0; t < in->nr_tenants; t++)
		r->cap[t] = st->flags.block_cap > 0 ?
				    fmax(st->flags.block_cap * (t == t1 ? min2 : min1),
					 r->cap_floor[t]) :
				    INFINITY;
	r->cap_late = st->flags.block_cap > 0 ? st->flags.block_cap * min1 : INFINITY;
}

/*
 * q's latest start: its deadline less its rest on every online core,
 * predicted at the round's level, times its tenant's margin (a plan's
 * pessimistic end). A block of another tenant on the cores q waits for
 * that ends later makes q late. Also the fewest cores on which q's rest,
 * started now, ends by its deadline (all it can have when none does, or
 * when its latest start has passed: then it binds no one).
 */
static double latest_start(struct coloc_state *st, const struct policy_input *in,
			   const struct round *r, const struct policy_query *q, int *need)
{
	const struct policy_costs *m = in->tenants[q->tenant].costs;
	struct coloc_tenant *ct = coloc_tenant_state(st, in, q->tenant);
	double pos = policy_costs_level_pos(m, st->flags.use_level ? r->slowdown : 1.0);
	double corr = st->flags.predict ? coloc_aged_corr(ct, in->now_ns) : 1.0;
	double fixed = st->flags.predict ? coloc_aged_fixed(ct, in->now_ns) : 0;
	double margin = st->flags.predict ? coloc_aged_margin(ct, in->now_ns) : 1.0;
	int ci = policy_costs_core_index(m, st->nr_online);
	uint64_t rest = ci < 0 ? 0 :
				 coloc_rest_at_best(st, ct, q->next_layer, ci, pos, corr, fixed,
						    in->now_ns);
	double latest = (double)q->deadline_ns - (double)rest * margin;

	*need = ci < 0 ? st->nr_online : m->core_counts[ci];
	for (int c = 0; c < ci && latest >= (double)in->now_ns; c++) {
		uint64_t ns =
			coloc_rest_of_model(st, ct, q->next_layer, c, pos, corr, fixed, in->now_ns);

		if (ns && (double)in->now_ns + (double)ns * margin <= (double)q->deadline_ns) {
			*need = m->core_counts[c];
			break;
		}
	}
	return latest;
}

/* Tenant t's head query is q (NULL: none left this round). */
static void set_head(struct coloc_state *st, const struct policy_input *in, struct round *r, int t,
		     const struct policy_query *q)
{
	r->head[t] = q;
	r->done[t] = !q;
	r->waiting[t] = q && st->flags.block_cap > 0;
	if (r->waiting[t])
		r->latest[t] = latest_start(st, in, r, q, &r->need[t]);
}

/*
 * Whether tenant t's held head can have the cores it needs by its latest
 * start: the free ones and those of the blocks running or decided this
 * round that are predicted to end by then. When not, it is late anyway,
 * and waiting for it would only leave the free cores idle.
 */
static bool cores_in_time(const struct policy_input *in, const struct round *r,
			  const struct policy_output *out, int t)
{
	int cores = r->nr_free;

	for (int i = 0; i < in->nr_running; i++)
		if ((double)(in->running[i].decided_ns + in->running[i].predicted_ns) <=
		    r->latest[t])
			cores += in->running[i].nr_cores;
	for (int i = 0; i < out->nr_decisions; i++)
		if ((double)(out->decisions[i].decided_ns + out->decisions[i].predicted_ns) <=
		    r->latest[t])
			cores += out->decisions[i].nr_cores;
	return cores >= r->need[t];
}

/* The tenants that gave way are tried again: whom they waited for was decided, or waits no more. */
static void undefer(const struct policy_input *in, struct round *r)
{
	for (int i = 0; i < in->nr_tenants; i++)
		if (r->deferred[i])
			r->done[i] = r->deferred[i] = false;
}

/*
 * The demoted queries (POLICY_DEMOTED), once every query that is not late
 * was decided, held or gave way: each tenant's earliest, by deadline, on
 * the cores left, where its tenant has an executor that no query of its
 * own still wants (its head decided, none left).
 */
static int serve_late(struct coloc_state *st, const struct policy_config *cfg,
		      const struct policy_input *in, struct round *r, struct policy_output *out,
		      struct coloc_err *err)
{
	for (;;) {
		int t = -1, ret;

		for (int i = 0; i < in->nr_tenants; i++)
			if (r->late[i] && !r->head[i] &&
			    r->in_flight[i] < policy_tenant_executors(&in->tenants[i]) &&
			    (t < 0 || coloc_before(st, r->late[i], r->late[t])))
				t = i;
		if (t < 0)
			return 0;
		ret = serve(st, cfg, in, r, r->late[t], true, out, err);
		if (ret < 0)
			return ret;
		if (ret == POLICY_OUT_FULL)
			return 0;
		if (ret == POLICY_SERVED)
			r->in_flight[t]++;
		r->late[t] = NULL;
	}
}

int policy_coloc_engine_decide(void *state, const struct policy_config *cfg,
			       const struct policy_input *in, struct policy_output *out,
			       struct coloc_err *err)
{
	struct coloc_state *st = state;
	struct round r = { .free = *in->free };
	double sum_avg = 0;

	coloc_round_init(st, cfg, in, &r);
	for (int t = 0; t < in->nr_tenants; t++) {
		r.done[t] = true;
		if (!in->tenants[t].costs)
			continue;
		if (r.in_flight[t] < policy_tenant_executors(&in->tenants[t]))
			set_head(st, in, &r, t, coloc_next_query(st, in, &r, t, NULL));
		if (!r.done[t] || r.in_flight[t])
			sum_avg += coloc_tenant_state(st, in, t)->avg_need;
	}
	block_caps(st, in, &r);
	for (int t = 0; t < in->nr_tenants; t++)
		if (!r.done[t])
			r.thres[t] = st->flags.dynamic_thres ?
					     policy_coloc_threshold(st->nr_online, sum_avg,
								    st->t[t].avg_need) :
					     st->flags.fixed_thres;
	for (;;) {
		int t = -1, ret;

		for (int i = 0; i < in->nr_tenants; i++)
			if (!r.done[i] && (t < 0 || coloc_before(st, r.head[i], r.head[t])))
				t = i;
		if (t < 0)
			return serve_late(st, cfg, in, &r, out, err);
		ret = serve(st, cfg, in, &r, r.head[t], false, out, err);
		if (ret < 0)
			return ret;
		if (ret == POLICY_OUT_FULL)
			return 0;
		if (ret == COLOC_GIVE_WAY) {
			/* the others go first; t is tried again once one of them is decided */
			r.done[t] = r.deferred[t] = true;
			continue;
		}
		if (ret == POLICY_WAIT) {
			/* held for cores: still waiting for them, unless they come too late */
			r.done[t] = true;
			if (r.waiting[t] && !cores_in_time(in, &r, out, t)) {
				r.waiting[t] = false;
				undefer(in, &r);
			}
			continue;
		}
		undefer(in, &r);
		if (ret == POLICY_DEMOTED) {
			/* late: its tenant's next query goes first, it after every one on time */
			if (!r.late[t])
				r.late[t] = r.head[t];
			set_head(st, in, &r, t, coloc_next_query(st, in, &r, t, r.head[t]));
			continue;
		}
		/* a tenant with an executor left serves its next query in turn */
		if (ret == POLICY_DROPPED ||
		    ++r.in_flight[t] < policy_tenant_executors(&in->tenants[t])) {
			set_head(st, in, &r, t, coloc_next_query(st, in, &r, t, r.head[t]));
		} else {
			r.done[t] = true;
			r.waiting[t] = false;
		}
	}
}

COLOC_ENTRY(policy_coloc, "coloc",
	    "VELTAIR's layer blocks and versions by interference level, Abacus's prediction "
	    "and headroom order",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true);
COLOC_ENTRY(policy_coloc_whole, "coloc-whole",
	    "coloc with model-wise's choice as a candidate: the rest of a query whole on the "
	    "fewest cores that fit its budget, when no more cores than the block and no one waits",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .whole_candidate = true);
COLOC_ENTRY(policy_coloc_noversions, "coloc-noversions",
	    "coloc with one fixed version per layer (its fastest alone)", .use_level = true,
	    .headroom_budget = true, .use_spare = true, .spare_to_knee = true,
	    .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true, .headroom = true,
	    .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_noblocks, "coloc-noblocks",
	    "coloc with the whole remaining model as one block (model-wise inside coloc)",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .unit = COLOC_UNIT_MODEL, .predict = true, .headroom = true);
COLOC_ENTRY(policy_coloc_fixedthres, "coloc-fixedthres",
	    "coloc with a fixed pivot threshold of 0 instead of the dynamic one", .use_level = true,
	    .versions = true, .headroom_budget = true, .use_spare = true, .spare_to_knee = true,
	    .unit = COLOC_UNIT_BLOCK, .fixed_thres = 0, .predict = true, .headroom = true,
	    .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_noprediction, "coloc-noprediction",
	    "coloc without the online correction of predicted latencies", .use_level = true,
	    .versions = true, .headroom_budget = true, .use_spare = true, .spare_to_knee = true,
	    .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .headroom = true, .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_nocap, "coloc-nocap",
	    "coloc without the cap on a block's length (half the other tenants' least slack)",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true,
	    .headroom = true);
COLOC_ENTRY(policy_coloc_fcfs, "coloc-fcfs", "coloc in arrival order instead of headroom order",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true,
	    .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_ewma, "coloc-ewma",
	    "coloc predicting every block from the EWMAs alone, never from its own median",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .ewma_only = true);
COLOC_ENTRY(policy_coloc_nospare, "coloc-nospare",
	    "coloc without spare cores: each block on the fewest cores that fit its budget",
	    .use_level = true, .versions = true, .headroom_budget = true, .block_cap = 0.5,
	    .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true, .headroom = true);
COLOC_ENTRY(policy_coloc_timeshares, "coloc-timeshares",
	    "coloc sharing each query's QoS over its layers by their alone latency on the "
	    "fewest cores where the model fits, instead of by their ops (VELTAIR's rule)",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .time_shares = true);
COLOC_ENTRY(policy_coloc_wide, "coloc-wide",
	    "coloc-timeshares whose blocks also take every free core that keeps 80 % of their "
	    "per-core speed on the cores they need",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .time_shares = true,
	    .spare_efficient = true);
COLOC_ENTRY(policy_coloc_noknee, "coloc-noknee",
	    "coloc with spare cores up to avg_C + thres, past the knee of the block's scaling "
	    "curve (coloc before 2026-12-05)",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true,
	    .headroom = true);
