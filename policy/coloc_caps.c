// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What a coloc block owes the other tenants: their slack, which caps its
 * length (coloc_block_caps(), who is active and tight enough to weigh), the
 * latest start of each head query that waits for cores, which a block that
 * leaves it too few must end by (coloc_wait_bound()), and whether a block leaves
 * every other tenant's next query the cores to start at once. Worked out
 * per round into struct round; docs/design/coloc-policy.md, "Whose slack
 * caps a block" and "No wait past the slack".
 */
#include <limits.h>
#include <math.h>
#include "coloc_internal.h"

/*
 * How long from now a block of tenant t that leaves `left` cores free may
 * run: until the least latest start among the other tenants' heads still
 * waiting for cores (not served, or held) that `left` cores are too few
 * for, of those that can still start in time and have not given way
 * themselves this round (two that would each make the other late must not
 * both wait); INFINITY when none waits.
 */
double coloc_wait_bound(const struct policy_input *in, const struct round *r, int t, int left)
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
 * coloc_block_caps()): each can start at once on the cores left and those it
 * holds (a tenant runs one block per executor, so its next query waits for
 * its own block anyway, then has its cores).
 */
bool coloc_leaves_enough(const struct policy_input *in, const struct round *r,
			 const struct policy_output *out, int t, int left)
{
	for (int u = 0; u < in->nr_tenants; u++)
		if (u != t && in->tenants[u].costs && r->active[u] &&
		    (r->fresh[u] == INT_MAX || r->fresh[u] > left + cores_held(in, out, u)))
			return false;
	return true;
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
void coloc_block_caps(struct coloc_state *st, const struct policy_input *in, struct round *r)
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
	for (int t = 0; t < in->nr_tenants; t++) {
		r->others_slack[t] = t == t1 ? min2 : min1;
		r->cap[t] = st->flags.block_cap > 0 ? fmax(st->flags.block_cap * r->others_slack[t],
							   r->cap_floor[t]) :
						      INFINITY;
	}
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
double coloc_latest_start(struct coloc_state *st, const struct policy_input *in,
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
