// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A profile's cold start (profile.h: the median cold / hot ratio of
 * interleaved whole-model pairs, format 7): the ratios' median and spread
 * by hand, the `cold` record saved and read back and refused when
 * malformed, a format-6 profile still read (with no cold start), and
 * bin/coloc-profile on a tiny model records the pairs with the gap asked
 * for and measures a cached format-6 profile again.
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
#include "profile_host.h"
#include "profile_tool.h"

FIXTURE(profile_cold)
{
	char dir[64];
	char path[128];
	struct coloc_err err;
};

FIXTURE_SETUP(profile_cold)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-profile-cold.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
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
	static const int levels[] = { 0 }, versions[] = { 1 };
	struct profile *p = profile_new(1, versions, 1, 1, levels, NULL);
	uint64_t *lo, *hi;

	if (!p)
		return NULL;
	snprintf(p->model_name, sizeof(p->model_name), "one");
	snprintf(p->machine.cpu_model, sizeof(p->machine.cpu_model), "Test CPU");
	snprintf(p->machine.isa, sizeof(p->machine.isa), "avx2");
	snprintf(p->onednn_version, sizeof(p->onednn_version), "2.6.3");
	snprintf(p->date, sizeof(p->date), "2026-12-05T06:00:00Z");
	snprintf(p->layers[0].name, sizeof(p->layers[0].name), "l0");
	snprintf(p->layers[0].version_names[0], PROFILE_VERSION_NAME_LEN, "v0");
	p->machine.nr_cores = 1;
	*profile_latency_cell(p, 0, 0, 1, 0) = 1000;
	profile_ci_cells(p, 0, 0, 1, 0, &lo, &hi);
	*lo = 900;
	*hi = 1100;
	p->conditions = (struct profile_conditions){ .known = true,
						     .solo_ns = 3000000,
						     .spread = 0.05,
						     .loadavg = 0.5,
						     .steal = 0,
						     .cold_ratio = 1.25,
						     .cold_spread = 0.08,
						     .cold_gap_ns = 30000000,
						     .cold_pairs = 27 };
	return p;
}

/* text with the first occurrence of from replaced by to; NULL when from does not occur. */
static char *replaced(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	char *out;

	if (!at || asprintf(&out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from)) < 0)
		return NULL;
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

TEST_F(profile_cold, save_load__the_cold_start_round_trips_in_format_7)
{
	struct profile *p = one_cell(), *q;
	size_t len;
	char *text;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err)) TH_LOG("%s", self->err.msg);
	text = tu_read_file(self->path, &len);
	ASSERT_NE(NULL, text);
	ASSERT_NE(NULL, strstr(text, "\ncoloc-profile 7\n")) TH_LOG("%s", text);
	ASSERT_NE(NULL, strstr(text, "\ncold 1.2500 0.0800 30000000 27\n")) TH_LOG("%s", text);
	free(text);
	q = profile_load(self->path, &self->err);
	ASSERT_NE(NULL, q) TH_LOG("%s", self->err.msg);
	ASSERT_LT(fabs(q->conditions.cold_ratio - 1.25), 1e-9);
	ASSERT_LT(fabs(q->conditions.cold_spread - 0.08), 1e-9);
	ASSERT_EQ(30000000, q->conditions.cold_gap_ns);
	ASSERT_EQ(27, q->conditions.cold_pairs);
	profile_free(q);
	profile_free(p);
}

TEST_F(profile_cold, parse__reads_format_6_with_no_cold_start_and_refuses_5)
{
	struct profile *p = one_cell(), *q;
	char *good, *six, *six_cold, *five;
	size_t len;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err));
	good = tu_read_file(self->path, &len);
	ASSERT_NE(NULL, good);
	six_cold = replaced(good, "coloc-profile 7\n", "coloc-profile 6\n");
	ASSERT_NE(NULL, six_cold);
	six = replaced(six_cold, "cold 1.2500 0.0800 30000000 27\n", "");
	ASSERT_NE(NULL, six);
	five = replaced(six, "coloc-profile 6\n", "coloc-profile 5\n");
	ASSERT_NE(NULL, five);

	q = profile_parse("t", six, strlen(six), &self->err);
	ASSERT_NE(NULL, q) TH_LOG("%s", self->err.msg);
	ASSERT_TRUE(q->conditions.known);
	ASSERT_EQ(3000000, q->conditions.solo_ns);
	ASSERT_EQ(0, q->conditions.cold_ratio);
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
		{ "cold 1.2 -0.1 30000000 9", "cold spread '-0.1'" },
		{ "cold 1.2 0.1 0 9", "cold gap (ns) '0'" },
		{ "cold 1.2 0.1 30000000 0", "cold pairs '0'" },
		{ "cold 1.2 0.1 30000000 9\ncold 1.2 0.1 30000000 9", "duplicate 'cold'" },
	};
	struct profile *p = one_cell();
	char *good, *bare, *early;
	size_t len;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err));
	good = tu_read_file(self->path, &len);
	ASSERT_NE(NULL, good);
	bare = replaced(good, "cold 1.2500 0.0800 30000000 27\n", "");
	ASSERT_NE(NULL, bare);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char line[128], *bad;
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

/* The cached profile at path made a format-6 one: its cold start gone, its header 6. */
static void make_format_6(struct __test_metadata *_metadata, const char *path)
{
	struct coloc_err err = { 0 };
	struct profile *p = profile_load(path, &err);
	char *text, *six;
	size_t len;
	FILE *f;

	ASSERT_NE(NULL, p) TH_LOG("%s", err.msg);
	p->conditions.cold_ratio = 0;
	ASSERT_EQ(0, profile_save(p, path, &err)) TH_LOG("%s", err.msg);
	profile_free(p);
	text = tu_read_file(path, &len);
	ASSERT_NE(NULL, text);
	six = replaced(text, "coloc-profile 7\n", "coloc-profile 6\n");
	ASSERT_NE(NULL, six);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(strlen(six), fwrite(six, 1, strlen(six), f));
	ASSERT_EQ(0, fclose(f));
	free(text);
	free(six);
}

TEST_F_TIMEOUT(profile_cold, coloc_profile__records_the_pairs_and_measures_a_format_6_cache_again,
	       180)
{
	char model[160], out[160], cache[160], cached[PATH_MAX];
	const char *args[] = { model,	   "-o",      out,	     "--iters", "1",
			       "--levels", "50",      "--cache-dir", cache,	"--cold-gap-ms",
			       "3",	   "--force", NULL };
	struct profile_machine machine;
	struct tu_child run;
	struct profile *p;
	uint64_t hash;

	snprintf(model, sizeof(model), "%s/tiny.model", self->dir);
	snprintf(out, sizeof(out), "%s/tiny.profile", self->dir);
	snprintf(cache, sizeof(cache), "%s/cache", self->dir);
	ASSERT_EQ(0, profile_tool_write_tiny(model));

	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "cold start")) TH_LOG("%s", run.output);
	p = profile_load(out, &self->err);
	ASSERT_NE(NULL, p) TH_LOG("%s", self->err.msg);
	/* 9 pairs before each core count and 9 at the end */
	ASSERT_EQ(9 * (p->nr_cores + 1), p->conditions.cold_pairs);
	ASSERT_EQ(3000000, p->conditions.cold_gap_ns);
	ASSERT_LT(0, p->conditions.cold_ratio);
	ASSERT_GT(1000, p->conditions.cold_ratio);
	ASSERT_TRUE(p->conditions.cold_spread >= 0);
	profile_free(p);

	ASSERT_EQ(0, profile_hash_file(model, &hash));
	ASSERT_EQ(0, profile_machine_detect(&machine));
	ASSERT_EQ(0, profile_cache_path(cache, "tiny", hash, &machine, cached, sizeof(cached)));
	make_format_6(_metadata, cached);
	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "records no cold start (format 6): stale"))
	TH_LOG("%s", run.output);
	ASSERT_EQ(NULL, strstr(run.output, "reused")) TH_LOG("%s", run.output);
	p = profile_load(cached, &self->err);
	ASSERT_NE(NULL, p) TH_LOG("%s", self->err.msg);
	ASSERT_LT(0, p->conditions.cold_ratio) TH_LOG("the cache was not replaced");
	profile_free(p);

	/* the fresh format-7 profile in the cache is reused */
	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "reused the cached profile")) TH_LOG("%s", run.output);
}

TEST_HARNESS_MAIN
