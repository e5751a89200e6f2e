/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The own gRPC server's parts, between its sockets (grpc_h2.c: the
 * listening socket, the threads and their epoll set; grpc_h2_accept.c new
 * connections; grpc_h2_conn.c each connection's reads and writes;
 * grpc_h2_reap.c the timeouts; grpc_h2_unsent.c room for unsent answers)
 * and its calls (grpc_h2_call.c: a stream's headers, message and answer
 * in gRPC's terms). A connection's
 * lock covers its h2_conn, its calls' reading state and its socket's
 * writes; a call's method runs without it. docs/design/gateway-grpc.md.
 */
#ifndef COLOC_GATEWAY_GRPC_H2_H
#define COLOC_GATEWAY_GRPC_H2_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include "client_key.h"
#include "grpc_server_impl.h"
#include "h2_conn.h"

#define H2S_MAX_THREADS 64
#define H2S_HEALTH_MAX_MESSAGE 4096 /* a call max_calls does not count: its message at most */
#define H2S_HEALTH_BYTES (16u << 20) /* their messages' bytes, kept out of the budget */
#define H2S_HEALTH_READ_NS 1000000000ull /* their message within this (theirs are empty) */
#define H2S_CHARGE_STEP (64u << 10) /* a message's bytes taken from the budget this many at once */
#define H2S_RATE_GRACE_NS 1000000000ull /* a call's first second: its rate not counted */
#define H2S_HEALTH_CALLS 256 /* health calls whose message came, not yet answered, in all */
#define H2S_HEALTH_PER_PEER 32 /* health calls open from one client address */
#define H2S_READ_BUF (64 << 10) /* a thread's buffer for what is not a message's DATA */
#define H2S_XFF_MAX 256 /* of a call's x-forwarded-for, its end kept */
#define H2S_DEAD_GRACE_NS 1000000000ull /* a dead connection's last frames: this long to go */

/* epoll's data: a connection's slot and generation (h2s_conn_key), or one of these */
#define H2S_LISTEN_KEY UINT64_MAX
#define H2S_WAKE_KEY (UINT64_MAX - 1)

/*
 * One client address (grpc_h2_peer.c): what its connections take of the
 * server's bounds: its connections', and its calls' (a call through a
 * trusted proxy is the client's it names). The counts are atomic, as its
 * connections are read by different threads; conns is under the server's
 * lock, refs under its peers_lock.
 */
struct h2s_peer {
	struct gw_client_key key; /* its address (client_key.h: IPv6 by its /64) */
	int refs; /* connections' and calls' structs pointing at it */
	int conns; /* its connections open (--grpc-max-conns-per-ip) */
	atomic_int waiting; /* calls waiting for their message (--grpc-max-waiting-per-ip) */
	atomic_int health; /* health calls open, at most H2S_HEALTH_PER_PEER */
	atomic_size_t buf_bytes; /* waiting calls' message buffers, at most srv->peer_buf_max */
	atomic_int unsent; /* answers waiting for the client's windows (srv->peer_unsent_max) */
	atomic_size_t unsent_bytes; /* their bodies' bytes, at most srv->peer_buf_max */
	struct h2s_peer *next; /* its bucket's */
};

struct h2_server {
	struct gw_grpc base;
	int lfd, epfd, wakefd;
	int port;
	int nr_threads;
	pthread_t threads[H2S_MAX_THREADS];
	pthread_t reaper;
	bool reaper_started;
	atomic_bool stopping, exiting;
	atomic_int calls; /* counted calls (not the health ones) whose message came, open now */
	atomic_int health_calls; /* health calls whose message came, not yet answered */
	atomic_int memfds; /* calls waiting for their message in a memfd, at most max_calls */
	atomic_size_t buf_bytes; /* counted calls' message buffers now, at most buf_max */
	atomic_size_t health_bytes; /* health calls' message buffers now, at most health_max */
	atomic_int unsent; /* answers handed to h2_conn and not yet sent (h2s_unsent_room) */
	atomic_size_t unsent_bytes; /* their bodies' bytes, at most buf_max */
	int peer_unsent_max; /* of the unsent answers, one client address's at most */
	size_t buf_max, health_max; /* opts.max_buffer_bytes split: health_max kept for health */
	size_t peer_buf_max; /* of buf_max, one client address's waiting calls' at most */
	struct h2s_peer **peers; /* by address, salted (grpc_h2_peer.c), under peers_lock */
	pthread_mutex_t peers_lock; /* taken last: under the server's and a connection's */
	uint32_t peer_salt;
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
	struct h2s_peer *peer; /* its client's: its connection's, or the one a trusted proxy names */
	char xff[H2S_XFF_MAX]; /* through a trusted proxy: x-forwarded-for (its last, its tail) */
	uint32_t id;
	int state;
	bool stream_gone; /* handling: its stream reset or its connection gone */
	bool counted, health, post, grpc_type, path_known;
	bool health_counted; /* one of its address's H2S_HEALTH_PER_PEER */
	bool health_pooled; /* its message whole, not yet answered: one of H2S_HEALTH_CALLS */
	bool waiting; /* counted in its address's waiting calls */
	bool memfd_counted; /* one of srv->memfds */
	size_t buf_reserved; /* its message's bytes in the server's budget */
	size_t peer_reserved; /* and in its address's, while it waits for the message */
	size_t unsent_bytes; /* its answer handed to h2_conn: its body's bytes, counted as unsent */
	bool unsent; /* one of the unsent answers of the server and of its address */
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
	uint64_t dead_ns; /* when it was seen dead (a connection error), 0 before */
	int lowat; /* the socket's SO_RCVLOWAT now */
	struct h2s_peer *peer; /* its client address's record, until it is freed */
	struct sockaddr_storage addr; /* its client's address */
	bool trusted; /* addr is a trusted proxy's: its calls' x-forwarded-for is read */
	struct h2s_call *reading; /* calls waiting for their message, oldest first */
	struct h2s_call *ready, **ready_tail; /* calls whose message came, to be handled */
	struct h2s_call *sending; /* answered calls whose answer waits for the client's windows */
	struct h2s_conn *prev, *next; /* the server's list */
};

extern const struct h2_conn_cb h2s_call_cb;

/* The address table (grpc_h2_peer.c): made at start (-1 out of memory), freed at stop. */
int h2s_peers_init(struct h2_server *srv);
void h2s_peers_free(struct h2_server *srv);
/* addr's record with a reference (made if new), NULL out of memory. */
struct h2s_peer *h2s_peer_get(struct h2_server *srv, const struct sockaddr_storage *addr);
/* One more reference to p. */
void h2s_peer_hold(struct h2_server *srv, struct h2s_peer *p);
/* A reference dropped (p may be NULL); the record freed with its last. */
void h2s_peer_put(struct h2_server *srv, struct h2s_peer *p);
/* One of max taken from *n (true), or none left (false, *n as it was). */
bool h2s_take(atomic_int *n, int max);

static inline uint64_t h2s_conn_key(const struct h2s_conn *c)
{
	return (uint64_t)c->gen << 32 | c->slot;
}

/* grpc_h2_accept.c: new connections on the listener, accepted until it has none. */
void h2s_accept_all(struct h2_server *srv);
/* Under srv->lock: the listener back in epoll after a pause for want of files. */
void h2s_listen_resume(struct h2_server *srv);
/* grpc_h2_reap.c: the reaper's thread. */
void *h2s_reaper(void *arg);

/* grpc_h2_conn.c: a connection's event (key) with a reference, NULL when it is gone. */
struct h2s_conn *h2s_conn_get(struct h2_server *srv, uint64_t key);
/* A thread's turn with it: read, feed, write, re-arm; then the ready calls run. */
void h2s_conn_event(struct h2s_conn *c, uint32_t events, uint8_t *buf);
/* Under c->lock: its output written as far as the socket takes it, the rest armed for. */
void h2s_conn_flush(struct h2s_conn *c);
/* Under c->lock: the socket closed, each stream's call told (h2_conn_free). */
void h2s_conn_close_locked(struct h2s_conn *c);
/* A call's reference on its connection dropped (not under its lock). */
void h2s_conn_put(struct h2s_conn *c);
/* What h2s_conn_put frees with the last reference: the address's record let go, the struct. */
void h2s_conn_free(struct h2s_conn *c);
/* Under the connection's lock: a call still reading refused with code and why. */
void h2s_call_refuse(struct h2s_call *call, enum gw_grpc_status code, const char *why);
/*
 * Under the connection's lock: the budget taken for call's message up to
 * its byte upto, or the call refused (false; it may be freed).
 */
bool h2s_call_charge(struct h2s_call *call, size_t upto);
/*
 * grpc-timeout's value: 1 to 8 digits and a unit (H M S m u n) in ns, at
 * least 1 (0 is already past), UINT64_MAX past 2^64 ns; 0 when malformed.
 */
uint64_t h2s_grpc_timeout_ns(const char *v, size_t n);
/*
 * Under the connection's lock: call's answer no longer one of the unsent
 * answers of the server and of its address (freed, or its connection dead).
 */
void h2s_call_unsent_drop(struct h2s_call *call);
/* Its method run (no lock held); it answers through h2s_answer. */
void h2s_call_handle(struct h2s_call *call);
/*
 * grpc_h2_unsent.c, before an answer of len body bytes is counted as
 * unsent (no lock held): while all unsent answers are at their bound, the
 * address holding the most has its oldest one reset, until it fits.
 */
void h2s_unsent_room(struct h2_server *srv, size_t len);
void h2s_answer(struct gw_grpc_call *pub, enum gw_grpc_status code, const char *why, uint8_t *msg,
		size_t len);

#endif /* COLOC_GATEWAY_GRPC_H2_H */
