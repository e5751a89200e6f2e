// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd against a busy host (daemon/serving_cpu_wait.c): an honest
 * executor whose block waits for a CPU is neither killed as hung nor
 * failed. A real colocd serving one CPU (itself moved off it once
 * started, so that only the executor starves) runs the real executor;
 * spinners at nice 0, pinned on that CPU in a cgroup beside the tenant's at
 * the highest weight, leave the block ~1/256 of the CPU at the tenant's
 * default weight and ~1/131000 once late (the lowest weight), for longer
 * than the late block's hang limit (2 x (50x its prediction + 2 s)). On
 * main colocd killed the executor as hung; here the deadline moves by its
 * threads' run delay, and the query is answered once the spinners stop;
 * starved without end, it is killed at the cap, 4x the limit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "mono_clock.h"
#include "own_colocd.h"
#include "proc_tasks.h"
#include "testutil.h"

#define READY_S 180
#define SPINNERS 2
/* past a 6-40 ms block's late hang limit (4.6-8 s), short of 4x it */
#define STARVE_S 12

static char cache_dir[64];

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("serving-cpu-wait-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(starved)
{
	struct own_colocd d;
	int served; /* the one CPU colocd serves */
	char starver[PATH_MAX]; /* the spinners' cgroup, "" until made */
	struct tu_spinner spin[SPINNERS];
};

FIXTURE_SETUP(starved)
{
	char why[8192];
	cpu_set_t all, one, rest;
	int r;

	ASSERT_EQ(0, sched_getaffinity(0, sizeof(all), &all));
	if (CPU_COUNT(&all) < 2)
		SKIP(return, "one CPU: colocd would starve beside its executor");
	r = own_colocd_prepare(&self->d, "cpuwait", cache_dir, false, why, sizeof(why));
	if (r > 0)
		SKIP(return, "%.900s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	for (self->served = 0; !CPU_ISSET(self->served, &all); self->served++)
		;
	CPU_ZERO(&one);
	CPU_SET(self->served, &one);
	rest = all;
	CPU_CLR(self->served, &rest);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	own_colocd_start(&self->d, NULL);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(all), &all));
	ASSERT_LT(0, self->d.pid) TH_LOG("colocd did not start");
	/* colocd keeps serving the one CPU it started on, off it itself */
	ASSERT_EQ(0, tu_tasks_pin(self->d.pid, &rest));
}

FIXTURE_TEARDOWN(starved)
{
	for (int i = 0; i < SPINNERS; i++)
		tu_kill(&self->spin[i]);
	if (self->starver[0] && rmdir(self->starver))
		TH_LOG("could not remove %s: %s", self->starver, strerror(errno));
	if (own_colocd_finish(&self->d))
		TH_LOG("could not remove %s", self->d.dir);
}

/* Submits tenant name and waits until it is ready: its executor's pid, 0 if never. */
static pid_t submit_ready(FIXTURE_DATA(starved) * self, const char *name)
{
	char args[PATH_MAX + 128], out[16384];
	const char *pid;

	snprintf(args, sizeof(args), "submit %s %s --qos-ms 60000", name, self->d.model);
	if (tu_colocctl(self->d.sock, args, out, sizeof(out)))
		return 0;
	snprintf(args, sizeof(args), "status %s --json", name);
	for (int i = 0; i < READY_S * 10; i++, usleep(100000))
		if (!tu_colocctl(self->d.sock, args, out, sizeof(out)) &&
		    strstr(out, "\"state\":\"ready\"") && (pid = strstr(out, "\"pid\":")))
			return (pid_t)atoi(pid + 6);
	return 0;
}

/*
 * Makes a cgroup beside pid's tenant folder (v1: its folder in the cpu
 * hierarchy; v2: the parent of its leaf) at the highest weight, into dir:
 * 0, or -errno.
 */
static int make_starver(pid_t pid, char *dir, size_t len)
{
	char cg[PATH_MAX], file[PATH_MAX + 32], *parent = cg;
	bool v1 = !tu_proc_cgroup(pid, "cpu", cg, sizeof(cg));
	const char *weight = v1 ? "cpu.shares" : "cpu.weight", *max = v1 ? "262144" : "10000";

	if (!v1 && tu_proc_cgroup(pid, "", cg, sizeof(cg)))
		return -ENOENT;
	if (!v1)
		parent = dirname(parent);
	parent = dirname(parent);
	snprintf(dir, len, "/sys/fs/cgroup%s%s/starver-%d", v1 ? "/cpu" : "", parent,
		 (int)getpid());
	if (mkdir(dir, 0755))
		return -errno;
	snprintf(file, sizeof(file), "%s/%s", dir, weight);
	return tu_write_file(file, max, strlen(max));
}

/* Starts the spinners in cgroup dir, pinned on cpu at nice 0. 0 or -errno. */
static int start_spinners(struct tu_spinner *spin, const char *dir, int cpu)
{
	char file[PATH_MAX + 32], pid[16];
	int ret;

	snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
	for (int i = 0; i < SPINNERS; i++) {
		ret = tu_spawn_spinner(&spin[i], cpu, 1000, 0);
		if (ret)
			return ret;
		snprintf(pid, sizeof(pid), "%d", (int)spin[i].pid);
		if (setpriority(PRIO_PROCESS, (id_t)spin[i].pid, 0))
			return -errno;
		ret = tu_write_file(file, pid, strlen(pid));
		if (ret)
			return ret;
		tu_release(&spin[i]);
	}
	return 0;
}

/*
 * The tenant honest ready, one query of it answered, then its CPU given to
 * the spinners: 0, or -1 with why in out.
 */
static int starve_honest(FIXTURE_DATA(starved) * self, char *out, size_t len)
{
	pid_t honest = submit_ready(self, "honest");
	int ret;

	if (!honest) {
		snprintf(out, len, "honest was never ready");
		return -1;
	}
	if (tu_colocctl(self->d.sock, "infer honest", out, len))
		return -1;
	ret = make_starver(honest, self->starver, sizeof(self->starver));
	if (!ret)
		ret = start_spinners(self->spin, self->starver, self->served);
	if (ret)
		snprintf(out, len, "starving %s: %s", self->starver, strerror(-ret));
	return ret ? -1 : 0;
}

/*
 * The honest tenant's query, sent while its one CPU is starved: its
 * executor waits for a CPU past the late block's hang limit and is not
 * killed; the query is answered once the spinners stop, and the tenant is
 * still ready. On main it failed: "hung: ... (the limit is 50x + 2.0 s,
 * twice that once it overran): killed".
 */
TEST_F_TIMEOUT(starved, hang__a_block_waiting_for_a_cpu_is_not_killed, 300)
{
	const char *args[] = { "--socket", self->d.sock, "infer", "honest", NULL };
	char bin[PATH_MAX], out[16384];
	struct tu_child query;
	uint64_t t0, took;

	ASSERT_EQ(0, starve_honest(self, out, sizeof(out))) TH_LOG("%s", out);
	t0 = coloc_now_ns();
	ASSERT_EQ(0, tu_child_start(tu_bin("colocctl", bin, sizeof(bin)), args, &query));
	sleep(STARVE_S);
	for (int i = 0; i < SPINNERS; i++)
		tu_kill(&self->spin[i]);
	ASSERT_EQ(0, tu_child_finish(&query));
	took = coloc_now_ns() - t0;
	EXPECT_TRUE(tu_child_exited_with(&query, 0)) TH_LOG("%s", query.output);
	/* it did wait out the spinners: answered after they stopped, not before */
	EXPECT_LE((uint64_t)STARVE_S * 1000000000ull, took);
	ASSERT_EQ(0, tu_colocctl(self->d.sock, "status honest --json", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"state\":\"ready\"")) TH_LOG("%s", out);
	TH_LOG("the starved query took %.1f s", took / 1e9);
	EXPECT_EQ(0, tu_colocctl(self->d.sock, "infer honest", out, sizeof(out))) TH_LOG("%s", out);
}

/* The number after key in out, or -1. */
static double num_after(const char *out, const char *key)
{
	const char *p = strstr(out, key);

	return p ? atof(p + strlen(key)) : -1;
}

/*
 * Starved without end, the block is killed all the same, its deadline
 * moved by its wait but no further than SV_HANG_WAIT_CAP (4) x its late
 * hang limit: an executor that keeps its own threads waiting is not kept
 * for ever. The reason names the limit.
 */
TEST_F_TIMEOUT(starved, hang__a_block_that_waits_without_end_is_killed_at_the_cap, 300)
{
	char out[16384];
	double ran_ms, limit_ms;

	ASSERT_EQ(0, starve_honest(self, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_NE(0, tu_colocctl(self->d.sock, "infer honest", out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "hung: ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "waiting for a CPU")) TH_LOG("%s", out);
	ran_ms = num_after(out, " ran ");
	limit_ms = num_after(out, "(limit ");
	TH_LOG("killed after %.1f ms, the late hang limit %.1f ms", ran_ms, limit_ms);
	/* at least the smallest late limit: twice 50x a 1 us block + 2 s */
	ASSERT_LT(4000, limit_ms) TH_LOG("%s", out);
	/* moved by most of the wait (its first 8x of the table aside), not past the cap */
	EXPECT_LT(3 * limit_ms, ran_ms) TH_LOG("%s", out);
	EXPECT_GT(4 * limit_ms + 2000, ran_ms) TH_LOG("%s", out);
}

TEST_HARNESS_MAIN
