// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Latency profiles (profile.h): the in-memory table, its text format's
 * writer and strict reader, lookup with interpolation between stress levels,
 * and the pieces of the cache key (model file hash, machine identity).
 *
 * The reader walks the text line by line with a fixed order of header
 * records, then layer records, then measurements in any order, then "end";
 * it checks every number's syntax and range and every index against the
 * header, so a truncated, hand-edited or hostile file yields "FILE:LINE:
 * what is wrong" and never a crash or an oversized allocation. The writer
 * prints the same records, so save -> load -> save is byte-identical.
 */
#define _GNU_SOURCE
#include "profile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "util.h"

#define PROFILE_MAX_LINE 4096
#define PROFILE_MAX_FIELDS 16
#define PROFILE_MAX_CELLS (32u << 20) /* 256 MiB of latencies: far beyond any real model */
#define PROFILE_MAX_LATENCY_NS 1000000000000000ULL /* 11.6 days */
#define PROFILE_MAX_RATIO 1e6

const char *profile_stress_kind_name(enum profile_stress_kind kind)
{
	return kind == PROFILE_STRESS_MEMBW ? "membw" : "llc";
}

static size_t cells_per_version(const struct profile *p)
{
	return (size_t)p->nr_cores * (size_t)p->nr_levels;
}

struct profile *profile_new(int nr_layers, const int *nr_versions, int nr_cores, int nr_levels,
			    const int *levels, struct coloc_err *err)
{
	struct profile *p;
	size_t cells = 0;

	if (nr_layers < 1 || nr_layers > PROFILE_MAX_LAYERS) {
		coloc_err_set(err, -EINVAL, "layer count %d outside 1..%d", nr_layers,
			      PROFILE_MAX_LAYERS);
		return NULL;
	}
	if (nr_cores < 1 || nr_cores > PROFILE_MAX_CORES) {
		coloc_err_set(err, -EINVAL, "core count %d outside 1..%d", nr_cores,
			      PROFILE_MAX_CORES);
		return NULL;
	}
	if (nr_levels < 1 || nr_levels > PROFILE_MAX_LEVELS || levels[0] != 0) {
		coloc_err_set(err, -EINVAL, "levels must be 0 then up to %d stress levels",
			      PROFILE_MAX_LEVELS - 1);
		return NULL;
	}
	for (int k = 1; k < nr_levels; k++) {
		if (levels[k] <= levels[k - 1] || levels[k] > 100) {
			coloc_err_set(err, -EINVAL,
				      "stress levels must increase strictly within 1..100");
			return NULL;
		}
	}
	for (int i = 0; i < nr_layers; i++) {
		if (nr_versions[i] < 1 || nr_versions[i] > PROFILE_MAX_VERSIONS) {
			coloc_err_set(err, -EINVAL, "layer %d: version count %d outside 1..%d", i,
				      nr_versions[i], PROFILE_MAX_VERSIONS);
			return NULL;
		}
		cells += (size_t)nr_versions[i] * (size_t)nr_cores * (size_t)nr_levels;
	}
	if (cells > PROFILE_MAX_CELLS) {
		coloc_err_set(err, -E2BIG, "table of %zu cells is larger than the limit of %u",
			      cells, PROFILE_MAX_CELLS);
		return NULL;
	}

	p = calloc(1, sizeof(*p));
	if (!p)
		goto nomem;
	p->nr_layers = nr_layers;
	p->nr_cores = nr_cores;
	p->nr_levels = nr_levels;
	memcpy(p->levels, levels, (size_t)nr_levels * sizeof(*levels));
	p->iters = 1;
	p->layers = calloc((size_t)nr_layers, sizeof(*p->layers));
	p->layer_offset = calloc((size_t)nr_layers, sizeof(*p->layer_offset));
	p->latency_ns = calloc(cells, sizeof(*p->latency_ns));
	p->ci_lo_ns = calloc(cells, sizeof(*p->ci_lo_ns));
	p->ci_hi_ns = calloc(cells, sizeof(*p->ci_hi_ns));
	p->stress_gbps = calloc(cells_per_version(p), sizeof(*p->stress_gbps));
	if (!p->layers || !p->layer_offset || !p->latency_ns || !p->ci_lo_ns || !p->ci_hi_ns ||
	    !p->stress_gbps)
		goto nomem;
	cells = 0;
	for (int i = 0; i < nr_layers; i++) {
		p->layers[i].nr_versions = nr_versions[i];
		p->layer_offset[i] = cells;
		cells += (size_t)nr_versions[i] * cells_per_version(p);
	}
	for (size_t i = 0; i < cells_per_version(p); i++)
		p->stress_gbps[i] = -1;
	return p;
nomem:
	profile_free(p);
	coloc_err_set(err, -ENOMEM, "out of memory for a profile of %zu cells", cells);
	return NULL;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	free(p->layers);
	free(p->layer_offset);
	free(p->latency_ns);
	free(p->ci_lo_ns);
	free(p->ci_hi_ns);
	free(p->stress_gbps);
	free(p);
}

const uint64_t *profile_latency_cell_const(const struct profile *p, int layer, int version,
					   int cores, int level_idx)
{
	if (layer < 0 || layer >= p->nr_layers || version < 0 ||
	    version >= p->layers[layer].nr_versions || cores < 1 || cores > p->nr_cores ||
	    level_idx < 0 || level_idx >= p->nr_levels)
		return NULL;
	return &p->latency_ns[p->layer_offset[layer] + (size_t)version * cells_per_version(p) +
			      (size_t)(cores - 1) * (size_t)p->nr_levels + (size_t)level_idx];
}

uint64_t *profile_latency_cell(struct profile *p, int layer, int version, int cores, int level_idx)
{
	return (uint64_t *)profile_latency_cell_const(p, layer, version, cores, level_idx);
}

void profile_ci_cells(struct profile *p, int layer, int version, int cores, int level_idx,
		      uint64_t **lo, uint64_t **hi)
{
	uint64_t *cell = profile_latency_cell(p, layer, version, cores, level_idx);

	*lo = cell ? p->ci_lo_ns + (cell - p->latency_ns) : NULL;
	*hi = cell ? p->ci_hi_ns + (cell - p->latency_ns) : NULL;
}

size_t profile_nr_missing(const struct profile *p)
{
	size_t cells = 0, missing = 0;

	for (int i = 0; i < p->nr_layers; i++)
		cells += (size_t)p->layers[i].nr_versions * cells_per_version(p);
	for (size_t i = 0; i < cells; i++)
		missing += p->latency_ns[i] == 0;
	return missing;
}

/*
 * When the machine has several cores, only core counts below the maximum
 * count: there the stressor ran on other cores and the ratio is contention
 * for the cache and memory, whereas at the maximum it shared the layer's
 * cores and the ratio is mostly time-slicing.
 */
static int slowdown_max_cores(const struct profile *p)
{
	return p->nr_cores > 1 ? p->nr_cores - 1 : 1;
}

void profile_update_slowdown(struct profile *p)
{
	int max_cores = slowdown_max_cores(p);

	for (int l = 0; l < p->nr_layers; l++) {
		struct profile_layer *layer = &p->layers[l];

		layer->slowdown[0] = 0;
		for (int k = 1; k < p->nr_levels; k++) {
			double log_sum = 0;
			int n = 0;

			for (int v = 0; v < layer->nr_versions; v++) {
				for (int c = 1; c <= max_cores; c++) {
					uint64_t alone = *profile_latency_cell(p, l, v, c, 0);
					uint64_t loaded = *profile_latency_cell(p, l, v, c, k);

					if (alone && loaded) {
						log_sum += log((double)loaded / (double)alone);
						n++;
					}
				}
			}
			layer->slowdown[k] = n ? exp(log_sum / n) : 0;
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void profile_median_ci(uint64_t *v, int n, uint64_t *median, uint64_t *lo, uint64_t *hi)
{
	double below = 0, term = ldexp(1.0, -n); /* P(Binom(n, 1/2) = 0) */
	int j = 1;

	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	/*
	 * [v(j), v(n+1-j)] (1-based) misses the median with probability
	 * 2 P(B <= j-1), B ~ Binom(n, 1/2): take the largest j keeping that <= 5 %.
	 */
	for (int i = 0; i < n / 2; i++) {
		below += term;
		if (2 * below > 0.05)
			break;
		j = i + 1;
		term = term * (n - i) / (i + 1);
	}
	*lo = v[j - 1];
	*hi = v[n - j];
}

void profile_check(const struct profile *p, struct profile_check *out)
{
	int max_cores = slowdown_max_cores(p);
	double log_sum[PROFILE_MAX_LEVELS] = { 0 };

	memset(out, 0, sizeof(*out));
	for (int l = 0; l < p->nr_layers; l++) {
		for (int v = 0; v < p->layers[l].nr_versions; v++) {
			for (int c = 1; c <= max_cores; c++) {
				const uint64_t *med = profile_latency_cell_const(p, l, v, c, 0);
				size_t at = (size_t)(med - p->latency_ns);
				const uint64_t *lo = p->ci_lo_ns + at, *hi = p->ci_hi_ns + at;
				bool pass = true, complete = true;

				for (int k = 0; k < p->nr_levels; k++)
					complete &= med[k] && lo[k] && hi[k];
				if (!complete)
					continue;
				out->nr_rows++;
				for (int k = 1; k < p->nr_levels; k++) {
					log_sum[k] += log((double)med[k] / (double)med[0]);
					if (hi[k] < lo[0]) {
						out->below_one[k]++;
						pass = false;
					}
					if (k >= 2 && hi[k] < lo[k - 1]) {
						out->falling[k]++;
						pass = false;
					}
				}
				out->nr_pass += pass;
			}
		}
	}
	for (int k = 1; k < p->nr_levels && out->nr_rows; k++)
		out->mean_slowdown[k] = exp(log_sum[k] / out->nr_rows);
	if (out->nr_rows)
		out->mean_slowdown[0] = 1;
}

int profile_lookup(const struct profile *p, int layer, int version, int cores, double level,
		   uint64_t *latency_ns)
{
	const uint64_t *row = profile_latency_cell_const(p, layer, version, cores, 0);
	int hi = 1;
	double lo_ns, hi_ns, frac;

	if (!row || !(level >= 0 && level <= 100))
		return -EINVAL;
	if (level == 0 || p->nr_levels == 1) {
		if (!row[0])
			return -ENOENT;
		*latency_ns = row[0];
		return 0;
	}
	while (hi < p->nr_levels - 1 && p->levels[hi] < level)
		hi++;
	if (level >= p->levels[hi]) {
		if (!row[hi])
			return -ENOENT;
		*latency_ns = row[hi];
		return 0;
	}
	if (!row[hi - 1] || !row[hi])
		return -ENOENT;
	lo_ns = (double)row[hi - 1];
	hi_ns = (double)row[hi];
	frac = (level - p->levels[hi - 1]) / (double)(p->levels[hi] - p->levels[hi - 1]);
	*latency_ns = (uint64_t)llround(lo_ns + (hi_ns - lo_ns) * frac);
	return 0;
}

bool profile_machine_equal(const struct profile_machine *a, const struct profile_machine *b)
{
	return !strcmp(a->cpu_model, b->cpu_model) && !strcmp(a->isa, b->isa) &&
	       a->nr_cores == b->nr_cores && a->llc_bytes == b->llc_bytes;
}

bool profile_same_setup(const struct profile *a, const struct profile *b)
{
	/* another oneDNN may pick other kernels: its latencies are not ours */
	if (strcmp(a->model_name, b->model_name) || a->model_hash != b->model_hash ||
	    strcmp(a->onednn_version, b->onednn_version) ||
	    !profile_machine_equal(&a->machine, &b->machine) || a->stress_kind != b->stress_kind ||
	    a->nr_cores != b->nr_cores || a->nr_levels != b->nr_levels ||
	    memcmp(a->levels, b->levels, (size_t)a->nr_levels * sizeof(a->levels[0])) ||
	    a->nr_layers != b->nr_layers)
		return false;
	for (int i = 0; i < a->nr_layers; i++) {
		const struct profile_layer *la = &a->layers[i], *lb = &b->layers[i];

		if (strcmp(la->name, lb->name) || la->nr_versions != lb->nr_versions)
			return false;
		for (int v = 0; v < la->nr_versions; v++)
			if (strcmp(la->version_names[v], lb->version_names[v]))
				return false;
	}
	return true;
}

uint64_t profile_fnv1a64(const void *data, size_t len, uint64_t hash)
{
	const unsigned char *b = data;

	for (size_t i = 0; i < len; i++) {
		hash ^= b[i];
		hash *= 0x100000001b3ULL;
	}
	return hash;
}

int profile_hash_file(const char *path, uint64_t *hash)
{
	unsigned char buf[65536];
	uint64_t h = PROFILE_FNV1A64_INIT;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			int ret = -errno;

			if (errno == EINTR)
				continue;
			close(fd);
			return ret;
		}
		h = profile_fnv1a64(buf, (size_t)n, h);
	}
	close(fd);
	*hash = h;
	return 0;
}

uint64_t profile_machine_hash(const struct profile_machine *m)
{
	char id[PROFILE_CPU_MODEL_LEN + PROFILE_ISA_LEN + 64];
	int n = snprintf(id, sizeof(id), "%s|%s|%d|%llu", m->cpu_model, m->isa, m->nr_cores,
			 (unsigned long long)m->llc_bytes);

	return profile_fnv1a64(id, (size_t)n < sizeof(id) ? (size_t)n : sizeof(id) - 1,
			       PROFILE_FNV1A64_INIT);
}

const char *profile_cache_dir(const char *override)
{
	const char *env = getenv("COLOC_CACHE_DIR");

	if (override && *override)
		return override;
	if (env && *env)
		return env;
	return PROFILE_DEFAULT_CACHE_DIR;
}

int profile_cache_path(const char *dir, const char *model_name, uint64_t model_hash,
		       const struct profile_machine *m, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s-%016llx-%016llx.profile", dir, model_name,
			 (unsigned long long)model_hash,
			 (unsigned long long)profile_machine_hash(m));

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- writer ----------------------------------------------------------------- */

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
	fprintf(f, "# coloc latency profile: format in models/PROFILE.md\n");
	fprintf(f, "coloc-profile %d\n", PROFILE_FORMAT_VERSION);
	fprintf(f, "model %s\n", p->model_name);
	fprintf(f, "model-hash %016llx\n", (unsigned long long)p->model_hash);
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
	int ret;

	ret = check_writable(p, err);
	if (ret)
		return ret;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp)) {
		coloc_err_set(err, -ENAMETOOLONG, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	f = fopen(tmp, "we");
	if (!f) {
		ret = -errno;
		coloc_err_set(err, ret, "%s: cannot create: %s", tmp, strerror(errno));
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

/* ---- reader ----------------------------------------------------------------- */

struct parser {
	const char *name;
	const char *pos, *end;
	int line;
	char buf[PROFILE_MAX_LINE + 1]; /* split into fields */
	char whole[PROFILE_MAX_LINE + 1]; /* kept unsplit, for rest */
	char *field[PROFILE_MAX_FIELDS];
	int nr_fields;
	const char *rest; /* the text after the first field, for "cpu" */
	struct coloc_err *err;
};

static int parse_error(struct parser *ps, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int parse_error(struct parser *ps, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return coloc_err_set(ps->err, -EINVAL, "%s:%d: %s", ps->name, ps->line, msg);
}

/*
 * Reads the next record (skipping blank and '#' lines) and splits it into
 * fields. Returns 1 with a record, 0 at the end of the text, -EINVAL on error.
 */
static int next_record(struct parser *ps)
{
	for (;;) {
		const char *nl;
		size_t len;
		char *s;

		if (ps->pos >= ps->end)
			return 0;
		ps->line++;
		nl = memchr(ps->pos, '\n', (size_t)(ps->end - ps->pos));
		len = nl ? (size_t)(nl - ps->pos) : (size_t)(ps->end - ps->pos);
		if (!nl)
			return parse_error(ps,
					   "last line does not end with a newline (truncated?)");
		if (len > PROFILE_MAX_LINE)
			return parse_error(ps, "line longer than %d bytes", PROFILE_MAX_LINE);
		memcpy(ps->buf, ps->pos, len);
		ps->buf[len] = '\0';
		memcpy(ps->whole, ps->buf, len + 1);
		ps->pos = nl + 1;
		for (size_t i = 0; i < len; i++) {
			unsigned char ch = (unsigned char)ps->buf[i];

			if (ch != '\t' && !isprint(ch))
				return parse_error(ps, "byte 0x%02x at column %zu is not printable",
						   ch, i + 1);
		}
		if (len == 0 || ps->buf[0] == '#')
			continue;
		if (ps->buf[0] == ' ' || ps->buf[0] == '\t' || ps->buf[len - 1] == ' ' ||
		    ps->buf[len - 1] == '\t')
			return parse_error(ps, "leading or trailing whitespace");

		ps->nr_fields = 0;
		ps->rest = NULL;
		s = ps->buf;
		while (*s) {
			if (ps->nr_fields == PROFILE_MAX_FIELDS)
				return parse_error(ps, "more than %d fields", PROFILE_MAX_FIELDS);
			ps->field[ps->nr_fields++] = s;
			s += strcspn(s, " \t");
			if (*s) {
				*s++ = '\0';
				s += strspn(s, " \t");
			}
			if (ps->nr_fields == 1)
				ps->rest = ps->whole + (s - ps->buf);
		}
		return 1;
	}
}

static int field_u64(struct parser *ps, int i, const char *what, uint64_t min, uint64_t max,
		     uint64_t *out)
{
	const char *s = ps->field[i];
	unsigned long long v;

	errno = 0;
	if (!cli_all_digits(s) || (v = strtoull(s, NULL, 10), errno) || v < min || v > max)
		return parse_error(ps, "%s '%s' is not an integer in %llu..%llu", what, s,
				   (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

static int field_int(struct parser *ps, int i, const char *what, int min, int max, int *out)
{
	uint64_t v;
	int ret = field_u64(ps, i, what, (uint64_t)min, (uint64_t)max, &v);

	if (!ret)
		*out = (int)v;
	return ret;
}

/* A non-negative ratio or rate, or "-" (unknown) stored as missing. */
static int field_ratio(struct parser *ps, int i, const char *what, double missing, double *out)
{
	const char *s = ps->field[i];
	char *end;
	double v;

	if (!strcmp(s, "-")) {
		*out = missing;
		return 0;
	}
	errno = 0;
	v = strtod(s, &end);
	if (!isdigit((unsigned char)s[0]) || errno || *end || !isfinite(v) || v < 0 ||
	    v > PROFILE_MAX_RATIO || strpbrk(s, "xX"))
		return parse_error(ps, "%s '%s' is not a number in 0..%g or '-'", what, s,
				   PROFILE_MAX_RATIO);
	*out = v;
	return 0;
}

static int field_string(struct parser *ps, int i, const char *what, char *dst, size_t size)
{
	size_t len = strlen(ps->field[i]);

	if (len >= size)
		return parse_error(ps, "%s '%.40s...' longer than %zu bytes", what, ps->field[i],
				   size - 1);
	memcpy(dst, ps->field[i], len + 1);
	return 0;
}

/* Reads the next record, which must be `key` with exactly nr_fields fields (0: any >= 2). */
static int expect_record(struct parser *ps, const char *key, int nr_fields)
{
	int ret = next_record(ps);

	if (ret < 0)
		return ret;
	if (ret == 0)
		return parse_error(ps, "file ends where '%s' was expected", key);
	if (strcmp(ps->field[0], key))
		return parse_error(ps, "expected '%s', found '%.40s'", key, ps->field[0]);
	if (nr_fields ? ps->nr_fields != nr_fields : ps->nr_fields < 2)
		return parse_error(ps, "'%s' takes %d value%s, found %d", key,
				   nr_fields ? nr_fields - 1 : 1, nr_fields == 2 ? "" : "s",
				   ps->nr_fields - 1);
	return 0;
}

static int parse_date(struct parser *ps, char *dst, size_t size)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(ps->field[1], "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end || strlen(ps->field[1]) != 20)
		return parse_error(ps, "date '%.40s' is not YYYY-MM-DDTHH:MM:SSZ", ps->field[1]);
	return field_string(ps, 1, "date", dst, size);
}

/* Header fields before the layer list; kept until the table can be allocated. */
struct profile_header {
	struct profile h;
	int nr_versions[PROFILE_MAX_LAYERS];
};

static int parse_header(struct parser *ps, struct profile_header *hd)
{
	struct profile *h = &hd->h;
	uint64_t v;
	int ret, format;

	if ((ret = expect_record(ps, "coloc-profile", 2)) ||
	    (ret = field_int(ps, 1, "format version", 1, 1000, &format)))
		return ret;
	if (format < PROFILE_FORMAT_VERSION)
		return parse_error(
			ps,
			"format version %d is from an older coloc whose kernels or cells differ from this one's (this reader knows %d); measure the profile again with coloc-profile",
			format, PROFILE_FORMAT_VERSION);
	if (format != PROFILE_FORMAT_VERSION)
		return parse_error(ps, "format version %d, this reader knows %d", format,
				   PROFILE_FORMAT_VERSION);
	if ((ret = expect_record(ps, "model", 2)) ||
	    (ret = field_string(ps, 1, "model name", h->model_name, sizeof(h->model_name))))
		return ret;
	if ((ret = expect_record(ps, "model-hash", 2)))
		return ret;
	if (strlen(ps->field[1]) != 16 || strspn(ps->field[1], "0123456789abcdef") != 16)
		return parse_error(ps, "model-hash '%.40s' is not 16 lowercase hex digits",
				   ps->field[1]);
	h->model_hash = strtoull(ps->field[1], NULL, 16);
	if ((ret = expect_record(ps, "cpu", 0)))
		return ret;
	if (strlen(ps->rest) >= sizeof(h->machine.cpu_model))
		return parse_error(ps, "cpu model longer than %zu bytes",
				   sizeof(h->machine.cpu_model) - 1);
	memcpy(h->machine.cpu_model, ps->rest, strlen(ps->rest) + 1);
	if ((ret = expect_record(ps, "isa", 2)) ||
	    (ret = field_string(ps, 1, "isa", h->machine.isa, sizeof(h->machine.isa))))
		return ret;
	if ((ret = expect_record(ps, "cores", 2)) ||
	    (ret = field_int(ps, 1, "machine cores", 1, 1 << 20, &h->machine.nr_cores)))
		return ret;
	if ((ret = expect_record(ps, "llc-bytes", 2)) ||
	    (ret = field_u64(ps, 1, "llc-bytes", 0, 1ULL << 50, &h->machine.llc_bytes)))
		return ret;
	if ((ret = expect_record(ps, "onednn", 2)) ||
	    (ret = field_string(ps, 1, "onednn version", h->onednn_version,
				sizeof(h->onednn_version))))
		return ret;
	if ((ret = expect_record(ps, "date", 2)) ||
	    (ret = parse_date(ps, h->date, sizeof(h->date))))
		return ret;
	if ((ret = expect_record(ps, "stress", 2)))
		return ret;
	if (!strcmp(ps->field[1], "llc"))
		h->stress_kind = PROFILE_STRESS_LLC;
	else if (!strcmp(ps->field[1], "membw"))
		h->stress_kind = PROFILE_STRESS_MEMBW;
	else
		return parse_error(ps, "stress kind '%.40s' is not llc or membw", ps->field[1]);
	if ((ret = expect_record(ps, "iters", 2)) ||
	    (ret = field_int(ps, 1, "iters", 1, 1000000, &h->iters)))
		return ret;
	if ((ret = expect_record(ps, "profiled-cores", 2)) ||
	    (ret = field_int(ps, 1, "profiled-cores", 1, PROFILE_MAX_CORES, &h->nr_cores)))
		return ret;
	if ((ret = expect_record(ps, "levels", 0)))
		return ret;
	if (ps->nr_fields - 1 > PROFILE_MAX_LEVELS)
		return parse_error(ps, "more than %d levels", PROFILE_MAX_LEVELS);
	h->nr_levels = ps->nr_fields - 1;
	for (int k = 0; k < h->nr_levels; k++) {
		if ((ret = field_int(ps, k + 1, "level", 0, 100, &h->levels[k])))
			return ret;
		if (k == 0 && h->levels[0] != 0)
			return parse_error(ps, "the first level must be 0 (alone)");
		if (k > 0 && h->levels[k] <= h->levels[k - 1])
			return parse_error(ps, "levels must increase strictly");
	}
	if ((ret = expect_record(ps, "layers", 2)) ||
	    (ret = field_u64(ps, 1, "layer count", 1, PROFILE_MAX_LAYERS, &v)))
		return ret;
	h->nr_layers = (int)v;
	return 0;
}

static int parse_layers(struct parser *ps, struct profile_header *hd, struct profile_layer *layers)
{
	for (int i = 0; i < hd->h.nr_layers; i++) {
		struct profile_layer *l = &layers[i];
		int ret, index;

		if ((ret = expect_record(ps, "layer", 0)))
			return ret;
		if (ps->nr_fields < 5)
			return parse_error(ps, "'layer' takes INDEX NAME NR_VERSIONS VERSION...");
		if ((ret = field_int(ps, 1, "layer index", 0, PROFILE_MAX_LAYERS, &index)))
			return ret;
		if (index != i)
			return parse_error(ps, "layer %d where layer %d was expected", index, i);
		if ((ret = field_string(ps, 2, "layer name", l->name, sizeof(l->name))) ||
		    (ret = field_int(ps, 3, "version count", 1, PROFILE_MAX_VERSIONS,
				     &l->nr_versions)))
			return ret;
		if (ps->nr_fields != 4 + l->nr_versions)
			return parse_error(ps, "layer %d declares %d versions but names %d", i,
					   l->nr_versions, ps->nr_fields - 4);
		for (int v = 0; v < l->nr_versions; v++)
			if ((ret = field_string(ps, 4 + v, "version name", l->version_names[v],
						sizeof(l->version_names[v]))))
				return ret;
		hd->nr_versions[i] = l->nr_versions;
	}
	return 0;
}

/* A lat, lat-lo or lat-hi record into its table. */
static int parse_lat(struct parser *ps, struct profile *p, uint64_t *table)
{
	int layer, version, cores, ret;
	uint64_t *row;

	if (ps->nr_fields != 4 + p->nr_levels)
		return parse_error(
			ps, "'%s' takes LAYER VERSION CORES and %d latencies, found %d fields",
			ps->field[0], p->nr_levels, ps->nr_fields - 1);
	if ((ret = field_int(ps, 1, "layer", 0, p->nr_layers - 1, &layer)) ||
	    (ret = field_int(ps, 2, "version", 0, p->layers[layer].nr_versions - 1, &version)) ||
	    (ret = field_int(ps, 3, "cores", 1, p->nr_cores, &cores)))
		return ret;
	row = table + (profile_latency_cell(p, layer, version, cores, 0) - p->latency_ns);
	for (int k = 0; k < p->nr_levels; k++) {
		if (row[k])
			return parse_error(ps, "duplicate '%s' for layer %d version %d cores %d",
					   ps->field[0], layer, version, cores);
	}
	for (int k = 0; k < p->nr_levels; k++) {
		if (!strcmp(ps->field[4 + k], "-"))
			continue;
		if ((ret = field_u64(ps, 4 + k, "latency (ns)", 1, PROFILE_MAX_LATENCY_NS,
				     &row[k])))
			return ret;
	}
	return 0;
}

static int parse_stress_gbps(struct parser *ps, struct profile *p, bool *seen)
{
	int cores, ret;
	double *g;

	if (ps->nr_fields != 1 + p->nr_levels)
		return parse_error(ps, "'stress-gbps' takes CORES and %d rates, found %d fields",
				   p->nr_levels - 1, ps->nr_fields - 1);
	if ((ret = field_int(ps, 1, "cores", 1, p->nr_cores, &cores)))
		return ret;
	if (seen[cores - 1])
		return parse_error(ps, "duplicate 'stress-gbps' for %d cores", cores);
	seen[cores - 1] = true;
	g = &p->stress_gbps[(size_t)(cores - 1) * (size_t)p->nr_levels];
	for (int k = 1; k < p->nr_levels; k++)
		if ((ret = field_ratio(ps, 1 + k, "stress GB/s", -1, &g[k])))
			return ret;
	return 0;
}

static int parse_slowdown(struct parser *ps, struct profile *p, bool *seen)
{
	int layer, ret;

	if (ps->nr_fields != 1 + p->nr_levels)
		return parse_error(ps, "'slowdown' takes LAYER and %d ratios, found %d fields",
				   p->nr_levels - 1, ps->nr_fields - 1);
	if ((ret = field_int(ps, 1, "layer", 0, p->nr_layers - 1, &layer)))
		return ret;
	if (seen[layer])
		return parse_error(ps, "duplicate 'slowdown' for layer %d", layer);
	seen[layer] = true;
	for (int k = 1; k < p->nr_levels; k++) {
		if ((ret = field_ratio(ps, 1 + k, "slowdown", 0, &p->layers[layer].slowdown[k])))
			return ret;
		if (p->layers[layer].slowdown[k] == 0 && strcmp(ps->field[1 + k], "-"))
			return parse_error(ps, "slowdown must be > 0 or '-'");
	}
	return 0;
}

/* A measured cell has its interval around it; an unmeasured one has none. */
static int check_intervals(struct parser *ps, const struct profile *p)
{
	for (int l = 0; l < p->nr_layers; l++) {
		for (int v = 0; v < p->layers[l].nr_versions; v++) {
			for (int c = 1; c <= p->nr_cores; c++) {
				const uint64_t *med = profile_latency_cell_const(p, l, v, c, 0);
				size_t at = (size_t)(med - p->latency_ns);
				const uint64_t *lo = p->ci_lo_ns + at, *hi = p->ci_hi_ns + at;

				for (int k = 0; k < p->nr_levels; k++) {
					if (!med[k] && !lo[k] && !hi[k])
						continue;
					if (!med[k] || !lo[k] || !hi[k] || lo[k] > med[k] ||
					    med[k] > hi[k])
						return parse_error(
							ps,
							"layer %d version %d cores %d level %d: lat-lo, lat and lat-hi must all be given, in increasing order, or all be '-'",
							l, v, c, p->levels[k]);
				}
			}
		}
	}
	return 0;
}

static int parse_body(struct parser *ps, struct profile *p)
{
	bool *gbps_seen = calloc((size_t)p->nr_cores, sizeof(bool));
	bool *slowdown_seen = calloc((size_t)p->nr_layers, sizeof(bool));
	int ret;

	if (!gbps_seen || !slowdown_seen) {
		ret = parse_error(ps, "out of memory");
		goto out;
	}
	for (;;) {
		ret = next_record(ps);
		if (ret < 0)
			goto out;
		if (ret == 0) {
			ret = parse_error(ps, "file ends without 'end' (truncated?)");
			goto out;
		}
		if (!strcmp(ps->field[0], "lat")) {
			ret = parse_lat(ps, p, p->latency_ns);
		} else if (!strcmp(ps->field[0], "lat-lo")) {
			ret = parse_lat(ps, p, p->ci_lo_ns);
		} else if (!strcmp(ps->field[0], "lat-hi")) {
			ret = parse_lat(ps, p, p->ci_hi_ns);
		} else if (!strcmp(ps->field[0], "stress-gbps")) {
			ret = parse_stress_gbps(ps, p, gbps_seen);
		} else if (!strcmp(ps->field[0], "slowdown")) {
			ret = parse_slowdown(ps, p, slowdown_seen);
		} else if (!strcmp(ps->field[0], "end")) {
			if (ps->nr_fields != 1) {
				ret = parse_error(ps, "'end' takes no values");
				goto out;
			}
			ret = check_intervals(ps, p);
			if (!ret)
				ret = next_record(ps);
			if (ret > 0)
				ret = parse_error(ps, "'%.40s' after 'end'", ps->field[0]);
			goto out;
		} else {
			ret = parse_error(
				ps,
				"unknown record '%.40s' (expected lat, lat-lo, lat-hi, stress-gbps, slowdown or end)",
				ps->field[0]);
		}
		if (ret)
			goto out;
	}
out:
	free(gbps_seen);
	free(slowdown_seen);
	return ret;
}

struct profile *profile_parse(const char *name, const char *text, size_t len, struct coloc_err *err)
{
	struct parser *ps = calloc(1, sizeof(*ps));
	struct profile_header *hd = calloc(1, sizeof(*hd));
	struct profile_layer *layers = NULL;
	struct profile *p = NULL;
	struct coloc_err why = { 0 };

	if (!ps || !hd) {
		coloc_err_set(err, -ENOMEM, "%s: out of memory", name);
		goto fail;
	}
	ps->name = name;
	ps->pos = text;
	ps->end = text + len;
	ps->err = err;
	if (parse_header(ps, hd))
		goto fail;
	/* Each layer record takes at least 13 bytes: a short file cannot make us allocate much. */
	if ((size_t)hd->h.nr_layers > (size_t)(ps->end - ps->pos) / 13) {
		parse_error(ps, "%d layers declared but the file is too short to list them",
			    hd->h.nr_layers);
		goto fail;
	}
	layers = calloc((size_t)hd->h.nr_layers, sizeof(*layers));
	if (!layers) {
		parse_error(ps, "out of memory for %d layers", hd->h.nr_layers);
		goto fail;
	}
	if (parse_layers(ps, hd, layers))
		goto fail;
	p = profile_new(hd->h.nr_layers, hd->nr_versions, hd->h.nr_cores, hd->h.nr_levels,
			hd->h.levels, &why);
	if (!p) {
		parse_error(ps, "%s", coloc_err_str(&why));
		goto fail;
	}
	memcpy(p->model_name, hd->h.model_name, sizeof(p->model_name));
	p->model_hash = hd->h.model_hash;
	p->machine = hd->h.machine;
	memcpy(p->onednn_version, hd->h.onednn_version, sizeof(p->onednn_version));
	memcpy(p->date, hd->h.date, sizeof(p->date));
	p->stress_kind = hd->h.stress_kind;
	p->iters = hd->h.iters;
	memcpy(p->layers, layers, (size_t)p->nr_layers * sizeof(*layers));
	if (parse_body(ps, p))
		goto fail;
	free(layers);
	free(hd);
	free(ps);
	return p;
fail:
	profile_free(p);
	free(layers);
	free(hd);
	free(ps);
	return NULL;
}

struct profile *profile_load(const char *path, struct coloc_err *err)
{
	struct profile *p = NULL;
	struct stat st;
	char *text = NULL;
	size_t done = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		coloc_err_set(err, -errno, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st)) {
		coloc_err_set(err, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)1 << 30) {
		coloc_err_set(err, -EINVAL, "%s: not a regular file of at most 1 GiB", path);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		coloc_err_set(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, text + done, (size_t)st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			coloc_err_set(err, n ? -errno : -EIO, "%s: read failed: %s", path,
				      n ? strerror(errno) : "file shrank");
			goto out;
		}
		done += (size_t)n;
	}
	p = profile_parse(path, text, done, err);
out:
	free(text);
	close(fd);
	return p;
}
