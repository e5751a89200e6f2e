// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What colocd owes the forwarding pool (forward_impl.h): each
 * connection's answers not yet read and their output bytes, and the
 * pool's sum, held under half of colocd's bounds on the answers it keeps
 * unsent for a connection and for a uid (common/out_bounds.h; review s18
 * MEDIUM 1). A query given up on still counts until its late answer is
 * read (by tag) or its connection closes.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include "forward_impl.h"

void fwd_give_up(struct fwd_conn *k, const struct gw_job *job)
{
	struct fwd_given_up *g = malloc(sizeof(*g));

	if (!g)
		return;
	g->tag = job->tag;
	g->bytes = job->output_cap;
	g->next = k->given_up;
	k->given_up = g;
}

/* Whether k may owe bytes more when the pool owes all: one answer always, more within the bounds. */
static bool fwd_room_in(const struct fwd_conn *k, size_t bytes, size_t all)
{
	return (!k->owed_bytes && !all) ||
	       (k->owed_bytes + bytes <= FWD_OWED_CONN_MAX && all + bytes <= FWD_OWED_MAX);
}

bool fwd_room(struct fwd_conn *k, size_t bytes)
{
	struct gw_fwd *fw = k->fw;

	if (fwd_room_in(k, bytes, atomic_load(&fw->owed_bytes)))
		return true;
	atomic_store(&fw->bytes_held, true);
	return fwd_room_in(k, bytes, atomic_load(&fw->owed_bytes));
}

void fwd_answer_read(struct fwd_conn *k, uint64_t tag, const struct gw_job *job)
{
	struct gw_fwd *fw = k->fw;
	size_t bytes = job ? job->output_cap : 0;

	if (atomic_load(&k->owed) > 0)
		atomic_fetch_sub(&k->owed, 1);
	for (struct fwd_given_up **pp = &k->given_up; !job && *pp; pp = &(*pp)->next) {
		struct fwd_given_up *g = *pp;

		if (g->tag == tag) {
			bytes = g->bytes;
			*pp = g->next;
			free(g);
			break;
		}
	}
	if (bytes > k->owed_bytes)
		bytes = k->owed_bytes;
	k->owed_bytes -= bytes;
	atomic_fetch_sub(&fw->owed_bytes, bytes);
	if (bytes && atomic_exchange(&fw->bytes_held, false))
		for (int i = 0; i < fw->nr_conns; i++)
			if (&fw->conns[i] != k)
				fwd_wake(&fw->conns[i]);
}

void fwd_owed_forget(struct fwd_conn *k)
{
	atomic_store(&k->owed, 0);
	atomic_fetch_sub(&k->fw->owed_bytes, k->owed_bytes);
	k->owed_bytes = 0;
	while (k->given_up) {
		struct fwd_given_up *g = k->given_up;

		k->given_up = g->next;
		free(g);
	}
}
