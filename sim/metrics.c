// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Metrics of a run: a growing list of latencies per tenant and
 * nearest-rank percentiles over it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "sim.h"

int sim_latencies_add(struct sim_latencies *l, uint64_t ns, struct coloc_err *err)
{
	if (l->nr == l->cap) {
		int cap = l->cap ? l->cap * 2 : 1024;
		uint64_t *v = realloc(l->ns, (size_t)cap * sizeof(*v));

		if (!v)
			return coloc_err_set(err, -ENOMEM,
					     "simulator: out of memory for %d latencies", cap);
		l->ns = v;
		l->cap = cap;
	}
	l->ns[l->nr++] = ns;
	return 0;
}

void sim_latencies_free(struct sim_latencies *l)
{
	free(l->ns);
	*l = (struct sim_latencies){ 0 };
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The nearest rank: the smallest value with at least p% of the values at or below it. */
static int rank(int nr, double p)
{
	int k = (int)ceil(p / 100.0 * nr) - 1;

	return k < 0 ? 0 : k >= nr ? nr - 1 : k;
}

uint64_t sim_percentile_u64(uint64_t *v, int nr, double p)
{
	if (nr <= 0)
		return 0;
	qsort(v, (size_t)nr, sizeof(*v), cmp_u64);
	return v[rank(nr, p)];
}

double sim_percentile_double(double *v, int nr, double p)
{
	if (nr <= 0)
		return 0;
	qsort(v, (size_t)nr, sizeof(*v), cmp_double);
	return v[rank(nr, p)];
}

double sim_median_double(double *v, int nr)
{
	if (nr <= 0)
		return 0;
	qsort(v, (size_t)nr, sizeof(*v), cmp_double);
	return nr % 2 ? v[nr / 2] : (v[nr / 2 - 1] + v[nr / 2]) / 2;
}

void sim_tenant_result_finish(struct sim_tenant_result *tr, struct sim_latencies *l)
{
	tr->p50_ms = (double)sim_percentile_u64(l->ns, l->nr, 50) * 1e-6;
	tr->p95_ms = (double)sim_percentile_u64(l->ns, l->nr, 95) * 1e-6;
	tr->p99_ms = (double)sim_percentile_u64(l->ns, l->nr, 99) * 1e-6;
	tr->fraction_within = tr->arrived ? (double)tr->within / (double)tr->arrived : 1.0;
}
