// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The one rule every policy applies to a query that is late (issue 27):
 * on time, it is served in the policy's order; late (past its deadline, or
 * its rest predicted to end past it) it is still served in its turn when
 * its rest fits in the least slack of the queries on time (serving it
 * first makes none of them late), else demoted, served after them. Once
 * its answer would come after its deadline plus its QoS even on the least
 * evidence the policy has, it is overdue: served now if that leaves every
 * queued query on time still on time, every late one not overdue, and
 * room for the arrivals expected while the delay it adds drains (each
 * tenant's measured interval, policy_tenant.interval_ns), taken in the
 * order of their bounds, each one's rest served alone after it; else
 * demoted, and given up (dropped) if it still does not when its turn
 * comes. Given up whatever once its answer would come after its deadline
 * plus POLICY_OVERDUE_QOS / rho^2 QoS (rho the load those arrivals ask:
 * at medium load, a short-QoS query stuck behind another tenant's long
 * block is answered late), or while the arrivals ask for the whole
 * machine or more. With --late serve every query counts as on time.
 * docs/design/coloc-policy.md, "Late queries are demoted, not dropped",
 * "A late query that delays no one is served in its turn" and "An overdue
 * query is given up only when it would make a query on time late" and
 * "At medium load an overdue query is answered".
 */
#include <math.h>
#include <stdlib.h>
#include "policy_impl.h"

/* t's whole model alone on the largest profiled count <= nr_cores (the table, hot); -1: none */
static double solo_on(const struct policy_input *in, int t, int nr_cores)
{
	const struct policy_costs *m = in->tenants[t].costs;
	int ci = m ? policy_costs_core_index(m, nr_cores) : -1;

	return ci < 0 ? -1 : (double)policy_costs_alone_ns(m, 0, m->nr_layers, ci);
}

/*
 * Who waits for an overdue query q's block of nr_cores: q's own tenant
 * always (its next queries come after q), and when the cores the block
 * leaves are fewer than another tenant's smallest block, every tenant,
 * their work priced alone on every online core; else q's tenant alone,
 * priced on the block's cores (the others run on the rest).
 */
struct block_scope {
	const struct policy_query *q;
	bool all;
	int cores;
};

static struct block_scope block_scope(const struct policy_config *cfg,
				      const struct policy_input *in, const struct policy_query *q,
				      int nr_cores)
{
	int nr_online = policy_cpuset_count(&cfg->online);
	struct block_scope sc = { .q = q, .cores = nr_cores };

	for (int t = 0; t < in->nr_tenants; t++) {
		const struct policy_costs *m = in->tenants[t].costs;

		if (t != q->tenant && m && nr_online - nr_cores < m->core_counts[0]) {
			sc.all = true;
			sc.cores = nr_online;
		}
	}
	return sc;
}

static bool waits(const struct block_scope *sc, int t)
{
	return sc->all || t == sc->q->tenant;
}

/*
 * The share of cores the arrivals of the tenants in sc ask for (every
 * tenant when sc is NULL, on every online core): each one's whole model
 * alone on those cores over its measured interval between arrivals
 * (tenants with none measured count nothing).
 */
static double arrival_load(const struct policy_config *cfg, const struct policy_input *in,
			   const struct block_scope *sc)
{
	int cores = sc ? sc->cores : policy_cpuset_count(&cfg->online);
	double load = 0;

	for (int t = 0; t < in->nr_tenants; t++) {
		double solo = solo_on(in, t, cores);

		if (solo > 0 && in->tenants[t].interval_ns && (!sc || waits(sc, t)))
			load += solo / (double)in->tenants[t].interval_ns;
	}
	return load;
}

double policy_overdue_cutoff_qos(double rho)
{
	return rho > 0 && rho < 1 ? POLICY_OVERDUE_QOS / (rho * rho) : POLICY_OVERDUE_QOS;
}

enum policy_lateness policy_lateness(const struct policy_config *cfg, const struct policy_input *in,
				     const struct policy_query *q, double rest_ns, double least_ns)
{
	double now = (double)in->now_ns, deadline = (double)q->deadline_ns;
	double qos = (double)in->tenants[q->tenant].qos_ns;

	if (cfg->late == POLICY_LATE_SERVE)
		return POLICY_ON_TIME;
	/* overdue: weighed only while the machine keeps up with the arrivals */
	if (now + least_ns >= deadline + qos) {
		double rho = arrival_load(cfg, in, NULL);

		if (rho >= 1 || now + least_ns >= deadline + policy_overdue_cutoff_qos(rho) * qos)
			return POLICY_GIVE_UP;
		return POLICY_OVERDUE;
	}
	if (now >= deadline || now + rest_ns > deadline)
		return POLICY_DEMOTE;
	return POLICY_ON_TIME;
}

bool policy_late_gone(const struct policy_config *cfg, const struct policy_input *in,
		      const struct policy_query *q, bool can_start)
{
	enum policy_lateness late = policy_lateness(cfg, in, q, 0, 0);

	return late == POLICY_GIVE_UP || (late == POLICY_OVERDUE && !can_start);
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

/* Work that must end by bound_ns: a queued query's rest, or a tenant's expected arrivals. */
struct queued_rest {
	double bound_ns, rest_ns;
};

static int by_bound(const void *a, const void *b)
{
	const struct queued_rest *x = a, *y = b;

	return (x->bound_ns > y->bound_ns) - (x->bound_ns < y->bound_ns);
}

/*
 * What the block delays, of the tenants in sc: the queued queries (a
 * query on time bound by its deadline, a late one by its deadline plus its
 * QoS, an overdue one and sc's q not counted), each one's rest alone on
 * sc's cores, and each tenant's arrivals expected within horizon_ns
 * (horizon over its interval, times its whole model alone on those cores),
 * bound by their mean deadline (one arriving half way). How many in queue,
 * or -1 when more than POLICY_OVERDUE_QUEUE queries would count.
 */
static int gather(const struct policy_input *in, const struct block_scope *sc, double horizon_ns,
		  struct queued_rest *queue)
{
	double now = (double)in->now_ns;
	int n = 0;

	for (int i = 0; i < in->nr_queries; i++) {
		const struct policy_query *q = &in->queries[i];
		const struct policy_costs *m = in->tenants[q->tenant].costs;
		int ci = m ? policy_costs_core_index(m, sc->cores) : -1;
		double rest, bound;

		if (q->in_flight || ci < 0 || q->id == sc->q->id || !waits(sc, q->tenant))
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
			return -1;
		queue[n++] = (struct queued_rest){ bound, rest };
	}
	for (int t = 0; t < in->nr_tenants; t++) {
		double solo = solo_on(in, t, sc->cores);

		if (solo > 0 && in->tenants[t].interval_ns && waits(sc, t))
			queue[n++] = (struct queued_rest){
				now + (double)in->tenants[t].qos_ns + horizon_ns / 2,
				horizon_ns / (double)in->tenants[t].interval_ns * solo,
			};
	}
	return n;
}

bool policy_overdue_kept(const struct policy_config *cfg, const struct policy_input *in,
			 const struct policy_query *q, double turn_ns, int nr_cores)
{
	struct queued_rest queue[POLICY_OVERDUE_QUEUE + POLICY_MAX_TENANTS];
	struct block_scope sc = block_scope(cfg, in, q, nr_cores);
	double load = arrival_load(cfg, in, &sc);
	double done = (double)in->now_ns + turn_ns;
	int n;

	/* the delay the block adds drains at the spare rate of the cores it holds up */
	if (load >= 1)
		return false;
	n = gather(in, &sc, turn_ns / (1 - load), queue);
	if (n < 0)
		return false;
	qsort(queue, (size_t)n, sizeof(queue[0]), by_bound);
	for (int i = 0; i < n; i++) {
		done += queue[i].rest_ns;
		if (done > queue[i].bound_ns)
			return false;
	}
	return true;
}
