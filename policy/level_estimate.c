// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The interference level estimated from finished blocks (level_estimate.h):
 * a tenant's norm, each core's EWMA of its blocks' evidence with its
 * variance and noise floor, their ageing towards 1.0 with the clock passed
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

bool policy_level_tenant_block(struct policy_level_tenant *t, uint64_t alone_ns,
			       uint64_t measured_ns, bool alone, struct policy_level_evidence *ev)
{
	double raw, w, aw;

	if (!alone_ns || !measured_ns)
		return false;
	raw = block_ratio(alone_ns, measured_ns);
	w = (double)alone_ns / ((double)alone_ns + POLICY_LEVEL_SMALL_BLOCK_NS);
	/* a norm that is not one (zeroed, or corrupt) is set again */
	if (!(t->norm > 0) || !isfinite(t->norm))
		t->norm = raw;
	ev->ratio = raw / t->norm;
	ev->weight = w;
	t->norm = (1 - POLICY_LEVEL_NORM_WEIGHT * w) * t->norm + POLICY_LEVEL_NORM_WEIGHT * w * raw;
	if (alone) {
		t->nr_alone++;
		aw = w * fmax(1.0 / (double)t->nr_alone, POLICY_LEVEL_NORM_WEIGHT);
		t->alone_var = (1 - aw) * t->alone_var + aw * (ev->ratio - 1) * (ev->ratio - 1);
	}
	ev->alone_var = t->alone_var;
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
	return policy_level_beyond_noise(policy_level_core_aged(c, now), c->var, c->floor_var,
					 POLICY_LEVEL_CORE_WEIGHT);
}

double policy_level_beyond_noise(double mean, double var, double floor_var, double weight)
{
	double v = var > floor_var ? var : floor_var;
	double se = v > 0 && weight > 0 && weight < 2 ? sqrt(v * weight / (2 - weight)) : 0;

	return mean - 2 * se > 1.0 ? mean - 2 * se : 1.0;
}
