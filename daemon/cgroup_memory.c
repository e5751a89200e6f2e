// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The tenants' memory controller (cgroup.h): each tenant's memory folder
 * sits in uid-U, one folder per user U who owns tenants, whose limit
 * (colocd --max-executor-mib-per-uid) bounds the executors of all U's
 * tenants together, as each tenant's own limit (--executor-memory) bounds
 * its executors, members/'s (three quarters of --max-executor-mib) every
 * member's uid-U, so that the last quarter is root's, and colocd-PID's
 * (--max-executor-mib) all of them; and what the kernel counted there:
 * OOM kills, limits hit. docs/security-owners.md, "Executors' memory".
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

/* colocd-PID in the memory controller's hierarchy (v2: the one; v1: memory, the second). */
static const char *memory_root(const struct cgroup_root *r)
{
	return r->dir[r->mode == CGROUP_V2 ? 0 : 1];
}

/* v1: a limit counts its children's pages only with use_hierarchy (always 1 since Linux 6.2). */
static int count_children(const char *dir, struct coloc_err *err)
{
	char val[16];
	int ret = cgroup_read_file(dir, "memory.use_hierarchy", val, sizeof(val));

	if (ret)
		return coloc_err_set(err, ret, "%s/memory.use_hierarchy: %s", dir, strerror(-ret));
	return strcmp(val, "0") ? 0 : cgroup_write_file(dir, "memory.use_hierarchy", "1", err);
}

/*
 * v2: the owner folder hands on what its tenants' folders use (cpuset,
 * memory, and cpu where colocd-PID has it); v1: its limit must count its
 * children's pages.
 */
static int owner_controllers(const struct cgroup_root *r, const char *dir, struct coloc_err *err)
{
	int ret;

	if (r->mode == CGROUP_V2) {
		ret = cgroup_write_file(dir, "cgroup.subtree_control", "+cpuset +memory", err);
		if (!ret && r->cpu_hier >= 0)
			ret = cgroup_write_file(dir, "cgroup.subtree_control", "+cpu", err);
		return ret;
	}
	return count_children(dir, err);
}

int cgroup_memory_root_limit(const struct cgroup_root *r, uint64_t max, struct coloc_err *err)
{
	if (r->mode == CGROUP_NONE || (r->mode == CGROUP_V1 && r->nr < 2))
		return coloc_err_set(err, -ENOENT, "no memory controller");
	return (r->mode == CGROUP_V1 ? count_children(memory_root(r), err) : 0) ?:
		       cgroup_memory_limit(r, memory_root(r), max, err);
}

/* dir made (or there), its children's controllers handed on, its limit written. */
static int bounding_folder(const struct cgroup_root *r, const char *dir, uint64_t max,
			   struct coloc_err *err)
{
	return cgroup_private_dir(dir, err) ?: owner_controllers(r, dir, err) ?:
		       cgroup_memory_limit(r, dir, max, err);
}

int cgroup_memory_owner_open(const struct cgroup_root *r, const char *parent,
			     const struct cgroup_memory *mem, struct cgroup_tenant *t,
			     struct coloc_err *err)
{
	int ret;

	t->members_dir[0] = '\0';
	if (mem->owner && mem->members_max) {
		snprintf(t->members_dir, sizeof(t->members_dir), "%.*s/members", PATH_MAX - 64,
			 parent);
		ret = bounding_folder(r, t->members_dir, mem->members_max, err);
		if (ret)
			goto fail;
		parent = t->members_dir;
	}
	snprintf(t->owner_dir, sizeof(t->owner_dir), "%.*s/uid-%u", PATH_MAX - 32, parent,
		 mem->owner);
	ret = bounding_folder(r, t->owner_dir, mem->owner_max, err);
	if (!ret)
		return 0;
fail:
	cgroup_memory_owner_close(t);
	return ret;
}

void cgroup_memory_owner_close(struct cgroup_tenant *t)
{
	/* another tenant of the owner's still in it (EBUSY): it goes with the last */
	if (t->owner_dir[0])
		rmdir(t->owner_dir);
	/* likewise members/ with the last member's uid-U */
	if (t->members_dir[0])
		rmdir(t->members_dir);
	t->owner_dir[0] = t->members_dir[0] = '\0';
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

/* Times dir's own limit was hit (v2 memory.events.local "max", v1 memory.failcnt); 0 unread. */
static uint64_t limit_hits(const struct cgroup_root *r, const char *dir)
{
	bool v2 = r->mode == CGROUP_V2;
	char text[1024];

	if (!dir[0] || cgroup_read_file(dir, v2 ? "memory.events.local" : "memory.failcnt", text,
					sizeof(text)))
		return 0;
	return v2 ? field(text, "max") : strtoull(text, NULL, 10);
}

int cgroup_tenant_memory_events(const struct cgroup_root *r, const struct cgroup_tenant *t,
				struct cgroup_memory_events *ev)
{
	char text[1024];
	const char *dir;
	int ret;

	memset(ev, 0, sizeof(*ev));
	if (t->mem_hier < 0 || t->mem_hier >= t->nr)
		return -ENOENT;
	dir = t->dir[t->mem_hier];
	/* the kill counted where the process was: v2 in a leaf below, which memory.events sums */
	ret = cgroup_read_file(dir, r->mode == CGROUP_V2 ? "memory.events" : "memory.oom_control",
			       text, sizeof(text));
	if (ret)
		return ret;
	ev->oom_kills = field(text, "oom_kill");
	ev->tenant_max = limit_hits(r, dir);
	ev->owner_max = limit_hits(r, t->owner_dir);
	ev->members_max = limit_hits(r, t->members_dir);
	ev->all_max = limit_hits(r, memory_root(r));
	return 0;
}
