// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The tenant table. Slots are handed out round-robin, so a removed tenant's
 * slot is the last to be reused; the BPF maps and the view are keyed by
 * slot, so whoever reuses a slot also clears it there.
 */
#include <stdio.h>
#include <string.h>
#include "tenants.h"

bool tenants_valid_name(const char *name)
{
	size_t len = strlen(name);

	if (!len || len >= COLOC_MAX_NAME)
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
	       len;
}

struct tenant *tenants_find(struct tenant_table *t, const char *name)
{
	for (int i = 0; i < COLOC_MAX_TENANTS; i++)
		if (t->slots[i].used && !strcmp(t->slots[i].name, name))
			return &t->slots[i];
	return NULL;
}

struct tenant *tenants_create(struct tenant_table *t, const char *name)
{
	for (int k = 0; k < COLOC_MAX_TENANTS; k++) {
		int i = (t->next + k) % COLOC_MAX_TENANTS;
		struct tenant *tenant = &t->slots[i];

		if (tenant->used)
			continue;
		memset(tenant, 0, sizeof(*tenant));
		tenant->used = true;
		tenant->id = (__u32)i;
		snprintf(tenant->name, sizeof(tenant->name), "%s", name);
		t->next = (i + 1) % COLOC_MAX_TENANTS;
		return tenant;
	}
	return NULL;
}

struct tenant *tenants_owner_of_pid(struct tenant_table *t, __u32 pid)
{
	for (int i = 0; i < COLOC_MAX_TENANTS; i++)
		for (int k = 0; t->slots[i].used && k < t->slots[i].nr_pids; k++)
			if (t->slots[i].pids[k] == pid)
				return &t->slots[i];
	return NULL;
}

bool tenants_remove_pid(struct tenant *tenant, __u32 pid)
{
	for (int k = 0; k < tenant->nr_pids; k++) {
		if (tenant->pids[k] != pid)
			continue;
		tenant->pids[k] = tenant->pids[--tenant->nr_pids];
		return true;
	}
	return false;
}

void tenants_release(struct tenant *tenant)
{
	tenant->used = false;
}

bool tenants_add_pid(struct tenant *tenant, __u32 pid)
{
	for (int i = 0; i < tenant->nr_pids; i++)
		if (tenant->pids[i] == pid)
			return true;
	if (tenant->nr_pids >= TENANT_MAX_PIDS)
		return false;
	tenant->pids[tenant->nr_pids++] = pid;
	return true;
}
