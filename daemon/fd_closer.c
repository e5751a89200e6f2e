// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The closer threads of fd_closer.h: a table of uids with closes waiting,
 * each served by a detached thread of its own, at nice FD_CLOSER_NICE,
 * that closes them in order (every socket reset first, whatever linger
 * its sender set), looks for more every FD_CLOSER_DRAIN_MS or when its
 * queue reaches FD_CLOSER_WAKE_COUNT (signalled on its own condition
 * variable), and ends once idle for FD_CLOSER_IDLE_MS. The caller only
 * queues: a thread stuck in a close holds only its uid's descriptors.
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "fd_closer.h"
#include "mono_clock.h"

struct fd_closer_uid {
	bool used, running;
	uid_t uid;
	pthread_cond_t work; /* signalled when its queue reaches FD_CLOSER_WAKE_COUNT */
	int *fds; /* waiting, oldest first from head */
	int head, len, cap;
	uint64_t busy_since_ns; /* when the close now running began; 0 when none runs */
};

static pthread_mutex_t fd_closer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fd_closer_once = PTHREAD_ONCE_INIT;
static struct fd_closer_uid fd_closer_uids[FD_CLOSER_UIDS];

/* Each entry's condition variable, timed on coloc_now_ns()'s clock. */
static void fd_closer_init(void)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	for (int i = 0; i < FD_CLOSER_UIDS; i++)
		pthread_cond_init(&fd_closer_uids[i].work, &attr);
	pthread_condattr_destroy(&attr);
}

/* Waits FD_CLOSER_DRAIN_MS, or until signalled. Called and returns locked. */
static void fd_closer_wait(struct fd_closer_uid *u)
{
	uint64_t until_ns = coloc_now_ns() + FD_CLOSER_DRAIN_MS * 1000000ull;
	struct timespec until = { .tv_sec = (time_t)(until_ns / 1000000000ull),
				  .tv_nsec = (long)(until_ns % 1000000000ull) };

	pthread_cond_timedwait(&u->work, &fd_closer_lock, &until);
}

/*
 * An abortive close waits on no peer: SO_LINGER {1, 0} on any socket (the
 * option is generic; it fails harmlessly on anything else), set here,
 * just before the close, over whatever its sender set.
 */
static void fd_closer_release(int fd)
{
	static const struct linger reset = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
	close(fd);
}

static void *fd_closer_thread(void *arg)
{
	struct fd_closer_uid *u = arg;
	uint64_t idle_since_ns = coloc_now_ns();

	setpriority(PRIO_PROCESS, (id_t)gettid(), FD_CLOSER_NICE);
	pthread_mutex_lock(&fd_closer_lock);
	for (;;) {
		int fd;

		if (!u->len) {
			if (coloc_now_ns() - idle_since_ns >= FD_CLOSER_IDLE_MS * 1000000ull)
				break;
			fd_closer_wait(u);
			continue;
		}
		fd = u->fds[u->head];
		u->head++;
		u->len--;
		u->busy_since_ns = coloc_now_ns();
		pthread_mutex_unlock(&fd_closer_lock);
		fd_closer_release(fd);
		pthread_mutex_lock(&fd_closer_lock);
		u->busy_since_ns = 0;
		idle_since_ns = coloc_now_ns();
	}
	u->running = false;
	u->head = 0;
	pthread_mutex_unlock(&fd_closer_lock);
	return NULL;
}

/* uid's entry, a free one taken for it, or the last (shared) one. */
static struct fd_closer_uid *fd_closer_find(uid_t uid, bool take)
{
	struct fd_closer_uid *free_one = NULL;

	for (int i = 0; i < FD_CLOSER_UIDS - 1; i++) {
		struct fd_closer_uid *u = &fd_closer_uids[i];

		if (u->used && u->uid == uid)
			return u;
		if (!free_one && (!u->used || (!u->running && !u->len)))
			free_one = u;
	}
	if (!take)
		return NULL;
	if (!free_one)
		return &fd_closer_uids[FD_CLOSER_UIDS - 1];
	free_one->used = true;
	free_one->uid = uid;
	return free_one;
}

static bool fd_closer_push(struct fd_closer_uid *u, int fd)
{
	if (u->head + u->len == u->cap) {
		if (u->head) {
			for (int i = 0; i < u->len; i++)
				u->fds[i] = u->fds[u->head + i];
			u->head = 0;
		} else {
			int cap = u->cap ? u->cap * 2 : 16;
			int *fds = realloc(u->fds, (size_t)cap * sizeof(*fds));

			if (!fds)
				return false;
			u->fds = fds;
			u->cap = cap;
		}
	}
	u->fds[u->head + u->len++] = fd;
	return true;
}

void fd_closer_close(int fd, uid_t uid)
{
	struct fd_closer_uid *u;

	if (fd < 0)
		return;
	pthread_once(&fd_closer_once, fd_closer_init);
	pthread_mutex_lock(&fd_closer_lock);
	u = fd_closer_find(uid, true);
	if (!fd_closer_push(u, fd)) {
		pthread_mutex_unlock(&fd_closer_lock);
		return;
	}
	if (u->running) {
		/* a thread closing needs no wake: it looks at its queue before it waits */
		if (u->len == FD_CLOSER_WAKE_COUNT && !u->busy_since_ns)
			pthread_cond_signal(&u->work);
	} else {
		pthread_attr_t attr;
		pthread_t t;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 64 << 10);
		u->running = !pthread_create(&t, &attr, fd_closer_thread, u);
		pthread_attr_destroy(&attr);
		/* no thread: the descriptor waits for the next close of this uid */
	}
	pthread_mutex_unlock(&fd_closer_lock);
}

bool fd_closer_stuck(uid_t uid)
{
	struct fd_closer_uid *u;
	bool stuck = false;

	pthread_mutex_lock(&fd_closer_lock);
	u = fd_closer_find(uid, false);
	if (u)
		stuck = u->len >= FD_CLOSER_STUCK_QUEUE ||
			(u->busy_since_ns &&
			 coloc_now_ns() - u->busy_since_ns > FD_CLOSER_STUCK_MS * 1000000ull);
	pthread_mutex_unlock(&fd_closer_lock);
	return stuck;
}

int fd_closer_pending(uid_t uid)
{
	struct fd_closer_uid *u;
	int n = 0;

	pthread_mutex_lock(&fd_closer_lock);
	u = fd_closer_find(uid, false);
	if (u)
		n = u->len + (u->busy_since_ns != 0);
	pthread_mutex_unlock(&fd_closer_lock);
	return n;
}
