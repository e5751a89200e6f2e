/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the policy library: the entries of the policy table and the pieces
 * the simple policies share (finding the earliest queued query, serving a
 * query's whole remaining model on a set of cores).
 */
#ifndef COLOC_POLICY_IMPL_H
#define COLOC_POLICY_IMPL_H

#include "policy.h"

extern const struct policy_entry policy_fcfs;
extern const struct policy_entry policy_static;
extern const struct policy_entry policy_temporal;

/* Creates a policy without state (its decide is a function of cfg and input). */
int policy_stateless_create(const struct policy_config *cfg, void **state, struct coloc_err *err);
void policy_stateless_destroy(void *state);

/*
 * The queued (not in flight) query of tenant (-1: any) that comes first by
 * (arrival, id) after `after` (NULL: from the start); NULL when none.
 */
const struct policy_query *policy_earliest_queued(const struct policy_input *in, int tenant,
						  const struct policy_query *after);

/* True when some query of tenant has a block in flight. */
bool policy_tenant_in_flight(const struct policy_input *in, int tenant);

enum policy_served {
	POLICY_SERVED, /* a decision was appended, its cores taken from free */
	POLICY_DROPPED, /* a drop was appended */
	POLICY_WAIT, /* too few free cores for the model's smallest core count */
	POLICY_OUT_FULL, /* an output array is full */
};

/*
 * Serves q's whole remaining model as one block on the largest profiled
 * core count <= nr_cores that fits in free (the lowest-numbered cores of
 * free), each layer in its fastest version alone at that count; or drops q
 * per cfg->late when its deadline has passed or its alone latency there
 * ends past it. Returns an enum policy_served, or -EINVAL with err filled
 * when a layer has no version measured at that core count.
 */
int policy_serve_whole_model(const struct policy_config *cfg, const struct policy_input *in,
			     const struct policy_query *q, int nr_cores, struct policy_cpuset *free,
			     struct policy_output *out, struct coloc_err *err);

#endif /* COLOC_POLICY_IMPL_H */
