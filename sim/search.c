// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The QoS-QPS search, VELTAIR's metric: the highest total load at which at
 * least 95 % of every tenant's queries meet their QoS. The load doubles from
 * a start until a run fails, then the bracket [passing, failing] is halved
 * until it is narrow. Every point is a whole run with the same seed, so
 * the same arrivals compressed in time: the search is deterministic per seed.
 */
#include <errno.h>
#include <math.h>
#include "sim.h"

#define SIM_SEARCH_MAX_QPS 1e7
#define SIM_SEARCH_MIN_QPS 0.01 /* below this a mix is taken as never within QoS */

/*
 * A tenant passes with enough of its queries within QoS, and enough queries
 * to tell: at a load so low that a tenant gets a handful, "all within" says
 * nothing (and 1 miss in 19 is already below 95 %).
 */
static bool passes(const struct sim_result *r, double fraction)
{
	for (int t = 0; t < r->nr_tenants; t++)
		if (r->tenant[t].arrived < SIM_SEARCH_MIN_ARRIVALS ||
		    r->tenant[t].fraction_within < fraction)
			return false;
	return true;
}

/* The lowest load that gives every tenant twice the minimum arrivals, on average. */
static double first_load(const struct sim_params *p, double start_qps)
{
	double counted_s = (double)(p->duration_ns - p->warmup_ns) * 1e-9, total = 0, min = 0;

	for (int t = 0; t < p->nr_tenants; t++) {
		total += p->tenants[t].share;
		min = t ? fmin(min, p->tenants[t].share) : p->tenants[t].share;
	}
	if (!(counted_s > 0) || !(min > 0))
		return start_qps;
	return fmax(start_qps, 2.0 * SIM_SEARCH_MIN_ARRIVALS * total / min / counted_s);
}

int sim_search_qos_qps(const struct sim_params *base, double fraction, double start_qps, double tol,
		       struct sim_search_result *s, struct coloc_err *err)
{
	struct sim_params p = *base;
	struct sim_result *r = &s->at_best;
	struct sim_result tmp;
	double lo = 0, hi = 0, qps, wall = 0;
	int ret;

	*s = (struct sim_search_result){ 0 };
	if (!(start_qps > 0) || !(tol > 0) || !(fraction > 0 && fraction <= 1))
		return coloc_err_set(
			err, -EINVAL,
			"search: want a start load > 0, a tolerance > 0 and a fraction "
			"in (0, 1]");
	qps = first_load(base, start_qps);
	/* find a failing load: double until a run fails */
	for (;;) {
		p.qps = qps;
		ret = sim_run(&p, &tmp, err);
		if (ret)
			return coloc_err_prefix(err, "search at %.1f QPS", qps);
		s->points++;
		wall += tmp.wall_s;
		if (!passes(&tmp, fraction)) {
			hi = qps;
			s->at_fail = tmp;
			s->at_fail_qps = qps;
			break;
		}
		lo = qps;
		*r = tmp;
		if (qps >= SIM_SEARCH_MAX_QPS)
			return coloc_err_set(err, -ERANGE,
					     "search: still within QoS at %.0f QPS; is the QoS "
					     "target far above the models' latency?",
					     qps);
		qps *= 2;
	}
	/* halve [lo, hi] until it is within tol of hi */
	while (hi - lo > tol * hi && hi > SIM_SEARCH_MIN_QPS) {
		qps = (lo + hi) / 2;
		p.qps = qps;
		ret = sim_run(&p, &tmp, err);
		if (ret)
			return coloc_err_prefix(err, "search at %.1f QPS", qps);
		s->points++;
		wall += tmp.wall_s;
		if (passes(&tmp, fraction)) {
			lo = qps;
			*r = tmp;
		} else {
			hi = qps;
			if (lo > 0) {
				s->at_fail = tmp;
				s->at_fail_qps = qps;
			}
		}
	}
	s->qos_qps = lo;
	s->fail_qps = hi;
	s->wall_s = wall;
	return 0;
}
