/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The scheduling policy: a pure library that decides which query's layers run
 * next, with which kernel versions, on which cores. No I/O, no clock, no
 * globals, no allocation after policy_create(): time, signals and state come
 * in as arguments, decisions go out as values. colocd, the simulator
 * (coloc-sim) and the unit tests drive the same code.
 *
 * Who calls it, when. The caller (colocd, or the simulator's event loop) owns
 * the queries, the cores and the clock. It calls policy_decide() whenever
 * something changed that could allow a decision: a query arrived, a block
 * finished (cores freed), a tenant came or went. Each call gets the whole
 * picture (struct policy_input): now, the tenants and their model tables,
 * every queued or in-flight query with its deadline and progress, the blocks
 * in flight, the free cores, and the live per-core and per-LLC-domain
 * signals. It returns decisions (struct policy_decision: one query, layers
 * [first, last), a version per layer, a set of cores) and drops (a query the
 * policy gives up on, with the reason). The caller starts every decision at
 * once, removes its cores from the free set and marks the query in flight;
 * it removes dropped queries. When a block finishes, the caller calls
 * policy_block_done() with the decision and the measured latency (the
 * policy may learn from it), advances the query's next_layer to the
 * decision's last_layer, returns the cores and calls policy_decide() again.
 * A policy may return nothing (wait) even with free cores.
 *
 * What a policy may rely on, and must keep:
 *  - cores of a decision are a subset of input->free, decisions of one call
 *    are disjoint (no core is ever oversubscribed), a decision's core count
 *    is one of the model's profiled core counts, its layers start at the
 *    query's next_layer, a query gets at most one block in flight, a tenant
 *    at most its executors' worth (policy_tenant_executors(): each block of
 *    a tenant runs on one of its executors, and colocd starts one a tenant),
 *    and only a query with no block in flight is dropped;
 *  - policy_check_output() verifies all of that, for the daemon and the
 *    simulator to run on every round and refuse a policy that breaks it;
 *  - an output array that is full ends the call early with what was decided
 *    so far; the caller calls again after applying it.
 *
 * The model table (struct policy_costs) is VELTAIR's per-layer profile:
 * latency by layer x version x core count x interference level. colocd fills
 * it from a profile (executor/profile.h: core counts 1..N, level columns are
 * coloc-stress levels with the model's mean slowdown at each); the simulator
 * fills it from VELTAIR's CSV tables (core counts 8, 16, ... 64, one version,
 * one level) plus its interference model. Versions are indices into the
 * executor's per-layer version list, the same order the profile stores.
 * Level columns must not decrease in slowdown (policy_costs_check): a
 * profile whose mean slowdown dips below alone (a measurement artefact the
 * scheduler issue describes) must be fixed, or clamped by whoever fills the
 * table, before a policy can map a measured level onto it.
 *
 * The interference level is VELTAIR's: the slowdown ratio (latency now /
 * latency alone, 1.0 = alone). The caller measures it per core and per LLC
 * domain from recent blocks (measured vs decision->alone_ns), or predicts it
 * from PMU signals where a PMU is live; policy_costs_level_pos() maps it onto
 * the table's level columns.
 *
 * How the scheduler issue's policies fit, without changing this interface:
 *  - VELTAIR layer blocks: a decision is any [first, last) from next_layer;
 *    the policy forms the next block from its state when the previous one
 *    finishes (the caller calls decide then). The dynamic threshold uses
 *    the active tenants (input->tenants) and their avg core need computed
 *    from the tables and the tenant's QoS; layer_ops gives each layer's
 *    share of the QoS budget.
 *  - Versions: the level of the candidate cores (input->cores[].slowdown or
 *    the domain's) picks, per layer, the version fastest at that level.
 *  - Abacus prediction: predicted_ns = table latency at the level, corrected
 *    online from policy_block_done() (measured vs predicted: per tenant, and
 *    per block of the same layers and core count), held in the policy's
 *    state; headroom order is deadline_ns - now_ns; drops carry
 *    POLICY_DROP_CANNOT_MEET with the prediction; config->late says whether
 *    to drop or serve late (every policy: late queries after the others,
 *    dropped only when their answer would be later than twice their QoS,
 *    the one rule of late.c).
 *  - Cores: the topology (config->llc, config->socket) and the per-domain
 *    signals and per-tenant pressure (tenant->sig) choose which free cores.
 *  - Baselines: static, temporal (here), model-wise and layer-wise are
 *    decisions of this shape; `os` (every tenant on all cores, the kernel
 *    shares them) is an entry with shares_cores set: its decisions may
 *    overlap, the caller keeps passing all cores as free and does not pin
 *    exclusively.
 *  - The simulator calls decide at each simulated event with its simulated
 *    now, computes each block's latency from the same table and its
 *    interference model, and calls block_done at the simulated completion.
 *
 * The policies here: fcfs (issue 7's: one query at a time, its whole model
 * on all free cores), os (every tenant FCFS on all cores at once, sharing
 * them), static (a fixed equal share of the cores per tenant),
 * temporal (one query at a time on the whole machine), model-wise and
 * layer-wise (the fewest cores meeting QoS per model or per layer), and
 * coloc (the scheduler issue's policy, coloc.c) with its ablations
 * coloc-noversions, -noblocks, -fixedthres, -noprediction, -nocap and -fcfs. Each
 * is a struct policy_entry listed in policy_table[] (policy.c); coloc, its
 * ablations and the model-wise and layer-wise baselines share one engine
 * (coloc.c), each entry a set of flags (policy_impl.h).
 *
 * Cores are identified by the OS CPU id (0 .. POLICY_MAX_CPUS - 1), as in
 * the sensor's records. Tenants by a small id (0 .. POLICY_MAX_TENANTS - 1)
 * that stays the tenant's for its life: input->tenants is indexed by it. A
 * slot reused by a new tenant gets a new uid, so a policy's per-tenant state
 * (learned corrections, cached block plans) is never carried over.
 */
#ifndef COLOC_POLICY_H
#define COLOC_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "coloc/sensor.h"
#include "error.h"
#include "level_estimate.h"

#define POLICY_MAX_CPUS COLOC_MAX_CPUS
#define POLICY_MAX_TENANTS COLOC_MAX_TENANTS
#define POLICY_MAX_VERSIONS 8 /* kernel versions per layer; the profile has up to 6 */
#define POLICY_MAX_CORE_COUNTS POLICY_MAX_CPUS
#define POLICY_MAX_LEVELS 16
#define POLICY_MAX_COLD_POINTS 8 /* points of a cold ramp; the profile has up to 4 */

/* ---- core sets ------------------------------------------------------------ */

struct policy_cpuset {
	uint64_t bits[POLICY_MAX_CPUS / 64];
};

static inline void policy_cpuset_zero(struct policy_cpuset *s)
{
	for (unsigned int i = 0; i < POLICY_MAX_CPUS / 64; i++)
		s->bits[i] = 0;
}

static inline void policy_cpuset_set(struct policy_cpuset *s, int cpu)
{
	s->bits[cpu / 64] |= 1ULL << (cpu % 64);
}

static inline void policy_cpuset_clear(struct policy_cpuset *s, int cpu)
{
	s->bits[cpu / 64] &= ~(1ULL << (cpu % 64));
}

static inline bool policy_cpuset_test(const struct policy_cpuset *s, int cpu)
{
	return cpu >= 0 && cpu < POLICY_MAX_CPUS && (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}

int policy_cpuset_count(const struct policy_cpuset *s);
/* The next CPU in s at or after cpu, or -1: `for (c = next(s, 0); c >= 0; c = next(s, c + 1))`. */
int policy_cpuset_next(const struct policy_cpuset *s, int cpu);
bool policy_cpuset_intersects(const struct policy_cpuset *a, const struct policy_cpuset *b);
/* True when every CPU of a is in b. */
bool policy_cpuset_subset(const struct policy_cpuset *a, const struct policy_cpuset *b);
void policy_cpuset_or(struct policy_cpuset *dst, const struct policy_cpuset *s);
void policy_cpuset_and(struct policy_cpuset *dst, const struct policy_cpuset *s);
void policy_cpuset_andnot(struct policy_cpuset *dst, const struct policy_cpuset *s);

/* ---- the model table ------------------------------------------------------ */

/*
 * A model's latency table, read-only to the policy and owned by the caller
 * for as long as the tenant exists. latency_ns is dense:
 * latency_ns[((layer * nr_versions + version) * nr_core_counts + ci) * nr_levels + col],
 * where ci indexes core_counts[] and col the level columns. A cell
 * of 0 means "this version does not exist for this layer, or was not
 * measured": policies never choose it. Every layer must have at least one
 * version measured alone (level column 0) at every core count (policy_costs_check).
 */
/* One point of a model's cold ramp (policy_costs.cold). */
struct policy_cold_point {
	uint64_t idle_ns;
	double ratio;
};

struct policy_costs {
	int nr_layers;
	int nr_versions; /* columns per layer, <= POLICY_MAX_VERSIONS */
	int nr_core_counts; /* <= POLICY_MAX_CORE_COUNTS */
	int nr_levels; /* level columns, 1..POLICY_MAX_LEVELS; column 0 is alone */
	const int *core_counts; /* [nr_core_counts], strictly increasing, >= 1 */
	/*
	 * [nr_levels]: the model's slowdown at each column (1.0 at column 0,
	 * non-decreasing), which maps a measured slowdown onto the columns.
	 */
	const double *level_slowdown;
	const uint64_t *latency_ns;
	/*
	 * Optional, both or neither, shaped as latency_ns: each cell's 95 %
	 * confidence interval (a profile's medians carry one). With them a
	 * version is faster than an earlier one only when its interval lies
	 * wholly below the earlier one's: a version ahead within the noise of
	 * its measurement is no reason to leave the first (oneDNN's own).
	 */
	const uint64_t *latency_lo_ns, *latency_hi_ns;
	/* [nr_layers]: work per layer (MACs), each layer's share of the QoS budget; NULL: unknown */
	const uint64_t *layer_ops;
	/*
	 * The cold start as a ramp over idle time: cold[i].ratio is the whole
	 * model's latency after cold[i].idle_ns idle over its latency back to
	 * back, as the cells are timed (a profile's cold records), idle_ns
	 * strictly increasing. A block is priced at its cells times the ramp
	 * at its cores' idle time: 1.0 at 0, linear between the points, flat
	 * beyond the last (the long gap, what a query served alone at low
	 * load starts from). nr_cold 0: every block hot.
	 * policy_costs_cold_scale_at().
	 */
	int nr_cold; /* <= POLICY_MAX_COLD_POINTS */
	struct policy_cold_point cold[POLICY_MAX_COLD_POINTS];
};

/* Checks dimensions, ordering and that every layer runs alone at every core count. */
int policy_costs_check(const struct policy_costs *m, struct coloc_err *err);

static inline uint64_t policy_costs_cell(const struct policy_costs *m, int layer, int version,
					 int ci, int col)
{
	return m->latency_ns[(((size_t)layer * m->nr_versions + version) * m->nr_core_counts + ci) *
				     m->nr_levels +
			     col];
}

/* Index of the largest profiled core count <= nr_cores, or -1 when none fits. */
int policy_costs_core_index(const struct policy_costs *m, int nr_cores);

/*
 * Position of a slowdown on the level columns, as a fractional column:
 * linear between the two columns whose level_slowdown surround it, 0 at or
 * below 1.0 (or when unknown, <= 0), the last column beyond the last.
 */
double policy_costs_level_pos(const struct policy_costs *m, double slowdown);

/*
 * Latency of (layer, version, ci) at a fractional level position, linear
 * between the two columns around it. 0 when a needed cell is 0 (the version
 * does not exist there).
 */
uint64_t policy_costs_latency(const struct policy_costs *m, int layer, int version, int ci,
			      double level_pos);

/*
 * The version with the lowest non-zero latency at (layer, ci, level_pos),
 * or -1 when none; where the table has confidence intervals, a later version
 * wins only when its interval is wholly below the winner's so far. Above
 * level 0 the fastest alone is tried first: another version takes over only
 * when its interval at level_pos is wholly below the fastest alone's.
 */
int policy_costs_fastest_version(const struct policy_costs *m, int layer, int ci, double level_pos,
				 uint64_t *latency_ns);

/*
 * Layers [first, last) alone on core_counts[ci], each in its fastest
 * version; 0 when a layer has no version there.
 */
uint64_t policy_costs_alone_ns(const struct policy_costs *m, int first, int last, int ci);

/*
 * The whole model alone on the largest profiled core count <= nr_cores, each
 * layer in its fastest version: the solo latency admission compares a QoS
 * with. 0 when no profiled count fits.
 */
uint64_t policy_costs_solo_ns(const struct policy_costs *m, int nr_cores);

/*
 * The same started cold (times the ramp's long-gap ratio,
 * policy_costs_cold_scale()): what the model costs served alone at low
 * load, each query after a long idle gap. What admission and colocd's
 * reports call the profiled solo latency.
 */
uint64_t policy_costs_served_solo_ns(const struct policy_costs *m, int nr_cores);

/* ---- what comes in -------------------------------------------------------- */

/* Which fields of a signal are live: a field not live is absent, not zero. */
enum policy_signal_live {
	POLICY_SIG_BUSY = 1u << 0, /* busy */
	POLICY_SIG_SLOWDOWN = 1u << 1, /* slowdown */
	POLICY_SIG_LLC = 1u << 2, /* llc_miss_ratio, llc_misses_per_s (PMU) */
	POLICY_SIG_DRAM = 1u << 3, /* dram_gbps (PMU or uncore) */
	POLICY_SIG_LEVEL_PMU = 1u << 4, /* slowdown came from the PMU level model, not blocks */
};

/* Live signals of one core, or of one LLC domain (then busy is the mean over its cores). */
struct policy_signal {
	unsigned int live; /* enum policy_signal_live bits */
	double busy; /* share of the last window the core ran anything, 0..1 */
	double slowdown; /* interference level: latency of recent blocks / alone, 1.0 = none */
	double llc_miss_ratio; /* misses / references */
	double llc_misses_per_s;
	double dram_gbps;
};

struct policy_tenant {
	const struct policy_costs *costs; /* NULL: no tenant in this slot */
	uint64_t
		uid; /* never reused while the policy lives: a new tenant in a slot gets a new one */
	uint64_t qos_ns;
	struct policy_signal sig; /* the pressure this tenant exerts (per-tenant attribution) */
	/*
	 * Blocks of the tenant that may run at once, each of another query:
	 * its executors, each running one block at a time. colocd starts one
	 * executor process a tenant (1); the simulator can model more
	 * (coloc-sim --executors). 0 counts as 1.
	 */
	int executors;
	/*
	 * The mean time between its arrivals as measured (policy_arrivals);
	 * 0: not known. Weighs the arrivals an overdue query's block delays.
	 */
	uint64_t interval_ns;
};

/*
 * A tenant's arrivals, measured by whoever queues its queries (colocd,
 * coloc-sim) for policy_tenant.interval_ns: an EWMA of the gaps between
 * them (arrivals.c).
 */
struct policy_arrivals {
	uint64_t last_ns; /* the last arrival; 0: none yet */
	double mean_gap_ns; /* 0: fewer than two arrivals */
};

/* Notes an arrival at now_ns (not before the last one). */
void policy_arrivals_note(struct policy_arrivals *a, uint64_t now_ns);

/*
 * The mean time between arrivals at now_ns: the EWMA, and once the time
 * since the last arrival is longer (a tenant gone quiet), the EWMA as if
 * one arrived now; 0 before two.
 */
uint64_t policy_arrivals_interval_ns(const struct policy_arrivals *a, uint64_t now_ns);

/* t's executors: at least 1. */
static inline int policy_tenant_executors(const struct policy_tenant *t)
{
	return t->executors > 1 ? t->executors : 1;
}

struct policy_query {
	uint64_t id; /* unique among live queries */
	int tenant;
	uint64_t arrival_ns;
	uint64_t deadline_ns; /* arrival + the tenant's QoS */
	int next_layer; /* progress: layers [0, next_layer) are done */
	bool in_flight; /* a block of it is running (it is in input->running) */
};

struct policy_decision {
	uint64_t query_id;
	int tenant;
	int first_layer, last_layer; /* [first, last); first == the query's next_layer */
	const uint8_t *versions; /* [last - first]: version of layer first + i */
	struct policy_cpuset cores;
	int nr_cores; /* == count of cores, one of the model's core_counts */
	uint64_t decided_ns; /* now of the call that made it */
	double level; /* the slowdown the policy assumed (1.0 = alone) */
	uint64_t alone_ns; /* table latency of the block alone with these versions and cores */
	uint64_t predicted_ns; /* what the policy expects it to take */
	/*
	 * its cores were idle: alone_ns and predicted_ns include cold_scale,
	 * the model's cold ramp at their idle time (above 1); else cold_scale
	 * is 1 or 0 (not priced by policy_costs_start_cold())
	 */
	bool cold;
	double cold_scale;
};

struct policy_input {
	uint64_t now_ns;
	const struct policy_tenant *tenants; /* [nr_tenants], indexed by tenant id */
	int nr_tenants; /* <= POLICY_MAX_TENANTS */
	const struct policy_query *queries; /* queued and in flight, any order */
	int nr_queries;
	const struct policy_decision *running; /* blocks in flight, versions still valid */
	int nr_running;
	const struct policy_cpuset *free; /* cores the policy may grant now */
	/* [POLICY_MAX_CPUS] by CPU id, and [POLICY_MAX_CPUS] by LLC domain id; NULL: none */
	const struct policy_signal *cores;
	const struct policy_signal *domains;
	/*
	 * [POLICY_MAX_CPUS] by CPU id: when the last block on the core ended
	 * (0: none yet). NULL: not known, every block starts hot.
	 */
	const uint64_t *core_idle_since_ns;
};

/*
 * The price of a block of model m on cores started cold: m's cold ramp at
 * the shortest idle time among its cores at in->now_ns (a core running a
 * block of in->running, or whose last block ended after now, is idle 0; one
 * that never ran a block, 0 in core_idle_since_ns, is idle since ever).
 * Above 1 only when m has a ramp and the caller says when its cores last
 * ran a block; then d's cold is set, cold_scale is the price and alone_ns
 * and predicted_ns are scaled by it; otherwise d's cold_scale is set to 1.
 */
void policy_costs_start_cold(const struct policy_costs *m, const struct policy_input *in,
			     struct policy_decision *d);
/*
 * The scale policy_costs_start_cold() gives a block on cores (not empty):
 * 1 when hot. A policy that will give a block some of cores sizes the
 * block and decides its query's fate at the price the block will be given.
 */
double policy_costs_cold_scale_on(const struct policy_costs *m, const struct policy_input *in,
				  const struct policy_cpuset *cores);
/*
 * m's cold ramp after idle_ns idle: 1.0 at 0, linear between its points,
 * the last point's ratio beyond it; each point's ratio held to 1 to 4
 * (PROFILE_MAX_COLD_RATIO), 1 when m has no ramp.
 */
double policy_costs_cold_scale_at(const struct policy_costs *m, uint64_t idle_ns);
/* m's long-gap ratio (its ramp's last point, as held above): 1 when unknown. */
double policy_costs_cold_scale(const struct policy_costs *m);
/* ns times scale, saturated at UINT64_MAX. */
uint64_t policy_scale_ns(uint64_t ns, double scale);

/* ---- what goes out ------------------------------------------------------- */

enum policy_drop_reason {
	POLICY_DROP_DEADLINE_PASSED = 1, /* now is at or past its deadline */
	POLICY_DROP_CANNOT_MEET, /* its predicted finish on every core it could get is late */
};

struct policy_drop {
	uint64_t query_id;
	int tenant;
	enum policy_drop_reason reason;
	uint64_t predicted_ns; /* the remaining latency predicted (CANNOT_MEET), else 0 */
};

const char *policy_drop_reason_name(enum policy_drop_reason reason);

/*
 * Caller-provided storage for one call's results. The policy appends
 * decisions, their per-layer versions (decision->versions point into
 * versions[]) and drops, and stops when an array is full. Size versions[]
 * for max_decisions whole models of the largest tenant.
 */
struct policy_output {
	struct policy_decision *decisions;
	int max_decisions, nr_decisions;
	uint8_t *versions;
	int max_versions, nr_versions;
	struct policy_drop *drops;
	int max_drops, nr_drops;
};

/* Empties out for the next call (the arrays stay). */
void policy_output_reset(struct policy_output *out);

/* ---- the policies --------------------------------------------------------- */

enum policy_late {
	/*
	 * a query that cannot meet its deadline is dropped (the default), but
	 * only when its answer cannot come by its deadline plus its QoS; before
	 * that every policy serves it late, after the queries on time
	 * (docs/design/coloc-policy.md, "Late queries are demoted, not dropped")
	 */
	POLICY_LATE_DROP,
	POLICY_LATE_SERVE, /* ... is served anyway, late */
};

/* The machine and the knobs, fixed for a policy's life. */
struct policy_config {
	struct policy_cpuset online; /* every core the policy schedules */
	int llc[POLICY_MAX_CPUS]; /* LLC domain of each online core, 0 .. POLICY_MAX_CPUS - 1 */
	int socket[POLICY_MAX_CPUS]; /* socket (memory domain) of each online core */
	enum policy_late late;
	/*
	 * The slowdown of a block whose socket's other cores all run other
	 * blocks (their memory bandwidth), 1.0 at none busy, linear between:
	 * what each core a block takes costs every block beside it. 0 or 1:
	 * not known (colocd's, until it is measured on a many-core machine);
	 * the simulator passes its interference model's.
	 */
	double socket_slowdown;
};

/* The level estimated from finished blocks without a PMU: level_estimate.h. */

/*
 * The signals of each LLC domain (domains[], by domain id) from those of its
 * online cores (cores[], by CPU id): a field is live where one of its cores
 * has it; rates add up, ratios and levels are the mean over those cores.
 */
void policy_domain_signals(const struct policy_config *cfg, const struct policy_signal *cores,
			   struct policy_signal *domains);

struct policy;

struct policy_entry {
	const char *name; /* for --policy NAME */
	const char *description; /* one line, for --help */
	bool shares_cores; /* decisions may overlap on cores (the `os` baseline) */
	/* Allocates the policy's state; 0 or -errno with err filled. */
	int (*create)(const struct policy_config *cfg, void **state, struct coloc_err *err);
	int (*decide)(void *state, const struct policy_config *cfg, const struct policy_input *in,
		      struct policy_output *out, struct coloc_err *err);
	/* NULL: the policy does not learn. */
	void (*block_done)(void *state, const struct policy_decision *d, uint64_t measured_ns);
	void (*destroy)(void *state);
};

/* The policy named name, or NULL. */
const struct policy_entry *policy_find(const char *name);
/* The i-th entry of the table (i from 0), or NULL past its end: for listing. */
const struct policy_entry *policy_entry_at(int i);

/* Creates an instance of entry on the machine cfg (copied). NULL with err filled. */
struct policy *policy_create(const struct policy_entry *entry, const struct policy_config *cfg,
			     struct coloc_err *err);
void policy_destroy(struct policy *p);
const struct policy_entry *policy_entry_of(const struct policy *p);

/*
 * One decision round: appends to out (reset it first). Returns 0, or
 * -EINVAL with err filled when the input is inconsistent (a query of an
 * empty tenant slot, progress past the model's end, free cores outside the
 * machine); out then holds nothing.
 */
int policy_decide(struct policy *p, const struct policy_input *in, struct policy_output *out,
		  struct coloc_err *err);

/*
 * A block decided earlier finished after measured_ns. d is that decision
 * (its versions still valid). The policy may learn from it (VELTAIR's level,
 * Abacus's correction); it decides nothing here.
 */
void policy_block_done(struct policy *p, const struct policy_decision *d, uint64_t measured_ns);

/*
 * Verifies out against the input policy_decide() accepted: cores within
 * free and disjoint (unless entry->shares_cores), core counts profiled,
 * layers from next_layer within the model, versions measured, queries live
 * and not in flight (decided or dropped), none decided or dropped twice.
 * 0 or -EPROTO with what is wrong in err.
 */
int policy_check_output(const struct policy_entry *entry, const struct policy_input *in,
			const struct policy_output *out, struct coloc_err *err);

#endif /* COLOC_POLICY_H */
