// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An infer whose input bytes follow its line takes room in colocd only once
 * its line is accepted (server_payload_fn, control_payload_check): a member
 * with no tenant sending input_bytes = COLOC_MAX_PAYLOAD on four connections
 * leaves colocd's resident memory where it was (its bytes are dropped as
 * they come), and is answered "no tenant" once they are in, the connection
 * in step. The real binary, as a process.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "testutil.h"
#include "colocd_fixture.h"

#define MEMBER_UID 64990
#define CONNS 4
#define SENT_FIRST (16u << 20)

static bool send_zeros(int fd, size_t n)
{
	static char zeros[1 << 16];

	while (n) {
		ssize_t k = send(fd, zeros, n < sizeof(zeros) ? n : sizeof(zeros), MSG_NOSIGNAL);

		if (k <= 0)
			return false;
		n -= (size_t)k;
	}
	return true;
}

TEST_F_TIMEOUT(colocd, payload__refused_on_its_line_holds_no_room, 120)
{
	struct group *grp = getgrnam(COLOC_GROUP);
	int report[2], go[2], st;
	char out[2048] = { 0 }, byte;
	long before, after;
	pid_t pid;

	if (!grp)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	ASSERT_EQ(0, pipe(report));
	ASSERT_EQ(0, pipe(go));
	before = tu_proc_status_kb(self->pid, "VmRSS");
	ASSERT_GT(before, 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int conns[CONNS];
		char line[1024] = { 0 }, msg[1200];

		close(report[0]);
		close(go[1]);
		if (setgroups(0, NULL) || setgid(grp->gr_gid) || setuid(MEMBER_UID))
			_exit(99);
		for (int i = 0; i < CONNS; i++) {
			char req[256];

			conns[i] = tu_connect(self->sock);
			snprintf(req, sizeof(req),
				 "{\"cmd\":\"infer\",\"tenant\":\"no-such-tenant\",\"tag\":%d,"
				 "\"input_bytes\":%llu}\n",
				 i, (unsigned long long)COLOC_MAX_PAYLOAD);
			if (conns[i] < 0 || send(conns[i], req, strlen(req), MSG_NOSIGNAL) < 0 ||
			    !send_zeros(conns[i], SENT_FIRST))
				_exit(98);
			set_recv_timeout(conns[i], 30);
		}
		if (write(report[1], "s", 1) != 1 || read(go[0], &byte, 1) != 1)
			_exit(97);
		/* the rest of one input: then the answer, and the connection is in step */
		if (!send_zeros(conns[0], COLOC_MAX_PAYLOAD - SENT_FIRST) ||
		    tu_read_line(conns[0], line, sizeof(line)) <= 0)
			snprintf(line, sizeof(line), "no answer\n");
		snprintf(msg, sizeof(msg), "answer: %s", line);
		if (write(report[1], msg, strlen(msg)) < 0)
			_exit(96);
		snprintf(msg, sizeof(msg), "ping: %d\n", ping_on(conns[0], NULL, 0));
		if (write(report[1], msg, strlen(msg)) < 0)
			_exit(96);
		_exit(0);
	}
	close(report[1]);
	close(go[0]);
	ASSERT_EQ(1, read(report[0], &byte, 1));
	after = tu_proc_status_kb(self->pid, "VmRSS");
	TH_LOG("colocd VmRSS %ld kB before, %ld kB with %d x %u MiB of refused inputs received",
	       before, after, CONNS, SENT_FIRST >> 20);
	/* main held every byte: +64 MiB */
	EXPECT_LT(after - before, (long)(SENT_FIRST >> 10));
	ASSERT_EQ(1, write(go[1], "g", 1));
	tu_read_all(report[0], out, sizeof(out));
	TH_LOG("%s", out);
	/* the member's name is its own tenant's, keyed by its uid */
	EXPECT_NE(NULL, strstr(out, "no tenant 64990:no-such-tenant"));
	EXPECT_NE(NULL, strstr(out, "\"tag\":0"));
	EXPECT_NE(NULL, strstr(out, "ping: 1"));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("status %d", st);
	close(report[0]);
	close(go[1]);
}

TEST_HARNESS_MAIN
