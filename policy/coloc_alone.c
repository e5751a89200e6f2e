// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc's tenants that run alone on the socket. Where the machine is one
 * socket and its socket-wide slowdown M is known, every block slows the
 * others by the share of the socket it keeps busy, so a query co-located
 * at k of the socket's P cores costs the socket k x its time at k, slowed
 * by its model's slowdown on a full socket, over P; run alone at its
 * fastest count it costs its time there. A tenant whose model is no
 * cheaper co-located (VELTAIR's ResNet-50 at M = 1.6: 4.34 ms alone on
 * 56 cores against 4.48 at best beside others, and sooner) runs each query's
 * rest as one block at its fastest count once no other block runs, and no
 * other query starts while it waits for the socket or runs; so long as
 * the other tenants' slack leaves room to wait for it. Which query
 * goes first, and what still runs beside a waiting one:
 * docs/design/coloc-policy.md, "Alone on the socket".
 */
#include <errno.h>
#include <math.h>
#include "coloc_internal.h"

/* The whole model at count index ci, each layer's fastest version at level position pos. */
static double model_ns(const struct policy_costs *m, int ci, double pos)
{
	double sum = 0;

	for (int l = 0; l < m->nr_layers; l++) {
		uint64_t ns;

		if (policy_costs_fastest_version(m, l, ci, pos, &ns) < 0 || !ns)
			return INFINITY;
		sum += (double)ns;
	}
	return sum;
}

/*
 * Whether a tenant of model m may run alone: its fastest time alone is at
 * most the least socket time of a query beside others, k x its time at k
 * on a full socket / P. On a full socket a table with level columns is
 * read at M's column (the simulator's rule); one without runs M x slower.
 * That fastest time, ns, where it may; else 0.
 */
double coloc_alone_tenant(const struct coloc_state *st, const struct policy_costs *m)
{
	double full = st->socket_full, pos, extra, alone = INFINITY, shared = INFINITY;

	if (!st->flags.alone || !(full > 1.0))
		return 0;
	pos = policy_costs_level_pos(m, full);
	extra = m->nr_levels < 2 || !m->level_slowdown ? full : 1.0;
	for (int c = 0; c < m->nr_core_counts && m->core_counts[c] <= st->nr_online; c++) {
		alone = fmin(alone, model_ns(m, c, 0));
		shared = fmin(shared,
			      m->core_counts[c] * model_ns(m, c, pos) * extra / st->nr_online);
	}
	return isfinite(alone) && alone <= shared ? alone : 0;
}

/*
 * Who runs alone this round: a tenant that may whose fastest time alone is
 * within COLOC_ALONE_SLACK of the least slack of the others its block cap
 * weighs (coloc_block_caps()), so that a query of theirs arriving behind
 * its block can still wait for it. The socket is kept while a block of one
 * runs.
 */
void coloc_alone_round(struct coloc_state *st, const struct policy_input *in, struct round *r)
{
	for (int t = 0; t < in->nr_tenants; t++) {
		double alone_ns =
			in->tenants[t].costs ? coloc_tenant_state(st, in, t)->alone_ns : 0;

		if (!(alone_ns > 0))
			continue;
		r->alone[t] = alone_ns <= COLOC_ALONE_SLACK * r->others_slack[t];
		r->socket_kept |= r->alone[t] && r->in_flight[t];
	}
}

/*
 * The head that runs alone and goes before every other tenant's this
 * round, NULL when none: of those still to decide, the first in the
 * policy's order, if its latest start (its deadline less its rest on every
 * core) comes no later than every other head's deadline. Otherwise it
 * takes its turn by deadline, and keeps the socket from then on.
 */
const struct policy_query *coloc_alone_head(const struct coloc_state *st,
					    const struct policy_input *in, const struct round *r)
{
	const struct policy_query *best = NULL;
	double due = INFINITY;

	for (int t = 0; t < in->nr_tenants; t++) {
		if (r->done[t] || !r->head[t])
			continue;
		if (!r->alone[t])
			due = fmin(due, (double)r->head[t]->deadline_ns);
		else if (!best || coloc_before(st, r->head[t], best))
			best = r->head[t];
	}
	return best && r->latest[best->tenant] <= due ? best : NULL;
}

/*
 * The block of q when its tenant runs alone: the rest of q whole on the
 * count index (*ci), up to max_ci, where it runs fastest at pos. The socket
 * is kept for it; it waits (POLICY_WAIT) while another block runs or was
 * decided this round. POLICY_SERVED, POLICY_WAIT, POLICY_OUT_FULL when out
 * has no room, or -EINVAL when no count has a version of every layer.
 */
int coloc_alone_block(struct coloc_state *st, const struct policy_input *in, struct round *r,
		      const struct policy_query *q, const struct policy_output *out, int max_ci,
		      double pos, int *ci, struct coloc_err *err)
{
	struct coloc_tenant *ct = &st->t[q->tenant];
	int last = ct->costs->nr_layers;

	r->socket_kept = true;
	if (in->nr_running || out->nr_decisions)
		return POLICY_WAIT;
	if (out->nr_decisions >= out->max_decisions ||
	    out->nr_versions + (last - q->next_layer) > out->max_versions)
		return POLICY_OUT_FULL;
	*ci = coloc_fastest_index(st, ct, q->next_layer, last, max_ci, pos);
	if (*ci < 0)
		return coloc_err_set(err, -EINVAL, "tenant %d: a layer from %d on has no version",
				     q->tenant, q->next_layer);
	return POLICY_SERVED;
}

/*
 * Whether q waits because the socket is kept for a tenant that runs alone:
 * a query not yet begun does; one under way goes on, its blocks capped by
 * that tenant's slack as every block is.
 */
bool coloc_socket_closed(const struct round *r, const struct policy_query *q)
{
	return r->socket_kept && (r->alone[q->tenant] || !q->next_layer);
}
