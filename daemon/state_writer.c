// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The --state writer's thread: a queue of file jobs (keep a tenant's
 * files, drop them) in the order the loop made them, and the newest specs
 * posted, in a table of the writer's own. The thread takes one job at a
 * time under the lock, then does its I/O without it, and once no job waits
 * copies the specs into its second table and writes the file from that;
 * the loop only ever holds the lock to link, unlink or copy. Nothing a drop
 * does allocates: its job was reserved when its tenant was recorded, the
 * tables are the writer's from the start, and the text is written straight
 * from them (colocd_state_render), so a remove always reaches the disk.
 * A drop cancels its tenant's keeps not yet started, so a removed tenant's
 * files are held no longer than the copy in progress, and it stands for a
 * drop of the same tenant still queued. A write that fails is said on
 * stderr and tried again at exit if no newer specs came; exit waits for the
 * disk a bounded time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include "coloc/sensor.h"
#include "state_writer.h"

/* How long exit waits for the disk to take what is queued. */
#define STATE_WRITER_EXIT_WAIT_S 10

struct state_job {
	struct state_job *next;
	char name[SERVING_NAME_LEN];
	bool keep; /* keep files (dups of the caller's), else drop the copies */
	struct colocd_files files;
	int nr_external;
};

struct state_writer {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	char *path;
	struct colocd_spec *written; /* the thread's copy, written without the lock */
	int nr_written;
	/* under lock */
	struct state_job *head, *tail;
	struct state_job *spare; /* drop jobs reserved, one per tenant recorded */
	struct colocd_spec *specs; /* the newest posted: COLOC_MAX_TENANTS of room */
	int nr_specs;
	bool posted; /* specs the thread has not taken yet */
	bool stopping, done;
};

static void state_job_free(struct state_job *j)
{
	if (j->keep)
		colocd_files_close(&j->files, j->nr_external);
	free(j);
}

static void state_job_run(const char *path, struct state_job *j)
{
	struct coloc_err err = { 0 };

	if (!j->keep) {
		colocd_state_drop_files(path, j->name, j->nr_external);
		return;
	}
	if (colocd_state_keep_files(path, j->name, &j->files, j->nr_external, &err))
		fprintf(stderr, "colocd: %s (tenant %s will not come back after a restart)\n",
			coloc_err_str(&err), j->name);
}

/* Writes the thread's copy of the specs; false (said on stderr) when it failed. */
static bool state_specs_write(struct state_writer *w)
{
	struct coloc_err err = { 0 };

	if (!colocd_state_write_specs(w->path, w->written, w->nr_written, &err))
		return true;
	fprintf(stderr, "colocd: %s\n", coloc_err_str(&err));
	return false;
}

static void *state_writer_run(void *arg)
{
	struct state_writer *w = arg;
	bool failed = false; /* the last write failed */

	for (;;) {
		struct state_job *job;
		bool stopping, take = false;

		pthread_mutex_lock(&w->lock);
		while (!w->head && !w->posted && !w->stopping)
			pthread_cond_wait(&w->wake, &w->lock);
		/* the jobs first, one at a time (a drop may cancel those after), then the specs */
		job = w->head;
		if (job) {
			w->head = job->next;
			if (!w->head)
				w->tail = NULL;
		} else if (w->posted) {
			memcpy(w->written, w->specs, (size_t)w->nr_specs * sizeof(w->specs[0]));
			w->nr_written = w->nr_specs;
			w->posted = false;
			take = true;
		}
		stopping = w->stopping;
		pthread_mutex_unlock(&w->lock);

		if (job) {
			state_job_run(w->path, job);
			state_job_free(job);
			continue;
		}
		if (take)
			failed = !state_specs_write(w);
		/* the thread ends only once nothing more was handed over */
		if (stopping && !take)
			break;
	}
	if (failed)
		state_specs_write(w);
	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void state_jobs_free(struct state_job *j)
{
	while (j) {
		struct state_job *next = j->next;

		state_job_free(j);
		j = next;
	}
}

/* w's memory; the thread is not running. */
static void state_writer_release(struct state_writer *w)
{
	state_jobs_free(w->spare);
	free(w->specs);
	free(w->written);
	free(w->path);
	free(w);
}

int state_writer_new(const char *path, struct state_writer **out)
{
	struct state_writer *w = calloc(1, sizeof(*w));
	int ret;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->path = strdup(path);
	w->specs = calloc(COLOC_MAX_TENANTS, sizeof(*w->specs));
	w->written = calloc(COLOC_MAX_TENANTS, sizeof(*w->written));
	if (!w->path || !w->specs || !w->written) {
		state_writer_release(w);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	ret = pthread_create(&w->thread, NULL, state_writer_run, w);
	if (ret) {
		pthread_cond_destroy(&w->wake);
		pthread_mutex_destroy(&w->lock);
		state_writer_release(w);
		return -ret;
	}
	*out = w;
	return 0;
}

static void state_writer_queue_locked(struct state_writer *w, struct state_job *j)
{
	if (w->tail)
		w->tail->next = j;
	else
		w->head = j;
	w->tail = j;
	pthread_cond_signal(&w->wake);
}

static void state_writer_queue(struct state_writer *w, struct state_job *j)
{
	pthread_mutex_lock(&w->lock);
	state_writer_queue_locked(w, j);
	pthread_mutex_unlock(&w->lock);
}

static struct state_job *state_job_new(const char *name, bool keep, int nr_external)
{
	struct state_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	snprintf(j->name, sizeof(j->name), "%s", name);
	j->keep = keep;
	j->nr_external = nr_external;
	j->files.model_fd = j->files.weights_fd = -1;
	for (int i = 0; i < COLOC_MAX_REQUEST_FDS; i++)
		j->files.external_fd[i] = -1;
	return j;
}

int state_writer_keep_files(struct state_writer *w, const char *name,
			    const struct colocd_files *files, int nr_external)
{
	struct state_job *j = state_job_new(name, true, nr_external);
	int ret;

	if (!j)
		return -ENOMEM;
	ret = colocd_files_dup(files, nr_external, &j->files);
	if (ret) {
		state_job_free(j);
		return ret;
	}
	state_writer_queue(w, j);
	return 0;
}

int state_writer_reserve_drop(struct state_writer *w)
{
	struct state_job *j = state_job_new("", false, 0);

	if (!j)
		return -ENOMEM;
	pthread_mutex_lock(&w->lock);
	j->next = w->spare;
	w->spare = j;
	pthread_mutex_unlock(&w->lock);
	return 0;
}

/* Unlinks the keeps of name not started yet; the caller frees them. */
static struct state_job *state_writer_cancel_keeps(struct state_writer *w, const char *name)
{
	struct state_job *cancelled = NULL, **link = &w->head, *prev = NULL;

	while (*link) {
		struct state_job *j = *link;

		if (j->keep && !strcmp(j->name, name)) {
			*link = j->next;
			j->next = cancelled;
			cancelled = j;
			continue;
		}
		prev = j;
		link = &j->next;
	}
	w->tail = prev;
	return cancelled;
}

/* The drop of name still queued, or NULL. */
static struct state_job *state_writer_queued_drop(struct state_writer *w, const char *name)
{
	for (struct state_job *j = w->head; j; j = j->next)
		if (!j->keep && !strcmp(j->name, name))
			return j;
	return NULL;
}

void state_writer_drop_files(struct state_writer *w, const char *name, int nr_external)
{
	struct state_job *cancelled, *j, *queued;

	pthread_mutex_lock(&w->lock);
	cancelled = state_writer_cancel_keeps(w, name);
	j = w->spare;
	if (j)
		w->spare = j->next;
	/* after the cancel, a drop of name still queued has no keep of name behind it */
	queued = state_writer_queued_drop(w, name);
	if (queued) {
		if (queued->nr_external < nr_external)
			queued->nr_external = nr_external;
	} else if (j) {
		snprintf(j->name, sizeof(j->name), "%s", name);
		j->nr_external = nr_external;
		j->next = NULL;
		state_writer_queue_locked(w, j);
		j = NULL;
	}
	pthread_mutex_unlock(&w->lock);
	state_jobs_free(cancelled);
	if (j || queued) {
		free(j);
		return;
	}
	/* a tenant recorded without a reservation: its copies stay (it does not come back) */
	fprintf(stderr, "colocd: no drop reserved for tenant %s: its copies in %s.files stay\n",
		name, w->path);
}

void state_writer_post(struct state_writer *w, const struct colocd_spec *specs, int nr)
{
	if (nr > COLOC_MAX_TENANTS)
		nr = COLOC_MAX_TENANTS;
	pthread_mutex_lock(&w->lock);
	memcpy(w->specs, specs, (size_t)nr * sizeof(*specs));
	w->nr_specs = nr;
	w->posted = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

void state_writer_free(struct state_writer *w)
{
	if (!w)
		return;
	struct timespec until;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += STATE_WRITER_EXIT_WAIT_S;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_broadcast(&w->wake);
	while (!w->done && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&w->wake, &w->lock, &until);
	pthread_mutex_unlock(&w->lock);
	if (ret == ETIMEDOUT) {
		/* the thread still uses w: left to the process's exit */
		fprintf(stderr,
			"colocd: the state file %s took more than %d s to write at exit (a disk "
			"that does not answer?); what was queued for it is not on disk\n",
			w->path, STATE_WRITER_EXIT_WAIT_S);
		return;
	}
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	state_writer_release(w);
}
