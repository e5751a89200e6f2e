/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One coloc engine driven by hand for the prediction tests
 * (policy_robust_test, policy_unseen_test): tiny (policy_fixture.h) as
 * tenant 0, its first decision kept as the block to measure again and
 * again, and the engine's prediction of a block read from its state
 * (coloc_internal.h).
 */
#ifndef COLOC_TESTS_POLICY_ENGINE_FIXTURE_H
#define COLOC_TESTS_POLICY_ENGINE_FIXTURE_H

#include <string.h>
#include "policy_fixture.h"
#include "coloc_internal.h"

struct engine {
	const struct policy_entry *e;
	void *state;
	struct policy_decision d; /* the first decision; tests set its layers and cores */
	uint8_t versions[3]; /* the decision's */
	uint64_t now; /* the end of the last block measured */
	int n; /* blocks measured */
};

/* The coloc engine of that name with tiny as tenant 0, through one round on 4 cores. */
static inline bool engine_start(FIXTURE_DATA(pol) * self, struct engine *g, const char *name)
{
	memset(g, 0, sizeof(*g));
	g->e = policy_find(name);
	if (!g->e || g->e->create(&self->cfg, &g->state, &self->err))
		return false;
	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	self->free = cpus_of((const int[]){ 0, 1, 2, 3 }, 4);
	self->in.nr_queries = 0;
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	policy_output_reset(&self->out);
	if (g->e->decide(g->state, &self->cfg, &self->in, &self->out, &self->err) ||
	    self->out.nr_decisions != 1)
		return false;
	g->d = self->decisions[0];
	memcpy(g->versions, g->d.versions, sizeof(g->versions));
	g->d.versions = g->versions;
	g->d.cold = false;
	return true;
}

/* The engine's prediction, as of its last block's end, of layers [first, last) at core index ci. */
static inline double engine_predict(struct engine *g, int first, int last, int ci, double raw)
{
	struct coloc_tenant *ct = &((struct coloc_state *)g->state)->t[0];
	struct block_pred p =
		coloc_class_pred(g->state, ct, first, last, ci, coloc_aged_corr(ct, g->now),
				 coloc_aged_fixed(ct, g->now), g->now);

	return coloc_predicted(p, (uint64_t)raw);
}

/* a within a factor f of b */
static inline bool within(double a, double b, double f)
{
	return a <= b * f && b <= a * f;
}

#endif /* COLOC_TESTS_POLICY_ENGINE_FIXTURE_H */
