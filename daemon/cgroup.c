// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The tenants' cgroups (cgroup.h): which layout is live, this colocd's
 * folder in each hierarchy, a folder per tenant with its cpuset and memory
 * limit, and the cpuset writes as the tenant's cores change. Paths are
 * built from colocd's own configuration and tenant keys, which serving
 * has checked to be [A-Za-z0-9_.-] after an owner's "UID:" (tenants_key.h;
 * the "tenant-" prefix keeps "." and ".." from naming a folder).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include "cgroup.h"

#define CGROUP_FS "/sys/fs/cgroup"
#define CGROUP_UNIFIED CGROUP_FS "/unified" /* the hybrid layout's v2 */

const char *cgroup_mode_name(enum cgroup_mode m)
{
	return m == CGROUP_V2 ? "cgroup v2" :
	       m == CGROUP_V1 ? "cgroup v1 (cpuset, memory)" :
				"none";
}

int cgroup_write_file(const char *dir, const char *file, const char *val, struct coloc_err *err)
{
	char path[PATH_MAX + 64];
	size_t len = strlen(val);
	ssize_t n;
	int fd, e;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return coloc_err_set(err, -errno, "%s: %s", path, strerror(errno));
	/* a pending signal makes a memory limit's write fail with EINTR: write again */
	for (int tries = 0; tries < 1000; tries++) {
		n = write(fd, val, len);
		e = errno;
		if (n >= 0 || e != EINTR)
			break;
	}
	close(fd);
	if (n != (ssize_t)len)
		return coloc_err_set(err, n < 0 ? -e : -EIO, "writing '%s' to %s: %s", val, path,
				     n < 0 ? strerror(e) : "short write");
	return 0;
}

int cgroup_read_file(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX + 64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return 0;
}

static bool fs_is(const char *path, long magic)
{
	struct statfs sf;

	return !statfs(path, &sf) && (long)sf.f_type == magic;
}

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ' || p[-1] == ',') &&
		    (p[n] == '\0' || p[n] == ' ' || p[n] == ',' || p[n] == '\n'))
			return true;
	return false;
}

/*
 * This process's cgroup in the v1 hierarchy of controller ("": the v2
 * one), from /proc/self/cgroup; "" for the root.
 */
static int own_cgroup(const char *controller, char *buf, size_t len)
{
	char line[PATH_MAX + 64];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!path)
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		if (controller[0] ? has_word(ctl + 1, controller) : !ctl[1]) {
			snprintf(buf, len, "%s", strcmp(path, "/") ? path : "");
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

static int make_dir(const char *dir, struct coloc_err *err)
{
	if (mkdir(dir, 0755) && errno != EEXIST)
		return coloc_err_set(err, -errno, "mkdir %s: %s", dir, strerror(errno));
	return 0;
}

int cgroup_private_dir(const char *dir, struct coloc_err *err)
{
	if (!mkdir(dir, 0700))
		return 0;
	if (errno != EEXIST)
		return coloc_err_set(err, -errno, "mkdir %s: %s", dir, strerror(errno));
	if (chmod(dir, 0700))
		return coloc_err_set(err, -errno, "chmod %s: %s", dir, strerror(errno));
	return 0;
}

/* v1 cpuset: a new folder has no CPU and no memory node; it takes its parent's. */
static int inherit_cpuset(const char *parent, const char *dir, struct coloc_err *err)
{
	char val[CGROUP_CPUS_LEN];
	int ret;

	for (int i = 0; i < 2; i++) {
		const char *file = i ? "cpuset.mems" : "cpuset.cpus";

		ret = cgroup_read_file(parent, file, val, sizeof(val));
		if (ret)
			return coloc_err_set(err, ret, "%s/%s: %s", parent, file, strerror(-ret));
		ret = cgroup_write_file(dir, file, val, err);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Removes members/, the owners' and tenants' folders and executor leaves below dir,
 * deepest first, then dir itself when self; only empty cgroups go.
 */
static void remove_tree(const char *dir, bool self)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char sub[PATH_MAX + 256];

	if (d) {
		while ((e = readdir(d)))
			if (e->d_type == DT_DIR &&
			    (!strncmp(e->d_name, "tenant-", 7) || !strncmp(e->d_name, "uid-", 4) ||
			     !strcmp(e->d_name, "members") || !strncmp(e->d_name, "exec-", 5))) {
				snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
				remove_tree(sub, true);
			}
		closedir(d);
	}
	if (self)
		rmdir(dir);
}

/* colocd-PID folders of a colocd that is no more (its executors died with it). */
static void remove_stale(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;
	char sub[PATH_MAX + 256];

	if (!d)
		return;
	while ((e = readdir(d))) {
		long pid;
		char *end;

		if (strncmp(e->d_name, "colocd-", 7))
			continue;
		pid = strtol(e->d_name + 7, &end, 10);
		if (*end || pid <= 0 || !kill((pid_t)pid, 0) || errno != ESRCH)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", base, e->d_name);
		remove_tree(sub, true);
	}
	closedir(d);
}

/* Whether systemd delegated this cgroup (Delegate=yes marks it with an xattr). */
static bool delegated(const char *dir)
{
	return getxattr(dir, "trusted.delegate", NULL, 0) >= 0 ||
	       getxattr(dir, "user.delegate", NULL, 0) >= 0;
}

/*
 * A cgroup v2 folder with processes cannot hand controllers down (no
 * internal processes): colocd leaves its own for a leaf, own/colocd.
 */
static int move_to_leaf(const char *own, struct coloc_err *err)
{
	char leaf[PATH_MAX + 16];

	snprintf(leaf, sizeof(leaf), "%s/colocd", own);
	return make_dir(leaf, err) ?: cgroup_write_file(leaf, "cgroup.procs", "0", err);
}

/*
 * v2's cpu controller handed on from dir, unless an earlier folder
 * refused it (r->cpu_missing says why: e.g. a realtime process in a
 * cgroup below the root, which the kernel refuses cpu for).
 */
static void try_cpu_v2(struct cgroup_root *r, const char *dir)
{
	struct coloc_err err = { 0 };
	char ctl[256];

	if (r->cpu_missing[0])
		return;
	if (cgroup_read_file(CGROUP_FS, "cgroup.controllers", ctl, sizeof(ctl)) ||
	    !has_word(ctl, "cpu"))
		snprintf(r->cpu_missing, sizeof(r->cpu_missing),
			 "no cpu controller in " CGROUP_FS "/cgroup.controllers");
	else if (cgroup_write_file(dir, "cgroup.subtree_control", "+cpu", &err))
		snprintf(r->cpu_missing, sizeof(r->cpu_missing), "%s", coloc_err_str(&err));
}

static int open_v2(struct cgroup_root *r, const char *base, struct coloc_err *err)
{
	char ctl[256], dir[PATH_MAX], own[PATH_MAX], rel[PATH_MAX / 2], def[PATH_MAX + 16];
	const char *p;
	int ret;

	if (cgroup_read_file(CGROUP_FS, "cgroup.controllers", ctl, sizeof(ctl)) ||
	    !has_word(ctl, "cpuset") || !has_word(ctl, "memory"))
		return coloc_err_set(err, -ENODEV,
				     "cgroup v2 at " CGROUP_FS " has no cpuset and memory "
				     "controllers (it has: %s)",
				     ctl);
	ret = own_cgroup("", rel, sizeof(rel));
	if (ret)
		return coloc_err_set(err, ret, "colocd's cgroup: %s", strerror(-ret));
	snprintf(own, sizeof(own), CGROUP_FS "%s", rel);
	/* under systemd's Delegate=yes: its own subtree; else a folder of its own at the top */
	if (!base) {
		bool mine = rel[0] && delegated(own);

		snprintf(def, sizeof(def), "%s", mine ? own : CGROUP_FS);
		strncat(def, mine ? "/tenants" : "/coloc", sizeof(def) - strlen(def) - 1);
		base = def;
	}
	if (strncmp(base, CGROUP_FS "/", sizeof(CGROUP_FS)))
		return coloc_err_set(err, -EINVAL, "the cgroup folder %s is not under " CGROUP_FS,
				     base);
	if (rel[0] && !strncmp(base, own, strlen(own)) && base[strlen(own)] == '/') {
		ret = move_to_leaf(own, err);
		if (ret)
			return ret;
	}
	/* every folder from the root down to base hands cpuset and memory on, and cpu if it can */
	snprintf(dir, sizeof(dir), "%s", CGROUP_FS);
	for (p = base + sizeof(CGROUP_FS);; p = strchr(p, '/') + 1) {
		const char *slash = strchr(p, '/');

		ret = cgroup_write_file(dir, "cgroup.subtree_control", "+cpuset +memory", err);
		if (ret)
			return coloc_err_prefix(err, "enabling cgroup controllers"), ret;
		try_cpu_v2(r, dir);
		snprintf(dir, sizeof(dir), "%.*s", (int)((slash ? slash : p + strlen(p)) - base),
			 base);
		ret = make_dir(dir, err);
		if (ret)
			return ret;
		if (!slash)
			break;
	}
	remove_stale(base);
	snprintf(r->dir[0], sizeof(r->dir[0]), "%s/colocd-%d", base, getpid());
	ret = cgroup_private_dir(r->dir[0], err)							?:
		      cgroup_write_file(base, "cgroup.subtree_control", "+cpuset +memory", err) ?:
		      cgroup_write_file(r->dir[0], "cgroup.subtree_control", "+cpuset +memory",
					err);
	if (ret)
		return ret;
	try_cpu_v2(r, base);
	try_cpu_v2(r, r->dir[0]);
	r->cpu_hier = r->cpu_missing[0] ? -1 : 0;
	r->nr = 1;
	r->mode = CGROUP_V2;
	snprintf(r->kill_dir, sizeof(r->kill_dir), "%s", r->dir[0]);
	return 0;
}

/*
 * The hybrid layout's cgroup v2 hierarchy, for the executors' leaves
 * only: BASE under colocd's own cgroup there (its delegated subtree under
 * systemd, as open_v2), colocd-PID in it. Not having one is no error: the
 * executors are then killed by signal (CAP_KILL), as r->kill_missing says.
 */
static void open_v1_kill(struct cgroup_root *r, const char *base)
{
	char rel[PATH_MAX / 2], own[PATH_MAX], dir[PATH_MAX + 512];
	struct coloc_err err = { 0 };
	int ret;

	if (!fs_is(CGROUP_UNIFIED, CGROUP2_SUPER_MAGIC)) {
		snprintf(r->kill_missing, sizeof(r->kill_missing),
			 "no cgroup v2 hierarchy at " CGROUP_UNIFIED);
		return;
	}
	ret = own_cgroup("", rel, sizeof(rel));
	if (ret) {
		snprintf(r->kill_missing, sizeof(r->kill_missing), "colocd's cgroup v2: %s",
			 strerror(-ret));
		return;
	}
	snprintf(own, sizeof(own), CGROUP_UNIFIED "%s", rel);
	snprintf(dir, sizeof(dir), "%s/%.255s", own,
		 base ?: (rel[0] && delegated(own) ? "tenants" : "coloc"));
	ret = make_dir(dir, &err);
	if (!ret) {
		remove_stale(dir);
		snprintf(r->kill_dir, sizeof(r->kill_dir), "%.*s/colocd-%d", PATH_MAX - 32, dir,
			 getpid());
		ret = cgroup_private_dir(r->kill_dir, &err);
	}
	if (ret) {
		r->kill_dir[0] = '\0';
		snprintf(r->kill_missing, sizeof(r->kill_missing), "%s", coloc_err_str(&err));
	}
}

/*
 * Hierarchy i's folder colocd-PID into r->dir[i], under BASE (the cpu
 * hierarchy's under colocd's own cgroup), stale ones of a colocd that is no
 * more removed beside it; cpuset's take their parent's CPUs and memory nodes.
 */
static int open_v1_hier(struct cgroup_root *r, const char *base, int i, const char *ctl,
			struct coloc_err *e, struct coloc_err *err)
{
	char own[PATH_MAX / 2], hier[64], dir[PATH_MAX + 512];
	int ret;

	snprintf(hier, sizeof(hier), CGROUP_FS "/%s", ctl);
	ret = fs_is(hier, CGROUP_SUPER_MAGIC) ?
		      0 :
		      coloc_err_set(e, -ENODEV, "no cgroup v1 %s hierarchy at %s", ctl, hier);
	if (!ret && (ret = own_cgroup(ctl, own, sizeof(own))))
		coloc_err_set(e, ret, "colocd's %s cgroup: %s", ctl, strerror(-ret));
	if (ret)
		return ret;
	/*
	 * under colocd's own cgroup: limits set above it still hold; the cpu
	 * hierarchy's colocd-PID right in it, with a weight of its own
	 * (cgroup_cpu.c), not in a BASE other colocds share
	 */
	if (i == 2)
		snprintf(dir, sizeof(dir), "%s%s", hier, own);
	else
		snprintf(dir, sizeof(dir), "%s%s/%.255s", hier, own, base ?: "coloc");
	ret = i == 2 ? 0 : make_dir(dir, e);
	if (!ret && i == 0)
		ret = inherit_cpuset(hier, dir, err);
	if (!ret)
		remove_stale(dir);
	snprintf(r->dir[i], sizeof(r->dir[i]), "%.*s/colocd-%d", PATH_MAX - 32, dir, getpid());
	if (!ret)
		ret = cgroup_private_dir(r->dir[i], e);
	if (!ret && i == 0)
		ret = inherit_cpuset(dir, r->dir[i], err);
	return ret;
}

static int open_v1(struct cgroup_root *r, const char *base, struct coloc_err *err)
{
	static const char *const ctls[CGROUP_MAX_HIER] = { "cpuset", "memory", "cpu" };
	int ret;

	for (int i = 0; i < CGROUP_MAX_HIER; i++) {
		/* the cpu hierarchy (the third) is not needed to serve: its absence is noted */
		struct coloc_err cpu_err = { 0 }, *e = i == 2 ? &cpu_err : err;

		ret = open_v1_hier(r, base, i, ctls[i], e, err);
		if (ret && i == 2) {
			snprintf(r->cpu_missing, sizeof(r->cpu_missing), "%s",
				 coloc_err_str(&cpu_err));
			break;
		}
		if (ret)
			return ret;
		r->nr = i + 1;
		if (i == 2)
			r->cpu_hier = 2;
	}
	r->mode = CGROUP_V1;
	open_v1_kill(r, base);
	return 0;
}

int cgroup_root_open(struct cgroup_root *r, const char *base, struct coloc_err *err)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->cpu_hier = -1;
	if (fs_is(CGROUP_FS, CGROUP2_SUPER_MAGIC))
		ret = open_v2(r, base, err);
	else
		ret = open_v1(r, base, err);
	if (!ret)
		cgroup_cpu_root_open(r);
	if (ret) {
		cgroup_root_close(r);
		coloc_err_prefix(err, "tenant cgroups");
	}
	return ret;
}

void cgroup_root_close(struct cgroup_root *r)
{
	for (int i = 0; i < r->nr; i++)
		remove_tree(r->dir[i], true);
	if (r->mode == CGROUP_V1 && r->kill_dir[0])
		remove_tree(r->kill_dir, true);
	r->kill_dir[0] = '\0';
	r->nr = 0;
	r->cpu_hier = -1;
	r->mode = CGROUP_NONE;
}

/* v2: the tenant's folder holds its leaves; v1: a folder of its own in the v2 hierarchy. */
static int tenant_kill_dir(const struct cgroup_root *r, const char *name, struct cgroup_tenant *t,
			   struct coloc_err *err)
{
	if (r->mode == CGROUP_V2) {
		snprintf(t->kill_dir, sizeof(t->kill_dir), "%s", t->dir[0]);
		return 0;
	}
	if (!r->kill_dir[0])
		return 0;
	snprintf(t->kill_dir, sizeof(t->kill_dir), "%.*s/tenant-%s", PATH_MAX - 80, r->kill_dir,
		 name);
	int ret = cgroup_private_dir(t->kill_dir, err);

	if (ret)
		t->kill_dir[0] = '\0';
	return ret;
}

int cgroup_tenant_create(const struct cgroup_root *r, const char *name, const char *cpus,
			 const struct cgroup_memory *mem, struct cgroup_tenant *t,
			 struct coloc_err *err)
{
	int ret = 0;

	memset(t, 0, sizeof(*t));
	for (int i = 0; i < CGROUP_MAX_HIER; i++)
		t->procs_fd[i] = -1;
	t->idle_fd = t->pressure_fd = -1;
	t->idle = -1;
	t->mem_hier = -1;
	for (int i = 0; i < r->nr && !ret; i++) {
		bool cpuset = i == 0, memory = r->mode == CGROUP_V2 || i == 1;
		const char *parent = r->dir[i];
		char path[PATH_MAX + 32];

		/* the memory hierarchy's tenant folder in its owner's, which bounds them all */
		if (memory) {
			ret = cgroup_memory_owner_open(r, r->dir[i], mem, t, err);
			if (ret)
				break;
			parent = t->owner_dir;
			t->mem_hier = i;
		}
		snprintf(t->dir[i], sizeof(t->dir[i]), "%.*s/tenant-%s", PATH_MAX - 80, parent,
			 name);
		t->nr = i + 1;
		/*
		 * One left by a tenant of the same name, whose killed executors
		 * were still in it when it went (rmdir refused), or by a colocd
		 * that crashed: taken over, its limits written anew below.
		 */
		ret = cgroup_private_dir(t->dir[i], err);
		if (ret)
			break;
		if (cpuset && r->mode == CGROUP_V1)
			ret = inherit_cpuset(r->dir[i], t->dir[i], err);
		/* none named: its parent's (v2: an empty cpuset.cpus is the parent's) */
		if (!ret && cpuset && cpus && cpus[0] && cgroup_tenant_set_cpus(t, cpus, err) < 0)
			ret = err && err->code ? err->code : -EIO;
		else if (!ret && cpuset)
			cgroup_read_file(t->dir[i], "cpuset.cpus", t->cpus, sizeof(t->cpus));
		if (cpuset)
			snprintf(t->initial, sizeof(t->initial), "%s", t->cpus);
		if (!ret && memory)
			ret = cgroup_memory_limit(r, t->dir[i], mem->tenant_max, err);
		snprintf(path, sizeof(path), "%s/cgroup.procs", t->dir[i]);
		if (!ret && (t->procs_fd[i] = open(path, O_WRONLY | O_CLOEXEC)) < 0)
			ret = coloc_err_set(err, -errno, "%s: %s", path, strerror(errno));
	}
	if (!ret)
		ret = tenant_kill_dir(r, name, t, err);
	if (!ret)
		ret = cgroup_cpu_tenant_open(r, t, err);
	if (ret)
		cgroup_tenant_remove(t);
	return ret;
}

int cgroup_tenant_set_cpus(struct cgroup_tenant *t, const char *cpus, struct coloc_err *err)
{
	int ret;

	if (!t->nr || !strcmp(t->cpus, cpus))
		return 0;
	ret = cgroup_write_file(t->dir[0], "cpuset.cpus", cpus, err);
	if (ret)
		return ret;
	snprintf(t->cpus, sizeof(t->cpus), "%s", cpus);
	return 1;
}

int cgroup_tenant_remove(struct cgroup_tenant *t)
{
	bool own_kill = t->kill_dir[0] && (!t->nr || strcmp(t->kill_dir, t->dir[0]));
	int kept = 0;

	cgroup_cpu_tenant_close(t);
	if (own_kill) {
		remove_tree(t->kill_dir, false);
		if (!rmdir(t->kill_dir) || errno != EBUSY)
			t->kill_dir[0] = '\0';
	}
	for (int i = 0; i < t->nr; i++) {
		if (t->procs_fd[i] >= 0)
			close(t->procs_fd[i]);
		t->procs_fd[i] = -1;
		remove_tree(t->dir[i], false);
		/* a process still in it (a killed executor not yet gone): tried again later */
		if (rmdir(t->dir[i]) && errno == EBUSY) {
			if (kept != i)
				memcpy(t->dir[kept], t->dir[i], sizeof(t->dir[i]));
			kept++;
		} else if (!own_kill && i == 0) {
			t->kill_dir[0] = '\0';
		}
	}
	t->nr = kept;
	t->mem_hier = -1;
	if (!kept)
		cgroup_memory_owner_close(t);
	return kept + (own_kill && t->kill_dir[0]);
}
