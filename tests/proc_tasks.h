/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The threads of a process, from /proc/PID/task: the tests that pin each
 * one, check each one's affinity or credentials, or count them (as
 * proc_fds.h walks a process's descriptors).
 */
#ifndef COLOC_TESTS_PROC_TASKS_H
#define COLOC_TESTS_PROC_TASKS_H

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* One thread, tid, of process pid. */
typedef void (*tu_task_fn)(pid_t pid, pid_t tid, void *ctx);

/*
 * Calls fn (unless NULL: a count) for each of pid's threads; how many there
 * were, -1 when unread. A thread may end or start during the walk.
 */
static inline int tu_tasks_each(pid_t pid, tu_task_fn fn, void *ctx)
{
	char dir[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (fn)
			fn(pid, (pid_t)atoi(e->d_name), ctx);
		n++;
	}
	closedir(d);
	return n;
}

struct tu_tasks_pin_ctx {
	const cpu_set_t *set;
	int ret;
};

static inline void tu_task_pin(pid_t pid, pid_t tid, void *ctx)
{
	struct tu_tasks_pin_ctx *p = ctx;

	(void)pid;
	if (sched_setaffinity(tid, sizeof(*p->set), p->set))
		p->ret = -errno;
}

/* Pins every thread of pid on the CPUs of set (callers define _GNU_SOURCE). 0 or -errno. */
static inline int tu_tasks_pin(pid_t pid, const cpu_set_t *set)
{
	struct tu_tasks_pin_ctx p = { .set = set };

	if (tu_tasks_each(pid, tu_task_pin, &p) < 0)
		return -ESRCH;
	return p.ret;
}

#endif /* COLOC_TESTS_PROC_TASKS_H */
