// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * temporal: PREMA-like time multiplexing, the scheduler issue's baseline.
 * The whole machine serves one query at a time: it waits until every online
 * core is free, then gives the earliest-arriving query its whole remaining
 * model on all of them. It differs from fcfs only when cores are missing
 * from the free set for another reason (an executor being restarted, cores
 * the operator withholds): fcfs then runs on what is free, temporal waits.
 */
#include "policy_impl.h"

static int temporal_decide(void *state, const struct policy_config *cfg,
			   const struct policy_input *in, struct policy_output *out,
			   struct coloc_err *err)
{
	struct policy_cpuset free = *in->free;
	const struct policy_query *q = NULL;

	(void)state;
	if (in->nr_running || !policy_cpuset_subset(&cfg->online, in->free))
		return 0;
	while ((q = policy_earliest_queued(in, -1, q))) {
		int r = policy_serve_whole_model(cfg, in, q, &free, out, err);

		if (r < 0)
			return r;
		if (r != POLICY_DROPPED)
			break;
	}
	return 0;
}

const struct policy_entry policy_temporal = {
	.name = "temporal",
	.description = "one query at a time on the whole machine, first come first served "
		       "(PREMA-like)",
	.create = policy_stateless_create,
	.decide = temporal_decide,
	.destroy = policy_stateless_destroy,
};
