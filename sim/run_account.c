// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Where a run's core time went (struct sim_account), over the counted
 * window: between events, the idle cores split by what waited meanwhile (a
 * query the policy saw and did not start; queries waiting only behind their
 * tenant's own, for a slot or an executor; nothing); at each block's end, its cores x time split into
 * the least its layers need alone at any count and version (work), what its
 * count and versions took beyond that (the knee), the serving costs, and its
 * time beyond alone (interference, time-sharing: below 0 where a table's
 * level columns are faster than its alone one, a profile's noise).
 * coloc-sim prints it.
 */
#include "run_internal.h"

/*
 * Queries the policy sees that are not in flight (ones it could start), and
 * in *waiting all that are not in flight, in a slot behind another or not.
 */
static int runnable(const struct sim_state *s, int *waiting)
{
	int n = 0;

	*waiting = s->execs.nr_waiting;
	for (int i = 0; i < s->nr_queries; i++) {
		if (s->queries[i].in_flight)
			continue;
		++*waiting;
		n += sim_execs_visible(&s->execs, &s->queries[i]);
	}
	return n;
}

void sim_account_idle(struct sim_state *s, uint64_t now)
{
	struct sim_account *a = &s->r->account;
	uint64_t from = s->accounted_ns > s->p->warmup_ns ? s->accounted_ns : s->p->warmup_ns;
	uint64_t to = now < s->p->duration_ns ? now : s->p->duration_ns;
	int busy = 0, idle, ready, waiting;
	double dt;

	s->accounted_ns = now;
	if (to <= from)
		return;
	dt = (double)(to - from);
	for (int k = 0; k < s->nr_sockets; k++)
		busy += s->sock_busy[k];
	idle = s->p->machine.nr_cores - busy;
	if (idle <= 0)
		return;
	ready = runnable(s, &waiting);
	if (ready) {
		a->idle_runnable_ns += idle * dt;
		a->runnable_ns += ready * dt;
	} else if (waiting) {
		a->idle_lane_ns += idle * dt;
	} else {
		a->idle_empty_ns += idle * dt;
	}
}

/* The block's layers at their least core-ns alone: any one count, each layer's fastest version. */
static double least_core_ns(const struct policy_costs *m, const struct policy_decision *d)
{
	double least = 0;

	for (int ci = 0; ci < m->nr_core_counts; ci++) {
		double sum = 0;

		for (int l = d->first_layer; l < d->last_layer && sum >= 0; l++) {
			uint64_t best = 0;

			for (int v = 0; v < m->nr_versions; v++) {
				uint64_t t = policy_costs_cell(m, l, v, ci, 0);

				if (t && (!best || t < best))
					best = t;
			}
			sum = best ? sum + (double)best : -1;
		}
		if (sum >= 0 && (!least || m->core_counts[ci] * sum < least))
			least = m->core_counts[ci] * sum;
	}
	return least;
}

void sim_account_block(struct sim_state *s, const struct sim_slot *sl)
{
	struct sim_account *a = &s->r->account;
	double k = sl->d.nr_cores, held = k * (double)(s->now - sl->start_ns);
	double least = least_core_ns(s->tenants[sl->d.tenant].costs, &sl->d);
	double table = k * sl->table_ns, alone = k * sl->alone_ns;

	if (least > table)
		least = table;
	a->work_ns += least;
	a->knee_ns += table - least;
	a->cost_ns += alone - table;
	a->contention_ns += held - alone;
}
