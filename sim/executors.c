// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A simulated tenant's executors as colocd holds them: COLOC_SHM_NR_SLOTS
 * query slots each, one block at a time each, queries taking slots in
 * arrival order and blocks taking executors by colocd's own rules
 * (policy/assign.h, the functions daemon/serving.c calls). Queries
 * wait in a ring per tenant until a slot frees; only those in a slot are
 * the policy's to see, as in colocd.
 */
#include <errno.h>
#include <stdlib.h>
#include "sim.h"

int sim_execs_init(struct sim_execs *e, int nr_tenants, int executors, struct coloc_err *err)
{
	int nr = executors > 1 ? executors : 1;

	*e = (struct sim_execs){ .nr_tenants = nr_tenants };
	if (nr > SIM_MAX_EXECUTORS)
		return coloc_err_set(err, -EINVAL, "simulator: %d executors a tenant; at most %d",
				     nr, SIM_MAX_EXECUTORS);
	e->t = calloc((size_t)nr_tenants, sizeof(*e->t));
	if (!e->t)
		return coloc_err_set(err, -ENOMEM, "simulator: out of memory for executors");
	for (int t = 0; t < nr_tenants; t++) {
		struct sim_execs_tenant *et = &e->t[t];

		et->nr = nr;
		for (int x = 0; x < nr; x++)
			et->view[x] = (struct policy_exec_view){ .nr_slots = COLOC_SHM_NR_SLOTS,
								 .slot = et->slot[x] };
	}
	return 0;
}

void sim_execs_free(struct sim_execs *e)
{
	for (int t = 0; e->t && t < e->nr_tenants; t++)
		free(e->t[t].wait);
	free(e->t);
	e->t = NULL;
}

int sim_execs_wait(struct sim_execs *e, const struct policy_query *q, struct coloc_err *err)
{
	struct sim_execs_tenant *et = &e->t[q->tenant];

	if (et->nr_wait == et->cap_wait) {
		int cap = et->cap_wait ? 2 * et->cap_wait : 64;
		struct policy_query *w = malloc((size_t)cap * sizeof(*w));

		if (!w)
			return coloc_err_set(err, -ENOMEM, "simulator: out of memory for queries");
		for (int i = 0; i < et->nr_wait; i++)
			w[i] = et->wait[(et->head + i) % et->cap_wait];
		free(et->wait);
		et->wait = w;
		et->cap_wait = cap;
		et->head = 0;
	}
	et->wait[(et->head + et->nr_wait++) % et->cap_wait] = *q;
	e->nr_waiting++;
	return 0;
}

bool sim_execs_take(struct sim_execs *e, int tenant, struct policy_query *q)
{
	struct sim_execs_tenant *et = &e->t[tenant];
	int x, k;

	if (!et->nr_wait)
		return false;
	x = policy_assign_slot(et->view, et->nr);
	if (x < 0)
		return false;
	k = policy_assign_free_slot(&et->view[x]);
	*q = et->wait[et->head];
	et->head = (et->head + 1) % et->cap_wait;
	et->nr_wait--;
	e->nr_waiting--;
	et->slot[x][k] = (struct policy_slot_view){ .used = true, .arrival_ns = q->arrival_ns };
	et->id[x][k] = q->id;
	return true;
}

/* Where q's slot is: its executor, and the slot in *k; -1 when q holds none. */
static int find_slot(const struct sim_execs_tenant *et, uint64_t id, int *k)
{
	for (int x = 0; x < et->nr; x++)
		for (*k = 0; *k < COLOC_SHM_NR_SLOTS; (*k)++)
			if (et->slot[x][*k].used && et->id[x][*k] == id)
				return x;
	return -1;
}

bool sim_execs_visible(const struct sim_execs *e, const struct policy_query *q)
{
	const struct sim_execs_tenant *et = &e->t[q->tenant];
	int k, x = find_slot(et, q->id, &k);

	return x >= 0 && (q->in_flight || policy_assign_runnable(et->view, et->nr, x, k));
}

int sim_execs_start(struct sim_execs *e, const struct policy_query *q)
{
	struct sim_execs_tenant *et = &e->t[q->tenant];
	int k, x = find_slot(et, q->id, &k), to;

	if (x < 0)
		return -1;
	to = policy_assign_executor(et->view, et->nr, x, k);
	if (to < 0)
		return -1;
	if (to != x) {
		/* into a free slot of to, or swapped with a query there that has not started */
		int j = policy_assign_move_slot(&et->view[to]);
		struct policy_slot_view sv = et->slot[to][j];
		uint64_t id = et->id[to][j];

		et->slot[to][j] = et->slot[x][k];
		et->id[to][j] = et->id[x][k];
		et->slot[x][k] = sv;
		et->id[x][k] = id;
		x = to;
		k = j;
	}
	et->view[x].busy = true;
	et->slot[x][k].in_flight = true;
	return x;
}

void sim_execs_end(struct sim_execs *e, const struct policy_query *q, bool finished)
{
	struct sim_execs_tenant *et = &e->t[q->tenant];
	int k, x = find_slot(et, q->id, &k);

	if (x < 0)
		return;
	et->view[x].busy = false;
	et->slot[x][k].in_flight = false;
	et->slot[x][k].started = true;
	if (finished)
		et->slot[x][k] = (struct policy_slot_view){ 0 };
}

void sim_execs_leave(struct sim_execs *e, const struct policy_query *q)
{
	struct sim_execs_tenant *et = &e->t[q->tenant];
	int k, x = find_slot(et, q->id, &k);

	if (x >= 0)
		et->slot[x][k] = (struct policy_slot_view){ 0 };
}

const struct policy_query *sim_execs_waiting(const struct sim_execs *e, int tenant, int i)
{
	const struct sim_execs_tenant *et = &e->t[tenant];

	return i < et->nr_wait ? &et->wait[(et->head + i) % et->cap_wait] : NULL;
}
