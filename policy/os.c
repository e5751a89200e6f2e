// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * os: what operators do today without coloc, the scheduler issue's first
 * baseline. Every tenant is an unmodified oneDNN service on all the cores:
 * it serves its own queries first come first served, one at a time on each
 * of its executors (colocd starts one), each query's whole remaining model on
 * every core, and the kernel's scheduler shares the CPUs between tenants.
 * So the entry shares cores: every tenant with nothing in flight gets a
 * decision at once, on the same cores as the others (the largest profiled
 * core count not above the free cores, the lowest-numbered of them; the
 * caller passes every core as free and does not pin exclusively), each
 * layer in its fastest version alone at that count. Late queries as in
 * fcfs, within each tenant: a query already late, or whose alone latency
 * ends past its deadline, waits until its tenant has no query on time
 * queued, and is dropped only past its deadline plus its QoS (late.c).
 */
#include "policy_impl.h"

static int os_decide(void *state, const struct policy_config *cfg, const struct policy_input *in,
		     struct policy_output *out, struct coloc_err *err)
{
	struct policy_whole_prices prices;

	(void)state;
	policy_whole_prices_init(&prices);
	for (int t = 0; t < in->nr_tenants; t++) {
		int r;

		if (!in->tenants[t].costs)
			continue;
		/* every tenant sees all the cores: a fresh copy each, not what others took */
		r = policy_serve_tenant_whole(cfg, in, t, in->free, true, &prices, out, err);
		if (r < 0)
			return r;
		if (r == POLICY_OUT_FULL)
			return 0;
	}
	return 0;
}

const struct policy_entry policy_os = {
	.name = "os",
	.description = "every tenant FCFS on all cores at once, the kernel shares them (no "
		       "coloc)",
	.shares_cores = true,
	.create = policy_stateless_create,
	.decide = os_decide,
	.destroy = policy_stateless_destroy,
};
