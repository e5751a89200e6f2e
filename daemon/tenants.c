// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The tenant table and its state changes (tenants.h). Slots are handed out
 * round-robin, so a removed tenant's slot is the last to be reused; the BPF
 * maps and the view are keyed by slot, so whoever reuses a slot also clears
 * it there.
 *
 * A tenant-add is checked in full before anything changes (every pid, the
 * cgroup, the room left), then applied; a BPF update that still fails rolls
 * back what this request applied, so a request changes all or nothing
 * (a pid is checked in tenants_pid.c, a cgroup path in tenants_cgroup.c).
 * Each process is held by a pidfd from the moment it is checked: the pidfd
 * becomes readable when the process exits, and the loop then drops the pid
 * from the tenant and the map before the pid can be handed out again.
 *
 * Each tenant has an owner, the uid that created it: a caller other than
 * root changes only its own tenants and attributes only its own processes
 * and cgroups, so the socket cannot hand a member the scheduling numbers of
 * other users' processes (docs/security-owners.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tenants_internal.h"
#include "tenants_key.h"

void tenants_init(struct tenant_table *t, struct sensor *sensor, struct view *view,
		  struct loop *loop)
{
	memset(t, 0, sizeof(*t));
	t->sensor = sensor;
	t->view = view;
	t->loop = loop;
}

static struct tenant_proc **tenants_bucket(struct tenant_table *t, __u32 pid)
{
	return &t->by_pid[pid % TENANTS_PID_BUCKETS];
}

static struct tenant_proc *tenants_proc_of_pid(struct tenant_table *t, __u32 pid)
{
	for (struct tenant_proc *p = *tenants_bucket(t, pid); p; p = p->next_in_bucket)
		if (p->pid == pid)
			return p;
	return NULL;
}

static void tenants_index_add(struct tenant_table *t, struct tenant_proc *p)
{
	struct tenant_proc **head = tenants_bucket(t, p->pid);

	p->next_in_bucket = *head;
	*head = p;
}

static void tenants_index_remove(struct tenant_table *t, struct tenant_proc *p)
{
	for (struct tenant_proc **pp = tenants_bucket(t, p->pid); *pp; pp = &(*pp)->next_in_bucket)
		if (*pp == p) {
			*pp = p->next_in_bucket;
			return;
		}
}

static void tenants_proc_free(struct tenant_proc *p)
{
	loop_source_remove(p->src);
	close(p->pidfd);
	free(p);
}

/* Drops one process from its tenant and the map; keeps the order of no one. */
static void tenants_drop_proc(struct tenant *tenant, int k)
{
	struct tenant_proc *p = tenant->procs[k];

	sensor_tenant_remove_pid(p->table->sensor, p->pid);
	tenants_index_remove(p->table, p);
	tenant->procs[k] = tenant->procs[--tenant->nr_procs];
	tenants_proc_free(p);
}

static void tenants_release(struct tenant *tenant)
{
	while (tenant->nr_procs)
		tenants_drop_proc(tenant, tenant->nr_procs - 1);
	tenant->used = false;
}

void tenants_fini(struct tenant_table *t)
{
	for (int i = 0; i < COLOC_MAX_TENANTS; i++)
		if (t->slots[i].used)
			tenants_release(&t->slots[i]);
}

bool tenants_valid_name(const char *name)
{
	size_t len = strlen(name);

	if (!len || len >= COLOC_MAX_NAME)
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
	       len;
}

struct tenant *tenants_find(struct tenant_table *t, const char *name)
{
	for (int i = 0; i < COLOC_MAX_TENANTS; i++)
		if (t->slots[i].used && !strcmp(t->slots[i].name, name))
			return &t->slots[i];
	return NULL;
}

static struct tenant *tenants_create(struct tenant_table *t, const char *name)
{
	for (int k = 0; k < COLOC_MAX_TENANTS; k++) {
		int i = (t->next + k) % COLOC_MAX_TENANTS;
		struct tenant *tenant = &t->slots[i];

		if (tenant->used)
			continue;
		memset(tenant, 0, sizeof(*tenant));
		tenant->used = true;
		tenant->id = (__u32)i;
		snprintf(tenant->name, sizeof(tenant->name), "%s", name);
		t->next = (i + 1) % COLOC_MAX_TENANTS;
		return tenant;
	}
	return NULL;
}

bool tenants_visible(const struct tenant *tenant, uid_t uid)
{
	return !uid || tenant->owner == uid;
}

static int tenants_owned_by(const struct tenant_table *t, uid_t uid)
{
	int n = 0;

	for (int i = 0; i < COLOC_MAX_TENANTS; i++)
		n += t->slots[i].used && t->slots[i].owner == uid;
	return n;
}

static int tenants_of_members(const struct tenant_table *t)
{
	int n = 0;

	for (int i = 0; i < COLOC_MAX_TENANTS; i++)
		n += t->slots[i].used && t->slots[i].owner;
	return n;
}

static bool tenants_slot_free(const struct tenant_table *t)
{
	for (int i = 0; i < COLOC_MAX_TENANTS; i++)
		if (!t->slots[i].used)
			return true;
	return false;
}

/* Room for a new tenant owned by owner: its quota, the members' part, a free slot. */
static int tenants_new_room(const struct tenant_table *t, uid_t owner, struct coloc_err *err)
{
	int owned = tenants_owned_by(t, owner);

	if (owner && t->max_per_uid && owned >= t->max_per_uid)
		return coloc_err_set(err, -EDQUOT,
				     "uid %u already has %d tenants, its quota of %d (serving "
				     "tenants included; colocd --max-tenants-per-uid raises it)",
				     (unsigned int)owner, owned, t->max_per_uid);
	if (owner && tenants_of_members(t) >= TENANTS_MEMBERS_PART)
		return coloc_err_set(err, -EDQUOT,
				     "members' tenants hold the %d tenant slots members may take "
				     "(the rest of colocd's %d are root's); remove one first",
				     TENANTS_MEMBERS_PART, COLOC_MAX_TENANTS);
	if (!tenants_slot_free(t))
		return coloc_err_set(err, -ENOSPC,
				     "all %d tenant slots are taken; remove one first",
				     COLOC_MAX_TENANTS);
	return 0;
}

int tenants_room(const struct tenant_table *t, const char *name, uid_t owner, struct coloc_err *err)
{
	for (int i = 0; i < COLOC_MAX_TENANTS; i++) {
		const struct tenant *tenant = &t->slots[i];

		if (!tenant->used || strcmp(tenant->name, name))
			continue;
		if (tenant->owner != owner)
			return coloc_err_set(err, -EPERM, "tenant '%s' belongs to another user",
					     name);
		return 0;
	}
	return tenants_new_room(t, owner, err);
}

struct tenant *tenants_owner_of_pid(struct tenant_table *t, __u32 pid)
{
	struct tenant_proc *p = tenants_proc_of_pid(t, pid);

	return p ? p->tenant : NULL;
}

static struct tenant *tenants_owner_of_cgroup(struct tenant_table *t, __u64 cgid)
{
	for (int i = 0; i < COLOC_MAX_TENANTS; i++)
		if (t->slots[i].used && t->slots[i].cgroup[0] && t->slots[i].cgroup_id == cgid)
			return &t->slots[i];
	return NULL;
}

/* The tenant gone: its processes let go, its keys in the BPF maps and its numbers cleared. */
static void tenants_forget(struct tenant_table *t, struct tenant *tenant)
{
	/* its own keys, one by one; the clear then finds only the cgroup's */
	tenants_release(tenant);
	sensor_tenant_clear(t->sensor, tenant->id);
	view_tenant_reset(t->view, tenant->id);
}

/*
 * The process exited: its pidfd is readable. A member's tenant of
 * processes only goes with its last: nothing is left to measure, and its
 * slot would stay taken from its owner's quota and the members' part
 * until a remove that a client which has gone never sends.
 */
static void tenants_on_exit(struct loop_source *src, int fd, unsigned int revents, void *ctx)
{
	struct tenant_proc *p = ctx;
	struct tenant_table *t = p->table;
	struct tenant *tenant = p->tenant;

	(void)src;
	(void)fd;
	(void)revents;
	for (int k = 0; k < tenant->nr_procs; k++)
		if (tenant->procs[k] == p) {
			tenants_drop_proc(tenant, k);
			break;
		}
	if (tenant->members_add && !tenant->nr_procs && !tenant->cgroup[0])
		tenants_forget(t, tenant);
}

/* Everything a request brings, checked, before anything changes. */
struct tenants_plan {
	int pidfds[COLOC_MAX_PIDS_PER_REQUEST];
	__u32 pids[COLOC_MAX_PIDS_PER_REQUEST];
	int nr; /* new processes: not yet in the tenant, no duplicates */
	bool have_cgroup;
	char cgroup[PATH_MAX];
	__u64 cgroup_id;
};

static void tenants_plan_free(struct tenants_plan *plan)
{
	for (int i = 0; i < plan->nr; i++)
		if (plan->pidfds[i] >= 0)
			close(plan->pidfds[i]);
	free(plan);
}

struct tenants_pid_at {
	__s64 pid;
	size_t i; /* its place in the request */
};

static int tenants_pid_at_cmp(const void *a, const void *b)
{
	const struct tenants_pid_at *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * first[i] set where req's pids[i] is the first of its value, by sorting a
 * copy (no syscall); the number of distinct pids neither seen before nor
 * held by existing already, to weigh against the tenant's limit.
 */
static size_t tenants_first_pids(struct tenant_table *t, const struct tenants_add_req *req,
				 const struct tenant *existing, bool *first)
{
	struct tenants_pid_at at[COLOC_MAX_PIDS_PER_REQUEST];
	size_t fresh = 0;

	for (size_t i = 0; i < req->nr_pids; i++)
		at[i] = (struct tenants_pid_at){ req->pids[i], i };
	qsort(at, req->nr_pids, sizeof(at[0]), tenants_pid_at_cmp);
	for (size_t k = 0; k < req->nr_pids; k++) {
		bool is_first = !k || at[k].pid != at[k - 1].pid;

		first[at[k].i] = is_first;
		if (is_first && at[k].pid > 0 && at[k].pid <= 0x3fffffff &&
		    (!existing || tenants_owner_of_pid(t, (__u32)at[k].pid) != existing))
			fresh++;
	}
	return fresh;
}

static int tenants_plan(struct tenant_table *t, const struct tenants_add_req *req,
			struct tenant *existing, struct tenants_plan *plan, struct coloc_err *err)
{
	bool first[COLOC_MAX_PIDS_PER_REQUEST];
	size_t fresh;
	struct tenant *owner;
	int held = existing ? existing->nr_procs : 0, ret;
	uid_t cg_uid;

	if (req->nr_pids > COLOC_MAX_PIDS_PER_REQUEST)
		return coloc_err_set(err, -E2BIG, "too many pids (%zu); at most %d per request",
				     req->nr_pids, COLOC_MAX_PIDS_PER_REQUEST);
	if (!req->nr_pids && !req->cgroup)
		return coloc_err_set(err, -EINVAL,
				     "tenant-add needs pids (at least one) or a cgroup");
	if (req->cgroup) {
		ret = tenants_cgroup_id(req->cgroup, plan->cgroup, &plan->cgroup_id, &cg_uid, err);
		if (ret)
			return ret;
		if (req->uid && cg_uid != req->uid)
			return coloc_err_set(
				err, -EPERM,
				"cgroup %s belongs to another user: a tenant takes only "
				"cgroups whose directory its caller owns",
				plan->cgroup);
		plan->have_cgroup = true;
		owner = tenants_owner_of_cgroup(t, plan->cgroup_id);
		if (owner && strcmp(owner->name, req->name))
			return coloc_err_set(err, -EBUSY,
					     "cgroup %s already belongs to tenant '%s'",
					     plan->cgroup, owner->name);
		if (existing && existing->cgroup[0] && existing->cgroup_id != plan->cgroup_id)
			return coloc_err_set(err, -EEXIST,
					     "tenant '%s' already has cgroup %s; remove the tenant "
					     "to change it",
					     req->name, existing->cgroup);
	}
	/* a pid named again is checked once; past the limit, none is (a check costs the loop) */
	fresh = tenants_first_pids(t, req, existing, first);
	if (held + fresh > TENANT_MAX_PIDS)
		return coloc_err_set(err, -ENOSPC,
				     "tenant '%s' holds %d processes; the %zu pids asked for "
				     "would pass the %d a tenant can hold",
				     req->name, held, fresh, TENANT_MAX_PIDS);
	for (size_t i = 0; i < req->nr_pids; i++) {
		int fd;

		if (!first[i])
			continue;
		ret = tenants_check_pid(t, req->name, req->uid, i, req->pids[i], &fd, err);
		if (ret) {
			if (fd >= 0)
				close(fd);
			return ret;
		}
		/* tenants_check_pid refused another tenant's: an owner now is this tenant */
		if (tenants_owner_of_pid(t, (__u32)req->pids[i])) {
			close(fd);
			continue;
		}
		plan->pids[plan->nr] = (__u32)req->pids[i];
		plan->pidfds[plan->nr++] = fd;
		/* stop at the first pid past the limit: checking the rest costs the loop */
		if (held + plan->nr > TENANT_MAX_PIDS)
			return coloc_err_set(
				err, -ENOSPC,
				"tenant '%s' holds %d processes; the %zu pids asked for "
				"would pass the %d a tenant can hold",
				req->name, held, req->nr_pids, TENANT_MAX_PIDS);
	}
	return 0;
}

/* Applies a checked plan; on a failed BPF update undoes this request's part. */
static int tenants_apply(struct tenant_table *t, struct tenant *tenant, struct tenants_plan *plan,
			 struct coloc_err *err)
{
	int first = tenant->nr_procs, ret = 0;

	for (int i = 0; i < plan->nr && !ret; i++) {
		struct tenant_proc *p = calloc(1, sizeof(*p));

		if (!p) {
			ret = -ENOMEM;
			break;
		}
		*p = (struct tenant_proc){
			.table = t, .tenant = tenant, .pid = plan->pids[i], .pidfd = plan->pidfds[i]
		};
		ret = loop_add_poll(t->loop, &p->src, p->pidfd, POLLIN, tenants_on_exit, p);
		if (ret) {
			free(p);
			break;
		}
		plan->pidfds[i] = -1; /* the proc owns it now */
		tenant->procs[tenant->nr_procs++] = p;
		tenants_index_add(t, p);
		ret = sensor_tenant_add_pid(t->sensor, tenant->id, p->pid);
	}
	if (!ret && plan->have_cgroup && !tenant->cgroup[0]) {
		ret = sensor_tenant_add_cgroup(t->sensor, tenant->id, plan->cgroup_id);
		if (!ret) {
			snprintf(tenant->cgroup, sizeof(tenant->cgroup), "%s", plan->cgroup);
			tenant->cgroup_id = plan->cgroup_id;
		}
	}
	if (!ret)
		return 0;
	while (tenant->nr_procs > first)
		tenants_drop_proc(tenant, tenant->nr_procs - 1);
	return coloc_err_set(err, ret, "cannot attribute to tenant '%s': %s", tenant->name,
			     strerror(-ret));
}

int tenants_add(struct tenant_table *t, const struct tenants_add_req *req, struct tenant **out,
		struct coloc_err *err)
{
	struct tenant *tenant = tenants_find(t, req->name);
	struct tenants_plan *plan;
	bool created = false;
	uid_t owner = req->uid ? req->uid : req->charge;
	int ret;

	if (strlen(req->name) >= COLOC_MAX_NAME || !tenants_valid_name(tenants_key_name(req->name)))
		return coloc_err_set(err, -EINVAL,
				     "bad tenant name: use 1-%d characters of A-Z a-z 0-9 _ . -",
				     COLOC_MAX_NAME - 1);
	if (tenant && !tenants_visible(tenant, req->uid))
		return coloc_err_set(err, -EPERM, "tenant '%s' belongs to another user", req->name);
	if (!tenant) {
		ret = tenants_new_room(t, owner, err);
		if (ret)
			return ret;
	}
	plan = calloc(1, sizeof(*plan));
	if (!plan)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	ret = tenants_plan(t, req, tenant, plan, err);
	if (ret)
		goto out;
	if (!tenant) {
		tenant = tenants_create(t, req->name);
		if (!tenant) {
			ret = coloc_err_set(err, -ENOSPC,
					    "all %d tenant slots are taken; remove one first",
					    COLOC_MAX_TENANTS);
			goto out;
		}
		created = true;
		tenant->owner = owner;
		tenant->members_add = req->uid != 0;
		/* a reused slot must not inherit the previous tenant's numbers */
		sensor_tenant_clear(t->sensor, tenant->id);
		view_tenant_reset(t->view, tenant->id);
	}
	ret = tenants_apply(t, tenant, plan, err);
	/* the serving tenant's: it stays through its executors' restarts, a member cannot remove it */
	if (!ret && req->serving) {
		tenant->serving = true;
		tenant->members_add = false;
	}
	if (ret && created) {
		sensor_tenant_clear(t->sensor, tenant->id);
		tenants_release(tenant);
	}
	if (!ret)
		*out = tenant;
out:
	tenants_plan_free(plan);
	return ret;
}

int tenants_remove(struct tenant_table *t, const char *name, uid_t uid, struct coloc_err *err)
{
	struct tenant *tenant = tenants_find(t, name);

	if (!tenant)
		return coloc_err_set(err, -ENOENT, "no tenant named '%s'", name);
	if (!tenants_visible(tenant, uid))
		return coloc_err_set(err, -EPERM, "tenant '%s' belongs to another user", name);
	if (uid && tenant->serving)
		return coloc_err_set(
			err, -EPERM,
			"tenant '%s' holds the executors of serving tenant '%s' and goes "
			"with it: remove that (colocctl remove)",
			tenants_key_name(name), tenants_key_name(name));
	tenants_forget(t, tenant);
	return 0;
}
