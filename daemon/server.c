// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control socket's connections (server.h): requests served. Everything
 * runs on the event loop: each connection is a poll source, non-blocking.
 * On its turn a connection reads (server_read.c) until a line is complete,
 * frames it (server_frame.c), reads the bytes that follow an infer's line
 * when there are any (server_read.c, into a buffer of their own), and
 * hands the whole request to the handler, which answers at once or later
 * through server_send() by the connection's id (answers out:
 * server_send.c).
 * Reading stops while the connection is owed SERVER_MAX_PENDING answers or
 * holds SERVER_OUT_HIGH bytes its client has not taken. A line over
 * COLOC_MAX_REQUEST bytes is answered with an error and the connection
 * closed; every other line keeps it open.
 *
 * Who may connect and how many each uid may hold: server_admit.c. The
 * socket itself (opened at its guarded path, listened on, closed) and the
 * timer that closes connections that stalled: server_path.c.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "coloc/protocol.h"
#include "fd_closer.h"
#include "fd_room.h"
#include "server_internal.h"
#include "mono_clock.h"

#define SERVER_READS_PER_WAKEUP 4
/*
 * Request lines one connection has served per turn of the loop; the rest
 * wait for its next turn, after every other ready source's (the executors'
 * doorbells, the other connections).
 */
#define SERVER_LINES_PER_TURN 4

void server_conn_close(struct server_conn *c)
{
	struct server *s = c->s;

	for (int i = 0; i < SERVER_MAX_CONNS; i++)
		if (s->conns[i] == c)
			s->conns[i] = NULL;
	loop_source_remove(c->src);
	/* at once unless descriptors are in flight in its queue (fd_closer.h) */
	fd_closer_close_conn(c->fd, c->uid);
	for (int i = 0; i < c->nr_fds; i++)
		fd_closer_close(c->fds[i], c->uid);
	while (c->out_head) {
		struct server_out *o = c->out_head;

		c->out_head = o->next;
		free(o);
	}
	/* a payload that never came: its request is ours to free */
	s->payload_held -= c->payload_counted;
	free(c->drop_answer);
	free(c->pline);
	json_object_put(c->preq.request);
	free(c->payload);
	free(c->in);
	free(c);
}

bool server_conn_idle(const struct server_conn *c)
{
	return !c->in_len && !c->out_head && !c->pending && !c->in_payload;
}

void server_req_defer(struct server_req *req)
{
	req->deferred = true;
}

/*
 * What the handler made of a request: an answer queued or an answer owed.
 * False when the connection is to be closed now.
 */
static bool server_conn_take(struct server_conn *c, struct server_req *req, char *resp)
{
	bool ok = true;

	if (resp) {
		ok = server_conn_queue(c, resp, NULL, 0);
		free(resp);
	} else if (req->deferred) {
		/* answered already, from within the handler (server_send): nothing owed */
		if (c->answered_early > 0)
			c->answered_early--;
		else
			c->pending++;
	} else {
		ok = false; /* no answer: the client would wait for ever */
	}
	if (req->close_after)
		c->closing = true;
	c->last_progress_ns = coloc_now_ns();
	return ok;
}

static struct server_req server_conn_req(struct server_conn *c)
{
	return (struct server_req){ .server = c->s,
				    .conn = c->id,
				    .uid = c->uid,
				    .other_pidns = c->other_pidns,
				    .first_byte_ns = server_conn_in_first_ns(c) };
}

/* The bytes after the line are in: the handler gets the whole request. */
static bool server_conn_payload_done(struct server_conn *c)
{
	struct server *s = c->s;
	struct server_req req = c->preq;
	char *line = c->pline, *resp;
	bool ok;

	req.payload = c->payload;
	c->payload = NULL;
	c->pline = NULL;
	c->preq.request = NULL;
	c->in_payload = false;
	s->payload_held -= c->payload_counted;
	c->payload_counted = 0;
	if (c->drop_answer) {
		/* refused on its line: the bytes were dropped, the answer is ready */
		resp = c->drop_answer;
		c->drop_answer = NULL;
		free(req.payload);
		req.payload = NULL;
	} else {
		resp = s->handle(s->handle_ctx, &req, line, c->pline_len);
	}
	ok = server_conn_take(c, &req, resp);
	free(req.payload); /* NULL when the handler kept it */
	json_object_put(req.request);
	free(line);
	return ok;
}

/*
 * Handles the first complete line or payload in the buffer, if any: true
 * when it did (*ok false: close now).
 */
static bool server_conn_serve_one(struct server_conn *c, bool *ok)
{
	struct server *s = c->s;
	struct server_req req = server_conn_req(c);
	char *nl;
	size_t line_len, n;
	long long bytes;

	*ok = true;
	if (c->in_payload) {
		if (!server_conn_fill_payload(c))
			return false;
		*ok = server_conn_payload_done(c);
		return true;
	}
	nl = memchr(c->in, '\n', c->in_len);
	if (!nl) {
		if (c->in_len <= COLOC_MAX_REQUEST)
			return false;
		c->closing = true;
		server_conn_take_fds(c, c->in_len, NULL);
		server_conn_drop_in(c, c->in_len);
		*ok = server_conn_take(c, &req, s->handle(s->handle_ctx, &req, NULL, 0));
		return true;
	}
	line_len = (size_t)(nl - c->in);
	if (line_len > COLOC_MAX_REQUEST) {
		c->closing = true;
		server_conn_take_fds(c, c->in_len, NULL);
		*ok = server_conn_take(c, &req, s->handle(s->handle_ctx, &req, NULL, 0));
		server_conn_drop_in(c, c->in_len);
		return true;
	}
	/* tolerate CRLF from nc/socat */
	n = line_len && c->in[line_len - 1] == '\r' ? line_len - 1 : line_len;
	*nl = '\0';
	req.request = server_parse_request(c->in, n, NULL, 0);
	bytes = req.request ? server_request_payload_bytes(req.request) : -1;
	if (bytes >= 0) {
		/* the descriptors of a line whose bytes follow it go unused */
		server_conn_take_fds(c, line_len + 1, NULL);
		*ok = server_conn_await_payload(c, &req, c->in, n, (size_t)bytes);
		json_object_put(req.request); /* NULL once held */
		server_conn_drop_in(c, line_len + 1);
		return true;
	}
	{
		int fds[COLOC_MAX_REQUEST_FDS];
		char *resp;

		req.fds = fds;
		req.nr_fds = server_conn_take_fds(c, line_len + 1, fds);
		resp = s->handle(s->handle_ctx, &req, c->in, n);
		/* what the handler did not take, a refused request's above all */
		for (int i = 0; i < req.nr_fds; i++)
			fd_closer_close(fds[i], c->uid);
		req.fds = NULL;
		req.nr_fds = 0;
		server_conn_drop_in(c, line_len + 1);
		*ok = server_conn_take(c, &req, resp);
		json_object_put(req.request);
	}
	return true;
}

static void server_on_recheck(struct loop_source *src, __u64 now_ns, void *ctx)
{
	struct server *s = ctx;

	(void)src;
	(void)now_ns;
	s->recheck_armed = false;
	for (int i = 0; i < SERVER_MAX_CONNS; i++)
		if (s->conns[i] && s->conns[i]->uid)
			server_conn_kick(s->conns[i]);
}

/*
 * Whether c's uid has too many closes waiting to take in more descriptors
 * now (FD_CLOSER_BEHIND); if so, the connections are looked at again in
 * FD_CLOSER_RECHECK_MS.
 */
static bool server_conn_backlogged(struct server_conn *c)
{
	__u64 wait_ns = FD_CLOSER_RECHECK_MS * 1000000ull;
	struct server *s = c->s;

	if (!c->uid || fd_closer_state(c->uid, &c->closer_hint) != FD_CLOSER_BEHIND)
		return false;
	if (s->recheck_armed)
		return true;
	if (s->recheck_src)
		loop_timer_set(s->recheck_src, wait_ns, 0);
	s->recheck_armed = s->recheck_src || !loop_add_timer(s->loop, &s->recheck_src, wait_ns, 0,
							     server_on_recheck, s);
	return true;
}

/* Whether to take in more requests now (see SERVER_MAX_PENDING). */
static bool server_conn_may_read(struct server_conn *c)
{
	return !c->closing && !c->eof && c->pending < SERVER_MAX_PENDING &&
	       c->out_bytes <= SERVER_OUT_HIGH && !server_conn_backlogged(c);
}

static void server_conn_update(struct server_conn *c)
{
	unsigned int ev = 0;

	if (c->out_head)
		ev |= POLLOUT;
	if (server_conn_may_read(c))
		ev |= POLLIN;
	loop_poll_set_events(c->src, ev);
}

/*
 * After an answer sent outside the loop's turn for c: the loop comes back
 * to c (POLLOUT fires at once on a socket with room) when there is more to
 * do than wait for the client: requests already read, or a closing or
 * half-closed connection to end once nothing is owed.
 */
void server_conn_kick(struct server_conn *c)
{
	server_conn_update(c);
	if (!c->out_head && (c->in_len || c->closing || c->eof || c->broken))
		loop_poll_set_events(c->src, (server_conn_may_read(c) ? POLLIN : 0) | POLLOUT);
}

/* Whether c's buffer holds a request line to serve (or one past the limit to refuse). */
static bool server_conn_has_line(const struct server_conn *c)
{
	return !c->in_payload && c->in_len &&
	       (c->in_len > COLOC_MAX_REQUEST || memchr(c->in, '\n', c->in_len));
}

/*
 * Serves what the buffer holds, within the bounds and *lines (the lines c
 * may still serve this turn, lowered by those served); false when to close
 * now. Lines left over for want of *lines are served on c's next turn: it
 * comes at once (POLLOUT), whether or not the client sends more.
 */
static bool server_conn_serve(struct server_conn *c, int *lines)
{
	bool ok = true;

	while (ok && !c->closing && c->pending < SERVER_MAX_PENDING &&
	       c->out_bytes <= SERVER_OUT_HIGH) {
		bool line = server_conn_has_line(c);

		if (line && *lines <= 0)
			break;
		if (!server_conn_serve_one(c, &ok))
			break;
		*lines -= line;
	}
	if (!ok)
		return false;
	if (!server_conn_flush(c))
		return false;
	/* done: closing with nothing left to send, or the client gone and nothing owed */
	if ((c->closing || c->eof) && !c->out_head && !c->pending && !c->in_payload)
		return false;
	server_conn_update(c);
	if (*lines <= 0 && !c->closing && c->pending < SERVER_MAX_PENDING &&
	    c->out_bytes <= SERVER_OUT_HIGH && server_conn_has_line(c))
		loop_poll_set_events(c->src, (server_conn_may_read(c) ? POLLIN : 0) | POLLOUT);
	return true;
}

/*
 * A member is told why and dropped before a read when its closes hang (no
 * more of its descriptors are taken: at most one read's, SCM_MAX_FD, past
 * the bound; a uid merely behind is not read, server_conn_backlogged), or
 * when colocd could not install all of a read's descriptors (the kernel
 * would release the rest here, on the loop). True when c is gone.
 */
static bool server_conn_drop_before_read(struct server_conn *c)
{
	const char *why = NULL;

	if (!c->uid)
		return false;
	if (fd_closer_state(c->uid, &c->closer_hint) == FD_CLOSER_HUNG)
		why = SERVER_CLOSES_STUCK;
	else if (fd_room() < SERVER_RECV_FDS + SERVER_FDS_SPARE)
		why = SERVER_OUT_OF_FDS;
	if (!why)
		return false;
	server_send_error(c->fd, why);
	server_conn_close(c);
	return true;
}

void server_on_conn(struct loop_source *src, int fd, unsigned int revents, void *ctx)
{
	struct server_conn *c = ctx;

	(void)src;
	(void)fd;
	if (revents & POLLNVAL) {
		server_conn_close(c);
		return;
	}
	if (server_conn_drop_before_read(c))
		return;
	if ((revents & POLLOUT) && !server_conn_flush(c)) {
		server_conn_close(c);
		return;
	}
	/*
	 * Hung up both ways (a half-close reads as EOF instead): no answer can
	 * reach the client any more. Its owed answers find it gone.
	 */
	if (revents & (POLLHUP | POLLERR)) {
		server_conn_close(c);
		return;
	}
	/*
	 * A line asking for a payload mostly comes with its bytes right behind
	 * it: they are read on here, not after another turn of the loop.
	 */
	for (int i = 0, lines = SERVER_LINES_PER_TURN; i < SERVER_READS_PER_WAKEUP; i++) {
		ssize_t got = -1;

		if (i && server_conn_drop_before_read(c))
			return;
		if ((revents & POLLIN) && server_conn_may_read(c) && !server_conn_read(c, &got)) {
			server_conn_close(c);
			return;
		}
		if (!server_conn_serve(c, &lines)) {
			server_conn_close(c);
			return;
		}
		if (!c->in_payload || got <= 0)
			break;
	}
}
