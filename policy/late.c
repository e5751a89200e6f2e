// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The one rule every policy applies to a query that is late (issue 27):
 * on time, it is served in the policy's order; late (past its deadline, or
 * its rest predicted to end past it) it is still served in its turn when
 * its rest fits in the least slack of the queries on time (serving it
 * first makes none of them late), else demoted, served after them; it is
 * given up (dropped) only when its answer would come after its deadline
 * plus its QoS even on the least evidence the policy has. With --late
 * serve every query counts as on time.
 * docs/design/coloc-policy.md, "Late queries are demoted, not dropped" and
 * "A late query that delays no one is served in its turn".
 */
#include <math.h>
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

static void measure_room(struct policy_late_room *room, const struct policy_config *cfg,
			 const struct policy_input *in)
{
	int nr_online = policy_cpuset_count(&cfg->online);
	double solo_ns[POLICY_MAX_TENANTS];

	for (int t = 0; t < in->nr_tenants; t++)
		solo_ns[t] = -1;
	*room = (struct policy_late_room){ .known = true,
					   .least_ns = INFINITY,
					   .second_ns = INFINITY };
	for (int i = 0; i < in->nr_queries; i++) {
		const struct policy_query *q = &in->queries[i];
		double slack;

		if (solo_ns[q->tenant] < 0)
			solo_ns[q->tenant] = (double)policy_costs_served_solo_ns(
				in->tenants[q->tenant].costs, nr_online);
		slack = (double)q->deadline_ns - (double)in->now_ns - solo_ns[q->tenant];
		if (slack < 0)
			continue;
		if (slack < room->least_ns) {
			room->second_ns = room->least_ns;
			room->least_ns = slack;
			room->least_id = q->id;
		} else if (slack < room->second_ns) {
			room->second_ns = slack;
		}
	}
}

bool policy_late_in_turn(struct policy_late_room *room, const struct policy_config *cfg,
			 const struct policy_input *in, const struct policy_query *q,
			 double turn_ns)
{
	if (!room->known)
		measure_room(room, cfg, in);
	return turn_ns <= (q->id == room->least_id ? room->second_ns : room->least_ns);
}
