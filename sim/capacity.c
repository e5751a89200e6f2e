// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ceiling the tables allow (coloc-sim --capacity): the most total QPS
 * with every tenant's queries side by side on as few cores as keep them
 * within QoS, against temporal's one query at a time on the machine at its
 * fastest. Both read a whole model alone at one core count, each layer in
 * its fastest version there as temporal picks it
 * (policy_costs_alone_ns());
 * no interference, no waiting. A tenant runs one block per executor at a
 * time, so its queries' time at the counts it uses, times its rate, is at
 * most its executors: without that bound the ceiling assumes parallel
 * queries a tenant cannot run (docs/measurements/simulator.md, 2026-12-05).
 * A tenant may split its queries between two counts (the cheapest mix
 * that fits its executors is a linear programme whose optimum uses two).
 */
#include <errno.h>
#include <math.h>
#include "sim.h"

double sim_capacity_model_ms(const struct policy_costs *m, int ci)
{
	uint64_t ns = policy_costs_alone_ns(m, 0, m->nr_layers, ci);

	return ns ? (double)ns * 1e-6 : INFINITY;
}

/*
 * Tenant t's cheapest use of cores at rate qps (queries/s): the fraction
 * frac of its queries at count index ci[0], the rest at ci[1], with
 * qps x the mean time <= executors and each time within QoS. Returns the
 * core-seconds a second it needs; INFINITY when nothing fits.
 */
static double cheapest(const struct sim_capacity_tenant *t, int nc, const double *ms,
		       double qps, int executors, struct sim_capacity_pick *pick)
{
	const struct policy_costs *m = t->costs;
	double room_ms = qps > 0 ? 1e3 * executors / qps : INFINITY, best = INFINITY;

	for (int i = 0; i < nc; i++)
		for (int j = i; j < nc; j++) {
			double ti = ms[i], tj = ms[j], ci = m->core_counts[i] * ti,
			       cj = m->core_counts[j] * tj, f;

			if (ti > t->qos_ms || tj > t->qos_ms || fmin(ti, tj) > room_ms)
				continue;
			/* as much at the cheaper count as the executors' room allows */
			if (ci <= cj)
				f = ti <= room_ms ? 1 : (room_ms - tj) / (ti - tj);
			else
				f = tj <= room_ms ? 0 : (room_ms - tj) / (ti - tj);
			if (f * ci + (1 - f) * cj < best) {
				best = f * ci + (1 - f) * cj;
				*pick = (struct sim_capacity_pick){
					.k = { m->core_counts[i], m->core_counts[j] },
					.ms = { ti, tj },
					.frac = f,
				};
			}
		}
	return best * qps * 1e-3;
}

/* The tenants' core-seconds a second at total rate qps (INFINITY when one cannot keep up). */
static double demand(const struct sim_capacity_tenant *t, int nr, int cores, int executors,
		     double qps, double total_share, struct sim_capacity *c)
{
	double sum = 0;

	for (int i = 0; i < nr; i++) {
		int nc = 0;
		double ms[POLICY_MAX_CORE_COUNTS];

		while (nc < t[i].costs->nr_core_counts && t[i].costs->core_counts[nc] <= cores) {
			ms[nc] = sim_capacity_model_ms(t[i].costs, nc);
			nc++;
		}
		sum += cheapest(&t[i], nc, ms, qps * t[i].share / total_share, executors,
				&c->pick[i]);
	}
	return sum;
}

int sim_capacity(const struct sim_capacity_tenant *t, int nr, int cores, int executors,
		 struct sim_capacity *c, struct coloc_err *err)
{
	double total_share = 0, fast_sum = 0, lo, hi;

	*c = (struct sim_capacity){ .nr = nr };
	if (nr < 1 || nr > POLICY_MAX_TENANTS || cores < 1 || executors < 1)
		return coloc_err_set(err, -EINVAL,
				     "capacity: %d tenants, %d cores, %d executors a tenant", nr,
				     cores, executors);
	for (int i = 0; i < nr; i++) {
		const struct policy_costs *m = t[i].costs;

		if (!(t[i].share > 0) || !(t[i].qos_ms > 0) || m->nr_core_counts < 1 ||
		    m->nr_core_counts > POLICY_MAX_CORE_COUNTS)
			return coloc_err_set(err, -EINVAL, "capacity: tenant %d needs a share, a "
						     "QoS and a table", i);
		c->fast_ms[i] = INFINITY;
		for (int ci = 0; ci < m->nr_core_counts && m->core_counts[ci] <= cores; ci++) {
			double ms = sim_capacity_model_ms(m, ci);

			if (ms < c->fast_ms[i]) {
				c->fast_ms[i] = ms;
				c->fast_k[i] = m->core_counts[ci];
			}
		}
		if (!c->fast_k[i])
			return coloc_err_set(err, -EINVAL,
					     "capacity: tenant %d has no core count within %d cores",
					     i, cores);
		total_share += t[i].share;
	}
	for (int i = 0; i < nr; i++)
		fast_sum += t[i].share / total_share * c->fast_ms[i];
	c->temporal_qps = 1e3 / fast_sum;
	/* unbounded executors: the demand is linear in the rate */
	c->unbounded_qps = cores / demand(t, nr, cores, 1 << 30, 1.0, total_share, c);
	if (!isfinite(c->unbounded_qps) || c->unbounded_qps <= 0) {
		c->unbounded_qps = c->ceiling_qps = 0;
		demand(t, nr, cores, executors, 0, total_share, c);
		return 0;
	}
	/* with the executors: feasibility only shrinks as the rate grows */
	lo = 0;
	hi = c->unbounded_qps;
	for (int it = 0; it < 100 && hi - lo > 1e-9 * hi; it++) {
		double mid = (lo + hi) / 2;

		if (demand(t, nr, cores, executors, mid, total_share, c) <= cores)
			lo = mid;
		else
			hi = mid;
	}
	c->ceiling_qps = lo;
	demand(t, nr, cores, executors, lo, total_share, c);
	return 0;
}
