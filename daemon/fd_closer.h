/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Closing a client's descriptors without blocking colocd (fd_closer.c).
 * close(2) can wait as long as the file's owner likes or cost as much as
 * what hangs on the file: a socket with SO_LINGER waits out the linger, a
 * FUSE file waits for its server's FLUSH answer, a memfd frees its pages,
 * a listener tears down its accept queue, an AF_UNIX socket releases the
 * descriptors in flight in it, the last close of any file removes every
 * epoll item watching it, every close walks the file's POSIX locks. No
 * type or size tells the caller which, so it closes none: every client
 * descriptor goes to a thread of the uid that sent it, so a uid whose
 * closes take long stalls only its own closes, at a low priority, so that
 * what they cost is the machine's idle time before anyone's.
 * docs/design/fd-closer.md.
 */
#ifndef COLOC_DAEMON_FD_CLOSER_H
#define COLOC_DAEMON_FD_CLOSER_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * A close is "stuck" once it has run this long: the uid's connections are
 * dropped and its new ones refused until its closes are done. A uid with
 * this many closes waiting is "backlogged": its connections are not read
 * until its thread has caught up (looked at again every
 * FD_CLOSER_RECHECK_MS), as a busy host's nice-19 thread falls behind
 * without hanging. What it can still add either way is bounded:
 * docs/design/fd-closer.md, "Bounds".
 */
#define FD_CLOSER_STUCK_MS 500u
#define FD_CLOSER_STUCK_QUEUE 256
#define FD_CLOSER_RECHECK_MS 10u
/*
 * The table: root's entry, FD_CLOSER_UIDS - 2 members' (a uid's while it
 * has a close waiting or running), and the overflow, shared by the uids
 * that find every member entry taken. A hung entry's thread leaves the
 * table with its uid's closes when another uid needs the entry; at most
 * FD_CLOSER_RETIRED_MAX such threads at once (docs/design/fd-closer.md,
 * "The table").
 */
#define FD_CLOSER_UIDS 256
#define FD_CLOSER_RETIRED_MAX 256
/*
 * A thread looks at its queue this often, or once it holds this many: a
 * query's input memfd costs no wake-up of its own.
 */
#define FD_CLOSER_DRAIN_MS 100u
#define FD_CLOSER_WAKE_COUNT 32
/* an idle closer thread ends after this long */
#define FD_CLOSER_IDLE_MS 1000u
/* the closer threads' nice value (not SCHED_IDLE: docs/design/fd-closer.md) */
#define FD_CLOSER_NICE 19
/* descriptors below this are queued without allocating (the kernel's default nr_open) */
#define FD_CLOSER_MAX_FDS (1 << 20)

/*
 * Closes fd, which came from uid (or is a duplicate of one that did), on
 * uid's closer thread; fd < 0 is ignored. Never closes or blocks on the
 * file here, and never fails: the queue allocates nothing, and a thread
 * that cannot start (no memory) is started by a later call, any uid's.
 */
void fd_closer_close(int fd, uid_t uid);
/*
 * Holds the process's RLIMIT_NOFILE under FD_CLOSER_MAX_FDS, so that every
 * descriptor it can hold is one fd_closer_close() can queue. Call it at
 * start-up, before raising the soft limit.
 */
void fd_closer_limit_nofile(void);
/*
 * Closes one of colocd's own connections, an AF_UNIX stream socket uid is
 * the peer of (accepted, maybe never read): shut down both ways, so that
 * nothing more arrives in it, then at once when no descriptor is in flight
 * in its queue (the kernel's count: /proc/self/fdinfo's scm_fds), else as
 * fd_closer_close(). fd_closer_conn.c.
 */
void fd_closer_close_conn(int fd, uid_t uid);
enum fd_closer_state {
	FD_CLOSER_OK,
	FD_CLOSER_BEHIND, /* FD_CLOSER_STUCK_QUEUE closes or more waiting, none hung */
	FD_CLOSER_HUNG, /* a close of uid's has run past FD_CLOSER_STUCK_MS */
};
/*
 * Where uid's entry was at the last look, kept by a caller that asks about
 * one uid often (a connection): zeroed at first.
 */
struct fd_closer_hint {
	int slot;
	unsigned int gen;
};
/*
 * How uid's closes stand. With a hint the look costs a lock and a compare
 * while the table has not changed hands; NULL: a scan of the table.
 */
enum fd_closer_state fd_closer_state(uid_t uid, struct fd_closer_hint *hint);
/* uid's closes waiting or running, wherever they are (for tests and the log). */
int fd_closer_pending(uid_t uid);

#endif /* COLOC_DAEMON_FD_CLOSER_H */
