// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The executor model fitted on colocd's block logs (make bench-qos's
 * blocks-MIX-POLICY.tsv, colocd --block-log): how much longer than the
 * profile's table the executors really took for each model and core count,
 * how that spreads, what the dispatch around a block costs, and, from the
 * blocks of a policy that shares cores, how often a block's threads
 * collapse onto one core and what time-sharing costs beyond processor
 * sharing. sim/README.md, "The executor model", gives the reasons and the
 * fit on the measured runs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "fidelity.h"

#define FIT_MIN_BLOCKS 20
#define FIT_MAX_MODELS 64
#define FIT_DRAWS 16 /* alone-time draws per overlapped block in the penalty fit */

/* The upper quantiles the spread is fitted on, and their standard normal quantiles. */
static const double fit_p[] = { 75, 90, 95, 99 };
static const double fit_z[] = { 0.6745, 1.2816, 1.6449, 2.3263 };
#define Z95 1.6449
#define Z99 2.3263
/* The quantiles a small block's extra is kept at (sim.h). */
const double sim_exec_small_p[SIM_EXEC_SMALL_Q] = { 0,	  0.05,	 0.1,	0.2,   0.3,  0.4,  0.5,
						    0.6,  0.7,	 0.8,	0.9,   0.95, 0.97, 0.98,
						    0.99, 0.995, 0.998, 0.999, 1 };
/* The quantiles the overlapped shared blocks are compared on. */
static const double over_p[] = { 25, 50, 75, 90 };

struct fit_block {
	int model, cores;
	double start_ms, end_ms; /* the executor's own run: end - measured .. end */
	double alone_us, measured_us; /* the table's time and the executor's */
	double ratio; /* measured / table */
	/*
	 * round trip - measured; a command's blocks (plan ahead) share its
	 * round trip, and each gets an equal part of what the command's
	 * blocks leave of it
	 */
	double dispatch_us;
	double query, first, last, round_trip_us; /* which command it was part of */
	double gap_ms; /* since the tenant's previous block in the log ended; < 0: none */
};

struct fit_vec {
	double *v;
	int nr, cap;
};

struct fit_state {
	char model[FIT_MAX_MODELS][64];
	int nr_models;
	/* pinned blocks by model and core count */
	struct fit_vec ratio[FIT_MAX_MODELS][SIM_EXEC_MAX_CORES + 1];
	struct fit_vec gap[FIT_MAX_MODELS][SIM_EXEC_MAX_CORES + 1]; /* of each ratio */
	struct fit_vec dispatch[FIT_MAX_MODELS][SIM_EXEC_MAX_CORES + 1];
	/* pinned blocks under SIM_EXEC_MIN_ALONE_US: table and measured time, dispatch */
	struct fit_vec small_a[FIT_MAX_MODELS][SIM_EXEC_MAX_CORES + 1];
	struct fit_vec small_m[FIT_MAX_MODELS][SIM_EXEC_MAX_CORES + 1];
	struct fit_vec small_d[FIT_MAX_MODELS][SIM_EXEC_MAX_CORES + 1];
	/* shared blocks, per model: alone (u), overlapped (u and o) */
	struct fit_vec alone[FIT_MAX_MODELS], over_u[FIT_MAX_MODELS], over_o[FIT_MAX_MODELS];
};

static int vec_add(struct fit_vec *v, double x, struct coloc_err *err)
{
	if (v->nr == v->cap) {
		int cap = v->cap ? 2 * v->cap : 256;
		double *n = realloc(v->v, (size_t)cap * sizeof(*n));

		if (!n)
			return coloc_err_set(err, -ENOMEM, "out of memory");
		v->v = n;
		v->cap = cap;
	}
	v->v[v->nr++] = x;
	return 0;
}

/* Percentile p of v (sorted in place). */
static double pct(struct fit_vec *v, double p)
{
	return sim_percentile_double(v->v, v->nr, p);
}

/* Fixed costs add up over a query's blocks: their mean, not their median. */
static double mean(const struct fit_vec *v)
{
	double sum = 0;

	for (int i = 0; i < v->nr; i++)
		sum += v->v[i];
	return v->nr ? sum / v->nr : 0;
}

/* How cold a tenant is after gap_ms idle (< 0: never ran): 1 - exp(-gap / warm). */
static double coldness(double gap_ms, double warm_ms)
{
	return gap_ms < 0 ? 1.0 : 1.0 - exp(-gap_ms / warm_ms);
}

static int model_index(struct fit_state *st, const char *name, struct coloc_err *err)
{
	for (int i = 0; i < st->nr_models; i++)
		if (!strcmp(st->model[i], name))
			return i;
	if (st->nr_models == FIT_MAX_MODELS || strlen(name) >= sizeof(st->model[0]))
		return coloc_err_set(err, -E2BIG, "more than %d models, or a name too long: %s",
				     FIT_MAX_MODELS, name);
	snprintf(st->model[st->nr_models], sizeof(st->model[0]), "%s", name);
	return st->nr_models++;
}

enum {
	C_END,
	C_TENANT,
	C_CORES,
	C_ALONE,
	C_MEASURED,
	C_ROUND_TRIP,
	C_OK,
	C_QUERY,
	C_FIRST,
	C_LAST,
	C_NR
};
static const char *const col_name[C_NR] = { "end_ms",	   "tenant",	    "cores", "alone_us",
					    "measured_us", "round_trip_us", "ok",    "query",
					    "first",	   "last" };

/* A block log being read: its blocks so far, and when each model's last one ended. */
struct log_read {
	struct fit_state *st;
	struct fit_block *blk;
	int nr, cap;
	double last_end[FIT_MAX_MODELS];
	int cmd; /* the first kept block of the last command */
};

/*
 * Whether b continues the command of a, the block kept before it: colocd
 * logs a plan-ahead command's blocks together, each with the command's
 * round trip, the query's layers in order.
 */
static bool same_command(const struct fit_block *a, const struct fit_block *b)
{
	return a->model == b->model && a->query == b->query && a->last == b->first &&
	       a->round_trip_us == b->round_trip_us;
}

/* One row of a block log: kept when ok, with a table time and a measured time. */
static int log_row(void *ctx, char **f, int n, const int *col, const char *path, int lineno,
		   struct coloc_err *err)
{
	struct log_read *lr = ctx;
	struct fit_block b;
	double v[C_NR];

	for (int k = 0; k < C_NR; k++) {
		if (k == C_TENANT)
			continue;
		if (col[k] >= n || cli_parse_double(f[col[k]], -DBL_MAX, DBL_MAX, &v[k]))
			return coloc_err_set(err, -EINVAL, "%s:%d: column %s is not a number", path,
					     lineno, col_name[k]);
	}
	if (v[C_OK] != 1 || !(v[C_ALONE] > 0) || !(v[C_MEASURED] > 0))
		return 0;
	if (v[C_CORES] < 1 || v[C_CORES] > SIM_EXEC_MAX_CORES)
		return 0; /* beyond what the model keeps */
	b.model = model_index(lr->st, f[col[C_TENANT]], err);
	if (b.model < 0)
		return b.model;
	b.cores = (int)v[C_CORES];
	b.end_ms = v[C_END];
	b.start_ms = v[C_END] - v[C_MEASURED] * 1e-3;
	b.alone_us = v[C_ALONE];
	b.measured_us = v[C_MEASURED];
	b.ratio = v[C_MEASURED] / v[C_ALONE];
	b.dispatch_us = v[C_ROUND_TRIP] - v[C_MEASURED];
	b.query = v[C_QUERY];
	b.first = v[C_FIRST];
	b.last = v[C_LAST];
	b.round_trip_us = v[C_ROUND_TRIP];
	/* a log is in the order blocks ended; the tenant's previous one ended last */
	b.gap_ms = lr->last_end[b.model] < 0 ? -1 : fmax(0, b.start_ms - lr->last_end[b.model]);
	lr->last_end[b.model] = b.end_ms;
	if (v[C_ALONE] < SIM_EXEC_MIN_ALONE_US)
		b.cores = -b.cores; /* kept for overlaps, not for the fit */
	if (lr->nr == lr->cap) {
		int cap = lr->cap ? 2 * lr->cap : 1024;
		struct fit_block *nb = realloc(lr->blk, (size_t)cap * sizeof(*nb));

		if (!nb)
			return coloc_err_set(err, -ENOMEM, "out of memory");
		lr->blk = nb;
		lr->cap = cap;
	}
	lr->blk[lr->nr] = b;
	if (lr->nr > 0 && same_command(&lr->blk[lr->nr - 1], &b)) {
		double left = b.round_trip_us;

		for (int i = lr->cmd; i <= lr->nr; i++)
			left -= lr->blk[i].measured_us;
		for (int i = lr->cmd; i <= lr->nr; i++)
			lr->blk[i].dispatch_us = left / (lr->nr - lr->cmd + 1);
	} else {
		lr->cmd = lr->nr;
	}
	lr->nr++;
	return 0;
}

/* One block log into blk[] (ok blocks with a table time and a measured time). */
static int read_log(struct fit_state *st, const char *path, struct fit_block **blk, int *nr,
		    struct coloc_err *err)
{
	struct log_read lr = { .st = st };
	int ret;

	for (int m = 0; m < FIT_MAX_MODELS; m++)
		lr.last_end[m] = -1;
	ret = sim_tsv_load(path, col_name, C_NR, log_row, &lr, err);
	if (ret) {
		free(lr.blk);
		lr.blk = NULL;
		lr.nr = 0;
	}
	*blk = lr.blk;
	*nr = lr.nr;
	return ret;
}

static int by_start(const void *a, const void *b)
{
	const struct fit_block *x = a, *y = b;

	return (x->start_ms > y->start_ms) - (x->start_ms < y->start_ms);
}

static int by_mid(const void *a, const void *b)
{
	const struct sim_speed_sample *x = a, *y = b;

	return (x->mid_ms > y->mid_ms) - (x->mid_ms < y->mid_ms);
}

/* The pinned row of a model at k cores, or NULL. */
static const struct sim_exec_row *find_row(const struct sim_exec_fit *fit, const char *model, int k)
{
	for (int i = 0; i < fit->nr_rows; i++)
		if (fit->row[i].cores == k && !strcmp(fit->row[i].model, model))
			return &fit->row[i];
	return NULL;
}

/*
 * A shared log: each block's overlap with the others (the time others ran
 * during it, over its own time), and its ratio in units of its model's
 * pinned factor at its core count.
 */
static int add_shared(struct fit_state *st, const struct sim_exec_fit *fit, struct fit_block *b,
		      int nr, struct coloc_err *err)
{
	int ret = 0;

	qsort(b, (size_t)nr, sizeof(*b), by_start);
	for (int i = 0; i < nr && !ret; i++) {
		const struct sim_exec_row *row = find_row(
			fit, st->model[b[i].model], b[i].cores < 0 ? -b[i].cores : b[i].cores);
		double len = b[i].end_ms - b[i].start_ms, ov = 0, u;

		for (int j = 0; j < nr && b[j].start_ms < b[i].end_ms; j++)
			if (j != i)
				ov += fmax(0, fmin(b[i].end_ms, b[j].end_ms) -
						      fmax(b[i].start_ms, b[j].start_ms));
		if (!row || b[i].cores < 0)
			continue;
		u = b[i].ratio /
		    (row->factor * (1 + row->cold * coldness(b[i].gap_ms, fit->warm_ms)));
		if (ov <= 0) {
			ret = vec_add(&st->alone[b[i].model], u, err);
		} else {
			ret = vec_add(&st->over_u[b[i].model], u, err);
			ret = ret ?: vec_add(&st->over_o[b[i].model], ov / len, err);
		}
	}
	return ret;
}

double sim_exec_small_extra(const double *q, double u)
{
	int i = 1;

	if (!(u > 0))
		return q[0];
	if (u >= 1)
		return q[SIM_EXEC_SMALL_Q - 1];
	while (sim_exec_small_p[i] < u)
		i++;
	return q[i - 1] + (q[i] - q[i - 1]) * (u - sim_exec_small_p[i - 1]) /
				  (sim_exec_small_p[i] - sim_exec_small_p[i - 1]);
}

double sim_exec_small_mean(const double *q)
{
	double sum = 0;

	for (int i = 1; i < SIM_EXEC_SMALL_Q; i++)
		sum += (sim_exec_small_p[i] - sim_exec_small_p[i - 1]) * (q[i] + q[i - 1]) / 2;
	return sum;
}

/*
 * The small blocks of a row (under SIM_EXEC_MIN_ALONE_US in the table):
 * what they take beyond table x factor (its mean and its quantiles), the
 * least measured / table, the mean dispatch.
 */
static int small_blocks(struct fit_state *st, int m, int k, struct sim_exec_row *row,
			struct coloc_err *err)
{
	struct fit_vec *a = &st->small_a[m][k], *ms = &st->small_m[m][k], extra = { 0 };
	int ret = 0;

	row->n_small = a->nr;
	if (a->nr < FIT_MIN_BLOCKS)
		return 0;
	row->small_floor = INFINITY;
	for (int i = 0; i < a->nr && !ret; i++) {
		ret = vec_add(&extra, ms->v[i] - row->factor * a->v[i], err);
		row->small_floor = fmin(row->small_floor, ms->v[i] / a->v[i]);
	}
	if (!ret) {
		row->small_extra_us = mean(&extra);
		for (int i = 0; i < SIM_EXEC_SMALL_Q; i++)
			row->small_q_us[i] = pct(&extra, 100 * sim_exec_small_p[i]);
		row->small_dispatch_us = fmax(0, mean(&st->small_d[m][k]));
	}
	free(extra.v);
	return ret;
}

/*
 * Least squares of log(ratio) = b0 + b1 x coldness(gap, warm) over a row's
 * blocks; the sum of squared residuals.
 */
static double warm_ols(const struct fit_vec *r, const struct fit_vec *g, double warm_ms, double *b0,
		       double *b1)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, n = r->nr, sse = 0, d;

	for (int i = 0; i < r->nr; i++) {
		double x = coldness(g->v[i], warm_ms), y = log(r->v[i]);

		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
	}
	d = n * sxx - sx * sx;
	*b1 = d > 1e-12 ? (n * sxy - sx * sy) / d : 0;
	*b0 = (sy - *b1 * sx) / n;
	for (int i = 0; i < r->nr; i++) {
		double e = log(r->v[i]) - *b0 - *b1 * coldness(g->v[i], warm_ms);

		sse += e * e;
	}
	return sse;
}

/* The grid of warm-up times tried, ms; the one of least pooled squared error is kept. */
static const double warm_grid[] = { 2, 5, 10, 20, 40, 80, 160, 320 };

/*
 * One warm-up time for every row: the grid point of least squared error
 * summed over the rows, and that error against no warm-up term at all.
 */
static void fit_warm(struct fit_state *st, struct sim_exec_fit *fit)
{
	double best = -1, sse0 = 0;

	for (size_t w = 0; w < sizeof(warm_grid) / sizeof(warm_grid[0]); w++) {
		double sse = 0;

		sse0 = 0;
		for (int m = 0; m < st->nr_models; m++)
			for (int k = 1; k <= SIM_EXEC_MAX_CORES; k++) {
				struct fit_vec *r = &st->ratio[m][k];
				double b0, b1, mu = 0;

				if (r->nr < FIT_MIN_BLOCKS)
					continue;
				sse += warm_ols(r, &st->gap[m][k], warm_grid[w], &b0, &b1);
				for (int i = 0; i < r->nr; i++)
					mu += log(r->v[i]) / r->nr;
				for (int i = 0; i < r->nr; i++)
					sse0 += (log(r->v[i]) - mu) * (log(r->v[i]) - mu);
			}
		if (best < 0 || sse < best) {
			best = sse;
			fit->warm_ms = warm_grid[w];
		}
	}
	fit->warm_gain = sse0 > 0 ? 1 - best / sse0 : 0;
}

/*
 * A row: the warm factor and its cold extra (ratio = factor x (1 + cold x
 * coldness)), the spread of what is left, its fit error, the dispatch.
 */
static int fill_row(struct fit_state *st, int m, int k, double warm_ms, struct sim_exec_row *row,
		    struct coloc_err *err)
{
	struct fit_vec *r = &st->ratio[m][k], *g = &st->gap[m][k], e = { 0 };
	double b0, b1, shift, num = 0, den = 0;
	int ret = 0;

	warm_ols(r, g, warm_ms, &b0, &b1);
	if (b1 < 0) /* warmer is not slower: no warm-up term */
		b1 = 0;
	for (int i = 0; i < r->nr && !ret; i++)
		ret = vec_add(&e, log(r->v[i]) - b1 * coldness(g->v[i], warm_ms), err);
	if (ret) {
		free(e.v);
		return ret;
	}
	/* the median, not the mean, of what is left sets the factor: the spread is skewed */
	shift = pct(&e, 50);
	snprintf(row->model, sizeof(row->model), "%s", st->model[m]);
	row->cores = k;
	row->n = r->nr;
	row->factor = exp(shift);
	row->cold = exp(b1) - 1;
	row->dispatch_us = fmax(0, mean(&st->dispatch[m][k]));
	for (size_t i = 0; i < sizeof(fit_p) / sizeof(fit_p[0]); i++) {
		num += (pct(&e, fit_p[i]) - shift) * fit_z[i];
		den += fit_z[i] * fit_z[i];
	}
	row->sigma = fmax(0, num / den);
	row->q95 = exp(pct(&e, 95) - shift);
	row->q99 = exp(pct(&e, 99) - shift);
	row->q95_fit = exp(Z95 * row->sigma);
	row->q99_fit = exp(Z99 * row->sigma);
	free(e.v);
	return small_blocks(st, m, k, row, err);
}

/*
 * The machine's slow spells (speed.c) from one pinned log's blocks: each
 * block of a fitted row by its standardized deviation from that row,
 * (log ratio - log factor - log(1 + cold) x coldness) / sigma.
 */
static int add_speed(struct sim_speed_acc *acc, const struct fit_state *st,
		     const struct sim_exec_fit *fit, const struct fit_block *b, int n,
		     struct coloc_err *err)
{
	struct sim_speed_sample *s = calloc(n ? (size_t)n : 1, sizeof(*s));
	int k = 0;

	if (!s)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		const struct sim_exec_row *r;

		if (b[i].cores < 1)
			continue;
		r = find_row(fit, st->model[b[i].model], b[i].cores);
		if (!r || r->cores != b[i].cores || !(r->sigma > 0))
			continue;
		s[k++] = (struct sim_speed_sample){
			.mid_ms = (b[i].start_ms + b[i].end_ms) / 2,
			.tenant = b[i].model,
			.z = (log(b[i].ratio / r->factor) -
			      log(1 + r->cold) * coldness(b[i].gap_ms, fit->warm_ms)) /
			     r->sigma,
		};
	}
	qsort(s, (size_t)k, sizeof(*s), by_mid);
	sim_speed_acc_add(acc, s, k);
	free(s);
	return 0;
}

static int pinned_rows(struct fit_state *st, struct sim_exec_fit *fit, struct coloc_err *err)
{
	fit->row = calloc((size_t)st->nr_models * SIM_EXEC_MAX_CORES, sizeof(*fit->row));
	if (!fit->row)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	fit_warm(st, fit);
	for (int m = 0; m < st->nr_models; m++)
		for (int k = 1; k <= SIM_EXEC_MAX_CORES; k++) {
			int ret;

			if (st->ratio[m][k].nr < FIT_MIN_BLOCKS)
				continue;
			ret = fill_row(st, m, k, fit->warm_ms, &fit->row[fit->nr_rows++], err);
			if (ret)
				return ret;
		}
	return 0;
}

/*
 * The weighted rms log error, over the models, of the overlapped blocks'
 * quantiles against processor sharing with the penalty: each overlapped
 * block i (overlap o) drawn FIT_DRAWS times from its model's alone blocks
 * u, u x (1 + (2 x penalty - 1) x o) unless u is collapsed (u > limit[m]).
 * Per-model errors into err_m[].
 */
static double penalty_error(struct fit_state *st, const double *limit, double penalty,
			    double *err_m, struct fit_vec *pred)
{
	double sum = 0, weight = 0;

	for (int m = 0; m < st->nr_models; m++) {
		struct fit_vec *a = &st->alone[m], *u = &st->over_u[m], *o = &st->over_o[m];
		struct coloc_rng rng;
		double e = 0;

		err_m[m] = 0;
		if (!a->nr || u->nr < FIT_MIN_BLOCKS)
			continue;
		coloc_rng_seed(&rng, (uint64_t)m + 1);
		pred->nr = 0;
		for (int i = 0; i < u->nr; i++)
			for (int k = 0; k < FIT_DRAWS; k++) {
				double x = a->v[coloc_rng_next(&rng) % (uint64_t)a->nr];

				/* the capacity is u->nr x FIT_DRAWS, reserved by the caller */
				pred->v[pred->nr++] =
					x > limit[m] ? x : x * (1 + (2 * penalty - 1) * o->v[i]);
			}
		for (size_t q = 0; q < sizeof(over_p) / sizeof(over_p[0]); q++) {
			double d = log(pct(pred, over_p[q]) /
				       sim_percentile_double(u->v, u->nr, over_p[q]));

			e += d * d;
		}
		err_m[m] = sqrt(e / (double)(sizeof(over_p) / sizeof(over_p[0])));
		sum += (double)u->nr * err_m[m] * err_m[m];
		weight += u->nr;
	}
	return weight ? sqrt(sum / weight) : -1;
}

static int shared_rows(struct fit_state *st, struct sim_exec_fit *fit, struct coloc_err *err)
{
	double limit[FIT_MAX_MODELS], err_m[FIT_MAX_MODELS], best_err = -1;
	struct fit_vec pred = { 0 };
	int most = 0;

	fit->shared = calloc((size_t)st->nr_models, sizeof(*fit->shared));
	if (!fit->shared)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	for (int m = 0; m < st->nr_models; m++) {
		struct sim_exec_shared_row *row = &fit->shared[fit->nr_shared];
		struct fit_vec *a = &st->alone[m], coll = { 0 };
		const struct sim_exec_row *pin = NULL;
		int ret = 0;

		limit[m] = INFINITY;
		if (st->over_u[m].nr > most)
			most = st->over_u[m].nr;
		if (a->nr < FIT_MIN_BLOCKS)
			continue;
		/* shared blocks run on all the cores: the spread of the most cores fitted */
		for (int k = SIM_EXEC_MAX_CORES; k >= 1 && !pin; k--)
			pin = find_row(fit, st->model[m], k);
		limit[m] = exp(Z99 * pin->sigma);
		for (int i = 0; i < a->nr && !ret; i++)
			if (a->v[i] > limit[m])
				ret = vec_add(&coll, a->v[i], err);
		if (ret) {
			free(coll.v);
			return ret;
		}
		fit->nr_shared++;
		snprintf(row->model, sizeof(row->model), "%s", st->model[m]);
		row->n_alone = a->nr;
		row->n_collapsed = coll.nr;
		row->n_overlapped = st->over_u[m].nr;
		row->collapse_p = (double)coll.nr / a->nr;
		row->collapse_x = coll.nr ? pct(&coll, 50) : 1.0;
		free(coll.v);
	}
	if (!most)
		return 0;
	pred.v = malloc((size_t)most * FIT_DRAWS * sizeof(*pred.v));
	if (!pred.v)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	/* the penalty on a grid of 0.05 from 0.5 to 2 */
	for (int g = 10; g <= 40; g++) {
		double e = penalty_error(st, limit, g * 0.05, err_m, &pred);

		if (e >= 0 && (best_err < 0 || e < best_err - 1e-12)) {
			best_err = e;
			fit->penalty = g * 0.05;
		}
	}
	fit->penalty_error = best_err;
	if (best_err >= 0) {
		penalty_error(st, limit, fit->penalty, err_m, &pred);
		for (int i = 0; i < fit->nr_shared; i++)
			for (int m = 0; m < st->nr_models; m++)
				if (!strcmp(fit->shared[i].model, st->model[m]))
					fit->shared[i].fit_error = err_m[m];
	}
	free(pred.v);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * blocks-MIX-POLICY.tsv (POLICY@N: with N executors a tenant) -> the
 * policy's entry; NULL when the name is not one.
 */
static const struct policy_entry *log_policy(const char *name)
{
	const struct policy_entry *e;
	struct coloc_err err = { 0 };
	char policy[64];
	const char *dash;
	size_t len = strlen(name);
	int executors;

	if (strncmp(name, "blocks-", 7) || len < 12 || strcmp(name + len - 4, ".tsv"))
		return NULL;
	dash = strchr(name + 7, '-');
	if (!dash || (size_t)(name + len - 4 - dash - 1) >= sizeof(policy))
		return NULL;
	snprintf(policy, sizeof(policy), "%.*s", (int)(name + len - 4 - dash - 1), dash + 1);
	return sim_cell_parse(policy, &e, &executors, &err) ? NULL : e;
}

static void state_free(struct fit_state *st)
{
	for (int m = 0; m < FIT_MAX_MODELS; m++) {
		for (int k = 0; k <= SIM_EXEC_MAX_CORES; k++) {
			free(st->ratio[m][k].v);
			free(st->gap[m][k].v);
			free(st->dispatch[m][k].v);
			free(st->small_a[m][k].v);
			free(st->small_m[m][k].v);
			free(st->small_d[m][k].v);
		}
		free(st->alone[m].v);
		free(st->over_u[m].v);
		free(st->over_o[m].v);
	}
	free(st);
}

/*
 * The fit on the logs of dir; only: one log's name, whose blocks alone
 * give the rows it can (a shared log's, against the pinned rows of every
 * log), or NULL for all.
 */
static int fit_logs(const char *dir, const char *only, struct sim_exec_fit *fit,
		    struct coloc_err *err)
{
	const struct policy_entry *only_pol = only ? log_policy(only) : NULL;
	bool found = false;
	struct fit_state *st = calloc(1, sizeof(*st));
	char **names = NULL, path[4096];
	const struct policy_entry **pol = NULL;
	struct fit_block **shared = NULL, **pinned = NULL;
	int *nr_shared = NULL, *nr_pinned = NULL, nr = 0, cap = 0, ret = 0;
	struct sim_speed_acc speed = { 0 };
	struct dirent *de;
	DIR *d;

	*fit = (struct sim_exec_fit){ 0 };
	if (!st)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	d = opendir(dir);
	if (!d) {
		free(st);
		return coloc_err_set(err, -errno, "%s: %m (make bench-qos writes the block logs)",
				     dir);
	}
	while ((de = readdir(d)) && !ret) {
		if (!log_policy(de->d_name))
			continue;
		if (nr == cap) {
			char **n;

			cap = cap ? 2 * cap : 32;
			n = realloc(names, (size_t)cap * sizeof(*n));
			if (!n) {
				ret = coloc_err_set(err, -ENOMEM, "out of memory");
				break;
			}
			names = n;
		}
		names[nr] = strdup(de->d_name);
		if (!names[nr++])
			ret = coloc_err_set(err, -ENOMEM, "out of memory");
	}
	closedir(d);
	for (int i = 0; i < nr && only; i++)
		found |= !strcmp(names[i], only);
	if (!ret && only && (!only_pol || !found))
		ret = coloc_err_set(err, -ENOENT, "%s: no block log %s", dir, only);
	if (!ret && !nr)
		ret = coloc_err_set(
			err, -ENOENT,
			"%s: no blocks-MIX-POLICY.tsv of a known policy (make bench-qos "
			"writes them)",
			dir);
	if (!ret) {
		qsort(names, (size_t)nr, sizeof(*names), by_name);
		pol = calloc((size_t)nr, sizeof(*pol));
		shared = calloc((size_t)nr, sizeof(*shared));
		nr_shared = calloc((size_t)nr, sizeof(*nr_shared));
		pinned = calloc((size_t)nr, sizeof(*pinned));
		nr_pinned = calloc((size_t)nr, sizeof(*nr_pinned));
		if (!pol || !shared || !nr_shared || !pinned || !nr_pinned)
			ret = coloc_err_set(err, -ENOMEM, "out of memory");
	}
	/* every log read; the pinned ones counted at once, the shared ones kept */
	for (int i = 0; i < nr && !ret; i++) {
		struct fit_block *b = NULL;
		int n = 0;

		pol[i] = log_policy(names[i]);
		/* one pinned log: its blocks alone; one shared log: it and every pinned one */
		if (only && strcmp(names[i], only) &&
		    (pol[i]->shares_cores || !only_pol->shares_cores))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		ret = read_log(st, path, &b, &n, err);
		if (ret)
			break;
		fit->nr_files++;
		fit->nr_blocks += n;
		if (pol[i]->shares_cores) {
			shared[i] = b;
			nr_shared[i] = n;
			continue;
		}
		for (int j = 0; j < n && !ret; j++) {
			if (b[j].cores < 0) {
				int k = -b[j].cores;

				ret = vec_add(&st->small_a[b[j].model][k], b[j].alone_us, err);
				ret = ret   ?:
					      vec_add(&st->small_m[b[j].model][k], b[j].measured_us,
						      err);
				ret = ret   ?:
					      vec_add(&st->small_d[b[j].model][k], b[j].dispatch_us,
						      err);
				continue;
			}
			ret = vec_add(&st->ratio[b[j].model][b[j].cores], b[j].ratio, err);
			ret = ret ?: vec_add(&st->gap[b[j].model][b[j].cores], b[j].gap_ms, err);
			ret = ret   ?:
				      vec_add(&st->dispatch[b[j].model][b[j].cores],
					      b[j].dispatch_us, err);
		}
		/* kept for the slow spells, once the rows are fitted */
		pinned[i] = b;
		nr_pinned[i] = n;
	}
	ret = ret ?: pinned_rows(st, fit, err);
	for (int i = 0; i < nr && !ret; i++)
		if (pinned[i])
			ret = add_speed(&speed, st, fit, pinned[i], nr_pinned[i], err);
	if (!ret)
		sim_speed_acc_solve(&speed, &fit->speed);
	for (int i = 0; i < nr && !ret; i++)
		if (shared[i])
			ret = add_shared(st, fit, shared[i], nr_shared[i], err);
	ret = ret ?: shared_rows(st, fit, err);
	for (int i = 0; i < nr; i++) {
		free(names[i]);
		if (shared)
			free(shared[i]);
		if (pinned)
			free(pinned[i]);
	}
	free(names);
	free(pol);
	free(shared);
	free(nr_shared);
	free(pinned);
	free(nr_pinned);
	state_free(st);
	if (ret)
		sim_exec_fit_free(fit);
	return ret;
}

void sim_exec_fit_free(struct sim_exec_fit *fit)
{
	free(fit->row);
	free(fit->shared);
	*fit = (struct sim_exec_fit){ 0 };
}

int sim_exec_timing_from_fit(const struct sim_exec_fit *fit, const char *model,
			     struct sim_exec_timing *m, struct coloc_err *err)
{
	bool any = false;

	*m = (struct sim_exec_timing){ .collapse_x = 1.0,
				       .warm_ns = (uint64_t)llround(fit->warm_ms * 1e6) };
	for (int i = 0; i < fit->nr_rows; i++) {
		const struct sim_exec_row *r = &fit->row[i];

		if (strcmp(r->model, model))
			continue;
		m->factor[r->cores] = r->factor;
		m->sigma[r->cores] = r->sigma;
		m->dispatch_ns[r->cores] = (uint64_t)llround(r->dispatch_us * 1e3);
		if (r->n_small >= FIT_MIN_BLOCKS) {
			m->small_n[r->cores] = r->n_small;
			for (int q = 0; q < SIM_EXEC_SMALL_Q; q++)
				m->small_extra_ns[r->cores][q] = r->small_q_us[q] * 1e3;
			m->small_floor[r->cores] = r->small_floor;
			m->small_dispatch_ns[r->cores] =
				(uint64_t)llround(r->small_dispatch_us * 1e3);
		}
		m->cold[r->cores] = r->cold;
		any = true;
	}
	for (int i = 0; i < fit->nr_shared; i++)
		if (!strcmp(fit->shared[i].model, model)) {
			m->collapse_p = fit->shared[i].collapse_p;
			m->collapse_x = fit->shared[i].collapse_x;
		}
	if (!any)
		return coloc_err_set(err, -ENOENT,
				     "no block of %s (of %.0f us or more in the table) on cores of "
				     "its own in the block logs: the executor model has nothing "
				     "for it",
				     model, SIM_EXEC_MIN_ALONE_US);
	return 0;
}

int sim_exec_fit_dir(const char *dir, struct sim_exec_fit *fit, struct coloc_err *err)
{
	return fit_logs(dir, NULL, fit, err);
}

int sim_exec_fit_log(const char *dir, const char *mix, const char *policy, struct sim_exec_fit *fit,
		     struct coloc_err *err)
{
	char name[256];

	snprintf(name, sizeof(name), "blocks-%s-%s.tsv", mix, policy);
	return fit_logs(dir, name, fit, err);
}
