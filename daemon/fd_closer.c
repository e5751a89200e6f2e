// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The closer threads of fd_closer.h: a table of uids with closes waiting,
 * each served by a detached thread of its own that closes them in order
 * and ends when none is left. A thread stuck in a close holds only its
 * uid's descriptors. What cannot wait is closed at once: a small shmem
 * file sealed against growing, a socket other than AF_UNIX made to close
 * abortively (no linger), and an AF_UNIX stream socket shut down with
 * nothing queued (no descriptor in flight in it whose release could wait).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "fd_closer.h"
#include "loop.h"
#include "mono_clock.h"

struct fd_closer_uid {
	bool used, running;
	uid_t uid;
	int *fds; /* waiting, oldest first from head */
	int head, len, cap;
	uint64_t busy_since_ns; /* when the close now running began; 0 when none runs */
};

static pthread_mutex_t fd_closer_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fd_closer_uid fd_closer_uids[FD_CLOSER_UIDS];

static void *fd_closer_thread(void *arg)
{
	struct fd_closer_uid *u = arg;

	pthread_mutex_lock(&fd_closer_lock);
	while (u->len) {
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
 * A shmem file's last close frees every page it holds (~70 ms a GiB on the
 * 2-vCPU VM): at once only when it can hold little, sealed against growing
 * (no write, fallocate or fault past its size) and no larger than
 * FD_CLOSER_SHMEM_NOW_BYTES. F_GET_SEALS answered, fstat reaches no file
 * system that could wait (shmem or hugetlbfs).
 */
static bool fd_closer_shmem_is_small(int fd, int seals)
{
	struct stat st;

	return (seals & F_SEAL_GROW) && !fstat(fd, &st) && st.st_size >= 0 &&
	       (unsigned long long)st.st_size <= FD_CLOSER_SHMEM_NOW_BYTES;
}

bool fd_closer_close_now_is_safe(int fd)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	int type, queued = -1, seals;
	socklen_t tlen = sizeof(type);
	struct linger no_linger = { .l_onoff = 1, .l_linger = 0 };

	seals = fcntl(fd, F_GET_SEALS);
	if (seals >= 0)
		return fd_closer_shmem_is_small(fd, seals);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len))
		return false;
	if (sa.ss_family != AF_UNIX)
		return !setsockopt(fd, SOL_SOCKET, SO_LINGER, &no_linger, sizeof(no_linger));
	if (type != SOCK_STREAM)
		return false; /* a datagram of no bytes may still carry descriptors */
	shutdown(fd, SHUT_RDWR);
	return !ioctl(fd, SIOCINQ, &queued) && queued == 0;
}

void fd_closer_close(int fd, uid_t uid)
{
	struct fd_closer_uid *u;

	if (fd < 0)
		return;
	if (fd_closer_close_now_is_safe(fd)) {
		close(fd);
		return;
	}
	pthread_mutex_lock(&fd_closer_lock);
	u = fd_closer_find(uid, true);
	if (fd_closer_push(u, fd) && !u->running) {
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
