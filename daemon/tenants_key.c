// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tenant keys (tenants_key.h): owner and name in one string. The uid is
 * written in its one canonical form, so a tenant has one key however a
 * client spelled the uid; root's keys carry none, which keeps root's
 * tenants, the state files and cgroups they made before keys, as they were.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "coloc/protocol.h"
#include "tenants_key.h"

int tenants_key(char *key, uid_t owner, const char *name)
{
	int n = owner ? snprintf(key, COLOC_MAX_NAME, "%u:%s", (unsigned int)owner, name) :
			snprintf(key, COLOC_MAX_NAME, "%s", name);

	return n >= COLOC_MAX_NAME ? -ENAMETOOLONG : 0;
}

bool tenants_key_split(const char *key, uid_t *uid, const char **name)
{
	size_t digits = strspn(key, "0123456789");
	unsigned long long v = 0;

	*name = key;
	if (!digits || digits > 10 || key[digits] != ':' || (key[0] == '0' && digits > 1))
		return false;
	for (size_t i = 0; i < digits; i++)
		v = v * 10 + (unsigned long long)(key[i] - '0');
	if (v >= (uid_t)-1)
		return false;
	*uid = (uid_t)v;
	*name = key + digits + 1;
	return true;
}

const char *tenants_key_name(const char *key)
{
	const char *name;
	uid_t uid;

	tenants_key_split(key, &uid, &name);
	return name;
}

uid_t tenants_key_owner(const char *key)
{
	const char *name;
	uid_t uid = 0;

	tenants_key_split(key, &uid, &name);
	return uid;
}
