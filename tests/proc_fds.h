/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What a process holds open, from /proc/PID/fd: the tests that count
 * colocd's descriptors of one file (a member's memfd, a query's input).
 */
#ifndef COLOC_TESTS_PROC_FDS_H
#define COLOC_TESTS_PROC_FDS_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/types.h>

/* pid's descriptors whose /proc/PID/fd link holds part (e.g. "memfd:NAME"); -1 when unread. */
static inline int proc_fds_to(pid_t pid, const char *part)
{
	char dir[64], path[320], link[PATH_MAX];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		n += strstr(link, part) != NULL;
	}
	closedir(d);
	return n;
}

#endif /* COLOC_TESTS_PROC_FDS_H */
