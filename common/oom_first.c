// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* This process's place in the OOM killer's order (oom_first.h). */
#define _GNU_SOURCE
#include "oom_first.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int oom_score_self(int score)
{
	char text[8], *p = text + sizeof(text);
	unsigned int left;
	ssize_t len;
	int fd, ret = 0;

	if (score < -1000 || score > 1000)
		return -EINVAL;
	left = (unsigned int)(score < 0 ? -score : score);
	/* by hand, not snprintf: the caller may be a child of clone3 before exec */
	do
		*--p = (char)('0' + left % 10);
	while (left /= 10);
	if (score < 0)
		*--p = '-';
	len = text + sizeof(text) - p;
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, p, (size_t)len) != len)
		ret = errno ? -errno : -EIO;
	close(fd);
	return ret;
}

void oom_first_if_root(const char *prog)
{
	int ret = geteuid() == 0 ? oom_score_self(OOM_SCORE_FIRST) : 0;

	if (ret)
		fprintf(stderr, "%s: cannot set its oom_score_adj to %d: %s\n", prog,
			OOM_SCORE_FIRST, strerror(-ret));
}
