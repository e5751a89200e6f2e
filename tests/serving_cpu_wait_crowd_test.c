// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd against an executor that makes its own threads wait for a CPU
 * (daemon/serving_cpu_wait.c; review s25 HIGH 1): hostile-crowdN holds
 * each command N ms on two threads spinning on one core, each waiting for
 * the other half the time. Their summed run delay is the wall time; on
 * main colocd excused it as a busy host's, so the command, ending short of
 * SV_OVERRUN_WAIT_CAP x its bound, was never late: 0 overruns of 8, every
 * time. Here only the time other tasks had its cores is excused, so it is
 * late like hostile-loneN, the same hold on one thread. A real colocd
 * serving one CPU (itself moved off it once started); an honest tenant of
 * the same model (the real executor) says its solo time, the bound's base.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "own_colocd.h"
#include "proc_tasks.h"
#include "testutil.h"

#define READY_S 180
#define COMMANDS 8

static char cache_dir[64];

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("serving-cpu-wait-crowd-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(crowd)
{
	struct own_colocd d;
};

FIXTURE_SETUP(crowd)
{
	char why[8192];
	cpu_set_t all, one, rest;
	int served = 0, r;

	ASSERT_EQ(0, sched_getaffinity(0, sizeof(all), &all));
	if (CPU_COUNT(&all) < 2)
		SKIP(return, "one CPU: colocd would share it with the executors");
	r = own_colocd_prepare(&self->d, "crowd", cache_dir, true, why, sizeof(why));
	if (r > 0)
		SKIP(return, "%.900s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	while (!CPU_ISSET(served, &all))
		served++;
	CPU_ZERO(&one);
	CPU_SET(served, &one);
	rest = all;
	CPU_CLR(served, &rest);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	own_colocd_start(&self->d, NULL);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(all), &all));
	ASSERT_LT(0, self->d.pid) TH_LOG("colocd did not start");
	/* colocd keeps serving the one CPU it started on, off it itself */
	ASSERT_EQ(0, tu_tasks_pin(self->d.pid, &rest));
}

FIXTURE_TEARDOWN(crowd)
{
	if (own_colocd_finish(&self->d))
		TH_LOG("could not remove %s", self->d.dir);
}

static int submit_ready(FIXTURE_DATA(crowd) * self, const char *name)
{
	char args[PATH_MAX + 128], out[16384];

	snprintf(args, sizeof(args), "submit %s %s --qos-ms 60000", name, self->d.model);
	if (tu_colocctl(self->d.sock, args, out, sizeof(out)))
		return -1;
	snprintf(args, sizeof(args), "status %s --json", name);
	for (int i = 0; i < READY_S * 10; i++, usleep(100000))
		if (!tu_colocctl(self->d.sock, args, out, sizeof(out)) &&
		    strstr(out, "\"state\":\"ready\""))
			return 0;
	return -1;
}

/* The number after "key": in out, -1 if none. */
static double json_num(const char *out, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(out, pat);
	return p ? strtod(p + strlen(pat), NULL) : -1;
}

/*
 * Tenant name ready, COMMANDS queries of it sent: its overruns, -1 on
 * failure. A query may fail: a late command, at the lowest weight on a
 * loaded host, can starve past its hang limit and be killed (it was late).
 */
static long overruns_of(FIXTURE_DATA(crowd) * self, const char *name, char *out, size_t len)
{
	char args[128];

	if (submit_ready(self, name))
		return -1;
	snprintf(args, sizeof(args), "infer %s", name);
	for (int i = 0; i < COMMANDS; i++)
		if (tu_colocctl(self->d.sock, args, out, len))
			fprintf(stderr, "# %s: %s\n", name, out);
	snprintf(args, sizeof(args), "status %s --json", name);
	if (tu_colocctl(self->d.sock, args, out, len))
		return -1;
	return (long)json_num(out, "overruns");
}

/*
 * Each command of a whole query held until its threads ran 2x its bound
 * (8x the query's table, its solo time, + 10 ms) or for 2.8x it in wall
 * time, short of SV_OVERRUN_WAIT_CAP x it: on one thread it is late (unless
 * others starve it past that wall time: then the test cannot tell, and
 * skips); on two that wait for each other, late all the same.
 */
TEST_F_TIMEOUT(crowd, overrun__threads_that_wait_for_each_other_are_late_like_one, 600)
{
	char out[16384], lone[64], crowd[64];
	long hold_ms, over_lone, over_crowd;
	double solo_ms;

	ASSERT_EQ(0, submit_ready(self, "honest"));
	ASSERT_EQ(0, tu_colocctl(self->d.sock, "status honest --json", out, sizeof(out)));
	solo_ms = json_num(out, "solo_ms");
	ASSERT_LT(0, solo_ms) TH_LOG("%s", out);
	hold_ms = (long)(2 * (8 * solo_ms + 10));
	snprintf(lone, sizeof(lone), "hostile-lone%ld", hold_ms);
	snprintf(crowd, sizeof(crowd), "hostile-crowd%ld", hold_ms);

	over_lone = overruns_of(self, lone, out, sizeof(out));
	ASSERT_LE(0, over_lone) TH_LOG("%s: %s", lone, out);
	snprintf(out, sizeof(out), "remove %s", lone);
	ASSERT_EQ(0, tu_colocctl(self->d.sock, out, out, sizeof(out))) TH_LOG("%s", out);
	over_crowd = overruns_of(self, crowd, out, sizeof(out));
	ASSERT_LE(0, over_crowd) TH_LOG("%s: %s", crowd, out);
	TH_LOG("a query's table %.1f ms, held %ld ms a command: overruns of %d, lone %ld, crowd %ld",
	       solo_ms, hold_ms, COMMANDS, over_lone, over_crowd);
	if (!over_lone)
		SKIP(return, "the host starved hostile-lone (loaded): not one command of 8 was late");
	EXPECT_LT(0, over_crowd);
}

TEST_HARNESS_MAIN
