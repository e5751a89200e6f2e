// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A tenant's name as a client wrote it, turned into the tenant's key
 * (tenants_key.h) before any command sees it (control.c's dispatch and
 * payload check). A member's NAME is its own tenant NAME: it reaches no
 * other uid's tenant by any name, so a name another member took first
 * keeps nothing from it. Root names any tenant as UID:NAME; root's bare
 * NAME is root's own tenant, else the one tenant of that name, else an
 * error that names the owners; in a command that may make a tenant
 * (tenant-add) it is root's own only (docs/design/tenant-names.md).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "control_internal.h"
#include "tenants_key.h"

#define CONTROL_OWNERS_SHOWN 8 /* in the error: a message, not a listing */

/* The tenants (of one table) whose name part is a given name: how many, whose. */
struct control_named {
	int n;
	bool roots; /* one of them is root's */
	uid_t owners[COLOC_MAX_TENANTS];
};

static void control_named_find(struct colocd *d, enum control_names use, const char *name,
			       struct control_named *m)
{
	const struct tenant *slots = d->tenants.slots;

	if (use == CONTROL_NAMES_ATTRIBUTED || use == CONTROL_NAMES_ATTRIBUTED_OR_NEW) {
		for (int i = 0; i < COLOC_MAX_TENANTS; i++) {
			if (!slots[i].used || strcmp(tenants_key_name(slots[i].name), name))
				continue;
			m->owners[m->n++] = tenants_key_owner(slots[i].name);
		}
	} else {
		m->n = serving_tenants_named(d->serving, name, m->owners, COLOC_MAX_TENANTS);
	}
	for (int i = 0; i < m->n && i < COLOC_MAX_TENANTS; i++)
		m->roots |= !m->owners[i];
}

/* Whose tenant root's bare name means: root's own, else the only one of that name. */
static int control_root_means(struct colocd *d, enum control_names use, const char *name,
			      uid_t *owner, struct coloc_err *err)
{
	struct control_named m = { 0 };
	char owners[CONTROL_OWNERS_SHOWN * 12] = "";
	size_t at = 0;

	control_named_find(d, use, name, &m);
	*owner = m.n == 1 ? m.owners[0] : 0;
	if (m.roots || m.n <= 1)
		return 0;
	for (int i = 0; i < m.n && i < CONTROL_OWNERS_SHOWN; i++)
		at += (size_t)snprintf(owners + at, sizeof(owners) - at, "%s%u", i ? ", " : "",
				       (unsigned int)m.owners[i]);
	return coloc_err_set(err, -ENOTUNIQ,
			     "%d tenants are named '%s' (owners %s%s): name one as UID:NAME, "
			     "e.g. '%u:%s'",
			     m.n, name, owners, m.n > CONTROL_OWNERS_SHOWN ? ", ..." : "",
			     (unsigned int)m.owners[0], name);
}

int control_resolve_name(struct colocd *d, struct json_object *req, const char *member,
			 enum control_names use, uid_t uid, struct coloc_err *err)
{
	const char *written = control_str(req, member), *name;
	char key[COLOC_MAX_NAME];
	uid_t owner = uid, named = 0;
	bool qualified;
	int ret;

	if (use == CONTROL_NAMES_NONE || !written)
		return 0;
	qualified = tenants_key_split(written, &named, &name);
	/* no tenant's key has a bad name part: the command refuses it as it is */
	if (!tenants_valid_name(name))
		return 0;
	if (qualified && uid && named != uid)
		return coloc_err_set(err, -EPERM,
				     "'%s' names uid %u's tenant: a member names its own "
				     "tenants only, as NAME",
				     written, (unsigned int)named);
	if (qualified)
		owner = named;
	else if (!uid && use != CONTROL_NAMES_SERVING_NEW &&
		 use != CONTROL_NAMES_ATTRIBUTED_OR_NEW &&
		 (ret = control_root_means(d, use, name, &owner, err)))
		return ret;
	if (tenants_key(key, owner, name))
		return coloc_err_set(err, -ENAMETOOLONG,
				     "tenant name '%s' is too long: uid %u's names are at most %d "
				     "characters (colocd keys them as %u:NAME, %d at most)",
				     name, (unsigned int)owner,
				     COLOC_MAX_NAME - 1 - snprintf(NULL, 0, "%u:", (unsigned int)owner),
				     (unsigned int)owner, COLOC_MAX_NAME - 1);
	/* root makes tenants of its own: UID:NAME reaches only one that is there */
	if (owner != uid &&
	    (use == CONTROL_NAMES_SERVING_NEW ||
	     (use == CONTROL_NAMES_ATTRIBUTED_OR_NEW && !tenants_find(&d->tenants, key))))
		return coloc_err_set(err, -EPERM,
				     "root makes tenants of its own only: name a new one NAME, "
				     "not UID:NAME ('%s')",
				     written);
	json_object_object_add(req, member, json_object_new_string(key));
	return 0;
}
