// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Plan ahead: no round trip through colocd between consecutive blocks of a
 * plan that has not changed (docs/design/serving-path.md). While a query is
 * the only one colocd holds, what the policy would decide at each of its
 * block boundaries depends on nothing that can change meanwhile but what
 * the blocks teach it; so the policy is asked for the following blocks at
 * once, each with the query advanced past the one before, and those that
 * keep the first block's cores go to the executor in one command. An event
 * that may change the plan (another query, a tenant come or gone) sets the
 * command's yield word, and the executor stops at its next boundary. The
 * policy stays pure: it is called as in any round, on an input colocd
 * builds.
 */
#include <stdio.h>
#include <string.h>
#include "serving_internal.h"
#include "util.h"

/* Tenants taking queries now: one coming or going may change any plan. */
static int serving_tenants(const struct serving *s)
{
	int n = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++)
		n += sv_tenant_serving(&s->tenants[i]);
	return n;
}

/* A plan of more than the decided block: on, a query alone, nothing else running. */
static bool may_plan(const struct serving *s, const struct policy_input *in, int nr_decisions)
{
	return s->plan_ahead && !s->entry->shares_cores && s->nr_live == 1 &&
	       in->nr_queries == 1 && in->nr_running == 0 && nr_decisions == 1;
}

/* The first n cores of set, in CPU order. */
static struct policy_cpuset first_cores(const struct policy_cpuset *set, int n)
{
	struct policy_cpuset out = { 0 };

	for (int c = policy_cpuset_next(set, 0); c >= 0 && n > 0; c = policy_cpuset_next(set, c + 1))
		policy_cpuset_set(&out, c), n--;
	return out;
}

/*
 * Whether a block on cores fits the plan holding *held: on its first
 * cores, or on all of them and more above them (the plan then holds
 * those too, its earlier blocks still on its first cores). *held grows.
 */
static bool fits_cores(struct policy_cpuset *held, const struct policy_cpuset *cores, int nr)
{
	struct policy_cpuset first = first_cores(held, nr), below = *held;
	int top = -1;

	if (!memcmp(&first, cores, sizeof(first)))
		return true;
	for (int c = policy_cpuset_next(held, 0); c >= 0; c = policy_cpuset_next(held, c + 1))
		top = c;
	policy_cpuset_andnot(&below, cores);
	if (policy_cpuset_count(&below))
		return false; /* not a superset */
	below = *cores;
	policy_cpuset_andnot(&below, held);
	if (policy_cpuset_next(&below, 0) <= top)
		return false; /* a new core below one held */
	*held = *cores;
	return true;
}

/*
 * The policy's next block for the plan's query once [.., from) is done,
 * predicted to start after ahead_ns: its one decision, when it continues
 * the plan on its cores and within one command; false otherwise.
 */
static bool next_block(struct serving *s, const struct policy_input *in, struct sv_exec *x,
		       int from, uint64_t ahead_ns, struct policy_decision *next)
{
	struct policy_query q = in->queries[0];
	struct policy_decision dec[2];
	struct policy_drop drops[2];
	struct policy_output out = { .decisions = dec,
				     .max_decisions = 2,
				     .versions = s->plan_versions,
				     .max_versions = s->max_plan_versions,
				     .drops = drops,
				     .max_drops = 2 };
	struct policy_input ahead = *in;
	struct coloc_err err = { 0 };

	q.next_layer = from;
	q.in_flight = false;
	ahead.queries = &q;
	ahead.now_ns = coloc_sat_add_u64(in->now_ns, ahead_ns); /* util.h: cells may be absurd */
	ahead.core_idle_since_ns = NULL; /* its cores run the block before: it starts hot */
	if (policy_decide(s->policy, &ahead, &out, &err) ||
	    policy_check_output(s->entry, &ahead, &out, &err))
		return false;
	if (out.nr_decisions != 1 || out.nr_drops || dec[0].query_id != q.id ||
	    dec[0].first_layer != from ||
	    dec[0].last_layer - x->blk.first_layer > COLOC_SHM_MAX_BLOCK_LAYERS ||
	    !policy_cpuset_subset(&dec[0].cores, in->free) ||
	    !fits_cores(&x->blk.cores, &dec[0].cores, dec[0].nr_cores))
		return false;
	*next = dec[0];
	return true;
}

int sv_plan_make(struct serving *s, const struct policy_input *in, int nr_decisions,
		 struct sv_exec *x)
{
	const struct policy_decision *d = &x->blk;
	const struct sv_tenant *t = &s->tenants[d->tenant];
	uint64_t ahead = d->predicted_ns;
	struct policy_decision next;

	x->plan[0] = (struct sv_plan_block){ .first = d->first_layer,
					     .last = d->last_layer,
					     .nr_cores = d->nr_cores,
					     .level = d->level,
					     .alone_ns = d->alone_ns,
					     .predicted_ns = d->predicted_ns,
					     .cold = d->cold,
					     .cold_scale = d->cold_scale };
	x->plan_nr = 1;
	x->plan_yielded = false;
	if (!may_plan(s, in, nr_decisions))
		return 1;
	s->plan_tenants = serving_tenants(s);
	while (x->plan_nr < COLOC_SHM_MAX_PLAN_BLOCKS &&
	       x->plan[x->plan_nr - 1].last < t->nr_layers &&
	       next_block(s, in, x, x->plan[x->plan_nr - 1].last, ahead, &next)) {
		memcpy(x->blk_versions + (next.first_layer - d->first_layer), next.versions,
		       (size_t)(next.last_layer - next.first_layer));
		x->plan[x->plan_nr++] = (struct sv_plan_block){ .first = next.first_layer,
								.last = next.last_layer,
								.nr_cores = next.nr_cores,
								.level = next.level,
								.alone_ns = next.alone_ns,
								.predicted_ns = next.predicted_ns,
								.cold = next.cold,
								.cold_scale = next.cold_scale };
		ahead = coloc_sat_add_u64(ahead, next.predicted_ns);
	}
	x->blk.nr_cores = policy_cpuset_count(&x->blk.cores);
	return x->plan_nr;
}

struct policy_decision sv_plan_decision(const struct sv_exec *x, int i)
{
	struct policy_decision d = x->blk;
	const struct sv_plan_block *p = &x->plan[i];

	d.first_layer = p->first;
	d.last_layer = p->last;
	d.nr_cores = p->nr_cores;
	d.cores = first_cores(&x->blk.cores, p->nr_cores);
	d.level = p->level;
	d.alone_ns = p->alone_ns;
	d.predicted_ns = p->predicted_ns;
	d.cold = p->cold;
	d.cold_scale = p->cold_scale;
	d.versions = x->blk_versions + (p->first - x->blk.first_layer);
	return d;
}

void sv_plan_yield(struct serving *s)
{
	int changed = -1;

	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		for (int e = 0; t->used && e < t->nr_exec; e++) {
			struct sv_exec *x = &t->ex[e];

			if (!x->busy || x->plan_nr < 2 || x->plan_yielded)
				continue;
			if (changed < 0)
				changed = s->nr_live > 1 || serving_tenants(s) != s->plan_tenants;
			if (changed) {
				execproc_yield(x->ep);
				x->plan_yielded = true;
			}
		}
	}
}
