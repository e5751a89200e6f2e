// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * static: each tenant owns a fixed, equal share of the cores for its life
 * (what OpenVINO streams or per-process pinning give). The online cores, in
 * CPU id order, are cut into as many contiguous shares as there are tenants,
 * the k-th tenant (by id) taking the k-th; within its share a tenant runs
 * FCFS, one query at a time on each of its executors (colocd starts one),
 * each query's whole remaining model on the free cores of its share (the
 * first query takes them all, so a second executor waits for it); late
 * queries as in fcfs, after the tenant's queries on time (late.c). Shares
 * are recomputed from the tenant set at every call, so they change only
 * when a tenant comes or goes.
 */
#include <errno.h>
#include <stdlib.h>
#include "policy_impl.h"

/* The online cores in CPU id order, listed once so a share is a slice of it. */
struct static_state {
	int cpus[POLICY_MAX_CPUS];
	int nr_cpus;
};

static int static_create(const struct policy_config *cfg, void **state, struct coloc_err *err)
{
	struct static_state *st = calloc(1, sizeof(*st));

	if (!st)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	for (int c = policy_cpuset_next(&cfg->online, 0); c >= 0;
	     c = policy_cpuset_next(&cfg->online, c + 1))
		st->cpus[st->nr_cpus++] = c;
	*state = st;
	return 0;
}

static void static_destroy(void *state)
{
	free(state);
}

/* The k-th of nr equal shares of the online cores (the first shares get the remainder). */
static void static_share(const struct static_state *st, int k, int nr, struct policy_cpuset *share)
{
	int n = st->nr_cpus;
	int first = k * (n / nr) + (k < n % nr ? k : n % nr);
	int len = n / nr + (k < n % nr);

	policy_cpuset_zero(share);
	for (int i = first; i < first + len; i++)
		policy_cpuset_set(share, st->cpus[i]);
}

static int static_decide(void *state, const struct policy_config *cfg,
			 const struct policy_input *in, struct policy_output *out,
			 struct coloc_err *err)
{
	struct policy_whole_prices prices;
	int nr_active = 0, k = 0;

	policy_whole_prices_init(&prices);
	for (int t = 0; t < in->nr_tenants; t++)
		nr_active += in->tenants[t].costs != NULL;
	for (int t = 0; t < in->nr_tenants; t++) {
		struct policy_cpuset free;
		int r;

		if (!in->tenants[t].costs)
			continue;
		static_share(state, k++, nr_active, &free);
		policy_cpuset_and(&free, in->free);
		/* what one query takes of its share is gone from free for the next */
		r = policy_serve_tenant_whole(cfg, in, t, &free, false, &prices, out, err);
		if (r < 0)
			return r;
		if (r == POLICY_OUT_FULL)
			return 0;
	}
	return 0;
}

const struct policy_entry policy_static = {
	.name = "static",
	.description = "each tenant owns a fixed equal share of the cores and runs FCFS in it",
	.create = static_create,
	.decide = static_decide,
	.destroy = static_destroy,
};
