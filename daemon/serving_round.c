// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One policy round of the serving core (see serving.c's top comment): the
 * queued queries of each serving tenant take free executor slots (slots
 * and executors as policy/assign.h assigns them, as coloc-sim does), the
 * policy sees every query that holds a slot and could run now (the running
 * blocks' queries; one that started, when its executor is idle; one that
 * did not, when any of the tenant's executors is), its output is checked,
 * decisions start at once, drops complete.
 * Also where the per-core level comes from without a PMU: each finished
 * block is evidence for policy/level_estimate.h's estimator (the same one
 * coloc-sim runs), which the policy sees beyond its noise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "input_memfd.h"
#include "serving_internal.h"

bool sv_tenant_serving(const struct sv_tenant *t)
{
	return t->used && t->nr_exec > 0 && t->ex[0].ep &&
	       (t->state == SERVING_TENANT_READY || t->state == SERVING_TENANT_DRAINING);
}

/* t's executors as the assignment sees them (policy/assign.h). */
struct exec_views {
	struct policy_slot_view slot[SERVING_MAX_EXECUTORS][COLOC_SHM_NR_SLOTS];
	struct policy_exec_view ex[SERVING_MAX_EXECUTORS];
};

static struct policy_slot_view slot_view(const struct sv_query *q)
{
	if (!q)
		return (struct policy_slot_view){ 0 };
	return (struct policy_slot_view){ .used = true,
					  .started = q->next_layer > 0,
					  .in_flight = q->in_flight,
					  .arrival_ns = q->arrival_ns };
}

static void view_executors(const struct sv_tenant *t, struct exec_views *v)
{
	for (int x = 0; x < t->nr_exec; x++) {
		for (int k = 0; k < COLOC_SHM_NR_SLOTS; k++)
			v->slot[x][k] = slot_view(t->ex[x].slots[k]);
		v->ex[x] = (struct policy_exec_view){ .busy = t->ex[x].busy,
						      .nr_slots = COLOC_SHM_NR_SLOTS,
						      .slot = v->slot[x] };
	}
}

/* Queued queries of a serving tenant take free slots (policy_assign_slot), in arrival order. */
static void fill_slots(struct serving *s, struct sv_tenant *t)
{
	struct exec_views v;

	if (!sv_tenant_serving(t))
		return;
	view_executors(t, &v);
	for (struct sv_query *q = t->head, *next; q; q = next) {
		int best, slot, r = 0;
		void *dst;

		next = q->next;
		if (q->slot >= 0)
			continue;
		best = policy_assign_slot(v.ex, t->nr_exec);
		if (best < 0)
			return;
		slot = policy_assign_free_slot(&v.ex[best]);
		dst = execproc_input(t->ex[best].ep, (unsigned int)slot);
		/* a memfd is read straight into the slot: the input's one copy in colocd */
		if (q->input)
			memcpy(dst, q->input, t->in_bytes);
		else
			r = input_memfd_read(q->input_fd, q->input_offset, dst, t->in_bytes);
		if (r) { /* never run on what it did not send: the slot stays free */
			char reason[SERVING_REASON_LEN];

			snprintf(reason, sizeof(reason), "reading the input's memfd: %s",
				 strerror(-r));
			sv_complete_query(s, t, q, SERVING_QUERY_FAILED, reason);
			continue;
		}
		sv_query_drop_input(s, q);
		q->exec = best;
		q->slot = slot;
		t->ex[best].slots[slot] = q;
		v.slot[best][slot] = slot_view(q);
	}
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
	uint64_t now = sv_now_ns();
	int nq = 0, nr = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];
		struct policy_tenant *pt = &s->ptenants[i];
		struct exec_views v;

		memset(pt, 0, sizeof(*pt));
		if (!sv_tenant_serving(t))
			continue;
		pt->costs = &t->table.costs;
		pt->uid = t->uid;
		pt->qos_ns = t->qos_ns;
		pt->sig = t->sig;
		pt->executors = t->nr_exec; /* its processes, one block at a time each */
		for (int x = 0; x < t->nr_exec; x++)
			if (t->ex[x].busy)
				s->running[nr++] = t->ex[x].blk;
		view_executors(t, &v);
		for (struct sv_query *q = t->head; q; q = q->next) {
			/* what the policy sees: the queries in flight and those that could start */
			if (!q->in_flight &&
			    (q->slot < 0 ||
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
				     .domains = s->dom_sig_now };
}

static struct sv_query *find_query(struct sv_tenant *t, uint64_t id)
{
	for (struct sv_query *q = t->head; q; q = q->next)
		if (q->id == id)
			return q;
	return NULL;
}

static void apply_drop(struct serving *s, const struct policy_drop *d)
{
	struct sv_tenant *t = &s->tenants[d->tenant];
	struct sv_query *q = find_query(t, d->query_id);
	char reason[SERVING_REASON_LEN];
	uint64_t now = sv_now_ns();

	if (!q)
		return;
	if (d->reason == POLICY_DROP_CANNOT_MEET)
		snprintf(reason, sizeof(reason),
			 "%s: %.3f ms predicted for the rest, %.3f ms left to its deadline",
			 policy_drop_reason_name(d->reason), d->predicted_ns / 1e6,
			 q->deadline_ns > now ? (q->deadline_ns - now) / 1e6 : 0.0);
	else
		snprintf(reason, sizeof(reason), "%s: %.3f ms after arrival, QoS %.3f ms",
			 policy_drop_reason_name(d->reason), (now - q->arrival_ns) / 1e6,
			 t->qos_ns / 1e6);
	sv_complete_query(s, t, q, SERVING_QUERY_DROPPED, reason);
}

/*
 * Moves q (not started) into slot `slot` of executor to (policy_assign_move_slot's):
 * a free one, or one whose query has not started either, which takes q's
 * old slot (the inputs swapped through t->scratch).
 */
static void move_query(struct sv_tenant *t, struct sv_query *q, int to, int slot)
{
	struct sv_exec *from = &t->ex[q->exec], *x = &t->ex[to];
	struct sv_query *other = x->slots[slot];

	if (other)
		memcpy(t->scratch, execproc_input(x->ep, (unsigned int)slot), t->in_bytes);
	memcpy(execproc_input(x->ep, (unsigned int)slot),
	       execproc_input(from->ep, (unsigned int)q->slot), t->in_bytes);
	from->slots[q->slot] = other;
	if (other) {
		memcpy(execproc_input(from->ep, (unsigned int)q->slot), t->scratch, t->in_bytes);
		other->exec = q->exec;
		other->slot = q->slot;
	}
	x->slots[slot] = q;
	q->exec = to;
	q->slot = slot;
	t->moved++;
}

/* The executor q's next block runs on (policy_assign_executor), q moved there if need be; -1: none. */
static int executor_for(struct sv_tenant *t, struct sv_query *q)
{
	struct exec_views v;
	int e;

	view_executors(t, &v);
	e = policy_assign_executor(v.ex, t->nr_exec, q->exec, q->slot);
	if (e >= 0 && e != q->exec)
		move_query(t, q, e, policy_assign_move_slot(&v.ex[e]));
	return e;
}

/*
 * The hook where a tenant's held cores change: the block's cores with those
 * of its other blocks in flight, before the block starts on them.
 */
static void tell_tenant_cores(struct serving *s, const struct sv_tenant *t, const int *cpus, int nr)
{
	int held[POLICY_MAX_CPUS], n = 0;
	struct policy_cpuset set = { 0 };

	if (!s->tenant_cores)
		return;
	for (int i = 0; i < nr; i++)
		policy_cpuset_set(&set, cpus[i]);
	for (int x = 0; x < t->nr_exec; x++)
		for (int c = t->ex[x].busy ? policy_cpuset_next(&t->ex[x].blk.cores, 0) : -1;
		     c >= 0; c = policy_cpuset_next(&t->ex[x].blk.cores, c + 1))
			policy_cpuset_set(&set, c);
	for (int c = policy_cpuset_next(&set, 0); c >= 0; c = policy_cpuset_next(&set, c + 1))
		held[n++] = c;
	s->tenant_cores(s->ctx, t->name, held, n);
}

/* x's command as execproc takes it: its plan's blocks, versions and d's cores. */
static void command_of(const struct serving *s, const struct sv_query *q, const struct sv_exec *x,
		       unsigned int *ends, int *ncores, int *versions, int *cpus, int nr_cpus,
		       struct execproc_block *b)
{
	int last = x->plan[x->plan_nr - 1].last;

	for (int i = 0; i < x->plan_nr; i++) {
		ends[i] = (unsigned int)x->plan[i].last;
		ncores[i] = x->plan[i].nr_cores;
	}
	for (int i = 0; i < last - x->blk.first_layer; i++)
		versions[i] = x->blk_versions[i];
	*b = (struct execproc_block){ .slot = (unsigned int)q->slot,
				      .first = (unsigned int)x->blk.first_layer,
				      .last = (unsigned int)last,
				      .block_last = ends,
				      .block_cores = ncores,
				      .nr_blocks = x->plan_nr,
				      .query_id = (unsigned int)q->id,
				      .versions = versions,
				      .cpus = cpus,
				      .nr_cpus = nr_cpus,
				      .shared = s->entry->shares_cores };
}

/*
 * Starts d's block (and the plan ahead of it, serving_plan.c); false when
 * it could not be: the query failed, or none of its tenant's executors can
 * take it now (*refused set: the policy counts a tenant's idle executors,
 * not which of them holds which query, so two decisions of a round may
 * want the same one). in and nr_decisions: the round that decided it.
 */
static bool apply_decision(struct serving *s, const struct policy_input *in, int nr_decisions,
			   const struct policy_decision *d, bool *refused)
{
	struct sv_tenant *t = &s->tenants[d->tenant];
	struct sv_query *q = find_query(t, d->query_id);
	int n = d->last_layer - d->first_layer, nr_cpus = 0, e;
	int versions[COLOC_SHM_MAX_BLOCK_LAYERS], cpus[POLICY_MAX_CPUS];
	unsigned int ends[COLOC_SHM_MAX_PLAN_BLOCKS];
	int ncores[COLOC_SHM_MAX_PLAN_BLOCKS];
	struct coloc_err err = { 0 };
	struct execproc_block b;
	struct sv_exec *x;

	if (!q || q->slot < 0 || n > COLOC_SHM_MAX_BLOCK_LAYERS)
		return false;
	e = executor_for(t, q);
	if (e < 0) {
		*refused = true;
		return false;
	}
	x = &t->ex[e];
	x->blk = *d;
	memcpy(x->blk_versions, d->versions, (size_t)n);
	x->blk.versions = x->blk_versions;
	sv_plan_make(s, in, nr_decisions, x);
	for (int c = policy_cpuset_next(&x->blk.cores, 0); c >= 0;
	     c = policy_cpuset_next(&x->blk.cores, c + 1))
		cpus[nr_cpus++] = c;
	tell_tenant_cores(s, t, cpus, nr_cpus);
	command_of(s, q, x, ends, ncores, versions, cpus, nr_cpus, &b);
	if (execproc_submit_block(x->ep, &b, &err)) {
		sv_complete_query(s, t, q, SERVING_QUERY_FAILED, coloc_err_str(&err));
		return false;
	}
	x->busy = true;
	x->blk_query = q;
	x->blk_submit_ns = sv_now_ns();
	x->blk_corunners = sv_blocks_in_flight(s) - sv_tenant_busy(t);
	q->in_flight = true;
	/* shared cores (os) stay free for the other tenants and have no one owner */
	for (int i = 0; i < nr_cpus && !s->entry->shares_cores; i++) {
		s->owner[cpus[i]] = d->tenant;
		policy_cpuset_clear(&s->free, cpus[i]);
		if (s->core_changed)
			s->core_changed(s->ctx, cpus[i], t->name, q->id, d->first_layer,
					(int)b.last);
	}
	return true;
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
			fill_slots(s, &s->tenants[i]);
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
			progress |= apply_decision(s, &in, out.nr_decisions, &out.decisions[i],
						   &refused);
		for (int i = 0; i < out.nr_drops; i++)
			apply_drop(s, &out.drops[i]);
		progress |= out.nr_drops > 0;
		/* a refused decision: the next round sees which executors the others took */
		if (progress && (refused || out.nr_drops || out.nr_decisions == out.max_decisions))
			s->again = true;
	} while (s->again && ++rounds < SV_MAX_ROUNDS);
	s->scheduling = false;
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
	uint64_t now = sv_now_ns();
	struct policy_level_evidence ev;

	if (!policy_level_tenant_block(&t->level, d->alone_ns, ns, alone, &ev))
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
