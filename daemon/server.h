/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's control socket and its connections, served on the event loop:
 * who may connect (root, the coloc group, colocd's pid namespace), how many
 * each uid may hold, when an idle or slow connection is closed, and the
 * line framing. What a request means is the handler's business.
 */
#ifndef COLOC_DAEMON_SERVER_H
#define COLOC_DAEMON_SERVER_H

#include <stddef.h>
#include "coloc/protocol.h"
#include "error.h"
#include "loop.h"

/*
 * SERVER_MAX_CONNS connections in all; SERVER_ROOT_RESERVED of them only
 * root may take, and no other uid holds more than SERVER_UID_SHARE. When the
 * slots others may use are full, a newcomer evicts the oldest idle
 * connection of the uid holding the most, if that uid holds at least two
 * more than the newcomer's; root, when everything is full, evicts the
 * oldest idle connection of anyone. The numbers are the protocol's.
 */
#define SERVER_MAX_CONNS COLOC_MAX_CONNS
#define SERVER_ROOT_RESERVED COLOC_ROOT_CONNS
#define SERVER_UID_SHARE COLOC_CONNS_PER_UID
#define SERVER_DEFAULT_TIMEOUT_MS 30000u

struct server;

/*
 * One request line (without '\n') -> a malloc'd response line ending in
 * '\n'. line is NULL for a line over COLOC_MAX_REQUEST bytes: the answer
 * is the last thing the connection gets.
 */
typedef char *(*server_request_fn)(void *ctx, const char *line, size_t len);

struct server_config {
	const char *socket_path;
	/*
	 * A connection that neither completes a request nor takes in part of
	 * its response for this long is closed (idle, or too slow).
	 */
	unsigned int timeout_ms;
};

/*
 * Checks the socket's directory (root's, writable by no other user unless
 * sticky), takes the socket's lock (refusing if another colocd holds it),
 * removes a stale socket file and resolves the coloc group once. Call before
 * colocd_start so a second daemon cannot disturb the pins of the first. 0,
 * or a negative errno with err saying what is wrong.
 */
int server_open(struct server **out, struct loop *loop, const struct server_config *cfg,
		struct coloc_err *err);
/*
 * Creates the listening socket (mode 0660, group coloc when it exists), so
 * that it appears only when the daemon is ready, and serves it on the loop:
 * each request line goes to handle(ctx, ...).
 */
int server_listen(struct server *s, server_request_fn handle, void *ctx, struct coloc_err *err);
/* Closes connections, removes the socket and its lock file. NULL is fine. */
void server_close(struct server *s);

#endif /* COLOC_DAEMON_SERVER_H */
