/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Opening a file only if it is this process's own: a regular file, not
 * reached through a symbolic link, owned by the effective uid, writable by
 * no group or other, with no other name. For a file someone else could
 * have put where a privileged process reads or writes (a partial profile,
 * a log in /tmp): the checks are on the open descriptor, so there is no
 * window between checking and opening.
 */
#ifndef COLOC_COMMON_FILE_OWN_H
#define COLOC_COMMON_FILE_OWN_H

#include <stddef.h>
#include <sys/types.h>

/*
 * open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode) then the checks above;
 * flags must not hold O_TRUNC (the caller truncates once it is checked).
 * The descriptor, or -errno with why (a phrase, e.g. "is owned by uid
 * 1001, not 0") filled in.
 */
int file_open_own(const char *path, int flags, mode_t mode, char *why, size_t len);
/* The same with path relative to dir_fd. */
int file_open_own_at(int dir_fd, const char *path, int flags, mode_t mode, char *why, size_t len);
/* The same checks on a descriptor already open: 0, or -errno with why filled in. */
int file_own_check(int fd, char *why, size_t len);
/*
 * file_open_own(path, O_RDONLY, 0, ...) where root's file passes too: for
 * what root writes and any user may read (a profile in the cache).
 */
int file_open_own_or_root(const char *path, char *why, size_t len);

#endif /* COLOC_COMMON_FILE_OWN_H */
