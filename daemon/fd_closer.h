/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Closing a client's descriptors without blocking colocd (fd_closer.c).
 * close(2) can wait as long as the file's owner likes or free as much as
 * it holds: a TCP socket with SO_LINGER waits out the linger, a FUSE file
 * waits for its server's FLUSH answer, a memfd frees its pages, a listener
 * tears down its accept queue, an AF_UNIX socket releases the descriptors
 * in flight in it. The caller closes only what an allow-list knows to be
 * cheap, within a byte budget over time; every other descriptor is closed
 * on a thread of the uid that sent it, so a uid whose closes take long
 * stalls only its own closes. docs/design/fd-closer.md.
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
/* the most a uid may have waiting; past it a descriptor is kept open */
#define FD_CLOSER_QUEUE_MAX 4096
/* uids with closes of their own threads; more share the last one */
#define FD_CLOSER_UIDS 32
/* the most shmem one close on the caller may free (~1 ms on the 2-vCPU VM) */
#define FD_CLOSER_SHMEM_NOW_BYTES (16ull << 20)
/* what the caller's closes may free over time: at most the above at once */
#define FD_CLOSER_NOW_BYTES_PER_S (64ull << 20)
/* an idle closer thread waits this long for more, then ends */
#define FD_CLOSER_IDLE_MS 1000u

/*
 * Closes fd, which came from uid (or is a duplicate of one that did): at
 * once when fd_closer_close_now_is_safe() and the budget allows, else on
 * uid's closer thread. fd < 0 is ignored. Never blocks on the file; on out
 * of memory or a full queue the descriptor is kept open (a leak, never a
 * stall).
 */
void fd_closer_close(int fd, uid_t uid);
/*
 * Whether fd is on the allow-list of closes the caller may do: a memfd
 * sealed against growing with little to free, or a UDP socket. Exposed
 * for tests.
 */
bool fd_closer_close_now_is_safe(int fd);
/* Whether uid's closes hang (see FD_CLOSER_STUCK_MS). */
bool fd_closer_stuck(uid_t uid);
/* Closes waiting or running for uid (for tests and the log). */
int fd_closer_pending(uid_t uid);

#endif /* COLOC_DAEMON_FD_CLOSER_H */
