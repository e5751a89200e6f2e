/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One cgroup per tenant, under a folder of this colocd's own, so that the
 * kernel enforces the cores the tenant's blocks hold (cpuset) and bounds
 * its memory. Two layouts, detected at start:
 *   v2: /sys/fs/cgroup is cgroup2 with the cpuset and memory controllers;
 *       BASE (default /sys/fs/cgroup/coloc) gets +cpuset +memory in its
 *       subtree_control, as does every folder from the root down to it;
 *   v1: the hybrid layout, cpuset and memory mounted as v1 hierarchies
 *       under /sys/fs/cgroup/cpuset and /sys/fs/cgroup/memory, BASE named
 *       inside each (default coloc).
 * Where it can, each also gets the cpu controller (v2: +cpu; v1: the cpu
 * hierarchy at /sys/fs/cgroup/cpu, a third folder per tenant), so that a
 * tenant holding no core runs only on time no other tenant wants
 * (cgroup_cpu.c); without it colocd still serves, and its start-up log
 * says so.
 * Below BASE: colocd-PID (this colocd; the folders of a colocd that is no
 * more are removed at start), and in it tenant-NAME per tenant. In the
 * hierarchy of the memory controller (v2: the one) a tenant's folder is in
 * uid-U, one per user U who owns tenants, whose memory limit bounds all
 * their executors together, as colocd-PID's bounds all users' executors
 * (docs/security-owners.md); v1's cpuset and cpu folders stay flat. Every
 * write is checked; the cost of a cpuset write is in
 * docs/security-sandbox.md.
 *
 * Each executor runs in a cgroup v2 leaf of its own under its tenant's
 * (cgroup_leaf.h), killed through its cgroup.kill. The leaves' parent is
 * the tenant's kill folder: on v2 the tenant's folder itself; on v1 a
 * tenant-NAME under BASE/colocd-PID in the hybrid layout's cgroup v2
 * hierarchy at /sys/fs/cgroup/unified (no controllers: only for killing),
 * where there is one; none on a host of v1 only.
 */
#ifndef COLOC_DAEMON_CGROUP_H
#define COLOC_DAEMON_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"

enum cgroup_mode { CGROUP_NONE, CGROUP_V2, CGROUP_V1 };

#define CGROUP_MAX_HIER 3 /* v1: cpuset, memory and cpu; v2: one */
#define CGROUP_CPU_FILE_LEN 16
#define CGROUP_CPUS_LEN 1024

struct cgroup_root {
	enum cgroup_mode mode;
	int nr; /* hierarchies */
	char dir[CGROUP_MAX_HIER][PATH_MAX]; /* .../colocd-PID; v1: cpuset's first */
	/* the cgroup v2 colocd-PID that holds the tenants' kill folders; "": none */
	char kill_dir[PATH_MAX];
	char kill_missing[256]; /* why there is no kill_dir, "" if there is */
	/* the cpu controller: dir[cpu_hier] holds it (-1: none, cpu_missing says why) */
	int cpu_hier;
	char cpu_missing[256];
	/* what marks a tenant idle: cpu.idle 1/0, else cpu.shares or cpu.weight low/default */
	char idle_file[CGROUP_CPU_FILE_LEN], idle_on[8], idle_off[8];
	/* where there is cpu.idle, what marks a late tenant: the lowest weight ("": none) */
	char late_file[CGROUP_CPU_FILE_LEN], late_on[8], late_off[8];
};

struct cgroup_tenant {
	int nr;
	char dir[CGROUP_MAX_HIER][PATH_MAX];
	int procs_fd[CGROUP_MAX_HIER]; /* cgroup.procs, for a child to join with "0" */
	char cpus[CGROUP_CPUS_LEN]; /* cpuset.cpus as last written */
	char initial[CGROUP_CPUS_LEN]; /* as created: where a new executor starts */
	/* the parent of its executors' leaves (v2: dir[0]); "": none */
	char kill_dir[PATH_MAX];
	int idle_fd; /* the root's idle_file in its cpu folder; -1: none */
	int idle; /* as last written: 1 idle, 0 not, -1 never written */
	int late; /* its weight: 1 the lowest, 0 the default (as made, and after each cpu.idle write) */
	int pressure_fd; /* cpu.pressure of its kill folder (PSI); -1: none */
	int mem_hier; /* which dir[] has the memory controller; -1: none */
	char owner_dir[PATH_MAX]; /* its owner's uid-U folder above dir[mem_hier]; "": none */
	char members_dir[PATH_MAX]; /* members/ above a member's owner_dir; "": none (root's) */
};

/* A tenant's memory events so far (cgroup_tenant_memory_events). */
struct cgroup_memory_events {
	uint64_t oom_kills; /* its processes the kernel's OOM killer killed */
	uint64_t tenant_max; /* times its own memory limit was hit */
	uint64_t owner_max; /* times its owner's uid-U limit was hit (all its tenants') */
	uint64_t members_max; /* times members/'s limit was hit (all members' tenants') */
	uint64_t all_max; /* times colocd-PID's limit was hit (all executors') */
};

/*
 * Detects the layout and makes this colocd's folder under base (NULL: the
 * default for the layout). -ENODEV where neither layout has both
 * controllers (err says what is there).
 */
int cgroup_root_open(struct cgroup_root *r, const char *base, struct coloc_err *err);
/* Removes this colocd's folder (its tenants' must be gone). */
void cgroup_root_close(struct cgroup_root *r);
const char *cgroup_mode_name(enum cgroup_mode m);

/* What a tenant's memory is bounded by: its own limit and its owner's. */
struct cgroup_memory {
	uint64_t tenant_max; /* bytes, its executors together; 0: no limit */
	unsigned int owner; /* the uid that owns it: its uid-U folder */
	uint64_t owner_max; /* bytes, all of owner's tenants' executors together; 0: none */
	/*
	 * bytes, all members' (owners other than root) tenants' executors
	 * together, in members/ between colocd-PID and their uid-U; 0: no
	 * such folder, uid-U in colocd-PID. Root's uid-0 is never in it.
	 */
	uint64_t members_max;
};

/*
 * A folder only root may enter (0700), made or, when it is there already,
 * changed to 0700: its files show a tenant's pids, CPU time, memory and
 * pressure, which no other user may read (docs/security-owners.md).
 */
int cgroup_private_dir(const char *dir, struct coloc_err *err);

/*
 * tenant-NAME with cpuset.cpus = cpus (a CPU list; NULL or "": its
 * parent's), the memory nodes of its parent, and mem's limits: its memory
 * folder in uid-OWNER (made, or its limit written again, as each tenant
 * of the owner comes), which for a member with mem->members_max sits in
 * members/ (made, or its limit written again, likewise).
 */
int cgroup_tenant_create(const struct cgroup_root *r, const char *name, const char *cpus,
			 const struct cgroup_memory *mem, struct cgroup_tenant *t,
			 struct coloc_err *err);
/*
 * Its memory folder's counters (v2 memory.events, v1 oom_control), and the
 * times its own, its owner's and colocd-PID's limits were hit (v2
 * memory.events.local, v1 failcnt). 0 or -errno.
 */
int cgroup_tenant_memory_events(const struct cgroup_root *r, const struct cgroup_tenant *t,
				struct cgroup_memory_events *ev);
/* Writes cpuset.cpus only when cpus differs from what it holds. 1 if written. */
int cgroup_tenant_set_cpus(struct cgroup_tenant *t, const char *cpus, struct coloc_err *err);
/*
 * The cpu controller (cgroup_cpu.c). Whether t runs only on idle time:
 * idle while it holds no core. Written only when it changes; 1 if
 * written, 0 if not (unchanged, or no cpu controller), -errno.
 */
int cgroup_tenant_set_idle(struct cgroup_tenant *t, const struct cgroup_root *r, bool idle,
			   struct coloc_err *err);
/*
 * Whether t, not idle, weighs the least (cpu.weight 1 / cpu.shares 2:
 * only a late block of it runs) or the default. The kernel refuses a
 * weight while cpu.idle is 1: set idle 0 first. Written only when it
 * changes; 1 if written, 0 if not (unchanged, or no cpu.idle: idle is
 * that weight already), -errno.
 */
int cgroup_tenant_set_late(struct cgroup_tenant *t, const struct cgroup_root *r, bool late,
			   struct coloc_err *err);
/*
 * How long t's threads have waited, runnable, for a CPU (cpu.pressure's
 * "some" total, in ns, since the folder was made). -ENOENT without PSI.
 */
int cgroup_tenant_cpu_wait(const struct cgroup_tenant *t, uint64_t *ns);
/* dir/file written (a pending signal's EINTR retried) or read, trailing blanks cut: 0 or -errno. */
int cgroup_write_file(const char *dir, const char *file, const char *val, struct coloc_err *err);
int cgroup_read_file(const char *dir, const char *file, char *buf, size_t len);
/*
 * The memory controller (cgroup_memory.c): t's owner folder uid-OWNER under
 * parent (a member's, with mem->members_max, under parent/members) made
 * (v2: the controllers handed on to each), their limits written,
 * t->owner_dir and t->members_dir set; bytes of memory.max (v1
 * memory.limit_in_bytes) on dir (0: none written); the owner folder, and
 * members/, removed when empty.
 */
int cgroup_memory_owner_open(const struct cgroup_root *r, const char *parent,
			     const struct cgroup_memory *mem, struct cgroup_tenant *t,
			     struct coloc_err *err);
int cgroup_memory_limit(const struct cgroup_root *r, const char *dir, uint64_t max,
			struct coloc_err *err);
/*
 * bytes of memory.max (v1 memory.limit_in_bytes, its children counted) on
 * colocd-PID in the memory hierarchy: all the tenants' executors together
 * (0: none written). colocd itself is not in it. 0 or -errno.
 */
int cgroup_memory_root_limit(const struct cgroup_root *r, uint64_t max, struct coloc_err *err);
void cgroup_memory_owner_close(struct cgroup_tenant *t);
/* Opens t's cpu files (from cgroup_tenant_create): idle at once. */
int cgroup_cpu_tenant_open(const struct cgroup_root *r, struct cgroup_tenant *t,
			   struct coloc_err *err);
void cgroup_cpu_tenant_close(struct cgroup_tenant *t);
/* Chooses r's idle_file in dir[cpu_hier]: cpu.idle, else the weight's file. */
void cgroup_cpu_root_open(struct cgroup_root *r);
/* One clause for the start-up log: how an idle tenant is held back, or why not. */
const char *cgroup_cpu_describe(const struct cgroup_root *r, char *buf, size_t len);
/*
 * Closes the fds and removes the folders, the executors' leaves left in
 * them first. A folder a process is still in stays in t (EBUSY) for a
 * later call. Returns how many folders are left.
 */
int cgroup_tenant_remove(struct cgroup_tenant *t);

#endif /* COLOC_DAEMON_CGROUP_H */
