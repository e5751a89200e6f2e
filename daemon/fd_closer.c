// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The closer threads of fd_closer.h: a table of uids with closes waiting,
 * each served by a detached thread of its own, at nice FD_CLOSER_NICE,
 * that closes them in order (every socket reset first, whatever linger
 * its sender set), looks for more every FD_CLOSER_DRAIN_MS or when its
 * queue reaches FD_CLOSER_WAKE_COUNT (signalled on its own condition
 * variable), and ends once idle for FD_CLOSER_IDLE_MS. The caller only
 * queues: a thread stuck in a close holds only its uid's descriptors.
 * A queue is a list linked through one array indexed by descriptor, so a
 * push allocates nothing and cannot fail: every descriptor queued is open
 * in this process, so no two share a link (docs/design/fd-closer.md).
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "fd_closer.h"
#include "mono_clock.h"

struct fd_closer_uid {
	bool used, running;
	uid_t uid;
	pthread_cond_t work; /* signalled when its queue reaches FD_CLOSER_WAKE_COUNT */
	int oldest, newest, len; /* the queue; oldest and newest mean nothing when len is 0 */
	uint64_t busy_since_ns; /* when the close now running began; 0 when none runs */
};

static pthread_mutex_t fd_closer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fd_closer_once = PTHREAD_ONCE_INIT;
static struct fd_closer_uid fd_closer_uids[FD_CLOSER_UIDS];
/* fd_closer_after[fd]: the descriptor queued after fd, when fd is queued and not the newest */
static int fd_closer_after[FD_CLOSER_MAX_FDS];

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
		fd = u->oldest;
		u->oldest = fd_closer_after[fd];
		u->len--;
		u->busy_since_ns = coloc_now_ns();
		pthread_mutex_unlock(&fd_closer_lock);
		fd_closer_release(fd);
		pthread_mutex_lock(&fd_closer_lock);
		u->busy_since_ns = 0;
		idle_since_ns = coloc_now_ns();
	}
	u->running = false;
	pthread_mutex_unlock(&fd_closer_lock);
	return NULL;
}

/*
 * The entry uid's closes go to: its own, a free one (taken for it when
 * take, else NULL: it has no closes), or, when none is free, the last one,
 * shared by every such uid, each of them stuck (fd_closer_hung).
 */
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
	if (!free_one)
		return &fd_closer_uids[FD_CLOSER_UIDS - 1];
	if (!take)
		return NULL;
	free_one->used = true;
	free_one->uid = uid;
	return free_one;
}

static void fd_closer_push(struct fd_closer_uid *u, int fd)
{
	if (u->len)
		fd_closer_after[u->newest] = fd;
	else
		u->oldest = fd;
	u->newest = fd;
	u->len++;
}

/* Called locked; on failure (no memory for a stack) the next close of anyone tries again. */
static void fd_closer_start_thread(struct fd_closer_uid *u)
{
	pthread_attr_t attr;
	pthread_t t;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 << 10);
	u->running = !pthread_create(&t, &attr, fd_closer_thread, u);
	pthread_attr_destroy(&attr);
}

void fd_closer_close(int fd, uid_t uid)
{
	struct fd_closer_uid *u;

	if (fd < 0)
		return;
	if (fd >= FD_CLOSER_MAX_FDS) {
		/* only where root raised colocd's limit past fd_closer_limit_nofile()'s */
		close(fd);
		return;
	}
	pthread_once(&fd_closer_once, fd_closer_init);
	pthread_mutex_lock(&fd_closer_lock);
	u = fd_closer_find(uid, true);
	fd_closer_push(u, fd);
	/* a thread closing needs no wake: it looks at its queue before it waits */
	if (u->running && u->len == FD_CLOSER_WAKE_COUNT && !u->busy_since_ns)
		pthread_cond_signal(&u->work);
	for (int i = 0; i < FD_CLOSER_UIDS; i++)
		if (fd_closer_uids[i].len && !fd_closer_uids[i].running)
			fd_closer_start_thread(&fd_closer_uids[i]);
	pthread_mutex_unlock(&fd_closer_lock);
}

void fd_closer_limit_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_max > FD_CLOSER_MAX_FDS) {
		rl.rlim_max = FD_CLOSER_MAX_FDS;
		if (rl.rlim_cur > rl.rlim_max)
			rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

bool fd_closer_hung(uid_t uid)
{
	struct fd_closer_uid *u;
	bool hung = false;

	pthread_mutex_lock(&fd_closer_lock);
	u = fd_closer_find(uid, false);
	if (u == &fd_closer_uids[FD_CLOSER_UIDS - 1])
		hung = true;
	else if (u)
		hung = u->busy_since_ns &&
		       coloc_now_ns() - u->busy_since_ns > FD_CLOSER_STUCK_MS * 1000000ull;
	pthread_mutex_unlock(&fd_closer_lock);
	return hung;
}

bool fd_closer_backlogged(uid_t uid)
{
	struct fd_closer_uid *u;
	bool backlogged;

	pthread_mutex_lock(&fd_closer_lock);
	u = fd_closer_find(uid, false);
	backlogged = u && u->len >= FD_CLOSER_STUCK_QUEUE;
	pthread_mutex_unlock(&fd_closer_lock);
	return backlogged;
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
