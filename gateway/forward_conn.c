// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A connection of the forwarding pool (forward_impl.h), served by its own
 * thread: it sleeps in poll() on its eventfd (new jobs) and, while it has
 * jobs in flight, colocd's socket (answers); it sends what was queued (while
 * colocd owes it fewer than pipeline answers and forward_owed.c has room
 * for the output bytes; the rest are held back for answers), reads every
 * answer there is, and expires jobs past their deadline; callbacks run on
 * this thread with no lock held. Answers are read into a scratch buffer of
 * the connection (the tag is known only once the answer is read) and
 * copied into the job's output.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "forward_impl.h"
#include "mono_clock.h"

void fwd_conn_why(char *why, size_t len, int r, const char *what, struct coloc_client *c)
{
	snprintf(why, len, "colocd connection %s (%s): %.200s",
		 r == -ETIMEDOUT ? "timed out and closed" : "lost", what,
		 c ? coloc_client_error(c) : "");
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

void fwd_close_conn(struct fwd_conn *k)
{
	coloc_client_close(k->c);
	k->c = NULL;
	fwd_owed_forget(k);
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

int fwd_send_query(struct fwd_conn *k, struct gw_job *job, char *why, size_t why_len)
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
	fwd_end_waiting(fw, expired, -ETIMEDOUT, "timed out in the gateway's queue");
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

void *fwd_thread(void *arg)
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
