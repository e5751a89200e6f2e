// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The own gRPC server's unsent answers in all (grpc_h2.h): when they are
 * at their bound (--max-queue answers, the budget's bytes) a new answer
 * does not wait or get refused; the client address holding the most
 * (answers, or bytes, whichever bound is reached) has its oldest unsent
 * answer reset instead, one at a time until there is room: an answer the
 * client's windows hold is that client's loss, never another's call, and
 * never the loss of an address holding less than its share (the most any
 * address holds is at least the share of each). A dead connection's
 * answers, which cannot be reset, are not counted (grpc_h2_conn.c).
 * docs/design/gateway-grpc.md, "Unsent answers".
 */
#define _GNU_SOURCE
#include "grpc_h2.h"

#define H2S_ROOM_TRIES 16 /* answers reset for one answer at most */

/* Whether the unsent answers are at their bound: by count (*by_count) or by bytes. */
static bool unsent_full(struct h2_server *srv, size_t len, bool *by_count)
{
	*by_count = atomic_load(&srv->unsent) >= srv->base.opts.max_calls;
	return *by_count || atomic_load(&srv->unsent_bytes) + len > srv->buf_max;
}

/* The answer to reset: its connection and stream, what its address holds, its deadline. */
struct victim {
	struct h2s_conn *conn;
	uint32_t id;
	size_t held;
	uint64_t by_ns;
};

/*
 * Under srv->lock: the oldest unsent answer of the address holding the
 * most (by_count: answers, else bytes; a trusted proxy's client by the
 * address it names, as the answers are counted). v->conn NULL if none.
 */
static void pick_victim(struct h2_server *srv, bool by_count, struct victim *v)
{
	*v = (struct victim){ 0 };
	for (struct h2s_conn *c = srv->conns; c; c = c->next) {
		pthread_mutex_lock(&c->lock);
		for (struct h2s_call *call = c->sending; !c->closed && !c->h2.dead && call;
		     call = call->snext) {
			size_t held = by_count ? (size_t)atomic_load(&call->peer->unsent) :
						 atomic_load(&call->peer->unsent_bytes);

			if (held > v->held || (held == v->held && call->send_by_ns < v->by_ns))
				*v = (struct victim){ c, call->id, held, call->send_by_ns };
		}
		pthread_mutex_unlock(&c->lock);
	}
}

void h2s_unsent_room(struct h2_server *srv, size_t len)
{
	bool by_count;

	for (int i = 0; i < H2S_ROOM_TRIES && unsent_full(srv, len, &by_count); i++) {
		struct victim v;

		pthread_mutex_lock(&srv->lock);
		pick_victim(srv, by_count, &v);
		if (v.conn) {
			pthread_mutex_lock(&v.conn->lock);
			/* RST_STREAM CANCEL, its call freed; gone meanwhile: the next look */
			if (!v.conn->closed && !h2_conn_cancel(&v.conn->h2, v.id))
				h2s_conn_flush(v.conn);
			pthread_mutex_unlock(&v.conn->lock);
		}
		pthread_mutex_unlock(&srv->lock);
		if (!v.conn)
			return;
	}
}
