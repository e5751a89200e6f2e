/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's control socket and its connections, served on the event loop:
 * who may connect (root, the coloc group; whether from colocd's pid namespace), how many
 * each uid may hold, when an idle or slow connection is closed, and the
 * framing: a request is a JSON line, and an infer's input bytes after its
 * line are read before the handler sees the request (server.c).
 * What a request means is the handler's business.
 */
#ifndef COLOC_DAEMON_SERVER_H
#define COLOC_DAEMON_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "coloc/protocol.h"
#include "error.h"
#include "out_bounds.h"
#include "loop.h"

struct json_object;

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
/*
 * Answers still owed go on being sent after reading stops, so a client
 * that never reads could make colocd hold SERVER_MAX_PENDING of them. Past
 * SERVER_OUT_MAX unsent bytes (four of the largest output a slot holds)
 * colocd holds them no longer: the queue is dropped, the connection shut
 * down and closed from the loop, a line naming the uid logged; the answers
 * still owed on it find it gone.
 */
#define SERVER_OUT_MAX COLOC_OUT_CONN_MAX
/*
 * And over all of a uid's connections (a uid holds up to SERVER_UID_SHARE),
 * and over every uid's but root's: past either, that uid's (every uid's)
 * connection holding the most is cut likewise (server_out_budget.c).
 */
#define SERVER_OUT_UID_SHARE COLOC_OUT_UID_SHARE
#define SERVER_OUT_BUDGET (256ull << 20)

struct server;

/*
 * One request as the handler sees it: its line and, for an infer whose
 * input follows the line (protocol.h, "Binary frames"), those bytes, read
 * whole before the handler is called. The handler answers at once (returns
 * a malloc'd line ending in '\n'), or returns NULL after
 * server_req_defer(): the answer comes later, once, through server_send()
 * with this connection's id (a connection that closed meanwhile is simply
 * not found). NULL without it means the handler could not answer (out of
 * memory): the connection is closed.
 */
struct server_req {
	struct server *server;
	__u64 conn; /* the connection's id: never reused */
	uid_t uid; /* the peer's, from SO_PEERCRED at connect: who asks */
	/* the peer is in a pid namespace other than colocd's: a pid it names is not colocd's */
	bool other_pidns;
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
	 * The line as a JSON object (server_parse_request), NULL when it is
	 * not one; the server's, put when the handler returns.
	 */
	struct json_object *request;
	/*
	 * The bytes that followed the line (malloc'd, payload_bytes of them),
	 * NULL when none did (server_request_payload_bytes). The handler keeps
	 * them by setting this to NULL; else the server frees them when the
	 * handler returns.
	 */
	void *payload;
	size_t payload_bytes;
	/* set through the call below */
	bool deferred;
	bool close_after; /* close once this answer is out */
};

/*
 * line is NULL for a line over COLOC_MAX_REQUEST bytes: the answer is the
 * last thing the connection gets.
 */
typedef char *(*server_request_fn)(void *ctx, struct server_req *req, const char *line, size_t len);

/*
 * A request line as the protocol's framing takes it (protocol.h): strict
 * JSON (no comments, single quotes or trailing commas), valid UTF-8, one
 * object filling the line, no NUL in any string. The object (the caller's
 * reference), or NULL with what is wrong in why (why_len bytes; NULL, 0 for
 * no message).
 */
struct json_object *server_parse_request(const char *line, size_t len, char *why, size_t why_len);
/*
 * How many raw bytes follow the line of request: an infer's "input_bytes"
 * when its input is not in a memfd and its line is one the infer handler
 * takes (a string "tenant", non-negative integers "tag" and "input_bytes",
 * the latter at most COLOC_MAX_PAYLOAD). -1 for every other line: no bytes
 * are read, and its handler answers the line as it stands (an infer it
 * cannot take closes the connection, the bytes after it unskippable).
 */
long long server_request_payload_bytes(struct json_object *request);
/*
 * Asked when an infer's line says `bytes` raw bytes follow it, before
 * colocd takes any room for them (req as the handler would see it, without
 * descriptors or payload): NULL to receive them, or a malloc'd answer line
 * ending in '\n': then the bytes are read and dropped, never held, and the
 * line is the answer (the connection stays in step). Besides, no more than
 * SERVER_PAYLOAD_BUDGET bytes are held for payloads being received at
 * once, at most SERVER_PAYLOAD_UID_SHARE by one uid other than root and
 * SERVER_PAYLOAD_ROOT_KEEP kept for root; an infer over it is answered so too.
 */
typedef char *(*server_payload_fn)(void *ctx, const struct server_req *req, size_t bytes);
#define SERVER_PAYLOAD_BUDGET (256ull << 20)
/* of it, a uid other than root may hold this much, and all of them the budget less ROOT_KEEP */
#define SERVER_PAYLOAD_UID_SHARE (64ull << 20)
#define SERVER_PAYLOAD_ROOT_KEEP (64ull << 20)
/* The check above, with the handler's ctx; none by default. */
void server_set_payload_check(struct server *s, server_payload_fn check);
/* The answer will come through server_send(). */
void server_req_defer(struct server_req *req);
/*
 * Sends a deferred answer: line (ending in '\n') then len bytes of payload
 * (NULL, 0 for none) on connection conn. What the socket takes at once
 * goes straight from line and payload (one sendmsg, nothing copied); the
 * rest is copied and queued, sent from the loop. Either way the caller's
 * buffers are free when it returns. -ENOTCONN when the connection is gone
 * or the send fails (the client hung up: nothing is queued, the loop
 * closes it), or the answer would take its queue past SERVER_OUT_MAX (the
 * connection is cut), -ENOMEM.
 */
int server_send(struct server *s, __u64 conn, const char *line, const void *payload, size_t len);
/* Stops accepting new connections (shutting down); the open ones are served on. */
void server_stop_listening(struct server *s);
/*
 * After the subordinate ids are read again (SIGHUP): closes, with the
 * refusal's line, every connection whose peer now holds one; how many.
 */
int server_drop_subordinate(struct server *s);
/*
 * refuse: the node's group file gives the coloc group's gid to another
 * group (host_group.h), so the gid says nothing of who is a member: no
 * peer but root is admitted, and every open connection of one is closed
 * with the refusal's line; how many. !refuse: members admitted again.
 */
int server_refuse_group(struct server *s, bool refuse);
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
/*
 * What colocd's start-up log says of its connections' descriptors: taken
 * only once admitted (SO_PASSRIGHTS, Linux 6.16), or, on an older kernel,
 * from before (docs/design/fd-closer.md, "Admission").
 */
const char *server_rights_line(const struct server *s);
/* Closes connections, removes the socket and its lock file. NULL is fine. */
void server_close(struct server *s);

#endif /* COLOC_DAEMON_SERVER_H */
