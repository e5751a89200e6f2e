// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * CPU sets as people write them ("0-3,6", the kernel's cpulist syntax) and
 * whether a CPU is online, for the executor's load-time checks and for the
 * tools that take a --cores option.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "executor.h"

/* /sys says whether a CPU is online; cpu0 often has no 'online' file (always on). */
bool exec_cpu_online(int cpu)
{
	char path[96];
	struct stat st;
	FILE *f;
	int c;

	if (cpu < 0 || cpu >= EXEC_MAX_CPUS)
		return false;
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
	if (stat(path, &st))
		return false;
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	f = fopen(path, "r");
	if (!f)
		return true;
	c = fgetc(f);
	fclose(f);
	return c == '1';
}

static int parse_cpu(const char **s, long *v)
{
	char *end;

	if (**s < '0' || **s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtol(*s, &end, 10);
	if (errno || *v < 0 || *v >= EXEC_MAX_CPUS)
		return -ERANGE;
	*s = end;
	return 0;
}

int exec_cpuset_parse(const char *text, struct exec_cpuset *set, struct coloc_err *err)
{
	const char *s = text;

	memset(set, 0, sizeof(*set));
	if (!text || !*text) {
		coloc_err_set(err, -EINVAL, "empty cpu list");
		return -EINVAL;
	}
	while (*s) {
		long lo, hi;
		int ret = parse_cpu(&s, &lo);

		hi = lo;
		if (!ret && *s == '-') {
			s++;
			ret = parse_cpu(&s, &hi);
		}
		if (ret || hi < lo || (*s && *s != ',')) {
			coloc_err_set(err, -EINVAL,
				      "bad cpu list '%s': expected e.g. 0-3,6 with cpus in 0..%d",
				      text, EXEC_MAX_CPUS - 1);
			return -EINVAL;
		}
		for (long c = lo; c <= hi; c++) {
			for (int i = 0; i < set->nr; i++) {
				if (set->cpus[i] == c) {
					coloc_err_set(err, -EINVAL, "cpu %ld listed twice in '%s'",
						      c, text);
					return -EINVAL;
				}
			}
			if (!exec_cpu_online((int)c)) {
				coloc_err_set(err, -ENODEV, "cpu %ld is not online", c);
				return -ENODEV;
			}
			set->cpus[set->nr++] = (int)c;
		}
		if (*s == ',' && !*++s) {
			coloc_err_set(err, -EINVAL, "bad cpu list '%s': it ends with a comma",
				      text);
			return -EINVAL;
		}
	}
	return 0;
}
