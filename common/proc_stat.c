// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * proc_stat.h: a stat file read whole, its fields taken after the last ')'
 * so that a command name of spaces and parentheses cannot shift them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proc_stat.h"

int proc_stat_read(const char *path, char *state, unsigned long long *field, int nr)
{
	char buf[2048], *p, *end;
	FILE *f = fopen(path, "r");
	size_t len;

	if (!f)
		return -errno;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	if (state)
		*state = p[2];
	p += 3;
	for (int i = 4; i < nr; i++) {
		field[i] = strtoull(p, &end, 10);
		if (end == p)
			return -EINVAL;
		p = end;
	}
	return 0;
}

int proc_stat_cpu_ns(const char *path, unsigned long long *ns)
{
	unsigned long long f[PROC_STAT_STIME + 1];
	int ret = proc_stat_read(path, NULL, f, PROC_STAT_STIME + 1);

	if (ret)
		return ret;
	*ns = (f[PROC_STAT_UTIME] + f[PROC_STAT_STIME]) *
	      (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
	return 0;
}
