/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * How many more descriptors colocd may hold (fd_room.c): its soft
 * RLIMIT_NOFILE less those it holds, as the kernel counts them. A read
 * whose descriptors cannot all be installed has the rest released by the
 * kernel in recvmsg, on the caller, so a member's connection is read only
 * with room for a whole message (docs/design/fd-closer.md, "At the
 * descriptor limit").
 */
#ifndef COLOC_DAEMON_FD_ROOM_H
#define COLOC_DAEMON_FD_ROOM_H

/* Descriptors that can still be opened; 0 when the count cannot be read. */
long fd_room(void);

#endif /* COLOC_DAEMON_FD_ROOM_H */
