// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Our profiles on many cores: this machine profiles 1 and 2 cores, VELTAIR
 * published 8..64 for two models. How a layer's time falls with its cores
 * is taken from VELTAIR's tables, by how long the layer is: each of their
 * layers fitted as t(k) = a + b / k + c k (least squares on relative error,
 * a, b, c >= 0), the layers grouped by T1 = a + b + c (their time on one
 * core) in classes of 4x, each class's curve relative to one core from the
 * medians of a / T1 and c / T1. Our layer's 1-core cell, divided by one time
 * ratio (our ResNet-50 on one core over theirs), is its time on one of
 * VELTAIR's cores: that picks its class, and times the class's curve gives
 * its time on k of them. Fitted on ResNet-50, checked on GoogLeNet. What
 * it rests on and its errors: sim/README.md.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"

#define SCALE_CORE_STEP 8
#define SCALE_MAX_CORES 64
/* the lowest class edge, µs on one of VELTAIR's cores; each next class 4x as long */
#define SCALE_FIRST_EDGE 64.0

struct layer_fit {
	double work_us; /* T1 = a + b + c */
	double serial, per_core; /* a / T1 and c / T1 */
};

static void swap(double *a, double *b)
{
	double t = *a;

	*a = *b;
	*b = t;
}

/* Solves the n x n system m x = v (n <= 3) by Gaussian elimination; false when singular. */
static bool solve(double m[3][3], double v[3], int n, double x[3])
{
	for (int i = 0; i < n; i++) {
		int p = i;

		for (int r = i + 1; r < n; r++)
			if (fabs(m[r][i]) > fabs(m[p][i]))
				p = r;
		if (fabs(m[p][i]) < 1e-15)
			return false;
		for (int c = 0; c < n; c++)
			swap(&m[i][c], &m[p][c]);
		swap(&v[i], &v[p]);
		for (int r = 0; r < n; r++) {
			double f;

			if (r == i)
				continue;
			f = m[r][i] / m[i][i];
			for (int c = 0; c < n; c++)
				m[r][c] -= f * m[i][c];
			v[r] -= f * v[i];
		}
	}
	for (int i = 0; i < n; i++)
		x[i] = v[i] / m[i][i];
	return true;
}

static double basis(int j, int k)
{
	return j == 0 ? 1.0 : j == 1 ? 1.0 / k : (double)k;
}

/*
 * a + b / k + c k through one layer's cells, minimizing the squared relative
 * error, with a, b, c >= 0: every subset of the three terms solved, the best
 * one with no negative term kept.
 */
static void fit_layer(const struct policy_table *t, int l, double abc[3])
{
	const struct policy_costs *m = &t->costs;
	double best = INFINITY;

	abc[0] = abc[2] = 0;
	abc[1] = (double)policy_costs_cell(m, l, 0, 0, 0) * m->core_counts[0];
	for (int mask = 1; mask < 8; mask++) {
		double a[3][3] = { { 0 } }, v[3] = { 0 }, x[3], full[3] = { 0 }, sse = 0;
		int idx[3], n = 0;

		for (int j = 0; j < 3; j++)
			if (mask >> j & 1)
				idx[n++] = j;
		for (int ci = 0; ci < m->nr_core_counts; ci++) {
			double y = (double)policy_costs_cell(m, l, 0, ci, 0);
			int k = m->core_counts[ci];

			for (int i = 0; i < n; i++) {
				for (int j = 0; j < n; j++)
					a[i][j] += basis(idx[i], k) * basis(idx[j], k) / (y * y);
				v[i] += basis(idx[i], k) / y;
			}
		}
		if (!solve(a, v, n, x))
			continue;
		for (int i = 0; i < n; i++)
			full[idx[i]] = x[i];
		if (full[0] < 0 || full[1] < 0 || full[2] < 0)
			continue;
		for (int ci = 0; ci < m->nr_core_counts; ci++) {
			int k = m->core_counts[ci];
			double y = (double)policy_costs_cell(m, l, 0, ci, 0);
			double e = (full[0] + full[1] / k + full[2] * k) / y - 1;

			sse += e * e;
		}
		if (sse < best) {
			best = sse;
			memcpy(abc, full, sizeof(full));
		}
	}
}

static int class_of(double work_us)
{
	double edge = SCALE_FIRST_EDGE;

	for (int c = 0; c < SIM_SCALE_CLASSES - 1; c++, edge *= 4)
		if (work_us < edge)
			return c;
	return SIM_SCALE_CLASSES - 1;
}

/*
 * The class curves from the layers of f[0..nr) whose model (model[i]) is in
 * use (a bit mask); -ENOMEM or 0.
 */
static int fit_classes(const struct layer_fit *f, const int *model, int nr, int use,
		       struct sim_scale_class *cls)
{
	double *s = calloc((size_t)nr + 1, sizeof(*s)), *o = calloc((size_t)nr + 1, sizeof(*o));
	double edge = SCALE_FIRST_EDGE;

	if (!s || !o) {
		free(s);
		free(o);
		return -ENOMEM;
	}
	for (int c = 0; c < SIM_SCALE_CLASSES; c++, edge *= 4) {
		int n = 0;

		for (int i = 0; i < nr; i++) {
			if (!(use >> model[i] & 1) || class_of(f[i].work_us) != c)
				continue;
			s[n] = f[i].serial;
			o[n++] = f[i].per_core;
		}
		cls[c] = (struct sim_scale_class){
			.max_work_us = c == SIM_SCALE_CLASSES - 1 ? INFINITY : edge,
			.nr_layers = n,
			.serial = sim_median_double(s, n),
			.per_core = sim_median_double(o, n),
		};
	}
	/* an empty class: its nearest neighbour's curve (the larger one on a tie) */
	for (int c = 0; c < SIM_SCALE_CLASSES; c++) {
		if (cls[c].nr_layers)
			continue;
		for (int d = 1; d < SIM_SCALE_CLASSES; d++) {
			int from = c + d < SIM_SCALE_CLASSES && cls[c + d].nr_layers ? c + d :
				   c - d >= 0 && cls[c - d].nr_layers		     ? c - d :
										       -1;

			if (from >= 0) {
				cls[c].serial = cls[from].serial;
				cls[c].per_core = cls[from].per_core;
				break;
			}
		}
	}
	free(s);
	free(o);
	return 0;
}

static double curve(const struct sim_scale_class *cls, double work_us, int k)
{
	const struct sim_scale_class *c = &cls[class_of(work_us)];

	return c->serial + (1 - c->serial - c->per_core) / k + c->per_core * k;
}

double sim_scaling_curve(const struct sim_scaling *s, double work_us, int k)
{
	return curve(s->cls, work_us, k);
}

/* Our layer's 1-core time in µs of one of VELTAIR's cores. */
static double our_work_us(double time_ratio, uint64_t one_core_ns)
{
	return (double)one_core_ns / 1e3 / time_ratio;
}

/*
 * Mean |predicted / cell - 1| over VELTAIR's layers fits[] (those of table
 * tab) past the first column, each anchored at it.
 */
static void anchored_error(const struct policy_table *tab, const struct layer_fit *fits,
			   const struct sim_scale_class *cls, double *sum, int *n)
{
	const struct policy_costs *m = &tab->costs;

	for (int l = 0; l < m->nr_layers; l++) {
		double t0 = (double)policy_costs_cell(m, l, 0, 0, 0);
		double g0 = curve(cls, fits[l].work_us, m->core_counts[0]);

		for (int ci = 1; ci < m->nr_core_counts; ci++) {
			int k = m->core_counts[ci];

			*sum += fabs(t0 * curve(cls, fits[l].work_us, k) / g0 /
					     (double)policy_costs_cell(m, l, 0, ci, 0) -
				     1);
			(*n)++;
		}
	}
}

/* The index of ours' 1-core column, or -1. */
static int one_core_column(const struct policy_table *ours)
{
	return ours->costs.nr_core_counts && ours->core_counts[0] == 1 ? 0 : -1;
}

/* Our whole model (version 0, alone) scaled to k of VELTAIR's cores by the curves cls, ns. */
static double scaled_sum(const struct policy_table *ours, const struct sim_scale_class *cls,
			 double time_ratio, int k)
{
	double sum = 0;

	for (int l = 0; l < ours->costs.nr_layers; l++) {
		uint64_t t1 = policy_costs_cell(&ours->costs, l, 0, 0, 0);

		sum += (double)t1 * curve(cls, our_work_us(time_ratio, t1), k) / time_ratio;
	}
	return sum;
}

/* VELTAIR's whole model on core_counts[ci] (one version: its cells summed), ns. */
static double theirs_ns(const struct policy_table *theirs, int ci)
{
	return (double)policy_costs_alone_ns(&theirs->costs, 0, theirs->costs.nr_layers, ci);
}

/* Our 2-core cells (version 0, alone) over g(2) x our 1-core cells, into r[*n]. */
static void two_core_ratios(const struct policy_table *ours, const struct sim_scaling *s, double *r,
			    int *n)
{
	const struct policy_costs *m = &ours->costs;

	if (m->nr_core_counts < 2 || ours->core_counts[1] != 2)
		return;
	for (int l = 0; l < m->nr_layers; l++) {
		uint64_t t1 = policy_costs_cell(m, l, 0, 0, 0);

		r[(*n)++] = (double)policy_costs_cell(m, l, 0, 1, 0) /
			    ((double)t1 * curve(s->cls, our_work_us(s->time_ratio, t1), 2));
	}
}

int sim_scaling_fit(const struct sim_table_dirs *dirs, struct sim_scaling *s, struct coloc_err *err)
{
	static const char *const names[2] = { "resnet50", "googlenet" };
	struct policy_table theirs[2], ours[2];
	int ret = 0;

	memset(s, 0, sizeof(*s));
	memset(theirs, 0, sizeof(theirs));
	memset(ours, 0, sizeof(ours));
	for (int i = 0; i < 2 && !ret; i++) {
		ret = sim_table_load_veltair(dirs->veltair, names[i], &theirs[i], err);
		if (!ret)
			ret = sim_table_load(names[i], dirs, &ours[i], err);
	}
	if (!ret)
		ret = sim_scaling_fit_tables(theirs, ours, s, err);
	if (ret)
		coloc_err_prefix(err, "scaled tables (fitted on VELTAIR's and our ResNet-50 and "
				      "GoogLeNet)");
	for (int i = 0; i < 2; i++) {
		policy_table_free(&theirs[i]);
		policy_table_free(&ours[i]);
	}
	return ret;
}

int sim_scaling_fit_tables(const struct policy_table theirs[2], const struct policy_table ours[2],
			   struct sim_scaling *s, struct coloc_err *err)
{
	struct layer_fit *fits = NULL;
	int *model = NULL, nr = 0, ret = 0, n_err = 0, n2 = 0;
	double sum_err = 0, *ratios = NULL, ours_t1 = 0, theirs_t1 = 0;

	memset(s, 0, sizeof(*s));
	for (int i = 0; i < 2; i++) {
		if (one_core_column(&ours[i]) < 0)
			return coloc_err_set(err, -EINVAL, "our %s has no 1-core column",
					     ours[i].name);
		if (theirs[i].costs.nr_layers < 1 || theirs[i].costs.nr_core_counts < 2)
			return coloc_err_set(err, -EINVAL,
					     "%s: want layers timed at two core counts or more",
					     theirs[i].name);
	}
	fits = calloc((size_t)(theirs[0].costs.nr_layers + theirs[1].costs.nr_layers),
		      sizeof(*fits));
	model = calloc((size_t)(theirs[0].costs.nr_layers + theirs[1].costs.nr_layers),
		       sizeof(*model));
	ratios = calloc((size_t)(ours[0].costs.nr_layers + ours[1].costs.nr_layers) + 1,
			sizeof(*ratios));
	if (!fits || !model || !ratios) {
		ret = coloc_err_set(err, -ENOMEM, "scaled tables: out of memory");
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		for (int l = 0; l < theirs[i].costs.nr_layers; l++) {
			double abc[3], t1;

			fit_layer(&theirs[i], l, abc);
			t1 = abc[0] + abc[1] + abc[2];
			fits[nr] = (struct layer_fit){ .work_us = t1 / 1e3,
						       .serial = t1 > 0 ? abc[0] / t1 : 0,
						       .per_core = t1 > 0 ? abc[2] / t1 : 0 };
			model[nr++] = i;
			if (!i)
				theirs_t1 += t1;
		}
	}
	/* the time ratio: our ResNet-50 on one core (version 0, alone) over theirs (the fits' T1) */
	for (int l = 0; l < ours[0].costs.nr_layers; l++)
		ours_t1 += (double)policy_costs_cell(&ours[0].costs, l, 0, 0, 0);
	s->time_ratio = ours_t1 / theirs_t1;
	/* cross: each model's layers, and our same model, by the curves of the other's alone */
	for (int i = 0; i < 2; i++) {
		struct sim_scale_class other[SIM_SCALE_CLASSES];

		if (fit_classes(fits, model, nr, 1 << (1 - i), other)) {
			ret = coloc_err_set(err, -ENOMEM, "scaled tables: out of memory");
			goto out;
		}
		anchored_error(&theirs[i], fits + (i ? theirs[0].costs.nr_layers : 0), other,
			       &sum_err, &n_err);
		for (int ci = 0; ci < theirs[i].costs.nr_core_counts; ci++)
			s->model_err_cross[i][ci] = scaled_sum(&ours[i], other, s->time_ratio,
							       theirs[i].core_counts[ci]) /
							    theirs_ns(&theirs[i], ci) -
						    1;
	}
	s->cross_mape = n_err ? sum_err / n_err : 0;
	if (fit_classes(fits, model, nr, 3, s->cls)) {
		ret = coloc_err_set(err, -ENOMEM, "scaled tables: out of memory");
		goto out;
	}
	sum_err = 0;
	n_err = 0;
	for (int i = 0; i < 2; i++)
		anchored_error(&theirs[i], fits + (i ? theirs[0].costs.nr_layers : 0), s->cls,
			       &sum_err, &n_err);
	s->fit_mape = n_err ? sum_err / n_err : 0;
	for (int i = 0; i < 2; i++) {
		s->nr_counts[i] = theirs[i].costs.nr_core_counts;
		for (int ci = 0; ci < s->nr_counts[i]; ci++) {
			int k = theirs[i].core_counts[ci];

			s->counts[i][ci] = k;
			s->model_err[i][ci] = scaled_sum(&ours[i], s->cls, s->time_ratio, k) /
						      theirs_ns(&theirs[i], ci) -
					      1;
		}
		two_core_ratios(&ours[i], s, ratios, &n2);
	}
	s->two_core_cells = n2;
	s->two_core_ratio = sim_median_double(ratios, n2);
out:
	free(fits);
	free(model);
	free(ratios);
	return ret;
}

/* One cell of ours' 1-core column scaled by g; 0 (a missing version) stays 0. */
static uint64_t scale_cell(uint64_t one_core, double g, double time_ratio)
{
	double v = (double)one_core * g / time_ratio;

	return one_core ? (v < 1 ? 1 : (uint64_t)llround(v)) : 0;
}

int sim_table_scale(const struct policy_table *ours, const struct sim_scaling *s,
		    struct policy_table *out, struct coloc_err *err)
{
	const struct policy_costs *m = &ours->costs;
	int nr_counts = SCALE_MAX_CORES / SCALE_CORE_STEP, ret;
	size_t cells;
	bool ci_too = ours->latency_lo_ns && ours->latency_hi_ns;

	*out = (struct policy_table){ 0 };
	if (one_core_column(ours) < 0)
		return coloc_err_set(err, -EINVAL, "%s: no 1-core column to scale from",
				     ours->name);
	if (!(s->time_ratio > 0))
		return coloc_err_set(err, -EINVAL, "%s: the scaling has no time ratio", ours->name);
	cells = (size_t)m->nr_layers * m->nr_versions * nr_counts * m->nr_levels;
	out->core_counts = calloc((size_t)nr_counts, sizeof(*out->core_counts));
	out->level_slowdown = calloc((size_t)m->nr_levels, sizeof(*out->level_slowdown));
	out->latency_ns = calloc(cells, sizeof(*out->latency_ns));
	if (ours->layer_ops)
		out->layer_ops = calloc((size_t)m->nr_layers, sizeof(*out->layer_ops));
	if (ci_too) {
		out->latency_lo_ns = calloc(cells, sizeof(*out->latency_lo_ns));
		out->latency_hi_ns = calloc(cells, sizeof(*out->latency_hi_ns));
	}
	if (!out->core_counts || !out->level_slowdown || !out->latency_ns ||
	    (ours->layer_ops && !out->layer_ops) ||
	    (ci_too && (!out->latency_lo_ns || !out->latency_hi_ns))) {
		policy_table_free(out);
		return coloc_err_set(err, -ENOMEM, "%s: out of memory", ours->name);
	}
	for (int ci = 0; ci < nr_counts; ci++)
		out->core_counts[ci] = (ci + 1) * SCALE_CORE_STEP;
	for (int lv = 0; lv < m->nr_levels; lv++)
		out->level_slowdown[lv] = ours->level_slowdown ? ours->level_slowdown[lv] : 1.0;
	if (ours->layer_ops)
		memcpy(out->layer_ops, ours->layer_ops,
		       (size_t)m->nr_layers * sizeof(*out->layer_ops));
	for (int l = 0; l < m->nr_layers; l++) {
		for (int v = 0; v < m->nr_versions; v++) {
			for (int ci = 0; ci < nr_counts; ci++) {
				/* the layer's class by its version 0's time alone */
				double g = curve(s->cls,
						 our_work_us(s->time_ratio,
							     policy_costs_cell(m, l, 0, 0, 0)),
						 out->core_counts[ci]);

				for (int lv = 0; lv < m->nr_levels; lv++) {
					size_t from = (((size_t)l * m->nr_versions + v) *
						       m->nr_core_counts) *
							      m->nr_levels +
						      lv;
					size_t to = (((size_t)l * m->nr_versions + v) * nr_counts +
						     ci) * m->nr_levels +
						    lv;

					out->latency_ns[to] = scale_cell(ours->latency_ns[from], g,
									 s->time_ratio);
					if (ci_too) {
						out->latency_lo_ns[to] =
							scale_cell(ours->latency_lo_ns[from], g,
								   s->time_ratio);
						out->latency_hi_ns[to] =
							scale_cell(ours->latency_hi_ns[from], g,
								   s->time_ratio);
					}
				}
			}
		}
	}
	snprintf(out->name, sizeof(out->name), "scaled:%.48s", ours->name);
	snprintf(out->note, sizeof(out->note), "%s", ours->note);
	out->costs = (struct policy_costs){
		.nr_layers = m->nr_layers,
		.nr_versions = m->nr_versions,
		.nr_core_counts = nr_counts,
		.nr_levels = m->nr_levels,
		.core_counts = out->core_counts,
		.level_slowdown = out->level_slowdown,
		.latency_ns = out->latency_ns,
		.latency_lo_ns = out->latency_lo_ns,
		.latency_hi_ns = out->latency_hi_ns,
		.layer_ops = out->layer_ops,
	};
	ret = policy_costs_check(&out->costs, err);
	if (ret) {
		coloc_err_prefix(err, "%s", out->name);
		policy_table_free(out);
	}
	return ret;
}
