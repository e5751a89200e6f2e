// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fd_room.h: the descriptors open, from the size stat(2) gives
 * /proc/self/fd (Linux 6.2 on); before, bounded by the descriptor table's
 * size (/proc/self/status's FDSize, which no descriptor reaches) while
 * that leaves room enough, else counted by listing the directory, at most
 * a tenth of the time, each call between two listings taking a whole
 * message's SCM_MAX_FD off the last count (never below what the table's
 * size leaves). Descriptors numbered past a lowered limit are counted
 * too, so the room is never overstated.
 * docs/design/fd-closer.md, "At the descriptor limit".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fd_room.h"
#include "mono_clock.h"

/* a message's descriptors at most: what a read between two listings may install */
#define FD_ROOM_SCM_MAX_FD 253
/* a listing waits this many times its own length after it: the loop lists 10 % of the time at most */
#define FD_ROOM_LIST_GAP 9

static long fd_room_left(rlim_t limit, long open_now)
{
	if (open_now < 0 || (rlim_t)open_now >= limit)
		return 0;
	return (long)(limit - (rlim_t)open_now);
}

/* The descriptor table's size (FDSize), above every descriptor open; -1 if unknown. */
static long fd_room_table_size(void)
{
	char line[256];
	long size = -1;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "FDSize:", 7)) {
			size = strtol(line + 7, NULL, 10);
			break;
		}
	if (f)
		fclose(f);
	return size > 0 ? size : -1;
}

/* Each entry counted (one of them the listing's own). */
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

long fd_room_unsized(rlim_t limit)
{
	static __u64 next_listing_ns;
	static long listed_room, calls_since;
	long table = fd_room_table_size(), at_least = table > 0 ? fd_room_left(limit, table) : 0;
	__u64 start = coloc_now_ns();

	if (at_least >= FD_ROOM_EXACT_BELOW)
		return at_least;
	if (start < next_listing_ns) {
		long room = listed_room - FD_ROOM_SCM_MAX_FD * ++calls_since;

		return room > at_least ? room : at_least;
	}
	listed_room = fd_room_left(limit, fd_room_listed());
	calls_since = 0;
	next_listing_ns = coloc_now_ns() + (coloc_now_ns() - start) * FD_ROOM_LIST_GAP;
	return listed_room;
}

long fd_room(void)
{
	struct rlimit rl;
	struct stat st;

	if (getrlimit(RLIMIT_NOFILE, &rl) || stat("/proc/self/fd", &st))
		return 0;
	if (st.st_size > 0)
		return fd_room_left(rl.rlim_cur, (long)st.st_size);
	return fd_room_unsized(rl.rlim_cur);
}
