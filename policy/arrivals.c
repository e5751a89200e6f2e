// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Each tenant's arrival rate as the policy sees it: whoever queues the
 * queries (colocd, coloc-sim) notes every arrival and passes the mean
 * interval in policy_tenant.interval_ns. The overdue check (late.c) weighs
 * with it the arrivals an overdue query's block would delay.
 * docs/design/coloc-policy.md, "An overdue query is given up only when it
 * would make a query on time late".
 */
#include "policy.h"

/* The weight of the newest gap in the mean: 1/16, about the last 16 arrivals. */
#define ARRIVALS_WEIGHT (1.0 / 16)

void policy_arrivals_note(struct policy_arrivals *a, uint64_t now_ns)
{
	if (a->last_ns && now_ns >= a->last_ns) {
		double gap = (double)(now_ns - a->last_ns);

		a->mean_gap_ns = a->mean_gap_ns > 0 ?
					 a->mean_gap_ns + ARRIVALS_WEIGHT * (gap - a->mean_gap_ns) :
					 gap;
	}
	a->last_ns = now_ns;
}

uint64_t policy_arrivals_interval_ns(const struct policy_arrivals *a, uint64_t now_ns)
{
	double since;

	if (a->mean_gap_ns <= 0)
		return 0;
	since = now_ns > a->last_ns ? (double)(now_ns - a->last_ns) : 0;
	/* quiet for longer than the mean: weighed as if an arrival came now */
	if (since > a->mean_gap_ns)
		return (uint64_t)(a->mean_gap_ns + ARRIVALS_WEIGHT * (since - a->mean_gap_ns));
	return (uint64_t)a->mean_gap_ns;
}
