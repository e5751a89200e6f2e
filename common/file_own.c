// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Opening a file only if it is this process's own (file_own.h). */
#define _GNU_SOURCE
#include "file_own.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((format(printf, 5, 6))) static int refuse(int fd, int ret, char *why, size_t len,
							const char *fmt, ...)
{
	va_list ap;

	if (fd >= 0)
		close(fd);
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return ret;
}

/* file_own_check's checks; root_too: root's file passes as this process's own does. */
static int own_check(int fd, bool root_too, char *why, size_t len)
{
	struct stat st;

	if (fstat(fd, &st))
		return refuse(-1, -errno, why, len, "cannot be examined");
	if (!S_ISREG(st.st_mode))
		return refuse(-1, -EPERM, why, len, "is not a regular file");
	if (st.st_uid != geteuid() && (!root_too || st.st_uid))
		return refuse(-1, -EPERM, why, len, "is owned by uid %lu, not %lu%s",
			      (unsigned long)st.st_uid, (unsigned long)geteuid(),
			      root_too && geteuid() ? " nor 0" : "");
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return refuse(-1, -EPERM, why, len,
			      "is writable by its group or others (mode %04lo)",
			      (unsigned long)(st.st_mode & 07777));
	if (st.st_nlink != 1)
		return refuse(-1, -EPERM, why, len, "has %lu names (hard links), not one",
			      (unsigned long)st.st_nlink);
	return 0;
}

int file_own_check(int fd, char *why, size_t len)
{
	return own_check(fd, false, why, len);
}

static int open_checked(int dir_fd, const char *path, int flags, mode_t mode, bool root_too,
			char *why, size_t len)
{
	int fd, ret;

	if (flags & O_TRUNC)
		return refuse(-1, -EINVAL, why, len, "was opened with O_TRUNC (a bug)");
	/* O_NONBLOCK: a FIFO planted at the name must not block the open */
	fd = openat(dir_fd, path, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, mode);
	if (fd < 0) {
		int e = errno;

		if (e == ELOOP)
			snprintf(why, len, "is a symbolic link");
		else
			snprintf(why, len, "cannot be opened (%s)", strerror(e));
		return -e;
	}
	ret = own_check(fd, root_too, why, len);
	if (ret) {
		close(fd);
		return ret;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
		return refuse(fd, -errno, why, len, "cannot be made blocking");
	return fd;
}

int file_open_own(const char *path, int flags, mode_t mode, char *why, size_t len)
{
	return open_checked(AT_FDCWD, path, flags, mode, false, why, len);
}

int file_open_own_at(int dir_fd, const char *path, int flags, mode_t mode, char *why, size_t len)
{
	return open_checked(dir_fd, path, flags, mode, false, why, len);
}

int file_open_own_or_root(const char *path, char *why, size_t len)
{
	return open_checked(AT_FDCWD, path, O_RDONLY, 0, true, why, len);
}
