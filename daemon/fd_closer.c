// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The closer threads of fd_closer.h: a table of uids with closes waiting,
 * each served by a detached thread of its own that closes them in order,
 * waits on its own condition variable for more (signalled once a batch,
 * when its queue was empty) and ends once idle for FD_CLOSER_IDLE_MS. A
 * thread stuck in a close holds only its uid's descriptors. The caller
 * closes only what the allow-list below names, and shmem within a byte
 * budget over time.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
	pthread_cond_t work; /* signalled when its queue turns from empty to not */
	int *fds; /* waiting, oldest first from head */
	int head, len, cap;
	uint64_t busy_since_ns; /* when the close now running began; 0 when none runs */
};

static pthread_mutex_t fd_closer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fd_closer_once = PTHREAD_ONCE_INIT;
static struct fd_closer_uid fd_closer_uids[FD_CLOSER_UIDS];
/* shmem bytes the caller may still free now, refilled at FD_CLOSER_NOW_BYTES_PER_S */
static uint64_t fd_closer_budget = FD_CLOSER_SHMEM_NOW_BYTES, fd_closer_budget_at_ns;

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

/* Waits up to FD_CLOSER_IDLE_MS for work: whether some came. Called and returns locked. */
static bool fd_closer_wait(struct fd_closer_uid *u)
{
	uint64_t until_ns = coloc_now_ns() + FD_CLOSER_IDLE_MS * 1000000ull;
	struct timespec until = { .tv_sec = (time_t)(until_ns / 1000000000ull),
				  .tv_nsec = (long)(until_ns % 1000000000ull) };

	while (!u->len)
		if (pthread_cond_timedwait(&u->work, &fd_closer_lock, &until))
			return u->len > 0;
	return true;
}

static void *fd_closer_thread(void *arg)
{
	struct fd_closer_uid *u = arg;

	pthread_mutex_lock(&fd_closer_lock);
	while (u->len || fd_closer_wait(u)) {
		int fd = u->fds[u->head];

		u->head++;
		u->len--;
		u->busy_since_ns = coloc_now_ns();
		pthread_mutex_unlock(&fd_closer_lock);
		close(fd);
		pthread_mutex_lock(&fd_closer_lock);
		u->busy_since_ns = 0;
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
	if (u->len >= FD_CLOSER_QUEUE_MAX)
		return false;
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

/*
 * The most a shmem file's last close can free, or -1 when it is unbounded:
 * its pages (st_blocks counts those fallocated past its size too) and, when
 * not sealed against writing, the holes below its size a writer may still
 * fill. Without F_SEAL_GROW a writer may add any number past its size.
 * F_GET_SEALS answered, so fstat reaches no file system that could wait.
 */
static long long fd_closer_shmem_bytes(int fd, int seals)
{
	struct stat st;

	if (!(seals & F_SEAL_GROW) || fstat(fd, &st) || st.st_size < 0 || st.st_blocks < 0)
		return -1;
	return st.st_blocks * 512ll + ((seals & F_SEAL_WRITE) ? 0 : (long long)st.st_size);
}

static int fd_closer_sockopt(int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	return getsockopt(fd, level, name, &v, &len) ? -1 : v;
}

/*
 * A UDP socket over IPv4 or IPv6: its close frees queues bounded by its
 * buffers, with no descriptors in them, and nothing a holder of another
 * copy can do to it after this check changes that (its family and protocol
 * are fixed). A TCP socket may become a listener (its close then tears down
 * the accept queue) or be given a linger back by that holder between the
 * check and the close; every other family and protocol is not known to be
 * cheap (AF_UNIX above all: descriptors in flight in its queue).
 */
static bool fd_closer_socket_is_cheap(int fd)
{
	int family = fd_closer_sockopt(fd, SOL_SOCKET, SO_DOMAIN);

	return (family == AF_INET || family == AF_INET6) &&
	       fd_closer_sockopt(fd, SOL_SOCKET, SO_TYPE) == SOCK_DGRAM &&
	       fd_closer_sockopt(fd, SOL_SOCKET, SO_PROTOCOL) == IPPROTO_UDP;
}

/* What closing fd on the caller may free, or -1 when it is not on the allow-list. */
static long long fd_closer_now_bytes(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals >= 0) {
		long long bytes = fd_closer_shmem_bytes(fd, seals);

		return bytes <= (long long)FD_CLOSER_SHMEM_NOW_BYTES ? bytes : -1;
	}
	return fd_closer_socket_is_cheap(fd) ? 0 : -1;
}

bool fd_closer_close_now_is_safe(int fd)
{
	return fd_closer_now_bytes(fd) >= 0;
}

/* Takes bytes from the caller's budget, refilled since it was last taken from. */
static bool fd_closer_budget_take(uint64_t bytes)
{
	uint64_t now = coloc_now_ns(), us = (now - fd_closer_budget_at_ns) / 1000;

	if (us > 1000000)
		us = 1000000;
	fd_closer_budget += us * FD_CLOSER_NOW_BYTES_PER_S / 1000000;
	if (fd_closer_budget > FD_CLOSER_SHMEM_NOW_BYTES)
		fd_closer_budget = FD_CLOSER_SHMEM_NOW_BYTES;
	fd_closer_budget_at_ns = now;
	if (bytes > fd_closer_budget)
		return false;
	fd_closer_budget -= bytes;
	return true;
}

void fd_closer_close(int fd, uid_t uid)
{
	long long bytes;
	struct fd_closer_uid *u;

	if (fd < 0)
		return;
	bytes = fd_closer_now_bytes(fd);
	pthread_mutex_lock(&fd_closer_lock);
	if (bytes >= 0 && fd_closer_budget_take((uint64_t)bytes)) {
		pthread_mutex_unlock(&fd_closer_lock);
		close(fd);
		return;
	}
	pthread_once(&fd_closer_once, fd_closer_init);
	u = fd_closer_find(uid, true);
	if (!fd_closer_push(u, fd)) {
		pthread_mutex_unlock(&fd_closer_lock);
		return;
	}
	if (u->running) {
		/* one wake a batch: a thread closing or about to look needs none */
		if (u->len == 1 && !u->busy_since_ns)
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
