/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A tenant's key: the one string colocd knows a tenant by (both tables,
 * the sandbox's cgroups, the state file, the exec log), made of its owner
 * and the name its owner gave it: "NAME" for root's, "UID:NAME" for a
 * member's. Each uid's names are its own namespace, so two members' tenants
 * of one name never meet anywhere (docs/design/tenant-names.md). The key
 * fits the COLOC_MAX_NAME bytes every name buffer holds.
 */
#ifndef COLOC_DAEMON_TENANTS_KEY_H
#define COLOC_DAEMON_TENANTS_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The key of owner's tenant name into key (COLOC_MAX_NAME bytes); -ENAMETOOLONG past them. */
int tenants_key(char *key, uid_t owner, const char *name);
/*
 * A key, or a name as a client wrote it, split: *uid from a leading
 * "UID:" (digits, no leading zero, below (uid_t)-1), *name what follows;
 * false without a valid "UID:" (*name the whole string, *uid untouched).
 */
bool tenants_key_split(const char *key, uid_t *uid, const char **name);
/* The name part of a key: what its owner called the tenant. */
const char *tenants_key_name(const char *key);
/* The owner a key names (0 for a key without "UID:"). */
uid_t tenants_key_owner(const char *key);

#endif /* COLOC_DAEMON_TENANTS_KEY_H */
