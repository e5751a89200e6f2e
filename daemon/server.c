// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control socket's connections (server.h): requests read, framed and
 * answered. Everything runs on the event loop: each connection is a poll
 * source, non-blocking. A connection reads until a line is complete,
 * frames it (server_parse_request, server_request_payload_bytes: below),
 * reads the bytes that follow an infer's line when there are any (straight
 * into a buffer of their own), and hands the whole request to the handler,
 * which answers at once or later through server_send() by the
 * connection's id.
 * Answers queue in order of sending. Reading stops while the connection is
 * owed SERVER_MAX_PENDING answers or holds SERVER_OUT_HIGH bytes its client
 * has not taken, and a connection whose answers owed take its queue past
 * SERVER_OUT_MAX is cut (server_conn_cut), so a client that does not read
 * cannot make colocd buffer without bound. A line over COLOC_MAX_REQUEST bytes is answered with an
 * error and the connection closed; every other line keeps it open.
 *
 * Who may connect and how many each uid may hold: server_admit.c. The
 * socket itself (opened at its guarded path, listened on, closed) and the
 * timer that closes connections that stalled: server_path.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <json-c/json.h>
#include "coloc/protocol.h"
#include "fd_closer.h"
#include "server_internal.h"
#include "mono_clock.h"

#define SERVER_READS_PER_WAKEUP 4
/*
 * Request lines one connection has served per turn of the loop; the rest
 * wait for its next turn, after every other ready source's (the executors'
 * doorbells, the other connections).
 */
#define SERVER_LINES_PER_TURN 4
/*
 * Room for every descriptor one message can carry (the kernel's
 * SCM_MAX_FD): those that did not fit would be released by the kernel in
 * recvmsg, on the loop, where their last close could block.
 */
#define SERVER_RECV_FDS 253

bool server_has_output(const struct server *s)
{
	for (int i = 0; i < SERVER_MAX_CONNS; i++)
		if (s->conns[i] && s->conns[i]->out_head)
			return true;
	return false;
}

void server_conn_close(struct server_conn *c)
{
	struct server *s = c->s;

	for (int i = 0; i < SERVER_MAX_CONNS; i++)
		if (s->conns[i] == c)
			s->conns[i] = NULL;
	loop_source_remove(c->src);
	/*
	 * On the closer thread (an AF_UNIX socket): its queue may hold
	 * descriptors in flight, a consumed OOB byte's too, released by its
	 * last close.
	 */
	fd_closer_close(c->fd, c->uid);
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

void server_set_payload_check(struct server *s, server_payload_fn check)
{
	s->payload_check = check;
}

void server_req_defer(struct server_req *req)
{
	req->deferred = true;
}

/* Queues line and payload as one answer; false when out of memory. */
static bool server_conn_queue(struct server_conn *c, const char *line, const void *payload,
			      size_t len)
{
	size_t line_len = strlen(line);
	struct server_out *o = malloc(sizeof(*o) + line_len + len);

	if (!o)
		return false;
	memcpy(o->data, line, line_len);
	if (len)
		memcpy(o->data + line_len, payload, len);
	o->len = line_len + len;
	o->off = 0;
	o->next = NULL;
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	c->out_bytes += o->len;
	return true;
}

/*
 * The one way bytes go to a client: what the socket takes now of iov, 0
 * when it takes nothing (full), or -errno once the connection is broken
 * (then c->broken, and nothing more is sent or queued on it).
 */
static ssize_t server_conn_write(struct server_conn *c, struct iovec *iov, int nr_iov)
{
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)nr_iov };
	ssize_t n;

	if (c->broken)
		return -EPIPE;
	n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n > 0)
		c->last_progress_ns = coloc_now_ns();
	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EINTR)
		return 0;
	c->broken = true;
	return -errno;
}

/* Sends what the kernel takes now of the queue; false when the connection is gone. */
static bool server_conn_flush(struct server_conn *c)
{
	if (c->broken)
		return false;
	while (c->out_head) {
		struct server_out *o = c->out_head;
		struct iovec iov = { o->data + o->off, o->len - o->off };
		ssize_t n = server_conn_write(c, &iov, 1);

		if (n <= 0)
			return n == 0;
		o->off += (size_t)n;
		c->out_bytes -= (size_t)n;
		if (o->off < o->len)
			continue;
		c->out_head = o->next;
		if (!c->out_head)
			c->out_tail = NULL;
		free(o);
	}
	return true;
}

/*
 * server_internal.h: the loop sees it hang up and closes it (the socket's
 * close itself is fd_closer's, as ever); nothing more is sent or queued on
 * it. Never closes here: the caller may be inside a handler of c.
 */
void server_conn_cut(struct server_conn *c, const char *limit, unsigned long long bytes)
{
	size_t held = c->out_bytes;

	fprintf(stderr,
		"colocd: uid %u's connection %llu does not read its answers: %zu MiB queued, "
		"over %s (%llu MiB); closed\n",
		(unsigned int)c->uid, (unsigned long long)c->id, held >> 20, limit, bytes >> 20);
	while (c->out_head) {
		struct server_out *o = c->out_head;

		c->out_head = o->next;
		free(o);
	}
	c->out_tail = NULL;
	c->out_bytes = 0;
	c->broken = true;
	c->closing = true;
	shutdown(c->fd, SHUT_RDWR);
	server_conn_kick(c);
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

/* When the read that brought in[0] came (the last read's when `in` is empty). */
static __u64 server_conn_in_first_ns(const struct server_conn *c)
{
	return c->nr_in_reads ? c->in_reads[0].ns : c->last_read_ns;
}

/* A read of n bytes appended to `in` at its end, stamped now_ns. */
static void server_conn_stamp_read(struct server_conn *c, __u64 now_ns)
{
	if (c->nr_in_reads == SERVER_IN_READS) {
		memmove(&c->in_reads[1], &c->in_reads[2],
			(size_t)(SERVER_IN_READS - 2) * sizeof(c->in_reads[0]));
		c->nr_in_reads--;
	}
	c->in_reads[c->nr_in_reads].at = c->in_len;
	c->in_reads[c->nr_in_reads++].ns = now_ns;
}

/* The first n bytes of `in` leave it; in[0] is then stamped with the read that brought it. */
static void server_conn_drop_in(struct server_conn *c, size_t n)
{
	int k = 0;

	c->in_len -= n;
	memmove(c->in, c->in + n, c->in_len);
	if (!c->in_len) {
		c->nr_in_reads = 0;
		return;
	}
	while (k + 1 < c->nr_in_reads && c->in_reads[k + 1].at <= n)
		k++;
	c->nr_in_reads -= k;
	memmove(&c->in_reads[0], &c->in_reads[k], (size_t)c->nr_in_reads * sizeof(c->in_reads[0]));
	c->in_reads[0].at = 0;
	for (int i = 1; i < c->nr_in_reads; i++)
		c->in_reads[i].at -= n;
}

static struct server_req server_conn_req(struct server_conn *c)
{
	return (struct server_req){ .server = c->s,
				    .conn = c->id,
				    .uid = c->uid,
				    .other_pidns = c->other_pidns,
				    .first_byte_ns = server_conn_in_first_ns(c) };
}

/* The payload bytes uid's connections hold while they are received. */
static size_t server_uid_payload_held(const struct server *s, uid_t uid)
{
	size_t held = 0;

	for (int i = 0; i < SERVER_MAX_CONNS; i++)
		if (s->conns[i] && s->conns[i]->uid == uid)
			held += s->conns[i]->payload_counted;
	return held;
}

/*
 * Whether bytes more fit in the payload budget for uid: root within the
 * whole, another uid within its share and the part root does not keep.
 */
static bool server_payload_fits(const struct server *s, uid_t uid, size_t bytes)
{
	if (s->payload_held + bytes > SERVER_PAYLOAD_BUDGET)
		return false;
	if (uid == 0)
		return true;
	return server_uid_payload_held(s, uid) + bytes <= SERVER_PAYLOAD_UID_SHARE &&
	       s->payload_held + bytes <= SERVER_PAYLOAD_BUDGET - SERVER_PAYLOAD_ROOT_KEEP;
}

/*
 * The line of req (n bytes at line) is followed by bytes raw bytes: holds
 * the request until they are in. False when out of memory.
 */
static bool server_conn_await_payload(struct server_conn *c, struct server_req *req,
				      const char *line, size_t n, size_t bytes)
{
	struct server *s = c->s;
	char *refusal = s->payload_check ? s->payload_check(s->handle_ctx, req, bytes) : NULL;
	size_t room = bytes ? bytes : 1;

	if (!refusal && !server_payload_fits(s, c->uid, bytes)) {
		char why[256];

		snprintf(why, sizeof(why),
			 "{\"ok\":false,\"status\":\"rejected\",\"error\":\"colocd is receiving "
			 "inputs up to its limit (%llu MiB in all, %llu MiB a user): send it in a "
			 "memfd, or again later\"}\n",
			 (unsigned long long)(SERVER_PAYLOAD_BUDGET >> 20),
			 (unsigned long long)(SERVER_PAYLOAD_UID_SHARE >> 20));
		refusal = strdup(why);
		if (!refusal)
			return false;
	}
	if (refusal)
		room = bytes < SERVER_DROP_CHUNK ? room : SERVER_DROP_CHUNK;
	c->pline = malloc(n + 1);
	c->payload = malloc(room);
	if (!c->pline || !c->payload) {
		free(c->pline);
		free(c->payload);
		free(refusal);
		c->pline = NULL;
		c->payload = NULL;
		return false;
	}
	c->drop_answer = refusal;
	c->payload_counted = refusal ? 0 : bytes;
	s->payload_held += c->payload_counted;
	memcpy(c->pline, line, n);
	c->pline[n] = '\0';
	c->pline_len = n;
	c->preq = *req;
	c->preq.payload_bytes = bytes;
	req->request = NULL; /* held in c->preq until the bytes are in */
	c->payload_got = 0;
	c->in_payload = true;
	c->last_progress_ns = coloc_now_ns();
	return true;
}

/* Where the next payload bytes go, and how many fit there. */
static size_t server_conn_payload_room(const struct server_conn *c, char **at)
{
	size_t want = c->preq.payload_bytes - c->payload_got, off;

	if (!c->drop_answer) {
		*at = c->payload + c->payload_got;
		return want;
	}
	off = c->payload_got % SERVER_DROP_CHUNK;
	*at = c->payload + off;
	return want < SERVER_DROP_CHUNK - off ? want : SERVER_DROP_CHUNK - off;
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
 * The descriptors that came with the first n bytes of `in`, which are about
 * to leave it, into fds (closed when fds is NULL); the others move down.
 */
static int server_conn_take_fds(struct server_conn *c, size_t n, int *fds)
{
	int taken = 0, kept = 0;

	for (int i = 0; i < c->nr_fds; i++) {
		if (c->fd_at[i] < n) {
			if (fds)
				fds[taken++] = c->fds[i];
			else
				fd_closer_close(c->fds[i], c->uid);
			continue;
		}
		c->fds[kept] = c->fds[i];
		c->fd_at[kept++] = c->fd_at[i] - n;
	}
	c->nr_fds = kept;
	return taken;
}

/* Moves buffered bytes into the payload; true when it is complete. */
static bool server_conn_fill_payload(struct server_conn *c)
{
	while (c->in_len && c->payload_got < c->preq.payload_bytes) {
		char *at;
		size_t room = server_conn_payload_room(c, &at);
		size_t n = c->in_len < room ? c->in_len : room;

		memcpy(at, c->in, n);
		server_conn_take_fds(c, n, NULL); /* a payload carries none */
		c->payload_got += n;
		server_conn_drop_in(c, n);
	}
	return c->payload_got == c->preq.payload_bytes;
}

/* ---- a request line framed ------------------------------------------------- */

/*
 * As include/coloc/protocol.h's "Framing" and "Binary frames" say: strict
 * JSON, one object filling the line, and the number of raw bytes that
 * follow it. control.c parses a line that comes without the server
 * (colocd's --state specs, tests) with the same server_parse_request.
 */

/* True when some string in o, at any depth, holds a NUL (json-c keeps "\u0000"). */
static bool server_has_nul(struct json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_string:
		return strlen(json_object_get_string(o)) != (size_t)json_object_get_string_len(o);
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			if (server_has_nul(json_object_array_get_idx(o, i)))
				return true;
		return false;
	case json_type_object: {
		json_object_object_foreach(o, key, val)
		{
			if (server_has_nul(val))
				return true;
			(void)key;
		}
		return false;
	}
	default:
		return false;
	}
}

/*
 * What json-c 0.16's strict mode still lets through, found on the raw line:
 * a 'name' in single quotes, NaN and Infinity, a number ending in '.', a
 * raw control character inside a string. NULL if none, else what it is,
 * with its offset in *at.
 */
static const char *server_loose_json(const char *line, size_t len, size_t *at)
{
	bool in_string = false;

	for (*at = 0; *at < len; (*at)++) {
		unsigned char c = (unsigned char)line[*at];

		if (in_string) {
			if (c == '\\')
				(*at)++;
			else if (c == '"')
				in_string = false;
			else if (c < 0x20)
				return "a raw control character in a string (write it as an escape)";
		} else if (c == '"') {
			in_string = true;
		} else if (c == '\'') {
			return "a single quote (strict JSON quotes with \")";
		} else if (c == 'N' || c == 'I') {
			return "NaN or Infinity (not JSON numbers)";
		} else if (c == '.' &&
			   (*at + 1 >= len || line[*at + 1] < '0' || line[*at + 1] > '9')) {
			return "a number ending in '.'";
		}
	}
	return NULL;
}

struct json_object *server_parse_request(const char *line, size_t len, char *why, size_t why_len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *req;
	enum json_tokener_error jerr;
	const char *loose;
	size_t at;
	char none[1];

	if (!why) {
		why = none;
		why_len = sizeof(none);
	}
	if (!tok) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	req = json_tokener_parse_ex(tok, line, (int)len);
	jerr = json_tokener_get_error(tok);
	loose = req && jerr == json_tokener_success ? server_loose_json(line, len, &at) : NULL;
	if (loose) {
		snprintf(why, why_len, "malformed request: %s at byte %zu", loose, at);
	} else if (!req || jerr != json_tokener_success || json_tokener_get_parse_end(tok) != len) {
		if (jerr == json_tokener_continue || jerr == json_tokener_success)
			snprintf(why, why_len, "malformed request: incomplete or trailing JSON");
		else
			snprintf(why, why_len,
				 "malformed request: %s at byte %d (strict JSON: no comments, "
				 "single quotes or trailing commas; UTF-8)",
				 json_tokener_error_desc(jerr), (int)json_tokener_get_parse_end(tok));
		loose = why;
	} else if (!json_object_is_type(req, json_type_object)) {
		snprintf(why, why_len, "a request must be a JSON object with a \"cmd\"");
		loose = why;
	} else if (server_has_nul(req)) {
		snprintf(why, why_len, "a string in the request holds a NUL character (\\u0000)");
		loose = why;
	}
	json_tokener_free(tok);
	if (loose) {
		json_object_put(req);
		return NULL;
	}
	return req;
}

/* A member of o of type type, or NULL. */
static struct json_object *server_member(struct json_object *o, const char *key,
					 enum json_type type)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, type) ? v : NULL;
}

long long server_request_payload_bytes(struct json_object *request)
{
	struct json_object *cmd = server_member(request, "cmd", json_type_string);
	struct json_object *tag = server_member(request, "tag", json_type_int);
	struct json_object *bytes = server_member(request, "input_bytes", json_type_int);

	if (!cmd || strcmp(json_object_get_string(cmd), "infer") ||
	    !server_member(request, "tenant", json_type_string) || !tag ||
	    json_object_get_int64(tag) < 0 || !bytes || json_object_get_int64(bytes) < 0 ||
	    (uint64_t)json_object_get_int64(bytes) > COLOC_MAX_PAYLOAD ||
	    json_object_object_get_ex(request, "input", NULL))
		return -1;
	return json_object_get_int64(bytes);
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

/* Whether to take in more requests now (see SERVER_MAX_PENDING). */
static bool server_conn_may_read(const struct server_conn *c)
{
	return !c->closing && !c->eof && c->pending < SERVER_MAX_PENDING &&
	       c->out_bytes <= SERVER_OUT_HIGH;
}

/* The error line sent when a client ends in the middle of a payload. */
static void server_conn_truncated(struct server_conn *c)
{
	char line[160];

	snprintf(line, sizeof(line),
		 "{\"ok\":false,\"error\":\"truncated payload: the connection ended after %zu of "
		 "%zu bytes\"}\n",
		 c->payload_got, c->preq.payload_bytes);
	server_conn_queue(c, line, NULL, 0);
	c->s->payload_held -= c->payload_counted;
	c->payload_counted = 0;
	free(c->drop_answer);
	c->drop_answer = NULL;
	free(c->pline);
	free(c->payload);
	json_object_put(c->preq.request);
	c->pline = NULL;
	c->payload = NULL;
	c->preq.request = NULL;
	c->in_payload = false;
	c->closing = true;
}

/*
 * Takes the descriptors of one recvmsg: attached to the last byte read
 * (the kernel ends a read after the bytes that carried descriptors), or
 * closed at once when they came with payload bytes. More than
 * COLOC_MAX_REQUEST_FDS waiting, or a truncated control message: every
 * one is closed and so is the connection, after an error line.
 */
static void server_conn_add_fds(struct server_conn *c, struct msghdr *msg, bool to_payload,
				size_t last)
{
	bool overflow = msg->msg_flags & MSG_CTRUNC;
	char line[160];

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		int nr = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (int i = 0; i < nr; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (to_payload || overflow || c->nr_fds >= COLOC_MAX_REQUEST_FDS) {
				overflow = overflow || !to_payload;
				fd_closer_close(fd, c->uid);
				continue;
			}
			c->fds[c->nr_fds] = fd;
			c->fd_at[c->nr_fds++] = last;
		}
	}
	if (!overflow)
		return;
	for (int i = 0; i < c->nr_fds; i++)
		fd_closer_close(c->fds[i], c->uid);
	c->nr_fds = 0;
	snprintf(line, sizeof(line),
		 "{\"ok\":false,\"error\":\"too many descriptors: at most %d with one "
		 "request\"}\n",
		 COLOC_MAX_REQUEST_FDS);
	server_conn_queue(c, line, NULL, 0);
	c->closing = true;
	server_conn_drop_in(c, c->in_len);
}

/*
 * Reads what is there, *got the bytes (0 at EOF, -1 for none); false when
 * the connection is to be closed now.
 */
static bool server_conn_read(struct server_conn *c, ssize_t *got)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SERVER_RECV_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	bool to_payload = c->in_payload && !c->in_len;
	ssize_t n;

	/* no room (cannot happen while reading is allowed): a 0-byte recv would read as EOF */
	if (!to_payload && c->in_len >= SERVER_IN_CAP)
		return true;
	/* a large payload goes straight to its buffer */
	if (to_payload) {
		char *at;
		size_t room = server_conn_payload_room(c, &at);

		iov = (struct iovec){ at, room };
	} else
		iov = (struct iovec){ c->in + c->in_len, SERVER_IN_CAP - c->in_len };
	msg.msg_control = cbuf.buf;
	msg.msg_controllen = sizeof(cbuf.buf);
	n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	*got = n;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	c->last_progress_ns = c->last_read_ns = coloc_now_ns();
	if (!to_payload && n > 0)
		server_conn_stamp_read(c, c->last_read_ns);
	if (msg.msg_controllen || (msg.msg_flags & MSG_CTRUNC))
		server_conn_add_fds(c, &msg, to_payload, c->in_len + (size_t)(n ? n - 1 : 0));
	if (c->closing && !to_payload)
		return true;
	if (n == 0) {
		c->eof = true;
		if (c->in_payload) {
			server_conn_truncated(c);
			return true;
		}
		/* a last request without its newline before EOF is still answered */
		if (c->in_len && c->in_len < SERVER_IN_CAP)
			c->in[c->in_len++] = '\n';
		return true;
	}
	if (to_payload)
		c->payload_got += (size_t)n;
	else
		c->in_len += (size_t)n;
	return true;
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

void server_on_conn(struct loop_source *src, int fd, unsigned int revents, void *ctx)
{
	struct server_conn *c = ctx;

	(void)src;
	(void)fd;
	/* a member whose closes hang is dropped before it can send more descriptors */
	if (revents & POLLNVAL) {
		server_conn_close(c);
		return;
	}
	if (c->uid && fd_closer_stuck(c->uid)) {
		server_send_error(c->fd, SERVER_CLOSES_STUCK);
		server_conn_close(c);
		return;
	}
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

static struct server_conn *server_find_conn(struct server *s, __u64 id)
{
	for (int i = 0; i < SERVER_MAX_CONNS; i++)
		if (s->conns[i] && s->conns[i]->id == id)
			return s->conns[i];
	return NULL;
}

int server_send(struct server *s, __u64 conn, const char *line, const void *payload, size_t len)
{
	struct server_conn *c = server_find_conn(s, conn);
	size_t line_len;
	ssize_t sent;

	if (!c)
		return -ENOTCONN;
	if (c->pending > 0)
		c->pending--;
	else
		c->answered_early++; /* its handler has not returned yet: see server_conn_take */
	c->last_progress_ns = coloc_now_ns();
	line_len = strlen(line);
	/*
	 * Sent here from the caller's buffers when nothing is queued before
	 * it, not only from the loop's POLLOUT: the client waits for it.
	 * Nothing is read or served here: the caller may be inside another
	 * module's callback, and serving the requests this unblocks would call
	 * back into it. A broken connection is closed from the loop, never
	 * here (the caller may be inside a handler of c), and nothing of the
	 * answer is queued for it.
	 */
	if (!c->out_head && !c->closing) {
		struct iovec iov[2] = { { (void *)line, line_len }, { (void *)payload, len } };

		sent = server_conn_write(c, iov, len ? 2 : 1);
	} else {
		sent = c->broken ? -EPIPE : 0;
	}
	if (sent < 0) {
		server_conn_kick(c);
		return -ENOTCONN;
	}
	if ((size_t)sent < line_len) {
		if (!server_conn_queue(c, line + sent, payload, len))
			goto nomem;
	} else if ((size_t)sent < line_len + len) {
		if (!server_conn_queue(c, "", (const char *)payload + ((size_t)sent - line_len),
				       line_len + len - (size_t)sent))
			goto nomem;
	}
	if (c->out_bytes > SERVER_OUT_MAX)
		server_conn_cut(c, "a connection's most", SERVER_OUT_MAX);
	else
		server_out_within_budget(s, c->uid);
	if (c->broken)
		return -ENOTCONN;
	server_conn_kick(c);
	return 0;
nomem:
	/* closed from the loop, never here: the caller may be inside a handler of c */
	c->closing = true;
	server_conn_kick(c);
	return -ENOMEM;
}
