// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One executor's own cgroup v2 folder (cgroup_leaf.h): made before the
 * executor starts (the child joins it before exec), written "1" to kill
 * it, removed once the executor has been reaped. The parent is colocd's
 * own tenant folder; the leaf's name is colocd's count.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cgroup_leaf.h"

#define CGROUP_LEAF_TRIES 64 /* names taken (a leaf left by an earlier executor) skipped */

static unsigned int next_leaf;

void cgroup_leaf_init(struct cgroup_leaf *l)
{
	l->dir[0] = '\0';
	l->procs_fd = -1;
	l->kill_fd = -1;
}

bool cgroup_leaf_present(const struct cgroup_leaf *l)
{
	return l->dir[0] != '\0';
}

static int open_in(const struct cgroup_leaf *l, const char *file, struct coloc_err *err)
{
	char path[PATH_MAX + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", l->dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return coloc_err_set(err, -errno, "%s: %s%s", path, strerror(errno),
				     errno == ENOENT && !strcmp(file, "cgroup.kill") ?
					     " (cgroup.kill needs Linux 5.14)" :
					     "");
	return fd;
}

int cgroup_leaf_create(const char *parent, struct cgroup_leaf *l, struct coloc_err *err)
{
	int ret = -EEXIST;

	cgroup_leaf_init(l);
	for (int i = 0; i < CGROUP_LEAF_TRIES && ret == -EEXIST; i++) {
		snprintf(l->dir, sizeof(l->dir), "%.*s/exec-%u", PATH_MAX - 32, parent,
			 __atomic_fetch_add(&next_leaf, 1, __ATOMIC_RELAXED));
		ret = mkdir(l->dir, 0700) ? -errno : 0;
	}
	if (ret) {
		coloc_err_set(err, ret, "mkdir %s: %s", l->dir, strerror(-ret));
		l->dir[0] = '\0';
		return ret;
	}
	l->procs_fd = open_in(l, "cgroup.procs", err);
	if (l->procs_fd >= 0)
		l->kill_fd = open_in(l, "cgroup.kill", err);
	if (l->kill_fd >= 0)
		return 0;
	ret = l->procs_fd < 0 ? l->procs_fd : l->kill_fd;
	cgroup_leaf_remove(l);
	return ret;
}

int cgroup_leaf_kill(const struct cgroup_leaf *l)
{
	if (l->kill_fd < 0)
		return -EBADF;
	if (write(l->kill_fd, "1", 1) != 1)
		return -errno;
	return 0;
}

int cgroup_leaf_remove(struct cgroup_leaf *l)
{
	/* the executor is reaped: whatever is left is a descendant that outlived it */
	if (l->kill_fd >= 0)
		(void)cgroup_leaf_kill(l);
	if (l->procs_fd >= 0)
		close(l->procs_fd);
	if (l->kill_fd >= 0)
		close(l->kill_fd);
	l->procs_fd = l->kill_fd = -1;
	if (!l->dir[0])
		return 0;
	if (rmdir(l->dir) && errno != ENOENT)
		return -errno;
	l->dir[0] = '\0';
	return 0;
}
