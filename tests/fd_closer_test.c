// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fd_closer (daemon/fd_closer.c): a memfd's last close frees its pages on
 * the caller, so only a small one sealed against growing is closed at once;
 * a populated big one, or one that could still grow, goes to its uid's
 * closer thread and is closed there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "fd_closer.h"
#include "mono_clock.h"

#define SOME_UID 64990

/* A memfd of bytes, populated when asked, sealed against growing when asked. */
static int memfd_of(size_t bytes, bool populate, bool seal_grow)
{
	int fd = memfd_create("fd_closer_test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)bytes))
		return -1;
	if (populate && fallocate(fd, 0, 0, (off_t)bytes))
		return -1;
	if (seal_grow && fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK))
		return -1;
	return fd;
}

static bool closed(int fd)
{
	return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

/* Waits up to 10 s for uid's closes to be done. */
static bool closes_done(uid_t uid)
{
	uint64_t until = coloc_now_ns() + 10000000000ull;

	while (fd_closer_pending(uid) && coloc_now_ns() < until)
		usleep(1000);
	return !fd_closer_pending(uid);
}

TEST(small_memfd_sealed_against_growing_is_closed_at_once)
{
	int fd = memfd_of(1 << 20, true, true);

	ASSERT_GE(fd, 0);
	EXPECT_TRUE(fd_closer_close_now_is_safe(fd));
	fd_closer_close(fd, SOME_UID);
	EXPECT_TRUE(closed(fd));
	EXPECT_EQ(0, fd_closer_pending(SOME_UID));
}

TEST(memfd_that_may_grow_goes_to_the_closer_thread)
{
	int fd = memfd_of(1 << 20, false, false);

	ASSERT_GE(fd, 0);
	/* a member could fallocate it past any size once we looked */
	EXPECT_FALSE(fd_closer_close_now_is_safe(fd));
	fd_closer_close(fd, SOME_UID);
	EXPECT_TRUE(closes_done(SOME_UID));
	EXPECT_TRUE(closed(fd));
}

TEST(populated_big_memfd_is_freed_off_the_callers_thread)
{
	/* ~70 ms of freeing on the 2-vCPU VM: the caller must not be the one */
	int fd = memfd_of(1ull << 30, true, true);

	ASSERT_GE(fd, 0);
	EXPECT_FALSE(fd_closer_close_now_is_safe(fd));
	fd_closer_close(fd, SOME_UID);
	/* handed over: still being closed on the uid's thread as the call returns */
	EXPECT_EQ(1, fd_closer_pending(SOME_UID));
	EXPECT_TRUE(closes_done(SOME_UID));
	EXPECT_TRUE(closed(fd));
}

TEST_HARNESS_MAIN
