// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A job run on its caller's thread (gw_fwd_run, forward.h): it borrows a
 * connection with nothing queued, in flight or owed, whose thread then
 * takes no queue and does not poll the socket (forward_conn.c), so the
 * borrower alone sends and reads, with no hand-off between threads.
 * Giving the connection back hands it the jobs that waited meanwhile for
 * one (every connection borrowed): no job waits behind a borrower's slow
 * query while another connection is free.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include "forward_impl.h"
#include "mono_clock.h"

#define FWD_STOP_CHECK_MS 100 /* a borrower's longest wait before it looks at stop */

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
