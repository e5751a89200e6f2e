// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The one CPU-list parser. The daemon reads PMU cpumask files with it, the
 * executor and the tools their --cores options: one syntax, one bound
 * (COLOC_MAX_CPUS), one wording of what is wrong.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "coloc/limits.h"
#include "cpulist.h"

#define CPULIST_WORD_BITS (sizeof(unsigned long) * CHAR_BIT)

/* One CPU id at *p, advancing *p past it. */
static int cpulist_id(const char **p, long *id)
{
	char *end;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	*id = strtol(*p, &end, 10);
	*p = end;
	if (errno || *id >= COLOC_MAX_CPUS)
		return -ERANGE;
	return 0;
}

static const char *cpulist_skip_space(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

int cpulist_parse(const char *text, unsigned int flags, int *cpus, int max_cpus,
		  struct coloc_err *err)
{
	unsigned long seen[COLOC_MAX_CPUS / CPULIST_WORD_BITS] = { 0 };
	bool sysfs = flags & CPULIST_SYSFS;
	const char *p = text;
	int n = 0;

	if (!text || !cpus || max_cpus < 0 || (flags & ~CPULIST_SYSFS))
		return coloc_err_set(err, -EINVAL, "cpulist_parse: bad arguments");
	if (sysfs)
		p = cpulist_skip_space(p);
	if (!*p) {
		if (sysfs)
			return 0;
		return coloc_err_set(err, -EINVAL, "empty CPU list: expected e.g. 0-3,6");
	}
	for (;;) {
		long lo, hi;
		int ret = cpulist_id(&p, &lo);

		hi = lo;
		if (!ret && *p == '-') {
			p++;
			ret = cpulist_id(&p, &hi);
		}
		if (ret == -ERANGE)
			return coloc_err_set(err, -ERANGE,
					     "CPU list '%.64s': CPU ids go from 0 to %d", text,
					     COLOC_MAX_CPUS - 1);
		if (ret)
			return coloc_err_set(err, -EINVAL,
					     "bad CPU list '%.64s': expected e.g. 0-3,6", text);
		if (hi < lo)
			return coloc_err_set(err, -EINVAL,
					     "CPU list '%.64s': range %ld-%ld runs backwards", text,
					     lo, hi);
		for (long c = lo; c <= hi; c++) {
			unsigned long bit = 1ul << (c % CPULIST_WORD_BITS);

			if (seen[c / CPULIST_WORD_BITS] & bit)
				return coloc_err_set(err, -EINVAL,
						     "CPU list '%.64s': CPU %ld is listed twice",
						     text, c);
			if (n >= max_cpus)
				return coloc_err_set(err, -E2BIG,
						     "CPU list '%.64s': more than %d CPUs", text,
						     max_cpus);
			seen[c / CPULIST_WORD_BITS] |= bit;
			cpus[n++] = (int)c;
		}
		if (*p != ',')
			break;
		p++;
	}
	if (sysfs)
		p = cpulist_skip_space(p);
	if (*p)
		return coloc_err_set(err, -EINVAL, "bad CPU list '%.64s': expected e.g. 0-3,6",
				     text);
	return n;
}
