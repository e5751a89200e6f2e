// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The policy table and the calls every caller makes: find a policy by name,
 * create it on a machine, check each round's input before the policy sees
 * it, pass completions on, and verify a round's output (cores never
 * oversubscribed, layers and versions that exist). A new policy is one file
 * with its entry and one line in policy_table[].
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "policy_impl.h"

struct policy {
	const struct policy_entry *entry;
	struct policy_config cfg;
	void *state;
};

static const struct policy_entry *const policy_table[] = {
	&policy_fcfs,
	&policy_os,
	&policy_static,
	&policy_temporal,
	&policy_model_wise,
	&policy_layer_wise,
	&policy_coloc,
	&policy_coloc_noversions,
	&policy_coloc_noblocks,
	&policy_coloc_fixedthres,
	&policy_coloc_noprediction,
	&policy_coloc_nocap,
	&policy_coloc_fcfs,
	&policy_coloc_ewma,
	&policy_coloc_nospare,
	&policy_coloc_timeshares,
	&policy_coloc_wide,
	&policy_coloc_noknee,
	&policy_coloc_whole,
	&policy_coloc_shared,
	&policy_coloc_layercounts,
	&policy_coloc_priced,
};

#define NR_POLICIES ((int)(sizeof(policy_table) / sizeof(policy_table[0])))

const struct policy_entry *policy_entry_at(int i)
{
	return i >= 0 && i < NR_POLICIES ? policy_table[i] : NULL;
}

const struct policy_entry *policy_find(const char *name)
{
	for (int i = 0; i < NR_POLICIES; i++)
		if (name && !strcmp(policy_table[i]->name, name))
			return policy_table[i];
	return NULL;
}

static const char *const drop_reason_names[] = {
	[POLICY_DROP_DEADLINE_PASSED] = "deadline passed",
	[POLICY_DROP_CANNOT_MEET] = "cannot meet its deadline",
};

const char *policy_drop_reason_name(enum policy_drop_reason reason)
{
	if ((unsigned int)reason >= sizeof(drop_reason_names) / sizeof(drop_reason_names[0]) ||
	    !drop_reason_names[reason])
		return "?";
	return drop_reason_names[reason];
}

void policy_output_reset(struct policy_output *out)
{
	out->nr_decisions = 0;
	out->nr_versions = 0;
	out->nr_drops = 0;
}

struct policy *policy_create(const struct policy_entry *entry, const struct policy_config *cfg,
			     struct coloc_err *err)
{
	struct policy *p;
	int ret;

	if (!entry || !cfg) {
		coloc_err_set(err, -EINVAL, "policy: no policy or no machine given");
		return NULL;
	}
	if (!policy_cpuset_count(&cfg->online)) {
		coloc_err_set(err, -EINVAL, "policy %s: the machine has no online cores",
			      entry->name);
		return NULL;
	}
	for (int c = policy_cpuset_next(&cfg->online, 0); c >= 0;
	     c = policy_cpuset_next(&cfg->online, c + 1)) {
		if (cfg->llc[c] < 0 || cfg->llc[c] >= POLICY_MAX_CPUS || cfg->socket[c] < 0 ||
		    cfg->socket[c] >= POLICY_MAX_CPUS) {
			coloc_err_set(err, -EINVAL,
				      "policy %s: CPU %d has LLC domain %d and socket %d; both "
				      "must be in 0..%d",
				      entry->name, c, cfg->llc[c], cfg->socket[c],
				      POLICY_MAX_CPUS - 1);
			return NULL;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		coloc_err_set(err, -ENOMEM, "policy %s: out of memory", entry->name);
		return NULL;
	}
	p->entry = entry;
	p->cfg = *cfg;
	ret = entry->create(&p->cfg, &p->state, err);
	if (ret) {
		coloc_err_prefix(err, "policy %s", entry->name);
		free(p);
		return NULL;
	}
	return p;
}

void policy_destroy(struct policy *p)
{
	if (!p)
		return;
	p->entry->destroy(p->state);
	free(p);
}

const struct policy_entry *policy_entry_of(const struct policy *p)
{
	return p->entry;
}

static int check_input(const struct policy_config *cfg, const struct policy_input *in,
		       struct coloc_err *err)
{
	if (!in->free)
		return coloc_err_set(err, -EINVAL, "policy input: no free core set");
	if (in->nr_tenants < 0 || in->nr_tenants > POLICY_MAX_TENANTS ||
	    (in->nr_tenants && !in->tenants))
		return coloc_err_set(err, -EINVAL, "policy input: %d tenant slots; at most %d",
				     in->nr_tenants, POLICY_MAX_TENANTS);
	if (in->nr_queries < 0 || (in->nr_queries && !in->queries) || in->nr_running < 0 ||
	    (in->nr_running && !in->running))
		return coloc_err_set(err, -EINVAL, "policy input: query or block array missing");
	if (!policy_cpuset_subset(in->free, &cfg->online))
		return coloc_err_set(err, -EINVAL,
				     "policy input: free CPU %d is not one the policy schedules",
				     policy_cpuset_next(in->free, 0));
	for (int i = 0; i < in->nr_queries; i++) {
		const struct policy_query *q = &in->queries[i];
		const struct policy_costs *m;

		if (q->tenant < 0 || q->tenant >= in->nr_tenants || !in->tenants[q->tenant].costs)
			return coloc_err_set(err, -EINVAL,
					     "policy input: query %llu names tenant %d, which is "
					     "not there",
					     (unsigned long long)q->id, q->tenant);
		m = in->tenants[q->tenant].costs;
		if (q->next_layer < 0 || q->next_layer >= m->nr_layers)
			return coloc_err_set(err, -EINVAL,
					     "policy input: query %llu is at layer %d of a "
					     "%d-layer model (a finished query leaves the queue)",
					     (unsigned long long)q->id, q->next_layer,
					     m->nr_layers);
	}
	for (int i = 0; i < in->nr_running; i++) {
		int t = in->running[i].tenant;

		if (t < 0 || t >= in->nr_tenants || !in->tenants[t].costs)
			return coloc_err_set(err, -EINVAL,
					     "policy input: a running block names tenant %d, which "
					     "is not there",
					     t);
	}
	return 0;
}

int policy_decide(struct policy *p, const struct policy_input *in, struct policy_output *out,
		  struct coloc_err *err)
{
	int ret = check_input(&p->cfg, in, err);

	if (!ret)
		ret = p->entry->decide(p->state, &p->cfg, in, out, err);
	if (ret) {
		coloc_err_prefix(err, "policy %s", p->entry->name);
		policy_output_reset(out);
	}
	return ret;
}

void policy_block_done(struct policy *p, const struct policy_decision *d, uint64_t measured_ns)
{
	if (p->entry->block_done)
		p->entry->block_done(p->state, d, measured_ns);
}

static const struct policy_query *find_query(const struct policy_input *in, uint64_t id)
{
	for (int i = 0; i < in->nr_queries; i++)
		if (in->queries[i].id == id)
			return &in->queries[i];
	return NULL;
}

static int check_decision(const struct policy_input *in, const struct policy_decision *d,
			  struct coloc_err *err)
{
	const struct policy_query *q = find_query(in, d->query_id);
	const struct policy_costs *m;
	int ci;

	if (!q)
		return coloc_err_set(err, -EPROTO, "decision for query %llu, which is not queued",
				     (unsigned long long)d->query_id);
	m = in->tenants[q->tenant].costs;
	if (d->tenant != q->tenant || q->in_flight)
		return coloc_err_set(err, -EPROTO,
				     "decision for query %llu: tenant %d (the query's is %d) "
				     "or the query is already running",
				     (unsigned long long)d->query_id, d->tenant, q->tenant);
	if (d->first_layer != q->next_layer || d->last_layer <= d->first_layer ||
	    d->last_layer > m->nr_layers || !d->versions)
		return coloc_err_set(err, -EPROTO,
				     "decision for query %llu: layers [%d, %d) do not start at "
				     "its next layer %d or leave its %d layers",
				     (unsigned long long)d->query_id, d->first_layer, d->last_layer,
				     q->next_layer, m->nr_layers);
	ci = policy_costs_core_index(m, d->nr_cores);
	if (d->nr_cores != policy_cpuset_count(&d->cores) || ci < 0 ||
	    m->core_counts[ci] != d->nr_cores)
		return coloc_err_set(err, -EPROTO,
				     "decision for query %llu: %d cores (%d in its set) is not "
				     "a profiled core count",
				     (unsigned long long)d->query_id, d->nr_cores,
				     policy_cpuset_count(&d->cores));
	for (int l = d->first_layer; l < d->last_layer; l++) {
		int v = d->versions[l - d->first_layer];

		if (v >= m->nr_versions || !policy_costs_cell(m, l, v, ci, 0))
			return coloc_err_set(err, -EPROTO,
					     "decision for query %llu: layer %d has no version "
					     "%d at %d cores",
					     (unsigned long long)d->query_id, l, v, d->nr_cores);
	}
	return 0;
}

/*
 * Whether every tenant's blocks, running and decided in out, fit on its
 * executors (the decisions' tenants checked by check_decision() first).
 */
static int check_executors(const struct policy_input *in, const struct policy_output *out,
			   struct coloc_err *err)
{
	int n[POLICY_MAX_TENANTS] = { 0 };

	for (int i = 0; i < in->nr_running; i++)
		n[in->running[i].tenant]++;
	for (int i = 0; i < out->nr_decisions; i++) {
		int t = out->decisions[i].tenant;

		if (++n[t] > policy_tenant_executors(&in->tenants[t]))
			return coloc_err_set(
				err, -EPROTO,
				"tenant %d would run %d blocks at once on %d executor(s)", t, n[t],
				policy_tenant_executors(&in->tenants[t]));
	}
	return 0;
}

int policy_check_output(const struct policy_entry *entry, const struct policy_input *in,
			const struct policy_output *out, struct coloc_err *err)
{
	struct policy_cpuset taken;
	int ret;

	policy_cpuset_zero(&taken);
	for (int i = 0; i < out->nr_decisions; i++) {
		const struct policy_decision *d = &out->decisions[i];

		ret = check_decision(in, d, err);

		if (ret)
			return ret;
		if (!entry->shares_cores && (!policy_cpuset_subset(&d->cores, in->free) ||
					     policy_cpuset_intersects(&d->cores, &taken)))
			return coloc_err_set(err, -EPROTO,
					     "decision for query %llu grants a core that is busy "
					     "or granted twice",
					     (unsigned long long)d->query_id);
		policy_cpuset_or(&taken, &d->cores);
		for (int j = 0; j < i; j++)
			if (out->decisions[j].query_id == d->query_id)
				return coloc_err_set(err, -EPROTO,
						     "query %llu is decided twice in one round",
						     (unsigned long long)d->query_id);
	}
	ret = check_executors(in, out, err);
	if (ret)
		return ret;
	for (int i = 0; i < out->nr_drops; i++) {
		uint64_t id = out->drops[i].query_id;
		const struct policy_query *q = find_query(in, id);

		if (!q || q->in_flight)
			return coloc_err_set(
				err, -EPROTO,
				"drop of query %llu, which is not queued or is running",
				(unsigned long long)id);
		for (int j = 0; j < i; j++)
			if (out->drops[j].query_id == id)
				return coloc_err_set(err, -EPROTO,
						     "query %llu is dropped twice in one round",
						     (unsigned long long)id);
		for (int j = 0; j < out->nr_decisions; j++)
			if (out->decisions[j].query_id == id)
				return coloc_err_set(err, -EPROTO,
						     "query %llu is both decided and dropped",
						     (unsigned long long)id);
	}
	return 0;
}
