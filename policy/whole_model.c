// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the simple policies (fcfs, static) share: the earliest queued query
 * by arrival, and serving a query's whole remaining model as one block on a
 * set of free cores, with the drop rule for a query that is already late or
 * would finish late even alone.
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
			     const struct policy_query *q, int nr_cores, struct policy_cpuset *free,
			     struct policy_output *out, struct coloc_err *err)
{
	const struct policy_costs *m = in->tenants[q->tenant].costs;
	int nr_free = policy_cpuset_count(free);
	int nr_layers = m->nr_layers - q->next_layer;
	int ci = policy_costs_core_index(m, nr_cores < nr_free ? nr_cores : nr_free);
	struct policy_decision *d;
	uint8_t *versions;
	uint64_t alone_ns = 0;
	int cpu;

	if (cfg->late == POLICY_LATE_DROP && in->now_ns >= q->deadline_ns)
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
	if (cfg->late == POLICY_LATE_DROP && in->now_ns + alone_ns > q->deadline_ns)
		return policy_append_drop(out, q, POLICY_DROP_CANNOT_MEET, alone_ns);

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
	policy_cpuset_andnot(free, &d->cores);
	return POLICY_SERVED;
}

int policy_serve_earliest_whole(const struct policy_config *cfg, const struct policy_input *in,
				int tenant, struct policy_cpuset *free, struct policy_output *out,
				struct coloc_err *err, const struct policy_query **after)
{
	const struct policy_query *q = *after;
	int r = POLICY_DROPPED;

	while (r == POLICY_DROPPED && (q = policy_earliest_queued(in, tenant, q))) {
		r = policy_serve_whole_model(cfg, in, q, POLICY_MAX_CPUS, free, out, err);
		*after = q;
	}
	return r;
}
