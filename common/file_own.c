// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Opening a file only if it is this process's own (file_own.h). */
#define _GNU_SOURCE
#include "file_own.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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

int file_own_check(int fd, char *why, size_t len)
{
	struct stat st;

	if (fstat(fd, &st))
		return refuse(-1, -errno, why, len, "cannot be examined");
	if (!S_ISREG(st.st_mode))
		return refuse(-1, -EPERM, why, len, "is not a regular file");
	if (st.st_uid != geteuid())
		return refuse(-1, -EPERM, why, len, "is owned by uid %lu, not %lu",
			      (unsigned long)st.st_uid, (unsigned long)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return refuse(-1, -EPERM, why, len,
			      "is writable by its group or others (mode %04lo)",
			      (unsigned long)(st.st_mode & 07777));
	if (st.st_nlink != 1)
		return refuse(-1, -EPERM, why, len, "has %lu names (hard links), not one",
			      (unsigned long)st.st_nlink);
	return 0;
}

int file_open_own(const char *path, int flags, mode_t mode, char *why, size_t len)
{
	return file_open_own_at(AT_FDCWD, path, flags, mode, why, len);
}

int file_open_own_at(int dir_fd, const char *path, int flags, mode_t mode, char *why, size_t len)
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
	ret = file_own_check(fd, why, len);
	if (ret) {
		close(fd);
		return ret;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
		return refuse(fd, -errno, why, len, "cannot be made blocking");
	return fd;
}
