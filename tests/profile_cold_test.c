// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A profile's cold ramp (profile.h: per gap, the median cold / hot ratio
 * of interleaved whole-model rounds, format 8): the ratios' median and
 * spread by hand, the `cold` records saved and read back and refused when
 * malformed or out of order, a format-7 profile read as a ramp of one
 * point and a format-6 one as hot, the ramp carried into the policy's
 * table, and bin/coloc-profile on a tiny model records the gaps below the
 * one asked for and measures a cached format-6 or format-7 profile again.
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
#include "profile_table.h"
#include "table.h"

FIXTURE(profile_cold)
{
	char dir[64];
	char path[128];
	struct coloc_err err;
};

FIXTURE_SETUP(profile_cold)
{
	ASSERT_EQ(0, tu_make_tmpdir("profile-cold", self->dir, sizeof(self->dir)));
	snprintf(self->path, sizeof(self->path), "%s/p.profile", self->dir);
}

FIXTURE_TEARDOWN(profile_cold)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	if (system(cmd))
		TH_LOG("could not remove %s", self->dir);
}

/* One layer, one version, one core, measured alone, with conditions and a cold start. */
static struct profile *one_cell(void)
{
	struct profile *p = profile_one_cell();

	if (!p)
		return NULL;
	p->conditions = (struct profile_conditions){ .known = true,
						     .solo_ns = 3000000,
						     .spread = 0.05,
						     .loadavg = 0.5,
						     .steal = 0,
						     .nr_cold = 3,
						     .cold = { { 1000000, 1.08, 0.05, 27 },
							       { 4000000, 1.15, 0.06, 27 },
							       { 30000000, 1.25, 0.08, 27 } } };
	return p;
}

/* one_cell's three cold records, as profile_save() writes them */
#define COLD_1MS "cold 1.0800 0.0500 1000000 27\n"
#define COLD_4MS "cold 1.1500 0.0600 4000000 27\n"
#define COLD_30MS "cold 1.2500 0.0800 30000000 27\n"

/* text with the first occurrence of from replaced by to; NULL when from does not occur. */
static char *replaced(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	char *out;

	if (!at || asprintf(&out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from)) < 0)
		return NULL;
	return out;
}

/*
 * text (a profile this coloc saved, format 9) as the format before 9 wrote
 * it: that number, and the model's FNV-1a 'model-hash' (16 hex digits) for
 * the key; NULL when text is not such a profile.
 */
static char *old_format(const char *text, int format)
{
	char want[32], line[96], hash[40], *ninth, *out;
	const char *key = strstr(text, "\nmodel-key ");

	if (!key)
		return NULL;
	key++;
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(key, "\n") + 1, key);
	snprintf(hash, sizeof(hash), "model-hash %.16s\n", key + strlen("model-key "));
	snprintf(want, sizeof(want), "coloc-profile %d\n", format);
	ninth = replaced(text, "coloc-profile 9\n", want);
	if (!ninth)
		return NULL;
	out = replaced(ninth, line, hash);
	free(ninth);
	return out;
}

TEST(ratio_summary__median_and_p90_p10_spread_by_hand)
{
	double v[10] = { 1.3, 1.1, 1.0, 1.25, 1.2, 1.15, 1.05, 1.4, 1.35, 1.45 }, med, spread;

	/* sorted 1.0 1.05 1.1 1.15 1.2 1.25 1.3 1.35 1.4 1.45: median 1.225, p10 1.05, p90 1.4 */
	profile_ratio_summary(v, 10, &med, &spread);
	ASSERT_LT(fabs(med - 1.225), 1e-12);
	ASSERT_LT(fabs(spread - 0.35 / 1.225), 1e-12);
}

TEST_F(profile_cold, save_load__the_cold_ramp_round_trips_in_format_9)
{
	struct profile *p = one_cell(), *q;
	size_t len;
	char *text;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err)) TH_LOG("%s", self->err.msg);
	text = tu_read_file(self->path, &len);
	ASSERT_NE(NULL, text);
	ASSERT_NE(NULL, strstr(text, "\ncoloc-profile 9\n")) TH_LOG("%s", text);
	ASSERT_NE(NULL, strstr(text, "\n" COLD_1MS COLD_4MS COLD_30MS)) TH_LOG("%s", text);
	free(text);
	q = profile_load(self->path, &self->err);
	ASSERT_NE(NULL, q) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(3, q->conditions.nr_cold);
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(p->conditions.cold[i].gap_ns, q->conditions.cold[i].gap_ns);
		ASSERT_LT(fabs(q->conditions.cold[i].ratio - p->conditions.cold[i].ratio), 1e-9);
		ASSERT_LT(fabs(q->conditions.cold[i].spread - p->conditions.cold[i].spread), 1e-9);
		ASSERT_EQ(27, q->conditions.cold[i].pairs);
	}
	ASSERT_LT(fabs(profile_cold_ratio(&q->conditions) - 1.25), 1e-9);
	profile_free(q);
	profile_free(p);
}

/*
 * The ramp reaches the policy's table: profile_table_build_layers() gives
 * one_cell's three points to policy_costs.cold, which prices 2.5 ms idle
 * half way between 1.08 and 1.15 and serves the solo at the long gap's 1.25.
 */
TEST_F(profile_cold, table__the_ramp_prices_the_policys_blocks)
{
	static const uint64_t macs[] = { 1000 };
	struct profile *p = one_cell();
	struct policy_table t;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_table_build_layers(p, "one", 1, macs, &t, &self->err))
	TH_LOG("%s", self->err.msg);
	ASSERT_EQ(3, t.costs.nr_cold);
	ASSERT_EQ(0, policy_costs_check(&t.costs, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_LT(fabs(policy_costs_cold_scale_at(&t.costs, 2500000) - 1.115), 1e-9);
	ASSERT_EQ(1250, policy_costs_served_solo_ns(&t.costs, 1));
	policy_table_free(&t);
	/* format 6 (no ramp): hot */
	p->conditions.nr_cold = 0;
	ASSERT_EQ(0, profile_table_build_layers(p, "one", 1, macs, &t, &self->err));
	ASSERT_EQ(0, t.costs.nr_cold);
	ASSERT_EQ(1000, policy_costs_served_solo_ns(&t.costs, 1));
	policy_table_free(&t);
	profile_free(p);
}

TEST_F(profile_cold, parse__reads_format_7_as_one_point_and_6_as_hot_and_refuses_5)
{
	struct profile *p = one_cell(), *q;
	char *good, *seven_ramp, *seven_1, *seven, *six, *six_cold, *five;
	size_t len;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err));
	good = tu_read_file(self->path, &len);
	ASSERT_NE(NULL, good);
	seven_ramp = old_format(good, 7);
	ASSERT_NE(NULL, seven_ramp);
	seven_1 = replaced(seven_ramp, COLD_1MS, "");
	ASSERT_NE(NULL, seven_1);
	seven = replaced(seven_1, COLD_4MS, "");
	ASSERT_NE(NULL, seven);
	six_cold = replaced(seven, "coloc-profile 7\n", "coloc-profile 6\n");
	ASSERT_NE(NULL, six_cold);
	six = replaced(six_cold, COLD_30MS, "");
	ASSERT_NE(NULL, six);
	five = replaced(six, "coloc-profile 6\n", "coloc-profile 5\n");
	ASSERT_NE(NULL, five);

	/* format 7: its one record, the ramp's only point */
	q = profile_parse("t", seven, strlen(seven), &self->err);
	ASSERT_NE(NULL, q) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(1, q->conditions.nr_cold);
	ASSERT_EQ(30000000, q->conditions.cold[0].gap_ns);
	ASSERT_LT(fabs(q->conditions.cold[0].ratio - 1.25), 1e-9);
	ASSERT_LT(fabs(q->conditions.cold[0].spread - 0.08), 1e-9);
	ASSERT_EQ(27, q->conditions.cold[0].pairs);
	profile_free(q);
	/* ... and only one */
	coloc_err_clear(&self->err);
	ASSERT_EQ(NULL, profile_parse("t", seven_ramp, strlen(seven_ramp), &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "more than 1 'cold' record in a format-7 profile"))
	TH_LOG("%s", self->err.msg);

	q = profile_parse("t", six, strlen(six), &self->err);
	ASSERT_NE(NULL, q) TH_LOG("%s", self->err.msg);
	ASSERT_TRUE(q->conditions.known);
	ASSERT_EQ(3000000, q->conditions.solo_ns);
	ASSERT_EQ(0, q->conditions.nr_cold);
	ASSERT_EQ(0, profile_cold_ratio(&q->conditions));
	profile_free(q);

	coloc_err_clear(&self->err);
	q = profile_parse("t", six_cold, strlen(six_cold), &self->err);
	ASSERT_EQ(NULL, q);
	ASSERT_NE(NULL, strstr(self->err.msg, "'cold' is a record of format 7"))
	TH_LOG("%s", self->err.msg);
	coloc_err_clear(&self->err);
	q = profile_parse("t", five, strlen(five), &self->err);
	ASSERT_EQ(NULL, q);
	ASSERT_NE(NULL, strstr(self->err.msg, "measure the profile again"))
	TH_LOG("%s", self->err.msg);
	free(good);
	free(seven_ramp);
	free(seven_1);
	free(seven);
	free(six);
	free(six_cold);
	free(five);
	profile_free(p);
}

TEST_F(profile_cold, parse__rejects_bad_cold_records_with_file_line)
{
	static const struct {
		const char *line;
		const char *msg;
	} cases[] = {
		{ "cold 1.2 0.1 30000000", "takes RATIO SPREAD GAP_NS PAIRS" },
		{ "cold 0 0.1 30000000 9", "ratio must be a number above 0" },
		{ "cold - 0.1 30000000 9", "ratio must be a number above 0" },
		{ "cold 4.5 0.1 30000000 9", "a disturbed measurement" },
		{ "cold 1.2 -0.1 30000000 9", "cold spread (value 2) is not a number" },
		{ "cold 1.2 0.1 0 9", "cold gap (ns) (value 3) is not an integer in 1.." },
		{ "cold 1.2 0.1 30000000 0", "cold pairs (value 4) is not an integer" },
		{ "cold 1.2 0.1 10000000001 9", "cold gap (ns) (value 3) is not an integer in 1..10000000000" },
		{ "cold 1.2 0.1 30000000 9\ncold 1.2 0.1 30000000 9", "from the shortest gap" },
		{ "cold 1.2 0.1 30000000 9\ncold 1.1 0.1 4000000 9", "from the shortest gap" },
		{ "cold 1.1 0.1 1000000 9\ncold 1.2 0.1 2000000 9\ncold 1.2 0.1 3000000 9\n"
		  "cold 1.2 0.1 4000000 9\ncold 1.3 0.1 5000000 9",
		  "more than 4 'cold' records in a format-9 profile" },
	};
	struct profile *p = one_cell();
	char *good, *bare, *early;
	size_t len;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err));
	good = tu_read_file(self->path, &len);
	ASSERT_NE(NULL, good);
	bare = replaced(good, COLD_1MS COLD_4MS COLD_30MS, "");
	ASSERT_NE(NULL, bare);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char line[256], *bad;
		struct profile *q;

		snprintf(line, sizeof(line), "%s\nlat ", cases[i].line);
		bad = replaced(bare, "lat ", line);
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
	/* before the conditions it qualifies */
	early = replaced(bare, "conditions ", "cold 1.2 0.1 30000000 9\nconditions ");
	ASSERT_NE(NULL, early);
	coloc_err_clear(&self->err);
	ASSERT_EQ(NULL, profile_parse("t", early, strlen(early), &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "'cold' before 'conditions'"))
	TH_LOG("%s", self->err.msg);
	free(early);
	free(bare);
	free(good);
	profile_free(p);
}

/*
 * The cached profile at path made one of an older format: format 7 keeps
 * its ramp's last point, format 6 none.
 */
static void make_format(struct __test_metadata *_metadata, const char *path, int format)
{
	struct coloc_err err = { 0 };
	struct profile *p = profile_load(path, &err);
	char *text, *old;
	size_t len;
	FILE *f;

	ASSERT_NE(NULL, p) TH_LOG("%s", err.msg);
	ASSERT_LT(1, p->conditions.nr_cold);
	p->conditions.cold[0] = p->conditions.cold[p->conditions.nr_cold - 1];
	p->conditions.nr_cold = format == 7 ? 1 : 0;
	ASSERT_EQ(0, profile_save(p, path, &err)) TH_LOG("%s", err.msg);
	profile_free(p);
	text = tu_read_file(path, &len);
	ASSERT_NE(NULL, text);
	old = old_format(text, format);
	ASSERT_NE(NULL, old);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(strlen(old), fwrite(old, 1, strlen(old), f));
	ASSERT_EQ(0, fclose(f));
	free(text);
	free(old);
}

TEST_F_TIMEOUT(profile_cold, coloc_profile__records_the_ramp_and_measures_an_older_cache_again, 300)
{
	char model[160], out[160], cache[160], cached[PATH_MAX];
	const char *args[] = { model,	   "-o",      out,	     "--iters", "1",
			       "--levels", "50",      "--cache-dir", cache,	"--cold-gap-ms",
			       "5",	   "--force", NULL };
	struct profile_machine machine;
	struct tu_child run;
	struct profile *p;
	struct coloc_err kerr = { 0 };
	struct profile_key key;

	snprintf(model, sizeof(model), "%s/tiny.model", self->dir);
	snprintf(out, sizeof(out), "%s/tiny.profile", self->dir);
	snprintf(cache, sizeof(cache), "%s/cache", self->dir);
	ASSERT_EQ(0, profile_tool_write_tiny(model));

	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "cold start")) TH_LOG("%s", run.output);
	p = profile_load(out, &self->err);
	ASSERT_NE(NULL, p) TH_LOG("%s", self->err.msg);
	/* the short gaps below the 5 ms asked for (1 and 4 ms), then it */
	ASSERT_EQ(3, p->conditions.nr_cold);
	ASSERT_EQ(1000000, p->conditions.cold[0].gap_ns);
	ASSERT_EQ(4000000, p->conditions.cold[1].gap_ns);
	ASSERT_EQ(5000000, p->conditions.cold[2].gap_ns);
	for (int i = 0; i < 3; i++) {
		/* 9 rounds before each core count and 9 at the end */
		ASSERT_EQ(9 * (p->nr_cores + 1), p->conditions.cold[i].pairs);
		ASSERT_LT(0, p->conditions.cold[i].ratio);
		ASSERT_GE(PROFILE_MAX_COLD_RATIO, p->conditions.cold[i].ratio);
		ASSERT_TRUE(p->conditions.cold[i].spread >= 0);
	}
	profile_free(p);

	ASSERT_EQ(0, model_open_key(model, NULL, NULL, &key, &kerr)) TH_LOG("%s", kerr.msg);
	ASSERT_EQ(0, profile_machine_detect(&machine));
	ASSERT_EQ(0, profile_cache_path(cache, "tiny", &key, &machine, cached, sizeof(cached)));
	for (int format = 6; format <= 7; format++) {
		char msg[64];

		make_format(_metadata, cached, format);
		ASSERT_EQ(0, profile_tool_run(args, &run));
		ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
		/* a format before 9 is keyed by the model file alone: never reused */
		snprintf(msg, sizeof(msg), "keyed the way before 2026-12-06");
		ASSERT_NE(NULL, strstr(run.output, msg)) TH_LOG("format %d: %s", format, run.output);
		ASSERT_EQ(NULL, strstr(run.output, "reused")) TH_LOG("%s", run.output);
		p = profile_load(cached, &self->err);
		ASSERT_NE(NULL, p) TH_LOG("%s", self->err.msg);
		ASSERT_EQ(3, p->conditions.nr_cold) TH_LOG("the cache was not replaced");
		profile_free(p);
	}

	/* the fresh format-9 profile in the cache is reused */
	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "reused the cached profile")) TH_LOG("%s", run.output);
}

TEST_HARNESS_MAIN
