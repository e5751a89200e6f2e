// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A temporary file beside the one it replaces (file_temp.h). */
#define _GNU_SOURCE
#include "file_temp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

int file_temp_beside(const char *path, char *tmp, size_t len)
{
	for (int tries = 0; tries < 64; tries++) {
		uint64_t r;
		int fd;

		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return errno ? -errno : -EIO;
		if (snprintf(tmp, len, "%s.tmp.%d.%012llx", path, (int)getpid(),
			     (unsigned long long)(r & 0xffffffffffffULL)) >= (int)len)
			return -ENAMETOOLONG;
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}
