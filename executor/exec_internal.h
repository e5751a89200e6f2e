/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The executor's private state, shared by exec_load.c and the files it
 * builds with (exec_build.h: weights, versions and every oneDNN primitive,
 * built once at load), exec_run.c (queries, pinning, running a block) and
 * exec_weights.c (the deterministic weight generator).
 *
 * A layer has up to EXEC_MAX_VERSIONS versions; each version has one plan per
 * core-count slot (the core counts primitives are built for). A plan is a
 * list of steps executed in order: reorders that adapt inputs to the layout
 * the main primitive wants, the main primitive (or a split group: one
 * single-thread primitive per work item, run on the team in parallel), and a
 * reorder from the primitive's layout to the layer's canonical output layout.
 * Steps name their buffers symbolically (a layer's output, the query's
 * temporary arena, a fixed weight buffer, the thread's scratchpad); the
 * pointers are bound when the step runs.
 */
#ifndef COLOC_EXEC_INTERNAL_H
#define COLOC_EXEC_INTERNAL_H

#include <oneapi/dnnl/dnnl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "executor.h"

#define EXEC_MAX_ARGS 10
#define EXEC_MAX_STEPS 20
#define EXEC_MAX_SLOTS 24
#define EXEC_IMPL_LEN 96
/*
 * Versions kept per layer: the first candidates that run differently on
 * this CPU (so fewer where the rest resolve to a version already kept).
 */
#define EXEC_VERSIONS_KEPT 3

enum exec_buf_kind {
	EXEC_BUF_FIXED, /* handle set at load (weights, bias) */
	EXEC_BUF_OUT, /* output of layer `index` */
	EXEC_BUF_TMP, /* the query's temporary arena */
	EXEC_BUF_SCRATCHPAD, /* oneDNN scratchpad of the running thread */
};

struct exec_buf {
	enum exec_buf_kind kind;
	int index;
	size_t offset;
	/* a step's argument: its memory object's index in exec_owned.mems (exec_lane.c) */
	int mem;
};

struct exec_col2im;

struct exec_step {
	dnnl_primitive_t prim; /* NULL for a split group, the embedding lookup or col2im */
	int nr_args;
	dnnl_exec_arg_t args[EXEC_MAX_ARGS];
	struct exec_buf bufs[EXEC_MAX_ARGS];
	/* Split group: items run in parallel, item i on team thread i % nr_threads. */
	int nr_items;
	struct exec_step *items;
	/* Embedding lookup (plain C): ids from `ids`, rows of `table`, into `dst`. */
	bool embed;
	struct exec_buf ids, dst;
	const float *table;
	int64_t nr_ids, vocab, dim;
	/* A deconv's col2im (plain C, exec_col2im.c), parallel over output rows. */
	const struct exec_col2im *col2im;
	/* Swish in place over dst's first swish_elems floats (plain C, exec_swish.c). */
	int64_t swish_elems;
};

struct exec_plan {
	int nr_steps;
	struct exec_step *steps; /* exactly nr_steps: plans are many (layer x version x slot) */
	size_t tmp_bytes;
	char impl[EXEC_IMPL_LEN];
};

struct exec_layer {
	dnnl_memory_desc_t out_md; /* canonical layout of this layer's output */
	int alias_of; /* -1, or the layer whose buffer this output shares (free reshape) */
	/* A residual add fused into a conv (exec_fuse.c): */
	const struct model_layer *sum_then; /* conv: the add it computes, its act after the sum */
	int fused_into; /* add: the conv that computes it, else -1 */
	int nr_versions;
	char version_names[EXEC_MAX_VERSIONS][EXEC_VERSION_NAME_LEN];
	struct exec_plan *plans[EXEC_MAX_VERSIONS]; /* [slot] */
	/* Weight buffers in oneDNN layouts, shared by the versions that can. */
	int nr_weight_bufs, cap_weight_bufs;
	void **weight_bufs;
	size_t *weight_bytes;
	/* While the layer is built (freed after): each buffer's layout and logical source. */
	dnnl_memory_desc_t *weight_mds;
	const void **weight_srcs;
};

/* Everything oneDNN allocated for the model, released by exec_model_free(). */
struct exec_owned {
	dnnl_primitive_t *prims;
	size_t nr_prims, cap_prims;
	dnnl_memory_t *mems;
	size_t nr_mems, cap_mems;
	struct exec_step **item_arrays;
	size_t nr_item_arrays, cap_item_arrays;
	struct exec_col2im **col2ims;
	size_t nr_col2ims, cap_col2ims;
};

/*
 * What one thread needs to run blocks of a model while other threads run
 * blocks of the same model (exec_lane.c): a stream and a scratchpad per team
 * thread, and its own memory objects for every argument bound per run
 * (mems[i] stands for exec_owned.mems[i]; NULL in the model's own lane,
 * which binds the steps' memory objects themselves).
 */
struct exec_lane {
	struct exec_model *em;
	dnnl_stream_t *streams; /* one per team thread */
	void **scratchpads; /* one per team thread */
	dnnl_memory_t *mems;
	size_t nr_mems;
	atomic_bool running; /* a block runs on this lane */
};

struct exec_model {
	const struct model *graph;
	dnnl_engine_t engine;
	struct exec_cpuset cpus;
	int nr_slots;
	int slot_cores[EXEC_MAX_SLOTS]; /* ascending */
	int max_threads;
	dnnl_stream_t *streams; /* one per team thread */
	void **scratchpads; /* one per team thread */
	size_t scratchpad_bytes;
	struct exec_layer *layers;
	size_t tmp_bytes; /* largest plan arena */
	size_t out_bytes; /* all layer outputs of one query */
	size_t *out_offsets; /* per layer, into the query's output arena */
	/* A live query's arena (exec_arena.c): outputs share bytes by liveness. */
	size_t live_bytes;
	size_t *live_offsets; /* per layer */
	bool *live_kept; /* per layer: its output is still there after the last layer */
	size_t resident_bytes;
	uint64_t nr_primitives; /* created so far; never grows after load */
	bool default_only;
	struct exec_lane own_lane; /* exec_query_new's: streams, scratchpads above */
	struct exec_owned owned;
};

struct exec_query {
	struct exec_model *em;
	struct exec_lane *lane; /* where its blocks run */
	void *outs; /* arena of the layer outputs */
	const size_t *offsets; /* per layer into outs: out_offsets, or live_offsets */
	bool live; /* exec_query_new_live: blocks must follow each other */
	int next_layer; /* a live query's: where its last block ended (0: not started) */
	void *tmp; /* arena for one layer's temporaries */
	const struct exec_input_copy *staged; /* its next block's input copies */
	int nr_staged;
};

/*
 * A deconv's col2im (exec_col2im.c): out[n][oy][ox][gi * ocg + o] = bias +
 * the sum over the taps (ky, kx) that land on (oy, ox) of
 * cols[gi][(n * ih + iy) * iw + ix][ky][kx][o], where oy = iy * sh - pt +
 * ky * dh (and the same in x). Each output row is one thread's: no two
 * threads add to the same element.
 */
struct exec_col2im {
	struct exec_buf cols, dst;
	const float *bias; /* [g * ocg], or NULL */
	int64_t n, ih, iw, oh, ow, g, ocg;
	int kh, kw, sh, sw, dh, dw, pt, pl;
};

/* FTZ and DAZ on the calling thread, and on those it makes from now on (exec_fp.c). */
void exec_fp_flush_denormals(void);
/* Plans a live query's arena (live_offsets, live_kept, live_bytes), at load. */
int exec_arena_plan(struct exec_model *em, struct coloc_err *err);
int exec_col2im_run(const struct exec_query *q, const struct exec_col2im *c, int nr_threads);
/* x * sigmoid(x) over x[0, n) in place, on a team of nr_threads (exec_swish.c) */
void exec_swish(float *x, int64_t n, int nr_threads);
int exec_swish_run(const struct exec_query *q, const struct exec_step *s, int nr_threads);
int exec_slot_for_cores(const struct exec_model *em, int nr_cores);
/* Threads in the team of the last block the calling thread ran; 0 before any. */
int exec_team_last_size(void);
/*
 * Lanes taking turns (exec_team_turns.c), for the calling thread, each a
 * no-op unless it joined: before a block of n team threads, reserve them
 * (ending the thread's own team first where another lane asked and it holds
 * more than n), and wait (at most EXEC_TEAM_TURN_WAIT_MS) until the
 * process's pool threads fit its CPUs; between commands, end the team if
 * another lane asked; the flag exec_team_wait's sleepers watch (NULL).
 */
#define EXEC_TEAM_TURN_WAIT_MS 50
void exec_team_turns_claim(int n);
void exec_team_turns_yield(void);
const atomic_uint *exec_team_turns_asked(void);
void *exec_buf_ptr(const struct exec_query *q, int tid, const struct exec_buf *b);

#endif /* COLOC_EXEC_INTERNAL_H */
