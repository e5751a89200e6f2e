// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Every load point bench-qos ran, per cell (its points.tsv: one row per
 * tenant and point), kept as sim_load_points so that a measured cell's
 * QoS-QPS can be taken by sim_crossing_qps, as a simulated one's is: over
 * all its searches pooled, and per search for the range.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "fidelity.h"

const struct sim_cell_loads *sim_loads_find(const struct sim_loads_table *t, const char *mix,
					    const char *policy)
{
	for (int i = 0; i < t->nr; i++)
		if (!strcmp(t->cell[i].mix, mix) && !strcmp(t->cell[i].policy, policy))
			return &t->cell[i];
	return NULL;
}

void sim_loads_free(struct sim_loads_table *t)
{
	for (int i = 0; i < t->nr; i++)
		free(t->cell[i].load);
	free(t->cell);
	*t = (struct sim_loads_table){ 0 };
}

/* Grows an array of n elements of size sz to hold one more; 0 or -ENOMEM. */
static int grow(void **v, int *cap, int n, size_t sz)
{
	void *p;
	int c;

	if (n < *cap)
		return 0;
	c = *cap ? 2 * *cap : 16;
	p = realloc(*v, (size_t)c * sz);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

static struct sim_cell_loads *cell_of(struct sim_loads_table *t, const char *mix,
				      const char *policy)
{
	struct sim_cell_loads *c = (struct sim_cell_loads *)sim_loads_find(t, mix, policy);

	if (c)
		return c;
	if (strlen(mix) >= sizeof(c->mix) || strlen(policy) >= sizeof(c->policy) ||
	    grow((void **)&t->cell, &t->cap, t->nr, sizeof(*t->cell)))
		return NULL;
	c = &t->cell[t->nr++];
	*c = (struct sim_cell_loads){ 0 };
	snprintf(c->mix, sizeof(c->mix), "%s", mix);
	snprintf(c->policy, sizeof(c->policy), "%s", policy);
	return c;
}

/* The point (search, qps) of c, made if new; NULL when out of memory. */
static struct sim_load_point *point_of(struct sim_cell_loads *c, int search, double qps)
{
	struct sim_load_point *l;

	for (int i = c->nr - 1; i >= 0; i--)
		if (c->load[i].search == search && c->load[i].qps == qps)
			return &c->load[i];
	if (grow((void **)&c->load, &c->cap, c->nr, sizeof(*c->load)))
		return NULL;
	l = &c->load[c->nr++];
	memset(l, 0, sizeof(*l));
	l->search = search;
	l->qps = qps;
	return l;
}

static bool number(const char *s, double *v)
{
	return !cli_parse_double(s, 0, DBL_MAX, v);
}

static int loads_row(void *ctx, char **f, int n, const int *col, const char *path, int lineno,
		     struct coloc_err *err)
{
	double qps, sent, within, search;
	struct sim_cell_loads *c;
	struct sim_load_point *l;
	int t;

	for (int k = 0; k < 7; k++)
		if (n <= col[k])
			return coloc_err_set(err, -EINVAL, "%s:%d: fewer columns than the header",
					     path, lineno);
	/* a run before bench-qos --repeats has no search column: one search */
	search = 1;
	if (!number(f[col[2]], &qps) || !number(f[col[4]], &sent) || sent != floor(sent) ||
	    sent > UINT32_MAX || !number(f[col[5]], &within) || within > 1 ||
	    (col[6] >= 0 && !number(f[col[6]], &search)) || search < 1 || search != floor(search) ||
	    search > 99)
		return coloc_err_set(err, -EINVAL,
				     "%s:%d: want total_qps >= 0, a whole number sent, within_qos "
				     "in [0, 1] and a search from 1 to 99",
				     path, lineno);
	c = cell_of(ctx, f[col[0]], f[col[1]]);
	l = c ? point_of(c, (int)search, qps) : NULL;
	if (!l)
		return coloc_err_set(err, -ENOMEM, "%s:%d: out of memory, or a name too long", path,
				     lineno);
	for (t = 0; t < c->nr_tenants && strcmp(c->tenant[t], f[col[3]]); t++)
		;
	if (t == c->nr_tenants) {
		if (t == POLICY_MAX_TENANTS || strlen(f[col[3]]) >= sizeof(c->tenant[0]))
			return coloc_err_set(err, -EINVAL,
					     "%s:%d: over %d tenants in a cell, or a name too long",
					     path, lineno, POLICY_MAX_TENANTS);
		snprintf(c->tenant[c->nr_tenants++], sizeof(c->tenant[0]), "%s", f[col[3]]);
	}
	if (t >= l->nr_tenants)
		l->nr_tenants = t + 1;
	l->counted[t] += (uint32_t)sent;
	l->within[t] += (uint32_t)llround(within * sent);
	if ((int)search > c->searches)
		c->searches = (int)search;
	return 0;
}

int sim_loads_load_tsv(const char *path, struct sim_loads_table *t, struct coloc_err *err)
{
	static const char *const want[] = { "mix",  "policy",	  "total_qps", "tenant",
					    "sent", "within_qos", "?search" };
	int ret;

	*t = (struct sim_loads_table){ 0 };
	ret = sim_tsv_load(path, want, 7, loads_row, t, err);
	if (ret)
		sim_loads_free(t);
	return ret;
}

int sim_loads_crossing(const struct sim_loads_table *t, const struct sim_qps_table *only,
		       double fraction, struct sim_qps_table *out, struct coloc_err *err)
{
	int ret = 0;

	*out = (struct sim_qps_table){ 0 };
	for (int i = 0; i < t->nr && !ret; i++) {
		const struct sim_cell_loads *c = &t->cell[i];
		double all = 0, lo = INFINITY, hi = 0;
		struct sim_load_point *one;

		if (only && !sim_qps_table_find(only, c->mix, c->policy))
			continue;
		one = malloc((size_t)(c->nr ? c->nr : 1) * sizeof(*one));
		if (!one) {
			ret = coloc_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		ret = sim_crossing_qps(c->load, c->nr, fraction, &all, err);
		/* each search alone, for the range */
		for (int s = 1; s <= c->searches && !ret; s++) {
			double q = 0;
			int n = 0;

			for (int k = 0; k < c->nr; k++)
				if (c->load[k].search == s)
					one[n++] = c->load[k];
			if (!n)
				continue;
			ret = sim_crossing_qps(one, n, fraction, &q, err);
			lo = fmin(lo, q);
			hi = fmax(hi, q);
		}
		free(one);
		if (!ret)
			ret = sim_qps_table_add(out, c->mix, c->policy, all, 0, err);
		if (!ret && hi > 0) {
			out->cell[out->nr - 1].qps_lo = lo;
			out->cell[out->nr - 1].qps_hi = hi;
		}
	}
	if (ret)
		sim_qps_table_free(out);
	return ret;
}
