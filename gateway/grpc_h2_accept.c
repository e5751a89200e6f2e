// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The own gRPC server's new connections (grpc_h2.h): accepted while the
 * server's and the client address's limits allow, each given a slot, its
 * h2_conn and our SETTINGS, and added to the epoll set; the listener taken
 * out of it for a while when accept4 runs out of files or memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include "grpc_h2.h"
#include "mono_clock.h"
#include "send_buffer.h"

#define H2S_ACCEPT_PAUSE_NS 100000000ull /* out of files: the listener rests this long */

void h2s_listen_resume(struct h2_server *srv)
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

/*
 * Under srv->lock: whether one more connection from peer is allowed; a
 * trusted proxy's are not counted per address (every client behind it
 * comes on them; its calls are counted by the client they name).
 */
static bool conn_allowed(struct h2_server *srv, const struct h2s_peer *peer, bool trusted)
{
	if (srv->nr_conns >= srv->base.opts.max_conns)
		return false;
	return trusted || srv->base.opts.max_conns_per_ip <= 0 ||
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
		h2s_conn_free(c);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	gw_send_buffer_cap(fd, GW_SEND_BUFFER_BYTES);
	c->trusted = gw_trusted_proxies_has(srv->base.opts.trusted, (const struct sockaddr *)peer);
	pthread_mutex_lock(&srv->lock);
	p = h2s_peer_get(srv, peer);
	if (atomic_load(&srv->stopping) || !p || !conn_allowed(srv, p, c->trusted)) {
		h2s_peer_put(srv, p);
		pthread_mutex_unlock(&srv->lock);
		h2_conn_free(&c->h2);
		close(fd);
		h2s_conn_free(c);
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
	ev.data.u64 = h2s_conn_key(c);
	epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev);
	pthread_mutex_unlock(&c->lock);
}

void h2s_accept_all(struct h2_server *srv)
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
