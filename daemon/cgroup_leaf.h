/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A cgroup v2 folder holding exactly one executor process, under its
 * tenant's (cgroup.h), so that colocd kills that process, and nothing
 * else, by writing "1" to the folder's cgroup.kill: no signal permission
 * (CAP_KILL) is needed for a process of another uid, only the right to
 * write colocd's own cgroup files. The leaf enables no controller: the
 * tenant's cpuset and memory limits above it still hold, and cgroup v2's
 * no-internal-processes rule is kept (the tenant's folder holds leaves
 * only). docs/security-sandbox.md, "How colocd kills an executor".
 */
#ifndef COLOC_DAEMON_CGROUP_LEAF_H
#define COLOC_DAEMON_CGROUP_LEAF_H

#include <limits.h>
#include <stdbool.h>
#include "error.h"

struct cgroup_leaf {
	char dir[PATH_MAX]; /* "" when there is none */
	int procs_fd; /* its cgroup.procs: the child writes "0" to join */
	int kill_fd; /* its cgroup.kill */
};

/* A leaf with nothing open, as cgroup_leaf_create fills it on failure. */
void cgroup_leaf_init(struct cgroup_leaf *l);
/*
 * A new folder exec-N under parent (a cgroup v2 folder of colocd's), with
 * its cgroup.procs and cgroup.kill open. 0 or -errno with err set (-ENOENT
 * for a kernel without cgroup.kill, before 5.14).
 */
int cgroup_leaf_create(const char *parent, struct cgroup_leaf *l, struct coloc_err *err);
/*
 * SIGKILL to every process in the leaf, through cgroup.kill. 0, or
 * -ENODEV when the leaf is gone already, or -errno.
 */
int cgroup_leaf_kill(const struct cgroup_leaf *l);
/*
 * Once its executor is reaped: kills what is left in it (a descendant that
 * outlived the executor: only without a pid namespace), closes its files
 * and removes the folder. 0 once it is gone (or there was none); -EBUSY
 * while a process is still in it, the leaf kept for a later call (or for
 * its tenant's removal, which sweeps leaves left).
 */
int cgroup_leaf_remove(struct cgroup_leaf *l);
bool cgroup_leaf_present(const struct cgroup_leaf *l);

#endif /* COLOC_DAEMON_CGROUP_LEAF_H */
