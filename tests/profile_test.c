// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the latency profile (executor/profile.c): save/load round trips
 * every field and is byte-stable, malformed files are rejected with
 * FILE:LINE messages, lookup interpolates between measured levels as worked
 * out by hand, the slowdown summary and hashes match independent
 * computations. bin/coloc-profile end to end: profile_tool_test.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "profile_fixture.h"
#include "testutil.h"
#include "coloc/shm.h"
#include "model_open.h"
#include "profile_host.h"
#include "profile_tool.h"
#include "util.h"

static const int test_levels[] = { 0, 30, 60, 100 };
static const int test_versions[] = { 1, 2, 3 };

/* A value no two cells share, so a cell read from the wrong place is caught. */
static uint64_t cell_value(int layer, int version, int cores, int level_idx)
{
	return 1000000ULL * (uint64_t)(layer + 1) + 10000ULL * (uint64_t)(version + 1) +
	       100ULL * (uint64_t)cores + (uint64_t)level_idx + 1;
}

/* A measured cell: its median and an interval around it that no other cell shares either. */
static void set_cell(struct profile *p, int l, int v, int c, int k)
{
	uint64_t *lo, *hi;

	profile_ci_cells(p, l, v, c, k, &lo, &hi);
	*profile_latency_cell(p, l, v, c, k) = cell_value(l, v, c, k);
	*lo = cell_value(l, v, c, k) - 7 - (uint64_t)k;
	*hi = cell_value(l, v, c, k) + 11 + (uint64_t)k;
}

static struct profile *make_profile(bool leave_holes)
{
	struct coloc_err err = { 0 };
	struct profile *p = profile_new(3, test_versions, 2, 4, test_levels, &err);

	if (!p)
		return NULL;
	snprintf(p->model_name, sizeof(p->model_name), "tiny_net");
	for (int i = 0; i < PROFILE_KEY_BYTES; i++)
		p->model_key.b[i] = (unsigned char)(0x01 + 0x22 * i);
	snprintf(p->machine.cpu_model, sizeof(p->machine.cpu_model), "Test CPU  @ 2.0GHz");
	p->machine.nr_cores = 2;
	p->machine.llc_bytes = 314572800;
	snprintf(p->machine.isa, sizeof(p->machine.isa), "avx2");
	snprintf(p->onednn_version, sizeof(p->onednn_version), "2.6.3");
	snprintf(p->date, sizeof(p->date), "2026-11-29T23:59:00Z");
	p->stress_kind = PROFILE_STRESS_MEMBW;
	p->iters = 7;
	for (int l = 0; l < 3; l++) {
		snprintf(p->layers[l].name, sizeof(p->layers[l].name), "layer_%d", l);
		for (int v = 0; v < test_versions[l]; v++)
			snprintf(p->layers[l].version_names[v], PROFILE_VERSION_NAME_LEN,
				 "ver-%d-%d", l, v);
		for (int v = 0; v < test_versions[l]; v++)
			for (int c = 1; c <= 2; c++)
				for (int k = 0; k < 4; k++)
					if (!leave_holes || (l + v + c + k) % 3)
						set_cell(p, l, v, c, k);
	}
	p->stress_gbps[0 * 4 + 1] = 0.75;
	p->stress_gbps[0 * 4 + 3] = 2.5;
	p->stress_gbps[1 * 4 + 2] = 1.125;
	profile_update_slowdown(p);
	return p;
}

TEST_F(profile, save_load__round_trips_every_field)
{
	struct profile *p = make_profile(true), *q;
	char *first, *second;
	size_t first_len, second_len;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err));
	q = profile_load(self->path, &self->err);
	ASSERT_NE(NULL, q) TH_LOG("%s", self->err.msg);

	ASSERT_STREQ("tiny_net", q->model_name);
	ASSERT_TRUE(profile_key_equal(&p->model_key, &q->model_key));
	ASSERT_FALSE(q->model_key_old);
	ASSERT_STREQ("Test CPU  @ 2.0GHz", q->machine.cpu_model);
	ASSERT_EQ(2, q->machine.nr_cores);
	ASSERT_EQ(314572800ULL, q->machine.llc_bytes);
	ASSERT_STREQ("avx2", q->machine.isa);
	ASSERT_STREQ("2.6.3", q->onednn_version);
	ASSERT_STREQ("2026-11-29T23:59:00Z", q->date);
	ASSERT_EQ(PROFILE_STRESS_MEMBW, q->stress_kind);
	ASSERT_EQ(7, q->iters);
	ASSERT_EQ(2, q->nr_cores);
	ASSERT_EQ(4, q->nr_levels);
	for (int k = 0; k < 4; k++)
		ASSERT_EQ(test_levels[k], q->levels[k]);
	ASSERT_EQ(3, q->nr_layers);
	ASSERT_TRUE(profile_same_setup(p, q));
	for (int l = 0; l < 3; l++) {
		ASSERT_STREQ(p->layers[l].name, q->layers[l].name);
		ASSERT_EQ(test_versions[l], q->layers[l].nr_versions);
		for (int v = 0; v < test_versions[l]; v++) {
			ASSERT_STREQ(p->layers[l].version_names[v], q->layers[l].version_names[v]);
			for (int c = 1; c <= 2; c++) {
				for (int k = 0; k < 4; k++) {
					bool measured = (l + v + c + k) % 3;
					uint64_t *lo, *hi;

					profile_ci_cells(q, l, v, c, k, &lo, &hi);
					ASSERT_EQ(measured ? cell_value(l, v, c, k) : 0,
						  *profile_latency_cell(q, l, v, c, k));
					ASSERT_EQ(measured ? cell_value(l, v, c, k) - 7 - k : 0,
						  *lo);
					ASSERT_EQ(measured ? cell_value(l, v, c, k) + 11 + k : 0,
						  *hi);
				}
			}
		}
		for (int k = 1; k < 4; k++)
			ASSERT_LE(fabs(p->layers[l].slowdown[k] - q->layers[l].slowdown[k]),
				  1e-5 * p->layers[l].slowdown[k]);
	}
	ASSERT_EQ(0.75, q->stress_gbps[1]);
	ASSERT_EQ(2.5, q->stress_gbps[3]);
	ASSERT_EQ(1.125, q->stress_gbps[4 + 2]);
	ASSERT_LT(q->stress_gbps[2], 0);
	ASSERT_LT(q->stress_gbps[4 + 1], 0);
	ASSERT_EQ(profile_nr_missing(p), profile_nr_missing(q));

	/* The written form is a fixed point: saving what was loaded gives the same bytes. */
	first = tu_read_file(self->path, &first_len);
	ASSERT_NE(NULL, first);
	ASSERT_EQ(0, profile_save(q, self->path, &self->err));
	second = tu_read_file(self->path, &second_len);
	ASSERT_NE(NULL, second);
	ASSERT_EQ(first_len, second_len);
	ASSERT_EQ(0, memcmp(first, second, first_len));
	free(first);
	free(second);
	profile_free(q);
	profile_free(p);
}

TEST_F(profile, nr_missing__counts_unmeasured_cells)
{
	struct profile *full = make_profile(false), *holes = make_profile(true);
	size_t expected = 0;

	ASSERT_NE(NULL, full);
	ASSERT_NE(NULL, holes);
	ASSERT_EQ(0, profile_nr_missing(full));
	for (int l = 0; l < 3; l++)
		for (int v = 0; v < test_versions[l]; v++)
			for (int c = 1; c <= 2; c++)
				for (int k = 0; k < 4; k++)
					expected += (l + v + c + k) % 3 == 0;
	ASSERT_EQ(expected, profile_nr_missing(holes));
	profile_free(full);
	profile_free(holes);
}

/* Replaces line `line` (1-based) of text with `with` (NULL: delete it). */
static char *replace_line(const char *text, int line, const char *with)
{
	size_t len = strlen(text);
	char *out = malloc(len + strlen(with ? with : "") + 2);
	const char *s = text;
	char *o = out;

	for (int n = 1; *s; n++) {
		const char *nl = strchr(s, '\n');
		size_t l = nl ? (size_t)(nl - s + 1) : strlen(s);

		if (n == line) {
			if (with)
				o += sprintf(o, "%s\n", with);
		} else {
			memcpy(o, s, l);
			o += l;
		}
		s += l;
	}
	*o = '\0';
	return out;
}

/* Line numbers in the file make_profile(false) saves: see write_profile(). */
#define LINE_MODEL_KEY 4
#define LINE_CPU 5
#define LINE_ISA 6
#define LINE_DATE 10
#define LINE_STRESS 11
#define LINE_LEVELS 14
#define LINE_LAYERS 15
#define LINE_LAYER1 17
#define LINE_GBPS1 19
#define LINE_LAT_LO1 (LINE_GBPS1 + 3) /* lat-lo 0 0 1, after stress-gbps 2 and lat 0 0 1 */
#define LINE_END 0 /* in cases[]: the last line, "end" */

TEST_F(profile, load__rejects_malformed_with_file_line)
{
	static const struct {
		int line; /* line to replace */
		const char *with; /* NULL: delete it */
		int err_line; /* line the message must name */
		const char *msg; /* part of the message */
	} cases[] = {
		{ 2, "coloc-profile 1", 2, "format version 1" },
		{ 2, "coloc-profile 2", 2, "older coloc whose kernels or cells differ" },
		{ 2, "coloc-profile 3", 2, "measure the profile again" },
		{ 2, "coloc-profile 5", 2, "measure the profile again" },
		{ LINE_ISA, NULL, LINE_ISA, "expected 'isa'" },
		{ LINE_MODEL_KEY, "model-key 0123", LINE_MODEL_KEY, "64 lowercase hex" },
		{ LINE_MODEL_KEY,
		  "model-key 0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
		  LINE_MODEL_KEY, "64 lowercase hex" },
		/* format 9 takes no key of before (format 8's FNV-1a 'model-hash') */
		{ LINE_MODEL_KEY, "model-hash 0123456789abcdef", LINE_MODEL_KEY,
		  "expected 'model-key'" },
		{ LINE_CPU, NULL, LINE_CPU, "expected 'cpu'" },
		{ LINE_DATE, "date yesterday", LINE_DATE, "YYYY-MM-DD" },
		{ LINE_STRESS, "stress cpu", LINE_STRESS, "not llc or membw" },
		{ LINE_LEVELS, "levels 0 60 30", LINE_LEVELS, "increase strictly" },
		{ LINE_LEVELS, "levels 10 30", LINE_LEVELS, "first level must be 0" },
		{ LINE_LEVELS, "levels 0 30 60 101", LINE_LEVELS, "0..100" },
		{ LINE_LAYERS, "layers 1000", LINE_LAYERS, "too short" },
		{ LINE_LAYERS, "layers 2", LINE_LAYER1 + 1, "unknown record" },
		{ LINE_LAYER1, "layer 1 layer_1 2 ver-1-0", LINE_LAYER1, "declares 2 versions" },
		{ LINE_LAYER1, "layer 2 layer_1 2 ver-1-0 ver-1-1", LINE_LAYER1, "layer 2 where" },
		{ LINE_LAYER1, "layer 1 layer_1 7 a b c d e f g", LINE_LAYER1, "version count" },
		{ LINE_GBPS1, "stress-gbps 3 1 2 3", LINE_GBPS1, "cores (value 1) is not an integer" },
		{ LINE_GBPS1, "stress-gbps 1 1 -2 3", LINE_GBPS1, "stress GB/s (value 3)" },
		{ LINE_GBPS1, "stress-gbps 1 1 nan 3", LINE_GBPS1, "(value 3) is not a number" },
		{ LINE_GBPS1, "lat 1 2 1 1 2 3 4", LINE_GBPS1, "version (value 2)" },
		{ LINE_GBPS1, "lat 0 0 1 1 2 3", LINE_GBPS1, "found 6 fields" },
		{ LINE_GBPS1, "lat 0 0 1 1 2 3 x9", LINE_GBPS1, "latency (ns) (value 7)" },
		{ LINE_GBPS1, "lat 0 0 1 1 2 3 0", LINE_GBPS1, "latency (ns) (value 7)" },
		{ LINE_GBPS1, "lat 0 0 1 1 2 3 99999999999999999999", LINE_GBPS1, "latency" },
		{ LINE_GBPS1, "lat 0 0 2 1 2 3 4", LINE_GBPS1 + 5, "duplicate 'lat'" },
		{ LINE_LAT_LO1, "lat-lo 0 0 1 1 2 3", LINE_LAT_LO1, "'lat-lo' takes" },
		{ LINE_LAT_LO1, NULL, LINE_END, "layer 0 version 0 cores 1 level 0: lat-lo, lat" },
		{ LINE_LAT_LO1, "lat-lo 0 0 1 1 2 3 999999999", LINE_END, "cores 1 level 100:" },
		{ LINE_GBPS1, "slowdown 0 1 0 1", LINE_GBPS1, "> 0" },
		{ LINE_GBPS1, "latency 0 0 1 1 2 3 4", LINE_GBPS1, "unknown record" },
		{ LINE_GBPS1, " lat 0 0 1 1 2 3 4", LINE_GBPS1, "whitespace" },
		{ LINE_GBPS1, "end", LINE_GBPS1 + 1, "after 'end'" },
	};
	struct profile *p = make_profile(false);
	char *good;
	size_t good_len;
	int nr_lines = 0;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err));
	profile_free(p);
	good = tu_read_file(self->path, &good_len);
	ASSERT_NE(NULL, good);
	for (size_t i = 0; i < good_len; i++)
		nr_lines += good[i] == '\n';

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *bad = replace_line(good, cases[i].line, cases[i].with);
		char prefix[192];

		snprintf(prefix, sizeof(prefix), "%s:%d: ", self->path,
			 cases[i].err_line == LINE_END ? nr_lines - !cases[i].with :
							 cases[i].err_line);
		ASSERT_EQ(0, tu_write_file(self->path, bad, strlen(bad)));
		coloc_err_clear(&self->err);
		p = profile_load(self->path, &self->err);
		ASSERT_EQ(NULL, p) TH_LOG("case %zu was accepted", i);
		ASSERT_EQ(0, strncmp(prefix, self->err.msg, strlen(prefix)))
		TH_LOG("case %zu: '%s' does not start with '%s'", i, self->err.msg, prefix);
		ASSERT_NE(NULL, strstr(self->err.msg, cases[i].msg))
		TH_LOG("case %zu: '%s' lacks '%s'", i, self->err.msg, cases[i].msg);
		free(bad);
	}

	/* Truncation: without "end", cut mid-line, and with a NUL byte inside. */
	ASSERT_EQ(0, tu_write_file(self->path, good, good_len - 4));
	coloc_err_clear(&self->err);
	ASSERT_EQ(NULL, profile_load(self->path, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "without 'end'")) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, tu_write_file(self->path, good, good_len - 10));
	coloc_err_clear(&self->err);
	ASSERT_EQ(NULL, profile_load(self->path, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "does not end with a newline"))
	TH_LOG("%s", self->err.msg);
	good[50] = '\0';
	ASSERT_EQ(0, tu_write_file(self->path, good, good_len));
	coloc_err_clear(&self->err);
	ASSERT_EQ(NULL, profile_load(self->path, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "not printable")) TH_LOG("%s", self->err.msg);
	coloc_err_clear(&self->err);
	ASSERT_EQ(NULL, profile_load("/nonexistent/p.profile", &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "No such file")) TH_LOG("%s", self->err.msg);
	free(good);
}

/* A byte string no message may hold: the file's own text. */
#define SECRET "s3cr3t-4f2a"

TEST_F(profile, load__quotes_no_text_of_the_file)
{
	static const struct {
		int line;
		const char *with;
	} cases[] = {
		{ 1, SECRET },
		{ 2, "coloc-profile " SECRET },
		{ LINE_MODEL_KEY, "model-key " SECRET },
		{ LINE_ISA, SECRET " avx2" },
		{ LINE_ISA, "isa " SECRET SECRET SECRET },
		{ LINE_DATE, "date " SECRET },
		{ LINE_STRESS, "stress " SECRET },
		{ LINE_LEVELS, "levels 0 " SECRET },
		{ LINE_LAYER1, "layer 1 " SECRET SECRET SECRET SECRET SECRET SECRET " 1 v" },
		{ LINE_GBPS1, "stress-gbps 1 1 " SECRET " 3" },
		{ LINE_GBPS1, "lat 0 0 1 1 2 3 " SECRET },
		{ LINE_GBPS1, SECRET " 0 0 1" },
		{ LINE_GBPS1, "end\n" SECRET },
		{ LINE_GBPS1, SECRET "\x01" },
	};
	struct profile *p = make_profile(false);
	char *good;
	size_t good_len;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err));
	profile_free(p);
	good = tu_read_file(self->path, &good_len);
	ASSERT_NE(NULL, good);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *bad = replace_line(good, cases[i].line, cases[i].with);

		ASSERT_EQ(0, tu_write_file(self->path, bad, strlen(bad)));
		coloc_err_clear(&self->err);
		ASSERT_EQ(NULL, profile_load(self->path, &self->err)) TH_LOG("case %zu", i);
		/* main: "expected 'coloc-profile', found 's3cr3t-4f2a'" and the like */
		EXPECT_EQ(NULL, strstr(self->err.msg, "s3cr3t")) TH_LOG("case %zu: %s", i,
									self->err.msg);
		EXPECT_EQ(NULL, strstr(self->err.msg, "4f2a")) TH_LOG("case %zu: %s", i,
								      self->err.msg);
		free(bad);
	}
	free(good);
}

/* buf[from, to) as comment lines (legal after 'end'), the last ending at to. */
static void comment_lines(char *buf, size_t from, size_t to)
{
	for (size_t at = from; at < to; at += 100) {
		size_t n = to - at < 100 ? to - at : 100;

		memset(buf + at, '#', n);
		buf[at + n - 1] = '\n';
	}
}

TEST_F(profile, load__a_file_bigger_than_its_header_allows_is_refused)
{
	struct profile *p = make_profile(false);
	size_t bound = profile_max_bytes(3, 2, 4), good_len;
	char *good, *padded;
	int fd;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err));
	profile_free(p);
	good = tu_read_file(self->path, &good_len);
	ASSERT_NE(NULL, good);
	ASSERT_LT(good_len, bound);
	padded = malloc(bound + 1);
	ASSERT_NE(NULL, padded);
	memcpy(padded, good, good_len);
	comment_lines(padded, good_len, bound);
	ASSERT_EQ(0, tu_write_file(self->path, padded, bound));
	coloc_err_clear(&self->err);
	p = profile_load(self->path, &self->err);
	EXPECT_NE(NULL, p) TH_LOG("at the bound: %s", self->err.msg);
	profile_free(p);
	comment_lines(padded, good_len, bound + 1);
	ASSERT_EQ(0, tu_write_file(self->path, padded, bound + 1));
	coloc_err_clear(&self->err);
	/* main parsed it: comments are legal anywhere */
	EXPECT_EQ(NULL, profile_load(self->path, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "more than a profile")) TH_LOG("%s", self->err.msg);
	/* a GiB less a byte, a hole past the header: refused having read the header only */
	fd = open(self->path, O_WRONLY | O_TRUNC);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)good_len, write(fd, good, good_len));
	ASSERT_EQ(0, ftruncate(fd, (1 << 30) - 1));
	close(fd);
	coloc_err_clear(&self->err);
	EXPECT_EQ(NULL, profile_load(self->path, &self->err));
	EXPECT_NE(NULL, strstr(self->err.msg, "not read")) TH_LOG("%s", self->err.msg);
	free(padded);
	free(good);
}

TEST_F(profile, parse__survives_random_mutations)
{
	struct profile *p = make_profile(true);
	uint64_t rng = 0x2545f4914f6cdd1dULL;
	size_t good_len, accepted = 0;
	char *good;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, profile_save(p, self->path, &self->err));
	profile_free(p);
	good = tu_read_file(self->path, &good_len);
	ASSERT_NE(NULL, good);
	/* Flips, insertions, truncations: each must parse or fail with FILE:LINE. */
	for (int iter = 0; iter < 3000; iter++) {
		char *text = malloc(good_len + 16);
		size_t len;

		ASSERT_NE(NULL, text);
		memcpy(text, good, good_len);
		len = tu_mutate(text, good_len, 1 + iter % 4, "0123456789 -\n#.", &rng);
		coloc_err_clear(&self->err);
		p = profile_parse("fuzz", text, len, &self->err);
		if (p) {
			accepted++;
			ASSERT_GE(p->nr_layers, 1);
			profile_free(p);
		} else {
			ASSERT_EQ(0, strncmp("fuzz:", self->err.msg, 5))
			TH_LOG("%s", self->err.msg);
			ASSERT_TRUE(self->err.msg[5] >= '1' && self->err.msg[5] <= '9')
			TH_LOG("%s", self->err.msg);
		}
		free(text);
	}
	TH_LOG("%zu of 3000 mutants still parsed", accepted);
	free(good);
}

TEST_F(profile, lookup__interpolates_between_measured_levels)
{
	static const int levels[] = { 0, 30, 60 };
	int one = 1;
	struct profile *p = profile_new(1, &one, 2, 3, levels, &self->err);
	uint64_t ns = 0;

	ASSERT_NE(NULL, p);
	*profile_latency_cell(p, 0, 0, 1, 0) = 1000;
	*profile_latency_cell(p, 0, 0, 1, 1) = 1300;
	*profile_latency_cell(p, 0, 0, 1, 2) = 2200;

	ASSERT_EQ(0, profile_lookup(p, 0, 0, 1, 0, &ns));
	ASSERT_EQ(1000, ns);
	ASSERT_EQ(0, profile_lookup(p, 0, 0, 1, 30, &ns));
	ASSERT_EQ(1300, ns);
	/* 15 is halfway from alone (1000) to 30 (1300). */
	ASSERT_EQ(0, profile_lookup(p, 0, 0, 1, 15, &ns));
	ASSERT_EQ(1150, ns);
	/* 40 is a third of the way from 30 (1300) to 60 (2200). */
	ASSERT_EQ(0, profile_lookup(p, 0, 0, 1, 40, &ns));
	ASSERT_EQ(1600, ns);
	/* Beyond the highest measured level: the highest level's latency. */
	ASSERT_EQ(0, profile_lookup(p, 0, 0, 1, 95.5, &ns));
	ASSERT_EQ(2200, ns);

	ASSERT_EQ(-ENOENT, profile_lookup(p, 0, 0, 2, 0, &ns));
	*profile_latency_cell(p, 0, 0, 2, 0) = 800;
	ASSERT_EQ(-ENOENT, profile_lookup(p, 0, 0, 2, 10, &ns));
	ASSERT_EQ(-EINVAL, profile_lookup(p, 1, 0, 1, 0, &ns));
	ASSERT_EQ(-EINVAL, profile_lookup(p, 0, 1, 1, 0, &ns));
	ASSERT_EQ(-EINVAL, profile_lookup(p, 0, 0, 3, 0, &ns));
	ASSERT_EQ(-EINVAL, profile_lookup(p, 0, 0, 0, 0, &ns));
	ASSERT_EQ(-EINVAL, profile_lookup(p, 0, 0, 1, 100.5, &ns));
	ASSERT_EQ(-EINVAL, profile_lookup(p, 0, 0, 1, -1, &ns));
	ASSERT_EQ(-EINVAL, profile_lookup(p, 0, 0, 1, NAN, &ns));
	profile_free(p);
}

TEST_F(profile, update_slowdown__geometric_mean_of_off_core_ratios)
{
	static const int levels[] = { 0, 50 };
	int two = 2;
	struct profile *p = profile_new(1, &two, 2, 2, levels, &self->err);

	ASSERT_NE(NULL, p);
	/* On 1 core (stressor on the other core): ratios 1.2 and 1.5. */
	*profile_latency_cell(p, 0, 0, 1, 0) = 1000;
	*profile_latency_cell(p, 0, 0, 1, 1) = 1200;
	*profile_latency_cell(p, 0, 1, 1, 0) = 2000;
	*profile_latency_cell(p, 0, 1, 1, 1) = 3000;
	/* On all cores the stressor shares them: this 3x must not count. */
	*profile_latency_cell(p, 0, 0, 2, 0) = 1000;
	*profile_latency_cell(p, 0, 0, 2, 1) = 3000;
	profile_update_slowdown(p);
	ASSERT_LT(fabs(p->layers[0].slowdown[1] - sqrt(1.2 * 1.5)), 1e-12);

	*profile_latency_cell(p, 0, 0, 1, 1) = 0;
	*profile_latency_cell(p, 0, 1, 1, 1) = 0;
	profile_update_slowdown(p);
	ASSERT_EQ(0, p->layers[0].slowdown[1]);
	profile_free(p);
}

/* The 95 % CI ranks from the binomial tables: 9 runs (2, 8), 10 (2, 9), 20 (6, 15). */
TEST_F(profile, median_ci__order_statistic_ranks_by_hand)
{
	static const struct {
		int n, lo_rank, hi_rank;
	} cases[] = { { 9, 2, 8 }, { 10, 2, 9 }, { 20, 6, 15 }, { 5, 1, 5 }, { 1, 1, 1 } };

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int n = cases[i].n;
		uint64_t v[20], median, lo, hi;

		/* ranks r = 1..n hold 100 r, stored in a scrambled order */
		for (int r = 1; r <= n; r++)
			v[(r * 7) % n] = 100 * (uint64_t)r;
		profile_median_ci(v, n, &median, &lo, &hi);
		ASSERT_EQ(n % 2 ? 100 * (uint64_t)(n + 1) / 2 : 100 * (uint64_t)n / 2 + 50, median)
		TH_LOG("n %d", n);
		ASSERT_EQ(100 * (uint64_t)cases[i].lo_rank, lo) TH_LOG("n %d", n);
		ASSERT_EQ(100 * (uint64_t)cases[i].hi_rank, hi) TH_LOG("n %d", n);
	}
}

/* Sets the row (layer, version, cores) to medians m[] with intervals m -/+ w. */
static void set_row(struct profile *p, int l, int v, int c, const uint64_t *m, uint64_t w)
{
	for (int k = 0; k < p->nr_levels; k++) {
		uint64_t *lo, *hi;

		profile_ci_cells(p, l, v, c, k, &lo, &hi);
		*profile_latency_cell(p, l, v, c, k) = m[k];
		*lo = m[k] - w;
		*hi = m[k] + w;
	}
}

/*
 * A synthetic profile with one row of each kind, checked against what the
 * intervals say by hand: rising (passes), dipping below alone within the
 * intervals (passes), below alone beyond them (fails at 30), falling from
 * 30 to 60 beyond them (fails at 60); co-located rows and an incomplete
 * row are not checked.
 */
TEST_F(profile, check__slowdown_at_least_one_and_monotone_within_ci)
{
	static const uint64_t rising[] = { 1000, 1100, 1200, 1300 };
	static const uint64_t dipping[] = { 1000, 980, 1010, 1020 };
	static const uint64_t below[] = { 1000, 900, 1100, 1200 };
	static const uint64_t falling[] = { 1000, 1500, 1300, 1600 };
	static const uint64_t colocated[] = { 1000, 500, 400, 300 };
	int versions[] = { 2, 1, 1, 1 };
	struct profile *p = profile_new(4, versions, 2, 4, test_levels, &self->err);
	struct profile_check ck;

	ASSERT_NE(NULL, p);
	set_row(p, 0, 0, 1, rising, 50);
	set_row(p, 0, 1, 1, dipping, 30);
	set_row(p, 1, 0, 1, below, 20);
	set_row(p, 2, 0, 1, falling, 20);
	set_row(p, 3, 0, 1, falling, 20);
	*profile_latency_cell(p, 3, 0, 1, 2) = 0; /* not measured: the row is skipped */
	for (int l = 0; l < 4; l++)
		for (int v = 0; v < versions[l]; v++)
			set_row(p, l, v, 2, colocated, 10);
	profile_check(p, &ck);
	ASSERT_EQ(4, ck.nr_rows);
	ASSERT_EQ(2, ck.nr_pass);
	/* below: 920 < 980 at 30; dipping: 1010 >= 970 */
	ASSERT_EQ(1, ck.below_one[1]);
	ASSERT_EQ(0, ck.below_one[2]);
	ASSERT_EQ(0, ck.below_one[3]);
	/* falling: 1320 < 1480 at 60; nothing below its previous level at 100 */
	ASSERT_EQ(1, ck.falling[2]);
	ASSERT_EQ(0, ck.falling[3]);
	ASSERT_LT(fabs(ck.mean_slowdown[1] - pow(1.1 * 0.98 * 0.9 * 1.5, 0.25)), 1e-12);
	ASSERT_LT(fabs(ck.mean_slowdown[3] - pow(1.3 * 1.02 * 1.2 * 1.6, 0.25)), 1e-12);

	/* Intervals wide enough to hold both dips: every row passes. */
	set_row(p, 1, 0, 1, below, 60);
	set_row(p, 2, 0, 1, falling, 110);
	profile_check(p, &ck);
	ASSERT_EQ(4, ck.nr_pass);
	profile_free(p);
}

TEST_F(profile, new__rejects_bad_dimensions)
{
	static const int bad_order[] = { 0, 60, 30 };
	static const int no_alone[] = { 10, 30 };
	int versions[2] = { 1, PROFILE_MAX_VERSIONS + 1 };

	ASSERT_EQ(NULL, profile_new(0, versions, 2, 3, test_levels, &self->err));
	ASSERT_EQ(NULL, profile_new(1, versions, 0, 3, test_levels, &self->err));
	ASSERT_EQ(NULL, profile_new(1, versions, 2, 3, bad_order, &self->err));
	ASSERT_EQ(NULL, profile_new(1, versions, 2, 2, no_alone, &self->err));
	coloc_err_clear(&self->err);
	ASSERT_EQ(NULL, profile_new(2, versions, 2, 3, test_levels, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "version count 7")) TH_LOG("%s", self->err.msg);
}

TEST_F(profile, fnv1a64__matches_reference_vectors)
{
	/* Published FNV-1a 64 test vectors (the machine's hash in cache names). */
	ASSERT_EQ(0xcbf29ce484222325ULL, profile_fnv1a64("", 0, PROFILE_FNV1A64_INIT));
	ASSERT_EQ(0xaf63dc4c8601ec8cULL, profile_fnv1a64("a", 1, PROFILE_FNV1A64_INIT));
	ASSERT_EQ(0x85944171f73967e8ULL, profile_fnv1a64("foobar", 6, PROFILE_FNV1A64_INIT));
}

TEST_F(profile, cache_dir__override_then_env_then_default)
{
	struct profile_machine m = { .nr_cores = 4, .llc_bytes = 1 << 20 };
	char path[256], expected[256];
	struct profile_key key;

	unsetenv("COLOC_CACHE_DIR");
	ASSERT_STREQ(PROFILE_DEFAULT_CACHE_DIR, profile_cache_dir(NULL));
	setenv("COLOC_CACHE_DIR", "/tmp/env-cache", 1);
	ASSERT_STREQ("/tmp/env-cache", profile_cache_dir(NULL));
	ASSERT_STREQ("/tmp/flag-cache", profile_cache_dir("/tmp/flag-cache"));

	snprintf(m.cpu_model, sizeof(m.cpu_model), "CPU X");
	snprintf(m.isa, sizeof(m.isa), "avx2");
	for (int i = 0; i < PROFILE_KEY_BYTES; i++)
		key.b[i] = (unsigned char)i;
	ASSERT_EQ(0, profile_cache_path("/c", "net", &key, &m, path, sizeof(path)));
	snprintf(expected, sizeof(expected),
		 "/c/net-000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f-"
		 "%016llx.profile",
		 (unsigned long long)profile_fnv1a64("CPU X|avx2|4|1048576", 20,
						     PROFILE_FNV1A64_INIT));
	ASSERT_STREQ(expected, path);
	ASSERT_EQ(-ENAMETOOLONG, profile_cache_path("/c", "net", &key, &m, path, 20));
}

TEST_F(profile, machine_detect__matches_proc_and_sysconf)
{
	struct profile_machine m, other;

	ASSERT_EQ(0, profile_machine_detect(&m));
	ASSERT_EQ(sysconf(_SC_NPROCESSORS_ONLN), m.nr_cores);
	ASSERT_NE(0, strlen(m.cpu_model));
	ASSERT_EQ(0, profile_machine_detect(&other));
	ASSERT_TRUE(profile_machine_equal(&m, &other));
	/* the oneDNN this test links names the ISA it dispatches to */
	ASSERT_NE(0, strlen(m.isa));
	ASSERT_EQ(NULL, strchr(m.isa, ' '));
	other.llc_bytes++;
	ASSERT_FALSE(profile_machine_equal(&m, &other));
	ASSERT_NE(profile_machine_hash(&m), profile_machine_hash(&other));
	/* the same CPU with oneDNN capped to another ISA is another machine */
	other = m;
	snprintf(other.isa, sizeof(other.isa), "%s",
		 strcmp(m.isa, "avx2") ? "avx2" : "avx512_core");
	ASSERT_FALSE(profile_machine_equal(&m, &other));
	ASSERT_NE(profile_machine_hash(&m), profile_machine_hash(&other));
}

TEST_HARNESS_MAIN
