// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A member of the coloc group cannot freeze colocd with a descriptor whose
 * close blocks (daemon/fd_closer.c): a TCP socket with SO_LINGER and unsent
 * data, in flight inside an AF_UNIX socket sent with a ping and closed by
 * its owner, lingers on its uid's closer thread: the ping is answered well
 * inside the linger (colocd's loop closed it itself before: no answer for
 * the linger's 10 s), root and another member are served, and that uid is
 * refused until its closes are done, on a new connection and on the one it
 * holds (told why, then closed). Nor can it grow colocd's descriptors by
 * reconnecting meanwhile: each refused connection is closed at once (s19).
 * The real binary, as a process.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "mono_clock.h"
#include "proc_fds.h"
#include "scm_rights.h"
#include "testutil.h"
#include "colocd_fixture.h"

#define LINGER_S 10
/* how long a ping may take: well inside the linger, so that it fails where the close blocks the loop */
#define ANSWER_S 3
#define MEMBER_UID 64990
#define OTHER_MEMBER_UID 64991

/*
 * t in flight inside an AF_UNIX stream socket: sent with a byte over a
 * pair's other end (kept open, in *keep), t closed. The socket returned
 * holds t's last reference in its queue, so whoever closes it last
 * releases t: lingering.
 */
static int in_flight_inside_unix_socket(int t, int *keep)
{
	int sp[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
		return -1;
	if (tu_send_fds(sp[1], "x", 1, &t, 1, 0))
		return -1;
	close(t);
	*keep = sp[1];
	return sp[0];
}

/* Sends a ping line with fd attached, fd closed by us before the newline goes. */
static int ping_carrying(int conn, int fd)
{
	const char line[] = "{\"cmd\":\"ping\"}";

	if (tu_send_fds(conn, line, strlen(line), &fd, 1, 0))
		return -1;
	/* colocd now holds the last reference */
	usleep(200 * 1000);
	close(fd);
	usleep(200 * 1000);
	return send(conn, "\n", 1, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/*
 * In a child: becomes MEMBER_UID of gid and hands colocd, with a ping, a
 * lingering TCP socket in flight inside an AF_UNIX socket: its closer
 * thread hangs for LINGER_S. The connection it pinged on, or it exits.
 */
static int member_hangs_its_closer(const char *sock, gid_t gid)
{
	int listener, t, conn, keep = -1;

	if (setgroups(0, NULL) || setgid(gid) || setuid(MEMBER_UID))
		_exit(99);
	t = tu_lingering_socket(0, LINGER_S, &listener);
	if (t >= 0)
		t = in_flight_inside_unix_socket(t, &keep);
	conn = tu_connect(sock);
	if (t < 0 || conn < 0 || ping_carrying(conn, t))
		_exit(98);
	return conn;
}

/*
 * A child of uid in the coloc group that connects, says so on ready, waits
 * for a byte on go, then pings: exit 0 if served, 1 if not.
 */
static pid_t member_ping(const char *sock, uid_t uid, gid_t gid, int ready, int go)
{
	pid_t pid = fork();
	char byte;
	int fd;

	if (pid)
		return pid;
	if (setgroups(0, NULL) || setgid(gid) || setuid(uid))
		_exit(99);
	fd = tu_connect(sock);
	if (fd < 0 || write(ready, "c", 1) != 1 || read(go, &byte, 1) != 1)
		_exit(98);
	set_recv_timeout(fd, ANSWER_S);
	_exit(ping_on(fd, NULL, 0) == 1 ? 0 : 1);
}

TEST_F_TIMEOUT(colocd, closer__a_lingering_socket_stalls_only_its_own_uid, 120)
{
	struct group *grp = getgrnam(COLOC_GROUP);
	char report[2048] = { 0 }, why[1024], byte;
	int pipe_fds[2], ready[2], go[2], st, fd;
	pid_t a, b;

	if (!grp)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	/* root and another member connect before the socket is sent, and ping while it lingers */
	fd = tu_connect(self->sock);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	b = member_ping(self->sock, OTHER_MEMBER_UID, grp->gr_gid, ready[1], go[0]);
	ASSERT_GT(b, 0);
	ASSERT_EQ(1, read(ready[0], &byte, 1));
	ASSERT_EQ(0, pipe(pipe_fds));
	a = fork();
	ASSERT_GE(a, 0);
	if (a == 0) {
		char line[1024] = { 0 }, out[2048];
		int conn, again;

		close(pipe_fds[0]);
		conn = member_hangs_its_closer(self->sock, grp->gr_gid);
		/* colocd answers the ping that carried it before the linger ends */
		set_recv_timeout(conn, ANSWER_S);
		if (tu_read_line(conn, line, sizeof(line)) <= 0)
			snprintf(line, sizeof(line), "no answer");
		snprintf(out, sizeof(out), "carrier: %s\n", line);
		if (write(pipe_fds[1], out, strlen(out)) < 0)
			_exit(97);
		/* once its close hangs, this uid is refused (a new connection) */
		usleep(1500 * 1000);
		again = tu_connect(self->sock);
		set_recv_timeout(again, ANSWER_S);
		line[0] = '\0';
		if (again < 0 || ping_on(again, line, sizeof(line)) < 0)
			snprintf(line, sizeof(line), "no answer");
		snprintf(out, sizeof(out), "again: %s\n", line);
		if (write(pipe_fds[1], out, strlen(out)) < 0)
			_exit(97);
		/* and the connection it already had is told why before it is closed */
		line[0] = '\0';
		if (ping_on(conn, line, sizeof(line)) < 0)
			snprintf(line, sizeof(line), "no answer");
		snprintf(out, sizeof(out), "held: %s\n", line);
		if (write(pipe_fds[1], out, strlen(out)) < 0)
			_exit(97);
		close(pipe_fds[1]);
		/* the listener stays, unread, until the test ends */
		for (;;)
			pause();
	}
	close(pipe_fds[1]);
	/* first the carrier's answer, with nothing else asked of colocd meanwhile */
	ASSERT_GT(read(pipe_fds[0], report, sizeof(report) - 1), 0);
	EXPECT_NE(NULL, strstr(report, "carrier: {\"ok\":true")) TH_LOG("%s", report);
	set_recv_timeout(fd, ANSWER_S);
	EXPECT_EQ(1, ping_on(fd, why, sizeof(why))) TH_LOG("root's ping: %s", why);
	close(fd);
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(b, waitpid(b, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("status %d", st);
	/* the member whose close lingers is refused, with the reason */
	tu_read_all(pipe_fds[0], report + strlen(report), sizeof(report) - strlen(report));
	TH_LOG("%s", report);
	EXPECT_NE(NULL, strstr(report, "again: {\"ok\":false"));
	EXPECT_NE(NULL, strstr(report, "still being closed"));
	EXPECT_NE(NULL, strstr(report, "held: {\"ok\":false,\"error\":\"this user's descriptors"));
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	kill(a, SIGKILL);
	ASSERT_EQ(a, waitpid(a, &st, 0));
	close(pipe_fds[0]);
}

static int colocd_nr_fds(pid_t pid)
{
	return proc_fds_each(pid, NULL, NULL);
}

#define RECONNECTS 3000

/*
 * The member, its closer thread hung: RECONNECTS connections, each closed
 * at once, or after a ping line, or after descriptors offered before colocd
 * accepted it; every 100th waits for colocd's refusal. Writes that line.
 * 0, or the reason it could not.
 */
static int member_reconnects(const char *sock, int report)
{
	char line[1024] = "no refusal read";

	for (int i = 0; i < RECONNECTS; i++) {
		int conn = tu_connect(sock), self_fd = conn;
		struct iovec iov = { "{\"cmd\":\"ping\"}\n", 15 };
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} cbuf = { 0 };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

		if (conn < 0)
			return 90;
		if (i % 3 == 1)
			send(conn, iov.iov_base, iov.iov_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (i % 3 == 2) {
			scm_rights_attach(&msg, cbuf.buf, &self_fd, 1);
			sendmsg(conn, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		if (i % 100 == 0) {
			set_recv_timeout(conn, ANSWER_S);
			if (tu_read_line(conn, line, sizeof(line)) <= 0)
				snprintf(line, sizeof(line), "no answer");
		}
		close(conn);
	}
	return write(report, line, strlen(line)) > 0 ? 0 : 97;
}

TEST_F_TIMEOUT(colocd, closer__a_stuck_members_reconnects_leave_no_descriptor_open, 120)
{
	struct group *grp = getgrnam(COLOC_GROUP);
	struct root_pinger p = { .fd = tu_connect(self->sock), .every_us = 2000 };
	int report[2], go[2], st, before, after;
	char refusal[1024] = { 0 }, byte;
	pthread_t t;
	pid_t a, b;

	if (!grp)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	ASSERT_GE(p.fd, 0);
	set_recv_timeout(p.fd, ANSWER_S);
	ASSERT_EQ(0, pipe(report));
	ASSERT_EQ(0, pipe(go));
	a = fork();
	ASSERT_GE(a, 0);
	if (a == 0) {
		member_hangs_its_closer(self->sock, grp->gr_gid);
		if (write(report[1], "h", 1) != 1 || read(go[0], &byte, 1) != 1)
			_exit(98);
		if (member_reconnects(self->sock, report[1]))
			_exit(97);
		/* the listener stays, unread, until the test ends: the close hangs on */
		for (;;)
			pause();
	}
	ASSERT_EQ(1, read(report[0], &byte, 1));
	/* hung past FD_CLOSER_STUCK_MS */
	usleep(1500 * 1000);
	before = colocd_nr_fds(self->pid);
	ASSERT_EQ(0, pthread_create(&t, NULL, root_pinger_run, &p));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_GT(read(report[0], refusal, sizeof(refusal) - 1), 0);
	usleep(300 * 1000);
	after = colocd_nr_fds(self->pid);
	atomic_store(&p.stop, true);
	pthread_join(t, NULL);
	kill(a, SIGKILL);
	ASSERT_EQ(a, waitpid(a, &st, 0));
	TH_LOG("colocd's descriptors %d before %d reconnects, %d after; root's %d pings, "
	       "slowest %.1f ms; the member was told: %s",
	       before, RECONNECTS, after, p.pings, p.worst_ns / 1e6, refusal);
	EXPECT_NE(NULL, strstr(refusal, "still being closed"));
	/* main: each refused connection queued behind the hung close, held open */
	EXPECT_LT(after, before + 64);
	EXPECT_EQ(0, p.failed);
	/* another member is served */
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	b = member_ping(self->sock, OTHER_MEMBER_UID, grp->gr_gid, report[1], go[0]);
	ASSERT_GT(b, 0);
	ASSERT_EQ(1, read(report[0], &byte, 1));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(b, waitpid(b, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("status %d", st);
	close(p.fd);
}

TEST_HARNESS_MAIN
