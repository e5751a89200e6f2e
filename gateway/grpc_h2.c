// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The gateway's own gRPC server (grpc_server.h, grpc_h2.h): a listening
 * socket and `threads` threads on one epoll set, each connection armed
 * one-shot so that one thread at a time reads it. A thread with a
 * connection's event reads it under its lock (a DATA frame's content for
 * a message straight into the message's buffer, the forwarding pool's
 * memfd: one readv per frame, the next frame's header taken with it),
 * feeds h2_conn, writes what it queued, re-arms the connection, and then,
 * without the lock, runs the method of each call whose message came: an
 * infer is sent to colocd from this thread (gw_fwd_run) while another is
 * left to poll. Answers are written by whichever thread has them, under
 * the connection's lock; what the socket does not take waits for EPOLLOUT.
 * A reaper thread, ten times a second, refuses the calls whose message
 * did not come within read_timeout_ms and sends idle connections away.
 * docs/design/gateway-grpc.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include "addr.h"
#include "grpc_h2.h"
#include "mono_clock.h"
#include "send_buffer.h"
#include "timeline.h"

#define H2S_READ_BUF (64 << 10)
#define H2S_READS_A_TURN 32 /* reads of one connection before others get a turn */
#define H2S_REAP_NS 100000000ull
#define H2S_LOWAT_MIN 16384 /* a message's rest smaller than this: woken at once */
#define H2S_LOWAT_MAX (1u << 20)
#define H2S_ACCEPT_PAUSE_NS 100000000ull /* out of files: the listener rests this long */
#define H2S_DEAD_GRACE_NS 1000000000ull /* a dead connection's last frames: this long to go */

/* epoll's data: a connection's slot and generation (conn_key), or one of these */
#define H2S_LISTEN_KEY UINT64_MAX
#define H2S_WAKE_KEY (UINT64_MAX - 1)

static uint64_t conn_key(const struct h2s_conn *c)
{
	return (uint64_t)c->gen << 32 | c->slot;
}

/* ---- a connection --------------------------------------------------------------------- */

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
	struct epoll_event ev = { .events = EPOLLONESHOT | EPOLLRDHUP, .data.u64 = conn_key(c) };

	if (c->polled || c->closed)
		return;
	conn_lowat(c);
	if (h2_conn_want_read(&c->h2))
		ev.events |= EPOLLIN;
	if (h2_conn_out(&c->h2, &p) || c->h2.dead)
		ev.events |= EPOLLOUT;
	epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

void h2s_conn_flush(struct h2s_conn *c)
{
	const uint8_t *p;
	size_t n;

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

static void conn_free(struct h2s_conn *c)
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
		conn_free(c);
}

/* Under c->lock: the socket closed, each stream's call told (h2_conn_free). */
static void conn_close_locked(struct h2s_conn *c)
{
	c->closed = true;
	epoll_ctl(c->srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	h2_conn_free(&c->h2);
	close(c->fd);
	c->fd = -1;
}

/* Under srv->lock: the listener back in epoll after a pause for want of files. */
static void listen_resume(struct h2_server *srv)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = H2S_LISTEN_KEY };

	if (!srv->listen_paused)
		return;
	srv->listen_paused = false;
	if (!atomic_load(&srv->stopping))
		epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->lfd, &ev);
}

/*
 * accept4 out of files (EMFILE, ENFILE) or memory: the level-triggered
 * listener would wake every thread at once, again and again, so it leaves
 * epoll until a connection closes or H2S_ACCEPT_PAUSE_NS pass (the reaper).
 */
static void listen_pause(struct h2_server *srv)
{
	struct epoll_event ev = { .events = 0, .data.u64 = H2S_LISTEN_KEY };

	pthread_mutex_lock(&srv->lock);
	if (!srv->listen_paused && !atomic_load(&srv->stopping)) {
		srv->listen_paused = true;
		srv->listen_resume_ns = coloc_now_ns() + H2S_ACCEPT_PAUSE_NS;
		epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->lfd, &ev);
	}
	pthread_mutex_unlock(&srv->lock);
}

static void conn_unlink(struct h2s_conn *c)
{
	struct h2_server *srv = c->srv;

	pthread_mutex_lock(&srv->lock);
	listen_resume(srv);
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
		if ((size_t)r <= iov[0].iov_len) {
			call->msg_got += (size_t)r;
			return h2_conn_data_placed(&c->h2, (size_t)r, now) ? 0 : r;
		}
		call->msg_got += iov[0].iov_len;
		if (h2_conn_data_placed(&c->h2, iov[0].iov_len, now))
			return 0;
		return h2_conn_feed(&c->h2, buf, (size_t)r - iov[0].iov_len, now) ? 0 : r;
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
static struct h2s_conn *conn_get(struct h2_server *srv, uint64_t key)
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

/* A thread's turn with a connection: read, feed, write, re-arm; then the ready calls run. */
static void conn_event(struct h2s_conn *c, uint32_t events, uint8_t *buf)
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
		conn_close_locked(c);
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

/* ---- accepting ------------------------------------------------------------------------ */

/* Under srv->lock: whether one more connection from peer is allowed. */
static bool conn_allowed(struct h2_server *srv, const struct h2s_peer *peer)
{
	if (srv->nr_conns >= srv->base.opts.max_conns)
		return false;
	return srv->base.opts.max_conns_per_ip <= 0 ||
	       peer->conns < srv->base.opts.max_conns_per_ip;
}

static void conn_accept(struct h2_server *srv, int fd, const struct sockaddr_storage *peer)
{
	struct h2s_conn *c = calloc(1, sizeof(*c));
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT | EPOLLRDHUP };
	struct h2s_peer *p;
	int one = 1;

	if (!c) {
		close(fd);
		return;
	}
	c->srv = srv;
	c->fd = fd;
	c->lowat = 1;
	c->ready_tail = &c->ready;
	atomic_init(&c->refs, 1);
	c->idle_since_ns = c->out_moved_ns = coloc_now_ns();
	pthread_mutex_init(&c->lock, NULL);
	if (h2_conn_init(&c->h2, &srv->lim, &h2s_call_cb, c)) {
		close(fd);
		conn_free(c);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	gw_send_buffer_cap(fd, GW_SEND_BUFFER_BYTES);
	pthread_mutex_lock(&srv->lock);
	p = h2s_peer_get(srv, peer);
	if (atomic_load(&srv->stopping) || !p || !conn_allowed(srv, p)) {
		h2s_peer_put(srv, p);
		pthread_mutex_unlock(&srv->lock);
		h2_conn_free(&c->h2);
		close(fd);
		conn_free(c);
		return;
	}
	c->peer = p;
	c->addr = *peer;
	p->conns++;
	while (srv->slots[srv->slot_hint])
		srv->slot_hint = (srv->slot_hint + 1) % (uint32_t)srv->base.opts.max_conns;
	c->slot = srv->slot_hint;
	c->gen = ++srv->gen;
	srv->slots[c->slot] = c;
	c->next = srv->conns;
	if (c->next)
		c->next->prev = c;
	srv->conns = c;
	srv->nr_conns++;
	pthread_mutex_unlock(&srv->lock);
	pthread_mutex_lock(&c->lock);
	c->polled = true; /* our SETTINGS out before the first event */
	h2s_conn_flush(c);
	c->polled = false;
	ev.data.u64 = conn_key(c);
	epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev);
	pthread_mutex_unlock(&c->lock);
}

static void accept_all(struct h2_server *srv)
{
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		int fd = accept4(srv->lfd, (struct sockaddr *)&peer, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				listen_pause(srv);
			return;
		}
		conn_accept(srv, fd, &peer);
	}
}

static void *h2s_thread(void *arg)
{
	struct h2_server *srv = arg;
	uint8_t *buf = malloc(H2S_READ_BUF);
	struct epoll_event evs[16];

	while (buf && !atomic_load(&srv->exiting)) {
		int n = epoll_wait(srv->epfd, evs, 16, -1);

		for (int i = 0; i < n; i++) {
			struct h2s_conn *c;

			if (evs[i].data.u64 == H2S_LISTEN_KEY)
				accept_all(srv);
			else if (evs[i].data.u64 != H2S_WAKE_KEY &&
				 (c = conn_get(srv, evs[i].data.u64)))
				conn_event(c, evs[i].events, buf);
		}
	}
	free(buf);
	return NULL;
}

/* ---- timeouts ------------------------------------------------------------------------- */

/*
 * Under c->lock: the answers the client's windows held past their send
 * deadline reset (RST_STREAM CANCEL, each call freed and its slot with it).
 * True if one was late while the connection itself holds them (its window
 * spent, or its output past max_out): then the connection is stalled and
 * is sent away; a stream's own window holds up that stream alone.
 */
static bool reap_sending(struct h2s_conn *c, uint64_t now)
{
	const uint8_t *p;
	bool conn_held = c->h2.send_window <= 0 || h2_conn_out(&c->h2, &p) >= c->h2.lim.max_out;
	bool late = false;

	for (struct h2s_call *call = c->sending, *next; !c->closed && call; call = next) {
		next = call->snext;
		if (call->send_by_ns > now)
			continue;
		late = true;
		if (h2_conn_cancel(&c->h2, call->id)) /* stream gone already: not ours to keep */
			break;
	}
	return late && conn_held;
}

/*
 * Under c->lock: whether c is to be shut down because its output cannot
 * go: dead (a connection error) with its last frames unsent for
 * H2S_DEAD_GRACE_NS, or alive with output that has not moved for the read
 * timeout. Closing it ends every stream and frees their calls.
 */
static bool reap_stuck(struct h2s_conn *c, uint64_t now, uint64_t read_ns)
{
	const uint8_t *p;

	if (!h2_conn_out(&c->h2, &p)) {
		c->out_moved_ns = now; /* dead and empty: its EPOLLOUT closes it */
		return false;
	}
	return now > c->out_moved_ns + (c->h2.dead ? H2S_DEAD_GRACE_NS : read_ns);
}

/*
 * Under srv->lock: c's late calls refused, c sent away when stalled, or idle:
 * no call open (a stream, or a call handled after its stream ended) for
 * idle_timeout_ms, whatever else it sends (PINGs do not keep it).
 */
static void reap_conn(struct h2_server *srv, struct h2s_conn *c, uint64_t now)
{
	uint64_t idle_ns = (uint64_t)srv->base.opts.idle_timeout_ms * 1000000ull;
	uint64_t read_ns = (uint64_t)srv->base.opts.read_timeout_ms * 1000000ull;

	pthread_mutex_lock(&c->lock);
	if (!c->closed && reap_stuck(c, now, read_ns)) {
		shutdown(c->fd, SHUT_RDWR); /* its thread sees the end and closes it */
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (!c->closed && reap_sending(c, now)) {
		h2_conn_goaway(&c->h2, H2_NO_ERROR);
		h2s_conn_flush(c);
		shutdown(c->fd, SHUT_RDWR); /* its thread sees the end and closes it */
		pthread_mutex_unlock(&c->lock);
		return;
	}
	/* each call, not only the oldest: a grpc-timeout may end a later one first */
	for (struct h2s_call *call = c->reading, *next; !c->closed && call; call = next) {
		next = call->next;
		if (call->read_by_ns <= now) /* answered: call_close frees it */
			h2s_call_refuse(call, GW_GRPC_DEADLINE_EXCEEDED,
					"no request message within the gateway's read timeout "
					"or the call's deadline");
	}
	if (!c->closed && idle_ns && !c->h2.nr_streams && !c->h2.held &&
	    atomic_load(&c->refs) == 1 && now > c->idle_since_ns + idle_ns) {
		h2_conn_goaway(&c->h2, H2_NO_ERROR);
		h2s_conn_flush(c);
		shutdown(c->fd, SHUT_RDWR); /* its thread sees the end and closes it */
	} else if (!c->closed) {
		h2s_conn_flush(c);
	}
	pthread_mutex_unlock(&c->lock);
}

static void *h2s_reaper(void *arg)
{
	struct h2_server *srv = arg;

	pthread_mutex_lock(&srv->lock);
	while (!atomic_load(&srv->exiting)) {
		struct timespec ts;
		uint64_t now = coloc_now_ns();

		for (struct h2s_conn *c = srv->conns; c; c = c->next)
			reap_conn(srv, c, now);
		if (srv->listen_paused && now >= srv->listen_resume_ns)
			listen_resume(srv);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)H2S_REAP_NS;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&srv->cond, &srv->lock, &ts);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

/* ---- the server ----------------------------------------------------------------------- */

static int h2s_port(struct gw_grpc *base)
{
	return ((struct h2_server *)base)->port;
}

static void h2s_quiesce(struct gw_grpc *base)
{
	struct h2_server *srv = (struct h2_server *)base;

	if (atomic_exchange(&srv->stopping, true))
		return;
	if (srv->lfd >= 0)
		epoll_ctl(srv->epfd, EPOLL_CTL_DEL, srv->lfd, NULL);
	pthread_mutex_lock(&srv->lock);
	for (struct h2s_conn *c = srv->conns; c; c = c->next) {
		pthread_mutex_lock(&c->lock);
		if (!c->closed) {
			h2_conn_goaway(&c->h2, H2_NO_ERROR);
			h2s_conn_flush(c);
		}
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&srv->lock);
}

static void h2s_stop(struct gw_grpc *base)
{
	struct h2_server *srv = (struct h2_server *)base;
	uint64_t one = 1;

	h2s_quiesce(base);
	pthread_mutex_lock(&srv->lock);
	for (struct h2s_conn *c = srv->conns; c; c = c->next) {
		pthread_mutex_lock(&c->lock);
		if (!c->closed)
			shutdown(c->fd, SHUT_RDWR);
		pthread_mutex_unlock(&c->lock);
	}
	while (srv->nr_conns && srv->nr_threads)
		pthread_cond_wait(&srv->cond, &srv->lock);
	atomic_store(&srv->exiting, true);
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	if (write(srv->wakefd, &one, sizeof(one)) < 0)
		perror("coloc-gateway: waking the gRPC threads");
	for (int i = 0; i < srv->nr_threads; i++)
		pthread_join(srv->threads[i], NULL);
	if (srv->reaper_started)
		pthread_join(srv->reaper, NULL);
	/* without threads (none could start) the connections are closed here */
	while (srv->conns) {
		struct h2s_conn *c = srv->conns;

		srv->conns = c->next;
		pthread_mutex_lock(&c->lock);
		conn_close_locked(c);
		pthread_mutex_unlock(&c->lock);
		h2s_conn_put(c);
	}
	if (srv->lfd >= 0)
		close(srv->lfd);
	close(srv->epfd);
	close(srv->wakefd);
	h2s_peers_free(srv);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->cond);
	free(srv->slots);
	free(srv);
}

static const struct gw_grpc_ops h2s_ops = {
	.port = h2s_port,
	.quiesce = h2s_quiesce,
	.stop = h2s_stop,
	.answer = h2s_answer,
};

/* The listening socket at opts->addr, non-blocking, in the epoll set; -errno. */
static int h2s_listen(struct h2_server *srv, const char *addr)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = H2S_LISTEN_KEY };
	int one = 1;

	if (gw_parse_addr(addr, &ss, &len, 1))
		return -EINVAL;
	srv->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->lfd < 0)
		return -errno;
	setsockopt(srv->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(srv->lfd, (struct sockaddr *)&ss, len) || listen(srv->lfd, 1024))
		return -errno;
	len = sizeof(ss);
	if (getsockname(srv->lfd, (struct sockaddr *)&ss, &len))
		return -errno;
	srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
						     ((struct sockaddr_in *)&ss)->sin_port);
	return epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->lfd, &ev) ? -errno : 0;
}

static void h2s_limits(struct h2_server *srv)
{
	const struct gw_grpc_opts *o = &srv->base.opts;
	size_t above;

	srv->lim.max_streams = (uint32_t)o->max_streams;
	/* a message of a few MB in one flight: the 600 KB of an image is never held up */
	srv->lim.stream_window = 8u << 20;
	srv->lim.conn_window = 64u << 20;
	srv->lim.max_frame = H2_CTL_MAX * 64u;
	srv->lim.max_header_list = H2_CTL_MAX;
	srv->lim.max_out = 1u << 20;
	/*
	 * the health calls' bytes kept out of the budget (all of them at their
	 * largest, or half a small budget), so a ServerLive is always answered,
	 * but only from the part above one largest message, which the rest always
	 * takes (a small budget lends the health calls one of theirs); one
	 * address takes at most an eighth of the rest, or one message if larger
	 */
	above = o->max_buffer_bytes > o->max_message ? o->max_buffer_bytes - o->max_message : 0;
	srv->health_max = H2S_HEALTH_BYTES;
	if (srv->health_max > o->max_buffer_bytes / 2)
		srv->health_max = o->max_buffer_bytes / 2;
	if (srv->health_max > above)
		srv->health_max = above;
	srv->buf_max = o->max_buffer_bytes - srv->health_max;
	if (srv->health_max < H2S_HEALTH_MAX_MESSAGE)
		srv->health_max = H2S_HEALTH_MAX_MESSAGE;
	srv->peer_buf_max = srv->buf_max / 8 > o->max_message ? srv->buf_max / 8 : o->max_message;
	srv->peer_unsent_max = o->max_calls / 8 > 1 ? o->max_calls / 8 : 1;
	srv->hdr_ok_len = hpack_encode_status(srv->hdr_ok, sizeof(srv->hdr_ok), 200);
	srv->hdr_ok_len += hpack_encode_field(srv->hdr_ok + srv->hdr_ok_len,
					      sizeof(srv->hdr_ok) - srv->hdr_ok_len, "content-type",
					      12, "application/grpc", 16);
}

int gw_grpc_h2_start(const struct gw_grpc_opts *opts, struct gw_models *ms, struct gw_fwd *fw,
		     struct gw_grpc **out, struct coloc_err *err)
{
	struct h2_server *srv = calloc(1, sizeof(*srv));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = H2S_WAKE_KEY };
	pthread_condattr_t ca;
	int r;

	*out = NULL;
	if (!srv)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	srv->base.ops = &h2s_ops;
	srv->base.opts = *opts;
	srv->base.ms = ms;
	srv->base.fw = fw;
	srv->lfd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&srv->cond, &ca);
	pthread_condattr_destroy(&ca);
	h2s_limits(srv);
	srv->slots = calloc((size_t)opts->max_conns, sizeof(*srv->slots));
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	srv->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!srv->slots || h2s_peers_init(srv) || srv->epfd < 0 || srv->wakefd < 0 ||
	    epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->wakefd, &ev)) {
		h2s_stop(&srv->base);
		return coloc_err_set(err, -EMFILE, "cannot make the gRPC server's epoll set");
	}
	r = h2s_listen(srv, opts->addr);
	if (r) {
		h2s_stop(&srv->base);
		return coloc_err_set(err, r,
				     "cannot listen for gRPC (address in use or not this "
				     "machine's?): %s",
				     strerror(-r));
	}
	srv->reaper_started = !pthread_create(&srv->reaper, NULL, h2s_reaper, srv);
	for (int i = 0; srv->reaper_started && i < opts->threads && i < H2S_MAX_THREADS; i++) {
		if (pthread_create(&srv->threads[i], NULL, h2s_thread, srv))
			break;
		srv->nr_threads++;
	}
	if (!srv->nr_threads) {
		h2s_stop(&srv->base);
		return coloc_err_set(err, -EAGAIN, "cannot start the gRPC threads");
	}
	*out = &srv->base;
	return 0;
}
