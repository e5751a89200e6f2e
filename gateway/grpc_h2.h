/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The own gRPC server's parts, between its connections (grpc_h2.c: the
 * listening socket, the threads and their epoll set, each connection's
 * reads and writes, the timeouts) and its calls (grpc_h2_call.c: a
 * stream's headers, message and answer in gRPC's terms). A connection's
 * lock covers its h2_conn, its calls' reading state and its socket's
 * writes; a call's method runs without it. docs/design/gateway-grpc.md.
 */
#ifndef COLOC_GATEWAY_GRPC_H2_H
#define COLOC_GATEWAY_GRPC_H2_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include "grpc_server_impl.h"
#include "h2_conn.h"

#define H2S_MAX_THREADS 64
#define H2S_HEALTH_MAX_MESSAGE 65536 /* a call max_calls does not count: its message at most */
#define H2S_HEALTH_CALLS 256 /* health calls at once, over all connections */

struct h2_server {
	struct gw_grpc base;
	int lfd, epfd, wakefd;
	int port;
	int nr_threads;
	pthread_t threads[H2S_MAX_THREADS];
	pthread_t reaper;
	bool reaper_started;
	atomic_bool stopping, exiting;
	atomic_int calls; /* counted calls (not the health ones) open now */
	atomic_int health_calls; /* health calls open now, at most H2S_HEALTH_CALLS */
	atomic_size_t buf_bytes; /* request messages' buffers now, at most opts.max_buffer_bytes */
	size_t conn_buf_max; /* one connection's at most */
	struct h2_conn_limits lim;
	uint8_t hdr_ok[64]; /* :status 200, content-type application/grpc */
	size_t hdr_ok_len;
	pthread_mutex_t lock; /* the list of connections, the reaper's sleep */
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	struct h2s_conn *conns;
	int nr_conns;
	struct h2s_conn **slots; /* max_conns: each open connection at its slot */
	uint32_t slot_hint, gen; /* where to look for a free slot; the last generation given */
	bool listen_paused; /* out of files: the listener out of epoll until a close or resume_ns */
	uint64_t listen_resume_ns;
};

enum { H2S_READING, H2S_HANDLING, H2S_ANSWERED };

struct h2s_call {
	struct gw_grpc_call pub;
	struct h2s_conn *conn;
	uint32_t id;
	int state;
	bool stream_gone; /* handling: its stream reset or its connection gone */
	bool counted, health, post, grpc_type, path_known;
	bool health_counted; /* one of H2S_HEALTH_CALLS */
	size_t buf_reserved; /* its message's bytes in the server's and connection's budgets */
	const struct gw_grpc_method *method;
	uint64_t client_timeout_ns; /* grpc-timeout, 0 if none */
	uint8_t prefix[5];
	size_t prefix_got;
	uint8_t *msg; /* msg_len bytes: malloc'd, or pub.msg_memfd's map */
	size_t msg_len, msg_got;
	bool msg_malloced;
	uint64_t read_by_ns;
	uint64_t send_by_ns; /* answered, its answer not all sent: reset past this */
	struct h2s_call *sprev, *snext; /* the connection's sending list */
	struct h2s_call *prev, *next; /* the connection's reading list, or its ready list (next) */
};

struct h2s_conn {
	struct h2_server *srv;
	int fd;
	uint32_t slot, gen; /* its place in srv->slots, and which connection there (conn_key) */
	pthread_mutex_t lock;
	struct h2_conn h2;
	atomic_int refs; /* 1 until closed, plus one a call being handled */
	bool polled; /* a thread has its event: it re-arms it */
	bool closed, eof, broken;
	uint64_t idle_since_ns; /* when a call last opened or ended on it */
	uint64_t out_moved_ns; /* when its output was last empty or last sent on */
	size_t buf_bytes; /* its calls' message buffers, at most srv->conn_buf_max */
	int lowat; /* the socket's SO_RCVLOWAT now */
	struct sockaddr_storage peer;
	struct h2s_call *reading; /* calls waiting for their message, oldest first */
	struct h2s_call *ready, **ready_tail; /* calls whose message came, to be handled */
	struct h2s_call *sending; /* answered calls whose answer waits for the client's windows */
	struct h2s_conn *prev, *next; /* the server's list */
};

extern const struct h2_conn_cb h2s_call_cb;

/* Under c->lock: its output written as far as the socket takes it, the rest armed for. */
void h2s_conn_flush(struct h2s_conn *c);
/* A call's reference on its connection dropped (not under its lock). */
void h2s_conn_put(struct h2s_conn *c);
/* Under the connection's lock: a call still reading refused with code and why. */
void h2s_call_refuse(struct h2s_call *call, enum gw_grpc_status code, const char *why);
/*
 * grpc-timeout's value: 1 to 8 digits and a unit (H M S m u n) in ns, at
 * least 1 (0 is already past), UINT64_MAX past 2^64 ns; 0 when malformed.
 */
uint64_t h2s_grpc_timeout_ns(const char *v, size_t n);
/* Its method run (no lock held); it answers through h2s_answer. */
void h2s_call_handle(struct h2s_call *call);
void h2s_answer(struct gw_grpc_call *pub, enum gw_grpc_status code, const char *why, uint8_t *msg,
		size_t len);

#endif /* COLOC_GATEWAY_GRPC_H2_H */
