// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc_open_beneath() (include/coloc/client.h): a path opened below a
 * directory by openat2, so that what is checked is what is opened (no
 * check by path first, then an open a writer could race with a link).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include "coloc/client.h"

int coloc_open_beneath(int dirfd, const char *path, int flags, bool links)
{
	/* openat2 refuses O_PATH beside anything but O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC */
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NOCTTY)),
		.resolve =
			RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (links ? 0 : RESOLVE_NO_SYMLINKS),
	};
	long fd;

	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : (int)fd;
}
