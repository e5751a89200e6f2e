/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's control socket and its connections, served on the event loop:
 * who may connect (root, the coloc group, colocd's pid namespace), how many
 * each uid may hold, when an idle or slow connection is closed, and the
 * line framing. What a request means is the handler's business.
 */
#ifndef COLOC_DAEMON_SERVER_H
#define COLOC_DAEMON_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
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
/*
 * Deferred answers a connection may be owed: beyond it colocd reads no more
 * of its requests until one is sent. Nor does it read while more than
 * SERVER_OUT_HIGH bytes of answers wait for the client to take them.
 */
#define SERVER_MAX_PENDING COLOC_MAX_INFLIGHT
#define SERVER_OUT_HIGH (4u << 20)

struct server;

/*
 * One request as the handler sees it. The handler answers at once (returns
 * a malloc'd line ending in '\n'), or returns NULL after one of:
 *  - server_req_read_payload(): the next bytes on the connection are a
 *    binary payload; once they are in, payload_fn is called with them and
 *    answers the same way;
 *  - server_req_defer(): the answer comes later, once, through server_send()
 *    with this connection's id (a connection that closed meanwhile is
 *    simply not found).
 * NULL with neither means the handler could not answer (out of memory):
 * the connection is closed.
 */
struct server_req {
	struct server *server;
	__u64 conn; /* the connection's id: never reused */
	uid_t uid; /* the peer's, from SO_PEERCRED at connect: who asks */
	/*
	 * The descriptors that came with the request line (SCM_RIGHTS on the
	 * bytes of the line, at most COLOC_MAX_REQUEST_FDS), in the order
	 * sent, close-on-exec. The handler takes one by setting its entry to
	 * -1; the server closes every one left when the handler returns, so a
	 * refused or malformed request leaves none open.
	 */
	int *fds;
	int nr_fds;
	/*
	 * CLOCK_MONOTONIC of the read that brought the request's first byte
	 * (for a line that followed another in the same read, that read's,
	 * however much later the line is served).
	 */
	__u64 first_byte_ns;
	/*
	 * In a payload handler: the payload's buffer (malloc'd, len bytes).
	 * The handler keeps it by setting this to NULL; else the server frees
	 * it when the handler returns.
	 */
	void *payload;
	/* set through the calls below */
	size_t payload_bytes;
	char *(*payload_fn)(void *ctx, struct server_req *req, const void *data, size_t len);
	void *payload_arg;
	bool deferred;
	bool close_after; /* close once this answer is out */
};

/*
 * line is NULL for a line over COLOC_MAX_REQUEST bytes: the answer is the
 * last thing the connection gets.
 */
typedef char *(*server_request_fn)(void *ctx, struct server_req *req, const char *line, size_t len);
typedef char *(*server_payload_fn)(void *ctx, struct server_req *req, const void *data, size_t len);

/*
 * Asks for bytes (at most COLOC_MAX_PAYLOAD) after the line; -EMSGSIZE if
 * more. arg, when not NULL, is malloc'd: fn owns it, and the server frees it
 * when the connection ends before the payload is in.
 */
int server_req_read_payload(struct server_req *req, size_t bytes, server_payload_fn fn, void *arg);
/* The answer will come through server_send(). */
void server_req_defer(struct server_req *req);
/*
 * Sends a deferred answer: line (ending in '\n') then len bytes of payload
 * (NULL, 0 for none) on connection conn. What the socket takes at once
 * goes straight from line and payload (one sendmsg, nothing copied); the
 * rest is copied and queued, sent from the loop. Either way the caller's
 * buffers are free when it returns. -ENOTCONN when the connection is gone
 * or the send fails (the client hung up: nothing is queued, the loop
 * closes it), -ENOMEM.
 */
int server_send(struct server *s, __u64 conn, const char *line, const void *payload, size_t len);
/* Stops accepting new connections (shutting down); the open ones are served on. */
void server_stop_listening(struct server *s);
/* Whether answers are queued and not yet written to their sockets (wait for them before exiting). */
bool server_has_output(const struct server *s);

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
