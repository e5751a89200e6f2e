// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ceiling with the socket (coloc-sim --capacity): an upper bound on
 * what any schedule serves under the simulator's interference model, which
 * slows every block by the share of its socket the others keep busy.
 * Capacity is the socket's time: a layer run on k cores while B are busy
 * takes t and uses k t / B of it. Each layer's (time, cost) options over
 * counts and occupancies form a convex front; a tenant's cheapest mix of
 * them for a mean time is the fronts' segments taken cheapest first (a
 * linear programme's optimum); the rate is bisected until the tenants'
 * costs fill the socket, a query that waited in its tenant's queue for
 * its lanes (capacity_queue.c) given only what QoS leaves it, and then
 * each tenant's queries scheduled with hindsight, a query's time against
 * the waits it makes (capacity_hindsight.c).
 * docs/design/capacity-bound.md derives it and says what it relaxes.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"

/* A layer's option, or a front's step: time (ms) and socket time (ms) */
struct option {
	double ms, cost;
};

/* A tenant's cheapest cost for a mean time: every layer at its cheapest, then the steps */
struct front {
	double slow_ms, cheap_cost, fast_ms;
	struct option *step; /* time saved and cost added, cheapest per ms first */
	int nr_steps;
};

static int by_time(const void *a, const void *b)
{
	const struct option *x = a, *y = b;

	if (x->ms != y->ms)
		return x->ms < y->ms ? -1 : 1;
	return (x->cost > y->cost) - (x->cost < y->cost);
}

static int by_rate(const void *a, const void *b)
{
	const struct option *x = a, *y = b;
	double rx = x->cost / x->ms, ry = y->cost / y->ms;

	return (rx > ry) - (rx < ry);
}

/*
 * The least time of layer l on count index ci at level or above: any
 * version, and any column past the level (a table's cells need not grow
 * with it, and the LLC domain's part only adds to the level).
 */
static double least_ms(const struct policy_costs *m, int l, int ci, double level)
{
	double best = INFINITY;

	for (int v = 0; v < m->nr_versions; v++) {
		if (!policy_costs_cell(m, l, v, ci, 0))
			continue;
		best = fmin(best, sim_interference_layer_ns(m, l, v, ci, level));
		for (int c = 0; m->level_slowdown && c < m->nr_levels; c++)
			if (m->level_slowdown[c] > level)
				best = fmin(best, sim_interference_layer_ns(m, l, v, ci,
									    m->level_slowdown[c]));
	}
	return best * 1e-6;
}

/*
 * Layer l's options, each count at each occupancy, reduced in place to the
 * lower convex hull of its fast-to-cheap front; returns how many are left.
 */
static int layer_front(const struct policy_costs *m, int l, int cores, double slowdown,
		       struct option *o)
{
	int n = 0, kept = 0, hull = 0;

	for (int ci = 0; ci < m->nr_core_counts && m->core_counts[ci] <= cores; ci++) {
		int k = m->core_counts[ci];

		for (int busy = k; busy <= cores; busy++) {
			double level = 1 + (slowdown - 1) * (busy - k) / fmax(cores - k, 1);
			double ms = least_ms(m, l, ci, level);

			o[n++] = (struct option){ .ms = ms, .cost = k * ms / busy };
		}
	}
	qsort(o, (size_t)n, sizeof(*o), by_time);
	/* the front: slower only where cheaper */
	for (int i = 0; i < n; i++)
		if (isfinite(o[i].ms) && (!kept || o[i].cost < o[kept - 1].cost))
			o[kept++] = o[i];
	for (int i = 0; i < kept; i++) {
		while (hull >= 2) {
			struct option a = o[hull - 2], b = o[hull - 1];

			if ((b.ms - a.ms) * (o[i].cost - a.cost) - (b.cost - a.cost) * (o[i].ms - a.ms) >
			    0)
				break;
			hull--;
		}
		o[hull++] = o[i];
	}
	return hull;
}

static int front_build(const struct policy_costs *m, int cores, double slowdown,
		       struct front *f)
{
	int per_layer = 0, nc = 0;
	struct option *o;

	while (nc < m->nr_core_counts && m->core_counts[nc] <= cores)
		per_layer += cores - m->core_counts[nc++] + 1;
	*f = (struct front){ 0 };
	o = calloc((size_t)per_layer, sizeof(*o));
	if (!o)
		return -ENOMEM;
	for (int l = 0; l < m->nr_layers; l++) {
		int h = layer_front(m, l, cores, slowdown, o);
		struct option *grown;

		if (!h) {
			f->fast_ms = INFINITY;
			break;
		}
		grown = realloc(f->step, (size_t)(f->nr_steps + h) * sizeof(*grown));
		if (!grown) {
			free(o);
			return -ENOMEM;
		}
		f->step = grown;
		f->fast_ms += o[0].ms;
		f->slow_ms += o[h - 1].ms;
		f->cheap_cost += o[h - 1].cost;
		for (int i = h - 1; i > 0; i--)
			f->step[f->nr_steps++] = (struct option){
				.ms = o[i].ms - o[i - 1].ms,
				.cost = o[i - 1].cost - o[i].cost,
			};
	}
	free(o);
	qsort(f->step, (size_t)f->nr_steps, sizeof(*f->step), by_rate);
	return 0;
}

/* The least socket time a query whose mean time is at most ms costs (INFINITY: none). */
static double front_cost(const struct front *f, double ms)
{
	double over = f->slow_ms - ms, cost = f->cheap_cost;

	if (!(ms >= f->fast_ms * (1 - 1e-12)))
		return INFINITY;
	for (int i = 0; i < f->nr_steps && over > 0; i++) {
		double part = fmin(1, over / f->step[i].ms);

		cost += part * f->step[i].cost;
		over -= f->step[i].ms;
	}
	return cost;
}

/*
 * A query's least socket time at rate qps: `fraction` of the queries
 * within qos_ms on average, all of them within room_ms (its lanes' time a
 * query). The cost is convex in the mean time, so the best split gives
 * both classes one time when room is the tighter, else the QoS class its
 * limit and the rest what room leaves.
 */
static double tenant_cost(const struct front *f, double qos_ms, double room_ms, double fraction,
			  double *ms)
{
	double rest;

	if (room_ms <= qos_ms || fraction >= 1) {
		*ms = fmin(fmin(room_ms, qos_ms), f->slow_ms);
		return front_cost(f, fmin(room_ms, qos_ms));
	}
	rest = (room_ms - fraction * qos_ms) / (1 - fraction);
	*ms = fraction * fmin(qos_ms, f->slow_ms) + (1 - fraction) * fmin(rest, f->slow_ms);
	return fraction * front_cost(f, qos_ms) + (1 - fraction) * front_cost(f, rest);
}

/*
 * A query's least socket time at rate q given its wait: the queue at the
 * fastest time waits least (sim_queue_waits()); the `fraction` of queries
 * that waited least each end within QoS, so take at most QoS less their
 * wait (a bin's least), the rest at the cheapest.
 */
static double queue_cost(const struct front *f, const double *gap, double q, double qos_ms,
			 int lanes, double fraction)
{
	double wait_ms = qos_ms - f->fast_ms, need = fraction, cost = 0;
	struct sim_queue_waits w;

	if (sim_queue_waits(gap, q, f->fast_ms, qos_ms, lanes, &w) || w.within < fraction)
		return INFINITY;
	for (int i = 0; i < SIM_QUEUE_BINS && need > 0; i++) {
		double part = fmin(w.share[i], need);

		cost += part * front_cost(f, qos_ms - wait_ms * i / SIM_QUEUE_BINS);
		need -= part;
	}
	return cost + (1 - fraction) * f->cheap_cost;
}

/* A tenant's hindsight problem: its front on sim_hindsight_cost()'s grid */
static void hindsight_build(const struct front *f, double qos_ms, int lanes, double fraction,
			    struct sim_hindsight *h)
{
	*h = (struct sim_hindsight){
		.qos_ms = qos_ms, .fast_ms = f->fast_ms, .fraction = fraction, .lanes = lanes
	};
	for (int i = 0; i <= SIM_HINDSIGHT_GRID; i++)
		h->cost[i] = front_cost(f, qos_ms * i / SIM_HINDSIGHT_GRID);
}

/* Tenant i's hindsight cost at rate q, taken from an earlier tenant of the same problem */
static double hindsight_of(const struct sim_capacity_tenant *t, const struct sim_hindsight *h,
			   int i, const double *gap, double q, const struct sim_capacity_bound *b)
{
	for (int j = 0; j < i; j++)
		if (t[j].share == t[i].share && h[j].qos_ms == h[i].qos_ms &&
		    h[j].fast_ms == h[i].fast_ms && h[j].lanes == h[i].lanes &&
		    h[j].fraction == h[i].fraction && !memcmp(h[j].cost, h[i].cost, sizeof(h->cost)))
			return b->hindsight_ms[j];
	return sim_hindsight_cost(gap, q, &h[i]);
}

/*
 * The socket's share the tenants need at total rate qps (> 1: more than it
 * has); with gap (sim_queue_stream()) their queues counted too, and with h
 * their queues with hindsight.
 */
static double load(const struct sim_capacity_tenant *t, const struct front *f, int nr, int lanes,
		   double qps, double total_share, double fraction, const double *gap,
		   const struct sim_hindsight *h, struct sim_capacity_bound *b)
{
	double sum = 0;

	for (int i = 0; i < nr; i++) {
		double q = qps * t[i].share / total_share;

		b->socket_ms[i] =
			tenant_cost(&f[i], t[i].qos_ms, 1e3 * lanes / q, fraction, &b->ms[i]);
		if (gap)
			b->socket_ms[i] =
				fmax(b->socket_ms[i],
				     queue_cost(&f[i], gap, q, t[i].qos_ms, lanes, fraction));
		if (h) {
			b->hindsight_ms[i] = hindsight_of(t, h, i, gap, q, b);
			b->socket_ms[i] = fmax(b->socket_ms[i], b->hindsight_ms[i]);
		}
		sum += q * b->socket_ms[i] * 1e-3;
	}
	return sum;
}

/* The highest total rate up to hi whose load fits the socket (0: none), within tol x hi. */
static double most_qps(const struct sim_capacity_tenant *t, const struct front *f, int nr,
		       int lanes, double hi, double total_share, double fraction, const double *gap,
		       const struct sim_hindsight *h, double tol, struct sim_capacity_bound *b)
{
	double lo = 0;

	if (!(load(t, f, nr, lanes, hi * 1e-9, total_share, fraction, gap, h, b) <= 1))
		return 0;
	for (int it = 0; it < 200 && hi - lo > tol * hi; it++) {
		double mid = (lo + hi) / 2;

		if (load(t, f, nr, lanes, mid, total_share, fraction, gap, h, b) <= 1)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int sim_capacity_bound(const struct sim_capacity_tenant *t, int nr, int cores, int lanes,
		       double socket_slowdown, double fraction, struct sim_capacity_bound *b,
		       struct coloc_err *err)
{
	struct front f[POLICY_MAX_TENANTS] = { 0 };
	double total_share = 0, cheap = 0, *gap = NULL;
	struct sim_hindsight *h = NULL;
	int ret = 0;

	*b = (struct sim_capacity_bound){ 0 };
	if (nr < 1 || nr > POLICY_MAX_TENANTS || cores < 1 || lanes < 1 ||
	    !(fraction > 0 && fraction <= 1))
		return coloc_err_set(err, -EINVAL,
				     "capacity bound: %d tenants, %d cores, %d lanes, fraction %g",
				     nr, cores, lanes, fraction);
	for (int i = 0; i < nr; i++)
		if (!t[i].costs || !(t[i].share > 0) || !(t[i].qos_ms > 0))
			return coloc_err_set(err, -EINVAL,
					     "capacity bound: tenant %d needs a table, a share and a QoS",
					     i);
	for (int i = 0; i < nr && !ret; i++) {
		ret = front_build(t[i].costs, cores, fmax(socket_slowdown, 1), &f[i]);
		total_share += t[i].share;
		b->fastest_ms[i] = f[i].fast_ms;
	}
	if (ret) {
		coloc_err_set(err, ret, "capacity bound: out of memory");
		goto out;
	}
	for (int i = 0; i < nr; i++)
		cheap += t[i].share / total_share * f[i].cheap_cost;
	b->socket_qps =
		most_qps(t, f, nr, lanes, 1e3 / cheap, total_share, fraction, NULL, NULL, 1e-9, b);
	gap = sim_queue_stream();
	h = calloc((size_t)nr, sizeof(*h));
	if (!gap || !h) {
		ret = coloc_err_set(err, -ENOMEM, "capacity bound: out of memory");
		goto out;
	}
	b->queue_qps =
		most_qps(t, f, nr, lanes, b->socket_qps, total_share, fraction, gap, NULL, 1e-9, b);
	for (int i = 0; i < nr; i++)
		hindsight_build(&f[i], t[i].qos_ms, lanes, fraction, &h[i]);
	/* each evaluation runs the hindsight programmes: a coarser bisection, from below */
	if (b->queue_qps > 0)
		b->qps = most_qps(t, f, nr, lanes, b->queue_qps, total_share, fraction, gap, h,
				  1e-3, b);
	if (b->qps > 0)
		load(t, f, nr, lanes, b->qps, total_share, fraction, gap, h, b);
out:
	free(h);
	free(gap);
	for (int i = 0; i < nr; i++)
		free(f[i].step);
	return ret;
}
