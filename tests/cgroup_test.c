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

TEST_HARNESS_MAIN
