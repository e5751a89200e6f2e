// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * temporal: PREMA-like time multiplexing, the scheduler issue's baseline.
 * The whole machine serves one query at a time: it waits until every online
 * core is free, then gives the earliest-arriving query its whole remaining
 * model at the profiled core count that runs it fastest alone on this
 * machine (tables such as VELTAIR's are slower on 64 cores than on 56, so
 * "all cores" would make the baseline a strawman). fcfs differs: it takes
 * every free core, and runs on what is free when cores are withheld (an
 * executor being restarted), where temporal waits.
 *
 * Late queries as in fcfs: one waits until no query on time is queued
 * (late.c). The best count of a whole model is worked out once per tenant
 * (every count, every layer and version) and kept, keyed by the tenant's
 * uid, in the policy's state.
 */
#include <errno.h>
#include <stdlib.h>
#include "policy_impl.h"

struct temporal_state {
	int nr_online;
	bool cached[POLICY_MAX_TENANTS];
	uint64_t uid[POLICY_MAX_TENANTS]; /* the tenant whose best count is cached */
	int best_cores[POLICY_MAX_TENANTS];
};

static int temporal_create(const struct policy_config *cfg, void **state, struct coloc_err *err)
{
	struct temporal_state *st = calloc(1, sizeof(*st));

	if (!st)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	st->nr_online = policy_cpuset_count(&cfg->online);
	*state = st;
	return 0;
}

static void temporal_destroy(void *state)
{
	free(state);
}

/* The core count, at most nr_online, that runs layers [first, end) fastest alone; ties to fewer. */
static int fastest_count(const struct policy_costs *m, int first, int nr_online)
{
	int last = policy_costs_core_index(m, nr_online), best = last;
	uint64_t best_ns = 0;

	for (int ci = 0; ci <= last; ci++) {
		uint64_t ns = policy_costs_alone_ns(m, first, m->nr_layers, ci);

		if (ns && (!best_ns || ns < best_ns)) {
			best = ci;
			best_ns = ns;
		}
	}
	return best < 0 ? 0 : m->core_counts[best];
}

/* q's core count: the count fastest for its rest, its tenant's kept for a fresh query */
static int temporal_cores(void *state, const struct policy_input *in, const struct policy_query *q)
{
	struct temporal_state *st = state;
	const struct policy_costs *m = in->tenants[q->tenant].costs;
	uint64_t uid = in->tenants[q->tenant].uid;

	if (q->next_layer)
		return fastest_count(m, q->next_layer, st->nr_online);
	if (!st->cached[q->tenant] || st->uid[q->tenant] != uid) {
		st->cached[q->tenant] = true;
		st->uid[q->tenant] = uid;
		st->best_cores[q->tenant] = fastest_count(m, 0, st->nr_online);
	}
	return st->best_cores[q->tenant];
}

static int temporal_decide(void *state, const struct policy_config *cfg,
			   const struct policy_input *in, struct policy_output *out,
			   struct coloc_err *err)
{
	struct policy_cpuset free = *in->free;
	struct policy_whole_prices prices;
	int r;

	if (in->nr_running || !policy_cpuset_subset(&cfg->online, in->free))
		return 0;
	policy_whole_prices_init(&prices);
	/* one query at a time: the earliest on time, else the earliest late (late.c) */
	r = policy_serve_earliest_whole(cfg, in, -1, temporal_cores, state, &prices, &free, out,
					err);
	return r < 0 ? r : 0;
}

const struct policy_entry policy_temporal = {
	.name = "temporal",
	.description = "one query at a time on the whole machine, at the core count fastest for "
		       "its model, first come first served (PREMA-like)",
	.create = temporal_create,
	.decide = temporal_decide,
	.destroy = temporal_destroy,
};
