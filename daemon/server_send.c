// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Answers out (server.h): queued in order of sending, written as the
 * socket takes them, sent at once from server_send() when nothing is
 * queued before them. A connection whose queue passes SERVER_OUT_MAX is cut
 * (server_conn_cut), the per-uid and global bounds are
 * server_out_budget.c's. Nothing here reads or serves a request: that is
 * server.c's, on the connection's turn of the loop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "server_internal.h"
#include "mono_clock.h"

bool server_has_output(const struct server *s)
{
	for (int i = 0; i < SERVER_MAX_CONNS; i++)
		if (s->conns[i] && s->conns[i]->out_head)
			return true;
	return false;
}

bool server_conn_queue(struct server_conn *c, const char *line, const void *payload, size_t len)
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

bool server_conn_flush(struct server_conn *c)
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
