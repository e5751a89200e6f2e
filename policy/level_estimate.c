// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The interference level estimated from finished blocks (level_estimate.h):
 * a tenant's norm and noise from its blocks alone (by core count), each
 * core's EWMA of the evidence of blocks beside others' with its variance
 * and noise floors, their ageing towards 1.0 with the clock passed
 * in, and the test of a level against its noise. colocd and coloc-sim call
 * these same functions; docs/design/level-estimate.md says why each part
 * is there.
 */
#include <math.h>
#include "level_estimate.h"

/* measured / alone, within [1 / POLICY_LEVEL_MAX_RATIO, POLICY_LEVEL_MAX_RATIO] */
static double block_ratio(uint64_t alone_ns, uint64_t measured_ns)
{
	double r = (double)measured_ns / (double)alone_ns;

	return fmin(fmax(r, 1.0 / POLICY_LEVEL_MAX_RATIO), POLICY_LEVEL_MAX_RATIO);
}

/* The bucket of a core count: 1, 2, 3-4, 5-8, ... */
static int count_bucket(int nr_cores)
{
	int b = 0;

	for (int n = nr_cores > 1 ? nr_cores - 1 : 0; n && b < POLICY_LEVEL_COUNT_BUCKETS - 1;
	     n >>= 1)
		b++;
	return b;
}

/* A block alone of ratio raw and weight w counts in a's norm and noise. */
static void alone_block(struct policy_level_alone *a, double raw, double w)
{
	double aw, ratio, cw = POLICY_LEVEL_CORE_WEIGHT * w;

	/* a norm that is not one (zeroed, or corrupt) is set again */
	if (!(a->norm > 0) || !isfinite(a->norm))
		*a = (struct policy_level_alone){ .norm = raw };
	a->nr++;
	aw = w * fmax(1.0 / (double)a->nr, POLICY_LEVEL_NORM_WEIGHT);
	ratio = raw / a->norm;
	a->norm = (1 - aw) * a->norm + aw * raw;
	a->var = (1 - aw) * a->var + aw * (ratio - 1) * (ratio - 1);
	a->level_excess = (1 - cw) * a->level_excess + cw * (ratio - 1);
	a->level_var = (1 - aw) * a->level_var + aw * a->level_excess * a->level_excess;
}

bool policy_level_tenant_block(struct policy_level_tenant *t, int nr_cores, uint64_t alone_ns,
			       uint64_t measured_ns, bool alone, struct policy_level_evidence *ev)
{
	struct policy_level_alone *a = &t->alone[count_bucket(nr_cores)];
	double raw, w;

	if (!alone_ns || !measured_ns)
		return false;
	raw = block_ratio(alone_ns, measured_ns);
	w = (double)alone_ns / ((double)alone_ns + POLICY_LEVEL_SMALL_BLOCK_NS);
	if (alone) {
		alone_block(a, raw, w);
		return false;
	}
	if (a->nr < POLICY_LEVEL_MIN_ALONE || !(a->norm > 0) || !isfinite(a->norm))
		return false;
	*ev = (struct policy_level_evidence){ .ratio = raw / a->norm,
					      .weight = w,
					      .alone_var = a->var,
					      .alone_level_var = a->level_var };
	return true;
}

double policy_level_core_aged(const struct policy_level_core *c, uint64_t now)
{
	if (!c->live)
		return 1.0;
	if (now <= c->at_ns)
		return c->slowdown;
	return 1.0 + (c->slowdown - 1.0) *
			     exp2(-(double)(now - c->at_ns) / (double)POLICY_LEVEL_HALF_LIFE_NS);
}

void policy_level_core_block(struct policy_level_core *c, const struct policy_level_evidence *ev,
			     uint64_t now)
{
	/* from the prior (1.0) on the first block: one block is not a level */
	double prev = policy_level_core_aged(c, now);
	double a = POLICY_LEVEL_CORE_WEIGHT * ev->weight;

	c->var = (1 - a) * c->var + a * (ev->ratio - prev) * (ev->ratio - prev);
	c->floor_var = (1 - a) * c->floor_var + a * ev->alone_var;
	c->floor_level_var = (1 - a) * c->floor_level_var + a * ev->alone_level_var;
	c->weight_sum = (1 - a) * c->weight_sum + a;
	c->slowdown = (1 - a) * prev + a * ev->ratio;
	c->live = true;
	c->at_ns = now;
}

void policy_level_core_set(struct policy_level_core *c, double slowdown, uint64_t now)
{
	c->slowdown = slowdown;
	c->live = true;
	c->at_ns = now;
}

double policy_level_core_level(const struct policy_level_core *c, uint64_t now)
{
	const double w = POLICY_LEVEL_CORE_WEIGHT;
	double n = c->weight_sum > 0 ? c->weight_sum : 1.0;
	/* the alone level's own spread, as the block variance that gives that EWMA's */
	double floor = fmax(c->floor_var, c->floor_level_var * (2 - w) / w) / n;

	return policy_level_beyond_noise(policy_level_core_aged(c, now), c->var / n, floor, w);
}

double policy_level_beyond_noise(double mean, double var, double floor_var, double weight)
{
	double v = var > floor_var ? var : floor_var;
	double se = v > 0 && weight > 0 && weight < 2 ? sqrt(v * weight / (2 - weight)) : 0;

	return mean - 2 * se > 1.0 ? mean - 2 * se : 1.0;
}
