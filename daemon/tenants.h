/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's tenant table: names, the pids and cgroup attributed to each, and
 * the slot (0..COLOC_MAX_TENANTS-1) the BPF side knows them by.
 */
#ifndef COLOC_DAEMON_TENANTS_H
#define COLOC_DAEMON_TENANTS_H

#include <limits.h>
#include <stdbool.h>
#include <linux/types.h>
#include "coloc/sensor.h"
#include "coloc/protocol.h"

#define TENANT_MAX_PIDS 256

struct tenant {
	bool used;
	__u32 id;
	char name[COLOC_MAX_NAME];
	int nr_pids;
	__u32 pids[TENANT_MAX_PIDS];
	char cgroup[PATH_MAX];
	__u64 cgroup_id;
};

struct tenant_table {
	struct tenant slots[COLOC_MAX_TENANTS];
	int next; /* where the search for a free slot starts: slots are reused last */
};

bool tenants_valid_name(const char *name);
struct tenant *tenants_find(struct tenant_table *t, const char *name);
/* A new tenant in a free slot, or NULL when all are taken. */
struct tenant *tenants_create(struct tenant_table *t, const char *name);
void tenants_release(struct tenant *tenant);
/* The tenant holding pid, or NULL. */
struct tenant *tenants_owner_of_pid(struct tenant_table *t, __u32 pid);
/* Forgets pid; true if the tenant had it. */
bool tenants_remove_pid(struct tenant *tenant, __u32 pid);
/* Remembers pid; false when the tenant already holds TENANT_MAX_PIDS. */
bool tenants_add_pid(struct tenant *tenant, __u32 pid);

#endif /* COLOC_DAEMON_TENANTS_H */
