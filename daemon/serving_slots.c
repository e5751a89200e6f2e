// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A tenant's queries in its executors' slots (policy/assign.h, as coloc-sim
 * assigns them): queued queries take free slots in arrival order, their
 * input copied or read from its memfd into the slot, and a query not
 * started moves to the executor the policy's block runs on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "input_memfd.h"
#include "serving_internal.h"

static struct policy_slot_view slot_view(const struct sv_query *q)
{
	if (!q)
		return (struct policy_slot_view){ 0 };
	return (struct policy_slot_view){ .used = true,
					  .started = q->next_layer > 0,
					  .in_flight = q->in_flight,
					  .arrival_ns = q->arrival_ns };
}

void sv_view_executors(const struct sv_tenant *t, struct sv_exec_views *v)
{
	for (int x = 0; x < t->nr_exec; x++) {
		for (int k = 0; k < COLOC_SHM_NR_SLOTS; k++)
			v->slot[x][k] = slot_view(t->ex[x].slots[k]);
		v->ex[x] = (struct policy_exec_view){ .busy = t->ex[x].busy,
						      .nr_slots = COLOC_SHM_NR_SLOTS,
						      .slot = v->slot[x] };
	}
}

int sv_read_memfd_into_slot(struct sv_tenant *t, const struct sv_query *q, int x, int slot)
{
	return input_memfd_read(q->input_fd, q->input_offset,
				execproc_input(t->ex[x].ep, (unsigned int)slot), t->in_bytes);
}

/*
 * Query q's input into slot of executor x: a copy of ours or a read of its
 * memfd (0), or nothing yet where its frozen memfd goes along with its
 * first block (1, submit_with_input). A negative errno when the read fails.
 */
static int input_to_slot(struct sv_tenant *t, struct sv_query *q, int x, int slot)
{
	if (q->input) {
		memcpy(execproc_input(t->ex[x].ep, (unsigned int)slot), q->input, t->in_bytes);
		return 0;
	}
	if (q->input_frozen && execproc_takes_input_memfd(t->ex[x].ep))
		return 1;
	return sv_read_memfd_into_slot(t, q, x, slot);
}

void sv_fill_slots(struct serving *s, struct sv_tenant *t)
{
	struct coloc_err err = { 0 };
	struct sv_exec_views v;

	if (!sv_tenant_serving(t))
		return;
	sv_view_executors(t, &v);
	for (struct sv_query *q = t->head, *next; q; q = next) {
		int best, slot, r;

		next = q->next;
		if (q->slot >= 0)
			continue;
		best = policy_assign_slot(v.ex, t->nr_exec);
		if (best < 0)
			return;
		slot = policy_assign_free_slot(&v.ex[best]);
		/* the executor broke the protocol: the tenant fails when it is gone */
		if (execproc_input_allocated(t->ex[best].ep, (unsigned int)slot, &err)) {
			sv_complete_query(s, t, q, SERVING_QUERY_FAILED, coloc_err_str(&err));
			return;
		}
		/* a memfd is read straight into the slot: the input's one copy in colocd */
		r = input_to_slot(t, q, best, slot);
		if (r < 0) { /* never run on what it did not send: the slot stays free */
			char reason[SERVING_REASON_LEN];

			snprintf(reason, sizeof(reason), "reading the input's memfd: %s",
				 strerror(-r));
			sv_complete_query(s, t, q, SERVING_QUERY_FAILED, reason);
			continue;
		}
		if (!r)
			sv_query_drop_input(s, t, q);
		q->exec = best;
		q->slot = slot;
		t->ex[best].slots[slot] = q;
		v.slot[best][slot] = slot_view(q);
	}
}

/*
 * Moves q (not started) into slot `slot` of executor to (policy_assign_move_slot's):
 * a free one, or one whose query has not started either, which takes q's
 * old slot (the inputs swapped through t->scratch). -EPROTO, nothing moved,
 * if either executor gave the slot's pages back.
 */
static int move_query(struct sv_tenant *t, struct sv_query *q, int to, int slot,
		      struct coloc_err *err)
{
	struct sv_exec *from = &t->ex[q->exec], *x = &t->ex[to];
	struct sv_query *other = x->slots[slot];

	if (execproc_input_allocated(x->ep, (unsigned int)slot, err) ||
	    execproc_input_allocated(from->ep, (unsigned int)q->slot, err))
		return -EPROTO;
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
	return 0;
}

int sv_executor_for(struct sv_tenant *t, struct sv_query *q, struct coloc_err *err)
{
	struct sv_exec_views v;
	int e;

	sv_view_executors(t, &v);
	e = policy_assign_executor(v.ex, t->nr_exec, q->exec, q->slot);
	if (e >= 0 && e != q->exec && move_query(t, q, e, policy_assign_move_slot(&v.ex[e]), err))
		return -1;
	return e;
}
