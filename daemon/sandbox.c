// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's side of the sandbox (sandbox.h): the tenants' uids from this
 * colocd's slot of the reserved range (uid_slot.h) or --uid-range, handed
 * out round-robin so that a uid freed is not reused at once, skipping those
 * someone has (uid_known.h, no lookup here), and each tenant's cgroup. A
 * fixed table, as serving's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/types.h>
#include <sys/syscall.h>
#include "cgroup.h"
#include "coloc/limits.h"
#include "coloc/sensor.h"
#include "sandbox.h"
#include "uid_known.h"
#include "uid_slot.h"
#include "util.h"

#define SANDBOX_MAX_TENANTS COLOC_MAX_TENANTS
#define SANDBOX_DESCRIBE_LEN (PATH_MAX + 1024)

struct sandbox_tenant {
	bool used;
	bool lingering; /* gone, its cgroup folders still held by an exiting executor */
	char name[64];
	uid_t uid;
	uid_t owner;
	struct cgroup_tenant cg;
	struct cgroup_memory_events mem0; /* as at its opening: a taken-over folder's past */
	char describe[SANDBOX_DESCRIBE_LEN];
};

struct sandbox {
	struct sandbox_config cfg;
	struct cgroup_root cg;
	uid_t next_uid;
	struct uid_slot slot; /* fd -1: --uid-range, no slot */
	struct uid_known *known; /* the uids of the range someone has */
	char cg_missing[256]; /* why there are no cgroups, "" if there are */
	char kill_how[PATH_MAX + 128]; /* how executors are killed, for the start-up line */
	char describe[SANDBOX_DESCRIBE_LEN];
	struct sandbox_tenant tenants[SANDBOX_MAX_TENANTS];
};

static bool have_cap_kill(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };

	return !syscall(SYS_capget, &hdr, data) && (data[0].effective & (1u << CAP_KILL));
}

/*
 * The executors run under uids of their own: colocd kills each through its
 * cgroup v2 leaf's cgroup.kill, or where there is no cgroup v2 (a host of
 * cgroup v1 only, cgroups turned off) by signal, which needs CAP_KILL.
 * Without either it could not stop a hung executor: it does not start.
 */
static int check_kill(struct sandbox *sb, struct coloc_err *err)
{
	const char *why = sb->cg_missing[0] ? sb->cg_missing : sb->cg.kill_missing;

	if (sb->cg.kill_dir[0]) {
		snprintf(sb->kill_how, sizeof(sb->kill_how),
			 "each killed through its cgroup v2 leaf's cgroup.kill (under %s)",
			 sb->cg.kill_dir);
		return 0;
	}
	snprintf(sb->kill_how, sizeof(sb->kill_how),
		 "killed by signal (CAP_KILL): no cgroup v2 leaf to kill them through (%s)", why);
	if (have_cap_kill())
		return 0;
	return coloc_err_set(err, -EPERM,
			     "colocd could not kill its executors, which run under uids of "
			     "their own: no cgroup v2 hierarchy to kill them through "
			     "(cgroup.kill: %s) and no CAP_KILL to signal them; give colocd "
			     "either (docs/security-sandbox.md)",
			     why);
}

/*
 * Each memory bound within the next one set: a tenant's, a user's tenants'
 * together, all executors' together (colocd's flags were checked so already).
 */
static int check_memory_bounds(const struct sandbox_config *c, struct coloc_err *err)
{
	static const char *const flag[] = { "--executor-memory", "--max-executor-mib-per-uid",
					    "--max-executor-mib" };
	const uint64_t mib[] = { c->memory_max >> 20, c->memory_per_uid_max >> 20,
				 c->memory_all_max >> 20 };

	for (size_t i = 0; i + 1 < ARRAY_SIZE(mib); i++)
		for (size_t j = i + 1; j < ARRAY_SIZE(mib); j++) {
			if (!mib[j])
				continue;
			if (mib[i] > mib[j])
				return coloc_err_set(
					err, -EINVAL,
					"%s %llu MiB is above %s %llu MiB, which holds it: "
					"lower the first or raise the second",
					flag[i], (unsigned long long)mib[i], flag[j],
					(unsigned long long)mib[j]);
			break;
		}
	if (c->memory_all_max && c->memory_per_uid_max > SANDBOX_MEMBERS_MEMORY(c->memory_all_max))
		return coloc_err_set(err, -EINVAL,
				     "--max-executor-mib-per-uid %llu MiB is above the members' part "
				     "of --max-executor-mib, %llu MiB: lower the first",
				     (unsigned long long)(c->memory_per_uid_max >> 20),
				     (unsigned long long)(SANDBOX_MEMBERS_MEMORY(c->memory_all_max) >>
							  20));
	return 0;
}

/* "N MiB WHAT together" for the start-up line, or "no bound on WHAT together". */
static void describe_bound(char *buf, size_t len, uint64_t max, const char *what)
{
	if (max)
		snprintf(buf, len, "%llu MiB %s together", (unsigned long long)(max >> 20), what);
	else
		snprintf(buf, len, "no bound on %s together", what);
}

int sandbox_create(const struct sandbox_config *cfg, struct sandbox **out, struct coloc_err *err)
{
	struct coloc_err cerr = { 0 };
	struct sandbox *sb;
	char cpu[512], per_uid[96], members[128], all[96];
	int ret = 0, n;

	*out = NULL;
	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	sb->cfg = *cfg;
	sb->slot.fd = -1;
	if (!sb->cfg.uid_first && !sb->cfg.uid_last) {
		ret = uid_slot_claim(cfg->uid_lock_dir, SANDBOX_DEFAULT_UID_FIRST,
				     SANDBOX_DEFAULT_UID_LAST, &sb->slot, err);
		if (ret)
			goto fail;
		sb->cfg.uid_first = sb->slot.first;
		sb->cfg.uid_last = sb->slot.last;
	}
	if (!sb->cfg.memory_max)
		sb->cfg.memory_max = SANDBOX_DEFAULT_MEMORY_MIB << 20;
	if (!sb->cfg.uid_first || sb->cfg.uid_last < sb->cfg.uid_first ||
	    sb->cfg.uid_last > 0x7fffffffu || sb->cfg.uid_last == 65534) {
		ret = coloc_err_set(err, -EINVAL,
				    "the uid range %u-%u is not within 1-2147483647 or is reversed",
				    sb->cfg.uid_first, sb->cfg.uid_last);
		goto fail;
	}
	ret = check_memory_bounds(&sb->cfg, err);
	if (ret)
		goto fail;
	describe_bound(per_uid, sizeof(per_uid), sb->cfg.memory_per_uid_max,
		       "a user's (not root's) tenants");
	describe_bound(members, sizeof(members), SANDBOX_MEMBERS_MEMORY(sb->cfg.memory_all_max),
		       "members' (not root's) tenants");
	describe_bound(all, sizeof(all), sb->cfg.memory_all_max, "all executors");
	ret = uid_known_new(sb->cfg.uid_first, sb->cfg.uid_last, &sb->known, err);
	if (ret)
		goto fail;
	sb->next_uid = sb->cfg.uid_first;
	if (cfg->no_cgroups)
		snprintf(sb->cg_missing, sizeof(sb->cg_missing), "no cgroup (turned off)");
	else if (cgroup_root_open(&sb->cg, cfg->cgroup_base, &cerr))
		snprintf(sb->cg_missing, sizeof(sb->cg_missing), "no cgroup (%s)",
			 coloc_err_str(&cerr));
	if (sb->cg_missing[0] && !cfg->allow_weak) {
		ret = coloc_err_set(err, -ENODEV,
				    "%s; colocd --allow-weak-isolation runs tenants without one",
				    sb->cg_missing);
		goto fail;
	}
	if (!sb->cg_missing[0] && sb->cfg.memory_all_max &&
	    (ret = cgroup_memory_root_limit(&sb->cg, sb->cfg.memory_all_max, err))) {
		coloc_err_prefix(err, "all executors' memory (--max-executor-mib)");
		goto fail;
	}
	ret = check_kill(sb, err);
	if (ret)
		goto fail;
	n = snprintf(sb->describe, sizeof(sb->describe), "executors: a uid of their own in %u-%u ",
		     sb->cfg.uid_first, sb->cfg.uid_last);
	if (sb->slot.fd >= 0)
		n += snprintf(sb->describe + n, sizeof(sb->describe) - (size_t)n,
			      "(slot %d of %d, held by %s", sb->slot.index, UID_SLOT_COUNT,
			      sb->slot.path);
	else
		n += snprintf(sb->describe + n, sizeof(sb->describe) - (size_t)n, "(--uid-range");
	n += snprintf(sb->describe + n, sizeof(sb->describe) - (size_t)n,
		      "; %u of them a user's, a group's or running); ", uid_known_count(sb->known));
	if (sb->cg_missing[0])
		n += snprintf(sb->describe + n, sizeof(sb->describe) - (size_t)n, "%s",
			      sb->cg_missing);
	else
		n += snprintf(sb->describe + n, sizeof(sb->describe) - (size_t)n,
			      "%s, under %s, %llu MiB a tenant, %s, %s, %s, %s",
			      cgroup_mode_name(sb->cg.mode), sb->cg.dir[0],
			      (unsigned long long)(sb->cfg.memory_max >> 20), per_uid, members, all,
			      cgroup_cpu_describe(&sb->cg, cpu, sizeof(cpu)));
	n += snprintf(sb->describe + n, sizeof(sb->describe) - (size_t)n, "; %s", sb->kill_how);
	if (cfg->no_namespaces)
		n += snprintf(sb->describe + n, sizeof(sb->describe) - (size_t)n,
			      "; no namespaces (turned off)");
	if (cfg->allow_weak)
		snprintf(sb->describe + n, sizeof(sb->describe) - (size_t)n,
			 "; weak isolation allowed");
	*out = sb;
	return 0;
fail:
	sandbox_free(sb);
	return ret;
}

void sandbox_free(struct sandbox *sb)
{
	if (!sb)
		return;
	for (int i = 0; i < SANDBOX_MAX_TENANTS; i++)
		if (sb->tenants[i].used || sb->tenants[i].lingering)
			cgroup_tenant_remove(&sb->tenants[i].cg);
	cgroup_root_close(&sb->cg);
	uid_known_free(sb->known);
	uid_slot_release(&sb->slot);
	free(sb);
}

const char *sandbox_describe(const struct sandbox *sb)
{
	return sb->describe;
}

static struct sandbox_tenant *find(const struct sandbox *sb, const char *name)
{
	for (int i = 0; i < SANDBOX_MAX_TENANTS; i++)
		if (sb->tenants[i].used && !strcmp(sb->tenants[i].name, name))
			return (struct sandbox_tenant *)&sb->tenants[i];
	return NULL;
}

static bool uid_taken(const struct sandbox *sb, uid_t uid)
{
	for (int i = 0; i < SANDBOX_MAX_TENANTS; i++)
		if (sb->tenants[i].used && sb->tenants[i].uid == uid)
			return true;
	/* a user or group of the system (NSS), or running processes: the bitmap of uid_known.h */
	return uid_known_has(sb->known, uid);
}

static int pick_uid(struct sandbox *sb, uid_t *out)
{
	uint64_t span = (uint64_t)sb->cfg.uid_last - sb->cfg.uid_first + 1;

	for (uint64_t tried = 0; tried < span && tried < 65536; tried++) {
		uid_t uid = sb->next_uid;

		sb->next_uid = uid == sb->cfg.uid_last ? sb->cfg.uid_first : uid + 1;
		if (!uid_taken(sb, uid)) {
			*out = uid;
			return 0;
		}
	}
	return -EUSERS;
}

/* "0-3,8" from CPU ids in any order. */
static void format_cpus(const int *cpus, int nr, char *buf, size_t len)
{
	static bool set[COLOC_MAX_CPUS];
	size_t n = 0;

	memset(set, 0, sizeof(set));
	buf[0] = '\0';
	for (int i = 0; i < nr; i++)
		if (cpus[i] >= 0 && cpus[i] < COLOC_MAX_CPUS)
			set[cpus[i]] = true;
	for (int c = 0; c < COLOC_MAX_CPUS && n < len; c++) {
		int end = c;

		if (!set[c])
			continue;
		while (end + 1 < COLOC_MAX_CPUS && set[end + 1])
			end++;
		n += (size_t)snprintf(buf + n, len - n, end > c ? "%s%d-%d" : "%s%d", n ? "," : "",
				      c, end);
		c = end;
	}
}

int sandbox_tenant_open(struct sandbox *sb, const char *name, uid_t owner, struct coloc_err *err)
{
	struct cgroup_memory mem = {
		.tenant_max = sb->cfg.memory_max,
		.owner = owner,
		.members_max = owner ? SANDBOX_MEMBERS_MEMORY(sb->cfg.memory_all_max) : 0
	};
	struct sandbox_tenant *t = NULL;
	int ret, n;

	if (find(sb, name))
		return coloc_err_set(err, -EEXIST, "tenant %s has a sandbox already", name);
	/* the same name's lingering folders first (taken over), then a free slot, then any */
	for (int i = 0; i < SANDBOX_MAX_TENANTS && !t; i++)
		if (sb->tenants[i].lingering && !strcmp(sb->tenants[i].name, name))
			t = &sb->tenants[i];
	for (int i = 0; i < SANDBOX_MAX_TENANTS && !t; i++)
		if (!sb->tenants[i].used && !sb->tenants[i].lingering)
			t = &sb->tenants[i];
	for (int i = 0; i < SANDBOX_MAX_TENANTS && !t; i++)
		if (!sb->tenants[i].used)
			t = &sb->tenants[i];
	if (!t)
		return coloc_err_set(err, -EUSERS, "no room for another tenant's sandbox");
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	ret = pick_uid(sb, &t->uid);
	if (ret) {
		uid_known_refresh(sb->known);
		return coloc_err_set(
			err, ret,
			"tenant %s: every uid of %u-%u is a user's, a group's, running "
			"or another tenant's; colocd now looks again which are taken: "
			"try again shortly, or give it more (colocd --uid-range)",
			name, sb->cfg.uid_first, sb->cfg.uid_last);
	}
	t->owner = owner;
	if (sb->cg.nr) {
		/* root is held to the global limits only, as in every per-uid quota */
		mem.owner_max = owner ? sb->cfg.memory_per_uid_max : 0;
		ret = cgroup_tenant_create(&sb->cg, name, sb->cfg.cores ?: "", &mem, &t->cg, err);
		if (ret)
			return coloc_err_prefix(err, "tenant %s", name);
		cgroup_tenant_memory_events(&sb->cg, &t->cg, &t->mem0);
	}
	n = snprintf(t->describe, sizeof(t->describe), "uid %u", t->uid);
	if (sb->cg.nr)
		snprintf(t->describe + n, sizeof(t->describe) - (size_t)n, ", %s",
			 cgroup_mode_name(sb->cg.mode));
	else
		snprintf(t->describe + n, sizeof(t->describe) - (size_t)n, ", %s", sb->cg_missing);
	t->used = true;
	return 0;
}

void sandbox_tenant_close(struct sandbox *sb, const char *name)
{
	struct sandbox_tenant *t = find(sb, name);

	if (!t)
		return;
	t->lingering = cgroup_tenant_remove(&t->cg) > 0;
	t->used = false;
}

int sandbox_tick(struct sandbox *sb)
{
	int left = 0;

	for (int i = 0; sb && i < SANDBOX_MAX_TENANTS; i++) {
		struct sandbox_tenant *t = &sb->tenants[i];

		if (t->lingering && !t->used)
			t->lingering = cgroup_tenant_remove(&t->cg) > 0;
		left += t->lingering;
	}
	return left;
}

int sandbox_tenant_spawn_opts(struct sandbox *sb, const char *name, struct execproc_opts *o,
			      struct coloc_err *err)
{
	struct sandbox_tenant *t = find(sb, name);
	int ret;

	if (!t)
		return coloc_err_set(err, -ENOENT, "tenant %s has no sandbox", name);
	ret = t->cg.nr ? cgroup_tenant_set_cpus(&t->cg, t->cg.initial, err) : 0;
	if (ret < 0)
		return ret;
	o->uid = t->uid;
	o->gid = (gid_t)t->uid;
	/* v2: the executor joins its leaf only, the tenant's folder holds leaves */
	o->cgroup_fds = t->cg.procs_fd;
	o->nr_cgroup_fds = sb->cg.mode == CGROUP_V1 ? t->cg.nr : 0;
	o->cgroup_leaf_parent = t->cg.kill_dir[0] ? t->cg.kill_dir : NULL;
	o->max_address_space = 4 * sb->cfg.memory_max;
	o->no_namespaces = sb->cfg.no_namespaces;
	o->allow_weak_isolation = sb->cfg.allow_weak;
	return 0;
}

int sandbox_tenant_set_cpus(struct sandbox *sb, const char *name, const int *cpus, int nr,
			    struct coloc_err *err)
{
	struct sandbox_tenant *t = find(sb, name);
	char list[CGROUP_CPUS_LEN];

	if (!t || !t->cg.nr || nr <= 0)
		return 0;
	format_cpus(cpus, nr, list, sizeof(list));
	return cgroup_tenant_set_cpus(&t->cg, list, err);
}

int sandbox_tenant_set_idle(struct sandbox *sb, const char *name, bool idle,
			    struct coloc_err *err)
{
	struct sandbox_tenant *t = find(sb, name);

	if (!t || !t->cg.nr)
		return 0;
	return cgroup_tenant_set_idle(&t->cg, &sb->cg, idle, err);
}

int sandbox_tenant_set_late(struct sandbox *sb, const char *name, bool late,
			    struct coloc_err *err)
{
	struct sandbox_tenant *t = find(sb, name);

	if (!t || !t->cg.nr)
		return 0;
	return cgroup_tenant_set_late(&t->cg, &sb->cg, late, err);
}

int sandbox_tenant_cpu_wait(const struct sandbox *sb, const char *name, uint64_t *ns)
{
	const struct sandbox_tenant *t = find(sb, name);

	if (!t || !t->cg.nr)
		return -ENOENT;
	return cgroup_tenant_cpu_wait(&t->cg, ns);
}

int sandbox_tenant_oom_killed(const struct sandbox *sb, const char *name, char *buf, size_t len)
{
	const struct sandbox_tenant *t = find(sb, name);
	struct cgroup_memory_events ev;

	if (!t || !t->cg.nr || cgroup_tenant_memory_events(&sb->cg, &t->cg, &ev) ||
	    ev.oom_kills <= t->mem0.oom_kills)
		return 0;
	if (ev.tenant_max > t->mem0.tenant_max)
		snprintf(buf, len,
			 "out of memory at its tenant's limit (%llu MiB, --executor-memory)",
			 (unsigned long long)(sb->cfg.memory_max >> 20));
	else if (ev.owner_max > t->mem0.owner_max && t->owner)
		snprintf(buf, len,
			 "out of memory at uid %u's tenants' limit (%llu MiB together, "
			 "--max-executor-mib-per-uid)",
			 (unsigned int)t->owner,
			 (unsigned long long)(sb->cfg.memory_per_uid_max >> 20));
	else if (ev.members_max > t->mem0.members_max && t->owner)
		snprintf(buf, len,
			 "out of memory at members' part of all executors' limit (%llu MiB "
			 "together, three quarters of --max-executor-mib: the rest is root's)",
			 (unsigned long long)(SANDBOX_MEMBERS_MEMORY(sb->cfg.memory_all_max) >> 20));
	else if (ev.all_max > t->mem0.all_max && sb->cfg.memory_all_max)
		snprintf(buf, len,
			 "out of memory at all executors' limit (%llu MiB, --max-executor-mib)",
			 (unsigned long long)(sb->cfg.memory_all_max >> 20));
	else
		snprintf(buf, len, "out of memory: the machine's (the kernel's OOM killer)");
	return 1;
}

const char *sandbox_tenant_describe(const struct sandbox *sb, const char *name)
{
	const struct sandbox_tenant *t = find(sb, name);

	return t ? t->describe : "";
}

int sandbox_refresh_uids(struct sandbox *sb)
{
	return uid_known_refresh(sb->known);
}

uid_t sandbox_tenant_uid(const struct sandbox *sb, const char *name)
{
	const struct sandbox_tenant *t = find(sb, name);

	return t ? t->uid : 0;
}
