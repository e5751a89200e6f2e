// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving path's parts as the executor model spends them: colocd's
 * breakdown of a served query (include/coloc/protocol.h, "parts";
 * docs/design/serving-path.md section 1), each part fitted as a median
 * and a lognormal spread on its measured p50 and p95, read from a parts
 * file (tools/bench-sim-latency.sh writes one from a model served alone),
 * and drawn per block or per query from the tenant's own stream. queued
 * and decide are not among them: the simulation makes its own waits.
 * sim/README.md, "The serving path's parts", says what each stands for.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "fidelity.h"
#include "parts.h"

/* the standard normal's 95th percentile */
#define Z95 1.6448536269514722

const char *const sim_part_names[SIM_NR_PARTS] = { "dispatch", "notice", "copy",
						   "compute",  "reply",	 "hop" };

int sim_part_fit(double p50, double p95, struct sim_part *part, struct coloc_err *err)
{
	if (!(p50 >= 0) || !(p95 >= p50) || !isfinite(p95))
		return coloc_err_set(err, -EINVAL,
				     "a part's p50 %g and p95 %g: want 0 <= p50 <= p95, finite",
				     p50, p95);
	part->median = p50;
	part->sigma = p50 > 0 ? log(p95 / p50) / Z95 : 0;
	return 0;
}

double sim_part_draw(const struct sim_part *part, struct coloc_rng *rng)
{
	if (!part->sigma || !part->median)
		return part->median;
	return part->median * exp(part->sigma * sim_normal(rng));
}

uint64_t sim_parts_block_ns(const struct sim_parts *p, bool first, bool last,
			    struct coloc_rng *rng)
{
	double ns = sim_part_draw(&p->part[SIM_PART_DISPATCH], rng) +
		    sim_part_draw(&p->part[SIM_PART_NOTICE], rng);

	if (first && p->in_bytes)
		ns += (double)p->in_bytes * sim_part_draw(&p->part[SIM_PART_COPY], rng);
	if (last && p->out_bytes)
		ns += (double)p->out_bytes * sim_part_draw(&p->part[SIM_PART_COPY], rng);
	return (uint64_t)llround(ns);
}

double sim_parts_compute_factor(const struct sim_parts *p, struct coloc_rng *rng)
{
	if (!(p->given & (1u << SIM_PART_COMPUTE)))
		return 1.0;
	return sim_part_draw(&p->part[SIM_PART_COMPUTE], rng);
}

uint64_t sim_parts_query_ns(const struct sim_parts *p, struct coloc_rng *rng)
{
	return (uint64_t)llround(sim_part_draw(&p->part[SIM_PART_REPLY], rng) +
				 sim_part_draw(&p->part[SIM_PART_HOP], rng));
}

/* ---- the parts file --------------------------------------------------------- */

void sim_parts_file_free(struct sim_parts_file *f)
{
	free(f->row);
	*f = (struct sim_parts_file){ 0 };
}

static int part_index(const char *name)
{
	for (int i = 0; i < SIM_NR_PARTS; i++)
		if (!strcmp(name, sim_part_names[i]))
			return i;
	return -1;
}

static int parts_row(void *ctx, char **f, int n, const int *col, const char *path, int lineno,
		     struct coloc_err *err)
{
	struct sim_parts_file *pf = ctx;
	struct sim_parts_row *r;
	double p50, p95, table = 0;
	int part;

	for (int k = 0; k < 4; k++)
		if (n <= col[k])
			return coloc_err_set(err, -EINVAL, "%s:%d: fewer columns than the header",
					     path, lineno);
	part = part_index(f[col[1]]);
	if (part < 0)
		return coloc_err_set(err, -EINVAL,
				     "%s:%d: unknown part '%s' (dispatch, notice, copy, compute, "
				     "reply or hop)",
				     path, lineno, f[col[1]]);
	if (cli_parse_double(f[col[2]], 0, DBL_MAX, &p50) ||
	    cli_parse_double(f[col[3]], 0, DBL_MAX, &p95) || p95 < p50 ||
	    (col[4] >= 0 && (n <= col[4] || cli_parse_double(f[col[4]], 0, DBL_MAX, &table))))
		return coloc_err_set(err, -EINVAL, "%s:%d: want 0 <= p50_ms <= p95_ms, table_ms >= 0",
				     path, lineno);
	if (!*f[col[0]] || strlen(f[col[0]]) >= sizeof(r->model))
		return coloc_err_set(err, -EINVAL, "%s:%d: a model name of 1 to %zu characters",
				     path, lineno, sizeof(r->model) - 1);
	for (int i = 0; i < pf->nr; i++)
		if (!strcmp(pf->row[i].model, f[col[0]]) && pf->row[i].part == part)
			return coloc_err_set(err, -EEXIST, "%s:%d: %s's %s given twice", path,
					     lineno, f[col[0]], f[col[1]]);
	if (pf->nr == pf->cap) {
		int cap = pf->cap ? 2 * pf->cap : 16;
		struct sim_parts_row *row = realloc(pf->row, (size_t)cap * sizeof(*row));

		if (!row)
			return coloc_err_set(err, -ENOMEM, "%s: out of memory", path);
		pf->row = row;
		pf->cap = cap;
	}
	r = &pf->row[pf->nr++];
	snprintf(r->model, sizeof(r->model), "%s", f[col[0]]);
	r->part = part;
	r->p50_ms = p50;
	r->p95_ms = p95;
	r->table_ms = table;
	return 0;
}

int sim_parts_file_load(const char *path, struct sim_parts_file *f, struct coloc_err *err)
{
	static const char *const want[] = { "model", "part", "p50_ms", "p95_ms", "?table_ms" };
	int ret;

	*f = (struct sim_parts_file){ 0 };
	ret = sim_tsv_load(path, want, 5, parts_row, f, err);
	if (ret)
		sim_parts_file_free(f);
	return ret;
}

int sim_parts_for_model(const struct sim_parts_file *f, const char *model, double solo_ms,
			uint64_t in_bytes, uint64_t out_bytes, struct sim_parts *p,
			struct coloc_err *err)
{
	*p = (struct sim_parts){ .in_bytes = in_bytes, .out_bytes = out_bytes };
	for (int i = 0; i < f->nr; i++) {
		const struct sim_parts_row *r = &f->row[i];
		/* ms to ns; copy: ms per MB (1e6 bytes) to ns per byte, the same number */
		double scale = 1e6;
		int ret;

		if (strcmp(r->model, model))
			continue;
		if (r->part == SIM_PART_COPY)
			scale = 1;
		else if (r->part == SIM_PART_COMPUTE) {
			/* ms to a factor over the table time the measurement ran */
			double table = r->table_ms > 0 ? r->table_ms : solo_ms;

			if (!(table > 0))
				return coloc_err_set(err, -EINVAL,
						     "%s: a compute part needs the table's solo "
						     "latency",
						     model);
			scale = 1.0 / table;
		}
		ret = sim_part_fit(r->p50_ms * scale, r->p95_ms * scale, &p->part[r->part], err);
		if (ret)
			return coloc_err_prefix(err, "%s's %s", model, sim_part_names[r->part]);
		p->given |= 1u << r->part;
	}
	if (!p->given)
		return coloc_err_set(err, -ENOENT, "no parts of %s in the parts file", model);
	return 0;
}
