// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ceiling with a queue: tenants on fixed servers (capacity_queued.h).
 * A fixed split makes its groups of tenants independent, so each group's
 * every server set is searched alone, on the arrivals its tenants have in
 * the mix, and the split is the highest load at which the cheapest passing
 * set of every group fits the cores; that split is then searched whole, as
 * a policy's run is, so that its figure is the same search's.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "capacity_queued.h"

static int service_ns(const struct sim_tenant *t, int cores, uint64_t *ns, struct coloc_err *err)
{
	for (int ci = 0; ci < t->costs->nr_core_counts; ci++)
		if (t->costs->core_counts[ci] == cores &&
		    isfinite(sim_capacity_model_ms(t->costs, ci))) {
			*ns = (uint64_t)llround(sim_capacity_model_ms(t->costs, ci) * 1e6);
			return 0;
		}
	return coloc_err_set(err, -EINVAL, "servers: %s has no whole-model time on %d cores",
			     t->name ? t->name : "a tenant", cores);
}

/*
 * A query of tenant t's (svc: its time on each server) arriving at a: on
 * the tenant's first free lane (lane_free: when each ends), to the server
 * that ends it first.
 */
static int serve_query(const struct sim_params *p, int t, uint64_t a, const uint64_t *svc,
		       uint64_t *lane_free, uint64_t *free_at, struct sim_result *r,
		       struct sim_latencies *lat, struct coloc_err *err)
{
	const struct sim_servers *sv = p->servers;
	struct sim_tenant_result *tr = &r->tenant[t];
	int g = sv->group[t], best = 0, lane = 0;
	uint64_t end = UINT64_MAX, ready = a;

	for (int l = 1; l < sv->lanes; l++)
		lane = lane_free[l] < lane_free[lane] ? l : lane;
	if (sv->lanes && lane_free[lane] > ready)
		ready = lane_free[lane];
	for (int i = 0; i < sv->nr[g]; i++) {
		uint64_t e = (free_at[i] > ready ? free_at[i] : ready) + svc[i];

		if (e < end || (e == end && svc[i] < svc[best])) {
			end = e;
			best = i;
		}
	}
	free_at[best] = end;
	lane_free[lane] = end;
	r->end_ns = end > r->end_ns ? end : r->end_ns;
	if (a < p->warmup_ns)
		return 0;
	tr->arrived++;
	tr->completed++;
	tr->within += end - a <= p->tenants[t].qos_ns;
	tr->blocks++;
	tr->block_cores += (uint64_t)sv->cores[g][best];
	tr->block_ns += svc[best];
	tr->core_ns += (double)sv->cores[g][best] * (double)svc[best];
	tr->started++;
	tr->wait_ns += end - svc[best] - a;
	return sim_latencies_add(lat, end - a, err);
}

/* Group g's tenants' arrivals, merged in time, through the group's servers. */
static int serve_group(const struct sim_params *p, int g, double total_share, struct sim_result *r,
		       struct coloc_err *err)
{
	const struct sim_servers *sv = p->servers;
	uint64_t svc[POLICY_MAX_TENANTS][SIM_MAX_SERVERS], free_at[SIM_MAX_SERVERS] = { 0 };
	uint64_t next[POLICY_MAX_TENANTS], lane_free[POLICY_MAX_TENANTS][SIM_MAX_SERVERS] = { 0 };
	struct sim_latencies lat[POLICY_MAX_TENANTS] = { 0 };
	struct sim_poisson arrivals[POLICY_MAX_TENANTS];
	int ret = 0;

	if (sv->nr[g] < 1 || sv->nr[g] > SIM_MAX_SERVERS || sv->lanes < 0 ||
	    sv->lanes > SIM_MAX_SERVERS)
		return coloc_err_set(
			err, -EINVAL,
			"servers: group %d has %d servers, its tenants %d lanes; give 1 "
			"to %d",
			g, sv->nr[g], sv->lanes, SIM_MAX_SERVERS);
	for (int t = 0; t < p->nr_tenants; t++) {
		next[t] = UINT64_MAX;
		if (sv->group[t] != g)
			continue;
		for (int i = 0; i < sv->nr[g] && !ret; i++)
			ret = service_ns(&p->tenants[t], sv->cores[g][i], &svc[t][i], err);
		sim_poisson_init(&arrivals[t], p->seed, t + sv->stream_shift[t],
				 p->qps * p->tenants[t].share / total_share, p->even_arrivals);
		next[t] = sim_poisson_next(&arrivals[t]);
	}
	while (!ret) {
		int first = 0;
		uint64_t a;

		for (int t = 1; t < p->nr_tenants; t++)
			first = next[t] < next[first] ? t : first;
		a = next[first];
		if (a >= p->duration_ns)
			break;
		next[first] = sim_poisson_next(&arrivals[first]);
		ret = serve_query(p, first, a, svc[first], lane_free[first], free_at, r,
				  &lat[first], err);
	}
	for (int t = 0; t < p->nr_tenants; t++) {
		if (sv->group[t] == g)
			sim_tenant_result_finish(&r->tenant[t], &lat[t]);
		sim_latencies_free(&lat[t]);
	}
	return ret;
}

int sim_servers_run(const struct sim_params *p, struct sim_result *r, struct coloc_err *err)
{
	double total = 0, window = (double)p->duration_ns - (double)p->warmup_ns;
	bool served[POLICY_MAX_TENANTS] = { false };
	int ret = 0;

	*r = (struct sim_result){ .nr_tenants = p->nr_tenants };
	if (p->trace || !(p->qps > 0) || p->nr_tenants < 1 || p->nr_tenants > POLICY_MAX_TENANTS ||
	    !(window > 0))
		return coloc_err_set(err, -EINVAL,
				     "servers: want Poisson or even arrivals at a load > 0, 1 to "
				     "%d tenants and a counted window",
				     POLICY_MAX_TENANTS);
	for (int t = 0; t < p->nr_tenants; t++) {
		int g = p->servers->group[t];

		if (g < 0 || g >= POLICY_MAX_TENANTS)
			return coloc_err_set(err, -EINVAL, "servers: tenant %d in group %d", t, g);
		total += p->tenants[t].share;
	}
	for (int t = 0; t < p->nr_tenants && !ret; t++) {
		int g = p->servers->group[t];

		if (!served[g])
			ret = serve_group(p, g, total, r, err);
		served[g] = true;
	}
	for (int t = 0; t < p->nr_tenants; t++)
		r->busy_fraction += r->tenant[t].core_ns;
	if (p->machine.nr_cores > 0)
		r->busy_fraction /= (double)p->machine.nr_cores * window;
	return ret;
}

/* A group's server set, and the total load of the mix at which its tenants pass alone there. */
struct server_set {
	int group, nr, cores[SIM_MAX_SERVERS], total_cores;
	double qps;
};

struct server_sets {
	struct server_set *set;
	int nr, cap;
};

static int push_set(struct server_sets *l, const struct server_set *s, struct coloc_err *err)
{
	if (l->nr == l->cap) {
		int cap = l->cap ? 2 * l->cap : 64;
		struct server_set *n = realloc(l->set, (size_t)cap * sizeof(*n));

		if (!n)
			return coloc_err_set(err, -ENOMEM, "capacity: out of memory");
		l->set = n;
		l->cap = cap;
	}
	l->set[l->nr++] = *s;
	return 0;
}

/* A server of k cores serves every tenant of group g, and one of them within its QoS. */
static bool serves_group(const struct sim_params *p, const int *group, int g, int k)
{
	bool within = false;

	for (int t = 0; t < p->nr_tenants; t++) {
		const struct policy_costs *m = p->tenants[t].costs;
		int ci = 0;

		if (group[t] != g)
			continue;
		while (ci < m->nr_core_counts && m->core_counts[ci] != k)
			ci++;
		if (ci == m->nr_core_counts || !isfinite(sim_capacity_model_ms(m, ci)))
			return false;
		within |= sim_capacity_model_ms(m, ci) * 1e6 <= (double)p->tenants[t].qos_ns;
	}
	return within;
}

/* Every multiset of up to servers_left more of counts[from..nr) that fits the cores left. */
static int list_sets(const int *counts, int nr, int cores_left, int servers_left, int from,
		     struct server_set *cur, struct server_sets *out, struct coloc_err *err)
{
	int ret = 0;

	for (int i = from; i < nr && !ret; i++) {
		if (counts[i] > cores_left)
			continue;
		cur->cores[cur->nr++] = counts[i];
		cur->total_cores += counts[i];
		ret = push_set(out, cur, err);
		if (!ret && servers_left > 1)
			ret = list_sets(counts, nr, cores_left - counts[i], servers_left - 1, i,
					cur, out, err);
		cur->nr--;
		cur->total_cores -= counts[i];
	}
	return ret;
}

/* Copies of one model: the same name, QoS and share. */
static bool same_model(const struct sim_tenant *a, const struct sim_tenant *b)
{
	return a->name && b->name && !strcmp(a->name, b->name) && a->qos_ns == b->qos_ns &&
	       a->share == b->share;
}

/* group[t] for each tenant (copies of one model together, or all when pooled); the number of groups. */
static int group_tenants(const struct sim_params *p, bool pooled, int *group)
{
	int nr = 0;

	for (int t = 0; t < p->nr_tenants; t++) {
		group[t] = pooled ? 0 : nr;
		for (int u = 0; u < t && !pooled; u++)
			if (same_model(&p->tenants[u], &p->tenants[t])) {
				group[t] = group[u];
				break;
			}
		nr += group[t] == nr;
	}
	return nr;
}

/* Set s's group alone on its servers, on its tenants' arrivals in the mix: s->qps in the mix's total. */
static int search_alone(const struct sim_params *base, const int *group, int lanes,
			double total_share, double start_qps, double tol, struct server_set *s,
			struct sim_capacity_queued *q, struct sim_search_result *found,
			struct coloc_err *err)
{
	struct sim_tenant alone[POLICY_MAX_TENANTS];
	struct sim_servers one = { .nr = { s->nr }, .lanes = lanes };
	struct sim_params p = *base;
	double share = 0;
	int n = 0, ret;

	for (int i = 0; i < s->nr; i++)
		one.cores[0][i] = s->cores[i];
	for (int t = 0; t < base->nr_tenants; t++)
		if (group[t] == s->group) {
			one.stream_shift[n] = t - n;
			share += base->tenants[t].share;
			alone[n++] = base->tenants[t];
		}
	p.tenants = alone;
	p.nr_tenants = n;
	p.servers = &one;
	ret = sim_search_qos_qps(&p, SIM_QOS_FRACTION, start_qps * share / total_share, tol, found,
				 err);
	q->points += found->points;
	q->wall_s += found->wall_s;
	s->qps = found->qos_qps * total_share / share;
	return ret;
}

/* Group g's fewest-cores set that passes at total load qps (the most QPS on a tie); NULL: none. */
static const struct server_set *cheapest_at(const struct server_sets *l, int g, double qps)
{
	const struct server_set *best = NULL;

	for (int i = 0; i < l->nr; i++) {
		const struct server_set *s = &l->set[i];

		if (s->group == g && s->qps >= qps &&
		    (!best || s->total_cores < best->total_cores ||
		     (s->total_cores == best->total_cores && s->qps > best->qps)))
			best = s;
	}
	return best;
}

/* The highest load at which every group's cheapest passing set fits the cores together. */
static double best_load(const struct server_sets *l, int nr_groups, int cores)
{
	double best = 0;

	for (int i = 0; i < l->nr; i++) {
		double qps = l->set[i].qps;
		int used = 0, g;

		if (!(qps > best))
			continue;
		for (g = 0; g < nr_groups; g++) {
			const struct server_set *s = cheapest_at(l, g, qps);

			if (!s)
				break;
			used += s->total_cores;
		}
		if (g == nr_groups && used <= cores)
			best = qps;
	}
	return best;
}

/* Every group's every set of servers, searched alone. */
static int search_sets(const struct sim_params *base, const int *group, int nr_groups, int cores,
		       int lanes, double start_qps, double tol, struct server_sets *sets,
		       struct sim_capacity_queued *q, struct coloc_err *err)
{
	struct sim_search_result *found = malloc(sizeof(*found));
	double total_share = 0;
	int ret = found ? 0 : coloc_err_set(err, -ENOMEM, "capacity: out of memory");

	for (int t = 0; t < base->nr_tenants; t++)
		total_share += base->tenants[t].share;
	for (int g = 0; g < nr_groups && !ret; g++) {
		const struct policy_costs *first = NULL;
		struct server_set cur = { .group = g };
		int counts[POLICY_MAX_CORE_COUNTS], nr = 0, tenants = 0;

		for (int t = 0; t < base->nr_tenants; t++)
			if (group[t] == g) {
				first = first ? first : base->tenants[t].costs;
				tenants++;
			}
		for (int ci = 0; ci < first->nr_core_counts; ci++)
			if (serves_group(base, group, g, first->core_counts[ci]))
				counts[nr++] = first->core_counts[ci];
		ret = list_sets(counts, nr, cores,
				tenants * lanes < SIM_MAX_SERVERS ? tenants * lanes :
								    SIM_MAX_SERVERS,
				0, &cur, sets, err);
	}
	for (int i = 0; i < sets->nr && !ret; i++)
		ret = search_alone(base, group, lanes, total_share, start_qps, tol, &sets->set[i],
				   q, found, err);
	q->candidates = sets->nr;
	free(found);
	return ret;
}

int sim_capacity_queued(const struct sim_params *base, int cores, int lanes, bool pooled,
			double start_qps, double tol, struct sim_capacity_queued *q,
			struct coloc_err *err)
{
	struct server_sets sets = { 0 };
	struct sim_params p = *base;
	double load = 0;
	int ret;

	*q = (struct sim_capacity_queued){ 0 };
	if (cores < 1 || lanes < 1 || lanes > SIM_MAX_SERVERS || base->trace ||
	    base->nr_tenants < 1 || base->nr_tenants > POLICY_MAX_TENANTS)
		return coloc_err_set(err, -EINVAL,
				     "capacity: %d cores, %d lanes a tenant (1 to %d), %d tenants "
				     "(1 to %d), no trace",
				     cores, lanes, SIM_MAX_SERVERS, base->nr_tenants,
				     POLICY_MAX_TENANTS);
	q->split.lanes = lanes;
	q->nr_groups = group_tenants(base, pooled, q->split.group);
	ret = search_sets(base, q->split.group, q->nr_groups, cores, lanes, start_qps, tol, &sets,
			  q, err);
	if (!ret)
		load = best_load(&sets, q->nr_groups, cores);
	for (int g = 0; g < q->nr_groups && load > 0; g++) {
		const struct server_set *s = cheapest_at(&sets, g, load);

		q->split.nr[g] = s->nr;
		for (int i = 0; i < s->nr; i++)
			q->split.cores[g][i] = s->cores[i];
	}
	if (load > 0) {
		p.servers = &q->split;
		ret = sim_search_qos_qps(&p, SIM_QOS_FRACTION, start_qps, tol, &q->search, err);
		q->qos_qps = q->search.qos_qps;
		q->points += q->search.points;
		q->wall_s += q->search.wall_s;
	}
	free(sets.set);
	return ret;
}
