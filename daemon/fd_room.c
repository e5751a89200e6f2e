// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fd_room.h: the descriptors open, from the size stat(2) gives
 * /proc/self/fd (Linux 6.2 on), else by listing it; the room, what the
 * soft limit leaves. Descriptors numbered past a lowered limit are counted
 * too, so the room is never overstated.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include "fd_room.h"

/* Before 6.2 the size is 0: each entry is counted (one of them the listing's own). */
static long fd_room_listed(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", "..", the listing's descriptor */
}

long fd_room(void)
{
	struct rlimit rl;
	struct stat st;
	long open_now;

	if (getrlimit(RLIMIT_NOFILE, &rl) || stat("/proc/self/fd", &st))
		return 0;
	open_now = st.st_size > 0 ? (long)st.st_size : fd_room_listed();
	if (open_now < 0 || (rlim_t)open_now >= rl.rlim_cur)
		return 0;
	return (long)(rl.rlim_cur - (rlim_t)open_now);
}
