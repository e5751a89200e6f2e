// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Writing a latency profile (profile.h) in its text format, atomically
 * (a new temporary file of an unpredictable name, fsync, rename): header records, layer records, one
 * record per measured row, "end". The reader (profile_parse.c) takes the
 * same records, so save -> load -> save is byte-identical.
 */
#define _GNU_SOURCE
#include "profile.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "file_temp.h"
#include "util.h"

static bool is_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isgraph((unsigned char)*s))
			return false;
	return true;
}

static bool is_text(const char *s)
{
	if (!isgraph((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!isprint((unsigned char)*s))
			return false;
	return isgraph((unsigned char)s[-1]);
}

static int check_writable(const struct profile *p, struct coloc_err *err)
{
	if (!is_token(p->model_name) || !is_text(p->machine.cpu_model) ||
	    !is_token(p->machine.isa) || !is_token(p->onednn_version) || !is_token(p->date)) {
		coloc_err_set(
			err, -EINVAL,
			"model name, ISA, oneDNN version and date must be single words and the CPU model printable text");
		return -EINVAL;
	}
	for (int i = 0; i < p->nr_layers; i++) {
		if (!is_token(p->layers[i].name)) {
			coloc_err_set(err, -EINVAL, "layer %d: name '%s' is empty or has spaces", i,
				      p->layers[i].name);
			return -EINVAL;
		}
		for (int v = 0; v < p->layers[i].nr_versions; v++) {
			if (!is_token(p->layers[i].version_names[v])) {
				coloc_err_set(
					err, -EINVAL,
					"layer %d: version %d name '%s' is empty or has spaces", i,
					v, p->layers[i].version_names[v]);
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* The three tables of a cell, each written as its own record of the same shape. */
static const uint64_t *table_median(const struct profile *p)
{
	return p->latency_ns;
}

static const uint64_t *table_ci_lo(const struct profile *p)
{
	return p->ci_lo_ns;
}

static const uint64_t *table_ci_hi(const struct profile *p)
{
	return p->ci_hi_ns;
}

static const struct {
	const char *key;
	const uint64_t *(*table)(const struct profile *p);
} lat_tables[] = {
	{ "lat", table_median },
	{ "lat-lo", table_ci_lo },
	{ "lat-hi", table_ci_hi },
};

static void write_lat_row(const struct profile *p, const uint64_t *table, const char *key, int i,
			  int v, int c, FILE *f)
{
	const uint64_t *row = table + (profile_latency_cell_const(p, i, v, c, 0) - p->latency_ns);
	bool any = false;

	for (int k = 0; k < p->nr_levels; k++)
		any |= row[k] != 0;
	if (!any)
		return;
	fprintf(f, "%s %d %d %d", key, i, v, c);
	for (int k = 0; k < p->nr_levels; k++) {
		if (row[k])
			fprintf(f, " %llu", (unsigned long long)row[k]);
		else
			fprintf(f, " -");
	}
	fputc('\n', f);
}

static void write_profile(const struct profile *p, FILE *f)
{
	char key[PROFILE_KEY_HEX_LEN + 1];

	profile_key_hex(&p->model_key, key);
	fprintf(f, "# coloc latency profile: format in models/PROFILE.md\n");
	fprintf(f, "coloc-profile %d\n", PROFILE_FORMAT_VERSION);
	fprintf(f, "model %s\n", p->model_name);
	fprintf(f, "model-key %s\n", key);
	fprintf(f, "cpu %s\n", p->machine.cpu_model);
	fprintf(f, "isa %s\n", p->machine.isa);
	fprintf(f, "cores %d\n", p->machine.nr_cores);
	fprintf(f, "llc-bytes %llu\n", (unsigned long long)p->machine.llc_bytes);
	fprintf(f, "onednn %s\n", p->onednn_version);
	fprintf(f, "date %s\n", p->date);
	fprintf(f, "stress %s\n", profile_stress_kind_name(p->stress_kind));
	fprintf(f, "iters %d\n", p->iters);
	fprintf(f, "profiled-cores %d\n", p->nr_cores);
	fprintf(f, "levels");
	for (int k = 0; k < p->nr_levels; k++)
		fprintf(f, " %d", p->levels[k]);
	fprintf(f, "\nlayers %d\n", p->nr_layers);
	for (int i = 0; i < p->nr_layers; i++) {
		fprintf(f, "layer %d %s %d", i, p->layers[i].name, p->layers[i].nr_versions);
		for (int v = 0; v < p->layers[i].nr_versions; v++)
			fprintf(f, " %s", p->layers[i].version_names[v]);
		fputc('\n', f);
	}
	for (int c = 1; c <= p->nr_cores; c++) {
		const double *g = &p->stress_gbps[(size_t)(c - 1) * (size_t)p->nr_levels];
		bool any = false;

		for (int k = 1; k < p->nr_levels; k++)
			any |= g[k] >= 0;
		if (!any)
			continue;
		fprintf(f, "stress-gbps %d", c);
		for (int k = 1; k < p->nr_levels; k++) {
			if (g[k] >= 0)
				fprintf(f, " %.6g", g[k]);
			else
				fprintf(f, " -");
		}
		fputc('\n', f);
	}
	if (p->conditions.known)
		fprintf(f, "conditions %llu %.4f %.2f %.4f\n",
			(unsigned long long)p->conditions.solo_ns, p->conditions.spread,
			p->conditions.loadavg, p->conditions.steal);
	for (int i = 0; p->conditions.known && i < p->conditions.nr_cold; i++)
		fprintf(f, "cold %.4f %.4f %llu %d\n", p->conditions.cold[i].ratio,
			p->conditions.cold[i].spread,
			(unsigned long long)p->conditions.cold[i].gap_ns,
			p->conditions.cold[i].pairs);
	for (int i = 0; i < p->nr_layers; i++)
		for (int v = 0; v < p->layers[i].nr_versions; v++)
			for (int c = 1; c <= p->nr_cores; c++)
				for (size_t t = 0; t < ARRAY_SIZE(lat_tables); t++)
					write_lat_row(p, lat_tables[t].table(p), lat_tables[t].key,
						      i, v, c, f);
	for (int i = 0; i < p->nr_layers && p->nr_levels > 1; i++) {
		fprintf(f, "slowdown %d", i);
		for (int k = 1; k < p->nr_levels; k++) {
			if (p->layers[i].slowdown[k] > 0)
				fprintf(f, " %.6g", p->layers[i].slowdown[k]);
			else
				fprintf(f, " -");
		}
		fputc('\n', f);
	}
	fprintf(f, "end\n");
}

int profile_save(const struct profile *p, const char *path, struct coloc_err *err)
{
	char tmp[4096];
	FILE *f;
	int fd, ret;

	ret = check_writable(p, err);
	if (ret)
		return ret;
	fd = file_temp_beside(path, tmp, sizeof(tmp));
	if (fd < 0) {
		coloc_err_set(err, fd, "%s: cannot create a temporary file beside it: %s", path,
			      strerror(-fd));
		return fd;
	}
	f = fdopen(fd, "we");
	if (!f) {
		ret = -errno;
		coloc_err_set(err, ret, "%s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return ret;
	}
	write_profile(p, f);
	if (fflush(f) || ferror(f) || fsync(fileno(f))) {
		ret = errno ? -errno : -EIO;
		coloc_err_set(err, ret, "%s: write failed: %s", tmp, strerror(-ret));
		fclose(f);
		unlink(tmp);
		return ret;
	}
	if (fclose(f)) {
		ret = -errno;
		coloc_err_set(err, ret, "%s: write failed: %s", tmp, strerror(errno));
		unlink(tmp);
		return ret;
	}
	if (rename(tmp, path)) {
		ret = -errno;
		coloc_err_set(err, ret, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
		unlink(tmp);
		return ret;
	}
	return 0;
}
