// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's assignment of queries to executor slots and of blocks to
 * executors (assign.h), pure: colocd's serving core and the simulator call
 * these same functions on their own views of a tenant's executors.
 */
#include "assign.h"

int policy_assign_free_slot(const struct policy_exec_view *x)
{
	for (int k = 0; k < x->nr_slots; k++)
		if (!x->slot[k].used)
			return k;
	return -1;
}

static int slots_taken(const struct policy_exec_view *x)
{
	int n = 0;

	for (int k = 0; k < x->nr_slots; k++)
		n += x->slot[k].used;
	return n;
}

/* Whether x holds a query that started and waits for its next block. */
static bool holds_started(const struct policy_exec_view *x)
{
	for (int k = 0; k < x->nr_slots; k++)
		if (x->slot[k].used && x->slot[k].started && !x->slot[k].in_flight)
			return true;
	return false;
}

int policy_assign_slot(const struct policy_exec_view *ex, int nr_exec)
{
	int best = -1;

	for (int x = 0; x < nr_exec; x++)
		if (policy_assign_free_slot(&ex[x]) >= 0 &&
		    (best < 0 || slots_taken(&ex[x]) < slots_taken(&ex[best])))
			best = x;
	return best;
}

bool policy_assign_runnable(const struct policy_exec_view *ex, int nr_exec, int exec, int slot)
{
	const struct policy_slot_view *q = &ex[exec].slot[slot];
	int busy = 0;

	if (!q->used || q->in_flight)
		return false;
	if (q->started)
		return !ex[exec].busy;
	for (int x = 0; x < nr_exec; x++)
		busy += ex[x].busy;
	return busy < nr_exec;
}

int policy_assign_move_slot(const struct policy_exec_view *x)
{
	int slot = policy_assign_free_slot(x);

	if (slot >= 0)
		return slot;
	for (int k = 0; k < x->nr_slots; k++) {
		const struct policy_slot_view *o = &x->slot[k];

		if (!o->started && !o->in_flight &&
		    (slot < 0 || o->arrival_ns > x->slot[slot].arrival_ns))
			slot = k;
	}
	return slot;
}

int policy_assign_executor(const struct policy_exec_view *ex, int nr_exec, int exec, int slot)
{
	if (ex[exec].slot[slot].started)
		return ex[exec].busy ? -1 : exec;
	if (!ex[exec].busy && !holds_started(&ex[exec]))
		return exec;
	for (int pass = 0; pass < 2; pass++)
		for (int x = 0; x < nr_exec; x++) {
			if (ex[x].busy || (!pass && holds_started(&ex[x])))
				continue;
			if (x == exec || policy_assign_move_slot(&ex[x]) >= 0)
				return x;
		}
	return -1;
}
