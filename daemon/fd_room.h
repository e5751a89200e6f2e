/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * How many more descriptors colocd may hold (fd_room.c): its soft
 * RLIMIT_NOFILE less those it holds, as the kernel counts them. A read
 * whose descriptors cannot all be installed has the rest released by the
 * kernel in recvmsg, on the caller, so a member's connection is read only
 * with room for a whole message (docs/design/fd-closer.md, "At the
 * descriptor limit"). For one thread (the loop): fd_room_unsized keeps
 * its last count.
 */
#ifndef COLOC_DAEMON_FD_ROOM_H
#define COLOC_DAEMON_FD_ROOM_H

#include <sys/resource.h>

/* below this much room the descriptors are counted, before Linux 6.2 */
#define FD_ROOM_EXACT_BELOW 4096

/*
 * Descriptors that can still be opened, at least; exact from Linux 6.2,
 * before that where fewer than FD_ROOM_EXACT_BELOW; 0 when the count
 * cannot be read.
 */
long fd_room(void);
/*
 * fd_room() as before Linux 6.2, where stat(2) gives /proc/self/fd no size
 * (for the tests on a later kernel): under limit, a lower bound from the
 * table's size while that leaves FD_ROOM_EXACT_BELOW, else the last
 * listing's count, less SCM_MAX_FD for each call since (down to the
 * table's bound), until the next listing is due.
 */
long fd_room_unsized(rlim_t limit);

#endif /* COLOC_DAEMON_FD_ROOM_H */
