/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * fd_closer's state, shared by fd_closer.c (the threads and their queues)
 * and fd_closer_table.c (which entry a uid's closes go to, and how they
 * stand). Everything here is read and written under fd_closer_lock.
 */
#ifndef COLOC_DAEMON_FD_CLOSER_INTERNAL_H
#define COLOC_DAEMON_FD_CLOSER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include "fd_closer.h"

struct fd_closer_worker;

struct fd_closer_uid {
	bool used, running;
	uid_t uid;
	pthread_cond_t work; /* signalled when its queue reaches FD_CLOSER_WAKE_COUNT */
	int oldest, newest, len; /* the queue; oldest and newest mean nothing when len is 0 */
	uint64_t busy_since_ns; /* when the close now running began; 0 when none runs */
	uid_t closing_uid; /* whose close that is (the overflow's sharers differ) */
	struct fd_closer_worker *worker; /* the thread serving it, once started */
};

/* A closer thread's own, on its stack. */
struct fd_closer_worker {
	struct fd_closer_uid *u; /* the entry it serves: a table's, or own once retired */
	struct fd_closer_uid own;
	struct fd_closer_worker *next; /* the next retired thread */
};

#define FD_CLOSER_ROOT 0
#define FD_CLOSER_OVERFLOW (FD_CLOSER_UIDS - 1)

extern pthread_mutex_t fd_closer_lock;
extern pthread_condattr_t fd_closer_cond_attr;
extern struct fd_closer_uid fd_closer_uids[FD_CLOSER_UIDS];
/* fd_closer_after[fd]: the descriptor queued after fd, when fd is queued and not the newest */
extern int fd_closer_after[FD_CLOSER_MAX_FDS];
/* fd_closer_owner[fd]: the uid fd came from, while it is queued */
extern uid_t fd_closer_owner[FD_CLOSER_MAX_FDS];

static inline void fd_closer_push(struct fd_closer_uid *u, int fd)
{
	if (u->len)
		fd_closer_after[u->newest] = fd;
	else
		u->oldest = fd;
	u->newest = fd;
	u->len++;
}

/* Takes fd_closer_lock, the table set up on the first call. */
void fd_closer_lock_table(void);
/*
 * Called locked: a thread for each entry with closes waiting and none (one
 * that could not start, an entry whose thread was retired).
 */
void fd_closer_start_threads(void);
/* fd_closer_table.c, called locked */
/* The entry a close of uid's goes to now, taken for uid when it needs one. */
struct fd_closer_uid *fd_closer_entry_for(uid_t uid);
/* w's thread ends: its entry has no thread, and w leaves the retired list. */
void fd_closer_worker_ends(struct fd_closer_worker *w);

#endif /* COLOC_DAEMON_FD_CLOSER_INTERNAL_H */
