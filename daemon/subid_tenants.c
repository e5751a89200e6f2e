// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * subid_tenants.h: after a reload, what uids now subordinate own goes as
 * `colocctl remove` and `tenant-remove` would take it: a serving tenant
 * drains and stops its executors and leaves --state, an attributed tenant
 * lets its processes go. A serving tenant's own attribution (its
 * executors, under its key and owner) goes with it, not here.
 */
#include <stdio.h>
#include "colocd.h"
#include "subid.h"
#include "subid_tenants.h"

/* A removal's line (ret 0) or why it failed, for the operator who reloaded. */
static int subid_removed(const char *key, int ret, const struct coloc_err *err)
{
	if (ret)
		fprintf(stderr, "colocd: SIGHUP: tenant %s of a subordinate uid not removed: %s\n",
			key, coloc_err_str(err));
	else
		printf("colocd: SIGHUP: tenant %s removed: its owner is a subordinate uid now\n", key);
	return !ret;
}

/* Serving tenants of subordinate owners removed; how many. */
static int subid_remove_serving(struct colocd *d)
{
	const char *names[COLOC_MAX_TENANTS];
	char keys[COLOC_MAX_TENANTS][SERVING_NAME_LEN];
	int n = d->serving ? serving_tenant_names(d->serving, names, COLOC_MAX_TENANTS) : 0,
	    nr = 0, removed = 0;

	/* copied first: a starting tenant's removal frees its entry at once */
	for (int i = 0; i < n && i < COLOC_MAX_TENANTS; i++) {
		struct serving_tenant_info info;

		if (!serving_tenant_info(d->serving, names[i], &info) && subid_owner(info.owner))
			snprintf(keys[nr++], sizeof(keys[0]), "%s", names[i]);
	}
	for (int i = 0; i < nr; i++) {
		struct coloc_err err = { 0 };

		if (!subid_removed(keys[i], serving_remove(d->serving, keys[i], &err), &err))
			continue;
		removed++;
		/* no longer admitted: a restart must not bring it back */
		coloc_err_clear(&err);
		if (colocd_spec_drop(d, keys[i], &err))
			fprintf(stderr, "colocd: %s\n", coloc_err_str(&err));
	}
	return removed;
}

/* Attributed tenants of subordinate owners, serving tenants' own left to them; how many. */
static int subid_remove_attributed(struct colocd *d)
{
	int removed = 0;

	for (int i = 0; i < COLOC_MAX_TENANTS; i++) {
		const struct tenant *t = &d->tenants.slots[i];
		struct serving_tenant_info info;
		struct coloc_err err = { 0 };
		char key[COLOC_MAX_NAME];

		if (!t->used || !subid_owner(t->owner) ||
		    (d->serving && !serving_tenant_info(d->serving, t->name, &info) &&
		     info.owner == t->owner))
			continue;
		snprintf(key, sizeof(key), "%s", t->name);
		removed += subid_removed(key, tenants_remove(&d->tenants, key, 0, &err), &err);
	}
	return removed;
}

int subid_tenants_remove(struct colocd *d)
{
	return subid_remove_serving(d) + subid_remove_attributed(d);
}
