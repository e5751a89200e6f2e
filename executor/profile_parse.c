// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Reading a latency profile (profile.h) strictly: line by line, a fixed
 * order of header records, then layer records, then measurements in any
 * order, then "end". Every number's syntax and range and every index is
 * checked against the header, so a truncated, hand-edited or hostile file
 * yields "FILE:LINE: what is wrong" and never a crash or an oversized
 * allocation.
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

#define PROFILE_MAX_LINE 4096
#define PROFILE_MAX_FIELDS 16
/* a header's records (14) and a comment, with one to spare: a real header fits in them */
#define PROFILE_HEAD_RECORDS 16
#define PROFILE_HEAD_BYTES (PROFILE_HEAD_RECORDS * (PROFILE_MAX_LINE + 1))
#define PROFILE_MAX_LATENCY_NS 1000000000000000ULL /* 11.6 days */
#define PROFILE_MAX_RATIO 1e6

struct parser {
	const char *name;
	const char *pos, *end;
	int line;
	char buf[PROFILE_MAX_LINE + 1]; /* split into fields */
	char whole[PROFILE_MAX_LINE + 1]; /* kept unsplit, for rest */
	char *field[PROFILE_MAX_FIELDS];
	int nr_fields;
	const char *rest; /* the text after the first field, for "cpu" */
	int format; /* the file's format version */
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
				return parse_error(ps, "a byte at column %zu is not printable text",
						   i + 1);
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
		return parse_error(ps, "%s (value %d) is not an integer in %llu..%llu", what, i,
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
		return parse_error(ps, "%s (value %d) is not a number in 0..%g or '-'", what, i,
				   PROFILE_MAX_RATIO);
	*out = v;
	return 0;
}

static int field_string(struct parser *ps, int i, const char *what, char *dst, size_t size)
{
	size_t len = strlen(ps->field[i]);

	if (len >= size)
		return parse_error(ps, "%s (value %d) longer than %zu bytes", what, i, size - 1);
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
		return parse_error(ps, "expected '%s', found a record of another name", key);
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
		return parse_error(ps, "the date is not YYYY-MM-DDTHH:MM:SSZ");
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
	if (format < PROFILE_OLDEST_FORMAT)
		return parse_error(
			ps,
			"format version %d is from an older coloc whose kernels or cells differ from this one's (this reader knows %d to %d); measure the profile again with coloc-profile",
			format, PROFILE_OLDEST_FORMAT, PROFILE_FORMAT_VERSION);
	if (format > PROFILE_FORMAT_VERSION)
		return parse_error(ps, "format version %d, this reader knows %d to %d", format,
				   PROFILE_OLDEST_FORMAT, PROFILE_FORMAT_VERSION);
	ps->format = format;
	if ((ret = expect_record(ps, "model", 2)) ||
	    (ret = field_string(ps, 1, "model name", h->model_name, sizeof(h->model_name))))
		return ret;
	if (format < 9) {
		/* the key before 2026-12-06: kept as read, never taken for a model's */
		if ((ret = expect_record(ps, "model-hash", 2)))
			return ret;
		if (strlen(ps->field[1]) != 16 || strspn(ps->field[1], "0123456789abcdef") != 16)
			return parse_error(ps, "model-hash is not 16 lowercase hex digits");
		h->model_key_old = true;
	} else {
		if ((ret = expect_record(ps, "model-key", 2)))
			return ret;
		if (profile_key_parse_hex(ps->field[1], &h->model_key))
			return parse_error(ps, "model-key is not %d lowercase hex digits",
					   PROFILE_KEY_HEX_LEN);
	}
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
		return parse_error(ps, "the stress kind is not llc or membw");
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

/* conditions SOLO_NS SPREAD LOADAVG STEAL: how busy the machine was (profile.h). */
static int parse_conditions(struct parser *ps, struct profile *p)
{
	struct profile_conditions *c = &p->conditions;
	int ret;

	if (c->known)
		return parse_error(ps, "duplicate 'conditions'");
	if (ps->nr_fields != 5)
		return parse_error(
			ps, "'conditions' takes SOLO_NS SPREAD LOADAVG STEAL, found %d values",
			ps->nr_fields - 1);
	if ((ret = field_u64(ps, 1, "solo latency (ns)", 1, PROFILE_MAX_LATENCY_NS, &c->solo_ns)) ||
	    (ret = field_ratio(ps, 2, "spread", -1, &c->spread)) ||
	    (ret = field_ratio(ps, 3, "load average", -1, &c->loadavg)) ||
	    (ret = field_ratio(ps, 4, "steal", -1, &c->steal)))
		return ret;
	if (c->spread < 0 || c->loadavg < 0 || c->steal < 0 || c->steal > 1)
		return parse_error(
			ps,
			"conditions: spread, load average and steal must be numbers, steal at most 1");
	c->known = true;
	return 0;
}

/*
 * cold RATIO SPREAD GAP_NS PAIRS: a point of the cold ramp, after
 * 'conditions' (profile.h): one in format 7, up to PROFILE_MAX_COLD_POINTS
 * in format 8, each gap longer than the one before.
 */
static int parse_cold(struct parser *ps, struct profile *p)
{
	struct profile_conditions *c = &p->conditions;
	int max = ps->format < 8 ? 1 : PROFILE_MAX_COLD_POINTS;
	struct profile_cold_point pt;
	int ret;

	if (ps->format < 7)
		return parse_error(ps, "'cold' is a record of format 7, this file is format %d",
				   ps->format);
	if (!c->known)
		return parse_error(ps, "'cold' before 'conditions'");
	if (c->nr_cold >= max)
		return parse_error(ps, "more than %d 'cold' record%s in a format-%d profile", max,
				   max == 1 ? "" : "s", ps->format);
	if (ps->nr_fields != 5)
		return parse_error(ps, "'cold' takes RATIO SPREAD GAP_NS PAIRS, found %d values",
				   ps->nr_fields - 1);
	if ((ret = field_ratio(ps, 1, "cold ratio", -1, &pt.ratio)) ||
	    (ret = field_ratio(ps, 2, "cold spread", -1, &pt.spread)) ||
	    (ret = field_u64(ps, 3, "cold gap (ns)", 1, PROFILE_MAX_COLD_GAP_NS, &pt.gap_ns)) ||
	    (ret = field_int(ps, 4, "cold pairs", 1, 100000, &pt.pairs)))
		return ret;
	if (!(pt.ratio > 0) || pt.spread < 0)
		return parse_error(ps,
				   "cold: the ratio must be a number above 0, the spread a number");
	if (pt.ratio > PROFILE_MAX_COLD_RATIO)
		return parse_error(ps,
				   "cold: a ratio of %g is over %g, a disturbed measurement: "
				   "measure the profile again",
				   pt.ratio, PROFILE_MAX_COLD_RATIO);
	if (c->nr_cold && pt.gap_ns <= c->cold[c->nr_cold - 1].gap_ns)
		return parse_error(ps,
				   "cold: a gap of %llu ns after one of %llu; the records go "
				   "from the shortest gap to the longest",
				   (unsigned long long)pt.gap_ns,
				   (unsigned long long)c->cold[c->nr_cold - 1].gap_ns);
	c->cold[c->nr_cold++] = pt;
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
		} else if (!strcmp(ps->field[0], "conditions")) {
			ret = parse_conditions(ps, p);
		} else if (!strcmp(ps->field[0], "cold")) {
			ret = parse_cold(ps, p);
		} else if (!strcmp(ps->field[0], "end")) {
			if (ps->nr_fields != 1) {
				ret = parse_error(ps, "'end' takes no values");
				goto out;
			}
			ret = check_intervals(ps, p);
			if (!ret)
				ret = next_record(ps);
			if (ret > 0)
				ret = parse_error(ps, "a record after 'end'");
			goto out;
		} else {
			ret = parse_error(
				ps,
				"unknown record (expected lat, lat-lo, lat-hi, stress-gbps, slowdown, conditions, cold or end)");
		}
		if (ret)
			goto out;
	}
out:
	free(gbps_seen);
	free(slowdown_seen);
	return ret;
}

/* Decimal digits of v. */
static size_t digits(uint64_t v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* the widest number coloc-profile writes with %.6g or %.4f: "-1.23457e+06" */
#define PROFILE_RATIO_WIDTH 12

size_t profile_max_bytes(int nr_layers, int nr_cores, int nr_levels)
{
	size_t any_line = PROFILE_MAX_LINE + 1, layer = digits((uint64_t)nr_layers - 1);
	size_t cores = digits((uint64_t)nr_cores), lat_value = digits(PROFILE_MAX_LATENCY_NS);
	/* lat-lo LAYER VERSION CORES LATENCY...: a version is one digit */
	size_t lat = strlen("lat-lo ") + layer + 3 + cores + nr_levels * (1 + lat_value) + 1;
	size_t layer_rec = strlen("layer ") + layer + 1 + PROFILE_NAME_LEN + 2 +
			   PROFILE_MAX_VERSIONS * PROFILE_VERSION_NAME_LEN + 1;
	size_t slowdown = strlen("slowdown ") + layer + nr_levels * (1 + PROFILE_RATIO_WIDTH) + 1;
	size_t gbps = strlen("stress-gbps ") + cores + nr_levels * (1 + PROFILE_RATIO_WIDTH) + 1;

	/*
	 * The header's records and a comment, 'conditions', the cold ramp's
	 * points and 'end' at a whole line each; per layer its record, its
	 * slowdown and three latency records (lat, lat-lo, lat-hi) for each
	 * version and core count; per core count its stress-gbps.
	 */
	return PROFILE_HEAD_RECORDS * any_line + (2 + PROFILE_MAX_COLD_POINTS) * any_line +
	       (size_t)nr_layers * (layer_rec + slowdown) +
	       (size_t)nr_layers * PROFILE_MAX_VERSIONS * (size_t)nr_cores * 3 * lat +
	       (size_t)nr_cores * gbps;
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
	if (len > profile_max_bytes(hd->h.nr_layers, hd->h.nr_cores, hd->h.nr_levels)) {
		parse_error(ps, "%zu bytes, more than a profile of %d layers, %d cores and %d "
			    "levels can hold (%zu)", len, hd->h.nr_layers, hd->h.nr_cores,
			    hd->h.nr_levels,
			    profile_max_bytes(hd->h.nr_layers, hd->h.nr_cores, hd->h.nr_levels));
		goto fail;
	}
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
	p->model_key = hd->h.model_key;
	p->model_key_old = hd->h.model_key_old;
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
	struct profile *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		coloc_err_set(err, -errno, "%s: %s", path, strerror(errno));
		return NULL;
	}
	p = profile_load_fd(fd, path, err);
	close(fd);
	return p;
}

/* Reads len bytes of fd into buf; 0 or -errno with err set. */
static int read_all(int fd, const char *path, char *buf, size_t len, struct coloc_err *err)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return coloc_err_set(err, n ? -errno : -EIO, "%s: read failed: %s", path,
					     n ? strerror(errno) : "file shrank");
		done += (size_t)n;
	}
	return 0;
}

/*
 * The most a profile whose header is in head (the file's first len bytes)
 * can hold (profile_max_bytes), from its header alone; 0 with err set when
 * the header is bad or does not end within head.
 */
static size_t head_bound(const char *path, const char *head, size_t len, struct coloc_err *err)
{
	struct parser *ps = calloc(1, sizeof(*ps));
	struct profile_header *hd = calloc(1, sizeof(*hd));
	struct coloc_err why = { 0 };
	size_t bound = 0;

	if (!ps || !hd) {
		coloc_err_set(err, -ENOMEM, "%s: out of memory", path);
	} else {
		*ps = (struct parser){ .name = path, .pos = head, .end = head + len, .err = &why };
		if (!parse_header(ps, hd))
			bound = profile_max_bytes(hd->h.nr_layers, hd->h.nr_cores,
						  hd->h.nr_levels);
		else if (!memchr(ps->pos, '\n', (size_t)(ps->end - ps->pos)))
			coloc_err_set(err, -EINVAL,
				      "%s: the header does not end within the first %zu bytes", path,
				      len);
		else
			coloc_err_set(err, why.code, "%s", why.msg);
	}
	free(hd);
	free(ps);
	return bound;
}

struct profile *profile_load_fd(int fd, const char *path, struct coloc_err *err)
{
	struct profile *p = NULL;
	size_t size, head, bound;
	struct stat st;
	char *text, *whole;

	if (fstat(fd, &st)) {
		coloc_err_set(err, -errno, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)1 << 30) {
		coloc_err_set(err, -EINVAL, "%s: not a regular file of at most 1 GiB", path);
		return NULL;
	}
	size = (size_t)st.st_size;
	head = size < PROFILE_HEAD_BYTES ? size : PROFILE_HEAD_BYTES;
	text = malloc(head + 1);
	if (!text) {
		coloc_err_set(err, -ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	if (read_all(fd, path, text, head, err))
		goto out;
	/* a file bigger than its header allows is refused unread (its parse would be on colocd's loop) */
	if (size > head) {
		bound = head_bound(path, text, head, err);
		if (!bound)
			goto out;
		if (size > bound) {
			coloc_err_set(err, -EFBIG,
				      "%s: %zu bytes, more than a profile of its header's layers, "
				      "cores and levels can hold (%zu): not read",
				      path, size, bound);
			goto out;
		}
		whole = realloc(text, size + 1);
		if (!whole) {
			coloc_err_set(err, -ENOMEM, "%s: out of memory", path);
			goto out;
		}
		text = whole;
		if (read_all(fd, path, text + head, size - head, err))
			goto out;
	}
	p = profile_parse(path, text, size, err);
out:
	free(text);
	return p;
}
