// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fcfs: first come, first served, one query at a time. While nothing runs,
 * the earliest-arriving query gets its whole remaining model as one block on
 * all free cores (the largest profiled core count that fits), each layer in
 * the version fastest alone at that count. A query that is late, or would
 * end late even so, waits until no query on time is queued, and is dropped
 * only when even then its answer would come after its deadline plus its
 * QoS (with --late drop, late.c). The simple policy of the
 * tenants-end-to-end issue; the scheduler issue replaces it as the default.
 */
#include "policy_impl.h"

static int fcfs_decide(void *state, const struct policy_config *cfg, const struct policy_input *in,
		       struct policy_output *out, struct coloc_err *err)
{
	struct policy_cpuset free = *in->free;
	struct policy_whole_prices prices;
	int r;

	(void)state;
	if (in->nr_running)
		return 0;
	policy_whole_prices_init(&prices);
	/* one query at a time, of any tenant: after the first served, the rest wait for it */
	r = policy_serve_earliest_whole(cfg, in, -1, NULL, NULL, &prices, &free, out, err);
	return r < 0 ? r : 0;
}

const struct policy_entry policy_fcfs = {
	.name = "fcfs",
	.description = "first come first served, one query at a time, its whole model on all "
		       "free cores",
	.create = policy_stateless_create,
	.decide = fcfs_decide,
	.destroy = policy_stateless_destroy,
};
