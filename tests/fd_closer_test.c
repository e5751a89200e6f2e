// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fd_closer (daemon/fd_closer.c): a memfd's last close frees its pages on
 * the caller, so only one sealed against growing with few pages is closed
 * at once, and only so many bytes of them in a row; a populated big one
 * (past its size too), or one that could still grow, goes to its uid's
 * closer thread. Of sockets only a UDP one is closed at once: a TCP one
 * (it may listen by the time it is closed), an AF_UNIX one (descriptors in
 * flight in it) go to the thread. Only the thread with work is woken.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "fd_closer.h"
#include "mono_clock.h"
#include "testutil.h"

#define SOME_UID 64990

/*
 * A memfd of size bytes holding pages bytes (fallocated past its size when
 * more: KEEP_SIZE), sealed against growing when asked.
 */
static int memfd_of(off_t size, off_t pages, bool seal_grow)
{
	int fd = memfd_create("fd_closer_test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, size))
		return -1;
	if (pages && fallocate(fd, pages > size ? FALLOC_FL_KEEP_SIZE : 0, 0, pages))
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
	int fd = memfd_of(1 << 20, 1 << 20, true);

	ASSERT_GE(fd, 0);
	EXPECT_TRUE(fd_closer_close_now_is_safe(fd));
	fd_closer_close(fd, SOME_UID);
	EXPECT_TRUE(closed(fd));
	EXPECT_EQ(0, fd_closer_pending(SOME_UID));
}

TEST(memfd_that_may_grow_goes_to_the_closer_thread)
{
	int fd = memfd_of(1 << 20, 0, false);

	ASSERT_GE(fd, 0);
	/* a member could fallocate it past any size once we looked */
	EXPECT_FALSE(fd_closer_close_now_is_safe(fd));
	fd_closer_close(fd, SOME_UID);
	EXPECT_TRUE(closes_done(SOME_UID));
	EXPECT_TRUE(closed(fd));
}

/* fd is not the caller's to close: handed over, still being closed as the call returns */
static void expect_closed_on_the_thread(struct __test_metadata *_metadata, int fd)
{
	ASSERT_GE(fd, 0);
	EXPECT_FALSE(fd_closer_close_now_is_safe(fd));
	fd_closer_close(fd, SOME_UID);
	EXPECT_EQ(1, fd_closer_pending(SOME_UID));
	EXPECT_TRUE(closes_done(SOME_UID));
	EXPECT_TRUE(closed(fd));
}

TEST(populated_big_memfd_is_freed_off_the_callers_thread)
{
	/* ~70 ms of freeing on the 2-vCPU VM: the caller must not be the one */
	expect_closed_on_the_thread(_metadata, memfd_of(1 << 30, 1 << 30, true));
}

TEST(pages_past_a_sealed_memfds_size_count)
{
	/* st_size 0: main closed it on the caller, 70 ms of freeing */
	expect_closed_on_the_thread(_metadata, memfd_of(0, 1 << 30, true));
}

TEST(the_caller_frees_little_in_a_row)
{
	int slow = memfd_of(1 << 30, 1 << 30, true), fds[16], open_after = 0;

	ASSERT_GE(slow, 0);
	/* each may free 8 MiB (4 MiB of pages, 4 more of holes a writer may fill) */
	for (int i = 0; i < 16; i++) {
		fds[i] = memfd_of(4 << 20, 4 << 20, true);
		ASSERT_GE(fds[i], 0);
		EXPECT_TRUE(fd_closer_close_now_is_safe(fds[i]));
	}
	/* the uid's thread busy a while: what it is handed now waits behind */
	fd_closer_close(slow, SOME_UID);
	for (int i = 0; i < 16; i++)
		fd_closer_close(fds[i], SOME_UID);
	for (int i = 0; i < 16; i++)
		open_after += !closed(fds[i]);
	/* 16 MiB at once, a little more refilled meanwhile: 2, 3 at most closed here */
	EXPECT_GE(open_after, 13);
	EXPECT_TRUE(closes_done(SOME_UID));
	for (int i = 0; i < 16; i++)
		EXPECT_TRUE(closed(fds[i]));
}

static int tcp_listener(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a->sin_port = 0;
	if (l < 0 || bind(l, (struct sockaddr *)a, sizeof(*a)) || listen(l, 16) ||
	    getsockname(l, (struct sockaddr *)a, &len))
		return -1;
	return l;
}

TEST(every_tcp_socket_goes_to_the_thread_a_udp_one_does_not)
{
	struct sockaddr_in a;
	int l = tcp_listener(&a), c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ASSERT_GE(l, 0);
	ASSERT_GE(c, 0);
	ASSERT_GE(u, 0);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&a, sizeof(a)));
	/* its close tears down its accept queue, c's peer in it */
	EXPECT_FALSE(fd_closer_close_now_is_safe(l));
	/* main's loop closed it: its sender may listen on it, or linger, before the close */
	EXPECT_FALSE(fd_closer_close_now_is_safe(c));
	EXPECT_TRUE(fd_closer_close_now_is_safe(u));
	fd_closer_close(c, SOME_UID);
	EXPECT_TRUE(closes_done(SOME_UID));
	EXPECT_TRUE(closed(c));
	close(l);
	close(u);
}

TEST(every_unix_socket_goes_to_the_thread)
{
	char byte = 'x';
	int sp[2], empty[2], big = memfd_of(1 << 30, 1 << 30, false);

	ASSERT_GE(big, 0);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, empty));
	ASSERT_EQ(0, tu_send_fds(sp[0], &byte, 1, &big, 1, MSG_OOB));
	close(big);
	/* read, the OOB byte's skb stays queued with the memfd: SIOCINQ says 0 */
	ASSERT_EQ(1, recv(sp[1], &byte, 1, MSG_OOB));
	EXPECT_FALSE(fd_closer_close_now_is_safe(sp[1]));
	/* an empty one too: userspace cannot tell it from the above */
	EXPECT_FALSE(fd_closer_close_now_is_safe(empty[1]));
	fd_closer_close(sp[1], SOME_UID);
	fd_closer_close(empty[1], SOME_UID);
	EXPECT_TRUE(closes_done(SOME_UID));
	close(sp[0]);
	close(empty[0]);
}

/* Voluntary context switches of this process's threads but the caller. */
static long other_threads_switches(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long sum = 0;

	while (d && (e = readdir(d))) {
		char path[300], line[128];
		long n;
		FILE *f;

		if (e->d_name[0] == '.' || atoi(e->d_name) == gettid())
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
				sum += n;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return sum;
}

#define IDLE_UIDS 8
#define BATCHES 50

TEST(only_the_thread_with_work_is_woken)
{
	long before, switches;

	/* IDLE_UIDS threads done with their closes, waiting for more */
	for (int i = 1; i <= IDLE_UIDS; i++) {
		int fd = memfd_of(1 << 20, 0, false);

		ASSERT_GE(fd, 0);
		fd_closer_close(fd, SOME_UID + i);
		ASSERT_TRUE(closes_done(SOME_UID + i));
	}
	before = other_threads_switches();
	for (int i = 0; i < BATCHES; i++) {
		int fd = memfd_of(1 << 20, 0, false);

		ASSERT_GE(fd, 0);
		fd_closer_close(fd, SOME_UID);
		ASSERT_TRUE(closes_done(SOME_UID));
	}
	switches = other_threads_switches() - before;
	/* SOME_UID's thread sleeps once a batch; main's broadcast woke all IDLE_UIDS + 1 */
	TH_LOG("%ld voluntary switches of the closer threads for %d batches", switches, BATCHES);
	EXPECT_LT(switches, 3 * BATCHES);
}

TEST_HARNESS_MAIN
