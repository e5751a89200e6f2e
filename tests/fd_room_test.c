// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fd_room (daemon/fd_room.c): the room left under the soft RLIMIT_NOFILE
 * is never overstated, is exact near the limit, and on kernels before 6.2
 * (fd_room_unsized, run here whatever the kernel) costs no listing of
 * /proc/self/fd while the descriptor table's size leaves room enough.
 * The count to compare with is the test's own listing.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/resource.h>
#include "kselftest_harness.h"
#include "fd_room.h"
#include "mono_clock.h"
#include "testutil.h"

#define TIMED_RUNS 21

/* Descriptors open here, the listing's own not counted. */
static long open_now(void)
{
	return tu_nr_dir_entries("/proc/self/fd") - 1;
}

/* n more descriptors open (of /dev/null); 0 or -1. */
static int open_more(int n)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (null < 0)
		return -1;
	for (int i = 1; i < n; i++)
		if (fcntl(null, F_DUPFD_CLOEXEC, 0) < 0)
			return -1;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* The median time of TIMED_RUNS calls of fd_room_unsized(limit) (list: of a listing). */
static __u64 median_ns(rlim_t limit, bool list)
{
	__u64 ns[TIMED_RUNS];

	for (int i = 0; i < TIMED_RUNS; i++) {
		__u64 start = coloc_now_ns();

		if (list)
			open_now();
		else
			fd_room_unsized(limit);
		ns[i] = coloc_now_ns() - start;
	}
	qsort(ns, TIMED_RUNS, sizeof(ns[0]), cmp_u64);
	return ns[TIMED_RUNS / 2];
}

TEST(fd_room__near_the_limit_is_exact_and_never_overstated)
{
	struct rlimit rl;
	long room;

	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)open_now() + 1000)
		SKIP(return, "a hard RLIMIT_NOFILE of %llu", (unsigned long long)rl.rlim_max);
	rl.rlim_cur = (rlim_t)open_now() + 1000;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	EXPECT_EQ(1000, fd_room());
	EXPECT_EQ(1000, fd_room_unsized(rl.rlim_cur));
	/* as a read between two calls: the next listing may not be due */
	ASSERT_EQ(0, open_more(200));
	room = fd_room_unsized(rl.rlim_cur);
	EXPECT_LE(room, 800);
	EXPECT_GE(room, 1000 - 253);
	usleep(100 * 1000);
	ASSERT_EQ(0, open_more(600));
	usleep(100 * 1000);
	EXPECT_EQ(200, fd_room_unsized(rl.rlim_cur));
	EXPECT_EQ(200, fd_room());
}

TEST(fd_room__before_6_2_lists_nothing_far_from_the_limit)
{
	struct rlimit rl;
	__u64 bounded_ns, listing_ns;
	long room, exact;

	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	/* 6,000 open fill a table of 8,192 */
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 8192 + FD_ROOM_EXACT_BELOW)
		SKIP(return, "a hard RLIMIT_NOFILE of %llu", (unsigned long long)rl.rlim_max);
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? 1 << 20 : rl.rlim_max;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	ASSERT_EQ(0, open_more(6000 - (int)open_now()));
	exact = (long)rl.rlim_cur - open_now();
	room = fd_room_unsized(rl.rlim_cur);
	EXPECT_LE(room, exact);
	EXPECT_GE(room, FD_ROOM_EXACT_BELOW);
	bounded_ns = median_ns(rl.rlim_cur, false);
	listing_ns = median_ns(rl.rlim_cur, true);
	TH_LOG("6,000 open under %llu: room %ld (exact %ld); fd_room_unsized %.1f us, a "
	       "listing %.1f us (medians of %d)",
	       (unsigned long long)rl.rlim_cur, room, exact, bounded_ns / 1e3, listing_ns / 1e3,
	       TIMED_RUNS);
	/* main listed /proc/self/fd at every call before 6.2 */
	EXPECT_LT(bounded_ns * 4, listing_ns);
}

TEST_HARNESS_MAIN
