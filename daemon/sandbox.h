/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's side of the executors' sandbox (docs/security-sandbox.md): each
 * tenant gets a uid and gid of its own from a reserved range (as systemd's
 * DynamicUser: no entry in /etc/passwd or /etc/group, no group the control
 * socket admits), kept while the tenant exists, and a cgroup of its own
 * (cgroup.h) whose cpuset follows the cores its blocks hold and whose
 * memory is bounded, with a cgroup v2 leaf per executor process to kill
 * it through (cgroup_leaf.h). It fills the sandbox fields of execproc_opts; the
 * executor enters the rest itself (executor/include/exec/exec_sandbox.h).
 *
 * Tenants are named as serving names them; one entry per name, opened at
 * admission and closed when the tenant is gone (its executors reaped).
 */
#ifndef COLOC_DAEMON_SANDBOX_H
#define COLOC_DAEMON_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "error.h"
#include "execproc.h"

/*
 * 0x70000000 + 4096: in the range systemd leaves unused (above the
 * container ranges 524288-1879048191, below 2^31), far from regular users
 * (1000-60000), DynamicUser (61184-65519) and useradd's subordinate ids.
 */
#define SANDBOX_DEFAULT_UID_FIRST 1879048192u
#define SANDBOX_DEFAULT_UID_LAST 1879052287u
#define SANDBOX_DEFAULT_MEMORY_MIB 16384ull /* per tenant; address space 4x per executor */
/*
 * What members' executors may hold together of all executors' bound
 * (memory_all_max): all but a quarter, kept for root's, as of colocd's
 * other fixed resources (docs/security-owners.md, "Executors' memory").
 */
#define SANDBOX_MEMBERS_MEMORY(all) ((all) - (all) / 4)
/*
 * A member's executors' default bound: a fifth of the members' part, so
 * four members at their bound leave a fifth its own and one member never
 * takes the part to its limit, where the kernel kills the largest
 * executor in it, whoever's (review s27 F3; docs/security-owners.md).
 */
#define SANDBOX_MEMBER_SHARE(members) ((members) / 5)

struct sandbox_config {
	uid_t uid_first, uid_last; /* 0, 0: a slot of the defaults' (uid_slot.h) */
	const char *uid_lock_dir; /* the slots' locks; NULL: UID_SLOT_DEFAULT_DIR */
	uint64_t memory_max; /* bytes per tenant's cgroup; 0: SANDBOX_DEFAULT_MEMORY_MIB */
	/* bytes of the executors of one user's (not root's) tenants together; 0: no bound */
	uint64_t memory_per_uid_max;
	/*
	 * bytes of all executors of this colocd together; 0: no bound (and
	 * no members' part: SANDBOX_MEMBERS_MEMORY)
	 */
	uint64_t memory_all_max;
	const char *cgroup_base; /* NULL: cgroup.h's default for the live layout */
	const char *cores; /* the CPUs served: a tenant's cpuset before its first block */
	bool no_cgroups; /* turned off (needs allow_weak) */
	bool no_namespaces; /* turned off (needs allow_weak) */
	/* a layer that cannot be had is noted in the tenant's isolation, not an error */
	bool allow_weak;
};

struct sandbox;

/*
 * Claims a slot of the default uid range unless cfg gives one (-EUSERS
 * when every slot is held), checks the range (inside 1..2^31-1, not
 * root's, at most UID_KNOWN_MAX_SPAN uids), looks up which uids of it NSS
 * knows or processes run under, and finds the cgroup layout. Without
 * cgroups (none live, or turned off) it fails unless allow_weak. With no cgroup v2 hierarchy to
 * kill executors through (cgroup_leaf.h) and no CAP_KILL it fails
 * (-EPERM), allow_weak or not: colocd could not stop a hung executor.
 * 0 or -errno with err.
 */
int sandbox_create(const struct sandbox_config *cfg, struct sandbox **out, struct coloc_err *err);
void sandbox_free(struct sandbox *sb);
/*
 * One line for colocd's start-up log: the uid range, the cgroup layout,
 * how executors are killed (cgroup.kill or, without cgroup v2, CAP_KILL),
 * what is off.
 */
const char *sandbox_describe(const struct sandbox *sb);

/*
 * A uid/gid pair NSS did not know at the last look (nor held by another
 * tenant; no lookup now) and tenant-NAME's cgroup, in the folder of its
 * owner's tenants (memory_per_uid_max unless owner is root). -EEXIST if
 * name has one, -EUSERS when the range is used up (and a new look begins).
 */
int sandbox_tenant_open(struct sandbox *sb, const char *name, uid_t owner, struct coloc_err *err);
/*
 * Whether the kernel's OOM killer killed a process of name's since its
 * sandbox opened: 1 with why in buf ("out of memory at ..." which limit:
 * its own, its owner's tenants' together, members' together, all
 * executors' together, or the machine's), 0 if not (or
 * no cgroup).
 */
int sandbox_tenant_oom_killed(const struct sandbox *sb, const char *name, char *buf, size_t len);
/*
 * Frees the ids and removes the cgroup; where an executor of it has not
 * exited yet, the cgroup lingers until sandbox_tick finds it empty (or a
 * tenant of the same name takes it over).
 */
void sandbox_tenant_close(struct sandbox *sb, const char *name);
/* Removes the lingering cgroups now empty (once a second). Returns how many are left. */
int sandbox_tick(struct sandbox *sb);
/*
 * Fills o's sandbox fields for name's executors, and gives its cpuset back
 * all the cores it had when created: a new executor takes the cores it may
 * use from its affinity at start, and warms up on all of them. -ENOENT if
 * not open, or the cpuset write's error.
 */
int sandbox_tenant_spawn_opts(struct sandbox *sb, const char *name, struct execproc_opts *o,
			      struct coloc_err *err);
/*
 * The cores name's blocks hold now: its cpuset becomes them, written only
 * when it changes. 1 if written, 0 if unchanged, -errno.
 */
int sandbox_tenant_set_cpus(struct sandbox *sb, const char *name, const int *cpus, int nr,
			    struct coloc_err *err);
/*
 * Whether name runs only on the time other tenants leave (cgroup_cpu.c):
 * idle while it holds no core. Written only when it changes: 1 if
 * written, 0 if not (or no cpu controller), -errno.
 */
int sandbox_tenant_set_idle(struct sandbox *sb, const char *name, bool idle,
			    struct coloc_err *err);
/* Whether name, not idle, runs at the lowest weight: only a late block of it out (cgroup_cpu.c). */
int sandbox_tenant_set_late(struct sandbox *sb, const char *name, bool late,
			    struct coloc_err *err);
/* How long name's threads waited for a CPU, ns (its PSI); -ENOENT without. */
int sandbox_tenant_cpu_wait(const struct sandbox *sb, const char *name, uint64_t *ns);
/* "uid N, cgroup v1 (cpuset, memory) at DIR" or what is missing; "" if not open. */
const char *sandbox_tenant_describe(const struct sandbox *sb, const char *name);
uid_t sandbox_tenant_uid(const struct sandbox *sb, const char *name);
/* Looks up again, on a helper thread, which uids NSS knows (colocd's SIGHUP). 0 or -errno. */
int sandbox_refresh_uids(struct sandbox *sb);

#endif /* COLOC_DAEMON_SANDBOX_H */
