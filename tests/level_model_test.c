// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the PMU level model (executor/level_model.c, level_model_file.c):
 * the least-squares fit recovers known coefficients and matches a fit worked
 * out by hand, leaves out a signal that does not vary or a collinear one and
 * says so, refuses too few points; evaluation clamps at 1.0 and refuses a
 * signal that is not live; the file round-trips exactly, malformed files are
 * refused with their line number, and random mutations either parse or fail
 * with "NAME:LINE:".
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "level_model.h"
#include "testutil.h"

FIXTURE(level_model)
{
	struct coloc_err err;
	char path[64];
};

FIXTURE_SETUP(level_model)
{
	memset(&self->err, 0, sizeof(self->err));
	snprintf(self->path, sizeof(self->path), "/tmp/level_model_test.%d", (int)getpid());
}

FIXTURE_TEARDOWN(level_model)
{
	unlink(self->path);
}

/* Known coefficients: level = 0.9 + 2*miss + 0.003*refs + 0.05*dram. */
static double truth(const double x[LEVEL_NR_TERMS])
{
	return 0.9 + 2.0 * x[0] + 0.003 * x[1] + 0.05 * x[2];
}

/* A 3x3x2 grid of distinct, non-collinear signal values. */
static int grid_points(struct level_point *pts)
{
	int n = 0;

	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 2; k++, n++) {
				pts[n].x[0] = 0.05 + 0.1 * i + 0.01 * k;
				pts[n].x[1] = 200.0 + 150.0 * j + 7.0 * i;
				pts[n].x[2] = 1.0 + 9.0 * k + 0.5 * j;
				pts[n].level = truth(pts[n].x);
			}
	return n;
}

TEST_F(level_model, fit__recovers_known_coefficients)
{
	struct level_point pts[18];
	struct level_model m = { .machine = 0xabcdef };
	char note[LEVEL_MODEL_NOTE_LEN];
	int n = grid_points(pts);

	ASSERT_EQ(0, level_model_fit(pts, n, &m, note, sizeof(note), &self->err))
	TH_LOG("%s", self->err.msg);
	ASSERT_EQ(LEVEL_TERMS_ALL, m.terms);
	ASSERT_LT(fabs(m.c0 - 0.9), 1e-9);
	ASSERT_LT(fabs(m.coef[LEVEL_TERM_LLC_MISS_RATIO] - 2.0), 1e-9);
	ASSERT_LT(fabs(m.coef[LEVEL_TERM_LLC_REFS_PER_US] - 0.003), 1e-12);
	ASSERT_LT(fabs(m.coef[LEVEL_TERM_DRAM_GBPS] - 0.05), 1e-10);
	ASSERT_LT(fabs(m.r2 - 1.0), 1e-12);
	ASSERT_LT(m.rms, 1e-9);
	ASSERT_EQ(n, m.nr_points);
	ASSERT_EQ(0xabcdef, m.machine);
	ASSERT_STREQ("terms used: llc_miss_ratio llc_refs_per_us dram_gbps", note);
}

/*
 * By hand, x = 0 1 2 3, level = 1 1.5 1.5 2: mean x 1.5, mean level 1.5,
 * Sxy = 1.5, Sxx = 5, so slope 0.3 and intercept 1.05; residuals -0.05
 * 0.15 -0.15 0.05, SSR 0.05, SST 0.5: R² 0.9, RMS sqrt(0.05 / 4).
 */
TEST_F(level_model, fit__one_varying_signal_matches_hand_fit)
{
	static const double level[] = { 1.0, 1.5, 1.5, 2.0 };
	struct level_point pts[4];
	struct level_model m = { 0 };
	char note[LEVEL_MODEL_NOTE_LEN];

	for (int i = 0; i < 4; i++) {
		pts[i].x[LEVEL_TERM_LLC_MISS_RATIO] = i;
		pts[i].x[LEVEL_TERM_LLC_REFS_PER_US] = 300.0;
		pts[i].x[LEVEL_TERM_DRAM_GBPS] = 0.0;
		pts[i].level = level[i];
	}
	ASSERT_EQ(0, level_model_fit(pts, 4, &m, note, sizeof(note), &self->err))
	TH_LOG("%s", self->err.msg);
	ASSERT_EQ(1u << LEVEL_TERM_LLC_MISS_RATIO, m.terms);
	ASSERT_LT(fabs(m.c0 - 1.05), 1e-12);
	ASSERT_LT(fabs(m.coef[LEVEL_TERM_LLC_MISS_RATIO] - 0.3), 1e-12);
	ASSERT_EQ(0.0, m.coef[LEVEL_TERM_LLC_REFS_PER_US]);
	ASSERT_LT(fabs(m.r2 - 0.9), 1e-12);
	ASSERT_LT(fabs(m.rms - sqrt(0.05 / 4)), 1e-12);
	ASSERT_STREQ("terms used: llc_miss_ratio; left out, not varying: llc_refs_per_us dram_gbps",
		     note);
}

/* refs = 1000 * miss exactly: the 4x4 design is singular, one of the pair goes. */
TEST_F(level_model, fit__singular_design_drops_a_collinear_term)
{
	struct level_point pts[18];
	struct level_model m = { 0 };
	char note[LEVEL_MODEL_NOTE_LEN];
	double probe[LEVEL_NR_TERMS] = { 0.33, 330.0, 4.0 }, level;
	int n = grid_points(pts);
	unsigned int pair = (1u << LEVEL_TERM_LLC_MISS_RATIO) | (1u << LEVEL_TERM_LLC_REFS_PER_US);

	for (int i = 0; i < n; i++) {
		pts[i].x[LEVEL_TERM_LLC_REFS_PER_US] = 1000.0 * pts[i].x[LEVEL_TERM_LLC_MISS_RATIO];
		pts[i].level = truth(pts[i].x);
	}
	ASSERT_EQ(0, level_model_fit(pts, n, &m, note, sizeof(note), &self->err))
	TH_LOG("%s", self->err.msg);
	ASSERT_EQ(2, __builtin_popcount(m.terms));
	ASSERT_TRUE(m.terms & (1u << LEVEL_TERM_DRAM_GBPS));
	ASSERT_EQ(1, __builtin_popcount(m.terms & pair));
	ASSERT_NE(NULL, strstr(note, "left out, singular with the others: ")) TH_LOG("%s", note);
	/* on the plane the points span, either form of the pair predicts the truth */
	ASSERT_EQ(0, level_model_eval(&m, probe, LEVEL_TERMS_ALL, &level));
	ASSERT_LT(fabs(level - truth(probe)), 1e-9);
	ASSERT_LT(fabs(m.r2 - 1.0), 1e-12);
}

TEST_F(level_model, fit__refuses_too_few_points_or_nothing_to_fit)
{
	struct level_point pts[18];
	struct level_model m = { 0 };
	int n = grid_points(pts);

	ASSERT_EQ(-EINVAL, level_model_fit(pts, 2, &m, NULL, 0, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "too few")) TH_LOG("%s", self->err.msg);
	/* three varying signals and four points: one residual degree short */
	coloc_err_clear(&self->err);
	ASSERT_EQ(-EINVAL, level_model_fit(pts, 4, &m, NULL, 0, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "at least 5")) TH_LOG("%s", self->err.msg);
	for (int i = 0; i < n; i++)
		pts[i].level = 1.25;
	coloc_err_clear(&self->err);
	ASSERT_EQ(-EINVAL, level_model_fit(pts, n, &m, NULL, 0, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "nothing to fit")) TH_LOG("%s", self->err.msg);
	for (int i = 0; i < n; i++) {
		for (int t = 0; t < LEVEL_NR_TERMS; t++)
			pts[i].x[t] = 1.0;
		pts[i].level = 1.0 + i;
	}
	coloc_err_clear(&self->err);
	ASSERT_EQ(-EINVAL, level_model_fit(pts, n, &m, NULL, 0, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "no signal varies")) TH_LOG("%s", self->err.msg);
	pts[3].x[1] = NAN;
	coloc_err_clear(&self->err);
	ASSERT_EQ(-EINVAL, level_model_fit(pts, n, &m, NULL, 0, &self->err));
	ASSERT_STREQ("point 3: llc_refs_per_us is not a finite number", self->err.msg);
}

TEST_F(level_model, eval__clamps_at_one_and_needs_live_terms)
{
	struct level_model m = {
		.terms = (1u << LEVEL_TERM_LLC_MISS_RATIO) | (1u << LEVEL_TERM_DRAM_GBPS),
		.c0 = 0.5,
		.coef = { 1.0, 0, 0.1 },
	};
	double x[LEVEL_NR_TERMS] = { 0.6, 999.0, 3.0 }, level = 0;

	/* 0.5 + 0.6 + 0.3; refs is not in the model, so its value does not count */
	ASSERT_EQ(0, level_model_eval(&m, x, LEVEL_TERMS_ALL, &level));
	ASSERT_LT(fabs(level - 1.4), 1e-12);
	x[0] = 0.1;
	x[2] = 1.0;
	ASSERT_EQ(0, level_model_eval(&m, x, LEVEL_TERMS_ALL, &level));
	ASSERT_EQ(1.0, level);
	ASSERT_EQ(-ENODATA, level_model_eval(&m, x, 1u << LEVEL_TERM_LLC_MISS_RATIO, &level));
}

static struct level_model sample_model(void)
{
	struct level_model m = {
		.terms = (1u << LEVEL_TERM_LLC_MISS_RATIO) | (1u << LEVEL_TERM_DRAM_GBPS),
		.c0 = 0.97,
		.coef = { 1.0 / 3.0, 0, 0.0217 },
		.nr_points = 24,
		.r2 = 0.9312,
		.rms = 0.041,
		.machine = 0x0123456789abcdefULL,
	};
	return m;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = malloc(4096);

	*len = f && buf ? fread(buf, 1, 4095, f) : 0;
	if (f)
		fclose(f);
	if (buf)
		buf[*len] = '\0';
	return buf;
}

TEST_F(level_model, save_load__round_trips_exactly)
{
	struct level_model m = sample_model(), back;
	char path2[80];
	size_t len;
	char *text;

	ASSERT_EQ(0, level_model_save(&m, self->path, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, level_model_load(self->path, &back, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(m.terms, back.terms);
	ASSERT_EQ(m.c0, back.c0);
	for (int t = 0; t < LEVEL_NR_TERMS; t++)
		ASSERT_EQ(m.coef[t], back.coef[t]);
	ASSERT_EQ(m.nr_points, back.nr_points);
	ASSERT_EQ(m.r2, back.r2);
	ASSERT_EQ(m.rms, back.rms);
	ASSERT_EQ(m.machine, back.machine);
	text = read_all(self->path, &len);
	ASSERT_NE(NULL, strstr(text, "\nterms = llc_miss_ratio dram_gbps\n"));
	ASSERT_NE(NULL, strstr(text, "\nmachine = 0123456789abcdef\n"));
	ASSERT_EQ(NULL, strstr(text, "llc_refs_per_us ="));
	free(text);
	ASSERT_EQ(0, level_model_cache_path("/var/cache/coloc", m.machine, path2, sizeof(path2)));
	ASSERT_STREQ("/var/cache/coloc/level-0123456789abcdef.model", path2);
	ASSERT_EQ(-ENAMETOOLONG, level_model_cache_path("/var/cache/coloc", 1, path2, 20));
	ASSERT_EQ(-ENOENT, level_model_load("/nonexistent/l.model", &back, &self->err));
}

static const char good_text[] = "# a comment\n"
				"coloc-level-model 1\n"
				"machine = 0123456789abcdef\n"
				"points = 24\n"
				"terms = llc_miss_ratio dram_gbps\n"
				"c0 = 0.97\n"
				"llc_miss_ratio = 0.5\n"
				"dram_gbps = 0.02\n"
				"r2 = 0.93\n"
				"rms = 0.04\n";

TEST_F(level_model, parse__refuses_malformed_with_line_number)
{
	static const struct {
		const char *from, *to; /* replace the first from in good_text by to */
		const char *msg;
	} cases[] = {
		{ "coloc-level-model 1", "coloc-level-model 2",
		  "t:2: format version 2; this coloc reads 1: calibrate again" },
		{ "coloc-level-model 1", "coloc-profile 3", "t:2: not a level model" },
		{ "points = 24", "points = 2", "t:4: points must be a whole number in 3.." },
		{ "points = 24", "points = -5", "t:4: points must be" },
		{ "machine = 0123456789abcdef", "machine = 0123", "t:3: machine must be 16 hex" },
		{ "c0 = 0.97", "c0 = nan", "t:6: c0 must be a finite number, not \"nan\"" },
		{ "c0 = 0.97", "c0 = 0.97x", "t:6: c0 must be a finite number" },
		{ "c0 = 0.97", "c0: 0.97", "t:6: expected \"key = value\"" },
		{ "r2 = 0.93", "r2 = 1.5", "t:9: r2 must be in [0, 1], not 1.5" },
		{ "rms = 0.04", "rms = -1", "t:10: rms must not be negative" },
		{ "terms = llc_miss_ratio dram_gbps", "terms = llc_miss_ratio llc_miss_ratio",
		  "t:5: terms must name each" },
		{ "terms = llc_miss_ratio dram_gbps", "terms = llc_miss_ratio",
		  "t:8: a coefficient for dram_gbps, which terms (line 5) does not name" },
		{ "terms = llc_miss_ratio dram_gbps",
		  "terms = llc_miss_ratio dram_gbps llc_refs_per_us",
		  "t:10: terms (line 5) names llc_refs_per_us but the file ends without its "
		  "coefficient" },
		{ "dram_gbps = 0.02", "c0 = 0.02", "t:8: c0 given twice (first on line 6)" },
		{ "dram_gbps = 0.02", "llc_bogus = 1", "t:8: unknown key \"llc_bogus\"" },
		{ "rms = 0.04\n", "", "t:9: the file ends without \"rms\"" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char text[1024];
		const char *at = strstr(good_text, cases[i].from);
		struct level_model m;
		int n;

		ASSERT_NE(NULL, at);
		n = snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - good_text), good_text,
			     cases[i].to, at + strlen(cases[i].from));
		coloc_err_clear(&self->err);
		ASSERT_EQ(-EINVAL, level_model_parse("t", text, (size_t)n, &m, &self->err))
		TH_LOG("case %zu accepted", i);
		ASSERT_EQ(0, strncmp(cases[i].msg, self->err.msg, strlen(cases[i].msg)))
		TH_LOG("case %zu: %s", i, self->err.msg);
	}
}

TEST_F(level_model, parse__survives_random_mutations)
{
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	size_t good_len = strlen(good_text), accepted = 0;
	struct level_model m;

	ASSERT_EQ(0, level_model_parse("fuzz", good_text, good_len, &m, &self->err));
	ASSERT_EQ(0.5, m.coef[LEVEL_TERM_LLC_MISS_RATIO]);
	/* Flips, insertions, truncations: each must parse or fail with NAME:LINE. */
	for (int iter = 0; iter < 3000; iter++) {
		char text[sizeof(good_text) + 16];
		size_t len;

		memcpy(text, good_text, good_len);
		len = tu_mutate(text, good_len, 1 + iter % 4, "0123456789 -\n#.=", &rng);
		coloc_err_clear(&self->err);
		if (!level_model_parse("fuzz", text, len, &m, &self->err)) {
			accepted++;
			ASSERT_NE(0u, m.terms);
			ASSERT_EQ(0u, m.terms & ~LEVEL_TERMS_ALL);
			ASSERT_GE(m.nr_points, LEVEL_MODEL_MIN_POINTS);
			ASSERT_TRUE(isfinite(m.c0));
		} else {
			ASSERT_EQ(0, strncmp("fuzz:", self->err.msg, 5))
			TH_LOG("%s", self->err.msg);
			ASSERT_TRUE(self->err.msg[5] >= '1' && self->err.msg[5] <= '9')
			TH_LOG("%s", self->err.msg);
		}
	}
	TH_LOG("%zu of 3000 mutants still parsed", accepted);
}

TEST_HARNESS_MAIN
