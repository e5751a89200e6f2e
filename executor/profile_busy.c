// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * How busy this machine is, as a profile's conditions record it
 * (profile_host.h): the CPU time counters of /proc/stat (for the share the
 * hypervisor stole while profiling) and the 1-minute load average of
 * /proc/loadavg.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "profile_host.h"

int profile_cpu_ticks_read(struct profile_cpu_ticks *t)
{
	unsigned long long v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return -errno;
	/* cpu user nice system idle iowait irq softirq steal guest guest_nice */
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
	fclose(f);
	if (n < 8)
		return -EIO;
	/* guest time is already counted in user and nice */
	t->steal = v[7];
	t->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	return 0;
}

double profile_steal_share(const struct profile_cpu_ticks *a, const struct profile_cpu_ticks *b)
{
	if (b->total <= a->total || b->steal < a->steal)
		return 0;
	return (double)(b->steal - a->steal) / (double)(b->total - a->total);
}

int profile_loadavg_read(double *load1)
{
	FILE *f = fopen("/proc/loadavg", "re");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%lf", load1);
	fclose(f);
	return n == 1 ? 0 : -EIO;
}
