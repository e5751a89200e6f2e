/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The forwarding pool's insides (forward.h), shared by its parts:
 * forward.c (the pool: connections made and stopped, jobs handed to
 * them), forward_conn.c (a connection's thread), forward_borrow.c (a
 * caller's thread running its own job, gw_fwd_run) and forward_owed.c
 * (the answers and output bytes colocd owes, held under its bounds).
 */
#ifndef COLOC_GATEWAY_FORWARD_IMPL_H
#define COLOC_GATEWAY_FORWARD_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "forward.h"
#include "out_bounds.h"

#define FWD_MAX_CONNS 16
/*
 * The output bytes colocd may owe the pool, on one connection and on all:
 * half of what it holds unsent before it cuts a connection or its uid's
 * (the gateway's uid may have other clients; review s18 MEDIUM 1).
 */
#define FWD_OWED_CONN_MAX (COLOC_OUT_CONN_MAX / 2)
#define FWD_OWED_MAX (COLOC_OUT_UID_SHARE / 2)

/* A query given up on whose answer colocd still owes: its output's bytes, by tag. */
struct fwd_given_up {
	struct fwd_given_up *next;
	uint64_t tag;
	size_t bytes;
};

struct fwd_conn {
	struct gw_fwd *fw;
	pthread_t thread;
	int efd;
	pthread_mutex_t lock; /* guards queue and stopped; borrowed changes under it too */
	struct gw_job *queue, **queue_tail;
	bool stopped; /* the thread took its last queue: no more jobs */
	atomic_bool borrowed; /* gw_fwd_run has c: the thread keeps off it (also fw->lock) */
	/* the thread's own */
	struct coloc_client *c;
	struct gw_job *inflight; /* list, newest first */
	void *scratch;
	size_t scratch_cap;
	uint64_t next_tag;
	atomic_int load; /* queued + in flight (+ 1 while borrowed) */
	/*
	 * Answers colocd owes on c: sent, answer not yet read (a job given up
	 * on still counts). Never more than fw->pipeline: colocd reads no more
	 * of a connection owed COLOC_MAX_INFLIGHT, and a send to it would
	 * stall into --colocd-timeout-ms. Not borrowed while above 0.
	 */
	atomic_int owed;
	/* their output bytes (the owner's: the thread, or the borrower) */
	size_t owed_bytes;
	struct fwd_given_up *given_up;
};

struct gw_fwd {
	char socket_path[108];
	int nr_conns, max_jobs, io_timeout_ms, pipeline;
	atomic_int jobs;
	pthread_mutex_t lock; /* the pick: borrowed flags, waiting, stop; before a conn's lock */
	struct gw_job *waiting, **waiting_tail; /* submitted while every connection was borrowed */
	atomic_bool stop;
	bool joined;
	atomic_uint next_conn;
	bool socket_copy; /* inputs on the socket, not in memfds */
	struct gw_memfd_pool *memfds;
	atomic_size_t owed_bytes; /* the connections' owed_bytes, summed */
	atomic_bool bytes_held; /* a connection holds jobs back for owed_bytes */
	struct fwd_conn conns[FWD_MAX_CONNS];
};

/* forward.c */
/* The pool's memfd of job given back; the caller's is the caller's (gw_fwd_memfd_put). */
void fwd_release_input(struct gw_fwd *fw, struct gw_job *job);
void fwd_wake(struct fwd_conn *k);
/* Ends each job of list, which waited for a connection and never had one, with result and why. */
void fwd_end_waiting(struct gw_fwd *fw, struct gw_job *list, int result, const char *why);
/* Moves the jobs of list (count n) to the end of k's queue; under both locks. */
void fwd_enqueue(struct fwd_conn *k, struct gw_job *list, struct gw_job **tail, int n);

/* forward_conn.c */
/* A connection's thread (arg: its fwd_conn), until the pool stops. */
void *fwd_thread(void *arg);
/*
 * Why a connection's jobs failed with r (-ETIMEDOUT: colocd stopped
 * reading or writing, the connection closed; else it was lost) while
 * doing what: the one wording of all three places that drop it.
 */
void fwd_conn_why(char *why, size_t len, int r, const char *what, struct coloc_client *c);
/* Closes k's connection: nothing is owed on the next one. */
void fwd_close_conn(struct fwd_conn *k);
/*
 * Sends job on k's connection (made if there is none). A connection that
 * fails before one byte of the query left, with nothing else in flight on
 * it, may be one colocd closed while idle: one more try on a fresh one.
 * Once a byte left, colocd may have the query: never sent twice. 0, or
 * -errno (-ETIMEDOUT: colocd stopped reading) with why filled.
 */
int fwd_send_query(struct fwd_conn *k, struct gw_job *job, char *why, size_t why_len);

/* forward_owed.c */
/*
 * Job, sent on k, is given up on before its answer came: its output bytes
 * stay owed until the answer is read (kept counted if no memory: the
 * connection's close forgets them).
 */
void fwd_give_up(struct fwd_conn *k, const struct gw_job *job);
/*
 * Whether k may be sent a query of bytes of output. When not for the
 * pool's bytes, bytes_held asks the next answer read to wake the
 * connections; published before the second look, so an answer read
 * meanwhile either shows in it or sees the flag.
 */
bool fwd_room(struct fwd_conn *k, size_t bytes);
/*
 * The answer to tag was read on k: job's (NULL: a query given up on). Its
 * bytes no longer owed; connections held back for all the pool's bytes woken.
 */
void fwd_answer_read(struct fwd_conn *k, uint64_t tag, const struct gw_job *job);
/* k's connection closed: colocd owes nothing on it any more. */
void fwd_owed_forget(struct fwd_conn *k);

#endif /* COLOC_GATEWAY_FORWARD_IMPL_H */
