// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A connection of the gateway's own gRPC server (grpc_h2.h): a thread's
 * turn with it (h2s_conn_event) reads it under its lock (a DATA frame's
 * content for a message straight into the message's buffer, the forwarding
 * pool's memfd: one readv per frame, the next frame's header taken with
 * it), feeds h2_conn, writes what it queued, re-arms the connection
 * one-shot, and then, without the lock, runs the method of each call whose
 * message came. Answers are written by whichever thread has them, under
 * the connection's lock; what the socket does not take waits for EPOLLOUT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include "grpc_h2.h"
#include "mono_clock.h"
#include "timeline.h"

#define H2S_READS_A_TURN 32 /* reads of one connection before others get a turn */
#define H2S_LOWAT_MIN 16384 /* a message's rest smaller than this: woken at once */
#define H2S_LOWAT_MAX (1u << 20)

/*
 * Under c->lock: while a message's bytes are on their way, the socket is
 * readable (for epoll) only once all of them (up to 1 MiB) are there, so that
 * a 600 KB tensor costs one wake-up, not one per piece the client's writes
 * make (SO_RCVLOWAT; the kernel grows the receive buffer to match).
 */
static void conn_lowat(struct h2s_conn *c)
{
	void *st;
	size_t n = h2_conn_data_next(&c->h2, &st, H2S_LOWAT_MAX);
	int want = 1;

	if (n) {
		struct h2s_call *call = st;

		if (call->msg && call->msg_got < call->msg_len)
			want = (int)(n < call->msg_len - call->msg_got ?
					     n :
					     call->msg_len - call->msg_got);
	}
	if (want < H2S_LOWAT_MIN)
		want = 1;
	if (want != c->lowat && !setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &want, sizeof(want)))
		c->lowat = want;
}

/* Under c->lock, when no thread has its event: armed for what it waits for. */
static void conn_arm(struct h2s_conn *c)
{
	const uint8_t *p;
	struct epoll_event ev = { .events = EPOLLONESHOT | EPOLLRDHUP,
				  .data.u64 = h2s_conn_key(c) };

	if (c->polled || c->closed)
		return;
	conn_lowat(c);
	if (h2_conn_want_read(&c->h2))
		ev.events |= EPOLLIN;
	if (h2_conn_out(&c->h2, &p) || c->h2.dead)
		ev.events |= EPOLLOUT;
	epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/*
 * Under c->lock, once c is seen dead (a connection error): none of its
 * answers can go any more, so they stop counting as unsent at once, for
 * its address's share and for the bound of all, which h2s_unsent_room
 * makes room in only among live connections; the reaper closes c
 * H2S_DEAD_GRACE_NS after (docs/design/gateway-grpc.md, "Unsent answers").
 */
static void conn_seen_dead(struct h2s_conn *c)
{
	if (!c->h2.dead || c->dead_ns)
		return;
	c->dead_ns = coloc_now_ns();
	for (struct h2s_call *call = c->sending; call; call = call->snext)
		h2s_call_unsent_drop(call);
}

void h2s_conn_flush(struct h2s_conn *c)
{
	const uint8_t *p;
	size_t n;

	conn_seen_dead(c);
	while (!c->closed && !c->broken && (n = h2_conn_out(&c->h2, &p))) {
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0) {
			h2_conn_out_done(&c->h2, (size_t)w);
			c->out_moved_ns = coloc_now_ns();
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else {
			if (w == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
				c->broken = true;
			break;
		}
	}
	conn_arm(c);
}

void h2s_conn_free(struct h2s_conn *c)
{
	if (c->peer) { /* its calls are all gone: nothing of its address's is used after */
		pthread_mutex_lock(&c->srv->lock);
		h2s_peer_put(c->srv, c->peer);
		pthread_mutex_unlock(&c->srv->lock);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void h2s_conn_put(struct h2s_conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1)
		h2s_conn_free(c);
}

void h2s_conn_close_locked(struct h2s_conn *c)
{
	c->closed = true;
	epoll_ctl(c->srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	h2_conn_free(&c->h2);
	close(c->fd);
	c->fd = -1;
}

static void conn_unlink(struct h2s_conn *c)
{
	struct h2_server *srv = c->srv;

	pthread_mutex_lock(&srv->lock);
	h2s_listen_resume(srv);
	*(c->prev ? &c->prev->next : &srv->conns) = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->slots[c->slot] = NULL;
	srv->nr_conns--;
	c->peer->conns--;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
}

/* One read: into a message's buffer when the next bytes are its DATA, else into buf. */
static ssize_t conn_read(struct h2s_conn *c, uint8_t *buf)
{
	void *st;
	size_t n = h2_conn_data_next(&c->h2, &st, SIZE_MAX);
	struct h2s_call *call = st;
	uint64_t now;
	size_t placed;
	ssize_t r;

	if (n && call->msg && call->msg_got < call->msg_len) {
		size_t room = call->msg_len - call->msg_got;
		struct iovec iov[2] = { { call->msg + call->msg_got, n < room ? n : room },
					{ buf, H2_FRAME_HEADER } };

		/* the frame's content, and the next frame's header when it ends here */
		r = readv(c->fd, iov, iov[0].iov_len == n ? 2 : 1);
		if (r <= 0)
			return r;
		now = coloc_now_ns();
		gw_tl_read(r, now);
		placed = (size_t)r < iov[0].iov_len ? (size_t)r : iov[0].iov_len;
		call->msg_got += placed;
		/* past the budget the call is refused (and may be gone): its stream's bytes dropped */
		h2s_call_charge(call, call->msg_got);
		if (h2_conn_data_placed(&c->h2, placed, now))
			return 0;
		if ((size_t)r == placed)
			return r;
		return h2_conn_feed(&c->h2, buf, (size_t)r - placed, now) ? 0 : r;
	}
	r = read(c->fd, buf, H2S_READ_BUF);
	if (r <= 0)
		return r;
	now = coloc_now_ns();
	gw_tl_read(r, now);
	return h2_conn_feed(&c->h2, buf, (size_t)r, now) ? 0 : r;
}

/*
 * The connection an event is for, with a reference, or NULL when it is gone:
 * an answer's thread may re-arm a connection between epoll handing its event
 * to one thread and that thread taking its lock, so two threads can hold
 * events for it, and the first may close it.
 */
struct h2s_conn *h2s_conn_get(struct h2_server *srv, uint64_t key)
{
	struct h2s_conn *c;

	pthread_mutex_lock(&srv->lock);
	c = (key & 0xffffffffu) < (uint64_t)srv->base.opts.max_conns ?
		    srv->slots[key & 0xffffffffu] :
		    NULL;
	if (c && c->gen == key >> 32)
		atomic_fetch_add(&c->refs, 1);
	else
		c = NULL;
	pthread_mutex_unlock(&srv->lock);
	return c;
}

void h2s_conn_event(struct h2s_conn *c, uint32_t events, uint8_t *buf)
{
	struct h2s_call *ready;
	bool done;

	pthread_mutex_lock(&c->lock);
	if (c->closed) { /* another thread's event closed it */
		pthread_mutex_unlock(&c->lock);
		h2s_conn_put(c);
		return;
	}
	gw_tl_wake(c->fd);
	c->polled = true;
	if (events & EPOLLOUT)
		h2s_conn_flush(c);
	for (int i = 0; i < H2S_READS_A_TURN && h2_conn_want_read(&c->h2) && !c->eof; i++) {
		ssize_t r = conn_read(c, buf);

		if (r == 0 && !c->h2.dead)
			c->eof = true;
		if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			c->eof = true;
		if (r <= 0 || c->ready) /* a message whole: its method runs now */
			break;
	}
	h2s_conn_flush(c);
	ready = c->ready;
	c->ready = NULL;
	c->ready_tail = &c->ready;
	done = c->eof || c->broken || (events & (EPOLLHUP | EPOLLERR)) ||
	       (c->h2.dead && !h2_conn_out(&c->h2, &(const uint8_t *){ NULL }));
	c->polled = false;
	if (done)
		h2s_conn_close_locked(c);
	else
		conn_arm(c);
	pthread_mutex_unlock(&c->lock);
	while (ready) {
		struct h2s_call *next = ready->next;

		h2s_call_handle(ready);
		ready = next;
	}
	if (done) {
		conn_unlink(c);
		h2s_conn_put(c);
	}
	h2s_conn_put(c); /* conn_get's */
}
