// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The forwarding pool (forward.h; its parts in forward_impl.h): its
 * connections made, each with its thread (forward_conn.c), and stopped.
 * A submitted job goes to the least loaded connection nobody borrowed
 * (forward_borrow.c); with every one borrowed it waits in the pool's
 * queue, first come first served, for the first one given back. The
 * pool's lock orders the pick, the borrows and the give-backs against
 * each other. The input memfds kept for reuse (memfd_pool.h) are the
 * pool's too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "forward_impl.h"

#define FWD_MEMFDS_KEPT 256 /* input memfds kept mapped between queries */

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

void fwd_release_input(struct gw_fwd *fw, struct gw_job *job)
{
	fwd_memfd_back(fw, job->own_memfd, job->input_lent);
	job->own_memfd = NULL;
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

void fwd_wake(struct fwd_conn *k)
{
	uint64_t one = 1;

	/* only a full counter fails (EAGAIN), and that has woken the thread already */
	if (write(k->efd, &one, sizeof(one)) < 0)
		return;
}

void fwd_enqueue(struct fwd_conn *k, struct gw_job *list, struct gw_job **tail, int n)
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

void fwd_end_waiting(struct gw_fwd *fw, struct gw_job *list, int result, const char *why)
{
	while (list) {
		struct gw_job *job = list;

		list = job->next;
		job->result = result;
		snprintf(job->why, sizeof(job->why), "%s", why);
		atomic_fetch_sub(&fw->jobs, 1);
		job->done(job);
	}
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
	fwd_end_waiting(fw, waiting, -ECANCELED, "the gateway is stopping");
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
