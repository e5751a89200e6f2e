// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving core's policy round (serving.h): sv_schedule gives queued
 * queries free executor slots (serving_slots.c), hands the policy every
 * query that could run now, checks what it decided and applies it
 * (serving_decision.c). Also here: each core's level estimated from
 * finished blocks (policy/level_estimate.h, as coloc-sim estimates it),
 * and a block's cores given back. Queries come in and complete in
 * serving_queries.c; a tenant's executor processes are in
 * serving_tenant.c, admission in serving_admit.c, plan ahead in
 * serving_plan.c, executor events in serving_events.c, what status shows
 * in serving_view.c, serving_create and serving_destroy in
 * serving_create.c.
 *
 * A round runs after anything that could allow a decision: an arrival, a
 * completion (serving_handle_fd), a tenant coming, failing or going.
 * A tenant's nr_exec executors are started, ready and failed together; a
 * queued query takes a slot on the one with the fewest queries, and one
 * that has not started may move to another that is idle when the policy
 * decides its first block.
 *
 * Cores: a block's cores leave the free set and are owned by its tenant
 * (owner[], core_changed) until it finishes; the executor pins one team
 * thread per core. Under a policy that shares cores (os) decisions overlap:
 * cores never leave the free set, no core has an owner (core_changed is
 * never called, so colocd's core_owner map shows every core free), and the
 * executor runs the block unpinned on its cores (execproc_block.shared),
 * the kernel sharing them between tenants.
 *
 * Completion callbacks run last on a query, after it has left every list,
 * and may call serving_submit (a round in progress then repeats); they must
 * not call serving_remove, serving_restart or serving_destroy.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include "serving_internal.h"
#include "mono_clock.h"

struct sv_tenant *sv_find_tenant(const struct serving *s, const char *name)
{
	for (int i = 0; i < SV_MAX_TENANTS; i++)
		if (s->tenants[i].used && !strcmp(s->tenants[i].name, name))
			return (struct sv_tenant *)&s->tenants[i];
	return NULL;
}

static int tenant_index(const struct serving *s, const struct sv_tenant *t)
{
	return (int)(t - s->tenants);
}

int sv_tenant_busy(const struct sv_tenant *t)
{
	int n = 0;

	for (int x = 0; x < t->nr_exec; x++)
		n += t->ex[x].busy;
	return n;
}

int sv_blocks_in_flight(const struct serving *s)
{
	int n = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++)
		if (s->tenants[i].used)
			n += sv_tenant_busy(&s->tenants[i]);
	return n;
}

/* ---- the round -------------------------------------------------------------- */

bool sv_tenant_serving(const struct sv_tenant *t)
{
	return t->used && t->nr_exec > 0 && t->ex[0].ep &&
	       (t->state == SERVING_TENANT_READY || t->state == SERVING_TENANT_DRAINING);
}

double sv_core_level(const struct serving *s, int c, uint64_t now)
{
	if (s->core_sig[c].live & POLICY_SIG_LEVEL_PMU)
		return policy_level_core_aged(&s->core_level[c], now);
	return policy_level_core_level(&s->core_level[c], now);
}

static void age_signals(struct serving *s, uint64_t now)
{
	for (int i = 0; i < s->nr_cpus; i++) {
		int c = s->cpus[i];

		s->core_sig_now[c] = s->core_sig[c];
		s->core_sig_now[c].slowdown = sv_core_level(s, c, now);
	}
	policy_domain_signals(&s->pcfg, s->core_sig_now, s->dom_sig_now);
}

static void build_input(struct serving *s, struct policy_input *in)
{
	uint64_t now = coloc_now_ns();
	int nq = 0, nr = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];
		struct policy_tenant *pt = &s->ptenants[i];
		struct sv_exec_views v;

		memset(pt, 0, sizeof(*pt));
		if (!sv_tenant_serving(t))
			continue;
		pt->costs = &t->table.costs;
		pt->uid = t->uid;
		pt->qos_ns = t->qos_ns;
		pt->sig = t->sig;
		pt->interval_ns = policy_arrivals_interval_ns(&t->arrivals, now);
		/* its processes, one block at a time each, but those late (serving_overrun.c) */
		pt->executors = t->strikes ? 1 : t->nr_exec - sv_tenant_late(t);
		for (int x = 0; x < t->nr_exec; x++)
			if (t->ex[x].busy && !t->ex[x].late)
				s->running[nr++] = t->ex[x].blk;
		sv_view_executors(t, &v);
		for (struct sv_query *q = t->head; q; q = q->next) {
			/* what the policy sees: the queries in flight and those that could start */
			if (!q->in_flight &&
			    (q->slot < 0 || !sv_overrun_may_start(t) ||
			     !policy_assign_runnable(v.ex, t->nr_exec, q->exec, q->slot)))
				continue;
			s->pqueries[nq++] = (struct policy_query){ .id = q->id,
								   .tenant = i,
								   .arrival_ns = q->arrival_ns,
								   .deadline_ns = q->deadline_ns,
								   .next_layer = q->next_layer,
								   .in_flight = q->in_flight };
		}
	}
	age_signals(s, now);
	*in = (struct policy_input){ .now_ns = now,
				     .tenants = s->ptenants,
				     .nr_tenants = SV_MAX_TENANTS,
				     .queries = s->pqueries,
				     .nr_queries = nq,
				     .running = s->running,
				     .nr_running = nr,
				     .free = &s->free,
				     .cores = s->core_sig_now,
				     .domains = s->dom_sig_now,
				     .core_idle_since_ns = s->core_idle_since };
}

void sv_schedule(struct serving *s)
{
	struct policy_output out = { .decisions = s->decisions,
				     .max_decisions = SV_MAX_TENANTS * SERVING_MAX_EXECUTORS,
				     .versions = s->versions,
				     .max_versions = s->max_versions,
				     .drops = s->drops,
				     .max_drops = (int)(sizeof(s->drops) / sizeof(*s->drops)) };
	int rounds = 0;

	sv_plan_yield(s);
	if (s->scheduling) {
		s->again = true;
		return;
	}
	s->scheduling = true;
	do {
		struct policy_input in;
		struct coloc_err err = { 0 };
		bool progress = false, refused = false;

		s->again = false;
		for (int i = 0; i < SV_MAX_TENANTS; i++)
			sv_fill_slots(s, &s->tenants[i]);
		build_input(s, &in);
		if (!in.nr_queries)
			break;
		policy_output_reset(&out);
		/*
		 * A policy that errs or breaks its contract decides nothing this
		 * round: queries wait (their deadlines still apply at the next).
		 */
		if (policy_decide(s->policy, &in, &out, &err) ||
		    policy_check_output(s->entry, &in, &out, &err)) {
			s->policy_errors++;
			snprintf(s->policy_error, sizeof(s->policy_error), "%s",
				 coloc_err_str(&err));
			break;
		}
		for (int i = 0; i < out.nr_decisions; i++)
			progress |= sv_apply_decision(s, &in, out.nr_decisions, &out.decisions[i],
						   &refused);
		for (int i = 0; i < out.nr_drops; i++)
			sv_apply_drop(s, &out.drops[i]);
		progress |= out.nr_drops > 0;
		/* a refused decision: the next round sees which executors the others took */
		if (progress && (refused || out.nr_drops || out.nr_decisions == out.max_decisions))
			s->again = true;
	} while (s->again && ++rounds < SV_MAX_ROUNDS);
	s->scheduling = false;
	sv_tenant_idle_flush(s);
	/* a drop may have taken a draining tenant's last query: no event of its own follows */
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		if (t->used && t->removing && t->state == SERVING_TENANT_DRAINING &&
		    !t->nr_queries && !sv_tenant_busy(t))
			sv_finish_removal(s, t);
	}
}

void sv_update_slowdown(struct serving *s, struct sv_tenant *t, const struct policy_decision *d,
			uint64_t ns, bool alone)
{
	uint64_t now = coloc_now_ns();
	struct policy_level_evidence ev;

	if (!policy_level_tenant_block(&t->level, d->nr_cores, d->alone_ns, ns, alone, &ev))
		return;
	for (int c = policy_cpuset_next(&d->cores, 0); c >= 0;
	     c = policy_cpuset_next(&d->cores, c + 1)) {
		/* the PMU level model measures this core's level (serving_signal.c) */
		if (s->core_sig[c].live & POLICY_SIG_LEVEL_PMU)
			continue;
		policy_level_core_block(&s->core_level[c], &ev, now);
		s->core_sig[c].live |= POLICY_SIG_SLOWDOWN;
	}
}

void sv_release_block_cores(struct serving *s, struct sv_tenant *t, struct sv_exec *x)
{
	int idx = tenant_index(s, t);
	uint64_t now = coloc_now_ns();

	if (!x->busy)
		return;
	/* a late command's cores went back when it overran (serving_overrun.c) */
	for (int c = x->late ? -1 : policy_cpuset_next(&x->blk.cores, 0); c >= 0;
	     c = policy_cpuset_next(&x->blk.cores, c + 1)) {
		s->core_idle_since[c] = now;
		if (s->owner[c] == idx) {
			s->owner[c] = -1;
			policy_cpuset_set(&s->free, c);
			if (s->core_changed)
				s->core_changed(s->ctx, c, NULL, 0, 0, 0);
		}
	}
	x->busy = false;
	x->late = false;
	if (x->blk_query)
		x->blk_query->in_flight = false;
	x->blk_query = NULL;
	sv_tenant_hold(s, t, false);
}
