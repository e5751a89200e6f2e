// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The one rule every policy applies to a query that is late (issue 27):
 * on time, it is served in the policy's order; late (past its deadline, or
 * its rest predicted to end past it) it is demoted, served after the
 * queries on time; it is given up (dropped) only when its answer would
 * come after its deadline plus its QoS even on the least evidence the
 * policy has. With --late serve every query counts as on time.
 * docs/design/coloc-policy.md, "Late queries are demoted, not dropped".
 */
#include "policy_impl.h"

enum policy_lateness policy_lateness(const struct policy_config *cfg, const struct policy_input *in,
				     const struct policy_query *q, double rest_ns, double least_ns)
{
	double now = (double)in->now_ns, deadline = (double)q->deadline_ns;

	if (cfg->late == POLICY_LATE_SERVE)
		return POLICY_ON_TIME;
	if (now + least_ns >= deadline + (double)in->tenants[q->tenant].qos_ns)
		return POLICY_GIVE_UP;
	if (now >= deadline || now + rest_ns > deadline)
		return POLICY_DEMOTE;
	return POLICY_ON_TIME;
}
