// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd at its descriptor limit (its RLIMIT_NOFILE lowered with prlimit
 * to its lowest free descriptor, as a full table): members' new
 * connections are refused with a line through the descriptor kept in
 * reserve, root's held connection is served, and once the limit is back a
 * member is served again; a member's connection is not read there, so a
 * descriptor it sends is not released by the kernel on the loop (recvmsg
 * could not install it: s20 HIGH 2) but with the connection on its closer
 * thread; before Linux 6.16 (forced with COLOCD_TEST_NO_PASSRIGHTS) a
 * connection refused at the limit goes there too with what it carries.
 * The real binary, as a process.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/sockios.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "proc_fds.h"
#include "testutil.h"
#include "colocd_fixture.h"

#define MEMBER_UID 64990
#define ANSWER_S 5
/* connections past the limit: more than one wake-up's batch of accepts */
#define PAST_LIMIT 20
/* a member's memfd: ~140 ms of freeing on the 2-vCPU VM, wherever it is freed */
#define MEMFD_BYTES (2ll << 30)

static bool held[1 << 16];

static void mark_held(const char *path, const char *link, void *ctx)
{
	int n = atoi(strrchr(path, '/') + 1);

	(void)link;
	(void)ctx;
	if (n < (int)(sizeof(held) / sizeof(held[0])))
		held[n] = true;
}

/* The lowest descriptor number pid does not hold. */
static int lowest_free_fd(pid_t pid)
{
	int fd = 0;

	memset(held, 0, sizeof(held));
	proc_fds_each(pid, mark_held, NULL);
	while (held[fd])
		fd++;
	return fd;
}

/*
 * pid's soft RLIMIT_NOFILE set to n (the hard one kept: raising it back
 * needs CAP_SYS_RESOURCE); its old limit in *old.
 */
static int hold_nofile(pid_t pid, rlim_t n, struct rlimit *old)
{
	struct rlimit rl;

	if (prlimit(pid, RLIMIT_NOFILE, NULL, old))
		return -1;
	rl.rlim_cur = n;
	rl.rlim_max = old->rlim_max;
	return prlimit(pid, RLIMIT_NOFILE, &rl, NULL);
}

static int member_conn(const char *sock)
{
	return tu_become_member(MEMBER_UID) ? -1 : tu_connect(sock);
}

/*
 * In a child, as the member: PAST_LIMIT connections, each pinged; exits
 * with the number refused for want of descriptors.
 */
static int member_refusals(const char *sock)
{
	int refused = 0;

	if (tu_become_member(MEMBER_UID))
		_exit(255);
	for (int i = 0; i < PAST_LIMIT; i++) {
		char line[1024] = "";
		int fd = tu_connect(sock);

		if (fd < 0)
			continue;
		set_recv_timeout(fd, ANSWER_S);
		if (ping_on(fd, line, sizeof(line)) == 0 && strstr(line, "out of descriptors"))
			refused++;
		close(fd);
	}
	_exit(refused);
}

static int nr_fds(pid_t pid)
{
	return proc_fds_each(pid, NULL, NULL);
}

TEST_F(colocd, fd_limit__members_are_refused_past_it_and_served_once_it_is_back)
{
	int root = tu_connect(self->sock), before, st;
	struct rlimit old;
	pid_t child;

	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	ASSERT_GE(root, 0);
	set_recv_timeout(root, ANSWER_S);
	/* the reserve is taken at the first connection */
	ASSERT_EQ(1, ping_on(root, NULL, 0));
	before = nr_fds(self->pid);
	ASSERT_EQ(0, hold_nofile(self->pid, (rlim_t)lowest_free_fd(self->pid), &old));
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0)
		member_refusals(self->sock);
	ASSERT_EQ(child, waitpid(child, &st, 0));
	/* without the reserve none is accepted: no answer, the loop spinning on the backlog */
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == PAST_LIMIT) TH_LOG("status %d", st);
	EXPECT_EQ(1, ping_on(root, NULL, 0));
	ASSERT_EQ(0, prlimit(self->pid, RLIMIT_NOFILE, &old, NULL));
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		int fd = member_conn(self->sock);

		set_recv_timeout(fd, ANSWER_S);
		_exit(fd >= 0 && ping_on(fd, NULL, 0) == 1 ? 0 : 1);
	}
	ASSERT_EQ(child, waitpid(child, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("status %d", st);
	/* the member's connection closed once colocd has read its end */
	for (int i = 0; i < 200 && nr_fds(self->pid) != before; i++)
		usleep(10 * 1000);
	EXPECT_EQ(before, nr_fds(self->pid));
	close(root);
}

/* A memfd of MEMFD_BYTES, its pages allocated. */
static int populated_memfd(void)
{
	int fd = memfd_create("colocd_fd_limit_test", MFD_CLOEXEC);

	if (fd < 0 || fallocate(fd, 0, 0, MEMFD_BYTES)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* CPU time this thread spent on the last close of such a memfd. */
static long long own_close_ns(void)
{
	struct timespec a, b;
	int fd = populated_memfd();

	if (fd < 0)
		return -1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	close(fd);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	return (b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec);
}

/*
 * The member was told colocd is out of descriptors, and the loop spent
 * under half of own_ns (a close of the same memfd here) meanwhile: the
 * memfd's pages were not freed on it.
 */
static void expect_told_and_freed_off_the_loop(struct __test_metadata *_metadata,
					       const char *answer, __u64 loop_ns, long long own_ns)
{
	TH_LOG("the member was told: %s; colocd's loop %.1f ms of CPU, a close of the same "
	       "memfd here %.1f ms",
	       answer, loop_ns / 1e6, own_ns / 1e6);
	EXPECT_NE(NULL, strstr(answer, "out of descriptors"));
	EXPECT_LT((long long)loop_ns, own_ns / 2);
}

/*
 * Pings on fd, its answers left unread (SO_RCVBUF 1), until colocd stops
 * reading it (SERVER_OUT_HIGH of answers waiting): what the member sends
 * next waits in the socket, unread, until the member reads. 0 or -1.
 */
static int stop_colocd_reading(int fd)
{
	static char pings[15 * 1000];
	int rcvbuf = 1, queued = -1, before;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	for (int i = 0; i < 1000; i++)
		memcpy(pings + 15 * i, "{\"cmd\":\"ping\"}\n", 15);
	for (int round = 0; round < 2000; round++) {
		send(fd, pings, sizeof(pings), MSG_DONTWAIT | MSG_NOSIGNAL);
		usleep(20 * 1000);
		ioctl(fd, SIOCOUTQ, &before);
		usleep(150 * 1000);
		ioctl(fd, SIOCOUTQ, &queued);
		if (queued > 0 && queued == before)
			return 0;
	}
	return -1;
}

/* Reads fd to its end (up to ANSWER_S); the last error line seen goes to report. */
static void report_last_error(int fd, int report)
{
	static char buf[1 << 16];
	char error[512] = "no error line";
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t kept = 0;
	ssize_t n;

	while (poll(&p, 1, ANSWER_S * 1000) > 0 &&
	       (n = recv(fd, buf + kept, sizeof(buf) - 1 - kept, 0)) > 0) {
		char *at, *end;

		buf[kept + (size_t)n] = '\0';
		for (at = buf; (at = strstr(at, "{\"ok\":false")) && (end = strchr(at, '\n'));
		     at = end)
			snprintf(error, sizeof(error), "%.*s", (int)(end - at), at);
		/* an error line cut at the chunk's end is read whole with the next */
		kept = strlen(buf) > 256 ? 256 : strlen(buf);
		memmove(buf, buf + strlen(buf) - kept, kept);
	}
	if (write(report, error, strlen(error)) < 0)
		_exit(95);
}

/*
 * In a child, as the member: connected and served once (admitted), colocd
 * made to stop reading it, says so on ready, waits for go, sends a ping
 * carrying a populated memfd (its own copy closed while colocd has not
 * read it), then reads its answers: the last error line goes to report.
 */
static void member_sends_at_limit(const char *sock, int ready, int go, int report)
{
	int fd = member_conn(sock), memfd = populated_memfd();
	const char ping[] = "{\"cmd\":\"ping\"}\n";
	char byte;

	if (fd < 0 || memfd < 0)
		_exit(98);
	set_recv_timeout(fd, ANSWER_S);
	if (ping_on(fd, NULL, 0) != 1 || stop_colocd_reading(fd) || write(ready, "r", 1) != 1 ||
	    read(go, &byte, 1) != 1)
		_exit(97);
	if (tu_send_fds(fd, ping, strlen(ping), &memfd, 1, 0))
		_exit(96);
	close(memfd);
	report_last_error(fd, report);
	_exit(0);
}

TEST_F_TIMEOUT(colocd, fd_limit__a_members_descriptor_is_not_released_on_the_loop, 120)
{
	long long own_ns = own_close_ns();
	char answer[1024] = "";
	int ready[2], go[2], report[2], st;
	__u64 loop_before, loop_after;
	struct rlimit old;
	pid_t child;

	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_GT(own_ns, 0);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(report));
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0)
		member_sends_at_limit(self->sock, ready[1], go[0], report[1]);
	close(report[1]);
	/* else the member could not make colocd stop reading it */
	ASSERT_EQ(1, read(ready[0], answer, 1));
	ASSERT_EQ(0, hold_nofile(self->pid, (rlim_t)lowest_free_fd(self->pid), &old));
	ASSERT_EQ(0, tu_task_cpu_ns(self->pid, self->pid, &loop_before));
	ASSERT_EQ(1, write(go[1], "g", 1));
	EXPECT_GT(read(report[0], answer, sizeof(answer) - 1), 0);
	ASSERT_EQ(child, waitpid(child, &st, 0));
	/* main released it in recvmsg, before it answered: the window holds that */
	ASSERT_EQ(0, tu_task_cpu_ns(self->pid, self->pid, &loop_after));
	ASSERT_EQ(0, prlimit(self->pid, RLIMIT_NOFILE, &old, NULL));
	/* main read it: recvmsg could not install it and its pages were freed on the loop */
	expect_told_and_freed_off_the_loop(_metadata, answer, loop_after - loop_before, own_ns);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	close(report[0]);
}

/*
 * In a child, as the member, while colocd is stopped: a connection not yet
 * accepted, a ping carrying a populated memfd sent on it (no SO_PASSRIGHTS
 * on the listener, as before Linux 6.16) and the member's own copy closed,
 * then ready; the answer line goes to report.
 */
static void member_sends_before_accept(const char *sock, int ready, int report)
{
	int fd = member_conn(sock), memfd = populated_memfd();
	const char ping[] = "{\"cmd\":\"ping\"}\n";
	char line[1024] = "no answer";

	if (fd < 0 || memfd < 0)
		_exit(98);
	if (tu_send_fds(fd, ping, strlen(ping), &memfd, 1, 0))
		_exit(96);
	close(memfd);
	if (write(ready, "r", 1) != 1)
		_exit(97);
	set_recv_timeout(fd, ANSWER_S);
	tu_read_line(fd, line, sizeof(line));
	if (write(report, line, strlen(line)) < 0)
		_exit(95);
	_exit(0);
}

TEST_F_TIMEOUT(colocd, fd_limit__a_refused_connections_descriptors_are_not_released_on_the_loop,
	       120)
{
	long long own_ns = own_close_ns();
	char answer[1024] = "";
	int ready[2], report[2], root, st;
	__u64 loop_before, loop_after;
	struct rlimit old;
	pid_t child;

	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_GT(own_ns, 0);
	ASSERT_EQ(0, tu_stop_colocd(self->pid));
	setenv("COLOCD_TEST_NO_PASSRIGHTS", "1", 1);
	self->pid = tu_start_colocd(self->sock, self->pin, self->log);
	unsetenv("COLOCD_TEST_NO_PASSRIGHTS");
	ASSERT_GT(self->pid, 0);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	root = tu_connect(self->sock);
	ASSERT_GE(root, 0);
	set_recv_timeout(root, ANSWER_S);
	ASSERT_EQ(1, ping_on(root, NULL, 0));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(report));
	ASSERT_EQ(0, hold_nofile(self->pid, (rlim_t)lowest_free_fd(self->pid), &old));
	/* stopped, colocd cannot accept before the member has sent */
	ASSERT_EQ(0, kill(self->pid, SIGSTOP));
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0)
		member_sends_before_accept(self->sock, ready[1], report[1]);
	close(report[1]);
	EXPECT_EQ(1, read(ready[0], answer, 1));
	ASSERT_EQ(0, tu_task_cpu_ns(self->pid, self->pid, &loop_before));
	ASSERT_EQ(0, kill(self->pid, SIGCONT));
	EXPECT_GT(read(report[0], answer, sizeof(answer) - 1), 0);
	ASSERT_EQ(child, waitpid(child, &st, 0));
	/* the answer comes before the close: root's ping, after it */
	EXPECT_EQ(1, ping_on(root, NULL, 0));
	ASSERT_EQ(0, tu_task_cpu_ns(self->pid, self->pid, &loop_after));
	ASSERT_EQ(0, prlimit(self->pid, RLIMIT_NOFILE, &old, NULL));
	/* main closed the refused connection on the loop, and the memfd's pages with it */
	expect_told_and_freed_off_the_loop(_metadata, answer, loop_after - loop_before, own_ns);
	close(root);
	close(ready[0]);
	close(ready[1]);
	close(report[0]);
}

TEST_HARNESS_MAIN
