/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The executor's block-level API: load a model once (weights, and every
 * oneDNN primitive for every kernel version and core count, so nothing is
 * created on the query path), then run queries one layer block at a time:
 * layers [first, last) of a query, with a chosen kernel version per layer,
 * on a chosen set of cores, and get the block's latency back.
 *
 * No global state: everything lives in struct exec_model and struct
 * exec_query, so one process (later, one unprivileged process per tenant)
 * can hold several. The calling thread drives a block; its worker threads
 * (the OpenMP team oneDNN runs on) are pinned to the block's cores.
 */
#ifndef COLOC_EXECUTOR_H
#define COLOC_EXECUTOR_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

#define EXEC_MAX_CPUS 256
#define EXEC_MAX_VERSIONS 6
#define EXEC_VERSION_NAME_LEN 48

/* A set of OS CPU ids (as hwloc and sched_setaffinity number them). */
struct exec_cpuset {
	int nr;
	int cpus[EXEC_MAX_CPUS];
};

struct exec_options {
	struct exec_cpuset cpus; /* cores this model may ever run on; nr == 0: all online */
	const char *weights_path; /* NULL: deterministic random weights from the model's seed */
};

struct exec_model;
struct exec_query;

struct exec_block_stats {
	uint64_t latency_ns; /* wall time of the whole block */
	uint64_t switch_ns; /* of which: re-pinning the team to a new core set */
};

/* Returns NULL with a message in err on failure. */
struct exec_model *exec_model_load(const struct model *m, const struct exec_options *opts,
				   char *err, size_t err_len);
void exec_model_free(struct exec_model *em);

const struct model *exec_model_graph(const struct exec_model *em);
/* Kernel versions of a layer: 1 for layers with a single implementation. */
int exec_layer_nr_versions(const struct exec_model *em, int layer);
/* Stable name of version v of a layer, e.g. "jit-blocked", "gemm-nhwc". */
const char *exec_layer_version_name(const struct exec_model *em, int layer, int v);
/* oneDNN implementation string of version v at the given core count. */
const char *exec_layer_impl(const struct exec_model *em, int layer, int v, int nr_cores);
/* Bytes of weights, primitives and buffers the loaded model holds. */
size_t exec_model_resident_bytes(const struct exec_model *em);

/* A query's activations; reusable for the next query after exec_query_reset(). */
struct exec_query *exec_query_new(struct exec_model *em);
void exec_query_free(struct exec_query *q);
void exec_query_reset(struct exec_query *q);
/* Where to write the input of input layer `layer`: dense fp32 in logical order. */
float *exec_query_input(struct exec_query *q, int layer);
/* Copies layer's output (computed by a block already run) to dst in dense logical order. */
int exec_query_read_output(const struct exec_query *q, int layer, float *dst, size_t nr_elems);

/*
 * Runs layers [first, last) of q with versions[i - first] for layer i
 * (NULL: version 0 everywhere) on cores (nr >= 1, a subset of the model's
 * cpus). Returns 0 or a negative errno.
 */
int exec_run_block(struct exec_model *em, struct exec_query *q, int first, int last,
		   const int *versions, const struct exec_cpuset *cores,
		   struct exec_block_stats *stats);

#endif /* COLOC_EXECUTOR_H */
