// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The --state writer's thread: a queue of file jobs (keep a tenant's
 * files, drop them) in the order the loop made them, and one slot for the
 * newest text of the state file. The thread takes one job at a time under
 * the lock, then does its I/O without it, and writes the text once no job
 * waits; the loop only ever holds the lock to link, unlink or swap. A drop
 * cancels its tenant's keeps not yet started, so a removed tenant's files
 * are held no longer than the copy in progress. A write that fails is said
 * on stderr and tried again at exit if no newer text came; exit waits for
 * the disk a bounded time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
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
	/* under lock */
	struct state_job *head, *tail;
	char *text;
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

/* Writes text; false (said on stderr) when it failed. */
static bool state_text_write(const char *path, const char *text)
{
	struct coloc_err err = { 0 };

	if (!colocd_state_write_text(path, text, &err))
		return true;
	fprintf(stderr, "colocd: %s\n", coloc_err_str(&err));
	return false;
}

static void *state_writer_run(void *arg)
{
	struct state_writer *w = arg;
	char *failed = NULL; /* the last text, when its write failed */

	for (;;) {
		struct state_job *job;
		char *text = NULL;
		bool stopping;

		pthread_mutex_lock(&w->lock);
		while (!w->head && !w->text && !w->stopping)
			pthread_cond_wait(&w->wake, &w->lock);
		/* the jobs first, one at a time (a drop may cancel those after), then the text */
		job = w->head;
		if (job) {
			w->head = job->next;
			if (!w->head)
				w->tail = NULL;
		} else {
			text = w->text;
			w->text = NULL;
		}
		stopping = w->stopping;
		pthread_mutex_unlock(&w->lock);

		if (job) {
			state_job_run(w->path, job);
			state_job_free(job);
			continue;
		}
		if (text) {
			free(failed);
			failed = NULL;
			if (!state_text_write(w->path, text))
				failed = text;
			else
				free(text);
		}
		/* the thread ends only once nothing more was handed over */
		if (stopping && !text)
			break;
	}
	if (failed)
		state_text_write(w->path, failed);
	free(failed);
	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int state_writer_new(const char *path, struct state_writer **out)
{
	struct state_writer *w = calloc(1, sizeof(*w));
	int ret;

	*out = NULL;
	if (!w || !(w->path = strdup(path))) {
		free(w);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	ret = pthread_create(&w->thread, NULL, state_writer_run, w);
	if (ret) {
		pthread_cond_destroy(&w->wake);
		pthread_mutex_destroy(&w->lock);
		free(w->path);
		free(w);
		return -ret;
	}
	*out = w;
	return 0;
}

static void state_writer_queue(struct state_writer *w, struct state_job *j)
{
	pthread_mutex_lock(&w->lock);
	if (w->tail)
		w->tail->next = j;
	else
		w->head = j;
	w->tail = j;
	pthread_cond_signal(&w->wake);
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

/* A duplicate of fd (-1 for -1) into *out; 0 or -errno. */
static int state_dup(int fd, int *out)
{
	*out = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
	return fd >= 0 && *out < 0 ? -errno : 0;
}

int state_writer_keep_files(struct state_writer *w, const char *name,
			    const struct colocd_files *files, int nr_external)
{
	struct state_job *j = state_job_new(name, true, nr_external);
	int ret;

	if (!j)
		return -ENOMEM;
	ret = state_dup(files->model_fd, &j->files.model_fd);
	if (!ret)
		ret = state_dup(files->weights_fd, &j->files.weights_fd);
	for (int i = 0; i < nr_external && !ret; i++)
		ret = state_dup(files->external_fd[i], &j->files.external_fd[i]);
	if (ret) {
		state_job_free(j);
		return ret;
	}
	state_writer_queue(w, j);
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

int state_writer_drop_files(struct state_writer *w, const char *name, int nr_external)
{
	struct state_job *j = state_job_new(name, false, nr_external), *cancelled;

	pthread_mutex_lock(&w->lock);
	cancelled = state_writer_cancel_keeps(w, name);
	pthread_mutex_unlock(&w->lock);
	while (cancelled) {
		struct state_job *next = cancelled->next;

		state_job_free(cancelled);
		cancelled = next;
	}
	if (!j)
		return -ENOMEM;
	state_writer_queue(w, j);
	return 0;
}

void state_writer_post(struct state_writer *w, char *text)
{
	char *old;

	pthread_mutex_lock(&w->lock);
	old = w->text;
	w->text = text;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	free(old);
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
	free(w->path);
	free(w);
}
