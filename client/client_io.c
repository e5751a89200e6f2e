// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A connection's bytes to and from colocd (client_internal.h): what arrives
 * is read into one buffer, answer lines and the raw output bytes that follow
 * infer answers, bounded so that a line without its end breaks the
 * connection instead of growing the buffer; a send carries descriptors on
 * its first bytes (SCM_RIGHTS) and reads answers while it waits, so that
 * neither side waits on the other.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "coloc/protocol.h"
#include "client_internal.h"
#include "mono_clock.h"
#include "scm_rights.h"

/*
 * The longest answer line taken from colocd (its answers to 64 tenants'
 * status are far shorter): past it, with no newline, the connection is
 * broken, not a buffer grown without end. colocd holds 4 MiB of answers.
 */
#define CLIENT_MAX_ANSWER_LINE (4u << 20)
/* how long descriptors are offered to a connection colocd has not admitted yet */
#define CLIENT_ADMIT_MS 5000

/* The end of the first line in the buffer, or NULL. */
char *client_line_end(struct coloc_client *c)
{
	return c->len ? memchr(c->buf, '\n', c->len) : NULL;
}

/* Reads what is there into the buffer, waiting up to timeout_ms; bytes read, 0, or -errno. */
static int client_fill(struct coloc_client *c, int timeout_ms)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	ssize_t n;
	int r;

	if (c->cap - c->len < 65536) {
		size_t cap = c->cap ? c->cap * 2 : 262144;
		char *b;

		/* as client_wait_for says, also while a send reads what comes meanwhile */
		if (c->len > CLIENT_MAX_ANSWER_LINE && !client_line_end(c))
			return client_fail(
				&c->error, -EPROTO,
				"colocd sent %zu bytes of an answer line without its end "
				"(at most %u)",
				c->len, CLIENT_MAX_ANSWER_LINE);
		b = realloc(c->buf, cap);

		if (!b)
			return client_fail(&c->error, -ENOMEM, "out of memory");
		c->buf = b;
		c->cap = cap;
	}
	/* not waiting: what recv finds is all there is, no poll needed */
	r = timeout_ms ? poll(&pfd, 1, timeout_ms) : 1;
	if (r < 0)
		return errno == EINTR ? 0 :
					client_fail(&c->error, -errno, "poll: %s", strerror(errno));
	if (!r)
		return 0;
	n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ?
			       0 :
			       client_fail(&c->error, -errno, "reading from colocd: %s",
					   strerror(errno));
	if (!n)
		return client_fail(&c->error, -EPIPE, "colocd closed the connection");
	c->len += (size_t)n;
	return (int)n;
}

static uint64_t client_now_ms(void)
{
	return coloc_now_ns() / 1000000;
}

/*
 * Sends all of the nr_iov buffers in iov (advanced as they go), reading
 * answers meanwhile so that neither side waits on the other; fds (nr_fds of
 * them, may be 0) ride on the first bytes sent. Each round first tries the
 * send and waits only when the socket is full: a line and its input
 * usually go in one sendmsg, and colocd wakes once for both.
 */
int client_send_iov_fds(struct coloc_client *c, struct iovec *iov, int nr_iov, const int *fds,
			int nr_fds)
{
	uint64_t end = c->io_timeout_ms ? client_now_ms() + (uint64_t)c->io_timeout_ms : 0;
	uint64_t admit_until = 0;
	bool wait = false;

	c->sent = 0;
	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLOUT | POLLIN };
		union {
			char buf[CMSG_SPACE(sizeof(int) * COLOC_MAX_REQUEST_FDS)];
			struct cmsghdr align;
		} cbuf;
		struct msghdr msg;
		ssize_t n;

		while (nr_iov && !iov->iov_len) {
			iov++;
			nr_iov--;
		}
		if (!nr_iov)
			return 0;
		msg = (struct msghdr){ .msg_iov = iov, .msg_iovlen = (size_t)nr_iov };
		if (wait) {
			uint64_t now = end ? client_now_ms() : 0;
			int r;

			if (end && now >= end)
				return client_fail(&c->error, -ETIMEDOUT,
						   "colocd took no more of the request for %d ms",
						   c->io_timeout_ms);
			r = poll(&pfd, 1, end ? (int)(end - now) : -1);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				return client_fail(&c->error, -errno, "poll: %s", strerror(errno));
			}
			if (!r)
				continue;
			if (pfd.revents & POLLIN) {
				int r = client_fill(c, 0);

				if (r < 0)
					return r;
			}
			if (!(pfd.revents & (POLLOUT | POLLERR | POLLHUP)))
				continue;
		}
		if (nr_fds)
			scm_rights_attach(&msg, cbuf.buf, fds, nr_fds);
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		wait = true; /* coming round again: the socket took less than all */
		if (n < 0 && errno == EPERM && nr_fds) {
			int r;

			/*
			 * colocd takes descriptors once it has admitted the
			 * connection (SO_PASSRIGHTS): again in a millisecond; a
			 * refusal comes as a line, then the connection ends.
			 */
			if (!admit_until)
				admit_until = client_now_ms() + CLIENT_ADMIT_MS;
			if (client_now_ms() >= admit_until)
				return client_fail(&c->error, -EPERM,
						   "colocd did not take the descriptors");
			r = client_fill(c, 1);
			if (r < 0)
				return r;
			wait = false;
			continue;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			if (errno == EPIPE && client_line_end(c))
				return client_fail(&c->error, -EPIPE, "colocd refused: %.*s",
						   (int)(client_line_end(c) - c->buf), c->buf);
			return client_fail(&c->error, -errno, "sending to colocd: %s",
					   strerror(errno));
		}
		nr_fds = 0;
		c->sent += (size_t)n;
		/* the timeout bounds a stall, not the whole send: progress restarts it */
		if (end && n > 0)
			end = client_now_ms() + (uint64_t)c->io_timeout_ms;
		for (size_t left = (size_t)n; left;) {
			size_t k = left < iov->iov_len ? left : iov->iov_len;

			iov->iov_base = (char *)iov->iov_base + k;
			iov->iov_len -= k;
			left -= k;
			if (!iov->iov_len && left) {
				iov++;
				nr_iov--;
			}
		}
	}
}

void client_consume(struct coloc_client *c, size_t n)
{
	c->len -= n;
	memmove(c->buf, c->buf + n, c->len);
}

/* Waits until the buffer holds a line and need more bytes after it: 1, 0 (time up), -errno. */
int client_wait_for(struct coloc_client *c, size_t need_after_line, int timeout_ms)
{
	uint64_t end = timeout_ms > 0 ? client_now_ms() + (uint64_t)timeout_ms : 0;

	for (;;) {
		char *nl = client_line_end(c);
		int r, wait = timeout_ms;

		if (nl && (size_t)(nl + 1 - c->buf) + need_after_line <= c->len)
			return 1;
		if (!nl && c->len > CLIENT_MAX_ANSWER_LINE)
			return client_fail(
				&c->error, -EPROTO,
				"colocd sent %zu bytes of an answer line without its end "
				"(at most %u)",
				c->len, CLIENT_MAX_ANSWER_LINE);
		if (timeout_ms > 0) {
			uint64_t now = client_now_ms();

			if (now >= end)
				return 0;
			wait = (int)(end - now);
		}
		r = client_fill(c, wait);
		if (r < 0)
			return r;
		if (!r && timeout_ms == 0)
			return 0;
	}
}
