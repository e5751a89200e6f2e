// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The queue and the socket together in coloc-sim --capacity's bound: a
 * tenant's queries on one fixed stream of Poisson arrivals, scheduled with
 * hindsight (every arrival known in advance), each query within QoS taking
 * a time of its choosing and costing the least socket time a query of that
 * time can, the rest given up at no cost; the tenant's lanes relaxed to one
 * server as fast as all of them together. Every deadline is its arrival +
 * QoS, so serving in arrival order is optimal and the only state between
 * two queries is the server's backlog: a dynamic programme over it, rounded
 * so that it only ever underestimates the cost, the share within QoS priced
 * by a Lagrange multiplier (every price gives a lower bound; the best of
 * those tried is kept). docs/design/capacity-bound.md, "Queue and socket
 * together", proves that no schedule of the simulator costs less.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"

#define STATES SIM_HINDSIGHT_STATES
#define PRICE_STEPS 8 /* bisections of the price, after it was raised enough */

/* A schedule so far: its sum of cost - price over the queries it kept, and how many */
struct path {
	double sum;
	long kept;
};

static const struct path no_path = { .sum = INFINITY };

/*
 * What keeping a query costs on the stream: for query n after a gap that
 * leaves backlog r = s x width - gap from state s, kept into state c = s +
 * d, at[n][d + STATES - 1]; from an idle server, into c, idle[c]. A query
 * kept into c takes up to lanes x (c's upper edge - r) ms, at most the QoS,
 * and leaves c's lower edge behind (so a state never holds more backlog
 * than a real schedule would, nor a query less time); INFINITY below the
 * fastest.
 */
struct kernel {
	double width, ms_a_gap;
	double idle[STATES];
	double (*at)[2 * STATES - 1];
};

/* The least socket ms of a query that takes x ms: the grid point at or above x (cost falls with x) */
static double cost_at(const struct sim_hindsight *h, double x)
{
	double i = ceil(x / h->qos_ms * SIM_HINDSIGHT_GRID - 1e-9);

	if (x < h->fast_ms * (1 - 1e-12))
		return INFINITY;
	return h->cost[(int)fmin(fmax(i, 0), SIM_HINDSIGHT_GRID)];
}

static double kept_cost(const struct sim_hindsight *h, double width, double upper, double r)
{
	return cost_at(h, fmin(h->qos_ms, h->lanes * (upper * width - r)));
}

static int kernel_build(const double *gap, double qps, const struct sim_hindsight *h,
			struct kernel *k)
{
	k->width = h->qos_ms / STATES;
	k->ms_a_gap = 1e3 / qps;
	k->at = malloc(SIM_HINDSIGHT_QUERIES * sizeof(*k->at));
	if (!k->at)
		return -1;
	for (int c = 0; c < STATES; c++)
		k->idle[c] = kept_cost(h, k->width, c + 1, 0);
	for (long n = 0; n < SIM_HINDSIGHT_QUERIES; n++)
		for (int d = 1 - STATES; d < STATES; d++)
			k->at[n][d + STATES - 1] =
				kept_cost(h, k->width, d + 1, -gap[n] * k->ms_a_gap);
	return 0;
}

static void keep_cheaper(struct path *to, struct path from)
{
	if (from.sum < to->sum)
		*to = from;
}

/* The next query from a path: given up, the backlog's state as it is, or kept into each state */
static void next_query(const double *cost, struct path from, int drop_to, double price,
		       struct path *next)
{
	keep_cheaper(&next[drop_to], from);
	for (int c = 0; c < STATES; c++)
		if (isfinite(cost[c]))
			keep_cheaper(&next[c], (struct path){ .sum = from.sum + cost[c] - price,
							      .kept = from.kept + 1 });
}

/* The least sum of cost - price over the stream at price, and how many that path kept */
static struct path cheapest(const double *gap, const struct kernel *k, double price)
{
	struct path now[STATES], next[STATES], best = no_path;

	for (int s = 0; s < STATES; s++)
		now[s] = no_path;
	now[0] = (struct path){ 0 };
	for (long n = 0; n < SIM_HINDSIGHT_QUERIES; n++) {
		double g = gap[n] * k->ms_a_gap;
		struct path idle = no_path;

		for (int s = 0; s < STATES; s++)
			next[s] = no_path;
		for (int s = 0; s < STATES; s++) {
			if (!isfinite(now[s].sum))
				continue;
			if (s * k->width <= g)
				keep_cheaper(&idle, now[s]);
			else
				next_query(&k->at[n][STATES - 1 - s], now[s],
					   (int)((s * k->width - g) / k->width), price, next);
		}
		if (isfinite(idle.sum))
			next_query(k->idle, idle, 0, price, next);
		memcpy(now, next, sizeof(now));
	}
	for (int s = 0; s < STATES; s++)
		keep_cheaper(&best, now[s]);
	return best;
}

double sim_hindsight_cost(const double *gap, double qps, const struct sim_hindsight *h)
{
	double need = h->fraction * SIM_HINDSIGHT_QUERIES, lo = 0, most = INFINITY, hi, cap;
	struct kernel k;
	struct path p;

	hi = cost_at(h, h->fast_ms);
	if (!isfinite(hi) || !(h->qos_ms >= h->fast_ms) || kernel_build(gap, qps, h, &k))
		return INFINITY;
	/* past cap every path that keeps one more query is cheaper: the most kept */
	cap = 2 * hi * SIM_HINDSIGHT_QUERIES;
	for (p = cheapest(gap, &k, hi); p.kept < need && hi <= cap; p = cheapest(gap, &k, hi)) {
		lo = hi;
		hi *= 4;
	}
	if (p.kept >= need) {
		most = (p.sum + hi * need) / SIM_HINDSIGHT_QUERIES;
		for (int i = 0; i < PRICE_STEPS; i++) {
			double mid = (lo + hi) / 2;

			p = cheapest(gap, &k, mid);
			most = fmax(most, (p.sum + mid * need) / SIM_HINDSIGHT_QUERIES);
			if (p.kept < need)
				lo = mid;
			else
				hi = mid;
		}
	}
	free(k.at);
	return most;
}
