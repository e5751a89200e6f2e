/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Which executor slot a query takes and which executor runs its next block:
 * colocd's rules, pure, so that the simulator runs them too. A tenant has
 * executors (processes), each running one block at a time and holding up to
 * a few queries in slots (their inputs in its shared memory). A query waits
 * outside until a slot frees, then takes one in arrival order on the
 * executor holding the fewest; only queries in a slot are the policy's to
 * decide. A query that started stays on its executor; one that did not may
 * move to an idle one when the policy decides its first block. The caller
 * (daemon/serving.c, sim/executors.c) describes each executor as a
 * struct policy_exec_view and moves the inputs itself.
 */
#ifndef COLOC_POLICY_ASSIGN_H
#define COLOC_POLICY_ASSIGN_H

#include <stdbool.h>
#include <stdint.h>

/* One slot as the assignment sees it. */
struct policy_slot_view {
	bool used; /* holds a query */
	bool started; /* its query ran a block (next_layer > 0) */
	bool in_flight; /* its query's block runs */
	uint64_t arrival_ns;
};

/* One executor of a tenant. */
struct policy_exec_view {
	bool busy; /* runs a block */
	int nr_slots;
	const struct policy_slot_view *slot; /* [nr_slots] */
};

/* The first free slot of x; -1 when none. */
int policy_assign_free_slot(const struct policy_exec_view *x);

/*
 * The executor a query waiting for a slot takes: of those with a free
 * slot, the one holding the fewest queries (the first such); -1 when none.
 */
int policy_assign_slot(const struct policy_exec_view *ex, int nr_exec);

/*
 * Whether the query in slot `slot` of executor `exec` could start a block
 * now: not in flight, and its executor idle when it started, else any of
 * the tenant's executors idle.
 */
bool policy_assign_runnable(const struct policy_exec_view *ex, int nr_exec, int exec, int slot);

/*
 * The slot of x a query moving there takes: a free one, else the one of
 * x's latest query that has not started and is not in flight (the two then
 * swap slots); -1 when neither.
 */
int policy_assign_move_slot(const struct policy_exec_view *x);

/*
 * The executor the next block of the query in slot `slot` of executor
 * `exec` runs on; -1 when none can take it now. A query that started stays
 * on its executor. One that did not prefers its own, then any idle one
 * that holds no started query waiting for its next block (the policy
 * serves a tenant's queries in its order, so that one comes first), then
 * any idle one, each where policy_assign_move_slot() finds room.
 */
int policy_assign_executor(const struct policy_exec_view *ex, int nr_exec, int exec, int slot);

#endif /* COLOC_POLICY_ASSIGN_H */
