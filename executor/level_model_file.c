// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The PMU level model's file (level_model.h, documented in models/PROFILE.md):
 * a version line, then "key = value" lines, '#' comments and blank lines.
 * Every key appears exactly once, a coefficient exactly for each term the
 * "terms" line names. The reader is strict, because the file comes from a
 * cache that another machine or an interrupted run may have written: every
 * error reads "FILE:LINE: what is wrong", and tests/level_model_test.c
 * fuzzes it as the profile reader is fuzzed.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "file_temp.h"
#include "level_model.h"

#define LEVEL_FILE_MAGIC "coloc-level-model"
#define LEVEL_LINE_MAX 256
#define LEVEL_MAX_POINTS 100000000

/* The keys besides the coefficients of the terms, which use level_term_name(). */
enum level_key {
	LEVEL_KEY_MACHINE,
	LEVEL_KEY_POINTS,
	LEVEL_KEY_TERMS,
	LEVEL_KEY_C0,
	LEVEL_KEY_R2,
	LEVEL_KEY_RMS,
	LEVEL_KEY_COEF, /* + enum level_term */
	LEVEL_NR_KEYS = LEVEL_KEY_COEF + LEVEL_NR_TERMS,
};

static const char *const level_key_names[LEVEL_KEY_COEF] = {
	[LEVEL_KEY_MACHINE] = "machine", [LEVEL_KEY_POINTS] = "points", [LEVEL_KEY_TERMS] = "terms",
	[LEVEL_KEY_C0] = "c0",		 [LEVEL_KEY_R2] = "r2",		[LEVEL_KEY_RMS] = "rms",
};

static const char *level_key_name(int k)
{
	return k < LEVEL_KEY_COEF ? level_key_names[k] : level_term_name(k - LEVEL_KEY_COEF);
}

static int level_key_lookup(const char *key)
{
	for (int k = 0; k < LEVEL_NR_KEYS; k++)
		if (!strcmp(key, level_key_name(k)))
			return k;
	return -1;
}

static int level_write(const struct level_model *m, FILE *f)
{
	char terms[96];

	level_model_terms_str(m->terms, terms, sizeof(terms));
	fprintf(f,
		"# coloc interference level model: level = c0 + the sum of each term's\n"
		"# coefficient times its signal (models/PROFILE.md)\n"
		"%s %d\n",
		LEVEL_FILE_MAGIC, LEVEL_MODEL_FORMAT_VERSION);
	fprintf(f, "machine = %016" PRIx64 "\npoints = %d\nterms = %s\nc0 = %.17g\n", m->machine,
		m->nr_points, terms, m->c0);
	for (int t = 0; t < LEVEL_NR_TERMS; t++)
		if (m->terms & (1u << t))
			fprintf(f, "%s = %.17g\n", level_term_name(t), m->coef[t]);
	fprintf(f, "r2 = %.17g\nrms = %.17g\n", m->r2, m->rms);
	return ferror(f) ? -EIO : 0;
}

int level_model_save(const struct level_model *m, const char *path, struct coloc_err *err)
{
	char tmp[4096];
	FILE *f;
	int fd, ret;

	fd = file_temp_beside(path, tmp, sizeof(tmp));
	if (fd < 0)
		return coloc_err_set(err, fd, "%s: cannot create a temporary file beside it: %s",
				     path, strerror(-fd));
	f = fdopen(fd, "we");
	if (!f) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		return coloc_err_set(err, ret, "%s: %s", tmp, strerror(-ret));
	}
	ret = level_write(m, f);
	if (fclose(f) && !ret)
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return coloc_err_set(err, ret, "%s: write failed: %s", tmp, strerror(-ret));
	}
	if (rename(tmp, path)) {
		ret = -errno;
		unlink(tmp);
		return coloc_err_set(err, ret, "%s: cannot rename to %s: %s", tmp, path,
				     strerror(-ret));
	}
	return 0;
}

static bool level_parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return end != s && !*end && !errno && isfinite(*out);
}

static bool level_parse_terms(char *s, unsigned int *terms)
{
	char *save = NULL;

	*terms = 0;
	for (char *tok = strtok_r(s, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		int k = level_key_lookup(tok);

		if (k < LEVEL_KEY_COEF || (*terms & (1u << (k - LEVEL_KEY_COEF))))
			return false;
		*terms |= 1u << (k - LEVEL_KEY_COEF);
	}
	return *terms != 0;
}

/* One "key = value" line into m; seen[] and where[] record each key's line. */
static int level_parse_line(const char *name, int lineno, char *line, struct level_model *m,
			    int where[LEVEL_NR_KEYS], struct coloc_err *err)
{
	char *eq = strstr(line, " = "), *value, *end;
	unsigned long long u;
	double v;
	int k;

	if (!eq)
		return coloc_err_set(err, -EINVAL, "%s:%d: expected \"key = value\"", name, lineno);
	*eq = '\0';
	value = eq + 3;
	k = level_key_lookup(line);
	if (k < 0)
		return coloc_err_set(err, -EINVAL, "%s:%d: unknown key \"%s\"", name, lineno, line);
	if (where[k])
		return coloc_err_set(err, -EINVAL, "%s:%d: %s given twice (first on line %d)", name,
				     lineno, line, where[k]);
	where[k] = lineno;
	switch (k) {
	case LEVEL_KEY_MACHINE:
		errno = 0;
		u = strtoull(value, &end, 16);
		if (strlen(value) != 16 || *end || errno)
			return coloc_err_set(err, -EINVAL,
					     "%s:%d: machine must be 16 hex digits, not \"%s\"",
					     name, lineno, value);
		m->machine = u;
		return 0;
	case LEVEL_KEY_POINTS:
		errno = 0;
		u = strtoull(value, &end, 10);
		if (end == value || *end || errno || value[0] == '-' ||
		    u < LEVEL_MODEL_MIN_POINTS || u > LEVEL_MAX_POINTS)
			return coloc_err_set(
				err, -EINVAL,
				"%s:%d: points must be a whole number in %d..%d, not \"%s\"", name,
				lineno, LEVEL_MODEL_MIN_POINTS, LEVEL_MAX_POINTS, value);
		m->nr_points = (int)u;
		return 0;
	case LEVEL_KEY_TERMS:
		if (!level_parse_terms(value, &m->terms))
			return coloc_err_set(
				err, -EINVAL,
				"%s:%d: terms must name each of llc_miss_ratio, "
				"llc_refs_per_us, dram_gbps at most once, separated by "
				"spaces, at least one",
				name, lineno);
		return 0;
	default:
		break;
	}
	if (!level_parse_double(value, &v))
		return coloc_err_set(err, -EINVAL, "%s:%d: %s must be a finite number, not \"%s\"",
				     name, lineno, line, value);
	if (k == LEVEL_KEY_R2 && (v < 0 || v > 1))
		return coloc_err_set(err, -EINVAL, "%s:%d: r2 must be in [0, 1], not %g", name,
				     lineno, v);
	if (k == LEVEL_KEY_RMS && v < 0)
		return coloc_err_set(err, -EINVAL, "%s:%d: rms must not be negative, not %g", name,
				     lineno, v);
	if (k == LEVEL_KEY_C0)
		m->c0 = v;
	else if (k == LEVEL_KEY_R2)
		m->r2 = v;
	else if (k == LEVEL_KEY_RMS)
		m->rms = v;
	else
		m->coef[k - LEVEL_KEY_COEF] = v;
	return 0;
}

/* What must hold once every line is read: all keys, a coefficient exactly per term. */
static int level_check_complete(const char *name, int last, const struct level_model *m,
				const int where[LEVEL_NR_KEYS], struct coloc_err *err)
{
	for (int k = 0; k < LEVEL_KEY_COEF; k++)
		if (!where[k])
			return coloc_err_set(err, -EINVAL, "%s:%d: the file ends without \"%s\"",
					     name, last, level_key_name(k));
	for (int t = 0; t < LEVEL_NR_TERMS; t++) {
		int at = where[LEVEL_KEY_COEF + t];

		if ((m->terms & (1u << t)) && !at)
			return coloc_err_set(err, -EINVAL,
					     "%s:%d: terms (line %d) names %s but the file ends "
					     "without its coefficient",
					     name, last, where[LEVEL_KEY_TERMS],
					     level_term_name(t));
		if (!(m->terms & (1u << t)) && at)
			return coloc_err_set(err, -EINVAL,
					     "%s:%d: a coefficient for %s, which terms (line %d) "
					     "does not name",
					     name, at, level_term_name(t), where[LEVEL_KEY_TERMS]);
	}
	return 0;
}

int level_model_parse(const char *name, const char *text, size_t len, struct level_model *m,
		      struct coloc_err *err)
{
	int where[LEVEL_NR_KEYS] = { 0 }, lineno = 0, ret;
	struct level_model out = { 0 };
	bool have_version = false;
	size_t pos = 0;

	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = (nl ? (size_t)(nl - text) : len) - pos;
		char line[LEVEL_LINE_MAX];
		int version;
		char tail;

		lineno++;
		if (n >= sizeof(line))
			return coloc_err_set(err, -EINVAL, "%s:%d: line longer than %d bytes", name,
					     lineno, LEVEL_LINE_MAX - 1);
		if (memchr(text + pos, '\0', n))
			return coloc_err_set(err, -EINVAL, "%s:%d: a NUL byte in the line", name,
					     lineno);
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos += n + 1;
		if (!n || line[0] == '#')
			continue;
		if (!have_version) {
			if (sscanf(line, LEVEL_FILE_MAGIC " %d%c", &version, &tail) != 1 ||
			    strncmp(line, LEVEL_FILE_MAGIC " ", sizeof(LEVEL_FILE_MAGIC)))
				return coloc_err_set(err, -EINVAL,
						     "%s:%d: not a level model: expected \"%s %d\"",
						     name, lineno, LEVEL_FILE_MAGIC,
						     LEVEL_MODEL_FORMAT_VERSION);
			if (version != LEVEL_MODEL_FORMAT_VERSION)
				return coloc_err_set(
					err, -EINVAL,
					"%s:%d: format version %d; this coloc reads %d: "
					"calibrate again",
					name, lineno, version, LEVEL_MODEL_FORMAT_VERSION);
			have_version = true;
			continue;
		}
		ret = level_parse_line(name, lineno, line, &out, where, err);
		if (ret)
			return ret;
	}
	if (!have_version)
		return coloc_err_set(err, -EINVAL, "%s:%d: empty: no \"%s %d\" line", name,
				     lineno ? lineno : 1, LEVEL_FILE_MAGIC,
				     LEVEL_MODEL_FORMAT_VERSION);
	ret = level_check_complete(name, lineno, &out, where, err);
	if (ret)
		return ret;
	*m = out;
	return 0;
}

int level_model_load(const char *path, struct level_model *m, struct coloc_err *err)
{
	char text[LEVEL_NR_KEYS * LEVEL_LINE_MAX + 1024];
	size_t len;
	FILE *f;
	int ret;

	f = fopen(path, "re");
	if (!f)
		return coloc_err_set(err, -errno, "%s: cannot open: %s", path, strerror(errno));
	len = fread(text, 1, sizeof(text), f);
	ret = ferror(f) ? -EIO : 0;
	if (!ret && len == sizeof(text))
		ret = -EFBIG;
	fclose(f);
	if (ret == -EIO)
		return coloc_err_set(err, ret, "%s: read failed", path);
	if (ret)
		return coloc_err_set(err, ret, "%s: larger than %zu bytes: not a level model", path,
				     sizeof(text) - 1);
	return level_model_parse(path, text, len, m, err);
}

int level_model_cache_path(const char *dir, uint64_t machine, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/level-%016" PRIx64 ".model", dir, machine);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
