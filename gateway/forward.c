// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The forwarding pool (forward.h). Each connection's thread sleeps in poll()
 * on its eventfd (new jobs) and, while it has jobs in flight, colocd's
 * socket (answers); it sends what was queued, reads every answer there is,
 * and expires jobs past their deadline; callbacks run on this thread with
 * no lock held. Answers are read into a scratch buffer of the connection
 * (the tag is known only once the answer is read) and copied into the
 * job's output.
 *
 * gw_fwd_run borrows a connection with nothing queued or in flight: its
 * thread then takes no queue and does not poll the socket (it polls it only
 * for jobs of its own in flight), so the borrower alone sends and reads.
 * A submitted job goes to the least loaded connection nobody borrowed; with
 * every one borrowed it waits in the pool's queue, first come first served,
 * and the first borrower to give a connection back hands the queue to that
 * connection's thread: no job waits behind a borrower's slow query while
 * another connection is free. The pool's lock orders the pick, the borrows
 * and the give-backs against each other.
 *
 * Answers to queries given up on before (a timeout) are told apart by tag
 * and thrown away by whoever reads them. Idle sockets are not polled, so a
 * connection colocd closed is found at the next send; when not one byte of
 * the query left (colocd cannot have it) it tries once more on a fresh
 * connection, never otherwise: a query runs at most once. Each connection
 * bounds its sends and the reads of an answer's output by the pool's I/O
 * timeout (coloc_client_set_io_timeout): past it the job ends with
 * -ETIMEDOUT and the connection, mid-message, is closed.
 *
 * Inputs go to colocd in memfds (fwd_send_input): the caller's, which an
 * HTTP binary body was received into, or one of the pool's (memfd_pool.h)
 * the input is copied into and which goes back when the job is done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "forward.h"
#include "mono_clock.h"
#include "out_bounds.h"

#define FWD_MAX_CONNS 16
#define FWD_STOP_CHECK_MS 100 /* a borrower's longest wait before it looks at stop */
#define FWD_MEMFDS_KEPT 256 /* input memfds kept mapped between queries */
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

enum gw_outcome gw_job_outcome(const struct gw_job *job)
{
	if (job->result == -ETIMEDOUT)
		return GW_TIMEOUT;
	if (job->result == -EPIPE || job->result == -ECONNREFUSED)
		return GW_UNREACHABLE;
	if (job->result == -ECANCELED)
		return GW_STOPPING;
	if (job->result)
		return GW_FAILED;
	switch (job->res.status) {
	case COLOC_INFER_OK:
		return GW_OK;
	case COLOC_INFER_REJECTED:
		return GW_REJECTED;
	case COLOC_INFER_DROPPED:
		return GW_TIMEOUT;
	default:
		return GW_FAILED;
	}
}

/*
 * Why a connection's jobs failed with r (-ETIMEDOUT: colocd stopped
 * reading or writing, the connection closed; else it was lost) while
 * doing what: the one wording of all three places that drop it.
 */
static void fwd_conn_why(char *why, size_t len, int r, const char *what, struct coloc_client *c)
{
	snprintf(why, len, "colocd connection %s (%s): %.200s",
		 r == -ETIMEDOUT ? "timed out and closed" : "lost", what,
		 c ? coloc_client_error(c) : "");
}

/*
 * m back to the pool, or freed while colocd may still read it (sent, not
 * answered: a late read must never see another query's input).
 */
static void fwd_memfd_back(struct gw_fwd *fw, struct gw_memfd *m, bool lent)
{
	if (lent)
		gw_memfd_free(m);
	else
		gw_memfd_put(fw->memfds, m);
}

/* The pool's memfd of job given back; the caller's is the caller's (gw_fwd_memfd_put). */
static void fwd_release_input(struct gw_fwd *fw, struct gw_job *job)
{
	fwd_memfd_back(fw, job->own_memfd, job->input_lent);
	job->own_memfd = NULL;
}

static void fwd_finish(struct fwd_conn *k, struct gw_job *job, int result, const char *why)
{
	fwd_release_input(k->fw, job);
	job->result = result;
	if (why)
		snprintf(job->why, sizeof(job->why), "%s", why);
	atomic_fetch_sub(&k->load, 1);
	atomic_fetch_sub(&k->fw->jobs, 1);
	job->done(job);
}

static void fwd_fail_inflight(struct fwd_conn *k, int result, const char *why)
{
	while (k->inflight) {
		struct gw_job *job = k->inflight;

		k->inflight = job->next;
		fwd_finish(k, job, result, why);
	}
}

/* Closes k's connection: nothing is owed on the next one. */
static void fwd_close_conn(struct fwd_conn *k)
{
	coloc_client_close(k->c);
	k->c = NULL;
	atomic_store(&k->owed, 0);
	atomic_fetch_sub(&k->fw->owed_bytes, k->owed_bytes);
	k->owed_bytes = 0;
	while (k->given_up) {
		struct fwd_given_up *g = k->given_up;

		k->given_up = g->next;
		free(g);
	}
}

/* Closes k's connection after r (a timeout, or a lost connection): its jobs fail alike. */
static void fwd_drop_connection(struct fwd_conn *k, const char *what, int r)
{
	char why[256];

	fwd_conn_why(why, sizeof(why), r, what, k->c);
	fwd_close_conn(k);
	fwd_fail_inflight(k, r == -ETIMEDOUT ? -ETIMEDOUT : -EPIPE, why);
}

static struct gw_job *fwd_take_queue(struct fwd_conn *k, bool last)
{
	struct gw_job *q;

	pthread_mutex_lock(&k->lock);
	if (atomic_load(&k->borrowed) && !last) {
		pthread_mutex_unlock(&k->lock);
		return NULL;
	}
	k->stopped = last;
	q = k->queue;
	k->queue = NULL;
	k->queue_tail = &k->queue;
	pthread_mutex_unlock(&k->lock);
	return q;
}

static int fwd_grow_scratch(struct fwd_conn *k, size_t need)
{
	void *p;

	if (need <= k->scratch_cap)
		return 0;
	p = realloc(k->scratch, need);
	if (!p)
		return -ENOMEM;
	k->scratch = p;
	k->scratch_cap = need;
	return 0;
}

/*
 * One send of job's line and input on k's connection: the caller's memfd,
 * else a memfd of the pool's the input is copied into, else (socket_copy,
 * or no memfd to be had) the input's bytes after the line.
 */
static int fwd_send_input(struct fwd_conn *k, struct gw_job *job)
{
	struct gw_memfd *m = job->input_memfd;
	size_t off = job->input_offset;

	if (!m && !k->fw->socket_copy) {
		if (!job->own_memfd) {
			job->own_memfd = gw_memfd_get(k->fw->memfds, job->input_bytes);
			if (job->own_memfd)
				memcpy(job->own_memfd->map, job->input, job->input_bytes);
		}
		m = job->own_memfd;
		off = 0;
	}
	if (m) {
		job->input_lent = true;
		return coloc_client_infer_send_memfd(k->c, job->tenant, job->tag, m->fd, off,
						     job->input_bytes);
	}
	return coloc_client_infer_send(k->c, job->tenant, job->tag, job->input, job->input_bytes);
}

/*
 * Sends job on k's connection (made if there is none). A connection that
 * fails before one byte of the query left, with nothing else in flight on
 * it, may be one colocd closed while idle: one more try on a fresh one.
 * Once a byte left, colocd may have the query: never sent twice. 0, or
 * -errno (-ETIMEDOUT: colocd stopped reading) with why filled.
 */
static int fwd_send_query(struct fwd_conn *k, struct gw_job *job, char *why, size_t why_len)
{
	bool fresh = false;
	size_t sent;
	int r;

	for (int attempt = 0; attempt < 2; attempt++) {
		if (!k->c) {
			r = coloc_client_connect(k->fw->socket_path, &k->c);
			if (r) {
				k->c = NULL;
				snprintf(why, why_len, "cannot reach colocd at %.150s: %s",
					 k->fw->socket_path, strerror(-r));
				return -ECONNREFUSED;
			}
			coloc_client_set_io_timeout(k->c, k->fw->io_timeout_ms);
			fresh = true;
		}
		r = fwd_send_input(k, job);
		if (!r) {
			atomic_fetch_add(&k->owed, 1);
			k->owed_bytes += job->output_cap;
			atomic_fetch_add(&k->fw->owed_bytes, job->output_cap);
			return 0;
		}
		sent = coloc_client_sent_bytes(k->c);
		fwd_conn_why(why, why_len, r, "sending", k->c);
		fwd_close_conn(k);
		if (r == -ETIMEDOUT)
			return r;
		if (fresh || k->inflight || sent)
			break;
	}
	return -EPIPE;
}

static void fwd_send(struct fwd_conn *k, struct gw_job *job)
{
	char why[256];
	int r;

	if (coloc_now_ns() >= job->deadline_ns) {
		fwd_finish(k, job, -ETIMEDOUT, "timed out in the gateway's queue");
		return;
	}
	if (fwd_grow_scratch(k, job->output_cap)) {
		fwd_finish(k, job, -ENOMEM, "out of memory");
		return;
	}
	job->tag = k->next_tag++;
	r = fwd_send_query(k, job, why, sizeof(why));
	if (r && k->inflight) /* the connection carried them */
		fwd_fail_inflight(k, r == -ETIMEDOUT ? -ETIMEDOUT : -EPIPE, why);
	if (r) {
		fwd_finish(k, job, r, why);
		return;
	}
	job->next = k->inflight;
	k->inflight = job;
}

/*
 * Job, sent on k, is given up on before its answer came: its output bytes
 * stay owed until the answer is read (kept counted if no memory: the
 * connection's close forgets them).
 */
static void fwd_give_up(struct fwd_conn *k, const struct gw_job *job)
{
	struct fwd_given_up *g = malloc(sizeof(*g));

	if (!g)
		return;
	g->tag = job->tag;
	g->bytes = job->output_cap;
	g->next = k->given_up;
	k->given_up = g;
}

/* Whether k may owe bytes more when the pool owes all: one answer always, more within the bounds. */
static bool fwd_room_in(const struct fwd_conn *k, size_t bytes, size_t all)
{
	return (!k->owed_bytes && !all) ||
	       (k->owed_bytes + bytes <= FWD_OWED_CONN_MAX && all + bytes <= FWD_OWED_MAX);
}

/*
 * Whether k may be sent a query of bytes of output. When not for the
 * pool's bytes, bytes_held asks the next answer read to wake the
 * connections; published before the second look, so an answer read
 * meanwhile either shows in it or sees the flag.
 */
static bool fwd_room(struct fwd_conn *k, size_t bytes)
{
	struct gw_fwd *fw = k->fw;

	if (fwd_room_in(k, bytes, atomic_load(&fw->owed_bytes)))
		return true;
	atomic_store(&fw->bytes_held, true);
	return fwd_room_in(k, bytes, atomic_load(&fw->owed_bytes));
}

static void fwd_wake(struct fwd_conn *k);

/*
 * The answer to tag was read on k: job's (NULL: a query given up on). Its
 * bytes no longer owed; connections held back for all the pool's bytes woken.
 */
static void fwd_answer_read(struct fwd_conn *k, uint64_t tag, const struct gw_job *job)
{
	struct gw_fwd *fw = k->fw;
	size_t bytes = job ? job->output_cap : 0;

	if (atomic_load(&k->owed) > 0)
		atomic_fetch_sub(&k->owed, 1);
	for (struct fwd_given_up **pp = &k->given_up; !job && *pp; pp = &(*pp)->next) {
		struct fwd_given_up *g = *pp;

		if (g->tag == tag) {
			bytes = g->bytes;
			*pp = g->next;
			free(g);
			break;
		}
	}
	if (bytes > k->owed_bytes)
		bytes = k->owed_bytes;
	k->owed_bytes -= bytes;
	atomic_fetch_sub(&fw->owed_bytes, bytes);
	if (bytes && atomic_exchange(&fw->bytes_held, false))
		for (int i = 0; i < fw->nr_conns; i++)
			if (&fw->conns[i] != k)
				fwd_wake(&fw->conns[i]);
}

/* Whether the thread reads k's socket: its jobs in flight, or answers owed while not borrowed. */
static bool fwd_reads(struct fwd_conn *k)
{
	/* k->c last: a connection with nothing in flight or owed may be a borrower's */
	return (k->inflight || (atomic_load(&k->owed) && !atomic_load(&k->borrowed))) && k->c;
}

static void fwd_receive(struct fwd_conn *k)
{
	/* with none in flight the connection may be borrowed already: hands off */
	while (fwd_reads(k)) {
		struct coloc_infer_result res;
		struct gw_job **pp, *job;
		int r = coloc_client_infer_recv(k->c, &res, k->scratch, k->scratch_cap, 0);

		if (r == 0)
			return;
		if (r < 0 && r != -EMSGSIZE) {
			fwd_drop_connection(k, "receiving", r);
			return;
		}
		for (pp = &k->inflight; *pp && (*pp)->tag != res.tag; pp = &(*pp)->next)
			;
		job = *pp;
		fwd_answer_read(k, res.tag, job);
		if (!job)
			continue; /* its job timed out before */
		*pp = job->next;
		job->res = res;
		job->input_lent = false; /* answered: colocd has read its input */
		if (r == -EMSGSIZE || res.output_bytes > job->output_cap) {
			fwd_finish(k, job, -EMSGSIZE, "colocd's output is larger than the model's");
			continue;
		}
		if (res.status == COLOC_INFER_OK)
			memcpy(job->output, k->scratch, res.output_bytes);
		fwd_finish(k, job, 0, NULL);
	}
}

/*
 * Fails the jobs waiting for a connection (every one borrowed) that are
 * past their deadline, on time rather than when a connection is given
 * back; *next becomes the earliest deadline left there if sooner.
 */
static void fwd_expire_waiting(struct gw_fwd *fw, uint64_t now, uint64_t *next)
{
	struct gw_job *expired = NULL, **pp;

	pthread_mutex_lock(&fw->lock);
	for (pp = &fw->waiting; *pp;) {
		struct gw_job *job = *pp;

		if (job->deadline_ns <= now) {
			*pp = job->next;
			job->next = expired;
			expired = job;
			continue;
		}
		if (job->deadline_ns < *next)
			*next = job->deadline_ns;
		pp = &job->next;
	}
	fw->waiting_tail = pp;
	pthread_mutex_unlock(&fw->lock);
	while (expired) {
		struct gw_job *job = expired;

		expired = job->next;
		job->result = -ETIMEDOUT;
		snprintf(job->why, sizeof(job->why), "timed out in the gateway's queue");
		atomic_fetch_sub(&fw->jobs, 1);
		job->done(job);
	}
}

/* Fails jobs past their deadline; the poll timeout until the next one (ms). */
static int fwd_expire(struct fwd_conn *k)
{
	uint64_t now = coloc_now_ns(), next = UINT64_MAX;
	struct gw_job **pp = &k->inflight;

	while (*pp) {
		struct gw_job *job = *pp;

		if (job->deadline_ns <= now) {
			*pp = job->next;
			fwd_give_up(k, job);
			fwd_finish(k, job, -ETIMEDOUT, "colocd did not answer in time");
			continue;
		}
		if (job->deadline_ns < next)
			next = job->deadline_ns;
		pp = &job->next;
	}
	fwd_expire_waiting(k->fw, now, &next);
	if (next == UINT64_MAX)
		return 1000;
	return (int)((next - now) / 1000000 + 1);
}

/* The poll timeout (ms) that also wakes at deadline_ns. */
static int fwd_min_timeout(int timeout, uint64_t deadline_ns)
{
	uint64_t now = coloc_now_ns();
	int ms = deadline_ns <= now ? 0 : (int)((deadline_ns - now) / 1000000 + 1);

	return ms < timeout ? ms : timeout;
}

/*
 * Puts list back at the head of k's queue, to be sent once colocd owes
 * fewer answers; a job past its deadline ends now instead. The earliest
 * deadline held, UINT64_MAX for none.
 */
static uint64_t fwd_hold_back(struct fwd_conn *k, struct gw_job *list)
{
	uint64_t now = coloc_now_ns(), next = UINT64_MAX;
	struct gw_job *kept = NULL, **tail = &kept;

	while (list) {
		struct gw_job *job = list;

		list = job->next;
		if (job->deadline_ns <= now) {
			fwd_finish(k, job, -ETIMEDOUT, "timed out in the gateway's queue");
			continue;
		}
		if (job->deadline_ns < next)
			next = job->deadline_ns;
		*tail = job;
		tail = &job->next;
	}
	*tail = NULL;
	if (!kept)
		return next;
	pthread_mutex_lock(&k->lock);
	*tail = k->queue;
	if (!k->queue)
		k->queue_tail = tail;
	k->queue = kept;
	pthread_mutex_unlock(&k->lock);
	return next;
}

static void *fwd_thread(void *arg)
{
	struct fwd_conn *k = arg;

	while (!atomic_load(&k->fw->stop)) {
		struct pollfd pfd[2] = { { .fd = k->efd, .events = POLLIN },
					 { .fd = -1, .events = POLLIN } };
		struct gw_job *q = fwd_take_queue(k, false);
		uint64_t v, held = 0; /* the earliest deadline held back */
		size_t held_bytes = 0; /* the first held job's output */
		int timeout;

		while (q) {
			struct gw_job *next = q->next;

			if (atomic_load(&k->owed) >= k->fw->pipeline || !fwd_room(k, q->output_cap)) {
				held_bytes = q->output_cap;
				held = fwd_hold_back(k, q);
				break;
			}
			fwd_send(k, q);
			q = next;
		}
		fwd_receive(k);
		timeout = fwd_expire(k);
		/* answers read made room for the jobs held back: send them now */
		if (held && held != UINT64_MAX && atomic_load(&k->owed) < k->fw->pipeline &&
		    fwd_room(k, held_bytes))
			timeout = 0;
		else if (held && held != UINT64_MAX)
			timeout = fwd_min_timeout(timeout, held);
		pfd[1].fd = fwd_reads(k) ? coloc_client_fd(k->c) : -1;
		if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN && read(k->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			break;
	}
	fwd_fail_inflight(k, -ECANCELED, "the gateway is stopping");
	for (struct gw_job *q = fwd_take_queue(k, true); q;) {
		struct gw_job *next = q->next;

		fwd_finish(k, q, -ECANCELED, "the gateway is stopping");
		q = next;
	}
	return NULL;
}

int gw_fwd_create(const char *socket_path, int nr_conns, int max_jobs, int io_timeout_ms,
		  struct gw_fwd **out, struct coloc_err *err)
{
	struct gw_fwd *fw;
	int i;

	*out = NULL;
	if (nr_conns < 1 || nr_conns > FWD_MAX_CONNS)
		return coloc_err_set(err, -EINVAL, "1 to %d connections to colocd", FWD_MAX_CONNS);
	if (max_jobs < 1 || io_timeout_ms < 0)
		return coloc_err_set(err, -EINVAL,
				     "a queue of at least 1 job and a colocd I/O deadline of 0 ms "
				     "or more (got %d jobs, %d ms)",
				     max_jobs, io_timeout_ms);
	if (strlen(socket_path) >= sizeof(fw->socket_path))
		return coloc_err_set(err, -ENAMETOOLONG, "socket path too long: %.200s",
				     socket_path);
	fw = calloc(1, sizeof(*fw));
	if (!fw)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	snprintf(fw->socket_path, sizeof(fw->socket_path), "%s", socket_path);
	fw->nr_conns = nr_conns;
	fw->max_jobs = max_jobs;
	fw->io_timeout_ms = io_timeout_ms;
	fw->pipeline = COLOC_MAX_INFLIGHT;
	fw->memfds = gw_memfd_pool_create(max_jobs < FWD_MEMFDS_KEPT ? max_jobs : FWD_MEMFDS_KEPT);
	if (!fw->memfds) {
		free(fw);
		return coloc_err_set(err, -ENOMEM, "out of memory");
	}
	pthread_mutex_init(&fw->lock, NULL);
	fw->waiting_tail = &fw->waiting;
	for (i = 0; i < nr_conns; i++) {
		struct fwd_conn *k = &fw->conns[i];

		k->fw = fw;
		k->queue_tail = &k->queue;
		pthread_mutex_init(&k->lock, NULL);
		k->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (k->efd < 0 || pthread_create(&k->thread, NULL, fwd_thread, k)) {
			int e = errno;

			if (k->efd >= 0)
				close(k->efd);
			pthread_mutex_destroy(&k->lock);
			fw->nr_conns = i;
			gw_fwd_destroy(fw);
			return coloc_err_set(err, -e, "starting the forwarding threads: %s",
					     strerror(e));
		}
	}
	*out = fw;
	return 0;
}

static void fwd_wake(struct fwd_conn *k)
{
	uint64_t one = 1;

	/* only a full counter fails (EAGAIN), and that has woken the thread already */
	if (write(k->efd, &one, sizeof(one)) < 0)
		return;
}

/* Moves the jobs of list (count n) to the end of k's queue; under both locks. */
static void fwd_enqueue(struct fwd_conn *k, struct gw_job *list, struct gw_job **tail, int n)
{
	atomic_fetch_add(&k->load, n);
	*k->queue_tail = list;
	k->queue_tail = tail;
}

/* The least loaded connection nobody borrowed, ties broken round robin; or NULL. Under fw->lock. */
static struct fwd_conn *fwd_pick(struct gw_fwd *fw)
{
	unsigned int start = atomic_fetch_add(&fw->next_conn, 1);
	struct fwd_conn *k = NULL;
	int best = 0;

	for (int i = 0; i < fw->nr_conns; i++) {
		struct fwd_conn *c =
			&fw->conns[(start + (unsigned int)i) % (unsigned int)fw->nr_conns];
		int load = atomic_load(&c->load);

		if (atomic_load(&c->borrowed))
			continue;
		if (!k || load < best) {
			k = c;
			best = load;
		}
	}
	return k;
}

int gw_fwd_submit(struct gw_fwd *fw, struct gw_job *job)
{
	struct fwd_conn *k;
	bool stopped = false, waits = false;

	if (atomic_load(&fw->stop))
		return -ESHUTDOWN;
	if (atomic_fetch_add(&fw->jobs, 1) >= fw->max_jobs) {
		atomic_fetch_sub(&fw->jobs, 1);
		return -EAGAIN;
	}
	job->next = NULL;
	job->own_memfd = NULL;
	job->input_lent = false;
	job->result = 0;
	job->why[0] = '\0';
	pthread_mutex_lock(&fw->lock);
	k = atomic_load(&fw->stop) ? NULL : fwd_pick(fw);
	if (k) {
		pthread_mutex_lock(&k->lock);
		stopped = k->stopped;
		if (!stopped)
			fwd_enqueue(k, job, &job->next, 1);
		pthread_mutex_unlock(&k->lock);
	} else if (!atomic_load(&fw->stop)) {
		/* every connection borrowed: the first one given back takes it */
		*fw->waiting_tail = job;
		fw->waiting_tail = &job->next;
		waits = true;
	} else {
		stopped = true;
	}
	pthread_mutex_unlock(&fw->lock);
	if (stopped) {
		atomic_fetch_sub(&fw->jobs, 1);
		return -ESHUTDOWN;
	}
	if (k)
		fwd_wake(k);
	else if (waits) /* a thread times its deadline (fwd_expire_waiting) */
		fwd_wake(&fw->conns[0]);
	return 0;
}

/* A connection with nothing queued or in flight, now borrowed; or NULL. */
static struct fwd_conn *fwd_borrow(struct gw_fwd *fw)
{
	unsigned int start = atomic_fetch_add(&fw->next_conn, 1);
	struct fwd_conn *got = NULL;

	pthread_mutex_lock(&fw->lock);
	for (int i = 0; i < fw->nr_conns && !got; i++) {
		struct fwd_conn *k =
			&fw->conns[(start + (unsigned int)i) % (unsigned int)fw->nr_conns];

		if (atomic_load(&k->load) || atomic_load(&k->borrowed) || atomic_load(&k->owed))
			continue;
		pthread_mutex_lock(&k->lock);
		if (!k->stopped && !atomic_load(&k->load) && !atomic_load(&k->owed)) {
			atomic_store(&k->borrowed, true);
			atomic_store(&k->load, 1);
			got = k;
		}
		pthread_mutex_unlock(&k->lock);
	}
	pthread_mutex_unlock(&fw->lock);
	return got;
}

/* Gives k back, with the jobs that waited for a connection meanwhile. */
static void fwd_give_back(struct fwd_conn *k)
{
	struct gw_fwd *fw = k->fw;
	bool queued;

	pthread_mutex_lock(&fw->lock);
	pthread_mutex_lock(&k->lock);
	atomic_store(&k->borrowed, false);
	atomic_fetch_sub(&k->load, 1);
	if (fw->waiting && !k->stopped) {
		int n = 0;

		for (struct gw_job *j = fw->waiting; j; j = j->next)
			n++;
		fwd_enqueue(k, fw->waiting, fw->waiting_tail, n);
		fw->waiting = NULL;
		fw->waiting_tail = &fw->waiting;
	}
	/* an answer owed (the borrower gave up on it): the thread reads it */
	queued = k->queue != NULL || atomic_load(&k->owed);
	pthread_mutex_unlock(&k->lock);
	pthread_mutex_unlock(&fw->lock);
	if (queued)
		fwd_wake(k);
}

/*
 * The timeline's: when colocd's answer can be read (a poll of its own
 * first; with COLOC_GW_TIMELINE only: an answer already in the client's
 * buffer would wait out the poll, which a borrowed connection, one query
 * at a time, never has).
 */
static void fwd_tl_readable(struct fwd_conn *k, struct gw_job *job, int wait)
{
	struct pollfd pfd = { .fd = coloc_client_fd(k->c), .events = POLLIN };

	if (poll(&pfd, 1, wait) > 0)
		gw_tl_stamp(job->tl, GW_TL_READABLE);
}

/* Reads answers on the borrowed k until job's own: its result and why. */
static int fwd_await(struct fwd_conn *k, struct gw_job *job)
{
	for (;;) {
		uint64_t now = coloc_now_ns();
		int r, wait;

		if (now >= job->deadline_ns) {
			snprintf(job->why, sizeof(job->why), "colocd did not answer in time");
			fwd_give_up(k, job);
			return -ETIMEDOUT; /* its late answer is thrown away by tag */
		}
		if (atomic_load(&k->fw->stop)) {
			snprintf(job->why, sizeof(job->why), "the gateway is stopping");
			fwd_give_up(k, job);
			return -ECANCELED;
		}
		wait = (int)((job->deadline_ns - now) / 1000000 + 1);
		if (wait > FWD_STOP_CHECK_MS)
			wait = FWD_STOP_CHECK_MS;
		if (gw_tl_on)
			fwd_tl_readable(k, job, wait);
		r = coloc_client_infer_recv(k->c, &job->res, job->output, job->output_cap, wait);
		gw_tl_stamp(job->tl, GW_TL_RECEIVED);
		if (r == 0)
			continue;
		if (r == 1 || r == -EMSGSIZE)
			fwd_answer_read(k, job->res.tag, job->res.tag == job->tag ? job : NULL);
		if (r < 0 && r != -EMSGSIZE) {
			fwd_conn_why(job->why, sizeof(job->why), r, "receiving", k->c);
			fwd_close_conn(k);
			return r == -ETIMEDOUT ? -ETIMEDOUT : -EPIPE;
		}
		if (job->res.tag != job->tag)
			continue; /* an answer to a query given up on before */
		job->input_lent = false; /* answered: colocd has read its input */
		if (r == -EMSGSIZE || job->res.output_bytes > job->output_cap) {
			snprintf(job->why, sizeof(job->why),
				 "colocd's output is larger than the model's");
			return -EMSGSIZE;
		}
		return 0;
	}
}

int gw_fwd_run(struct gw_fwd *fw, struct gw_job *job)
{
	struct fwd_conn *k;

	if (atomic_load(&fw->stop))
		return -ESHUTDOWN;
	if (atomic_fetch_add(&fw->jobs, 1) >= fw->max_jobs) {
		atomic_fetch_sub(&fw->jobs, 1);
		return -EAGAIN;
	}
	/* past the pool's owed bytes the job waits in a queue, held back there */
	k = atomic_load(&fw->owed_bytes) + job->output_cap <= FWD_OWED_MAX ? fwd_borrow(fw) : NULL;
	if (!k) {
		atomic_fetch_sub(&fw->jobs, 1);
		return -EBUSY;
	}
	job->next = NULL;
	job->own_memfd = NULL;
	job->input_lent = false;
	job->why[0] = '\0';
	memset(&job->res, 0, sizeof(job->res));
	if (coloc_now_ns() >= job->deadline_ns) {
		snprintf(job->why, sizeof(job->why), "timed out in the gateway's queue");
		job->result = -ETIMEDOUT;
	} else {
		job->tag = k->next_tag++;
		job->result = fwd_send_query(k, job, job->why, sizeof(job->why));
		gw_tl_stamp(job->tl, GW_TL_SENT);
		if (!job->result)
			job->result = fwd_await(k, job);
	}
	fwd_release_input(fw, job);
	fwd_give_back(k);
	atomic_fetch_sub(&fw->jobs, 1);
	return 0;
}

int gw_fwd_pending(struct gw_fwd *fw)
{
	return atomic_load(&fw->jobs);
}

void gw_fwd_stop(struct gw_fwd *fw)
{
	struct gw_job *waiting;

	if (fw->joined)
		return;
	pthread_mutex_lock(&fw->lock);
	atomic_store(&fw->stop, true);
	waiting = fw->waiting;
	fw->waiting = NULL;
	fw->waiting_tail = &fw->waiting;
	pthread_mutex_unlock(&fw->lock);
	while (waiting) {
		struct gw_job *job = waiting;

		waiting = job->next;
		job->result = -ECANCELED;
		snprintf(job->why, sizeof(job->why), "the gateway is stopping");
		atomic_fetch_sub(&fw->jobs, 1);
		job->done(job);
	}
	for (int i = 0; i < fw->nr_conns; i++)
		fwd_wake(&fw->conns[i]);
	for (int i = 0; i < fw->nr_conns; i++)
		pthread_join(fw->conns[i].thread, NULL);
	fw->joined = true;
}

void gw_fwd_destroy(struct gw_fwd *fw)
{
	if (!fw)
		return;
	gw_fwd_stop(fw);
	for (int i = 0; i < fw->nr_conns; i++) {
		struct fwd_conn *k = &fw->conns[i];

		fwd_close_conn(k);
		close(k->efd);
		free(k->scratch);
		pthread_mutex_destroy(&k->lock);
	}
	pthread_mutex_destroy(&fw->lock);
	gw_memfd_pool_destroy(fw->memfds);
	free(fw);
}

int gw_fwd_set_pipeline(struct gw_fwd *fw, int pipeline)
{
	if (pipeline < 1 || pipeline > COLOC_MAX_INFLIGHT)
		return -EINVAL;
	fw->pipeline = pipeline;
	return 0;
}

void gw_fwd_set_socket_copy(struct gw_fwd *fw, bool socket_copy)
{
	fw->socket_copy = socket_copy;
}

struct gw_memfd *gw_fwd_memfd_get(struct gw_fwd *fw, size_t bytes)
{
	return fw->socket_copy ? NULL : gw_memfd_get(fw->memfds, bytes);
}

void gw_fwd_memfd_put(struct gw_fwd *fw, struct gw_memfd *m, const struct gw_job *job)
{
	fwd_memfd_back(fw, m, job && job->input_memfd == m && job->input_lent);
}
