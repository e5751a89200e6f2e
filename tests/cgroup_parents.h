/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * For the tests that make a colocd's cgroup root (cgroup.h): the folders
 * named base that hold r's colocd-PID folders, one per hierarchy and the
 * kill folder's, so that a test can look for what is left in them.
 */
#ifndef COLOC_TESTS_CGROUP_PARENTS_H
#define COLOC_TESTS_CGROUP_PARENTS_H

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "cgroup.h"

/* Their number; parents[i] each. */
static inline int cgroup_root_parents(const struct cgroup_root *r, char parents[][PATH_MAX])
{
	const char *dirs[CGROUP_MAX_HIER + 1];
	int n = 0;

	for (int i = 0; i < r->nr; i++)
		dirs[n++] = r->dir[i];
	if (r->kill_dir[0])
		dirs[n++] = r->kill_dir;
	for (int i = 0; i < n; i++)
		snprintf(parents[i], PATH_MAX, "%.*s", (int)(strrchr(dirs[i], '/') - dirs[i]),
			 dirs[i]);
	return n;
}

#endif /* COLOC_TESTS_CGROUP_PARENTS_H */
