// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fd_closer (daemon/fd_closer.c): the caller closes no client descriptor,
 * not even one that looks cheap (a small sealed memfd, a UDP socket): each
 * goes to its uid's closer thread, which resets a socket's linger before
 * its close. Only the thread with work is woken, and a trickle of closes
 * wakes it once a drain, not once each. With no memory left every close
 * handed over is still done. colocd's own connections
 * (fd_closer_conn.c) are closed at once unless a descriptor is queued in
 * them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/userfaultfd.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "fd_closer.h"
#include "mono_clock.h"
#include "proc_tasks.h"
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

/* Waits up to ms for uid's closes to be done. */
static bool closes_done_within(uid_t uid, unsigned int ms)
{
	uint64_t until = coloc_now_ns() + ms * 1000000ull;

	while (fd_closer_pending(uid) && coloc_now_ns() < until)
		usleep(1000);
	return !fd_closer_pending(uid);
}

static bool closes_done(uid_t uid)
{
	return closes_done_within(uid, 10000);
}

TEST(the_caller_closes_nothing_not_even_what_looks_cheap)
{
	int slow = memfd_of(1 << 30, 1 << 30, true), small = memfd_of(1 << 20, 1 << 20, true);
	int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ASSERT_GE(slow, 0);
	ASSERT_GE(small, 0);
	ASSERT_GE(udp, 0);
	/* the thread busy freeing a GiB (~70 ms): what follows waits behind it */
	fd_closer_close(slow, SOME_UID);
	/* main closed both on the caller: epoll items or OFD locks on them ran there (s19) */
	fd_closer_close(small, SOME_UID);
	fd_closer_close(udp, SOME_UID);
	EXPECT_FALSE(closed(small));
	EXPECT_FALSE(closed(udp));
	EXPECT_TRUE(closes_done(SOME_UID));
	EXPECT_TRUE(closed(small));
	EXPECT_TRUE(closed(udp));
}

TEST(a_populated_big_memfd_is_freed_on_the_thread)
{
	int fd = memfd_of(1 << 30, 1 << 30, true);

	ASSERT_GE(fd, 0);
	fd_closer_close(fd, SOME_UID);
	/* ~70 ms of freeing on the 2-vCPU VM: still under way as the call returns */
	EXPECT_EQ(1, fd_closer_pending(SOME_UID));
	EXPECT_TRUE(closes_done(SOME_UID));
	EXPECT_TRUE(closed(fd));
}

TEST(a_socket_lingers_on_no_closer_thread)
{
	/* an MPTCP socket (any member may open one): its linger, unlike TCP's, was left alone */
	int listener, t = tu_lingering_socket(IPPROTO_MPTCP, 10, &listener);

	if (t < 0 && listener < 0)
		SKIP(return, "no MPTCP here (net.mptcp.enabled)");
	ASSERT_GE(t, 0);
	fd_closer_close(t, SOME_UID);
	/* main's thread closed it with the sender's linger: 10 s, the uid stuck meanwhile */
	EXPECT_TRUE(closes_done_within(SOME_UID, 3000));
	close(listener);
}

/* A send of one page that faults on a userfaultfd page: the socket's lock held until it is filled. */
struct held_send {
	int sock;
	void *page;
};

static void *send_faulting_page(void *arg)
{
	struct held_send *h = arg;

	return (void *)(long)send(h->sock, h->page, 4096, MSG_NOSIGNAL);
}

/* A connected loopback TCP socket (its peer in *peer, the listener closed). */
static int tcp_pair(int *peer)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), t;

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		return -1;
	t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t < 0 || connect(t, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	*peer = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	close(l);
	return *peer < 0 ? -1 : t;
}

TEST(the_caller_waits_on_no_socket_lock)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_zeropage zero = { .range.len = 4096 };
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC), peer = -1;
	struct held_send h = { .sock = tcp_pair(&peer) };
	struct pollfd fault = { .fd = uffd, .events = POLLIN };
	uint64_t t0, took;
	pthread_t sender;

	if (uffd < 0)
		SKIP(return, "no userfaultfd here");
	ASSERT_GE(h.sock, 0);
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	h.page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, h.page);
	reg.range.start = (unsigned long)h.page;
	reg.range.len = 4096;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));
	/* the member's sendmsg owns the socket's lock while its copy faults (s19 HIGH 3) */
	ASSERT_EQ(0, pthread_create(&sender, NULL, send_faulting_page, &h));
	ASSERT_EQ(1, poll(&fault, 1, 5000));
	t0 = coloc_now_ns();
	fd_closer_close(dup(h.sock), SOME_UID);
	took = coloc_now_ns() - t0;
	usleep(300 * 1000);
	zero.range.start = (unsigned long)h.page;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_ZEROPAGE, &zero));
	pthread_join(sender, NULL);
	/* main's setsockopt(SO_LINGER) waited for the fault: the 300 ms */
	TH_LOG("fd_closer_close took %.3f ms with the socket's lock held", took / 1e6);
	EXPECT_LT(took, 50000000ull);
	EXPECT_TRUE(closes_done(SOME_UID));
	close(h.sock);
	close(peer);
	close(uffd);
}

static void add_switches_unless_mine(pid_t pid, pid_t tid, void *sum)
{
	char path[96], line[128];
	long n;
	FILE *f;

	if (tid == gettid())
		return;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			*(long *)sum += n;
	if (f)
		fclose(f);
}

/* Voluntary context switches of this process's threads but the caller. */
static long other_threads_switches(void)
{
	long sum = 0;

	tu_tasks_each(getpid(), add_switches_unless_mine, &sum);
	return sum;
}

#define IDLE_UIDS 8
#define BATCHES 50

/* FD_CLOSER_WAKE_COUNT closes for uid at once: its thread is signalled for them. */
static void hand_a_batch(struct __test_metadata *_metadata, uid_t uid)
{
	for (int i = 0; i < FD_CLOSER_WAKE_COUNT; i++) {
		int fd = memfd_of(1 << 20, 0, false);

		ASSERT_GE(fd, 0);
		fd_closer_close(fd, uid);
	}
	ASSERT_TRUE(closes_done(uid));
}

TEST(only_the_thread_with_work_is_woken)
{
	long before, switches;

	/* IDLE_UIDS threads done with their closes, waiting for more */
	for (int i = 1; i <= IDLE_UIDS; i++)
		hand_a_batch(_metadata, SOME_UID + i);
	before = other_threads_switches();
	for (int i = 0; i < BATCHES; i++)
		hand_a_batch(_metadata, SOME_UID);
	switches = other_threads_switches() - before;
	/* SOME_UID's thread sleeps once a batch; main's broadcast woke all IDLE_UIDS + 1 */
	TH_LOG("%ld voluntary switches of the closer threads for %d batches", switches, BATCHES);
	EXPECT_LT(switches, 3 * BATCHES);
}

#define TRICKLE 100

TEST(a_trickle_of_closes_wakes_its_thread_once_a_drain)
{
	long before, switches;
	int fd = memfd_of(1 << 20, 0, false);

	ASSERT_GE(fd, 0);
	fd_closer_close(fd, SOME_UID);
	ASSERT_TRUE(closes_done(SOME_UID));
	/* one close a millisecond, as a served tenant's input memfds come */
	before = other_threads_switches();
	for (int i = 0; i < TRICKLE; i++) {
		fd = memfd_of(1 << 20, 0, false);
		ASSERT_GE(fd, 0);
		fd_closer_close(fd, SOME_UID);
		usleep(1000);
	}
	ASSERT_TRUE(closes_done(SOME_UID));
	switches = other_threads_switches() - before;
	/* ~1 ms a close: a wake each FD_CLOSER_DRAIN_MS; main's thread woke for each */
	TH_LOG("%ld voluntary switches of the closer thread for %d closes", switches, TRICKLE);
	EXPECT_LT(switches, TRICKLE / 4);
}

/* Gives what memory_pressure_on() took back. */
static void memory_back(void *chunks, const struct rlimit *saved)
{
	setrlimit(RLIMIT_AS, saved);
	while (chunks) {
		void *next = *(void **)chunks;

		free(chunks);
		chunks = next;
	}
}

/*
 * Leaves this process no memory to allocate: its address space held to
 * what it maps now (no mmap, no brk) and the heap's free chunks taken, a
 * list returned for memory_back(), NULL when an allocation still works.
 * ASan's allocator maps its heap up front, so there only a test hook could
 * fail it.
 */
static void *memory_pressure_on(struct rlimit *saved)
{
	struct rlimit held;
	char statm[128] = "";
	void *chunks = NULL, *probe;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	long pages = fd >= 0 && read(fd, statm, sizeof(statm) - 1) > 0 ? atol(statm) : 0;

	close(fd);
	getrlimit(RLIMIT_AS, saved);
	held.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
	held.rlim_max = saved->rlim_max;
	if (!pages || setrlimit(RLIMIT_AS, &held))
		return NULL;
	for (size_t size = 1 << 16; size >= sizeof(void *); size /= 4)
		for (void **chunk; (chunk = malloc(size)); chunks = chunk)
			*chunk = chunks;
	probe = malloc(64);
	if (probe) {
		free(probe);
		memory_back(chunks, saved);
		return NULL;
	}
	return chunks;
}

static int nr_open_of(const int *fds, int n)
{
	int open_now = 0;

	for (int i = 0; i < n; i++)
		open_now += !closed(fds[i]);
	return open_now;
}

static bool open_null_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0)
			return false;
	}
	return true;
}

#ifdef __SANITIZE_ADDRESS__
#define SKIP_UNDER_ASAN() SKIP(return, "ASan's allocator cannot be run out of memory by RLIMIT_AS")
#else
#define SKIP_UNDER_ASAN()
#endif

#define UNDER_PRESSURE 1000

TEST(closes_handed_over_with_no_memory_left_are_all_done)
{
	int fds[UNDER_PRESSURE], first = memfd_of(1 << 20, 0, false);
	struct rlimit saved;
	void *chunks;

	SKIP_UNDER_ASAN();
	ASSERT_TRUE(open_null_fds(fds, UNDER_PRESSURE));
	/* the thread started, idle for FD_CLOSER_IDLE_MS waiting for more */
	fd_closer_close(first, SOME_UID);
	ASSERT_TRUE(closes_done(SOME_UID));
	chunks = memory_pressure_on(&saved);
	ASSERT_NE(NULL, chunks);
	for (int i = 0; i < UNDER_PRESSURE; i++)
		fd_closer_close(fds[i], SOME_UID);
	memory_back(chunks, &saved);
	/* main's queue could not grow past 16: each descriptor then left open */
	EXPECT_TRUE(closes_done(SOME_UID));
	EXPECT_EQ(0, nr_open_of(fds, UNDER_PRESSURE));
}

TEST(a_thread_that_could_not_start_is_started_by_the_next_close)
{
	int fds[UNDER_PRESSURE], other = memfd_of(1 << 20, 0, false);
	struct rlimit saved;
	void *chunks;

	SKIP_UNDER_ASAN();
	ASSERT_TRUE(open_null_fds(fds, UNDER_PRESSURE));
	/* no thread yet, and no memory for its stack */
	chunks = memory_pressure_on(&saved);
	ASSERT_NE(NULL, chunks);
	for (int i = 0; i < UNDER_PRESSURE; i++)
		fd_closer_close(fds[i], SOME_UID);
	memory_back(chunks, &saved);
	EXPECT_EQ(UNDER_PRESSURE, nr_open_of(fds, UNDER_PRESSURE));
	/* main waited for SOME_UID's next close, which may never come */
	fd_closer_close(other, SOME_UID + 1);
	EXPECT_TRUE(closes_done(SOME_UID));
	EXPECT_EQ(0, nr_open_of(fds, UNDER_PRESSURE));
	EXPECT_TRUE(closes_done(SOME_UID + 1));
}

static bool closed_within(int fd, unsigned int ms)
{
	uint64_t until = coloc_now_ns() + ms * 1000000ull;

	while (!closed(fd) && coloc_now_ns() < until)
		usleep(1000);
	return closed(fd);
}

/* A close for each of n uids from first on: their threads up for FD_CLOSER_IDLE_MS more. */
static void keep_uids_busy(struct __test_metadata *_metadata, uid_t first, int n)
{
	for (int i = 0; i < n; i++) {
		int fd = memfd_of(4096, 0, false);

		ASSERT_GE(fd, 0);
		fd_closer_close(fd, first + (uid_t)i);
	}
}

#define LINGER_S 10

/*
 * An AF_UNIX socket whose queue holds the last reference of a TCP socket
 * lingering LINGER_S on close (its listener in *listener, the pair's other
 * end in *peer): its close hangs that long.
 */
static int hanging_close(int *listener, int *peer)
{
	int sp[2], t = tu_lingering_socket(0, LINGER_S, listener);

	if (t < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
		return -1;
	if (tu_send_fds(sp[1], "x", 1, &t, 1, 0))
		return -1;
	close(t);
	*peer = sp[1];
	return sp[0];
}

#define HUNG_UID (SOME_UID + 100)
#define OTHER_UID (SOME_UID + 101)

TEST(a_uid_past_the_31st_has_a_thread_of_its_own)
{
	int listener, peer, hang = hanging_close(&listener, &peer);
	int memfd = memfd_of(1 << 20, 0, false);

	ASSERT_GE(hang, 0);
	ASSERT_GE(memfd, 0);
	keep_uids_busy(_metadata, SOME_UID, 31);
	fd_closer_close(hang, HUNG_UID);
	/* hung past FD_CLOSER_STUCK_MS, the 31 others kept up meanwhile */
	for (int i = 0; i < 6; i++) {
		keep_uids_busy(_metadata, SOME_UID, 31);
		usleep(100 * 1000);
	}
	/* main shared its 32nd entry, never stuck, among uids past the 31st */
	EXPECT_EQ(FD_CLOSER_HUNG, fd_closer_state(HUNG_UID, NULL));
	fd_closer_close(memfd, OTHER_UID);
	EXPECT_TRUE(closed_within(memfd, 2 * FD_CLOSER_DRAIN_MS + 500));
	close(peer);
	close(listener);
}

static int nr_threads(void)
{
	return tu_tasks_each(getpid(), NULL, NULL);
}

TEST(a_uid_that_finds_every_entry_idle_takes_one)
{
	int memfd = memfd_of(1 << 20, 0, false), before;

	ASSERT_GE(memfd, 0);
	/* main held an entry for each while its thread idled: every one taken */
	keep_uids_busy(_metadata, SOME_UID, FD_CLOSER_UIDS - 1);
	ASSERT_TRUE(closes_done(SOME_UID + FD_CLOSER_UIDS - 2));
	before = nr_threads();
	/* main: every entry taken, so this uid was stuck with nothing of its own pending */
	EXPECT_EQ(FD_CLOSER_OK, fd_closer_state(OTHER_UID + FD_CLOSER_UIDS, NULL));
	fd_closer_close(memfd, OTHER_UID + FD_CLOSER_UIDS);
	EXPECT_TRUE(closed_within(memfd, 2 * FD_CLOSER_DRAIN_MS + 500));
	/* an idle thread took its close: none started for it */
	EXPECT_LE(nr_threads(), before);
}

/* uids from HUNG_UID on that each hang a close: as many as main's member entries */
#define HANGERS (FD_CLOSER_UIDS - 1)

/* past every hanger */
#define NEW_UID (HUNG_UID + HANGERS + 1)

/* what ends each hang (hanging_close()'s listener and peer), for HANGERS and one more */
struct hangers {
	int listener[HANGERS + 1], peer[HANGERS + 1], n;
};

static void hang_one_more(struct __test_metadata *_metadata, struct hangers *h)
{
	int hang = hanging_close(&h->listener[h->n], &h->peer[h->n]);

	ASSERT_GE(hang, 0);
	fd_closer_close(hang, HUNG_UID + (uid_t)h->n);
	h->n++;
}

static void hangers_let_go(struct hangers *h)
{
	for (int i = 0; i < h->n; i++) {
		close(h->peer[i]);
		close(h->listener[i]);
	}
}

/*
 * Every entry hung: the members' and the overflow (main's every entry), then
 * one uid more (main's shared entry, where root's closes went), each past
 * FD_CLOSER_STUCK_MS.
 */
static void hang_every_entry(struct __test_metadata *_metadata, struct hangers *h)
{
	struct rlimit nofile;

	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &nofile));
	nofile.rlim_cur = nofile.rlim_max;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &nofile));
	h->n = 0;
	while (h->n < HANGERS)
		hang_one_more(_metadata, h);
	usleep((FD_CLOSER_STUCK_MS + 200) * 1000);
	hang_one_more(_metadata, h);
	usleep((FD_CLOSER_STUCK_MS + 200) * 1000);
	for (int i = 0; i < h->n; i++) {
		ASSERT_EQ(FD_CLOSER_HUNG, fd_closer_state(HUNG_UID + (uid_t)i, NULL)) TH_LOG("uid %d", i);
	}
}

TEST(a_uid_that_finds_every_entry_hung_is_served)
{
	int memfd = memfd_of(1 << 20, 0, false);
	struct hangers h;

	ASSERT_GE(memfd, 0);
	hang_every_entry(_metadata, &h);
	/* main: stuck, nothing of its own pending, and its close behind the shared entry's hang */
	EXPECT_EQ(FD_CLOSER_OK, fd_closer_state(NEW_UID, NULL));
	fd_closer_close(memfd, NEW_UID);
	EXPECT_TRUE(closed_within(memfd, 2 * FD_CLOSER_DRAIN_MS + 500));
	EXPECT_EQ(FD_CLOSER_OK, fd_closer_state(NEW_UID, NULL));
	/* the entries given up still refuse their uids */
	for (int i = 0; i < h.n; i++) {
		EXPECT_EQ(FD_CLOSER_HUNG, fd_closer_state(HUNG_UID + (uid_t)i, NULL)) TH_LOG("uid %d", i);
	}
	hangers_let_go(&h);
}

TEST(roots_closes_have_an_entry_no_member_reaches)
{
	int memfd = memfd_of(1 << 20, 0, false);
	struct hangers h;

	ASSERT_GE(memfd, 0);
	hang_every_entry(_metadata, &h);
	/* main: behind the shared entry's hang, open for as long as the member liked */
	fd_closer_close(memfd, 0);
	EXPECT_TRUE(closed_within(memfd, 2 * FD_CLOSER_DRAIN_MS + 500));
	hangers_let_go(&h);
}

/*
 * conn (a socketpair's end) handed to fd_closer_close_conn: whether it went
 * to the thread (a GiB in flight in it: ~70 ms of freeing there, after up
 * to FD_CLOSER_DRAIN_MS), or was closed at once.
 */
static bool conn_closed_on_the_thread(struct __test_metadata *_metadata, int conn)
{
	bool on_thread;

	fd_closer_close_conn(conn, SOME_UID);
	on_thread = fd_closer_pending(SOME_UID) == 1;
	if (!on_thread)
		EXPECT_TRUE(closed(conn));
	EXPECT_TRUE(closes_done(SOME_UID));
	EXPECT_TRUE(closed(conn));
	return on_thread;
}

TEST(a_connection_holding_bytes_only_is_closed_at_once)
{
	int sp[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp));
	ASSERT_EQ(4, send(sp[0], "ping", 4, 0));
	ASSERT_EQ(1, send(sp[0], "!", 1, MSG_OOB));
	ASSERT_EQ(1, send(sp[0], "\n", 1, 0));
	EXPECT_FALSE(conn_closed_on_the_thread(_metadata, sp[1]));
	close(sp[0]);
}

/*
 * A GiB memfd in flight in conn's queue: sent with a byte from peer, ours
 * closed; read then with MSG_OOB when oob (the skb stays, consumed, the
 * memfd with it: SIOCINQ 0, scm_fds 1).
 */
static bool memfd_queued_in(int peer, int conn, bool oob)
{
	int fd = memfd_of(1 << 30, 1 << 30, false);
	char byte = 'x';
	bool ok = fd >= 0 && !tu_send_fds(peer, &byte, 1, &fd, 1, oob ? MSG_OOB : 0);

	close(fd);
	return ok && (!oob || recv(conn, &byte, 1, MSG_OOB) == 1);
}

TEST(a_connection_with_a_descriptor_queued_goes_to_the_thread)
{
	int sp[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp));
	ASSERT_TRUE(memfd_queued_in(sp[0], sp[1], false));
	EXPECT_TRUE(conn_closed_on_the_thread(_metadata, sp[1]));
	close(sp[0]);
}

TEST(a_connection_whose_read_oob_byte_carries_a_descriptor_goes_to_the_thread)
{
	int sp[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp));
	ASSERT_TRUE(memfd_queued_in(sp[0], sp[1], true));
	EXPECT_TRUE(conn_closed_on_the_thread(_metadata, sp[1]));
	close(sp[0]);
}

TEST_HARNESS_MAIN
