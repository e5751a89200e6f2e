/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The serving path's parts in coloc-sim's executor model (parts.c): what
 * a simulated block and query spend beyond their table time, fitted on
 * colocd's breakdown of a model served alone. sim/README.md, "The serving
 * path's parts".
 */
#ifndef COLOC_SIM_PARTS_H
#define COLOC_SIM_PARTS_H

#include <stdbool.h>
#include <stdint.h>
#include "sim.h"

/*
 * The parts of colocd's breakdown (include/coloc/protocol.h) the executor
 * model spends, each fitted on a measured p50 and p95 (sim_part_fit):
 * per block, holding its cores, dispatch and notice (ns), copy (ns a byte:
 * the query's input bytes in its first block, its output bytes in its
 * last) and compute (a factor over the block's table time); per query,
 * after its last block and holding no core, reply (colocd) and hop (the
 * client's side of the trip). queued and decide come out of the run.
 */
enum sim_part_kind {
	SIM_PART_DISPATCH,
	SIM_PART_NOTICE,
	SIM_PART_COPY,
	SIM_PART_COMPUTE,
	SIM_PART_REPLY,
	SIM_PART_HOP,
	SIM_NR_PARTS,
};
/* their names in a parts file */
extern const char *const sim_part_names[SIM_NR_PARTS];

/* A part: median x exp(sigma x Z), Z standard normal. */
struct sim_part {
	double median, sigma;
};

/* median = p50, sigma such that the p95 is p95's; -EINVAL unless 0 <= p50 <= p95. */
int sim_part_fit(double p50, double p95, struct sim_part *part, struct coloc_err *err);
double sim_part_draw(const struct sim_part *part, struct coloc_rng *rng);

/* One tenant's parts; a part not given (its bit clear in given) costs nothing. */
struct sim_parts {
	unsigned int given; /* 1 << enum sim_part_kind */
	struct sim_part part[SIM_NR_PARTS];
	uint64_t in_bytes, out_bytes; /* one query's (model_io_layout) */
};

/* A block's dispatch + notice + copy, in ns; first / last: the query's first / last block. */
uint64_t sim_parts_block_ns(const struct sim_parts *p, bool first, bool last,
			    struct coloc_rng *rng);
/* A block's compute over its table time: 1 when not given. */
double sim_parts_compute_factor(const struct sim_parts *p, struct coloc_rng *rng);
/* A query's reply + hop, in ns. */
uint64_t sim_parts_query_ns(const struct sim_parts *p, struct coloc_rng *rng);

/*
 * A parts file: tab-separated, a header naming model, part, p50_ms and
 * p95_ms (any order, others ignored), then a row per model and part as
 * that model served alone measured it: per query, in ms; copy in ms per
 * MB (1e6 bytes) of its input and output. An optional table_ms column
 * gives, for compute, the table time of the queries measured (the
 * blocks the policy ran alone, as coloc-sim runs them; 0: the model's
 * solo latency on all cores). tools/bench-sim-latency.sh writes one from
 * colocctl status --json, coloc-load --json and coloc-sim alone.
 */
struct sim_parts_row {
	char model[64];
	int part; /* enum sim_part_kind */
	double p50_ms, p95_ms;
	double table_ms; /* compute: the table time of what was measured; 0: not given */
};

struct sim_parts_file {
	struct sim_parts_row *row;
	int nr, cap;
};

int sim_parts_file_load(const char *path, struct sim_parts_file *f, struct coloc_err *err);
void sim_parts_file_free(struct sim_parts_file *f);
/*
 * model's rows as its parts: compute divided by its table_ms, else by
 * solo_ms (the table's solo latency on all the cores), into a factor;
 * -ENOENT when the file has no row of model.
 */
int sim_parts_for_model(const struct sim_parts_file *f, const char *model, double solo_ms,
			uint64_t in_bytes, uint64_t out_bytes, struct sim_parts *p,
			struct coloc_err *err);
/*
 * One query's input and output bytes of a model spec as sim_table_load
 * takes it: 0 and 0 for VELTAIR's tables and scaled ones (no model file).
 */
int sim_model_io_bytes(const char *spec, const struct sim_table_dirs *dirs, uint64_t *in_bytes,
		       uint64_t *out_bytes, struct coloc_err *err);

#endif /* COLOC_SIM_PARTS_H */
