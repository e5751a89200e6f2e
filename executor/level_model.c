// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Fitting and evaluating the PMU level model (level_model.h). The fit is
 * ordinary least squares by the normal equations, at most 4x4 (intercept and
 * three signals), solved by Gaussian elimination with partial pivoting. The
 * signals live on very different scales (a miss ratio below 1, references
 * per microsecond in the hundreds), so each column is divided by its largest
 * magnitude before the normal matrix is formed, and the coefficients are
 * scaled back after: the singularity test then compares like with like.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include "level_model.h"

#define LEVEL_NR_PARAMS (LEVEL_NR_TERMS + 1)
/* A pivot below this share of the largest diagonal entry means a singular design. */
#define LEVEL_SINGULAR_REL 1e-9
/* A signal whose range is below this share of its magnitude does not vary. */
#define LEVEL_CONSTANT_REL 1e-9

static const char *const level_term_names[LEVEL_NR_TERMS] = {
	[LEVEL_TERM_LLC_MISS_RATIO] = "llc_miss_ratio",
	[LEVEL_TERM_LLC_REFS_PER_US] = "llc_refs_per_us",
	[LEVEL_TERM_DRAM_GBPS] = "dram_gbps",
};

const char *level_term_name(enum level_term t)
{
	if ((unsigned int)t >= LEVEL_NR_TERMS)
		return "?";
	return level_term_names[t];
}

void level_model_terms_str(unsigned int terms, char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (int t = 0; t < LEVEL_NR_TERMS; t++) {
		int w;

		if (!(terms & (1u << t)) || used >= len)
			continue;
		w = snprintf(buf + used, len - used, "%s%s", used ? " " : "", level_term_names[t]);
		used += w > 0 ? (size_t)w : 0;
	}
}

/* Solves a x = b (p x p, row-major, destroyed) by partial pivoting; false when singular. */
static bool level_solve(double a[LEVEL_NR_PARAMS][LEVEL_NR_PARAMS], double b[LEVEL_NR_PARAMS],
			int p, double x[LEVEL_NR_PARAMS])
{
	double scale = 0;

	for (int i = 0; i < p; i++)
		scale = fmax(scale, fabs(a[i][i]));
	if (scale == 0)
		return false;
	for (int k = 0; k < p; k++) {
		int piv = k;

		for (int i = k + 1; i < p; i++)
			if (fabs(a[i][k]) > fabs(a[piv][k]))
				piv = i;
		if (fabs(a[piv][k]) <= LEVEL_SINGULAR_REL * scale)
			return false;
		if (piv != k) {
			double tb = b[k];

			for (int j = 0; j < p; j++) {
				double t = a[k][j];

				a[k][j] = a[piv][j];
				a[piv][j] = t;
			}
			b[k] = b[piv];
			b[piv] = tb;
		}
		for (int i = k + 1; i < p; i++) {
			double f = a[i][k] / a[k][k];

			for (int j = k; j < p; j++)
				a[i][j] -= f * a[k][j];
			b[i] -= f * b[k];
		}
	}
	for (int i = p - 1; i >= 0; i--) {
		double s = b[i];

		for (int j = i + 1; j < p; j++)
			s -= a[i][j] * x[j];
		x[i] = s / a[i][i];
	}
	return true;
}

/*
 * Least squares with the terms in mask; scale[t] is term t's largest
 * magnitude. Fills m's coefficients and its residual sum of squares in *ssr.
 */
static bool level_fit_terms(const struct level_point *pts, int n, unsigned int mask,
			    const double scale[LEVEL_NR_TERMS], struct level_model *m, double *ssr)
{
	double a[LEVEL_NR_PARAMS][LEVEL_NR_PARAMS] = { { 0 } };
	double b[LEVEL_NR_PARAMS] = { 0 }, beta[LEVEL_NR_PARAMS];
	int cols[LEVEL_NR_PARAMS], p = 1;

	for (int t = 0; t < LEVEL_NR_TERMS; t++)
		if (mask & (1u << t))
			cols[p++] = t;
	for (int i = 0; i < n; i++) {
		double row[LEVEL_NR_PARAMS];

		row[0] = 1.0;
		for (int j = 1; j < p; j++)
			row[j] = pts[i].x[cols[j]] / scale[cols[j]];
		for (int j = 0; j < p; j++) {
			for (int k = 0; k < p; k++)
				a[j][k] += row[j] * row[k];
			b[j] += row[j] * pts[i].level;
		}
	}
	if (!level_solve(a, b, p, beta))
		return false;
	memset(m->coef, 0, sizeof(m->coef));
	m->terms = mask;
	m->c0 = beta[0];
	for (int j = 1; j < p; j++)
		m->coef[cols[j]] = beta[j] / scale[cols[j]];
	*ssr = 0;
	for (int i = 0; i < n; i++) {
		double r = pts[i].level - m->c0;

		for (int t = 0; t < LEVEL_NR_TERMS; t++)
			r -= m->coef[t] * pts[i].x[t];
		*ssr += r * r;
	}
	return true;
}

/* The best fit over the subsets of mask with exactly k terms; false when all are singular. */
static bool level_fit_best_of_size(const struct level_point *pts, int n, unsigned int mask, int k,
				   const double scale[LEVEL_NR_TERMS], struct level_model *best,
				   double *best_ssr)
{
	bool found = false;

	for (unsigned int sub = 1; sub <= LEVEL_TERMS_ALL; sub++) {
		struct level_model cand = *best;
		double ssr;

		if ((sub & ~mask) || __builtin_popcount(sub) != k)
			continue;
		if (!level_fit_terms(pts, n, sub, scale, &cand, &ssr))
			continue;
		if (!found || ssr < *best_ssr) {
			*best = cand;
			*best_ssr = ssr;
			found = true;
		}
	}
	return found;
}

int level_model_fit(const struct level_point *pts, int n, struct level_model *m, char *note,
		    size_t note_len, struct coloc_err *err)
{
	double scale[LEVEL_NR_TERMS], ymean = 0, sst = 0, ssr = 0, ylo = INFINITY, yhi = -INFINITY;
	unsigned int varying = 0;
	char used[96], flat[96], collinear[96];
	struct level_model fit = { 0 };

	if (n < LEVEL_MODEL_MIN_POINTS)
		return coloc_err_set(err, -EINVAL,
				     "%d calibration points are too few: a fit needs at least %d",
				     n, LEVEL_MODEL_MIN_POINTS);
	for (int t = 0; t < LEVEL_NR_TERMS; t++) {
		double lo = INFINITY, hi = -INFINITY;

		for (int i = 0; i < n; i++) {
			if (!isfinite(pts[i].x[t]))
				return coloc_err_set(err, -EINVAL,
						     "point %d: %s is not a finite number", i,
						     level_term_names[t]);
			lo = fmin(lo, pts[i].x[t]);
			hi = fmax(hi, pts[i].x[t]);
		}
		scale[t] = fmax(fabs(lo), fabs(hi));
		if (hi - lo > LEVEL_CONSTANT_REL * scale[t])
			varying |= 1u << t;
	}
	for (int i = 0; i < n; i++) {
		if (!isfinite(pts[i].level))
			return coloc_err_set(err, -EINVAL,
					     "point %d: the level is not a finite number", i);
		ymean += pts[i].level;
		ylo = fmin(ylo, pts[i].level);
		yhi = fmax(yhi, pts[i].level);
	}
	ymean /= n;
	for (int i = 0; i < n; i++)
		sst += (pts[i].level - ymean) * (pts[i].level - ymean);
	if (yhi - ylo <= LEVEL_CONSTANT_REL * fmax(fabs(ylo), fabs(yhi)))
		return coloc_err_set(err, -EINVAL,
				     "the measured level is %g at every point: nothing to fit",
				     ymean);
	if (!varying)
		return coloc_err_set(err, -EINVAL,
				     "no signal varies across the %d points: nothing to fit", n);
	if (n < __builtin_popcount(varying) + 2)
		return coloc_err_set(err, -EINVAL,
				     "%d calibration points are too few for %d varying signals: "
				     "a fit needs at least %d",
				     n, __builtin_popcount(varying),
				     __builtin_popcount(varying) + 2);
	for (int k = __builtin_popcount(varying); k > 0; k--)
		if (level_fit_best_of_size(pts, n, varying, k, scale, &fit, &ssr))
			break;
	if (!fit.terms)
		return coloc_err_set(err, -EINVAL,
				     "the design is singular with every term left out");
	fit.nr_points = n;
	fit.r2 = 1.0 - ssr / sst;
	fit.rms = sqrt(ssr / n);
	fit.machine = m->machine;
	*m = fit;
	if (note && note_len) {
		level_model_terms_str(fit.terms, used, sizeof(used));
		level_model_terms_str(LEVEL_TERMS_ALL & ~varying, flat, sizeof(flat));
		level_model_terms_str(varying & ~fit.terms, collinear, sizeof(collinear));
		snprintf(note, note_len, "terms used: %s%s%s%s%s", used,
			 flat[0] ? "; left out, not varying: " : "", flat,
			 collinear[0] ? "; left out, singular with the others: " : "", collinear);
	}
	return 0;
}

int level_model_eval(const struct level_model *m, const double x[LEVEL_NR_TERMS], unsigned int live,
		     double *level)
{
	double v = m->c0;

	if (m->terms & ~live)
		return -ENODATA;
	for (int t = 0; t < LEVEL_NR_TERMS; t++)
		if (m->terms & (1u << t))
			v += m->coef[t] * x[t];
	*level = v > 1.0 ? v : 1.0;
	return 0;
}

unsigned int level_signals_from_counters(const struct coloc_counters *c, unsigned int live_mask,
					 uint64_t busy_ns, double x[LEVEL_NR_TERMS])
{
	bool refs = live_mask & (1u << COLOC_CTR_LLC_REFS);
	bool misses = live_mask & (1u << COLOC_CTR_LLC_MISSES);
	bool fills = live_mask & (1u << COLOC_CTR_DRAM_FILLS);
	unsigned int live = 0;

	for (int t = 0; t < LEVEL_NR_TERMS; t++)
		x[t] = 0;
	if (refs && misses && c->llc_refs) {
		x[LEVEL_TERM_LLC_MISS_RATIO] = (double)c->llc_misses / (double)c->llc_refs;
		live |= 1u << LEVEL_TERM_LLC_MISS_RATIO;
	}
	if (!busy_ns)
		return live;
	if (refs) {
		x[LEVEL_TERM_LLC_REFS_PER_US] = (double)c->llc_refs * 1e3 / (double)busy_ns;
		live |= 1u << LEVEL_TERM_LLC_REFS_PER_US;
	}
	if (fills) {
		/* bytes per ns is GB/s */
		x[LEVEL_TERM_DRAM_GBPS] =
			(double)c->dram_fills * COLOC_DRAM_LINE_BYTES / (double)busy_ns;
		live |= 1u << LEVEL_TERM_DRAM_GBPS;
	}
	return live;
}
