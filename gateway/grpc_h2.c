// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The gateway's own gRPC server (grpc_server.h, grpc_h2.h): a listening
 * socket and `threads` threads on one epoll set, each connection armed
 * one-shot so that one thread at a time reads it (grpc_h2_conn.c); an
 * infer is sent to colocd from the thread that read it (gw_fwd_run) while
 * another is left to poll. New connections are grpc_h2_accept.c's, the
 * timeouts grpc_h2_reap.c's, a call's stream in gRPC's terms
 * grpc_h2_call.c's. Here: the server made, quiesced and stopped, and its
 * threads' loop. docs/design/gateway-grpc.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "addr.h"
#include "grpc_h2.h"

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
				h2s_accept_all(srv);
			else if (evs[i].data.u64 != H2S_WAKE_KEY &&
				 (c = h2s_conn_get(srv, evs[i].data.u64)))
				h2s_conn_event(c, evs[i].events, buf);
		}
	}
	free(buf);
	return NULL;
}

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
		h2s_conn_close_locked(c);
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
