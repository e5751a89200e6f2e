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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "coloc/limits.h"
#include "error.h"
#include "model.h"

#define EXEC_MAX_CPUS COLOC_MAX_CPUS
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
struct exec_lane;
struct exec_query;

struct exec_block_stats {
	uint64_t latency_ns; /* wall time of the whole block */
	uint64_t switch_ns; /* of which: re-pinning the team to a new core set */
	uint64_t input_ns; /* of which: the staged inputs' copy (exec_query_stage_inputs) */
};

/* One input's bytes into a query's activations (exec_query_stage_inputs). */
struct exec_input_copy {
	void *dst; /* exec_query_input()'s */
	const void *src;
	size_t bytes;
};

/* Returns NULL with the reason in err (which may be NULL) on failure. */
struct exec_model *exec_model_load(const struct model *m, const struct exec_options *opts,
				   struct coloc_err *err);
void exec_model_free(struct exec_model *em);

const struct model *exec_model_graph(const struct exec_model *em);
/* Kernel versions of a layer: 1 for layers with a single implementation. */
int exec_layer_nr_versions(const struct exec_model *em, int layer);
/* Stable name of version v of a layer, e.g. "jit-blocked", "gemm-nhwc". */
const char *exec_layer_version_name(const struct exec_model *em, int layer, int v);
/* The index of the version of layer `layer` named `name`, or -1 where it has none. */
int exec_layer_version_index(const struct exec_model *em, int layer, const char *name);
/* oneDNN implementation string of version v at the given core count. */
const char *exec_layer_impl(const struct exec_model *em, int layer, int v, int nr_cores);
/*
 * Bytes of weights, scratchpads, plans and oneDNN objects the loaded model
 * holds (an account, not a measurement: oneDNN's JIT code is not included).
 */
size_t exec_model_resident_bytes(const struct exec_model *em);

/*
 * A lane: what a thread needs to run blocks of em while other threads run
 * blocks of em on other lanes, sharing its weights and primitives (streams,
 * scratchpads and the memory objects bound per run are the lane's). The
 * model has a lane of its own, exec_query_new's. Free a lane's queries
 * before it, and lanes before the model. NULL with the reason in err.
 */
struct exec_lane *exec_lane_new(struct exec_model *em, struct coloc_err *err);
void exec_lane_free(struct exec_lane *lane);

/*
 * A query's activations; reusable for the next query after exec_query_reset().
 * Its blocks run on the model's own lane, or on lane.
 */
struct exec_query *exec_query_new(struct exec_model *em);
struct exec_query *exec_lane_query_new(struct exec_lane *lane);
/*
 * A query that keeps a layer's output only while a later layer reads it
 * (its arena planned by liveness: docs/design/lanes.md), on lane (NULL:
 * the model's own). Its blocks must follow each other: one from layer
 * first > 0 runs only where its last block ended (else -ENODATA), and
 * exec_query_read_output reads the inputs and the model's outputs (the
 * layers no layer reads) only (else -ENODATA).
 */
struct exec_query *exec_query_new_live(struct exec_model *em, struct exec_lane *lane);
void exec_query_free(struct exec_query *q);
void exec_query_reset(struct exec_query *q);
/* Where to write the input of input layer `layer`: dense fp32 in logical order. */
float *exec_query_input(struct exec_query *q, int layer);
/*
 * Has q's next block copy its inputs first, on its own team once placed on
 * its cores (stats->input_ns), instead of the caller on one core before it:
 * the threads share the copy and are awake for the first layer. copies[nr]
 * stay the caller's and must live until that block has started.
 */
void exec_query_stage_inputs(struct exec_query *q, const struct exec_input_copy *copies, int nr);
/* Copies layer's output (computed by a block already run) to dst in dense logical order. */
int exec_query_read_output(const struct exec_query *q, int layer, float *dst, size_t nr_elems);

/*
 * Runs layers [first, last) of q with versions[i - first] for layer i
 * (NULL: version 0 everywhere) on cores (nr >= 1, a subset of the model's
 * cpus). Returns 0 or a negative errno. Primitives exist for the counts
 * exec_model_core_counts() lists; on n cores the block runs on the first k
 * of them, k the largest such count <= n. Where the calling thread's team
 * is pinned is remembered per calling thread, so re-pinning happens only
 * when the core set changes. The block runs on q's lane: -EBUSY while
 * another thread runs a block on it; blocks on different lanes run at once.
 */
int exec_run_block(struct exec_model *em, struct exec_query *q, int first, int last,
		   const int *versions, const struct exec_cpuset *cores,
		   struct exec_block_stats *stats);

/* How a block's OpenMP team is placed on its cores. */
enum exec_team_placement {
	EXEC_TEAM_PINNED, /* team thread i alone on cores->cpus[i] (exec_run_block) */
	/*
	 * Every team thread may run on any of the cores and the kernel places
	 * it, as for an unmodified oneDNN program: for cores shared with other
	 * processes' blocks (colocd's os policy).
	 */
	EXEC_TEAM_SHARED,
};

/* exec_run_block with the team placed as given. */
int exec_run_block_placed(struct exec_model *em, struct exec_query *q, int first, int last,
			  const int *versions, const struct exec_cpuset *cores,
			  enum exec_team_placement placement, struct exec_block_stats *stats);

/*
 * Waits until *word differs from seen and returns its new value, with the
 * calling thread's OpenMP team parked: the caller and every thread of the
 * team of the last block it ran sleep in FUTEX_WAIT on word (a shared
 * futex: the waker may be another process, which should wake all
 * waiters), the first awake wakes the rest. So between blocks no team
 * thread spins (GOMP_SPINCOUNT applies only within a block, between its
 * parallel regions), and the team is awake when the next block's command
 * lands instead of being woken one parallel region later. A lane taking
 * turns (exec_team_turns_join) also wakes when another lane asks for its
 * team, ends it and sleeps on.
 * docs/design/serving-path.md says why.
 */
uint32_t exec_team_wait(uint32_t *word, uint32_t seen);

struct coloc_shm_ready;
/*
 * exec_team_wait on a lane's doorbell (word: its cmd.seq), with colocd's
 * early ring (ready, coloc/shm.h): a thread of the team on a core it names
 * for the command after seen spins on word, at most
 * COLOC_SHM_READY_SPIN_NS, instead of sleeping on until the command.
 */
uint32_t exec_team_wait_ready(uint32_t *word, uint32_t seen, const struct coloc_shm_ready *ready);

/*
 * Makes the calling thread a lane that takes turns at OpenMP teams with the
 * other lanes of the process that joined (exec_team_turns.c): libgomp
 * throttles every team's spin once the process's pool threads exceed the
 * CPUs it started on (nr_cpus, the cores the lanes' blocks use, at most
 * that). The lane keeps its team between blocks, parked in exec_team_wait
 * on doorbell, until another lane's block needs its threads to stay within
 * nr_cpus: then that block asks it (a flag and a wake on doorbell) and
 * waits until its team has ended. Ends the thread's team so far; teams are
 * as large as their block from then on. 0, -EINVAL, -EALREADY (joined),
 * -ENOSPC (64 lanes).
 */
int exec_team_turns_join(uint32_t *doorbell, int nr_cpus);

/* Ends the calling lane's team and its part in the turns (before its thread ends). */
void exec_team_turns_leave(void);

/* Blocks that stopped waiting for the others' teams to end (a lane slower than 50 ms). */
unsigned long exec_team_turns_overruns(void);

/*
 * Ends the calling thread's OpenMP team (its pool threads exit) and, from
 * then on, makes each block's team as large as the block's cores, no
 * larger. For threads that share a process with other lanes: libgomp
 * counts every pool thread of the process, and once that count exceeds
 * the CPUs it was started on, every team waits between parallel regions
 * with a spin of 100 instead of GOMP_SPINCOUNT, i.e. asleep at nearly
 * every layer (docs/measurements/lanes.md). 0, or -EBUSY inside a parallel region.
 */
int exec_team_release(void);

/*
 * Additions for tests, tools and benchmarks.
 */

/*
 * The raw parameters exec_model_load generates for a layer from the model's
 * seed, before batch-norm folding, in logical layouts: conv weights
 * [OC][IC/groups][kh][kw], fc weights [K][N], layer_norm gamma [D] (in
 * weights) and beta [D] (in bias), embed table [vocab][dim]. Pointers not
 * used by the layer are NULL. Lets a reference implementation recompute
 * a layer independently of oneDNN.
 */
struct exec_layer_params {
	float *weights;
	size_t nr_weights;
	float *bias;
	size_t nr_bias;
	float *bn_gamma, *bn_beta, *bn_mean, *bn_var; /* [OC], conv with batch_norm */
	float bn_eps;
};

/* Returns 0, or -EINVAL (bad layer) / -ENOMEM; free with exec_layer_params_free(). */
int exec_layer_params_generate(const struct model *m, int layer, struct exec_layer_params *p);
void exec_layer_params_free(struct exec_layer_params *p);

/* The batch-norm epsilon of generated and file parameters. */
#define EXEC_BN_EPS 1e-5f

/*
 * Weights files (format in models/WEIGHTS.md): a model's raw parameters as
 * exec_layer_params_generate() lays them out, stored instead of generated.
 * Little-endian: "COLOCWT1", u32 count of layers with parameters, then per
 * such layer by increasing index: u32 layer index, u32 tensor count, and
 * each tensor (weights, bias, bn gamma, beta, mean, var: those the layer
 * has) as u64 element count and that many fp32 values.
 *
 * exec_weights_open() checks the whole file against the model (sizes before
 * any allocation, every value finite) and returns NULL with "PATH: byte N:
 * what is wrong" in err on any mismatch.
 */
struct exec_weights_file;
struct exec_weights_file *exec_weights_open(const struct model *m, const char *path,
					    struct coloc_err *err);
/* Layer's parameters from the file (all NULL for a layer without any); 0 or -errno. */
int exec_weights_read_layer(struct exec_weights_file *wf, int layer, struct exec_layer_params *p,
			    struct coloc_err *err);
void exec_weights_close(struct exec_weights_file *wf);
/* Writes m's deterministic weights, generated as if the model's seed were seed. 0 or -errno. */
int exec_weights_save(const struct model *m, const char *path, uint32_t seed,
		      struct coloc_err *err);

/*
 * The baseline: one version per layer, oneDNN's default (first)
 * implementation with every layout left to oneDNN (format_tag_any) and its
 * own weight copies. Benchmarks measure the versions against it.
 */
struct exec_model *exec_model_load_default(const struct model *m, const struct exec_options *opts,
					   struct coloc_err *err);
/* oneDNN primitives created by this model (all at load; constant afterwards). */
uint64_t exec_model_nr_primitives(const struct exec_model *em);
/* Writes every input layer of q: token ids below the vocabulary for embeddings, else [-1, 1). */
void exec_query_fill_inputs(struct exec_query *q, const struct model *m, uint32_t seed);
/* Median latency of layers [first, last) over reps runs. 0 or -errno. */
int exec_measure_block(struct exec_model *em, struct exec_query *q, int first, int last,
		       const int *versions, const struct exec_cpuset *cores, int reps,
		       uint64_t *median_ns);
/*
 * The fastest version of every layer on these cores, each layer run alone
 * reps times (median); versions[] and (if not NULL) layer_ns[] get one entry
 * per layer. Runs the whole model once first.
 */
int exec_pick_fastest(struct exec_model *em, struct exec_query *q, const struct exec_cpuset *cores,
		      int reps, int *versions, uint64_t *layer_ns);
/*
 * The same, each layer timed in context as coloc-profile times it: on the
 * live query lq (exec_query_new_live, its inputs set), in reps rounds of
 * passes through the whole model, every version of a layer in a pass of its
 * own, so its weights and inputs are where a served query leaves them.
 */
int exec_pick_fastest_live(struct exec_model *em, struct exec_query *lq,
			   const struct exec_cpuset *cores, int reps, int *versions,
			   uint64_t *layer_ns);
/* Median of n values (sorts v). */
uint64_t exec_median_u64(uint64_t *v, int n);
/* Whether an OS CPU id is online (per /sys). */
bool exec_cpu_online(int cpu);
/* Parses a cpulist such as "0-3,6"; every CPU must be online. 0 or -errno with a message. */
int exec_cpuset_parse(const char *text, struct exec_cpuset *set, struct coloc_err *err);
/*
 * A live query's arena (exec_arena.c): each buffer lives from layer lo to
 * layer hi (inclusive; nr_layers: to the end), and exec_arena_pack places
 * them largest first (ties: lower index first), each at the lowest offset
 * clear of every placed buffer alive at the same time, in O(n log n) plus
 * the overlaps it finds; past 64 overlaps per buffer (a hostile model of
 * many buffers alive at once) every buffer gets bytes of its own instead.
 * offsets[] gets each buffer's; returns the arena's size, or -ENOMEM.
 */
struct exec_live_buf {
	int lo, hi;
	size_t bytes;
};
ssize_t exec_arena_pack(const struct exec_live_buf *bufs, int n, size_t *offsets);
/*
 * A loaded model's buffers as its arena was planned (one per buffer the
 * layers' outputs share, in layer order) and their offsets; bufs and
 * offsets hold nr_layers entries. Returns their count or -errno.
 */
int exec_arena_bufs(const struct exec_model *em, struct exec_live_buf *bufs, size_t *offsets);
/* Core counts primitives were built for; a block on n cores uses the largest <= n. */
int exec_model_core_counts(const struct exec_model *em, int *counts, int max);

#endif /* COLOC_EXECUTOR_H */
