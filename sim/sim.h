/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * coloc-sim's library: a discrete-event simulator that drives the policy
 * library (policy/) exactly as colocd does, on a simulated machine of many
 * cores. One file per job: event.c (the event heap), common/rng.h (the PRNG),
 * machine.c (cores, sockets, LLC domains -> struct policy_config),
 * workload.c (Poisson and trace arrivals), table_veltair.c (VELTAIR's CSV
 * tables -> struct policy_costs), table_profile.c (coloc's own profiles, as
 * colocd converts them), interference.c (the slowdown
 * model), run.c (the event loop around policy_decide), metrics.c
 * (percentiles, fraction within QoS), search.c (the QoS-QPS bisection),
 * exec_fit.c (the executor model fitted on colocd's block logs), parts.c
 * (the serving path's parts, parts.h) and fidelity.c and loads.c
 * (simulated against measured QoS-QPS, fidelity.h).
 * sim/README.md states what the numbers rest on.
 *
 * Simulated time is in nanoseconds from 0. Everything is deterministic for a
 * seed except the measured cost of policy_decide() (wall time of the calls).
 */
#ifndef COLOC_SIM_H
#define COLOC_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include "assign.h"
#include "coloc/shm.h"
#include "error.h"
#include "policy.h"
#include "rng.h"
#include "table.h"

/* The most executors coloc-sim gives a tenant (--executors, POLICY@N). */
#define SIM_MAX_EXECUTORS 64

/* ---- the event engine ---------------------------------------------------- */

/*
 * At equal times a completion comes before an arrival (the freed cores are
 * there for the newcomer, as when colocd reads both in one loop turn), and
 * events of one kind in the order they were pushed.
 */
enum sim_event_kind {
	SIM_EV_DONE = 0, /* a block finishes: arg is its slot, gen its generation */
	SIM_EV_ARRIVAL = 1, /* a query arrives: arg is its tenant */
};

struct sim_event {
	uint64_t time_ns;
	uint64_t seq; /* push order, the last tie-break */
	enum sim_event_kind kind;
	int arg;
	uint64_t gen; /* DONE: stale when the block was rescheduled since */
};

struct sim_heap {
	struct sim_event *ev;
	int nr, cap;
	uint64_t next_seq;
};

int sim_heap_init(struct sim_heap *h, int cap, struct coloc_err *err);
void sim_heap_free(struct sim_heap *h);
int sim_heap_push(struct sim_heap *h, uint64_t time_ns, enum sim_event_kind kind, int arg,
		  uint64_t gen, struct coloc_err *err);
/* The earliest event, removed; false when the heap is empty. */
bool sim_heap_pop(struct sim_heap *h, struct sim_event *ev);

/* ---- the machine ----------------------------------------------------------- */

struct sim_machine {
	int nr_cores; /* CPU ids 0 .. nr_cores - 1 */
	int nr_sockets; /* consecutive equal ranges of CPU ids */
	int llc_size; /* cores per LLC domain, consecutive ids, within a socket */
};

/* Fills cfg (online, llc[], socket[]; late as given). 0 or -EINVAL with err. */
int sim_machine_config(const struct sim_machine *m, enum policy_late late,
		       struct policy_config *cfg, struct coloc_err *err);

/* ---- model tables ----------------------------------------------------------- */

/* A table is a struct policy_table (policy/table.h), freed with policy_table_free(). */

/*
 * VELTAIR's tables: DIR/NAME.prof.csv (one line per layer, µs at 8, 16, ...
 * cores) and DIR/NAME.layers.csv (the layer shapes, for each layer's MACs).
 * NAME is matched without regard to case ("resnet50" finds ResNet50.*).
 * One version, one level (alone), used as they are.
 */
int sim_table_load_veltair(const char *dir, const char *name, struct policy_table *t,
			   struct coloc_err *err);
/*
 * coloc's own profile of the model file at model_path on this machine: the
 * cache file colocd would read (cache_dir NULL: profile_cache_dir(NULL),
 * as colocd), turned into a table by profile_table_build(), as colocd
 * does. -ENOENT with the coloc-profile command that makes it.
 */
int sim_table_load_profile(const char *model_path, const char *cache_dir, struct policy_table *t,
			   struct coloc_err *err);

/* Where tables come from. */
struct sim_table_dirs {
	const char *veltair; /* VELTAIR's CSV tables */
	const char *models; /* coloc's models/ (NAME.model) */
	const char *profiles; /* the profile cache; NULL: colocd's default */
};

/*
 * A table by spec: "veltair:NAME" (VELTAIR's, in dirs->veltair), a model
 * file path ("x/NAME.model", "x.onnx"), or a bare model NAME
 * (dirs->models/NAME.model), both with the profile colocd would use, or
 * "scaled:NAME" (that profile scaled to VELTAIR's machine, below).
 */
int sim_table_load(const char *spec, const struct sim_table_dirs *dirs, struct policy_table *t,
		   struct coloc_err *err);

/* ---- our tables on many cores (table_scaled.c; sim/README.md) ----------------- */

/*
 * Each of VELTAIR's layers fitted as t(k) = a + b / k + c k on its 8..64-core
 * cells (serial part, parallel part, a cost per core: the last makes a layer's
 * fastest core count finite); by the layer's time on one core (T1 = a + b + c),
 * classes of four times as long each, and a class's curve g(k) = s + (1 - s -
 * o) / k + o k relative to one core, s and o the medians of a / T1 and c / T1
 * over its layers. An empty class borrows its nearest neighbour's curve. Our
 * layer's class: its 1-core time over time_ratio (in VELTAIR's µs), so that a
 * pool or a concat (no MACs) is classed by the time it takes, as a conv is.
 */
#define SIM_SCALE_CLASSES 6
struct sim_scale_class {
	double max_work_us; /* upper edge of T1; the last class has none (INFINITY) */
	int nr_layers; /* VELTAIR's layers in it (both models) */
	double serial, per_core; /* s and o above */
};

struct sim_scaling {
	struct sim_scale_class cls[SIM_SCALE_CLASSES];
	/*
	 * Errors on VELTAIR's own cells, each layer anchored at its 8-core cell
	 * (t(k) = t(8) x g(k) / g(8), k = 16..64): the class curves fitted on
	 * both models (fit), and each model's layers by curves fitted on the
	 * other model's alone (cross); mean absolute percentage, fractions.
	 */
	double fit_mape, cross_mape;
	/*
	 * Our ResNet-50 on one core (version 0, alone) over VELTAIR's (the sum of
	 * its layers' T1). Scaled tables are divided by it: our models as
	 * VELTAIR's machine would run them.
	 */
	double time_ratio;
	/*
	 * Whole model at each of VELTAIR's core counts, scaled ours / theirs - 1:
	 * [0] ResNet-50 (the time ratio fitted on it), [1] GoogLeNet; by the
	 * curves fitted on both models (model_err), and by those of the other
	 * model alone (model_err_cross: GoogLeNet's then wholly held out).
	 */
	int nr_counts[2];
	int counts[2][POLICY_MAX_CORE_COUNTS];
	double model_err[2][POLICY_MAX_CORE_COUNTS];
	double model_err_cross[2][POLICY_MAX_CORE_COUNTS];
	/* our 2-core cells against g(2) x our 1-core cells: median ratio, cells compared */
	double two_core_ratio;
	int two_core_cells;
};

/*
 * Fits the class curves on VELTAIR's ResNet-50 and GoogLeNet tables in
 * dirs->veltair and the time ratio on our ResNet-50 profile (and GoogLeNet's,
 * for the held-out error). 0 or -errno with err filled.
 */
int sim_scaling_fit(const struct sim_table_dirs *dirs, struct sim_scaling *s,
		    struct coloc_err *err);
/* The same from tables in hand: theirs[] VELTAIR's (8.. cores), ours[] with a 1-core column. */
int sim_scaling_fit_tables(const struct policy_table theirs[2], const struct policy_table ours[2],
			   struct sim_scaling *s, struct coloc_err *err);
/* g(k) of the class of a layer of work_us on one of VELTAIR's cores: its time on k over on one. */
double sim_scaling_curve(const struct sim_scaling *s, double work_us, int k);
/*
 * ours (a profile's table with a 1-core column) on VELTAIR's core counts
 * 8, 16, .. 64: each cell (every version and level) its 1-core cell x the
 * layer's class curve / time_ratio. 0 or -errno with err filled.
 */
int sim_table_scale(const struct policy_table *ours, const struct sim_scaling *s,
		    struct policy_table *out, struct coloc_err *err);

/* ---- the interference model (sim/README.md: what it rests on) -------------- */

struct sim_interference {
	/*
	 * The whole model's slowdown when co-runners fill its LLC domains:
	 * fitted from measured pairs for our 2-core machine (~1.0), VELTAIR's
	 * 1.6 (an assumption) for many cores.
	 */
	double full_slowdown;
	/*
	 * The whole model's slowdown when other blocks run on every other core
	 * of its socket, past its LLC domains (the socket's memory bandwidth):
	 * coloc-sim's default is full_slowdown's value (sim/README.md says
	 * why); 0 or 1: none.
	 */
	double socket_slowdown;
};

#define SIM_DEFAULT_FULL_SLOWDOWN 1.6

/*
 * One layer at version and core index ci at level (as
 * sim_interference_slowdown() reads it), in ns: its level cells where the
 * table has them, its time alone times the level where not.
 */
double sim_interference_layer_ns(const struct policy_costs *m, int layer, int version, int ci,
				 double level);

/*
 * The factor by which layers [first, last) at versions and core index ci
 * run slower than alone, when other blocks occupy `llc_pressure` (0..1) of
 * the LLC domains the block runs in and `socket_pressure` (0..1) of the
 * other cores of its socket. Exactly 1.0 when both are 0. The level is
 * 1 + (full_slowdown - 1) * llc_pressure + (socket_slowdown - 1) *
 * socket_pressure; a table without level columns
 * (VELTAIR's) takes it as is, one with them (coloc's profiles) reads the
 * block's own version cells at the column position where the model's
 * level_slowdown equals it (policy_costs_level_pos), so each version slows
 * down as it was profiled to.
 */
double sim_interference_slowdown(const struct sim_interference *im, const struct policy_costs *m,
				 int first, int last, const uint8_t *versions, int ci,
				 double llc_pressure, double socket_pressure);

/* ---- the level the policy sees (level.c) ---------------------------------------- */

/* Where a simulated core's interference level comes from. */
enum sim_level_source {
	/*
	 * As colocd without a PMU: policy/level_estimate.h's estimate from the
	 * finished blocks' simulated times against their tables alone.
	 */
	SIM_LEVEL_BLOCKS,
	/*
	 * The interference model's slowdown of the block running there, 1.0
	 * when none: a perfect sensor, as colocd's PMU level model would be.
	 */
	SIM_LEVEL_MODEL,
};

/* The level estimate a run keeps: per tenant and per simulated core. */
struct sim_level {
	enum sim_level_source source;
	int nr_cores;
	struct policy_level_tenant tenant[POLICY_MAX_TENANTS];
	struct policy_level_core *core; /* [nr_cores] */
};

int sim_level_init(struct sim_level *l, enum sim_level_source source, int nr_cores,
		   struct coloc_err *err);
void sim_level_free(struct sim_level *l);
/*
 * Block d of its tenant took measured_ns (the executor's own time, as colocd
 * measures it), ending at now; alone: no other tenant's block was running
 * when it started. Evidence for the estimate (SIM_LEVEL_BLOCKS only).
 */
void sim_level_block(struct sim_level *l, const struct policy_decision *d, uint64_t measured_ns,
		     bool alone, uint64_t now);
/*
 * With SIM_LEVEL_BLOCKS, each core's slowdown signal in core_sig becomes its
 * estimated level as of now, and dom_sig the LLC domains' signals from the
 * cores' (policy_domain_signals), as colocd gives them to a round. Nothing
 * with SIM_LEVEL_MODEL: the run keeps the model's slowdown there.
 */
void sim_level_signals(const struct sim_level *l, const struct policy_config *cfg, uint64_t now,
		       struct policy_signal *core_sig, struct policy_signal *dom_sig);

/* ---- a tenant's executors and their slots, as colocd holds them (executors.c) -------- */

/*
 * colocd's executors as the simulator keeps them: each tenant's executors
 * and their COLOC_SHM_NR_SLOTS query slots, assigned by colocd's own rules
 * (policy/assign.h), and the queries waiting for a slot in arrival order.
 * Only the queries in a slot are the policy's to decide, as in colocd.
 */
struct sim_execs_tenant {
	int nr;
	struct policy_exec_view view[SIM_MAX_EXECUTORS];
	struct policy_slot_view slot[SIM_MAX_EXECUTORS][COLOC_SHM_NR_SLOTS];
	uint64_t id[SIM_MAX_EXECUTORS][COLOC_SHM_NR_SLOTS]; /* the query in each used slot */
	struct policy_query *wait; /* a ring of cap_wait, nr_wait from head */
	int head, nr_wait, cap_wait;
};

struct sim_execs {
	int nr_tenants;
	struct sim_execs_tenant *t;
	int nr_waiting; /* over all tenants */
};

/* Each of nr_tenants with `executors` executors (0: one). */
int sim_execs_init(struct sim_execs *e, int nr_tenants, int executors, struct coloc_err *err);
void sim_execs_free(struct sim_execs *e);
/* q arrives: it waits for a slot of its tenant's. */
int sim_execs_wait(struct sim_execs *e, const struct policy_query *q, struct coloc_err *err);
/*
 * The tenant's earliest waiting query into a free slot (policy_assign_slot),
 * copied to *q; false when none waits or no slot is free.
 */
bool sim_execs_take(struct sim_execs *e, int tenant, struct policy_query *q);
/* Whether q (in a slot) is the policy's to see: in flight, or runnable (policy_assign_runnable). */
bool sim_execs_visible(const struct sim_execs *e, const struct policy_query *q);
/*
 * The executor q's next block runs on (policy_assign_executor), q moved
 * there if need be, and its block marked running; -1 when none can take it
 * now (colocd refuses the decision; the next round sees why).
 */
int sim_execs_start(struct sim_execs *e, const struct policy_query *q);
/* q's block ended; finished: q is done and leaves its slot. */
void sim_execs_end(struct sim_execs *e, const struct policy_query *q, bool finished);
/* q, in a slot and not in flight, was dropped: it leaves its slot. */
void sim_execs_leave(struct sim_execs *e, const struct policy_query *q);
/* Waiting query i (0: the earliest) of tenant. */
const struct policy_query *sim_execs_waiting(const struct sim_execs *e, int tenant, int i);

/* the serving path's parts (parts.h) */
struct sim_parts;

/* ---- workloads --------------------------------------------------------------- */

struct sim_tenant {
	const struct policy_costs *costs;
	const char *name;
	uint64_t qos_ns;
	double share; /* share of the total rate, > 0 */
	/*
	 * The serving cost of each query beyond its blocks (colocd's trip to
	 * the client and back, the executor's cold start): added to every
	 * query's latency, holding no core, unseen by the policy (its deadline
	 * stays arrival + QoS, as colocd's does). sim/README.md: the fit.
	 */
	uint64_t query_cost_ns;
	/*
	 * How colocd's executors really run this tenant's blocks, fitted on
	 * their block logs (struct sim_exec_timing below); NULL: at the table's
	 * latency (plus the serving costs of struct sim_params).
	 */
	const struct sim_exec_timing *exec;
	/*
	 * The serving path's parts (above), drawn from a stream of the
	 * tenant's own; NULL: none (the costs above and the executor model's).
	 */
	const struct sim_parts *parts;
};

/* ---- the executor model: blocks as colocd's executors ran them ------------------- */

#define SIM_EXEC_MAX_CORES 8
/*
 * The probabilities at which the extra time of blocks under
 * SIM_EXEC_MIN_ALONE_US is kept: their quantile function, linear in
 * between, dense in the tail that carries their mean.
 */
#define SIM_EXEC_SMALL_Q 19
extern const double sim_exec_small_p[SIM_EXEC_SMALL_Q];
/* The quantile function q[] (at sim_exec_small_p[]) at u in [0, 1]. */
double sim_exec_small_extra(const double *q, double u);
/* The mean of the distribution q[] describes (linear between its points). */
double sim_exec_small_mean(const double *q);

/*
 * One model's blocks as its executor ran them (sim/README.md, "The
 * executor model"), by a block's core count k (1..SIM_EXEC_MAX_CORES;
 * factor[k] 0: no blocks of k cores were measured; a block of k cores
 * takes the largest fitted count <= k, else the smallest fitted).
 * A block holds its cores for
 *     table x factor[k] x exp(sigma[k] x Z) + dispatch_ns[k],
 * Z standard normal from the tenant's own stream, or, a block of less
 * than SIM_EXEC_MIN_ALONE_US in the table (a layer or a few) of a count
 * whose such blocks were measured (small_n[k] > 0),
 *     max(table x factor[k] + E, table x small_floor[k]) + small_dispatch_ns[k]:
 * E drawn from what such blocks took beyond table x factor (thread
 * wake-ups, a preempted thread: skewed, the mean 2-10x the median), by its
 * quantiles small_extra_ns[k][] at sim_exec_small_p[] (sim_exec_small_extra)
 * at the quantile of the same Z, so its slow ones fall in the machine's slow
 * spells like the long blocks' (speed.c); small_dispatch_ns[k] is the
 * dispatch measured on them (one that finds colocd awake), instead of the
 * long blocks'. On cores a policy
 * shares (policy_entry.shares_cores: the executor's caller is not pinned),
 * with probability collapse_p the block's threads end up on one core and
 * it takes collapse_x times that, at a pace set by its own hand-offs: the
 * other blocks on its cores do not slow it (they are slowed by it).
 */
struct sim_exec_timing {
	double factor[SIM_EXEC_MAX_CORES + 1];
	double sigma[SIM_EXEC_MAX_CORES + 1];
	uint64_t dispatch_ns[SIM_EXEC_MAX_CORES + 1];
	/* a block under SIM_EXEC_MIN_ALONE_US in the table: these instead of dispatch_ns */
	int small_n[SIM_EXEC_MAX_CORES + 1]; /* 0: not measured, the long blocks' model */
	double small_extra_ns[SIM_EXEC_MAX_CORES + 1][SIM_EXEC_SMALL_Q];
	double small_floor[SIM_EXEC_MAX_CORES + 1]; /* the least measured / table */
	uint64_t small_dispatch_ns[SIM_EXEC_MAX_CORES + 1];
	/*
	 * The factor is the warm one: a block that starts after the tenant
	 * idled for t (since its last block ended; never ran: cold) takes
	 * factor[k] x (1 + cold[k] x (1 - exp(-t / warm_ns))) instead.
	 */
	double cold[SIM_EXEC_MAX_CORES + 1];
	uint64_t warm_ns;
	double collapse_p, collapse_x;
};

/* The fitted row of a model's blocks of one core count on cores of their own. */
struct sim_exec_row {
	char model[64];
	int cores;
	int n; /* blocks of >= SIM_EXEC_MIN_ALONE_US in the table */
	double factor; /* median measured / table, warm (the cold term taken out) */
	double cold; /* how much more a cold block takes, x factor */
	double sigma; /* least squares on the upper quantiles of log(ratio / factor) */
	double dispatch_us; /* mean round trip - measured */
	/*
	 * blocks under SIM_EXEC_MIN_ALONE_US: measured - table x factor, its
	 * mean and its quantiles at sim_exec_small_p[]; the least measured /
	 * table; the mean of round trip - measured
	 */
	int n_small;
	double small_extra_us, small_q_us[SIM_EXEC_SMALL_Q], small_floor, small_dispatch_us;
	/* the fit error: measured and fitted quantiles of ratio / factor */
	double q95, q95_fit, q99, q99_fit;
};

/* The fitted row of a model's blocks on shared cores (alone there: no other block overlapped). */
struct sim_exec_shared_row {
	char model[64];
	int n_alone, n_collapsed, n_overlapped;
	double collapse_p; /* share of the alone blocks past the pinned p99 (exp(2.326 sigma)) */
	double collapse_x; /* their median ratio / the pinned factor */
	double fit_error; /* rms log error of the overlapped blocks' quantiles at the best penalty */
};

/* ---- the machine's speed: slow spells every block shares (speed.c) ---------- */

#define SIM_SPEED_BINS 12

/* One block for the fit: its midpoint, its tenant, its standardized log deviation. */
struct sim_speed_sample {
	double mid_ms;
	int tenant;
	double z;
};

/* Sums over the pairs of blocks of different tenants, by the gap between their midpoints. */
struct sim_speed_acc {
	long n;
	double sum, sum2; /* of z over the blocks */
	long pairs[SIM_SPEED_BINS];
	double prod[SIM_SPEED_BINS], gap[SIM_SPEED_BINS]; /* sums of z_i z_j and of the gaps */
};

/*
 * rho(gap) = rho x exp(-gap / tau_ms): the correlation of two blocks'
 * deviations gap apart; rho 0 when fewer than 1000 pairs were seen.
 * corr[b]: the measured correlation in bin b (sim_speed_bin_ms(b): its
 * upper edge), rms_error: the fit's, weighted by pairs.
 */
struct sim_speed_fit {
	double rho, tau_ms, rms_error;
	long pairs;
	double corr[SIM_SPEED_BINS];
};

/* Adds one run's blocks, sorted by mid_ms. */
void sim_speed_acc_add(struct sim_speed_acc *acc, const struct sim_speed_sample *s, int n);
void sim_speed_acc_solve(const struct sim_speed_acc *acc, struct sim_speed_fit *fit);
double sim_speed_bin_ms(int b);

/* The common factor's unit-variance Ornstein-Uhlenbeck process in simulated time. */
struct sim_speed {
	struct coloc_rng rng;
	double rho, keep, z;
	uint64_t step_ns, t_ns;
};

/* rho 0 (or tau 0): no common factor, sim_speed_z() is always 0. */
void sim_speed_init(struct sim_speed *sp, uint64_t seed, double rho, uint64_t tau_ns);
/* z at now_ns (non-decreasing between calls). */
double sim_speed_z(struct sim_speed *sp, uint64_t now_ns);
/* A standard normal draw from rng. */
double sim_normal(struct coloc_rng *rng);

/*
 * The fit from a directory of colocd block logs (make bench-qos's
 * blocks-MIX-POLICY.tsv): every block of a policy that does not share
 * cores gives its model's row for its core count (blocks of at least
 * SIM_EXEC_MIN_ALONE_US, where the fixed costs do not count); the blocks of
 * a policy that shares cores give, where no other block overlapped them,
 * the collapse of each model, and where others did, the time-sharing
 * penalty: the one at which processor sharing (ideal x penalty, collapsed
 * blocks not slowed) best reproduces the overlapped blocks' quantiles.
 */
#define SIM_EXEC_MIN_ALONE_US 1000.0

struct sim_exec_fit {
	struct sim_exec_row *row;
	int nr_rows;
	struct sim_exec_shared_row *shared;
	int nr_shared;
	double warm_ms; /* the warm-up time, one for all rows */
	double warm_gain; /* share of the squared log error the warm-up term explains */
	double penalty; /* 0: no overlapped shared blocks to fit it on */
	double penalty_error; /* the weighted rms log quantile error at penalty */
	struct sim_speed_fit speed; /* the machine's slow spells, from the pinned blocks */
	int nr_files;
	long nr_blocks;
};

int sim_exec_fit_dir(const char *dir, struct sim_exec_fit *fit, struct coloc_err *err);
/*
 * The same on one run's log, blocks-MIX-POLICY.tsv of dir: that run's
 * blocks alone give the rows (a policy that shares cores: its collapse
 * and penalty, against the pinned rows of every log of dir); -ENOENT when
 * there is no such log.
 */
int sim_exec_fit_log(const char *dir, const char *mix, const char *policy, struct sim_exec_fit *fit,
		     struct coloc_err *err);
void sim_exec_fit_free(struct sim_exec_fit *fit);
/* The model named as in the logs' tenant column; -ENOENT when no pinned block of it was logged. */
int sim_exec_timing_from_fit(const struct sim_exec_fit *fit, const char *model,
			     struct sim_exec_timing *m, struct coloc_err *err);

/* A recorded arrival sequence: one arrival per line, "TIME_US TENANT". */
struct sim_trace {
	uint64_t *time_ns;
	int *tenant;
	int nr;
};

/* Reads a trace; tenants are indices 0 .. nr_tenants - 1, times non-decreasing. */
int sim_trace_load(const char *path, int nr_tenants, struct sim_trace *t, struct coloc_err *err);
void sim_trace_free(struct sim_trace *t);

/*
 * Poisson arrivals of one tenant: its own PRNG stream, so tenants do not
 * perturb each other. Or, even, exactly 1 / rate apart from a first arrival
 * the stream draws uniformly within one gap (no two of a tenant's queries
 * closer than its mean gap: what --capacity's ceiling, with no queue, takes).
 */
struct sim_poisson {
	struct coloc_rng rng;
	double rate_per_s;
	double next_s;
	bool even;
};

void sim_poisson_init(struct sim_poisson *p, uint64_t seed, int tenant, double rate_per_s,
		      bool even);
/* The next arrival time in ns (strictly after the previous one's draw). */
uint64_t sim_poisson_next(struct sim_poisson *p);

/* ---- the ceiling the tables allow (capacity.c, coloc-sim --capacity) --------------- */

struct sim_capacity_tenant {
	const struct policy_costs *costs;
	double qos_ms;
	double share; /* of the total rate, relative to the others' */
};

/* A tenant's use of cores at the ceiling: frac of its queries on k[0] cores, the rest on k[1]. */
struct sim_capacity_pick {
	int k[2];
	double ms[2]; /* the whole model alone there */
	double frac;
};

struct sim_capacity {
	int nr;
	double temporal_qps; /* one query at a time on the machine, each at its fastest */
	double unbounded_qps; /* side by side, a tenant's queries as many at once as it has */
	double ceiling_qps; /* side by side, at most its executors' queries at once */
	int fast_k[POLICY_MAX_TENANTS];
	double fast_ms[POLICY_MAX_TENANTS];
	struct sim_capacity_pick pick[POLICY_MAX_TENANTS]; /* at ceiling_qps (0 QPS when none) */
};

/* Model m alone on its ci-th core count, as policy_costs_alone_ns() (ms; INFINITY: a cell missing). */
double sim_capacity_model_ms(const struct policy_costs *m, int ci);

/*
 * The ceiling of nr tenants on cores (their counts above it unused), each
 * with executors executors: unbounded_qps and ceiling_qps 0 when some
 * tenant meets its QoS alone on no count. -EINVAL on a bad argument.
 */
int sim_capacity(const struct sim_capacity_tenant *t, int nr, int cores, int executors,
		 struct sim_capacity *c, struct coloc_err *err);

/*
 * The ceiling with the socket (capacity_bound.c): an upper bound on the
 * QPS any schedule reaches in the simulator's own physics, where a block on
 * k of a socket's P cores, B of them busy, runs at level 1 + (M - 1) x (B -
 * k) / (P - k) at least. Each layer of a query may take any count of its
 * table at any occupancy B (as fast as its version cells allow there), and
 * costs k x its time / B of the socket's time; a tenant's queries, at rate
 * q, keep a share `fraction` within QoS on average and the mean of all
 * within lanes / q (Little's law: a lane runs one block at a time). And
 * each tenant's queries queue for its lanes (sim_queue_waits() at its
 * fastest time): a query within QoS after a wait W takes at most QoS - W,
 * and costs the socket time of that; and with hindsight (sim_hindsight_cost()),
 * a query's time against the waits it makes. docs/design/capacity-bound.md
 * derives it.
 */
struct sim_capacity_bound {
	double qps; /* 0 when some tenant cannot keep `fraction` of its queries within QoS */
	double queue_qps; /* the bound with the queues at the fastest time, not with hindsight */
	double socket_qps; /* the bound without the queues: no query waits */
	double ms[POLICY_MAX_TENANTS]; /* a query's mean time at qps, as the socket's part has it */
	double socket_ms[POLICY_MAX_TENANTS]; /* a query's share of the socket's time there, ms */
	double hindsight_ms[POLICY_MAX_TENANTS]; /* that share by sim_hindsight_cost() alone */
	double fastest_ms[POLICY_MAX_TENANTS]; /* the least a query can take, each layer at its best */
};

/*
 * The bound for nr tenants on one socket of cores cores, lanes a tenant,
 * socket_slowdown M (at most 1: no socket-wide part). -EINVAL on a bad
 * argument, -ENOMEM.
 */
int sim_capacity_bound(const struct sim_capacity_tenant *t, int nr, int cores, int lanes,
		       double socket_slowdown, double fraction, struct sim_capacity_bound *b,
		       struct coloc_err *err);

/*
 * The queue's part of the bound (capacity_queue.c): queries arriving
 * Poisson at qps, each service_ms on one of lanes lanes, in arrival order,
 * a query given up (no lane used) once it could no longer end within
 * qos_ms. Estimated on SIM_QUEUE_SAMPLES arrivals of one fixed stream
 * (sim_queue_stream(): its gaps at rate 1, to free(); NULL: no memory).
 */
#define SIM_QUEUE_SAMPLES (1L << 20)
#define SIM_QUEUE_BINS 64

struct sim_queue_waits {
	double within; /* the share of the queries within qos_ms */
	/* share[b]: those within that waited b / SIM_QUEUE_BINS of qos_ms - service_ms, or more */
	double share[SIM_QUEUE_BINS];
};

double *sim_queue_stream(void);
/* The queue on gap's arrivals; -EINVAL on a bad argument (a QoS under the service time) */
int sim_queue_waits(const double *gap, double qps, double service_ms, double qos_ms, int lanes,
		    struct sim_queue_waits *w);

/*
 * The queue and the socket together (capacity_hindsight.c): the least mean
 * socket time a query of a tenant costs when its queries, the first
 * SIM_HINDSIGHT_QUERIES arrivals of gap at qps, are scheduled knowing every
 * arrival in advance, each query within QoS at a time of its choosing on its
 * lanes (relaxed to one server lanes times as fast), a `fraction` of them
 * within QoS and the rest given up at no cost. The backlog is tracked in
 * SIM_HINDSIGHT_STATES steps of the QoS, rounded down. INFINITY when no
 * schedule keeps the fraction. docs/design/capacity-bound.md, "Queue and
 * socket together".
 */
#define SIM_HINDSIGHT_QUERIES 8192
#define SIM_HINDSIGHT_STATES 32
#define SIM_HINDSIGHT_GRID 1024

struct sim_hindsight {
	double qos_ms, fast_ms, fraction;
	int lanes;
	/* cost[i]: the least socket ms of a query of i x qos_ms / SIM_HINDSIGHT_GRID ms, non-increasing */
	double cost[SIM_HINDSIGHT_GRID + 1];
};

double sim_hindsight_cost(const double *gap, double qps, const struct sim_hindsight *h);

/* ---- tenant mixes ------------------------------------------------------------ */

#define SIM_MAX_MIXES 32

struct sim_mix {
	char name[32];
	int nr_models;
	char model[POLICY_MAX_TENANTS][64]; /* model names: models/NAME.model */
};

struct sim_mixes {
	struct sim_mix mix[SIM_MAX_MIXES];
	int nr;
};

/*
 * tools/qos-mixes.conf: one mix per line, "NAME MODEL MODEL ...", comment
 * lines starting with #. 0, or -errno with "FILE:LINE: what" in err.
 */
int sim_mixes_load(const char *path, struct sim_mixes *mx, struct coloc_err *err);
const struct sim_mix *sim_mixes_find(const struct sim_mixes *mx, const char *name);

/* ---- metrics ------------------------------------------------------------------ */

struct sim_latencies {
	uint64_t *ns;
	int nr, cap;
};

int sim_latencies_add(struct sim_latencies *l, uint64_t ns, struct coloc_err *err);
void sim_latencies_free(struct sim_latencies *l);
/* Nearest-rank percentile (0 < p <= 100) of v[0..nr) after sorting it in place; 0 when empty. */
uint64_t sim_percentile_u64(uint64_t *v, int nr, double p);
double sim_percentile_double(double *v, int nr, double p);
/* The median of v[0..nr) after sorting it in place (of an even nr the mean of the middle two); 0 when empty. */
double sim_median_double(double *v, int nr);

struct sim_tenant_result {
	uint64_t arrived; /* counted arrivals: after the warm-up, before the end */
	uint64_t completed;
	uint64_t within; /* completed within QoS */
	uint64_t dropped; /* dropped by the policy, or rejected with the queue full */
	uint64_t unserved; /* still queued when the simulation ended */
	double p50_ms, p95_ms, p99_ms; /* of completed queries */
	double fraction_within; /* within / arrived; 1 when nothing arrived */
	/* where the time went: the blocks started in the counted window, and its queries' waits */
	uint64_t blocks;
	uint64_t block_cores; /* summed over the blocks: their mean core count is this / blocks */
	uint64_t block_ns; /* the blocks' time: its executors busy */
	double core_ns; /* cores x time held, summed over the blocks */
	uint64_t started; /* counted queries whose first block started */
	uint64_t wait_ns; /* summed over them: arrival to the first block's start */
};

/* tr's percentiles from its completed queries' latencies l (sorted in place), and its fraction within QoS. */
void sim_tenant_result_finish(struct sim_tenant_result *tr, struct sim_latencies *l);

/*
 * Where the counted window's core time went (sim/run_account.c), in core-ns;
 * divided by the window, each is a number of cores. Idle cores are split by
 * what waited meanwhile; a block's cores x time by what its layers needed.
 */
struct sim_account {
	double idle_runnable_ns; /* idle while a query the policy sees (not in flight) waited */
	double idle_lane_ns; /* idle while queries waited only behind their tenant's own */
	double idle_empty_ns; /* idle with no query waiting */
	double runnable_ns; /* queries the policy sees, not in flight, x time, while a core idled */
	double work_ns; /* each block's layers at their least core-ns alone (any count, version) */
	double knee_ns; /* its cores x its table time alone beyond that least */
	double cost_ns; /* its cores x the serving costs and executor model beyond the table */
	double contention_ns; /* its cores x its time beyond alone: interference, time-sharing */
};

struct sim_result {
	int nr_tenants;
	struct sim_tenant_result tenant[POLICY_MAX_TENANTS];
	uint64_t events;
	uint64_t decide_calls;
	double decide_p50_us, decide_p99_us; /* wall time of policy_decide(), not deterministic */
	uint64_t end_ns; /* simulated time of the last event */
	double busy_fraction; /* of the cores x the counted window, held by its blocks */
	struct sim_account account;
	double wall_s; /* how long the run took */
};

/* ---- a run ---------------------------------------------------------------------- */

/* What happened to a query, for whoever watches (tests, traces). */
struct sim_query_record {
	uint64_t id;
	int tenant;
	uint64_t arrival_ns;
	uint64_t end_ns; /* finish or drop */
	bool dropped;
};

/* One block, started at start_ns and ended at end_ns. */
struct sim_block_record {
	const struct policy_decision *d;
	uint64_t start_ns, end_ns;
};

struct sim_servers;

struct sim_params {
	const struct policy_entry *policy;
	struct sim_machine machine;
	enum policy_late late;
	const struct sim_tenant *tenants;
	int nr_tenants;
	double qps; /* total rate over all tenants, in their shares; unused with a trace */
	const struct sim_trace *trace; /* NULL: Poisson arrivals (or even ones) */
	bool even_arrivals; /* each tenant's arrivals 1 / rate apart, not Poisson */
	uint64_t duration_ns; /* arrivals stop here; what is in flight then runs to its end */
	uint64_t warmup_ns; /* arrivals before this are served but not counted */
	uint64_t seed;
	struct sim_interference interference;
	/*
	 * The serving cost of each block: colocd's dispatch to the executor and
	 * the answer back. It holds the block's cores, as in colocd, and is part
	 * of the latency policy_block_done() reports.
	 */
	uint64_t block_cost_ns;
	/*
	 * 0: every query of a tenant costs its query_cost_ns. Else each
	 * finished query's cost is query_cost_ns x exp(sigma x Z), Z standard
	 * normal from the tenant's own stream (a lognormal of that median): the
	 * spread of served latencies on a shared machine, sim/README.md.
	 */
	double query_cost_sigma;
	/*
	 * true: a query's cost is spent inside its blocks, holding their
	 * cores, as colocd's executors spend it (their own block timings are
	 * 1.6-2.4x the table on the 2-vCPU VM, for every block): each block's
	 * layers take table x (1 + query_cost_ns / the model's solo table
	 * latency x exp(sigma x Z)), Z drawn per block, and nothing is added
	 * after the last. false: the cost is added after the last block,
	 * holding no core.
	 */
	bool query_cost_in_blocks;
	/*
	 * With query_cost_in_blocks: the cost scales with how cold the tenant
	 * is, 1 - exp(-idle / this) for the idle time since its last query
	 * ended (coloc-run --gap-ms: MobileNet-V2 2.9 ms back to back, 3.7 ms
	 * after 10 ms idle, 4.5 after 20, 5.0 after 50; ~18 ms). 0: always
	 * the whole cost.
	 */
	uint64_t query_cost_warm_ns;
	/*
	 * A shares_cores policy's blocks run this many times slower than
	 * processor sharing alone makes them while they share a core (0 or 1:
	 * ideal sharing; a block alone on its cores is not slowed): what the
	 * kernel's time-sharing of OpenMP threads costs beyond it, fitted in
	 * sim/README.md.
	 */
	double shared_penalty;
	/*
	 * The machine's slow spells (speed.c): the share of an executor-model
	 * block's log spread that all blocks share at a moment, and how long it
	 * lasts. 0: every block's spread drawn on its own.
	 */
	double speed_rho;
	uint64_t speed_tau_ns;
	/* each tenant's executors (struct policy_tenant): 0 or 1, one as colocd starts */
	int executors;
	/*
	 * The executors are lanes of one process (colocd --executor-lanes,
	 * docs/design/lanes.md): the policy sees and drives them as executors,
	 * but they share one copy of the weights, warm or cold for all of them
	 * (the executor model's warm-up, the query cost's warmth); false: a
	 * process each, each with its own copy, warmed only by its own blocks.
	 */
	bool lanes;
	/* where the level each round sees comes from (level.c); 0: the blocks, as colocd */
	enum sim_level_source level_source;
	int max_queued; /* live queries beyond this are rejected at arrival (counted as drops) */
	/* non-NULL: no policy, each tenant's queries whole on fixed servers (capacity_queued.h) */
	const struct sim_servers *servers;
	/* optional observers */
	void (*on_query)(void *ctx, const struct sim_query_record *q);
	void (*on_block)(void *ctx, const struct sim_block_record *b);
	void *ctx;
};

#define SIM_DEFAULT_MAX_QUEUED 65536

/*
 * Runs one simulation. Every round's output goes through
 * policy_check_output(); a policy that breaks it stops the run with -EPROTO
 * and the reason in err.
 */
int sim_run(const struct sim_params *p, struct sim_result *r, struct coloc_err *err);

/* ---- the QoS-QPS search -------------------------------------------------------- */

/* One load point of a cell: per tenant, the queries counted and those within QoS. */
struct sim_load_point {
	double qps; /* total, all tenants */
	int search; /* which search ran it: bench-qos's 1..N, coloc-sim's seed index */
	bool confirm; /* a confirmation walk's point (bench-qos's phase confirm) */
	int nr_tenants;
	uint32_t counted[POLICY_MAX_TENANTS];
	uint32_t within[POLICY_MAX_TENANTS];
};

/*
 * QoS-QPS by every load point of a cell (crossing.c): pts of one or more
 * searches pooled by load, the worst tenant's share within QoS fitted
 * non-increasing in log load, and *qps where that fit crosses fraction,
 * interpolated between its steps (0 when even the lowest load is below;
 * the highest load when none is). -ENOMEM only.
 */
int sim_crossing_qps(const struct sim_load_point *pts, int nr, double fraction, double *qps,
		     struct coloc_err *err);

#define SIM_SEARCH_MAX_LOADS 48 /* load points a search keeps for sim_crossing_qps */

struct sim_search_result {
	double qos_qps; /* the highest total QPS found that passes; 0 when none does */
	double fail_qps; /* the lowest that failed */
	int points; /* runs made */
	/* the first SIM_SEARCH_MAX_LOADS of them: load and per tenant counts */
	struct sim_load_point load[SIM_SEARCH_MAX_LOADS];
	int nr_loads;
	struct sim_result at_best; /* the run at qos_qps */
	/* the run at fail_qps; when no load passes, the first (highest) load's, which shows why */
	struct sim_result at_fail;
	double at_fail_qps;
	double wall_s;
};

#define SIM_QOS_FRACTION 0.95
#define SIM_SEARCH_MIN_ARRIVALS 20 /* counted queries a tenant needs at a passing load */

/*
 * The highest total QPS (tenants' rates in their shares) at which at least
 * `fraction` of every tenant's queries meet QoS, each tenant with at least
 * SIM_SEARCH_MIN_ARRIVALS counted queries: doubling from start_qps (raised
 * so that every tenant expects twice that many) until a point fails, then
 * bisection until the bracket is within `tol` (relative). Each point is a whole sim_run of base (its qps replaced),
 * with the same seed, so the search is deterministic per seed. Assumes
 * passing is monotone in load.
 */
int sim_search_qos_qps(const struct sim_params *base, double fraction, double start_qps, double tol,
		       struct sim_search_result *s, struct coloc_err *err);

/*
 * The search exactly as tools/bench-qos.sh runs it, so that a simulated
 * point is decided on as few queries as a measured one: from medium load
 * (medium_share of saturation), grow x grow while a point passes (shrink
 * / grow while it fails, down to saturation / 50; up to 4 x saturation),
 * then `bisect` geometric midpoints; loads rounded to 0.001 QPS as the
 * script prints them. A point lasts ceil(min_queries / (least share x
 * load)) s within [min_s, max_s] after warmup_s of arrivals not counted,
 * and passes when every tenant has >= fraction of its counted queries
 * within QoS (no minimum count: the script has none). Then, with confirm,
 * its confirmation walk (sim_confirm_next(), docs/design/bench-qos-ci.md),
 * each point confirm x as long, the same seed; the search's QoS-QPS is the
 * walk's. The values mirror bench-qos.sh's (quick and full); change them
 * together.
 */
struct sim_bq_search {
	double medium_share, grow;
	int bisect;
	double min_queries, min_s, max_s, warmup_s;
	int confirm, walk; /* --confirm K (0: no walk), its points K x as long; CONFIRM_WALK */
};

extern const struct sim_bq_search sim_bq_quick, sim_bq_full;

/*
 * tools/bench-qos-confirm.awk on a search's points pts[0, nr) in the order
 * run, walk loads at most: true and *t the next load to confirm, or false
 * and *t the search's QoS-QPS.
 */
bool sim_confirm_next(const struct sim_load_point *pts, int nr, int walk, double *t);

/*
 * solo_ms[t]: tenant t's solo latency (bench-qos's: served alone), for
 * saturation = 1 / sum(share_t x solo_t). qos_qps 0 when nothing passes;
 * at_best the run at it (a walk's load rerun once more when the walk's
 * verdict is not the highest point that passed alone).
 */
int sim_search_bench_qos(const struct sim_params *base, const struct sim_bq_search *bq,
			 const double *solo_ms, double fraction, struct sim_search_result *s,
			 struct coloc_err *err);

#endif /* COLOC_SIM_H */
