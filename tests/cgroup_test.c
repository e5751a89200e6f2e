// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tenant cgroups (daemon/cgroup.h) made while signals keep arriving, as
 * they do in colocd (executors exit, timers fire): the kernel refuses a
 * memory limit's write with EINTR whenever a signal is pending, and a
 * tenant must not be refused for that. A member's tenants in the folder
 * that bounds their memory together; no other user enters their folders
 * (they show pids, CPU time, memory). Real cgroups under a folder of
 * this test's own; skips without root or a layout with cpuset and memory.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "cgroup.h"
#include "cgroup_leaf.h"
#include "cgroup_parents.h"

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

TEST(tenant_create__a_signal_storm_refuses_no_memory_limit)
{
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	struct itimerval every = { { 0, 20 }, { 0, 20 } }, off = { 0 };
	struct coloc_err err = { 0 };
	struct cgroup_root r;
	char base[64], bases[CGROUP_MAX_HIER + 1][PATH_MAX];
	int nr, failed = 0, made = 0;

	if (geteuid() != 0)
		SKIP(return, "needs root to make cgroups");
	snprintf(base, sizeof(base), "coloc-cgroup-test-%d", getpid());
	if (cgroup_root_open(&r, base, &err))
		SKIP(return, "no tenant cgroups here: %s", coloc_err_str(&err));
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &every, NULL));
	for (int i = 0; i < 300; i++) {
		struct cgroup_tenant t;
		char name[32];
		struct cgroup_memory mem = { .tenant_max = (64ull + i) << 20,
					     .owner = 64990,
					     .owner_max = (128ull + i) << 20 };

		snprintf(name, sizeof(name), "t%d", i);
		if (cgroup_tenant_create(&r, name, NULL, &mem, &t, &err)) {
			if (!failed++)
				TH_LOG("tenant %s: %s", name, coloc_err_str(&err));
		} else {
			made++;
			cgroup_tenant_remove(&t);
		}
	}
	setitimer(ITIMER_REAL, &off, NULL);
	nr = cgroup_root_parents(&r, bases);
	cgroup_root_close(&r);
	for (int i = 0; i < nr; i++)
		rmdir(bases[i]);
	TH_LOG("%d tenants made, %d refused, %d signals while making them", made, failed,
	       (int)alarms);
	EXPECT_EQ(0, failed);
	EXPECT_LT(100, alarms);
}

/* The value of t's cpu folder's file, or -1. */
static int read_cpu_file(const struct cgroup_root *r, const struct cgroup_tenant *t,
			 const char *file)
{
	char path[PATH_MAX + 64];
	FILE *f;
	int v = -1;

	snprintf(path, sizeof(path), "%s/%s", t->dir[r->cpu_hier], file);
	f = fopen(path, "re");
	if (f && fscanf(f, "%d", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

static void write_cpu_file(const struct cgroup_root *r, const struct cgroup_tenant *t,
			   const char *file, const char *val)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", t->dir[r->cpu_hier], file);
	f = fopen(path, "we");
	if (f) {
		fputs(val, f);
		fclose(f);
	}
}

/*
 * A tenant's cpu folder starts idle (before its first block) and follows
 * cgroup_tenant_set_idle, which writes only on a change: a value put in
 * the file behind its back stays until the state changes.
 */
TEST(tenant_idle__starts_idle_and_writes_only_on_a_change)
{
	struct coloc_err err = { 0 };
	struct cgroup_root r;
	struct cgroup_tenant t;
	char base[64], bases[CGROUP_MAX_HIER + 1][PATH_MAX], cpu[512];
	const char *file;
	int nr, on, off;

	if (geteuid() != 0)
		SKIP(return, "needs root to make cgroups");
	snprintf(base, sizeof(base), "coloc-cgroup-idle-test-%d", getpid());
	if (cgroup_root_open(&r, base, &err))
		SKIP(return, "no tenant cgroups here: %s", coloc_err_str(&err));
	TH_LOG("%s", cgroup_cpu_describe(&r, cpu, sizeof(cpu)));
	if (r.cpu_hier < 0) {
		cgroup_root_close(&r);
		SKIP(return, "no cpu controller here: %s", r.cpu_missing);
	}
	file = r.idle_file;
	on = atoi(r.idle_on);
	off = atoi(r.idle_off);
	ASSERT_EQ(0, cgroup_tenant_create(&r, "idle", NULL, &(struct cgroup_memory){ 0 }, &t, &err))
	TH_LOG("%s", err.msg);
	EXPECT_EQ(on, read_cpu_file(&r, &t, file));
	EXPECT_EQ(0, cgroup_tenant_set_idle(&t, &r, true, &err));
	EXPECT_EQ(1, cgroup_tenant_set_idle(&t, &r, false, &err)) TH_LOG("%s", err.msg);
	EXPECT_EQ(off, read_cpu_file(&r, &t, file));
	/* busy again: no write (the value put behind its back stays) */
	write_cpu_file(&r, &t, file, r.idle_on);
	EXPECT_EQ(0, cgroup_tenant_set_idle(&t, &r, false, &err));
	EXPECT_EQ(on, read_cpu_file(&r, &t, file));
	EXPECT_EQ(1, cgroup_tenant_set_idle(&t, &r, true, &err));
	EXPECT_EQ(1, cgroup_tenant_set_idle(&t, &r, false, &err));
	EXPECT_EQ(off, read_cpu_file(&r, &t, file));
	EXPECT_EQ(1, cgroup_tenant_set_idle(&t, &r, true, &err));
	EXPECT_EQ(on, read_cpu_file(&r, &t, file));
	EXPECT_EQ(0, cgroup_tenant_remove(&t));
	nr = cgroup_root_parents(&r, bases);
	cgroup_root_close(&r);
	for (int i = 0; i < nr; i++)
		rmdir(bases[i]);
}

/* memory.max (v2) or memory.limit_in_bytes (v1) of dir, in bytes; 0 if unread. */
static unsigned long long memory_limit(const struct cgroup_root *r, const char *dir)
{
	char path[PATH_MAX + 64];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir,
		 r->mode == CGROUP_V2 ? "memory.max" : "memory.limit_in_bytes");
	f = fopen(path, "re");
	if (f && fscanf(f, "%llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

/*
 * Two tenants of one owner share its uid-U folder, whose limit bounds
 * them together, a third owner's tenant has a folder of its own; each
 * tenant keeps its own limit below; the owners' folders sit in colocd-PID,
 * whose limit bounds them all; the owner's folder goes with its last
 * tenant.
 */
TEST(tenant_create__one_owners_tenants_in_a_folder_whose_limit_bounds_them)
{
	struct cgroup_memory a = { 128ull << 20, 64990, 256ull << 20, 0 },
			     b = { 64ull << 20, 64991, 192ull << 20, 0 };
	struct coloc_err err = { 0 };
	struct cgroup_root r;
	struct cgroup_tenant t[3];
	char base[64], bases[CGROUP_MAX_HIER + 1][PATH_MAX], owner[PATH_MAX];
	int nr;

	if (geteuid() != 0)
		SKIP(return, "needs root to make cgroups");
	snprintf(base, sizeof(base), "coloc-cgroup-owner-test-%d", getpid());
	if (cgroup_root_open(&r, base, &err))
		SKIP(return, "no tenant cgroups here: %s", coloc_err_str(&err));
	ASSERT_EQ(0, cgroup_memory_root_limit(&r, 512ull << 20, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, cgroup_tenant_create(&r, "a1", NULL, &a, &t[0], &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, cgroup_tenant_create(&r, "a2", NULL, &a, &t[1], &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, cgroup_tenant_create(&r, "b1", NULL, &b, &t[2], &err)) TH_LOG("%s", err.msg);
	for (int i = 0; i < 3; i++) {
		const struct cgroup_memory *m = i < 2 ? &a : &b;
		char want[64];

		ASSERT_LE(0, t[i].mem_hier);
		snprintf(want, sizeof(want), "/uid-%u", m->owner);
		EXPECT_EQ(0, strcmp(t[i].owner_dir + strlen(t[i].owner_dir) - strlen(want), want))
		TH_LOG("owner folder %s", t[i].owner_dir);
		EXPECT_EQ(0,
			  strncmp(t[i].dir[t[i].mem_hier], t[i].owner_dir, strlen(t[i].owner_dir)))
		TH_LOG("%s is not in %s", t[i].dir[t[i].mem_hier], t[i].owner_dir);
		EXPECT_EQ(m->owner_max, memory_limit(&r, t[i].owner_dir));
		EXPECT_EQ(m->tenant_max, memory_limit(&r, t[i].dir[t[i].mem_hier]));
	}
	EXPECT_STREQ(t[0].owner_dir, t[1].owner_dir);
	EXPECT_STRNE(t[0].owner_dir, t[2].owner_dir);
	snprintf(owner, sizeof(owner), "%s", t[0].owner_dir);
	*strrchr(owner, '/') = '\0';
	EXPECT_EQ(512ull << 20, memory_limit(&r, owner)) TH_LOG("the folder above: %s", owner);
	snprintf(owner, sizeof(owner), "%s", t[0].owner_dir);
	EXPECT_EQ(0, cgroup_tenant_remove(&t[0]));
	EXPECT_EQ(0, access(owner, F_OK)) TH_LOG("%s went before its last tenant", owner);
	EXPECT_EQ(0, cgroup_tenant_remove(&t[1]));
	EXPECT_EQ(-1, access(owner, F_OK)) TH_LOG("%s stayed after its last tenant", owner);
	EXPECT_EQ(0, cgroup_tenant_remove(&t[2]));
	nr = cgroup_root_parents(&r, bases);
	cgroup_root_close(&r);
	for (int i = 0; i < nr; i++)
		rmdir(bases[i]);
}

/*
 * With a members' part (members_max), each member's uid-U sits in
 * members/, whose limit bounds them together; root's uid-0 sits beside
 * it, in colocd-PID, bounded by colocd-PID's only; members/ goes with the
 * last member's tenant.
 */
TEST(tenant_create__members_in_a_folder_whose_limit_bounds_them_root_beside_it)
{
	const struct cgroup_memory m[3] = { { 128ull << 20, 64990, 256ull << 20, 384ull << 20 },
					    { 128ull << 20, 64991, 256ull << 20, 384ull << 20 },
					    { 128ull << 20, 0, 0, 0 } };
	struct coloc_err err = { 0 };
	struct cgroup_root r;
	struct cgroup_tenant t[3];
	char base[64], bases[CGROUP_MAX_HIER + 1][PATH_MAX], above[PATH_MAX], members[PATH_MAX];
	int nr;

	if (geteuid() != 0)
		SKIP(return, "needs root to make cgroups");
	snprintf(base, sizeof(base), "coloc-cgroup-members-test-%d", getpid());
	if (cgroup_root_open(&r, base, &err))
		SKIP(return, "no tenant cgroups here: %s", coloc_err_str(&err));
	ASSERT_EQ(0, cgroup_memory_root_limit(&r, 512ull << 20, &err)) TH_LOG("%s", err.msg);
	for (int i = 0; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "t%d", i);
		ASSERT_EQ(0, cgroup_tenant_create(&r, name, NULL, &m[i], &t[i], &err))
		TH_LOG("%s", err.msg);
		ASSERT_LE(0, t[i].mem_hier);
		snprintf(above, sizeof(above), "%s", t[i].owner_dir);
		*strrchr(above, '/') = '\0';
		if (i < 2) {
			EXPECT_EQ(0, strcmp(above + strlen(above) - 8, "/members"))
			TH_LOG("%s", above);
			EXPECT_STREQ(above, t[i].members_dir);
			EXPECT_EQ(384ull << 20, memory_limit(&r, above));
		} else {
			EXPECT_STREQ("", t[i].members_dir);
			EXPECT_EQ(512ull << 20, memory_limit(&r, above))
			TH_LOG("root's uid-0 is in %s", above);
		}
	}
	snprintf(members, sizeof(members), "%s", t[0].members_dir);
	EXPECT_EQ(0, cgroup_tenant_remove(&t[0]));
	EXPECT_EQ(0, access(members, F_OK))
	TH_LOG("%s went before the last member's tenant", members);
	EXPECT_EQ(0, cgroup_tenant_remove(&t[1]));
	EXPECT_EQ(-1, access(members, F_OK)) TH_LOG("%s stayed after the last member's", members);
	EXPECT_EQ(0, cgroup_tenant_remove(&t[2]));
	nr = cgroup_root_parents(&r, bases);
	cgroup_root_close(&r);
	for (int i = 0; i < nr; i++)
		rmdir(bases[i]);
}


/* 0 when uid 65534 cannot list dir nor read its cgroup.procs, else what it could do. */
static int nobody_reads(const char *dir)
{
	char path[PATH_MAX + 16];
	int status;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(9);
		if (open(path, O_RDONLY | O_CLOEXEC) >= 0)
			_exit(1);
		if (errno != EACCES)
			_exit(8);
		if (opendir(dir))
			_exit(2);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

TEST(tenant_create__no_other_user_enters_its_folders)
{
	struct cgroup_memory m = { 64ull << 20, 64990, 128ull << 20, 256ull << 20 };
	struct coloc_err err = { 0 };
	struct cgroup_root r;
	struct cgroup_tenant t;
	struct cgroup_leaf leaf;
	char base[64], bases[CGROUP_MAX_HIER + 1][PATH_MAX];
	int nr;

	if (geteuid() != 0)
		SKIP(return, "needs root to make cgroups");
	snprintf(base, sizeof(base), "coloc-cgroup-private-test-%d", getpid());
	if (cgroup_root_open(&r, base, &err))
		SKIP(return, "no tenant cgroups here: %s", coloc_err_str(&err));
	ASSERT_EQ(0, cgroup_tenant_create(&r, "secret", NULL, &m, &t, &err)) TH_LOG("%s", err.msg);
	cgroup_leaf_init(&leaf);
	if (t.kill_dir[0])
		ASSERT_EQ(0, cgroup_leaf_create(t.kill_dir, &leaf, &err)) TH_LOG("%s", err.msg);
	for (int i = 0; i < t.nr; i++) {
		EXPECT_EQ(0, nobody_reads(t.dir[i])) TH_LOG("uid 65534 reads %s", t.dir[i]);
	}
	for (int i = 0; i < r.nr; i++) {
		EXPECT_EQ(0, nobody_reads(r.dir[i])) TH_LOG("uid 65534 reads %s", r.dir[i]);
	}
	if (t.owner_dir[0])
		EXPECT_EQ(0, nobody_reads(t.owner_dir)) TH_LOG("uid 65534 reads %s", t.owner_dir);
	if (t.members_dir[0])
		EXPECT_EQ(0, nobody_reads(t.members_dir)) TH_LOG("uid 65534 reads %s", t.members_dir);
	if (t.kill_dir[0])
		EXPECT_EQ(0, nobody_reads(t.kill_dir)) TH_LOG("uid 65534 reads %s", t.kill_dir);
	if (leaf.dir[0]) {
		EXPECT_EQ(0, nobody_reads(leaf.dir)) TH_LOG("uid 65534 reads %s", leaf.dir);
		EXPECT_EQ(0, cgroup_leaf_remove(&leaf));
	}
	EXPECT_EQ(0, cgroup_tenant_remove(&t));
	nr = cgroup_root_parents(&r, bases);
	cgroup_root_close(&r);
	for (int i = 0; i < nr; i++)
		rmdir(bases[i]);
}


TEST_HARNESS_MAIN
