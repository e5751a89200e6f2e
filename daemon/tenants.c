// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The tenant table. Slots are reused after a tenant is removed; the BPF maps
 * are keyed by slot, so whoever releases a slot also clears it in the sensor.
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
	for (int i = 0; i < COLOC_MAX_TENANTS; i++) {
		struct tenant *tenant = &t->slots[i];

		if (tenant->used)
			continue;
		memset(tenant, 0, sizeof(*tenant));
		tenant->used = true;
		tenant->id = (__u32)i;
		snprintf(tenant->name, sizeof(tenant->name), "%s", name);
		return tenant;
	}
	return NULL;
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
