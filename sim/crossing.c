// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * QoS-QPS from every load point of a cell, not only the search's last pass:
 * the points of all its searches pooled by load (each tenant's queries and
 * those within QoS added up), the worst tenant's share within QoS fitted
 * non-increasing in log load (pool adjacent violators, each load weighted
 * by the fewest queries a tenant had there), and the load where that fit
 * crosses the fraction, interpolated between the fit's steps. A search
 * decides a cell by its last pass and failure, each a few dozen queries of
 * the least frequent tenant near the edge; this uses every query the cell
 * ran. bench-qos's points.tsv gives the measured points; the searches of
 * coloc-sim give the simulated ones, so both go through this one function.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"

/* One step of the fit: weighted means of log load and share within QoS. */
struct step {
	double x, y, w;
};

static int cmp_qps(const void *a, const void *b)
{
	double x = ((const struct sim_load_point *)a)->qps;
	double y = ((const struct sim_load_point *)b)->qps;

	return (x > y) - (x < y);
}

/* The worst tenant's share within QoS at a pooled load, and its weight; false if none counted. */
static bool worst_share(const struct sim_load_point *p, double *share, double *weight)
{
	bool any = false;

	for (int t = 0; t < p->nr_tenants; t++) {
		double f;

		if (!p->counted[t])
			continue;
		f = (double)p->within[t] / p->counted[t];
		if (!any || f < *share)
			*share = f;
		if (!any || p->counted[t] < *weight)
			*weight = p->counted[t];
		any = true;
	}
	return any;
}

int sim_crossing_qps(const struct sim_load_point *pts, int nr, double fraction, double *qps,
		     struct coloc_err *err)
{
	struct sim_load_point *pool = NULL;
	struct step *fit = NULL;
	int n = 0, steps = 0;

	*qps = 0;
	if (nr <= 0)
		return 0;
	pool = malloc((size_t)nr * sizeof(*pool));
	fit = malloc((size_t)nr * sizeof(*fit));
	if (!pool || !fit) {
		free(pool);
		free(fit);
		return coloc_err_set(err, -ENOMEM, "out of memory for %d load points", nr);
	}
	memcpy(pool, pts, (size_t)nr * sizeof(*pool));
	qsort(pool, (size_t)nr, sizeof(*pool), cmp_qps);
	/* pool equal loads: the same load of several searches */
	for (int i = 0; i < nr; i++) {
		struct sim_load_point *to = n ? &pool[n - 1] : NULL;

		if (to && pool[i].qps == to->qps) {
			for (int t = 0; t < pool[i].nr_tenants && t < POLICY_MAX_TENANTS; t++) {
				to->counted[t] += pool[i].counted[t];
				to->within[t] += pool[i].within[t];
			}
			if (pool[i].nr_tenants > to->nr_tenants)
				to->nr_tenants = pool[i].nr_tenants;
			continue;
		}
		pool[n++] = pool[i];
	}
	/* fit non-increasing: merge a step with the one before while it is higher */
	for (int i = 0; i < n; i++) {
		double y = 0, w = 0;

		if (!(pool[i].qps > 0) || !worst_share(&pool[i], &y, &w))
			continue;
		fit[steps++] = (struct step){ .x = log(pool[i].qps), .y = y, .w = w };
		while (steps > 1 && fit[steps - 2].y < fit[steps - 1].y) {
			struct step *a = &fit[steps - 2], *b = &fit[steps - 1];
			double sw = a->w + b->w;

			a->x = (a->x * a->w + b->x * b->w) / sw;
			a->y = (a->y * a->w + b->y * b->w) / sw;
			a->w = sw;
			steps--;
		}
	}
	if (steps && fit[0].y >= fraction) {
		/* never below: the highest load run (the fit's last step is a mean over its loads) */
		*qps = pool[n - 1].qps;
		for (int i = 0; i + 1 < steps; i++)
			if (fit[i + 1].y < fraction) {
				double x = fit[i].x + (fit[i + 1].x - fit[i].x) *
							      (fit[i].y - fraction) /
							      (fit[i].y - fit[i + 1].y);

				*qps = exp(x);
				break;
			}
	}
	free(pool);
	free(fit);
	return 0;
}
