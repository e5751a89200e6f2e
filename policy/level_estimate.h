/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The interference level estimated from finished blocks, without a PMU:
 * pure, the clock passed in. colocd (daemon/serving.c) and coloc-sim
 * (sim/run.c) feed it the same evidence, each block's measured time against
 * its table time alone, and read each core's level from it.
 *
 * A tenant's blocks run slower than its table on an idle machine too (a
 * profile times layers one at a time with their weights in cache; a block
 * adds its command and re-pinning), so a block's evidence is its ratio
 * measured / alone over the tenant's usual such ratio alone, its norm (one
 * per core count: a block on one core and one on two differ alone). Only
 * a block that started beside another tenant's is evidence of
 * interference; the blocks that started alone make the norm and the
 * noise, which on a VM is its slow spells, not interference. A core's
 * slowdown is an EWMA of that evidence from 1.0 (a block weighs in
 * proportion to its size), aged back towards 1.0 while no block runs
 * there; the policy sees it beyond its noise (the same EWMA of the blocks'
 * squared deviations, and the noise the same EWMA shows over its tenants'
 * blocks alone), so that slow blocks alone, or a VM's spell, are not a
 * level. The reasoning and the constants' history:
 * docs/design/level-estimate.md.
 */
#ifndef COLOC_POLICY_LEVEL_ESTIMATE_H
#define COLOC_POLICY_LEVEL_ESTIMATE_H

#include <stdbool.h>
#include <stdint.h>

/* Weight of a new block in a core's smoothed slowdown (and its variance). */
#define POLICY_LEVEL_CORE_WEIGHT 0.3
/*
 * A core's slowdown is evidence from the blocks that ran there; with none
 * for this long, half of its excess over 1.0 is forgotten: a policy that
 * drops every query on a high reading must see it fall again.
 */
#define POLICY_LEVEL_HALF_LIFE_NS 500000000ull
/* Weight of a block in its tenant's norm: slow, so a spell of interference shows for ~20 blocks. */
#define POLICY_LEVEL_NORM_WEIGHT 0.05
/* A block of this alone time weighs half in the norm and the level (mostly command and wake-up). */
#define POLICY_LEVEL_SMALL_BLOCK_NS 100000.0
/*
 * Blocks alone a tenant must have run on a core count before its blocks
 * beside others on that count are evidence: a level is tested against
 * the noise measured alone, and there is none before.
 */
#define POLICY_LEVEL_MIN_ALONE 5
/* Core counts with a norm of their own: 1, 2, 3-4, 5-8, ... by powers of two; more share the last. */
#define POLICY_LEVEL_COUNT_BUCKETS 8
/*
 * A block's ratio measured / alone is taken within [1 / this, this]: a
 * hostile or broken time (an executor that reports 0 or years) moves the
 * estimate as one very slow or very fast block does, and never overflows it.
 */
#define POLICY_LEVEL_MAX_RATIO 1000.0

/*
 * A tenant's blocks on one core count that started with no other tenant's
 * block in flight. Zeroed: none yet. The first POLICY_LEVEL_MIN_ALONE /
 * POLICY_LEVEL_NORM_WEIGHT of them weigh as a running mean, the rest as an
 * EWMA of that weight (times each block's weight).
 */
struct policy_level_alone {
	double norm; /* their usual measured / alone ratio, 0 before the first */
	double var; /* the mean squared deviation of their ratio over norm from 1.0 */
	/*
	 * A core's EWMA (POLICY_LEVEL_CORE_WEIGHT) run over these blocks'
	 * ratios over norm, as its excess over 1.0, and the mean square of
	 * that excess: how high noise alone lifts a level, spells included
	 * (a run of slow blocks moves it as it would move a core's).
	 */
	double level_excess;
	double level_var;
	uint64_t nr;
};

/* What the estimator knows of one tenant's blocks. Zeroed: no block yet. */
struct policy_level_tenant {
	struct policy_level_alone alone[POLICY_LEVEL_COUNT_BUCKETS]; /* by core count */
};

/* One core's estimate. Zeroed: no evidence (its level is 1.0). */
struct policy_level_core {
	bool live; /* slowdown was set, by a block or by policy_level_core_set() */
	double slowdown; /* as of at_ns */
	uint64_t at_ns;
	double var; /* smoothed squared deviation of blocks' evidence from slowdown */
	double floor_var; /* the alone var of the tenants whose blocks ran here, smoothed alike */
	double floor_level_var; /* their alone level_var, smoothed alike */
	/* the weight the EWMAs took from their start (0): each is read over it, unbiased */
	double weight_sum;
};

/* One finished block's evidence of interference, from policy_level_tenant_block(). */
struct policy_level_evidence {
	double ratio; /* measured / alone over the tenant's norm alone on its core count */
	double weight; /* alone / (alone + POLICY_LEVEL_SMALL_BLOCK_NS), in (0, 1) */
	double alone_var; /* that policy_level_alone's var */
	double alone_level_var; /* and its level_var */
};

/*
 * A block of tenant t on nr_cores cores (below 1: 1) that is alone_ns in
 * its table alone took measured_ns. With alone (no other tenant's block in
 * flight when it started) it counts in t's norm and noise on its core
 * count and is no evidence of interference: false. Otherwise fills *ev
 * with its evidence for its cores and returns true, once t has
 * POLICY_LEVEL_MIN_ALONE blocks alone on that count (false before: no
 * noise to test against); t's norm is not moved, so a lasting slowdown
 * beside others stays a level. False, t unchanged, when either time is 0.
 */
bool policy_level_tenant_block(struct policy_level_tenant *t, int nr_cores, uint64_t alone_ns,
			       uint64_t measured_ns, bool alone, struct policy_level_evidence *ev);

/*
 * Core c ran a block whose evidence is ev, ending at now: its slowdown
 * moves from its value aged to now (the prior 1.0 on the first block)
 * towards ev->ratio with weight POLICY_LEVEL_CORE_WEIGHT x ev->weight, its
 * variance and noise floors alike.
 */
void policy_level_core_block(struct policy_level_core *c, const struct policy_level_evidence *ev,
			     uint64_t now);

/* Core c's slowdown measured otherwise (colocd's PMU level model) at now. */
void policy_level_core_set(struct policy_level_core *c, double slowdown, uint64_t now);

/* Core c's slowdown as of now: its excess over 1.0 halves every half-life; 1.0 when none. */
double policy_level_core_aged(const struct policy_level_core *c, uint64_t now);

/*
 * Core c's level as of now, beyond its noise: policy_level_beyond_noise()
 * of the aged slowdown, its variance and floor (each over weight_sum), and
 * POLICY_LEVEL_CORE_WEIGHT, the floor raised to what the alone level_var
 * says where that is more (a spell alone lifts an EWMA more than
 * independent blocks would).
 */
double policy_level_core_level(const struct policy_level_core *c, uint64_t now);

/*
 * A level measured by an EWMA of weight `weight` (mean, and var the same
 * EWMA of the samples' squared deviation from it), tested against noise:
 * floor_var is the variance the samples show with no other tenant's block
 * beside them (their own noise: wake-ups, a VM's steal; 0 when unknown).
 * The test is against the larger of the two: the EWMA's standard error is
 * sqrt(max(var, floor_var) x weight / (2 - weight)); the level is what the
 * mean exceeds 1.0 by beyond two of them (1.0 when it does not). So one
 * slow block is not a level, nor are a few slow blocks in a row of a tenant
 * whose blocks alone are that noisy, and a level that stays is one the
 * noise does not explain (VELTAIR's level is a slowdown; on a VM a single
 * block can run 3x its usual time with nothing beside it). Below it, coloc
 * keeps each layer's fastest alone version.
 */
double policy_level_beyond_noise(double mean, double var, double floor_var, double weight);

#endif /* COLOC_POLICY_LEVEL_ESTIMATE_H */
