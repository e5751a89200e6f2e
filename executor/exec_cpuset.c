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
#include "cpulist.h"
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

int exec_cpuset_parse(const char *text, struct exec_cpuset *set, struct coloc_err *err)
{
	int nr;

	memset(set, 0, sizeof(*set));
	nr = cpulist_parse(text, 0, set->cpus, EXEC_MAX_CPUS, err);
	if (nr < 0)
		return nr;
	for (int i = 0; i < nr; i++) {
		if (!exec_cpu_online(set->cpus[i]))
			return coloc_err_set(err, -ENODEV, "cpu %d is not online", set->cpus[i]);
	}
	set->nr = nr;
	return 0;
}
