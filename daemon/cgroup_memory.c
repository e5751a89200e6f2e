// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The tenants' memory controller (cgroup.h): each tenant's memory folder
 * sits in uid-U, one folder per user U who owns tenants, whose limit
 * (colocd --max-executor-mib-per-uid) bounds the executors of all U's
 * tenants together, as each tenant's own limit (--executor-memory) bounds
 * its executors; and what the kernel counted there: OOM kills, limits hit.
 * docs/security-owners.md, "Executors' memory".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cgroup.h"

int cgroup_memory_limit(const struct cgroup_root *r, const char *dir, uint64_t max,
			struct coloc_err *err)
{
	char val[32];

	if (!max)
		return 0;
	snprintf(val, sizeof(val), "%" PRIu64, max);
	return cgroup_write_file(dir, r->mode == CGROUP_V2 ? "memory.max" : "memory.limit_in_bytes",
				 val, err);
}

/*
 * v2: the owner folder hands on what its tenants' folders use (cpuset,
 * memory, and cpu where colocd-PID has it); v1: its limit must count its
 * children's pages (use_hierarchy, always 1 since Linux 6.2, set where 0).
 */
static int owner_controllers(const struct cgroup_root *r, const char *dir, struct coloc_err *err)
{
	char val[16];
	int ret;

	if (r->mode == CGROUP_V2) {
		ret = cgroup_write_file(dir, "cgroup.subtree_control", "+cpuset +memory", err);
		if (!ret && r->cpu_hier >= 0)
			ret = cgroup_write_file(dir, "cgroup.subtree_control", "+cpu", err);
		return ret;
	}
	ret = cgroup_read_file(dir, "memory.use_hierarchy", val, sizeof(val));
	if (ret)
		return coloc_err_set(err, ret, "%s/memory.use_hierarchy: %s", dir, strerror(-ret));
	return strcmp(val, "0") ? 0 : cgroup_write_file(dir, "memory.use_hierarchy", "1", err);
}

int cgroup_memory_owner_open(const struct cgroup_root *r, const char *parent,
			     const struct cgroup_memory *mem, struct cgroup_tenant *t,
			     struct coloc_err *err)
{
	int ret;

	snprintf(t->owner_dir, sizeof(t->owner_dir), "%.*s/uid-%u", PATH_MAX - 32, parent,
		 mem->owner);
	if (mkdir(t->owner_dir, 0755) && errno != EEXIST)
		ret = coloc_err_set(err, -errno, "mkdir %s: %s", t->owner_dir, strerror(errno));
	else
		ret = owner_controllers(r, t->owner_dir, err) ?:
			      cgroup_memory_limit(r, t->owner_dir, mem->owner_max, err);
	if (ret)
		cgroup_memory_owner_close(t);
	return ret;
}

void cgroup_memory_owner_close(struct cgroup_tenant *t)
{
	/* another tenant of the owner's still in it (EBUSY): it goes with the last */
	if (t->owner_dir[0])
		rmdir(t->owner_dir);
	t->owner_dir[0] = '\0';
}

/* The number after "key " on a line of text, or 0. */
static uint64_t field(const char *text, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = text; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	return 0;
}

int cgroup_tenant_memory_events(const struct cgroup_tenant *t, struct cgroup_memory_events *ev)
{
	char text[1024], count[32];
	const char *dir;
	int ret;

	memset(ev, 0, sizeof(*ev));
	if (t->mem_hier < 0 || t->mem_hier >= t->nr)
		return -ENOENT;
	dir = t->dir[t->mem_hier];
	/* v2: its own limit's "max" (its leaves have none), the owner's own (.local) */
	if (!cgroup_read_file(dir, "memory.events", text, sizeof(text))) {
		ev->oom_kills = field(text, "oom_kill");
		ev->tenant_max = field(text, "max");
		if (t->owner_dir[0] &&
		    !cgroup_read_file(t->owner_dir, "memory.events.local", text, sizeof(text)))
			ev->owner_max = field(text, "max");
		return 0;
	}
	/* v1: the kill counted where the process was, failcnt where the limit was hit */
	ret = cgroup_read_file(dir, "memory.oom_control", text, sizeof(text));
	if (ret)
		return ret;
	ev->oom_kills = field(text, "oom_kill");
	if (!cgroup_read_file(dir, "memory.failcnt", count, sizeof(count)))
		ev->tenant_max = strtoull(count, NULL, 10);
	if (t->owner_dir[0] &&
	    !cgroup_read_file(t->owner_dir, "memory.failcnt", count, sizeof(count)))
		ev->owner_max = strtoull(count, NULL, 10);
	return 0;
}
