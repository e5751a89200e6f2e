// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The policy's decisions of a round applied (sv_schedule): each block
 * started on its executor (execproc_submit_block) with its plan ahead and
 * its cores taken from the free set, each drop completed with why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "serving_internal.h"
#include "mono_clock.h"

static struct sv_query *find_query(struct sv_tenant *t, uint64_t id)
{
	for (struct sv_query *q = t->head; q; q = q->next)
		if (q->id == id)
			return q;
	return NULL;
}

void sv_apply_drop(struct serving *s, const struct policy_drop *d)
{
	struct sv_tenant *t = &s->tenants[d->tenant];
	struct sv_query *q = find_query(t, d->query_id);
	char reason[SERVING_REASON_LEN];
	uint64_t now = coloc_now_ns();

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
 * Submits b to executor x; a query's first block with its memfd, still
 * held where it is frozen (input_to_slot), which then goes along, or where
 * the executor's input socket is full, is read into the slot after all.
 */
static int submit_with_input(struct sv_tenant *t, struct sv_query *q, int x,
			     struct execproc_block *b, struct coloc_err *err)
{
	int ret;

	if (q->input_fd < 0 || b->first)
		return execproc_submit_block(t->ex[x].ep, b, err);
	b->input_memfd = &q->input_fd;
	ret = execproc_submit_block(t->ex[x].ep, b, err);
	if (ret == -EAGAIN) {
		b->input_memfd = NULL;
		*err = (struct coloc_err){ 0 };
		ret = execproc_input_allocated(t->ex[x].ep, (unsigned int)q->slot, err);
		if (!ret)
			ret = sv_read_memfd_into_slot(t, q, x, q->slot);
		if (ret && !err->code)
			coloc_err_set(err, ret, "reading the input's memfd: %s", strerror(-ret));
		if (!ret)
			ret = execproc_submit_block(t->ex[x].ep, b, err);
	} else if (!ret) {
		t->inputs_mapped++;
	}
	return ret;
}

/*
 * Starts d's block (and the plan ahead of it, serving_plan.c); false when
 * it could not be: the query failed, or none of its tenant's executors can
 * take it now (*refused set: the policy counts a tenant's idle executors,
 * not which of them holds which query, so two decisions of a round may
 * want the same one). in and nr_decisions: the round that decided it.
 */
bool sv_apply_decision(struct serving *s, const struct policy_input *in, int nr_decisions,
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
	e = sv_executor_for(t, q, &err);
	if (e < 0 && err.code) {
		sv_complete_query(s, t, q, SERVING_QUERY_FAILED, coloc_err_str(&err));
		return false;
	}
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
	sv_tenant_hold(s, t, true);
	command_of(s, q, x, ends, ncores, versions, cpus, nr_cpus, &b);
	if (submit_with_input(t, q, e, &b, &err)) {
		sv_complete_query(s, t, q, SERVING_QUERY_FAILED, coloc_err_str(&err));
		sv_tenant_hold(s, t, false);
		return false;
	}
	if (q->input_fd >= 0 && !b.first)
		sv_query_drop_input(s, t, q);
	x->busy = true;
	x->blk_query = q;
	x->blk_submit_ns = coloc_now_ns();
	x->over_since_ns = 0;
	x->over_excused = false;
	x->hang_waited_ns = 0;
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
