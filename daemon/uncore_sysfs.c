// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An uncore PMU's sysfs files as uncore.c reads them: small text and number
 * readers, and the event terms of format/ and the aliases of events/ (with
 * their .scale and .unit) encoded into perf_event_attr's config words.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "uncore_internal.h"
#include "util.h"

/* ---- small sysfs readers --------------------------------------------------- */

int uncore_read_text(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

int uncore_read_long(const char *path, long lo, long hi, long *out)
{
	char buf[64], *end;
	long v;
	int err = uncore_read_text(path, buf, sizeof(buf));

	if (err)
		return err;
	errno = 0;
	v = strtol(buf, &end, 0);
	if (errno || end == buf || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A term or alias name must stay inside its directory. */
static bool uncore_safe_name(const char *s)
{
	if (!*s || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != '-')
			return false;
	return true;
}

/* ---- format/ and events/ parsing ----------------------------------------- */

/* Places value into config[] per one format spec such as "config:0-7,32-35", low bits first. */
static int uncore_place(const char *spec, __u64 value, __u64 config[3], struct coloc_err *err)
{
	const char *p = spec;
	int word, placed = 0;
	char *end;

	if (!strncmp(p, "config2:", 8)) {
		word = 2;
		p += 8;
	} else if (!strncmp(p, "config1:", 8)) {
		word = 1;
		p += 8;
	} else if (!strncmp(p, "config:", 7)) {
		word = 0;
		p += 7;
	} else {
		return coloc_err_set(err, -EINVAL,
				     "format '%s': expected config, config1 or config2", spec);
	}
	for (;;) {
		unsigned long lo, hi;
		int width;

		if (!isdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		lo = strtoul(p, &end, 10);
		hi = lo;
		p = end;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				goto bad;
			hi = strtoul(p, &end, 10);
			p = end;
		}
		if (errno || lo > 63 || hi > 63 || hi < lo)
			goto bad;
		width = (int)(hi - lo + 1);
		if (placed < 64) {
			__u64 mask = width == 64 ? ~0ull : (1ull << width) - 1;

			config[word] |= ((value >> placed) & mask) << lo;
		}
		placed += width;
		if (!*p)
			break;
		if (*p != ',')
			goto bad;
		p++;
	}
	if (placed < 64 && (value >> placed)) {
		return coloc_err_set(err, -ERANGE, "value 0x%llx does not fit format '%s'",
				     (unsigned long long)value, spec);
	}
	return 0;
bad:
	return coloc_err_set(err, -EINVAL, "format '%s': bad bit range", spec);
}

int uncore_encode_terms(const char *pmu_dir, const char *terms, __u64 config[3],
			struct coloc_err *err)
{
	char copy[512], *save = NULL, *term;

	if (!pmu_dir || !terms || !config)
		return -EINVAL;
	config[0] = config[1] = config[2] = 0;
	if (strlen(terms) >= sizeof(copy)) {
		return coloc_err_set(err, -EINVAL, "event terms too long: '%.60s...'", terms);
	}
	strcpy(copy, terms);
	for (term = strtok_r(copy, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
		char path[PATH_MAX], spec[128], *eq, *name = term, *end;
		__u64 value = 1;
		int ret;

		while (isspace((unsigned char)*name))
			name++;
		end = name + strlen(name);
		while (end > name && isspace((unsigned char)end[-1]))
			*--end = '\0';
		eq = strchr(name, '=');
		if (eq) {
			*eq = '\0';
			errno = 0;
			value = strtoull(eq + 1, &end, 0);
			if (errno || end == eq + 1 || *end || eq[1] == '-') {
				return coloc_err_set(err, -EINVAL, "term '%s': bad value '%s'",
						     name, eq + 1);
			}
		}
		if (!uncore_safe_name(name)) {
			return coloc_err_set(err, -EINVAL, "bad term name '%s' in '%s'", name,
					     terms);
		}
		snprintf(path, sizeof(path), "%s/format/%s", pmu_dir, name);
		ret = uncore_read_text(path, spec, sizeof(spec));
		if (ret)
			return coloc_err_set(err, ret, "term '%s': no format file %s", name, path);
		ret = uncore_place(spec, value, config, err);
		if (ret)
			return ret;
	}
	return 0;
}

static int uncore_unit_bytes(const char *unit, double *bytes)
{
	static const struct {
		const char *name;
		double bytes;
	} units[] = {
		{ "B", 1 },	   { "Bytes", 1 },	 { "bytes", 1 },
		{ "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
		{ "KB", 1e3 },	   { "MB", 1e6 },	 { "GB", 1e9 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(unit, units[i].name)) {
			*bytes = units[i].bytes;
			return 0;
		}
	return -EINVAL;
}

int uncore_encode_alias(const char *pmu_dir, const char *name, __u64 config[3],
			double *bytes_per_count, bool *has_scale, struct coloc_err *err)
{
	char path[PATH_MAX], terms[512], text[64], *end;
	double scale = 1.0, unit = 1.0;
	bool scaled = false;
	int ret;

	if (!pmu_dir || !name || !config || !bytes_per_count || !has_scale)
		return -EINVAL;
	if (!uncore_safe_name(name))
		return coloc_err_set(err, -EINVAL, "bad event alias name '%s'", name);
	snprintf(path, sizeof(path), "%s/events/%s", pmu_dir, name);
	ret = uncore_read_text(path, terms, sizeof(terms));
	if (ret)
		return coloc_err_set(err, ret, "no event alias %s", path);
	ret = uncore_encode_terms(pmu_dir, terms, config, err);
	if (ret)
		return ret;

	snprintf(path, sizeof(path), "%s/events/%s.scale", pmu_dir, name);
	ret = uncore_read_text(path, text, sizeof(text));
	if (!ret) {
		errno = 0;
		scale = strtod(text, &end);
		if (errno || end == text || *end || !(scale > 0) || !isfinite(scale))
			return coloc_err_set(err, -EINVAL, "%s: bad scale '%s'", path, text);
		scaled = true;
	} else if (ret != -ENOENT) {
		return ret;
	}
	snprintf(path, sizeof(path), "%s/events/%s.unit", pmu_dir, name);
	ret = uncore_read_text(path, text, sizeof(text));
	if (!ret) {
		if (uncore_unit_bytes(text, &unit))
			return coloc_err_set(err, -EINVAL, "%s: unit '%s' is not a byte unit", path,
					     text);
		scaled = true;
	} else if (ret != -ENOENT) {
		return ret;
	}
	*bytes_per_count = scale * unit;
	*has_scale = scaled;
	return 0;
}
