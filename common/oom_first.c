// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* This process first for the OOM killer (oom_first.h). */
#define _GNU_SOURCE
#include "oom_first.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int oom_first_self(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, "1000", 4) != 4)
		ret = errno ? -errno : -EIO;
	close(fd);
	return ret;
}

void oom_first_if_root(const char *prog)
{
	int ret = geteuid() == 0 ? oom_first_self() : 0;

	if (ret)
		fprintf(stderr, "%s: cannot set its oom_score_adj to 1000: %s\n", prog,
			strerror(-ret));
}
