/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What a process holds open, from /proc/PID/fd: the tests that count
 * colocd's descriptors of one file (a member's memfd, a query's input) or
 * weigh what it holds.
 */
#ifndef COLOC_TESTS_PROC_FDS_H
#define COLOC_TESTS_PROC_FDS_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/types.h>

/* One descriptor: its /proc/PID/fd/N path and where it links ("" when unread). */
typedef void (*proc_fd_fn)(const char *path, const char *link, void *ctx);

/* Calls fn (unless NULL: a count) for each of pid's descriptors; how many, -1 when unread. */
static inline int proc_fds_each(pid_t pid, proc_fd_fn fn, void *ctx)
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
		n++;
		if (!fn)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		link[len > 0 ? len : 0] = '\0';
		fn(path, link, ctx);
	}
	closedir(d);
	return n;
}

struct proc_fds_match {
	const char *part;
	int n;
};

static inline void proc_fds_count_match(const char *path, const char *link, void *ctx)
{
	struct proc_fds_match *m = ctx;

	(void)path;
	m->n += strstr(link, m->part) != NULL;
}

/* pid's descriptors whose /proc/PID/fd link holds part (e.g. "memfd:NAME"); -1 when unread. */
static inline int proc_fds_to(pid_t pid, const char *part)
{
	struct proc_fds_match m = { .part = part };

	return proc_fds_each(pid, proc_fds_count_match, &m) < 0 ? -1 : m.n;
}

#endif /* COLOC_TESTS_PROC_FDS_H */
