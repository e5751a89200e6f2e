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

/* Keeps a run's load and counts for sim_crossing_qps, while there is room. */
static void keep_load(struct sim_search_result *s, double qps, const struct sim_result *r)
{
	struct sim_load_point *l = &s->load[s->nr_loads];

	if (s->nr_loads == SIM_SEARCH_MAX_LOADS)
		return;
	s->nr_loads++;
	l->qps = qps;
	l->search = 1;
	l->nr_tenants = r->nr_tenants;
	for (int t = 0; t < r->nr_tenants; t++) {
		l->counted[t] = (uint32_t)r->tenant[t].arrived;
		l->within[t] = (uint32_t)r->tenant[t].within;
	}
}

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
		keep_load(s, qps, &tmp);
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
		keep_load(s, qps, &tmp);
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

const struct sim_bq_search sim_bq_quick = {
	.medium_share = 0.3,
	.grow = 2,
	.bisect = 1,
	.min_queries = 15,
	.min_s = 3,
	.max_s = 5,
	.warmup_s = 1,
	.confirm = 2,
	.walk = 3,
};

const struct sim_bq_search sim_bq_full = {
	.medium_share = 0.3,
	.grow = 1.5,
	.bisect = 2,
	.min_queries = 40,
	.min_s = 8,
	.max_s = 20,
	.warmup_s = 2,
	.confirm = 2,
	.walk = 3,
};

/* As the script prints a load: %.3f. */
static double round3(double x)
{
	return round(x * 1000) / 1000;
}

struct bq_state {
	struct sim_params p;
	const struct sim_bq_search *bq;
	struct sim_search_result *s;
	double min_share, fraction;
	double best; /* the highest load that passed so far */
};

/* A run at load t as long as the script's point there (a walk's: confirm x as long). */
static int bq_run(struct bq_state *b, double t, int confirm, struct sim_result *r,
		  struct coloc_err *err)
{
	double d = ceil(b->bq->min_queries / (b->min_share * t));

	d = fmin(fmax(d, b->bq->min_s), b->bq->max_s) * (confirm ? confirm : 1);
	b->p.qps = t;
	b->p.warmup_ns = (uint64_t)llround(b->bq->warmup_s * 1e9);
	b->p.duration_ns = b->p.warmup_ns + (uint64_t)llround(d * 1e9);
	if (sim_run(&b->p, r, err))
		return coloc_err_prefix(err, "search at %.3f QPS", t);
	return 0;
}

/* One point at load t (confirm > 0: the walk's); *pass as the script decides it. */
static int bq_point(struct bq_state *b, double t, int confirm, bool *pass, struct coloc_err *err)
{
	struct sim_result r;
	int ret = bq_run(b, t, confirm, &r, err);

	if (ret)
		return ret;
	b->s->points++;
	keep_load(b->s, t, &r);
	if (b->s->nr_loads)
		b->s->load[b->s->nr_loads - 1].confirm = confirm > 0;
	b->s->wall_s += r.wall_s;
	*pass = true;
	for (int i = 0; i < r.nr_tenants; i++)
		if (r.tenant[i].fraction_within < b->fraction)
			*pass = false;
	if (*pass && t > b->best) {
		b->best = t;
		b->s->at_best = r;
	} else if (!*pass) {
		b->s->at_fail = r;
		b->s->at_fail_qps = t;
	}
	return 0;
}

/*
 * The confirmation walk after the bisection (bq->confirm > 0), on the
 * points kept (all of them: a search makes far fewer than it keeps).
 */
static int bq_walk(struct bq_state *b, struct coloc_err *err)
{
	struct sim_search_result *s = b->s;
	double t;
	bool pass;
	int ret;

	if (!b->bq->confirm)
		return 0;
	while (sim_confirm_next(s->load, s->nr_loads, b->bq->walk, &t)) {
		if (s->nr_loads == SIM_SEARCH_MAX_LOADS)
			return coloc_err_set(err, -E2BIG, "search: more than %d points",
					     SIM_SEARCH_MAX_LOADS);
		ret = bq_point(b, t, b->bq->confirm, &pass, err);
		if (ret)
			return ret;
	}
	s->qos_qps = t;
	if (!(t > 0) || t == b->best)
		return 0;
	/* the run at the walk's verdict, for at_best; not a point of the search */
	return bq_run(b, t, b->bq->confirm, &s->at_best, err);
}

int sim_search_bench_qos(const struct sim_params *base, const struct sim_bq_search *bq,
			 const double *solo_ms, double fraction, struct sim_search_result *s,
			 struct coloc_err *err)
{
	struct bq_state b = { .p = *base, .bq = bq, .s = s, .fraction = fraction };
	double total = 0, busy = 0, sat, t, lo = 0, hi = 0;
	bool pass;
	int ret;

	*s = (struct sim_search_result){ 0 };
	for (int i = 0; i < base->nr_tenants; i++)
		total += base->tenants[i].share;
	for (int i = 0; i < base->nr_tenants; i++) {
		double w = base->tenants[i].share / total;

		if (!(solo_ms[i] > 0))
			return coloc_err_set(err, -EINVAL, "search: tenant %d has no solo latency",
					     i);
		busy += w * solo_ms[i] * 1e-3;
		b.min_share = i ? fmin(b.min_share, w) : w;
	}
	sat = round(1e4 / busy) / 1e4;
	t = round3(sat * bq->medium_share);
	ret = bq_point(&b, t, 0, &pass, err);
	if (ret)
		return ret;
	if (pass) {
		lo = t;
		for (;;) {
			t = round3(t * bq->grow);
			if (t > 4 * sat)
				break;
			ret = bq_point(&b, t, 0, &pass, err);
			if (ret)
				return ret;
			if (!pass) {
				hi = t;
				break;
			}
			lo = t;
		}
	} else {
		hi = t;
		for (;;) {
			t = round3(t / bq->grow);
			if (t < sat / 50)
				break;
			ret = bq_point(&b, t, 0, &pass, err);
			if (ret)
				return ret;
			if (pass) {
				lo = t;
				break;
			}
			hi = t;
		}
	}
	for (int i = 0; lo && hi && i < bq->bisect; i++) {
		t = round3(sqrt(lo * hi));
		ret = bq_point(&b, t, 0, &pass, err);
		if (ret)
			return ret;
		if (pass)
			lo = t;
		else
			hi = t;
	}
	s->qos_qps = lo;
	s->fail_qps = hi;
	return bq_walk(&b, err);
}
