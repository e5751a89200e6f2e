// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * VELTAIR's published per-layer tables (data/veltair/, see its
 * README.md) as a struct policy_costs, used as they are: NAME.prof.csv has
 * one line per layer with the latency in µs at 8, 16, 24, ... cores (their
 * scheduler's unit of 8 cores), NAME.layers.csv the layer shapes
 * "CONV,H-W-IC-OC-KH-KW-PH-PW-SH-SW-G", from which each layer's MACs (its
 * share of the QoS budget) are computed. One kernel version, one level
 * (alone): the tables publish nothing else.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "sim.h"

#define VELTAIR_CORE_STEP 8
#define VELTAIR_MAX_LAYERS 4096
#define VELTAIR_LINE_MAX 256

/* The file prefix in dir matching name without regard to case (ResNet50 for "resnet50"). */
static int find_prefix(const char *dir, const char *name, char *prefix, size_t len,
		       struct coloc_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = strlen(name);
	int ret = -ENOENT;

	if (!d)
		return coloc_err_set(err, -errno,
				     "VELTAIR tables: cannot open %s: %m (give the folder with "
				     "--tables)",
				     dir);
	while ((e = readdir(d))) {
		if (strlen(e->d_name) == n + strlen(".prof.csv") &&
		    !strncasecmp(e->d_name, name, n) && !strcmp(e->d_name + n, ".prof.csv")) {
			snprintf(prefix, len, "%.*s", (int)n, e->d_name);
			ret = 0;
			break;
		}
	}
	closedir(d);
	if (ret)
		return coloc_err_set(err, ret, "VELTAIR tables: no %s.prof.csv in %s", name, dir);
	return 0;
}

/* Reads up to max lines of path into lines[] (without their newlines); the count or -errno. */
static int read_lines(const char *path, char (*lines)[VELTAIR_LINE_MAX], int max,
		      struct coloc_err *err)
{
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return coloc_err_set(err, -errno, "VELTAIR tables: cannot open %s: %m", path);
	while (n < max && fgets(lines[n], VELTAIR_LINE_MAX, f)) {
		size_t l = strcspn(lines[n], "\r\n");

		if (lines[n][l] == '\0' && !feof(f)) {
			fclose(f);
			return coloc_err_set(err, -EINVAL, "%s:%d: line too long", path, n + 1);
		}
		lines[n][l] = '\0';
		if (lines[n][0])
			n++;
	}
	if (n == max && !feof(f) && fgetc(f) != EOF) {
		fclose(f);
		return coloc_err_set(err, -EINVAL, "%s: more than %d layers", path, max);
	}
	fclose(f);
	return n;
}

/* Latencies in µs separated by commas; their count or -EINVAL. */
static int parse_prof_line(const char *line, uint64_t *us, int max)
{
	int n = 0;

	for (const char *p = line;; p++) {
		char *end;
		unsigned long long v;

		if (n == max || *p < '0' || *p > '9')
			return -EINVAL;
		v = strtoull(p, &end, 10);
		if (!v)
			return -EINVAL;
		us[n++] = v;
		p = end;
		if (!*p)
			return n;
		if (*p != ',')
			return -EINVAL;
	}
}

/* MACs of "CONV,H-W-IC-OC-KH-KW-PH-PW-SH-SW-G": output size x OC x IC/G x KH x KW. */
static int parse_layer_ops(const char *line, uint64_t *ops)
{
	long h, w, ic, oc, kh, kw, ph, pw, sh, sw, g, oh, ow;
	int n = 0;

	if (sscanf(line, "CONV,%ld-%ld-%ld-%ld-%ld-%ld-%ld-%ld-%ld-%ld-%ld%n", &h, &w, &ic, &oc,
		   &kh, &kw, &ph, &pw, &sh, &sw, &g, &n) != 11 ||
	    line[n] || h < 1 || w < 1 || ic < 1 || oc < 1 || kh < 1 || kw < 1 || ph < 0 || pw < 0 ||
	    sh < 1 || sw < 1 || g < 1 || ic % g)
		return -EINVAL;
	oh = (h + 2 * ph - kh) / sh + 1;
	ow = (w + 2 * pw - kw) / sw + 1;
	if (oh < 1 || ow < 1)
		return -EINVAL;
	*ops = (uint64_t)oh * ow * oc * (ic / g) * kh * kw;
	return 0;
}

int sim_table_load_veltair(const char *dir, const char *name, struct policy_table *t,
			   struct coloc_err *err)
{
	char(*lines)[VELTAIR_LINE_MAX] = NULL;
	char prefix[256], path[4096];
	uint64_t us[POLICY_MAX_CORE_COUNTS];
	int nr_layers, nr_counts = 0, ret;

	*t = (struct policy_table){ 0 };
	ret = find_prefix(dir, name, prefix, sizeof(prefix), err);
	if (ret)
		return ret;
	lines = malloc(VELTAIR_MAX_LAYERS * sizeof(*lines));
	if (!lines)
		return coloc_err_set(err, -ENOMEM, "VELTAIR tables: out of memory");
	snprintf(path, sizeof(path), "%s/%s.prof.csv", dir, prefix);
	nr_layers = ret = read_lines(path, lines, VELTAIR_MAX_LAYERS, err);
	if (ret < 0)
		goto fail;
	for (int l = 0; l < nr_layers; l++) {
		int n = parse_prof_line(lines[l], us, POLICY_MAX_CORE_COUNTS);

		if (n < 1 || (l && n != nr_counts)) {
			ret = coloc_err_set(err, -EINVAL,
					    "%s:%d: want %s latencies in µs (whole numbers > 0) "
					    "separated by commas",
					    path, l + 1, l ? "as many" : "one or more");
			goto fail;
		}
		if (!l) {
			nr_counts = n;
			t->core_counts = calloc((size_t)n, sizeof(*t->core_counts));
			t->latency_ns = calloc((size_t)nr_layers * n, sizeof(*t->latency_ns));
			t->layer_ops = calloc((size_t)nr_layers, sizeof(*t->layer_ops));
			if (!t->core_counts || !t->latency_ns || !t->layer_ops) {
				ret = coloc_err_set(err, -ENOMEM, "VELTAIR tables: out of memory");
				goto fail;
			}
			for (int ci = 0; ci < n; ci++)
				t->core_counts[ci] = (ci + 1) * VELTAIR_CORE_STEP;
		}
		for (int ci = 0; ci < n; ci++)
			t->latency_ns[(size_t)l * n + ci] = us[ci] * 1000;
	}
	if (!nr_layers) {
		ret = coloc_err_set(err, -EINVAL, "%s: no layers", path);
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/%s.layers.csv", dir, prefix);
	ret = read_lines(path, lines, VELTAIR_MAX_LAYERS, err);
	if (ret < 0)
		goto fail;
	if (ret != nr_layers) {
		ret = coloc_err_set(err, -EINVAL, "%s: %d layers, but %s.prof.csv has %d", path,
				    ret, prefix, nr_layers);
		goto fail;
	}
	for (int l = 0; l < nr_layers; l++) {
		if (parse_layer_ops(lines[l], &t->layer_ops[l])) {
			ret = coloc_err_set(err, -EINVAL,
					    "%s:%d: want CONV,H-W-IC-OC-KH-KW-PH-PW-SH-SW-G", path,
					    l + 1);
			goto fail;
		}
	}
	snprintf(t->name, sizeof(t->name), "veltair:%.48s", prefix);
	t->costs = (struct policy_costs){
		.nr_layers = nr_layers,
		.nr_versions = 1,
		.nr_core_counts = nr_counts,
		.nr_levels = 1,
		.core_counts = t->core_counts,
		.latency_ns = t->latency_ns,
		.layer_ops = t->layer_ops,
	};
	ret = policy_costs_check(&t->costs, err);
	if (ret) {
		coloc_err_prefix(err, "%s", t->name);
		goto fail;
	}
	free(lines);
	return 0;
fail:
	free(lines);
	policy_table_free(t);
	return ret;
}

/* "scaled:NAME": our profile of NAME scaled to VELTAIR's machine (table_scaled.c). */
static int load_scaled(const char *name, const struct sim_table_dirs *dirs, struct policy_table *t,
		       struct coloc_err *err)
{
	struct sim_scaling s;
	struct policy_table ours;
	int ret;

	*t = (struct policy_table){ 0 };
	if (!*name || strchr(name, ':') || strchr(name, '/'))
		return coloc_err_set(err, -EINVAL,
				     "scaled:%s: want scaled:NAME, a model NAME of %s", name,
				     dirs->models);
	ret = sim_scaling_fit(dirs, &s, err);
	if (ret)
		return ret;
	ret = sim_table_load(name, dirs, &ours, err);
	if (ret)
		return ret;
	ret = sim_table_scale(&ours, &s, t, err);
	policy_table_free(&ours);
	return ret;
}

int sim_table_load(const char *spec, const struct sim_table_dirs *dirs, struct policy_table *t,
		   struct coloc_err *err)
{
	static const char veltair[] = "veltair:", scaled[] = "scaled:";
	char path[4096];

	if (!strncmp(spec, veltair, strlen(veltair)))
		return sim_table_load_veltair(dirs->veltair, spec + strlen(veltair), t, err);
	if (!strncmp(spec, scaled, strlen(scaled)))
		return load_scaled(spec + strlen(scaled), dirs, t, err);
	if (strchr(spec, '/') || strstr(spec, ".model") || strstr(spec, ".onnx"))
		return sim_table_load_profile(spec, dirs->profiles, t, err);
	if (!*spec || strchr(spec, ':'))
		return coloc_err_set(err, -EINVAL,
				     "model table '%s': give veltair:NAME, a model NAME of %s, or "
				     "a model file's path",
				     spec, dirs->models);
	if (snprintf(path, sizeof(path), "%s/%s.model", dirs->models, spec) >= (int)sizeof(path))
		return coloc_err_set(err, -ENAMETOOLONG, "model table '%s': path too long", spec);
	return sim_table_load_profile(path, dirs->profiles, t, err);
}
