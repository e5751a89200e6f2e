// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A submit's files copied and sealed on a thread of their own
 * (submit_copy.h). The thread touches nothing of colocd's but its own job:
 * the duplicated descriptors in, the sealed copies, their key and the error
 * out; its last act is one byte into a pipe whose read end the loop polls.
 * The loop then joins it, calls back and starts the next job: the oldest of
 * the user whose last job started longest ago (users never served first).
 * A job past its deadline is given up on: c->state decides, by one
 * compare-and-swap, whether the thread finished first (the loop owns the job
 * again) or the loop gave up first (the loop answers the submit and forgets
 * the job; the thread, detached, stops at its next chunk, frees the copies
 * it made and the job and closes its descriptors, touching nothing else).
 * See docs/security-submit.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fd_closer.h"
#include "submit_copy.h"
#include "submit_files.h"
#include "submit_stalled.h"

/* users whose turn is remembered: one a connection colocd holds at most */
#define SUBMIT_COPY_TURNS COLOC_MAX_CONNS

/* a job's c->state, read and written with __atomic; RUNNING is 0: the copy's cancel flag */
enum { SUBMIT_COPY_RUNNING = 0, SUBMIT_COPY_FINISHED, SUBMIT_COPY_GIVEN_UP };

struct submit_copy {
	uid_t uid;
	uint64_t budget; /* bytes its files may have in all */
	int nr;
	int fds[SUBMIT_COPY_MAX_FILES]; /* duplicates of the client's */
	char what[SUBMIT_COPY_MAX_FILES][SUBMIT_COPY_WHAT_LEN];
	int sealed[SUBMIT_COPY_MAX_FILES];
	bool weights; /* sealed[1] is the weights */
	char location[SUBMIT_COPY_MAX_FILES][SUBMIT_COPY_LOCATION_LEN]; /* the external files' */
	struct profile_key key;
	int ret;
	struct coloc_err err;
	submit_copy_done_fn done;
	void *ctx;
	int state; /* SUBMIT_COPY_RUNNING, ... */
	int wake; /* the copier's wake[1], for its thread */
	int stalled_slot; /* submit_stalled.h's, once given up on */
	struct submit_copy *next;
};

struct submit_copier {
	struct loop *loop;
	struct loop_source *src;
	struct loop_source *deadline; /* the running job's; re-set when one starts */
	__u64 timeout_ns;
	int wake[2]; /* the thread writes one byte into [1] when its job is done */
	pthread_t thread;
	struct submit_copy *running; /* its thread's job; NULL when none runs */
	struct submit_copy *head, *tail; /* waiting, by arrival */
	uint64_t starts; /* jobs started so far */
	/* when each user's last job started (its `starts`); the oldest entry makes room */
	struct {
		uid_t uid;
		uint64_t started;
	} turns[SUBMIT_COPY_TURNS];
};

static void close_all(int *fds, int nr)
{
	for (int i = 0; i < nr; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

/* done called (unless NULL), the job's descriptors closed, the job freed. */
static void submit_copy_end(struct submit_copy *c)
{
	if (c->done)
		c->done(c->ctx, c->ret, c->sealed, c->nr, &c->key, &c->err);
	/* the client's: never closed here on the loop (fd_closer.h) */
	for (int i = 0; i < c->nr; i++)
		fd_closer_close(c->fds[i], c->uid);
	close_all(c->sealed, c->nr);
	free(c);
}

/* The profile key of c's sealed copies: 0 or -errno with c->err filled. */
static int submit_copy_key(struct submit_copy *c)
{
	struct profile_key_external ext[SUBMIT_COPY_MAX_FILES];
	int first = 1 + c->weights;
	struct profile_key_input in = {
		.model_fd = c->sealed[0],
		.weights_fd = c->weights ? c->sealed[1] : -1,
		.external = ext,
		.nr_external = c->nr - first,
		.cancel = &c->state, /* given up on: stops before its next chunk */
	};

	for (int i = first; i < c->nr; i++)
		ext[i - first] = (struct profile_key_external){ c->location[i], c->sealed[i] };
	return profile_key_compute(&in, &c->key, &c->err);
}

static void *submit_copy_thread(void *arg)
{
	struct submit_copy *c = arg;
	uint64_t budget = c->budget < COLOC_MAX_SUBMIT_BYTES ? c->budget : COLOC_MAX_SUBMIT_BYTES;
	int running = SUBMIT_COPY_RUNNING;
	ssize_t n;

	for (int i = 0; i < c->nr && !c->ret; i++)
		c->ret = submit_file_seal_until(c->fds[i], c->what[i], &c->state, &budget,
						&c->sealed[i], &c->err);
	if (!c->ret && __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != SUBMIT_COPY_RUNNING)
		c->ret = coloc_err_set(&c->err, -ECANCELED, "given up on");
	if (!c->ret)
		c->ret = submit_copy_key(c);
	if (c->ret)
		close_all(c->sealed, c->nr);
	if (__atomic_compare_exchange_n(&c->state, &running, SUBMIT_COPY_FINISHED, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		do
			n = write(c->wake, "", 1);
		while (n < 0 && errno == EINTR);
		return NULL;
	}
	/* given up on: the loop forgot c, this thread alone has it */
	close_all(c->fds, c->nr);
	close_all(c->sealed, c->nr);
	submit_stalled_ended(c->stalled_slot);
	free(c);
	return NULL;
}

/* When uid's last job started (0: none remembered), and its entry in turns[] if any. */
static uint64_t submit_copier_turn(const struct submit_copier *q, uid_t uid, int *at)
{
	*at = -1;
	for (int i = 0; i < SUBMIT_COPY_TURNS; i++)
		if (q->turns[i].started && q->turns[i].uid == uid) {
			*at = i;
			return q->turns[i].started;
		}
	return 0;
}

/* uid's job starts now: remembered, in its entry, a free one or the oldest. */
static void submit_copier_took_turn(struct submit_copier *q, uid_t uid)
{
	int at, oldest = 0;

	submit_copier_turn(q, uid, &at);
	for (int i = 1; at < 0 && i < SUBMIT_COPY_TURNS; i++)
		if (q->turns[i].started < q->turns[oldest].started)
			oldest = i;
	if (at < 0)
		at = oldest;
	q->turns[at].uid = uid;
	q->turns[at].started = ++q->starts;
}

/* Takes out of the queue the oldest job of the user whose turn is next. */
static struct submit_copy *submit_copier_take(struct submit_copier *q)
{
	struct submit_copy **best = NULL, *c;
	uint64_t best_turn = 0;
	int at;

	for (struct submit_copy **pp = &q->head; *pp; pp = &(*pp)->next) {
		uint64_t turn = submit_copier_turn(q, (*pp)->uid, &at);

		if (!best || turn < best_turn) {
			best = pp;
			best_turn = turn;
		}
	}
	c = *best;
	*best = c->next;
	if (q->tail == c) {
		q->tail = NULL;
		for (struct submit_copy *t = q->head; t; t = t->next)
			q->tail = t;
	}
	c->next = NULL;
	return c;
}

/* c's copy started on a thread of its own, its deadline set: 0 or -errno with c->err filled. */
static int submit_copier_start(struct submit_copier *q, struct submit_copy *c)
{
	int ret = submit_stalled_check(c->uid, &c->err);

	if (ret)
		return ret;
	submit_copier_took_turn(q, c->uid);
	c->wake = q->wake[1];
	q->running = c;
	ret = pthread_create(&q->thread, NULL, submit_copy_thread, c);
	if (ret) {
		q->running = NULL;
		return coloc_err_set(&c->err, -ret,
				     "cannot start the copy of the submit's files: %s",
				     strerror(ret));
	}
	loop_timer_set(q->deadline, q->timeout_ns, 0);
	return 0;
}

/* The next job waiting, on a thread of its own; one that cannot start ends with why. */
static void submit_copier_next(struct submit_copier *q)
{
	while (!q->running && q->head) {
		struct submit_copy *c = submit_copier_take(q);

		c->ret = submit_copier_start(q, c);
		if (c->ret)
			submit_copy_end(c);
	}
}

/*
 * Gives up on the running job, its done called with ret and err: true, or
 * false when its thread finished first (its byte is on the way to the loop).
 * Past the swap, c is its thread's: nothing of it is read here after.
 */
static bool submit_copier_give_up(struct submit_copier *q, int ret, const struct coloc_err *err)
{
	struct submit_copy *c = q->running;
	submit_copy_done_fn done = c->done;
	void *ctx = c->ctx;
	int nr = c->nr, running = SUBMIT_COPY_RUNNING, none[SUBMIT_COPY_MAX_FILES];
	struct profile_key key = { 0 };

	c->stalled_slot = submit_stalled_add(c->uid);
	if (!__atomic_compare_exchange_n(&c->state, &running, SUBMIT_COPY_GIVEN_UP, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		submit_stalled_ended(c->stalled_slot);
		return false;
	}
	pthread_detach(q->thread);
	q->running = NULL;
	for (int i = 0; i < nr; i++)
		none[i] = -1;
	if (done)
		done(ctx, ret, none, nr, &key, err);
	return true;
}

static void submit_copier_deadline(struct loop_source *src, __u64 now_ns, void *ctx)
{
	struct submit_copier *q = ctx;
	struct coloc_err err = { 0 };

	(void)src;
	(void)now_ns;
	if (!q->running)
		return;
	coloc_err_set(&err, -ETIMEDOUT,
		      "the submit timed out reading its files: not copied after %llu ms (colocd "
		      "--submit-timeout-ms); is one on a filesystem that stalls its reads? "
		      "Copy them to a local disk first",
		      (unsigned long long)(q->timeout_ns / 1000000));
	if (submit_copier_give_up(q, -ETIMEDOUT, &err))
		submit_copier_next(q);
}

static void submit_copier_woken(struct loop_source *src, int fd, unsigned int revents, void *ctx)
{
	struct submit_copier *q = ctx;
	struct submit_copy *c = q->running;
	char byte;

	(void)src;
	(void)revents;
	if (read(fd, &byte, 1) != 1 || !c)
		return;
	pthread_join(q->thread, NULL);
	q->running = NULL;
	submit_copy_end(c);
	submit_copier_next(q);
}

int submit_copier_new(struct loop *l, unsigned int timeout_ms, struct submit_copier **out)
{
	struct submit_copier *q = calloc(1, sizeof(*q));
	int ret;

	*out = NULL;
	if (!q)
		return -ENOMEM;
	q->loop = l;
	q->timeout_ns = (__u64)(timeout_ms ? timeout_ms : SUBMIT_COPY_DEFAULT_TIMEOUT_MS) * 1000000;
	if (pipe2(q->wake, O_CLOEXEC | O_NONBLOCK)) {
		ret = -errno;
		free(q);
		return ret;
	}
	ret = loop_add_poll(l, &q->src, q->wake[0], POLLIN, submit_copier_woken, q);
	if (!ret) {
		ret = loop_add_timer(l, &q->deadline, q->timeout_ns, 0, submit_copier_deadline, q);
		if (ret)
			loop_source_remove(q->src);
	}
	if (ret) {
		close_all(q->wake, 2);
		free(q);
		return ret;
	}
	*out = q;
	return 0;
}

void submit_copier_free(struct submit_copier *q)
{
	if (!q)
		return;
	if (q->running) {
		struct coloc_err err = { 0 };

		coloc_err_set(&err, -ECANCELED, "colocd is shutting down");
		if (!submit_copier_give_up(q, -ECANCELED, &err)) {
			pthread_join(q->thread, NULL);
			close_all(q->running->sealed, q->running->nr);
			q->running->ret = err.code;
			q->running->err = err;
			submit_copy_end(q->running);
			q->running = NULL;
		}
	}
	while (q->head) {
		struct submit_copy *c = q->head;

		q->head = c->next;
		c->ret = coloc_err_set(&c->err, -ECANCELED, "colocd is shutting down");
		submit_copy_end(c);
	}
	loop_source_remove(q->src);
	loop_source_remove(q->deadline);
	close_all(q->wake, 2);
	free(q);
}

int submit_copier_add(struct submit_copier *q, uid_t uid, uint64_t budget, const int *fds,
		      const char (*what)[SUBMIT_COPY_WHAT_LEN], int nr,
		      const struct submit_copy_roles *roles, submit_copy_done_fn done, void *ctx,
		      struct coloc_err *err)
{
	struct submit_copy *c;
	int ret;

	if (nr < 1 || nr > SUBMIT_COPY_MAX_FILES ||
	    nr != 1 + roles->weights + roles->nr_external)
		return coloc_err_set(err, -EINVAL,
				     "a submit has 1 to %d files: the model, the weights if "
				     "named, one per external data location",
				     SUBMIT_COPY_MAX_FILES);
	ret = submit_stalled_check(uid, err);
	if (ret)
		return ret;
	c = calloc(1, sizeof(*c));
	if (!c)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	c->uid = uid;
	c->budget = budget;
	c->nr = nr;
	c->weights = roles->weights;
	for (int i = 0; i < roles->nr_external; i++)
		snprintf(c->location[1 + c->weights + i], sizeof(c->location[0]), "%s",
			 roles->locations[i]);
	for (int i = 0; i < SUBMIT_COPY_MAX_FILES; i++)
		c->fds[i] = c->sealed[i] = -1;
	for (int i = 0; i < nr; i++) {
		c->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
		if (c->fds[i] < 0) {
			ret = coloc_err_set(err, -errno, "duplicating the submit's files: %s",
					    strerror(errno));
			submit_copy_end(c);
			return ret;
		}
		memcpy(c->what[i], what[i], sizeof(c->what[i]));
		c->what[i][sizeof(c->what[i]) - 1] = '\0';
	}
	c->done = done;
	c->ctx = ctx;
	if (q->running) {
		if (q->tail)
			q->tail->next = c;
		else
			q->head = c;
		q->tail = c;
		return 0;
	}
	/* none running: none waits either (submit_copier_next); c starts now or fails here */
	ret = submit_copier_start(q, c);
	if (ret) {
		*err = c->err;
		c->done = NULL; /* the caller hears it from the return value, not from done */
		submit_copy_end(c);
	}
	return ret;
}
