/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Closing a client's descriptors without blocking colocd (fd_closer.c).
 * close(2) can wait as long as the file's owner likes: the last reference
 * to a TCP socket with SO_LINGER waits out the linger, a FUSE file waits
 * for its server's FLUSH answer, the last reference to a big memfd frees
 * its pages. Only a small shmem file sealed against growing is closed by
 * the caller; every other descriptor is closed on a thread of the uid that
 * sent it, so a uid whose closes take long stalls only its own closes.
 * docs/security-submit.md, "Descriptors".
 */
#ifndef COLOC_DAEMON_FD_CLOSER_H
#define COLOC_DAEMON_FD_CLOSER_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * A close is "stuck" once it has run this long, or once a uid has this
 * many waiting: the uid's connections are dropped and no more of its
 * descriptors are taken until its closes are done.
 */
#define FD_CLOSER_STUCK_MS 500u
#define FD_CLOSER_STUCK_QUEUE 256
/* uids with closes of their own threads; more share the last one */
#define FD_CLOSER_UIDS 32
/* the largest shmem file closed by the caller (~1 ms of freeing at most) */
#define FD_CLOSER_SHMEM_NOW_BYTES (16ull << 20)

/*
 * Closes fd, which came from uid (or is a duplicate of one that did):
 * at once when fd_closer_close_now_is_safe(), else on uid's closer thread. fd < 0
 * is ignored. Never blocks on the file; on out of memory the descriptor
 * is kept open (a leak, never a stall).
 */
void fd_closer_close(int fd, uid_t uid);
/*
 * Whether fd may be closed by the caller: a small shmem file sealed against
 * growing, or a socket made so that its close cannot wait (it may shut fd
 * down or set its linger to do so). Exposed for tests.
 */
bool fd_closer_close_now_is_safe(int fd);
/* Whether uid's closes hang (see FD_CLOSER_STUCK_MS). */
bool fd_closer_stuck(uid_t uid);
/* Closes waiting or running for uid (for tests and the log). */
int fd_closer_pending(uid_t uid);

#endif /* COLOC_DAEMON_FD_CLOSER_H */
