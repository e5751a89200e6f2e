// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Answers queued for clients that do not read them, bounded per uid and
 * for all uids but root together (server.h, SERVER_OUT_UID_SHARE and
 * SERVER_OUT_BUDGET): past either, the connection holding the most is cut,
 * so the uid that parks answers loses its own connections first.
 */
#include "server_internal.h"

/* Queued answer bytes of uid's connections, or of every uid but root's (uid 0). */
static size_t server_out_held(const struct server *s, uid_t uid)
{
	size_t held = 0;

	for (int i = 0; i < SERVER_MAX_CONNS; i++) {
		const struct server_conn *c = s->conns[i];

		if (c && c->uid && (!uid || c->uid == uid))
			held += c->out_bytes;
	}
	return held;
}

/* The connection of uid (every uid but root's for 0) with the most queued. */
static struct server_conn *server_out_largest(const struct server *s, uid_t uid)
{
	struct server_conn *most = NULL;

	for (int i = 0; i < SERVER_MAX_CONNS; i++) {
		struct server_conn *c = s->conns[i];

		if (c && c->uid && (!uid || c->uid == uid) && c->out_bytes &&
		    (!most || c->out_bytes > most->out_bytes))
			most = c;
	}
	return most;
}

void server_out_within_budget(struct server *s, uid_t uid)
{
	struct server_conn *c;

	if (!uid)
		return;
	while (server_out_held(s, uid) > SERVER_OUT_UID_SHARE &&
	       (c = server_out_largest(s, uid)))
		server_conn_cut(c, "its uid's share", SERVER_OUT_UID_SHARE);
	while (server_out_held(s, 0) > SERVER_OUT_BUDGET && (c = server_out_largest(s, 0)))
		server_conn_cut(c, "the budget of every uid but root", SERVER_OUT_BUDGET);
}
