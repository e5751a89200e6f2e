// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the simple policies (fcfs, os, static, temporal) share: the earliest
 * queued query by arrival, and serving a query's whole remaining model as
 * one block on a set of free cores (a tenant's idle executors' worth at
 * once: os, static), with the rule for late queries every
 * policy applies (late.c): a query late even alone keeps its turn when its
 * block fits in the least slack of the queries on time, else is served
 * after them, and is dropped only when even alone its answer would come
 * after its deadline plus its QoS.
 */
#include <errno.h>
#include "policy_impl.h"

int policy_stateless_create(const struct policy_config *cfg, void **state, struct coloc_err *err)
{
	(void)cfg;
	(void)err;
	*state = NULL;
	return 0;
}

void policy_stateless_destroy(void *state)
{
	(void)state;
}

static bool query_before(const struct policy_query *a, const struct policy_query *b)
{
	return a->arrival_ns < b->arrival_ns || (a->arrival_ns == b->arrival_ns && a->id < b->id);
}

const struct policy_query *policy_earliest_queued(const struct policy_input *in, int tenant,
						  const struct policy_query *after)
{
	const struct policy_query *best = NULL;

	for (int i = 0; i < in->nr_queries; i++) {
		const struct policy_query *q = &in->queries[i];

		if (q->in_flight || (tenant >= 0 && q->tenant != tenant))
			continue;
		if (after && !query_before(after, q))
			continue;
		if (!best || query_before(q, best))
			best = q;
	}
	return best;
}

int policy_tenant_running(const struct policy_input *in, int tenant)
{
	int n = 0;

	for (int i = 0; i < in->nr_running; i++)
		n += in->running[i].tenant == tenant;
	return n;
}

int policy_append_drop(struct policy_output *out, const struct policy_query *q,
		       enum policy_drop_reason reason, uint64_t predicted_ns)
{
	if (out->nr_drops >= out->max_drops)
		return POLICY_OUT_FULL;
	out->drops[out->nr_drops++] = (struct policy_drop){
		.query_id = q->id,
		.tenant = q->tenant,
		.reason = reason,
		.predicted_ns = predicted_ns,
	};
	return POLICY_DROPPED;
}

void policy_whole_prices_init(struct policy_whole_prices *prices)
{
	for (int t = 0; t < POLICY_MAX_TENANTS; t++)
		prices->at[t].known = false;
	prices->layers_priced = 0;
	policy_late_room_reset(&prices->room);
}

/*
 * The alone latency of layers [first, nr_layers) of m at core index ci,
 * each layer in its fastest version (written to versions unless NULL).
 */
static int price_rest(const struct policy_costs *m, int tenant, int first, int ci,
		      uint8_t *versions, struct policy_whole_prices *prices, uint64_t *alone_ns,
		      struct coloc_err *err)
{
	*alone_ns = 0;
	for (int l = first; l < m->nr_layers; l++) {
		uint64_t ns;
		int v = policy_costs_fastest_version(m, l, ci, 0, &ns);

		prices->layers_priced++;
		if (v < 0)
			return coloc_err_set(err, -EINVAL,
					     "tenant %d: layer %d has no version measured alone at "
					     "%d cores",
					     tenant, l, m->core_counts[ci]);
		if (versions)
			versions[l - first] = (uint8_t)v;
		*alone_ns += ns;
	}
	return 0;
}

/* q's rest alone at core index ci, priced once per (tenant, next layer, ci) in prices. */
static int cached_rest(const struct policy_input *in, const struct policy_query *q, int ci,
		       struct policy_whole_prices *prices, uint64_t *alone_ns,
		       struct coloc_err *err)
{
	struct policy_whole_price *p = &prices->at[q->tenant];
	int ret;

	if (p->known && p->next_layer == q->next_layer && p->ci == ci) {
		*alone_ns = p->ns;
		return 0;
	}
	ret = price_rest(in->tenants[q->tenant].costs, q->tenant, q->next_layer, ci, NULL, prices,
			 alone_ns, err);
	if (ret)
		return ret;
	*p = (struct policy_whole_price){
		.known = true, .next_layer = q->next_layer, .ci = ci, .ns = *alone_ns
	};
	return 0;
}

/*
 * What serving q whole would do, without doing it: POLICY_DROPPED (*reason
 * and *alone_ns say how), POLICY_DEMOTED, or POLICY_SERVED for every other
 * outcome (served, wait, output full, an error), which the walk stops at.
 */
static int whole_outcome(const struct policy_config *cfg, const struct policy_input *in,
			 const struct policy_query *q, int nr_cores, bool demoted,
			 const struct policy_cpuset *free, const struct policy_output *out,
			 struct policy_whole_prices *prices, enum policy_drop_reason *reason,
			 uint64_t *alone_ns, int *ci)
{
	const struct policy_costs *m = in->tenants[q->tenant].costs;
	int nr_free = policy_cpuset_count(free);
	struct coloc_err ignored = { 0 };
	enum policy_lateness late;

	*alone_ns = 0;
	*ci = policy_costs_core_index(m, nr_cores < nr_free ? nr_cores : nr_free);
	if (policy_late_gone(cfg, in, q, *ci >= 0)) {
		*reason = POLICY_DROP_DEADLINE_PASSED;
		return POLICY_DROPPED;
	}
	if (*ci < 0 || out->nr_decisions >= out->max_decisions ||
	    out->nr_versions + m->nr_layers - q->next_layer > out->max_versions ||
	    cached_rest(in, q, *ci, prices, alone_ns, &ignored))
		return POLICY_SERVED;
	/* the alone latency is both the prediction and the table: the least evidence too */
	late = policy_lateness(cfg, in, q, (double)*alone_ns, (double)*alone_ns);
	/*
	 * overdue: served now if its block, at the price it will start at, leaves the queue on
	 * time; else demoted, and given up if it still does not when its turn comes
	 */
	if (late == POLICY_GIVE_UP) {
		*reason = POLICY_DROP_CANNOT_MEET;
		return POLICY_DROPPED;
	}
	if (late == POLICY_OVERDUE &&
	    !policy_overdue_kept(cfg, in, q,
				 (double)*alone_ns * policy_costs_cold_scale_on(m, in, free),
				 m->core_counts[*ci])) {
		if (!demoted)
			return POLICY_DEMOTED;
		*reason = POLICY_DROP_CANNOT_MEET;
		return POLICY_DROPPED;
	}
	if (late != POLICY_DEMOTE || demoted)
		return POLICY_SERVED;
	/* late: in its turn if its block, at the price it will start at, delays no one on time */
	return policy_late_in_turn(&prices->room, cfg, in, q,
				   (double)*alone_ns * policy_costs_cold_scale_on(m, in, free)) ?
		       POLICY_SERVED :
		       POLICY_DEMOTED;
}

int policy_serve_whole_model(const struct policy_config *cfg, const struct policy_input *in,
			     const struct policy_query *q, int nr_cores, bool demoted,
			     struct policy_whole_prices *prices, struct policy_cpuset *free,
			     struct policy_output *out, struct coloc_err *err)
{
	const struct policy_costs *m = in->tenants[q->tenant].costs;
	enum policy_drop_reason reason;
	struct policy_decision *d;
	uint8_t *versions;
	uint64_t alone_ns;
	int ci, cpu, ret;

	ret = whole_outcome(cfg, in, q, nr_cores, demoted, free, out, prices, &reason, &alone_ns,
			    &ci);
	if (ret == POLICY_DROPPED)
		return policy_append_drop(out, q, reason, alone_ns);
	if (ret == POLICY_DEMOTED)
		return POLICY_DEMOTED;
	if (ci < 0)
		return POLICY_WAIT;
	if (out->nr_decisions >= out->max_decisions ||
	    out->nr_versions + m->nr_layers - q->next_layer > out->max_versions)
		return POLICY_OUT_FULL;
	/* served: its versions go into the pool (the layers priced a second time, once a query) */
	versions = &out->versions[out->nr_versions];
	ret = price_rest(m, q->tenant, q->next_layer, ci, versions, prices, &alone_ns, err);
	if (ret)
		return ret;
	d = &out->decisions[out->nr_decisions++];
	out->nr_versions += m->nr_layers - q->next_layer;
	*d = (struct policy_decision){
		.query_id = q->id,
		.tenant = q->tenant,
		.first_layer = q->next_layer,
		.last_layer = m->nr_layers,
		.versions = versions,
		.nr_cores = m->core_counts[ci],
		.decided_ns = in->now_ns,
		.level = 1.0,
		.alone_ns = alone_ns,
		.predicted_ns = alone_ns,
	};
	cpu = policy_cpuset_next(free, 0);
	for (int i = 0; i < d->nr_cores; i++, cpu = policy_cpuset_next(free, cpu + 1))
		policy_cpuset_set(&d->cores, cpu);
	policy_costs_start_cold(m, in, d);
	policy_cpuset_andnot(free, &d->cores);
	return POLICY_SERVED;
}

/* Whether q was decided or dropped earlier in this round (out). */
static bool in_output(const struct policy_output *out, const struct policy_query *q)
{
	for (int i = 0; i < out->nr_decisions; i++)
		if (out->decisions[i].query_id == q->id)
			return true;
	for (int i = 0; i < out->nr_drops; i++)
		if (out->drops[i].query_id == q->id)
			return true;
	return false;
}

/* Whether q is tenant's (-1: any) and queued. */
static bool walks(const struct policy_query *q, int tenant)
{
	return !q->in_flight && (tenant < 0 || q->tenant == tenant);
}

/*
 * One pass over the queue finds where the walk in arrival order stops (the
 * earliest query neither given up nor demoted) and the earliest demoted
 * one; a second drops the given-up ones before the stop. out is looked in
 * only for a query that would become the stop or the late one, and for a
 * query given up.
 */
int policy_serve_earliest_whole(const struct policy_config *cfg, const struct policy_input *in,
				int tenant, policy_whole_cores_fn cores_of, void *state,
				struct policy_whole_prices *prices, struct policy_cpuset *free,
				struct policy_output *out, struct coloc_err *err)
{
	const struct policy_query *stop = NULL, *late = NULL;
	enum policy_drop_reason reason;
	uint64_t alone_ns;
	int ci;

	for (int i = 0; i < in->nr_queries; i++) {
		const struct policy_query *q = &in->queries[i];
		int r;

		if (!walks(q, tenant) || (stop && !query_before(q, stop)))
			continue;
		r = whole_outcome(cfg, in, q, cores_of ? cores_of(state, in, q) : POLICY_MAX_CPUS,
				  false, free, out, prices, &reason, &alone_ns, &ci);
		if (r == POLICY_SERVED && !in_output(out, q))
			stop = q;
		else if (r == POLICY_DEMOTED && (!late || query_before(q, late)) &&
			 !in_output(out, q))
			late = q;
	}
	for (int i = 0; i < in->nr_queries; i++) {
		const struct policy_query *q = &in->queries[i];

		if (!walks(q, tenant) || (stop && !query_before(q, stop)))
			continue;
		if (whole_outcome(cfg, in, q, cores_of ? cores_of(state, in, q) : POLICY_MAX_CPUS,
				  false, free, out, prices, &reason, &alone_ns,
				  &ci) == POLICY_DROPPED &&
		    !in_output(out, q) &&
		    policy_append_drop(out, q, reason, alone_ns) != POLICY_DROPPED)
			return POLICY_OUT_FULL;
	}
	if (stop)
		return policy_serve_whole_model(
			cfg, in, stop, cores_of ? cores_of(state, in, stop) : POLICY_MAX_CPUS,
			false, prices, free, out, err);
	/* nothing on time left: the earliest late one takes its turn */
	if (!late)
		return POLICY_DROPPED;
	return policy_serve_whole_model(cfg, in, late,
					cores_of ? cores_of(state, in, late) : POLICY_MAX_CPUS,
					true, prices, free, out, err);
}

int policy_serve_tenant_whole(const struct policy_config *cfg, const struct policy_input *in,
			      int tenant, const struct policy_cpuset *cores, bool shared,
			      struct policy_whole_prices *prices, struct policy_output *out,
			      struct coloc_err *err)
{
	struct policy_cpuset free = *cores;
	int idle =
		policy_tenant_executors(&in->tenants[tenant]) - policy_tenant_running(in, tenant);

	for (int r = POLICY_SERVED; idle > 0 && r == POLICY_SERVED; idle--) {
		if (shared)
			free = *cores;
		r = policy_serve_earliest_whole(cfg, in, tenant, NULL, NULL, prices, &free, out,
						err);
		if (r < 0 || r == POLICY_OUT_FULL)
			return r;
	}
	return 0;
}
