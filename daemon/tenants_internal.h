/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What tenants.c (the table and its changes) takes from tenants_pid.c and
 * tenants_cgroup.c (a request's pids and cgroup checked). Nothing outside
 * them includes it; the rest of colocd sees tenants.h.
 */
#ifndef COLOC_DAEMON_TENANTS_INTERNAL_H
#define COLOC_DAEMON_TENANTS_INTERNAL_H

#include "tenants.h"

/*
 * pid (request item i of tenant name, caller uid) checked and held with a
 * pidfd into *pidfd; 0 or -errno with err filled.
 */
int tenants_check_pid(struct tenant_table *t, const char *name, uid_t uid, size_t i,
		      __s64 pid, int *pidfd, struct coloc_err *err);
/*
 * A cgroup v2 path below TENANTS_CGROUP_ROOT resolved beneath the cgroup
 * root: its id, owner and resolved path; 0 or -errno with err filled.
 */
int tenants_cgroup_id(const char *path, char *resolved, __u64 *id, uid_t *owner,
		      struct coloc_err *err);

#endif /* COLOC_DAEMON_TENANTS_INTERNAL_H */
