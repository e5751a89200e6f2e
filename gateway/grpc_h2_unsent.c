// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The own gRPC server's unsent answers in all (grpc_h2.h): when they are
 * at their bound (--max-queue answers, the budget's bytes) a new answer
 * does not wait or get refused; the connection whose oldest unsent answer
 * is the oldest has its unsent answers reset instead: an answer the
 * client's windows hold is that client's loss, never another's call.
 * docs/design/gateway-grpc.md, "Unsent answers".
 */
#define _GNU_SOURCE
#include "grpc_h2.h"

#define H2S_ROOM_TRIES 4 /* connections reset for one answer at most */

static bool unsent_full(struct h2_server *srv, size_t len)
{
	return atomic_load(&srv->unsent) >= srv->base.opts.max_calls ||
	       atomic_load(&srv->unsent_bytes) + len > srv->buf_max;
}

/* Under c->lock: the deadline of its oldest unsent answer, UINT64_MAX when none can be reset. */
static uint64_t oldest_unsent(const struct h2s_conn *c)
{
	uint64_t oldest = UINT64_MAX;

	if (c->closed || c->h2.dead)
		return UINT64_MAX;
	for (const struct h2s_call *call = c->sending; call; call = call->snext)
		if (call->send_by_ns < oldest)
			oldest = call->send_by_ns;
	return oldest;
}

/* Under srv->lock: the connection whose oldest unsent answer is oldest, NULL when none. */
static struct h2s_conn *oldest_conn(struct h2_server *srv)
{
	struct h2s_conn *pick = NULL;
	uint64_t pick_by = UINT64_MAX;

	for (struct h2s_conn *c = srv->conns; c; c = c->next) {
		uint64_t by;

		pthread_mutex_lock(&c->lock);
		by = oldest_unsent(c);
		pthread_mutex_unlock(&c->lock);
		if (by < pick_by) {
			pick = c;
			pick_by = by;
		}
	}
	return pick;
}

/* Under srv->lock: each of c's unsent answers reset (RST_STREAM CANCEL, its call freed). */
static void reset_unsent(struct h2s_conn *c)
{
	pthread_mutex_lock(&c->lock);
	for (struct h2s_call *call = c->sending, *next; !c->closed && call; call = next) {
		next = call->snext;
		if (h2_conn_cancel(&c->h2, call->id))
			break;
	}
	if (!c->closed)
		h2s_conn_flush(c);
	pthread_mutex_unlock(&c->lock);
}

void h2s_unsent_room(struct h2_server *srv, size_t len)
{
	for (int i = 0; i < H2S_ROOM_TRIES && unsent_full(srv, len); i++) {
		struct h2s_conn *c;

		pthread_mutex_lock(&srv->lock);
		c = oldest_conn(srv);
		if (c)
			reset_unsent(c);
		pthread_mutex_unlock(&srv->lock);
		if (!c)
			return;
	}
}
