// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A member of the coloc group cannot freeze colocd with a descriptor whose
 * close blocks (daemon/fd_closer.c): a TCP socket with SO_LINGER and unsent
 * data, in flight inside an AF_UNIX socket sent with a ping and closed by
 * its owner, lingers on its uid's closer thread: the ping is answered well
 * inside the linger (colocd's loop closed it itself before: no answer for
 * the linger's 10 s), root and another member are served, and that uid is
 * refused until its closes are done, on a new connection and on the one it
 * holds (told why, then closed). The real binary, as a process.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
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
#include "testutil.h"
#include "colocd_fixture.h"

#define LINGER_S 10
/* how long a ping may take: well inside the linger, so that it fails where the close blocks the loop */
#define ANSWER_S 3
#define MEMBER_UID 64990
#define OTHER_MEMBER_UID 64991

/*
 * A TCP socket with SO_LINGER LINGER_S towards a listener that never
 * accepts nor reads, its send buffer full: its last close waits the linger.
 */
static int lingering_socket(int *listener)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger lg = { .l_onoff = 1, .l_linger = LINGER_S };
	socklen_t len = sizeof(a);
	int rcv = 4096, t, queued = 0;
	static char junk[65536];

	*listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*listener < 0 || bind(*listener, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(*listener, 1) || getsockname(*listener, (struct sockaddr *)&a, &len))
		return -1;
	t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t < 0 || setsockopt(t, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)) ||
	    connect(t, (struct sockaddr *)&a, sizeof(a)) ||
	    setsockopt(t, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) ||
	    fcntl(t, F_SETFL, O_NONBLOCK))
		return -1;
	while (send(t, junk, sizeof(junk), MSG_NOSIGNAL) > 0)
		;
	if (ioctl(t, SIOCOUTQ, &queued) || !queued)
		return -1;
	return t;
}

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
		int listener, t, conn, again, keep = -1;
		char line[1024] = { 0 }, out[2048];

		close(pipe_fds[0]);
		if (setgroups(0, NULL) || setgid(grp->gr_gid) || setuid(MEMBER_UID))
			_exit(99);
		t = lingering_socket(&listener);
		if (t >= 0)
			t = in_flight_inside_unix_socket(t, &keep);
		conn = tu_connect(self->sock);
		if (t < 0 || conn < 0 || ping_carrying(conn, t))
			_exit(98);
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
	{
		size_t got = strlen(report);
		ssize_t n;

		while ((n = read(pipe_fds[0], report + got, sizeof(report) - 1 - got)) > 0)
			got += (size_t)n;
		report[got] = '\0';
	}
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

TEST_HARNESS_MAIN
