/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's tenants: names, their owners (the uid that created each), the
 * processes and cgroup attributed to each, the
 * slot (0..COLOC_MAX_TENANTS-1) the BPF side knows them by, and every state
 * change with its checks and rollback: the BPF maps, the rolling view and
 * one pidfd per process, watched on the event loop, so an exited process
 * leaves its tenant as soon as it exits and its pid, if reused, is never
 * charged to it. The control protocol only translates to these calls.
 */
#ifndef COLOC_DAEMON_TENANTS_H
#define COLOC_DAEMON_TENANTS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "coloc/sensor.h"
#include "coloc/protocol.h"
#include "error.h"
#include "loop.h"
#include "sensor.h"
#include "view.h"

#define TENANT_MAX_PIDS COLOC_MAX_PIDS_PER_TENANT
#define TENANTS_CGROUP_ROOT "/sys/fs/cgroup"
/* Buckets of the pid index: a quarter of the most processes all tenants hold. */
#define TENANTS_PID_BUCKETS 4096

struct tenant_table;

/* One attributed process, held by a pidfd. */
struct tenant_proc {
	struct tenant_table *table;
	struct tenant *tenant;
	__u32 pid;
	int pidfd;
	struct loop_source *src;
	struct tenant_proc *next_in_bucket; /* the pid index's chain */
};

struct tenant {
	bool used;
	__u32 id;
	char name[COLOC_MAX_NAME]; /* its key: owner and name (tenants_key.h) */
	uid_t owner; /* who created it; only it and root may change or read it in full */
	int nr_procs;
	struct tenant_proc *procs[TENANT_MAX_PIDS];
	char cgroup[PATH_MAX];
	__u64 cgroup_id;
	/*
	 * Made by a member's tenant-add: without a cgroup it goes when its
	 * last process exits, its slot back to its owner's quota and the
	 * members' part (docs/security-owners.md, "Quotas").
	 */
	bool members_add;
	/*
	 * It holds a serving tenant's executors (colocd attributed them): it
	 * goes with the serving tenant; only root removes it otherwise.
	 */
	bool serving;
};

/*
 * The slots members' tenants may hold together: all but a quarter of
 * COLOC_MAX_TENANTS, kept for root's (as colocd --max-submit-mib).
 */
#define TENANTS_MEMBERS_PART (COLOC_MAX_TENANTS - COLOC_MAX_TENANTS / 4)

struct tenant_table {
	struct tenant slots[COLOC_MAX_TENANTS];
	int next; /* where the search for a free slot starts: slots are reused last */
	struct sensor *sensor;
	struct view *view;
	struct loop *loop;
	/*
	 * tenants one non-root uid may own (0: no limit but the members'
	 * part); colocd sets it
	 */
	int max_per_uid;
	/* every attributed process by pid: whose a pid is, without a walk of all */
	struct tenant_proc *by_pid[TENANTS_PID_BUCKETS];
};

/* What a tenant-add asks for: pids, a cgroup v2 directory, or both. */
struct tenants_add_req {
	const char *name; /* the tenant's key (tenants_key.h) */
	const __s64 *pids; /* as the client sent them; checked here */
	size_t nr_pids;
	const char *cgroup; /* NULL: none */
	/*
	 * Who asks: a new tenant is its; unless root, only its own processes
	 * (real and effective uid), cgroups (directory owner) and tenants.
	 */
	uid_t uid;
	/*
	 * Whose quota and part a new tenant counts in when uid is root: the
	 * owner of a serving tenant whose executors root attributes (0: root).
	 */
	uid_t charge;
	/* colocd attributes the executors of the serving tenant of this key (tenant.serving) */
	bool serving;
};

void tenants_init(struct tenant_table *t, struct sensor *sensor, struct view *view,
		  struct loop *loop);
/* Closes every pidfd and leaves the BPF maps to the sensor's own teardown. */
void tenants_fini(struct tenant_table *t);

/* Whether name is 1..COLOC_MAX_NAME-1 of [A-Za-z0-9_.-] (a key's name part: tenants_key.h). */
bool tenants_valid_name(const char *name);
/* The tenant of key (tenants_key.h), or NULL. */
struct tenant *tenants_find(struct tenant_table *t, const char *key);
/* The tenant holding pid, or NULL. */
struct tenant *tenants_owner_of_pid(struct tenant_table *t, __u32 pid);

/*
 * Attributes the processes (all their threads) and/or the cgroup to tenant
 * req->name, creating it if new (owned by req->uid): all of it or, with err
 * saying why, nothing. Refused: pid 1 and colocd itself, threads (their
 * process is meant), processes or cgroups of another tenant, more than
 * TENANT_MAX_PIDS in the tenant, a cgroup that is the cgroup v2 root, not
 * below TENANTS_CGROUP_ROOT, or named with a "." , ".." or "-" component.
 * Unless req->uid is root, also (-EPERM): another user's tenant, a process
 * whose real or effective uid is not req->uid (read while its pidfd is
 * held, the pidfd checked alive after, so a reused pid cannot pass), a
 * cgroup directory req->uid does not own. A new tenant of a member
 * (req->uid, or req->charge when root asks) is refused (-EDQUOT) past its
 * max_per_uid, or past TENANTS_MEMBERS_PART over all members; root's only
 * when every slot is taken. A tenant a member's request made, with no
 * cgroup, is forgotten as its last process exits (root's, and those root
 * made for a serving tenant's executors, stay until removed).
 */
int tenants_add(struct tenant_table *t, const struct tenants_add_req *req, struct tenant **out,
		struct coloc_err *err);
/*
 * Whether a tenants_add of name charged to owner would find its slot: 0
 * (name is owner's already, or a slot is free within owner's quota and
 * the members' part), or -EDQUOT / -ENOSPC / -EPERM with err saying why.
 */
int tenants_room(const struct tenant_table *t, const char *name, uid_t owner,
		 struct coloc_err *err);
/*
 * Forgets the tenant, its keys in the BPF maps and its numbers; -ENOENT if
 * none, -EPERM ("belongs to another user") unless uid owns it or is root,
 * and -EPERM for a member's removal of the tenant of its serving tenant's
 * executors (it goes with the serving tenant: its slot is that one's).
 */
int tenants_remove(struct tenant_table *t, const char *name, uid_t uid, struct coloc_err *err);
/* Whether uid may read tenant's details: its owner and root may. */
bool tenants_visible(const struct tenant *tenant, uid_t uid);

#endif /* COLOC_DAEMON_TENANTS_H */
