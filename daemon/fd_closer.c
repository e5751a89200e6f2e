// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The closer threads of fd_closer.h: each entry of the table
 * (fd_closer_table.c) is served by a detached thread of its own, at nice
 * FD_CLOSER_NICE, that closes its queue in order (every socket reset
 * first, whatever linger its sender set), looks for more every
 * FD_CLOSER_DRAIN_MS or when its queue reaches FD_CLOSER_WAKE_COUNT
 * (signalled on its own condition variable), and ends once idle for
 * FD_CLOSER_IDLE_MS. The caller only queues: a thread stuck in a close
 * holds only its uid's descriptors. A queue is a list linked through one
 * array indexed by descriptor, so a push allocates nothing and cannot
 * fail: every descriptor queued is open in this process, so no two share
 * a link (docs/design/fd-closer.md).
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "fd_closer_internal.h"
#include "mono_clock.h"

pthread_mutex_t fd_closer_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_condattr_t fd_closer_cond_attr;
struct fd_closer_uid fd_closer_uids[FD_CLOSER_UIDS];
int fd_closer_after[FD_CLOSER_MAX_FDS];
uid_t fd_closer_owner[FD_CLOSER_MAX_FDS];
static pthread_once_t fd_closer_once = PTHREAD_ONCE_INIT;

/* Each entry's condition variable, timed on coloc_now_ns()'s clock. */
static void fd_closer_init(void)
{
	pthread_condattr_init(&fd_closer_cond_attr);
	pthread_condattr_setclock(&fd_closer_cond_attr, CLOCK_MONOTONIC);
	for (int i = 0; i < FD_CLOSER_UIDS; i++)
		pthread_cond_init(&fd_closer_uids[i].work, &fd_closer_cond_attr);
}

void fd_closer_lock_table(void)
{
	pthread_once(&fd_closer_once, fd_closer_init);
	pthread_mutex_lock(&fd_closer_lock);
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

/* Serves w.u, which a hung close may change under it (fd_closer_table.c's retirement). */
static void *fd_closer_thread(void *arg)
{
	struct fd_closer_worker w = { .u = arg };
	uint64_t idle_since_ns = coloc_now_ns();

	setpriority(PRIO_PROCESS, (id_t)gettid(), FD_CLOSER_NICE);
	pthread_mutex_lock(&fd_closer_lock);
	w.u->worker = &w;
	for (;;) {
		struct fd_closer_uid *u = w.u;
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
		u->closing_uid = fd_closer_owner[fd];
		u->busy_since_ns = coloc_now_ns();
		pthread_mutex_unlock(&fd_closer_lock);
		fd_closer_release(fd);
		pthread_mutex_lock(&fd_closer_lock);
		w.u->busy_since_ns = 0;
		idle_since_ns = coloc_now_ns();
	}
	fd_closer_worker_ends(&w);
	pthread_mutex_unlock(&fd_closer_lock);
	return NULL;
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

void fd_closer_start_threads(void)
{
	for (int i = 0; i < FD_CLOSER_UIDS; i++)
		if (fd_closer_uids[i].len && !fd_closer_uids[i].running)
			fd_closer_start_thread(&fd_closer_uids[i]);
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
	fd_closer_lock_table();
	u = fd_closer_entry_for(uid);
	fd_closer_owner[fd] = uid;
	fd_closer_push(u, fd);
	/* a thread closing needs no wake: it looks at its queue before it waits */
	if (u->running && u->len == FD_CLOSER_WAKE_COUNT && !u->busy_since_ns)
		pthread_cond_signal(&u->work);
	fd_closer_start_threads();
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
