// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tenant cgroups (daemon/cgroup.h) made while signals keep arriving, as
 * they do in colocd (executors exit, timers fire): the kernel refuses a
 * memory limit's write with EINTR whenever a signal is pending, and a
 * tenant must not be refused for that. Real cgroups under a folder of
 * this test's own; skips without root or a layout with cpuset and memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "cgroup.h"
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

		snprintf(name, sizeof(name), "t%d", i);
		if (cgroup_tenant_create(&r, name, NULL, (64ull + i) << 20, &t, &err)) {
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
	ASSERT_EQ(0, cgroup_tenant_create(&r, "idle", NULL, 0, &t, &err)) TH_LOG("%s", err.msg);
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

TEST_HARNESS_MAIN
