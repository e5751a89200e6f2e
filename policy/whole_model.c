// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the simple policies (fcfs, os, static, temporal) share: the earliest
 * queued query by arrival, and serving a query's whole remaining model as
 * one block on a set of free cores, with the rule for late queries every
 * policy applies (late.c): a query late even alone is served after those on
 * time, and dropped only when even alone its answer would come after its
 * deadline plus its QoS.
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

int policy_serve_whole_model(const struct policy_config *cfg, const struct policy_input *in,
			     const struct policy_query *q, int nr_cores, bool demoted,
			     struct policy_cpuset *free, struct policy_output *out,
			     struct coloc_err *err)
{
	const struct policy_costs *m = in->tenants[q->tenant].costs;
	int nr_free = policy_cpuset_count(free);
	int nr_layers = m->nr_layers - q->next_layer;
	int ci = policy_costs_core_index(m, nr_cores < nr_free ? nr_cores : nr_free);
	struct policy_decision *d;
	enum policy_lateness late;
	uint8_t *versions;
	uint64_t alone_ns = 0;
	int cpu;

	if (policy_lateness(cfg, in, q, 0, 0) == POLICY_GIVE_UP)
		return policy_append_drop(out, q, POLICY_DROP_DEADLINE_PASSED, 0);
	if (ci < 0)
		return POLICY_WAIT;
	if (out->nr_decisions >= out->max_decisions ||
	    out->nr_versions + nr_layers > out->max_versions)
		return POLICY_OUT_FULL;

	/* Versions go straight into the pool; a drop below simply does not keep them. */
	versions = &out->versions[out->nr_versions];
	for (int i = 0; i < nr_layers; i++) {
		uint64_t ns;
		int v = policy_costs_fastest_version(m, q->next_layer + i, ci, 0, &ns);

		if (v < 0)
			return coloc_err_set(err, -EINVAL,
					     "tenant %d: layer %d has no version measured alone at "
					     "%d cores",
					     q->tenant, q->next_layer + i, m->core_counts[ci]);
		versions[i] = (uint8_t)v;
		alone_ns += ns;
	}
	/* the alone latency is both the prediction and the table: the least evidence too */
	late = policy_lateness(cfg, in, q, (double)alone_ns, (double)alone_ns);
	if (late == POLICY_GIVE_UP)
		return policy_append_drop(out, q, POLICY_DROP_CANNOT_MEET, alone_ns);
	if (late == POLICY_DEMOTE && !demoted)
		return POLICY_DEMOTED;

	d = &out->decisions[out->nr_decisions++];
	out->nr_versions += nr_layers;
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

int policy_serve_earliest_whole(const struct policy_config *cfg, const struct policy_input *in,
				int tenant, policy_whole_cores_fn cores_of, void *state,
				struct policy_cpuset *free, struct policy_output *out,
				struct coloc_err *err)
{
	const struct policy_query *q = NULL, *late = NULL;

	while ((q = policy_earliest_queued(in, tenant, q))) {
		int r;

		if (in_output(out, q))
			continue;
		r = policy_serve_whole_model(cfg, in, q,
					     cores_of ? cores_of(state, in, q) : POLICY_MAX_CPUS,
					     false, free, out, err);
		if (r == POLICY_DEMOTED) {
			if (!late)
				late = q;
			continue;
		}
		if (r != POLICY_DROPPED)
			return r;
	}
	/* nothing on time left: the earliest late one takes its turn */
	if (!late)
		return POLICY_DROPPED;
	return policy_serve_whole_model(cfg, in, late,
					cores_of ? cores_of(state, in, late) : POLICY_MAX_CPUS,
					true, free, out, err);
}
