// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A profile's conditions (profile.h: how busy the machine was while it
 * was measured) and what they decide: the median and spread of the
 * whole-model runs worked out by hand, staleness against a fresh run by
 * hand, the record saved and read back and refused when malformed; and
 * bin/coloc-profile on a tiny model records them, refuses a profile made
 * on a machine busier than --busy-spread unless --force, and with
 * --verify-cache measures a cached profile again when the model no longer
 * runs as fast as it records (and reuses it when it does).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "testutil.h"
#include "model_open.h"
#include "profile_host.h"
#include "profile_tool.h"
#include "profile_one_cell.h"

FIXTURE(profile_fresh)
{
	char dir[64];
	char path[128];
	struct coloc_err err;
};

FIXTURE_SETUP(profile_fresh)
{
	ASSERT_EQ(0, tu_make_tmpdir("profile-fresh", self->dir, sizeof(self->dir)));
	snprintf(self->path, sizeof(self->path), "%s/p.profile", self->dir);
}

FIXTURE_TEARDOWN(profile_fresh)
{
	if (tu_remove_tree(self->dir))
		TH_LOG("could not remove %s", self->dir);
}

/* One layer, one version, one core, measured alone; conditions as given. */
static struct profile *one_cell(uint64_t solo_ns, double spread)
{
	struct profile *p = profile_one_cell();

	if (!p)
		return NULL;
	p->conditions = (struct profile_conditions){ .known = true,
						     .solo_ns = solo_ns,
						     .spread = spread,
						     .loadavg = 0.75,
						     .steal = 0.0125 };
	return p;
}

TEST_F(profile_fresh, solo_summary__median_and_p90_p10_spread_by_hand)
{
	uint64_t v[10] = { 1000, 300, 200, 900, 100, 700, 600, 500, 800, 400 }, med;
	uint64_t odd[5] = { 50, 10, 40, 20, 30 };
	double spread;

	/* 10 runs: median (500 + 600) / 2, p10 the 2nd smallest, p90 the 9th */
	profile_solo_summary(v, 10, &med, &spread);
	ASSERT_EQ(550, med);
	ASSERT_LT(fabs(spread - (900.0 - 200.0) / 550.0), 1e-12);
	/* 5 runs: nearest rank, p10 the smallest, p90 the largest */
	profile_solo_summary(odd, 5, &med, &spread);
	ASSERT_EQ(30, med);
	ASSERT_LT(fabs(spread - 40.0 / 30.0), 1e-12);
}

TEST_F(profile_fresh, is_stale__beyond_the_larger_spread_and_the_floor)
{
	struct profile *p = one_cell(10000000, 0.10);

	ASSERT_NE(NULL, p);
	/* within the profile's own 10 % */
	EXPECT_FALSE(profile_is_stale(p, 10900000, 0.02));
	EXPECT_FALSE(profile_is_stale(p, 9100000, 0.02));
	EXPECT_TRUE(profile_is_stale(p, 11500000, 0.02));
	EXPECT_TRUE(profile_is_stale(p, 8500000, 0.02));
	/* the fresh run's own spread widens what is allowed */
	EXPECT_FALSE(profile_is_stale(p, 11500000, 0.20));
	/* 3.3 x faster now: the case of a profile made under load */
	EXPECT_TRUE(profile_is_stale(p, 3030303, 0.02));
	/* quiet on both sides: the floor, PROFILE_STALE_FLOOR (5 %) */
	p->conditions.spread = 0.01;
	EXPECT_FALSE(profile_is_stale(p, 10400000, 0.01));
	EXPECT_TRUE(profile_is_stale(p, 10600000, 0.01));
	/* no conditions: nothing to compare with */
	p->conditions.known = false;
	EXPECT_FALSE(profile_is_stale(p, 30000000, 0.01));
	profile_free(p);
}

TEST_F(profile_fresh, save_load__conditions_round_trip)
{
	struct profile *p = one_cell(12345678, 0.0625), *q;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err)) TH_LOG("%s", self->err.msg);
	q = profile_load(self->path, &self->err);
	ASSERT_NE(NULL, q) TH_LOG("%s", self->err.msg);
	ASSERT_TRUE(q->conditions.known);
	ASSERT_EQ(12345678, q->conditions.solo_ns);
	ASSERT_LT(fabs(q->conditions.spread - 0.0625), 1e-9);
	ASSERT_LT(fabs(q->conditions.loadavg - 0.75), 1e-9);
	ASSERT_LT(fabs(q->conditions.steal - 0.0125), 1e-9);
	profile_free(q);
	/* a profile still being measured has none, and says so by its absence */
	p->conditions.known = false;
	ASSERT_EQ(0, profile_save(p, self->path, &self->err));
	q = profile_load(self->path, &self->err);
	ASSERT_NE(NULL, q) TH_LOG("%s", self->err.msg);
	ASSERT_FALSE(q->conditions.known);
	profile_free(q);
	profile_free(p);
}

/* The profile's text with with before its "conditions" line, which goes unless dup. */
static char *with_conditions(const char *text, const char *with, bool dup)
{
	const char *at = strstr(text, "\nconditions ");
	const char *rest;
	char *out;

	if (!at)
		return NULL;
	at++;
	rest = dup ? at : strchr(at, '\n') + 1;
	if (asprintf(&out, "%.*s%s\n%s", (int)(at - text), text, with, rest) < 0)
		return NULL;
	return out;
}

TEST_F(profile_fresh, parse__rejects_bad_conditions_with_file_line)
{
	static const struct {
		const char *line;
		bool dup;
		const char *msg;
	} cases[] = {
		{ "conditions 1000 0.1 0.5", false, "takes SOLO_NS SPREAD LOADAVG STEAL" },
		{ "conditions 0 0.1 0.5 0", false, "solo latency (ns) (value 1) is not an integer" },
		{ "conditions 1000 -0.1 0.5 0", false, "spread (value 2) is not a number" },
		{ "conditions 1000 0.1 - 0", false, "must be numbers" },
		{ "conditions 1000 0.1 0.5 1.5", false, "steal at most 1" },
		{ "conditions 1000 nan 0.5 0", false, "spread (value 2) is not a number" },
		{ "conditions 1000 0.1 0.5 0", true, "duplicate 'conditions'" },
	};
	struct profile *p = one_cell(5000, 0.1);
	size_t len;
	char *good;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err));
	good = tu_read_file(self->path, &len);
	ASSERT_NE(NULL, good);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *bad = with_conditions(good, cases[i].line, cases[i].dup);
		struct profile *q;

		ASSERT_NE(NULL, bad);
		coloc_err_clear(&self->err);
		q = profile_parse("t", bad, strlen(bad), &self->err);
		EXPECT_EQ(NULL, q) TH_LOG("case %zu accepted", i);
		EXPECT_NE(NULL, strstr(self->err.msg, cases[i].msg))
		TH_LOG("case %zu: '%s' lacks '%s'", i, self->err.msg, cases[i].msg);
		EXPECT_EQ(0, strncmp(self->err.msg, "t:", 2)) TH_LOG("%s", self->err.msg);
		profile_free(q);
		free(bad);
	}
	free(good);
	profile_free(p);
}

TEST_F_TIMEOUT(profile_fresh, coloc_profile__refuses_a_busy_machine_unless_forced, 120)
{
	char model[160], out[160], cache[160];
	/* --busy-spread 0: any spread at all is "busy", so the refusal is certain */
	const char *args[] = { model,	   "-o", out,		"--iters", "1",
			       "--levels", "50", "--cache-dir", cache,	   "--busy-spread",
			       "0",	   NULL, NULL };
	struct tu_child run;
	struct profile *p;
	double load;

	snprintf(model, sizeof(model), "%s/tiny.model", self->dir);
	snprintf(out, sizeof(out), "%s/tiny.profile", self->dir);
	snprintf(cache, sizeof(cache), "%s/cache", self->dir);
	ASSERT_EQ(0, profile_tool_write_tiny(model));

	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 1)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "the machine was busy while measuring"))
	TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "--force")) TH_LOG("%s", run.output);
	ASSERT_NE(0, access(out, F_OK));
	ASSERT_EQ(1, tu_nr_dir_entries(self->dir) - (access(cache, F_OK) == 0))
	TH_LOG("nothing but the model may be left in %s", self->dir);

	args[11] = "--force";
	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "kept although the machine was busy"));
	p = profile_load(out, &self->err);
	ASSERT_NE(NULL, p) TH_LOG("%s", self->err.msg);
	ASSERT_TRUE(p->conditions.known);
	ASSERT_LT(0, p->conditions.solo_ns);
	ASSERT_GT(10000000000ULL, p->conditions.solo_ns);
	ASSERT_TRUE(p->conditions.spread >= 0);
	ASSERT_TRUE(p->conditions.steal >= 0 && p->conditions.steal <= 1);
	/* the load average it recorded is this machine's, read within the same minute */
	ASSERT_EQ(0, profile_loadavg_read(&load));
	ASSERT_TRUE(p->conditions.loadavg >= 0 && p->conditions.loadavg < 10 * (load + 1));
	profile_free(p);
}

/* The cached profile of the tiny model, its conditions replaced. */
static void set_cached_conditions(struct __test_metadata *_metadata, const char *path,
				  uint64_t solo_ns, double spread)
{
	struct coloc_err err = { 0 };
	struct profile *p = profile_load(path, &err);

	ASSERT_NE(NULL, p) TH_LOG("%s", err.msg);
	p->conditions.solo_ns = solo_ns;
	p->conditions.spread = spread;
	ASSERT_EQ(0, profile_save(p, path, &err)) TH_LOG("%s", err.msg);
	profile_free(p);
}

TEST_F_TIMEOUT(profile_fresh, coloc_profile__verify_cache_measures_a_stale_profile_again, 180)
{
	char model[160], out[160], cache[160], cached[PATH_MAX];
	const char *args[] = { model, "-o",	     out,   "--iters", "1",  "--levels",
			       "50",  "--cache-dir", cache, "--force", NULL, NULL };
	struct profile_machine machine;
	struct tu_child run;
	struct profile *p;
	struct coloc_err kerr = { 0 };
	struct profile_key key;
	uint64_t solo_ns;

	snprintf(model, sizeof(model), "%s/tiny.model", self->dir);
	snprintf(out, sizeof(out), "%s/tiny.profile", self->dir);
	snprintf(cache, sizeof(cache), "%s/cache", self->dir);
	ASSERT_EQ(0, profile_tool_write_tiny(model));
	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_EQ(0, model_open_key(model, NULL, NULL, &key, &kerr)) TH_LOG("%s", kerr.msg);
	ASSERT_EQ(0, profile_machine_detect(&machine));
	ASSERT_EQ(0, profile_cache_path(cache, "tiny", &key, &machine, cached, sizeof(cached)));

	/* recorded as 1000 x slower than it runs, within 1 %: stale */
	set_cached_conditions(_metadata, cached, 1000000000000ULL, 0.01);
	args[10] = "--verify-cache";
	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "stale, measuring again")) TH_LOG("%s", run.output);
	ASSERT_EQ(NULL, strstr(run.output, "reused")) TH_LOG("%s", run.output);
	p = profile_load(cached, &self->err);
	ASSERT_NE(NULL, p) TH_LOG("%s", self->err.msg);
	ASSERT_GT(1000000000000ULL, p->conditions.solo_ns) TH_LOG("the cache was not replaced");
	solo_ns = p->conditions.solo_ns;
	profile_free(p);

	/* recorded as it was just measured but with a spread of 100 x: fresh */
	set_cached_conditions(_metadata, cached, solo_ns, 100);
	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, ": fresh")) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "reused the cached profile")) TH_LOG("%s", run.output);

	/* without --verify-cache a cached profile is reused as it is */
	set_cached_conditions(_metadata, cached, 1000000000000ULL, 0.01);
	args[10] = NULL;
	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "reused the cached profile")) TH_LOG("%s", run.output);
}

TEST_HARNESS_MAIN
