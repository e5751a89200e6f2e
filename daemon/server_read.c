// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Bytes and descriptors in (server.h): one recvmsg at a time into the
 * connection's buffer, each read stamped with its time so that a request
 * carries the time of its own first byte, each descriptor attached to the
 * last byte that came with it and taken with the line that byte ends. The
 * raw bytes that follow an infer's line go straight into a buffer of their
 * own, within a budget for all uids and a share per uid
 * (SERVER_PAYLOAD_BUDGET); those of a payload refused on its line
 * (server_payload_fn) are read into a small buffer and dropped. server.c
 * serves what is read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <json-c/json.h>
#include "fd_closer.h"
#include "server_internal.h"
#include "mono_clock.h"

__u64 server_conn_in_first_ns(const struct server_conn *c)
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
void server_conn_drop_in(struct server_conn *c, size_t n)
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

/*
 * The descriptors that came with the first n bytes of `in`, which are about
 * to leave it, into fds (closed when fds is NULL); the others move down.
 */
int server_conn_take_fds(struct server_conn *c, size_t n, int *fds)
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

void server_set_payload_check(struct server *s, server_payload_fn check)
{
	s->payload_check = check;
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

bool server_conn_await_payload(struct server_conn *c, struct server_req *req, const char *line,
			       size_t n, size_t bytes)
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

bool server_conn_fill_payload(struct server_conn *c)
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

bool server_conn_read(struct server_conn *c, ssize_t *got)
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
