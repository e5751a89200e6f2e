// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A member whose closes are behind, not hung, keeps its connection (review
 * s21, second attacker, HIGH 1: the gateway's uid, whose queries' input
 * memfds a busy host's nice-19 closer thread fell 256 behind on, had every
 * connection dropped with its queries). The member sends LINES pings, each
 * carrying COLOC_MAX_REQUEST_FDS populated memfds whose last reference
 * colocd then holds, back to back on one connection, and a plain ping: its
 * uid's queue passes FD_CLOSER_STUCK_QUEUE while colocd reads faster than
 * the thread frees pages, and every ping is still answered ok on that
 * connection. Two spinners at nice SPINNER_NICE, one a CPU, stand for
 * the busy host (the executors) the nice-19 thread falls behind on: at
 * nice 0 they starved it so that under ASan in CI one close ran past
 * FD_CLOSER_STUCK_MS, a hang by colocd's rule, not the backlog this test
 * is about. The real binary, as a process.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "testutil.h"
#include "colocd_fixture.h"

#define MEMBER_UID 64990
#define SPINNER_NICE 10 /* the thread's CFS share beside one: 15 / (15 + 110), ~12 % */
#define LINES 16
#define MEMFD_BYTES (4ll << 20)
#define CPUS 2
#define ANSWER_S 20

static int populated_memfd(void)
{
	int fd = memfd_create("closer_backlog", MFD_CLOEXEC);

	if (fd >= 0 && fallocate(fd, 0, 0, MEMFD_BYTES)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* In a child, as MEMBER_UID of gid: 0 when every ping was answered ok, else why not. */
static int member_hands_many(const char *sock, gid_t gid, char *why, size_t len)
{
	static const char ping[] = "{\"cmd\":\"ping\"}\n";
	int conn, fds[COLOC_MAX_REQUEST_FDS];
	char answer[1024];

	if (setgroups(0, NULL) || setgid(gid) || setuid(MEMBER_UID))
		return snprintf(why, len, "could not become the member");
	conn = tu_connect(sock);
	if (conn < 0)
		return snprintf(why, len, "no connection");
	for (int l = 0; l < LINES; l++) {
		for (int i = 0; i < COLOC_MAX_REQUEST_FDS; i++)
			if ((fds[i] = populated_memfd()) < 0)
				return snprintf(why, len, "no memfd");
		if (tu_send_fds(conn, ping, strlen(ping), fds, COLOC_MAX_REQUEST_FDS, 0))
			return snprintf(why, len, "line %d not sent", l);
		/* colocd holds the last references */
		for (int i = 0; i < COLOC_MAX_REQUEST_FDS; i++)
			close(fds[i]);
	}
	if (send(conn, ping, strlen(ping), MSG_NOSIGNAL) != (ssize_t)strlen(ping))
		return snprintf(why, len, "the plain ping not sent");
	set_recv_timeout(conn, ANSWER_S);
	for (int l = 0; l <= LINES; l++) {
		answer[0] = '\0';
		if (tu_read_line(conn, answer, sizeof(answer)) <= 0 ||
		    !strstr(answer, "\"ok\":true"))
			return snprintf(why, len, "answer %d of %d: %s", l + 1, LINES + 1,
					answer[0] ? answer : "none (connection closed)");
	}
	return 0;
}

TEST_F_TIMEOUT(colocd, backlog__a_member_whose_closes_are_behind_keeps_its_connection, 120)
{
	struct group *grp = getgrnam(COLOC_GROUP);
	struct tu_spinner spin[CPUS];
	char why[1200] = "";
	int report[2], st, root;
	ssize_t n;
	pid_t child;

	if (!grp)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	/* before the pipe: a spinner holding its write end would keep the read below waiting */
	for (int i = 0; i < CPUS; i++) {
		ASSERT_EQ(0, tu_spawn_spinner(&spin[i], i, 1000, 0));
		ASSERT_EQ(0, setpriority(PRIO_PROCESS, (id_t)spin[i].pid, SPINNER_NICE));
		tu_release(&spin[i]);
	}
	ASSERT_EQ(0, pipe(report));
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		close(report[0]);
		if (member_hands_many(self->sock, grp->gr_gid, why, sizeof(why)) &&
		    write(report[1], why, strlen(why)) < 0)
			_exit(2);
		_exit(0);
	}
	close(report[1]);
	n = read(report[0], why, sizeof(why) - 1);
	why[n > 0 ? n : 0] = '\0';
	close(report[0]);
	ASSERT_EQ(child, waitpid(child, &st, 0));
	for (int i = 0; i < CPUS; i++)
		tu_kill(&spin[i]);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	EXPECT_STREQ("", why);
	/* and colocd serves root as before */
	root = tu_connect(self->sock);
	ASSERT_GE(root, 0);
	EXPECT_EQ(1, ping_on(root, NULL, 0));
	close(root);
}

TEST_HARNESS_MAIN
