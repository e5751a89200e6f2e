// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The one rule every policy applies to a query that is late (issue 27):
 * on time, it is served in the policy's order; late (past its deadline, or
 * its rest predicted to end past it) it is still served in its turn when
 * its rest fits in the least slack of the queries on time (serving it
 * first makes none of them late), else demoted, served after them. Once
 * its answer would come after its deadline plus its QoS even on the least
 * evidence the policy has, it is overdue: served now if that leaves every
 * queued query on time still on time and every late one not overdue, taken
 * in that order, each one's rest served alone after it; else given up
 * (dropped); given up whatever once its answer would come after its
 * deadline plus POLICY_OVERDUE_QOS QoS. With --late serve every query counts as on time.
 * docs/design/coloc-policy.md, "Late queries are demoted, not dropped",
 * "A late query that delays no one is served in its turn" and "An overdue
 * query is given up only when it would make a query on time late".
 */
#include <math.h>
#include <stdlib.h>
#include "policy_impl.h"

enum policy_lateness policy_lateness(const struct policy_config *cfg, const struct policy_input *in,
				     const struct policy_query *q, double rest_ns, double least_ns)
{
	double now = (double)in->now_ns, deadline = (double)q->deadline_ns;
	double qos = (double)in->tenants[q->tenant].qos_ns;

	if (cfg->late == POLICY_LATE_SERVE)
		return POLICY_ON_TIME;
	if (now + least_ns >= deadline + POLICY_OVERDUE_QOS * qos)
		return POLICY_GIVE_UP;
	if (now + least_ns >= deadline + qos)
		return POLICY_OVERDUE;
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
	room->known = true;
	room->least_ns = room->second_ns = INFINITY;
	room->least_id = 0;
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

/* A queued query: when it must end (bound) and its rest alone on every online core. */
struct queued_rest {
	double bound_ns, rest_ns;
};

static int by_deadline(const void *a, const void *b)
{
	const struct queued_rest *x = a, *y = b;

	return (x->bound_ns > y->bound_ns) - (x->bound_ns < y->bound_ns);
}

/*
 * The least slack of the queued queries served one after another in the
 * order of their bounds, each one's rest alone on every online core (the
 * table, hot): bound less now less the rests of it and of every one before
 * it. A query on time (its rest alone ends by its deadline) is bound by its
 * deadline; a late one by its deadline plus its QoS (it must not become
 * overdue); an overdue one is not counted. More than POLICY_OVERDUE_QUEUE
 * counted: -INFINITY (a queue that long leaves no room).
 */
static double queue_room(const struct policy_config *cfg, const struct policy_input *in)
{
	struct queued_rest queue[POLICY_OVERDUE_QUEUE];
	int nr_online = policy_cpuset_count(&cfg->online), n = 0;
	double now = (double)in->now_ns, done = now, least = INFINITY;

	for (int i = 0; i < in->nr_queries; i++) {
		const struct policy_query *q = &in->queries[i];
		const struct policy_costs *m = in->tenants[q->tenant].costs;
		int ci = m ? policy_costs_core_index(m, nr_online) : -1;
		double rest, bound;

		if (q->in_flight || ci < 0)
			continue;
		rest = (double)policy_costs_alone_ns(m, q->next_layer, m->nr_layers, ci);
		bound = (double)q->deadline_ns;
		/* late, not overdue: it must not become overdue */
		if (now + rest > bound) {
			bound += (double)in->tenants[q->tenant].qos_ns;
			if (now + rest >= bound)
				continue;
		}
		if (n == POLICY_OVERDUE_QUEUE)
			return -INFINITY;
		queue[n++] = (struct queued_rest){ bound, rest };
	}
	qsort(queue, (size_t)n, sizeof(queue[0]), by_deadline);
	for (int i = 0; i < n; i++) {
		done += queue[i].rest_ns;
		least = fmin(least, queue[i].bound_ns - done);
	}
	return least;
}

bool policy_overdue_kept(struct policy_late_room *room, const struct policy_config *cfg,
			 const struct policy_input *in, double turn_ns)
{
	if (!room->queue_known) {
		room->queue_ns = queue_room(cfg, in);
		room->queue_known = true;
	}
	return turn_ns <= room->queue_ns;
}
