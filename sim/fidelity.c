// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The fidelity check: the simulated QoS-QPS of each policy and mix next to
 * what `make bench-qos` measured on this machine (its results.tsv), the
 * ratio, whether it is within the tolerance, and whether the policies rank
 * the same per mix. A ranking differs when some pair of policies is
 * ordered one way by the simulation and strictly the other way by the
 * measurement; a tie on either side contradicts nothing. Also what
 * bench-qos gave each tenant (its points.tsv: solo latency as served, QoS),
 * so that the simulation serves the same tenants.
 */
#include <errno.h>
#include <float.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli.h"
#include "fidelity.h"

#define TSV_LINE_MAX 1024

int sim_qps_table_add(struct sim_qps_table *t, const char *mix, const char *policy, double qps,
		      double p99_over_solo, struct coloc_err *err)
{
	struct sim_qps_cell *c;

	if (strlen(mix) >= sizeof(c->mix) || strlen(policy) >= sizeof(c->policy))
		return coloc_err_set(err, -EINVAL, "mix '%s' or policy '%s': name too long", mix,
				     policy);
	if (sim_qps_table_find(t, mix, policy))
		return coloc_err_set(err, -EEXIST, "mix %s, policy %s: given twice", mix, policy);
	if (t->nr == t->cap) {
		int cap = t->cap ? 2 * t->cap : 64;

		c = realloc(t->cell, (size_t)cap * sizeof(*c));
		if (!c)
			return coloc_err_set(err, -ENOMEM, "out of memory");
		t->cell = c;
		t->cap = cap;
	}
	c = &t->cell[t->nr++];
	snprintf(c->mix, sizeof(c->mix), "%s", mix);
	snprintf(c->policy, sizeof(c->policy), "%s", policy);
	c->qps = qps;
	c->p99_over_solo = p99_over_solo;
	c->qps_lo = c->qps_hi = qps;
	return 0;
}

const struct sim_qps_cell *sim_qps_table_find(const struct sim_qps_table *t, const char *mix,
					      const char *policy)
{
	for (int i = 0; i < t->nr; i++)
		if (!strcmp(t->cell[i].mix, mix) && !strcmp(t->cell[i].policy, policy))
			return &t->cell[i];
	return NULL;
}

void sim_qps_table_free(struct sim_qps_table *t)
{
	free(t->cell);
	*t = (struct sim_qps_table){ 0 };
}

/* Splits line at tabs in place (its line end cut); the number of fields, at most max. */
static int split_tabs(char *line, char **field, int max)
{
	int n = 0;

	line[strcspn(line, "\r\n")] = '\0';
	while (n < max) {
		field[n++] = line;
		line = strchr(line, '\t');
		if (!line)
			break;
		*line++ = '\0';
	}
	return n;
}

/* A number >= 0; infinite only where allowed (bench-qos's 'inf' p99: queries unanswered). */
static int parse_number(const char *s, bool may_be_inf, double *v)
{
	if (may_be_inf && !strcasecmp(s, "inf")) {
		*v = INFINITY;
		return 0;
	}
	return cli_parse_double(s, 0, DBL_MAX, v);
}

/*
 * The columns of want[nr] in a header line split into f[n], into col[];
 * an error naming the first one missing and every one wanted.
 */
static int header_columns(const char *path, char **f, int n, const char *const *want, int nr,
			  int *col, struct coloc_err *err)
{
	char list[256];
	int at = 0;

	for (int k = 0; k < nr; k++) {
		col[k] = -1;
		for (int i = 0; i < n; i++)
			if (!strcmp(f[i], want[k] + (want[k][0] == '?')))
				col[k] = i;
	}
	for (int k = 0; k < nr; k++) {
		if (col[k] >= 0 || want[k][0] == '?')
			continue;
		for (int w = 0; w < nr && at < (int)sizeof(list); w++)
			if (want[w][0] != '?')
				at += snprintf(list + at, sizeof(list) - (size_t)at, "%s%s",
					       at ? ", " : "", want[w]);
		return coloc_err_set(err, -EINVAL,
				     "%s:1: the header has no column '%s' (want %s, tab-separated)",
				     path, want[k], list);
	}
	return 0;
}

int sim_tsv_load(const char *path, const char *const *want, int nr_want, sim_tsv_row_fn row,
		 void *ctx, struct coloc_err *err)
{
	int col[SIM_TSV_MAX_COLS], lineno = 0, ret = 0;
	char line[TSV_LINE_MAX], *f[32];
	FILE *in;

	if (nr_want < 1 || nr_want > SIM_TSV_MAX_COLS)
		return coloc_err_set(err, -EINVAL, "%s: 1 to %d columns wanted, not %d", path,
				     SIM_TSV_MAX_COLS, nr_want);
	in = fopen(path, "r");
	if (!in)
		return coloc_err_set(err, -errno, "%s: %m", path);
	while (!ret && fgets(line, sizeof(line), in)) {
		int n = split_tabs(line, f, 32);

		if (!lineno++)
			ret = header_columns(path, f, n, want, nr_want, col, err);
		else if (*f[0] || n != 1)
			ret = row(ctx, f, n, col, path, lineno, err);
	}
	if (!ret && !lineno)
		ret = coloc_err_set(err, -EINVAL, "%s: empty, not even a header", path);
	fclose(in);
	return ret;
}

static int qps_row(void *ctx, char **f, int n, const int *col, const char *path, int lineno,
		   struct coloc_err *err)
{
	double qps, p99;
	int ret;

	/* NA: bench-qos could not measure that policy on that mix (coloc-load failed) */
	if (n > col[2] && !strcmp(f[col[2]], "NA"))
		return 0;
	if (n <= col[0] || n <= col[1] || n <= col[2] || n <= col[3] ||
	    parse_number(f[col[2]], false, &qps) || parse_number(f[col[3]], true, &p99))
		return coloc_err_set(err, -EINVAL,
				     "%s:%d: want a mix, a policy and two numbers >= 0 (the "
				     "second may be inf; NA QoS-QPS skips the row) in the "
				     "header's columns",
				     path, lineno);
	ret = sim_qps_table_add(ctx, f[col[0]], f[col[1]], qps, p99, err);
	if (ret) {
		coloc_err_prefix(err, "%s:%d", path, lineno);
		return ret;
	}
	/* bench-qos --repeats: each search's QoS-QPS, comma-separated; their range */
	if (col[4] >= 0 && n > col[4] && strcmp(f[col[4]], "NA")) {
		struct sim_qps_table *t = ctx;
		struct sim_qps_cell *c = &t->cell[t->nr - 1];
		char *s = f[col[4]], *end;

		c->qps_lo = INFINITY;
		c->qps_hi = 0;
		for (;;) {
			double v = strtod(s, &end);

			if (end == s || !(v >= 0) || !isfinite(v) || (*end && *end != ','))
				return coloc_err_set(err, -EINVAL,
						     "%s:%d: searches: want QoS-QPS figures "
						     "separated by commas, not '%s'",
						     path, lineno, f[col[4]]);
			c->qps_lo = fmin(c->qps_lo, v);
			c->qps_hi = fmax(c->qps_hi, v);
			if (!*end)
				break;
			s = end + 1;
		}
	}
	return 0;
}

int sim_qps_table_load_tsv(const char *path, struct sim_qps_table *t, struct coloc_err *err)
{
	/* searches: optional, '?' (bench-qos before --repeats has none) */
	static const char *const want[] = { "mix", "policy", "qos_qps", "p99_over_solo",
					    "?searches" };
	int ret;

	*t = (struct sim_qps_table){ 0 };
	ret = sim_tsv_load(path, want, 5, qps_row, t, err);
	if (ret)
		sim_qps_table_free(t);
	return ret;
}

const struct sim_served_tenant *sim_served_find(const struct sim_served *s, const char *mix,
						const char *tenant)
{
	for (int i = 0; i < s->nr; i++)
		if (!strcmp(s->t[i].mix, mix) && !strcmp(s->t[i].tenant, tenant))
			return &s->t[i];
	return NULL;
}

void sim_served_free(struct sim_served *s)
{
	free(s->t);
	*s = (struct sim_served){ 0 };
}

static int served_add(struct sim_served *s, const char *mix, const char *tenant, double solo,
		      double qos, struct coloc_err *err)
{
	const struct sim_served_tenant *old = sim_served_find(s, mix, tenant);
	struct sim_served_tenant *t;

	if (old) {
		if (old->solo_ms != solo || old->qos_ms != qos)
			return coloc_err_set(err, -EINVAL,
					     "mix %s, tenant %s: solo_ms %g and qos_ms %g here, "
					     "%g and %g before; one run's file has one of each",
					     mix, tenant, solo, qos, old->solo_ms, old->qos_ms);
		return 0;
	}
	if (strlen(mix) >= sizeof(t->mix) || strlen(tenant) >= sizeof(t->tenant))
		return coloc_err_set(err, -EINVAL, "mix '%s' or tenant '%s': name too long", mix,
				     tenant);
	if (s->nr == s->cap) {
		int cap = s->cap ? 2 * s->cap : 32;

		t = realloc(s->t, (size_t)cap * sizeof(*t));
		if (!t)
			return coloc_err_set(err, -ENOMEM, "out of memory");
		s->t = t;
		s->cap = cap;
	}
	t = &s->t[s->nr++];
	snprintf(t->mix, sizeof(t->mix), "%s", mix);
	snprintf(t->tenant, sizeof(t->tenant), "%s", tenant);
	t->solo_ms = solo;
	t->qos_ms = qos;
	return 0;
}

static int served_row(void *ctx, char **f, int n, const int *col, const char *path, int lineno,
		      struct coloc_err *err)
{
	double solo, qos;
	int ret;

	if (n <= col[0] || n <= col[1] || n <= col[2] || n <= col[3] ||
	    parse_number(f[col[2]], false, &solo) || parse_number(f[col[3]], false, &qos) ||
	    !(solo > 0) || !(qos > 0))
		return coloc_err_set(err, -EINVAL,
				     "%s:%d: want a mix, a tenant and two numbers > 0 "
				     "(solo_ms, qos_ms) in the header's columns",
				     path, lineno);
	ret = served_add(ctx, f[col[0]], f[col[1]], solo, qos, err);
	if (ret)
		coloc_err_prefix(err, "%s:%d", path, lineno);
	return ret;
}

int sim_served_load_tsv(const char *path, struct sim_served *s, struct coloc_err *err)
{
	static const char *const want[] = { "mix", "tenant", "solo_ms", "qos_ms" };
	int ret;

	*s = (struct sim_served){ 0 };
	ret = sim_tsv_load(path, want, 4, served_row, s, err);
	if (ret)
		sim_served_free(s);
	return ret;
}

/* The length of name without its replica tag (":TAG", TAG of a-z and 0-9); -1 for a bad tag. */
static int untagged_len(const char *name)
{
	const char *colon = strchr(name, ':');

	if (!colon)
		return (int)strlen(name);
	if (!colon[1] ||
	    strspn(colon + 1, "abcdefghijklmnopqrstuvwxyz0123456789") != strlen(colon + 1))
		return -1;
	return (int)(colon - name);
}

int sim_cell_parse(const char *name, const struct policy_entry **entry, int *executors,
		   struct coloc_err *err)
{
	int len = untagged_len(name);
	char cell[64], *at;
	long n = 0;

	if (len < 0)
		return coloc_err_set(err, -EINVAL,
				     "'%s': want POLICY or POLICY@N, then maybe :TAG (a replica; "
				     "a-z, 0-9)",
				     name);
	if (len >= (int)sizeof(cell))
		return coloc_err_set(err, -ENOENT, "no policy named '%.*s'", len, name);
	snprintf(cell, sizeof(cell), "%.*s", len, name);
	at = strchr(cell, '@');
	if (at) {
		*at = '\0';
		if (cli_parse_long(at + 1, 1, SIM_MAX_EXECUTORS, &n))
			return coloc_err_set(err, -EINVAL,
					     "'%s': want POLICY@N, N executors from 1 to %d", name,
					     SIM_MAX_EXECUTORS);
	}
	*entry = policy_find(cell);
	if (!*entry)
		return coloc_err_set(err, -ENOENT, "no policy named '%s'", cell);
	*executors = (int)n;
	return 0;
}

int sim_qps_table_split_replicas(const struct sim_qps_table *measured, struct sim_qps_table *cells,
				 struct sim_qps_table *replicas, struct coloc_err *err)
{
	int ret = 0;

	*cells = *replicas = (struct sim_qps_table){ 0 };
	for (int i = 0; i < measured->nr && !ret; i++) {
		const struct sim_qps_cell *r = &measured->cell[i], *c;
		int len = untagged_len(r->policy);
		char name[sizeof(r->policy)];

		if (len < 0 || !r->policy[len])
			continue;
		snprintf(name, sizeof(name), "%.*s", len, r->policy);
		c = sim_qps_table_find(measured, r->mix, name);
		if (!c)
			continue;
		ret = sim_qps_table_add(cells, c->mix, name, c->qps, c->p99_over_solo, err) ?:
			      sim_qps_table_add(replicas, r->mix, name, r->qps, r->p99_over_solo,
						err);
		if (ret) {
			coloc_err_prefix(err, "mix %s, cell %s", r->mix, r->policy);
			break;
		}
		cells->cell[cells->nr - 1].qps_lo = c->qps_lo;
		cells->cell[cells->nr - 1].qps_hi = c->qps_hi;
		replicas->cell[replicas->nr - 1].qps_lo = r->qps_lo;
		replicas->cell[replicas->nr - 1].qps_hi = r->qps_hi;
	}
	if (ret) {
		sim_qps_table_free(cells);
		sim_qps_table_free(replicas);
	}
	return ret;
}

/* -1, 0 or 1 as a is below, equal to or above b. */
static int order(double a, double b)
{
	return (a > b) - (a < b);
}

int sim_fidelity_compare(const struct sim_qps_table *sim, const struct sim_qps_table *measured,
			 double tolerance, struct sim_fidelity *f, struct coloc_err *err)
{
	*f = (struct sim_fidelity){ 0 };
	f->row = calloc((size_t)(sim->nr ? sim->nr : 1), sizeof(*f->row));
	f->mix = calloc((size_t)(sim->nr ? sim->nr : 1), sizeof(*f->mix));
	if (!f->row || !f->mix) {
		sim_fidelity_free(f);
		return coloc_err_set(err, -ENOMEM, "out of memory");
	}
	for (int i = 0; i < sim->nr; i++) {
		const struct sim_qps_cell *s = &sim->cell[i];
		const struct sim_qps_cell *m = sim_qps_table_find(measured, s->mix, s->policy);
		struct sim_fidelity_row *r = &f->row[f->nr_rows++];
		struct sim_fidelity_mix *fm = NULL;

		r->sim = s;
		r->measured = m;
		if (m) {
			r->in_range = m->qps >= s->qps_lo && m->qps <= s->qps_hi;
			f->nr_in_range += r->in_range;
			r->ranges_meet = m->qps_lo <= s->qps_hi && s->qps_lo <= m->qps_hi;
			f->nr_ranges_meet += r->ranges_meet;
		}
		if (m && m->qps > 0) {
			r->ratio = s->qps / m->qps;
			r->within = fabs(r->ratio - 1.0) <= tolerance;
			f->nr_compared++;
			f->nr_within += r->within;
		} else if (m) {
			/* nothing passes in the measurement: only nothing in the simulation matches */
			r->within = s->qps == 0;
			f->nr_compared++;
			f->nr_within += r->within;
		}
		for (int k = 0; k < f->nr_mixes; k++)
			if (!strcmp(f->mix[k].mix, s->mix))
				fm = &f->mix[k];
		if (!fm) {
			fm = &f->mix[f->nr_mixes++];
			snprintf(fm->mix, sizeof(fm->mix), "%s", s->mix);
		}
		if (!m)
			continue;
		/* each pair of compared policies of the mix, once */
		for (int k = 0; k < i; k++) {
			const struct sim_qps_cell *s2 = &sim->cell[k], *m2;

			if (strcmp(s2->mix, s->mix))
				continue;
			m2 = sim_qps_table_find(measured, s2->mix, s2->policy);
			if (!m2)
				continue;
			fm->pairs++;
			if (order(s->qps, s2->qps) * order(m->qps, m2->qps) < 0)
				fm->discordant++;
		}
	}
	for (int k = 0; k < f->nr_mixes; k++) {
		f->mix[k].same_ranking = f->mix[k].pairs > 0 && !f->mix[k].discordant;
		f->nr_mixes_same += f->mix[k].same_ranking;
	}
	return 0;
}

void sim_fidelity_free(struct sim_fidelity *f)
{
	free(f->row);
	free(f->mix);
	*f = (struct sim_fidelity){ 0 };
}
