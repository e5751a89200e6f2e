// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * bench-qos's confirmation walk (tools/bench-qos-confirm.awk) on a
 * simulated search's points: the same rule, read from the same counts, so
 * that coloc-sim --search-like walks where the script would.
 * docs/design/bench-qos-ci.md, "The confirmation walk".
 */
#include <math.h>
#include "sim.h"

/* The first point's load within 0.1 % of t among pts[0, nr) (each point's key), or -1. */
static int find(const struct sim_load_point *pts, int nr, double t)
{
	for (int i = 0; i < nr; i++)
		if (t > pts[i].qps * 0.999 && t < pts[i].qps * 1.001)
			return i;
	return -1;
}

/* The key of point i: the first earlier load within 0.1 %, else its own. */
static double key(const struct sim_load_point *pts, int i)
{
	return pts[find(pts, i + 1, pts[i].qps)].qps;
}

/*
 * The verdict of load l on every point at it (phase: 1 the walk's, 0 the
 * search's, -1 both): each tenant >= 95 % of its queries within QoS.
 */
static bool judge(const struct sim_load_point *pts, int nr, double l, int phase)
{
	uint64_t sent[POLICY_MAX_TENANTS] = { 0 }, within[POLICY_MAX_TENANTS] = { 0 };
	int nt = 0;

	for (int i = 0; i < nr; i++) {
		if (key(pts, i) != l || (phase >= 0 && pts[i].confirm != phase))
			continue;
		nt = pts[i].nr_tenants;
		for (int g = 0; g < nt; g++) {
			sent[g] += pts[i].counted[g];
			within[g] += pts[i].within[g];
		}
	}
	for (int g = 0; g < nt; g++)
		if (!sent[g] || 20 * (sent[g] - within[g]) > sent[g])
			return false;
	return true;
}

/* Whether load t is one the walk ran. */
static bool confirmed(const struct sim_load_point *pts, int nr, double t)
{
	int k = find(pts, nr, t);

	for (int i = 0; k >= 0 && i < nr; i++)
		if (pts[i].confirm && key(pts, i) == pts[k].qps)
			return true;
	return false;
}

/* The walk's verdict: its highest confirmed pass, else the highest pass below its loads. */
static double walk_done(const struct sim_load_point *pts, int nr)
{
	double best = -1, low = INFINITY;

	for (int i = 0; i < nr; i++)
		if (pts[i].confirm) {
			double l = key(pts, i);

			low = fmin(low, l);
			if (judge(pts, nr, l, -1))
				best = fmax(best, l);
		}
	if (best >= 0)
		return best;
	best = 0;
	for (int i = 0; i < nr; i++)
		if (key(pts, i) < low && key(pts, i) > best && judge(pts, nr, key(pts, i), -1))
			best = key(pts, i);
	return best;
}

bool sim_confirm_next(const struct sim_load_point *pts, int nr, int walk, double *t)
{
	double lo = 0, hi = -1, last = 0, next;
	int nconf = 0;

	for (int i = 0; i < nr; i++) {
		double l = key(pts, i);

		if (pts[i].confirm) {
			nconf += !confirmed(pts, i, l);
			last = l;
		} else if (judge(pts, nr, l, 0)) {
			lo = fmax(lo, l);
		} else if (hi < 0 || l < hi) {
			hi = l;
		}
	}
	if (lo == 0 || hi < 0) {
		*t = lo;
		return false;
	}
	if (!nconf) {
		*t = lo;
		return true;
	}
	next = judge(pts, nr, last, -1) ? last * hi / lo : last * lo / hi;
	if (nconf >= walk || confirmed(pts, nr, next)) {
		*t = walk_done(pts, nr);
		return false;
	}
	*t = find(pts, nr, next) >= 0 ? pts[find(pts, nr, next)].qps : round(next * 1000) / 1000;
	return true;
}
