// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What colocctl tells an operator who cannot reach colocd, run as a real
 * process against a real colocd: no socket or nobody listening means the
 * daemon is not running; a refused connection means it runs but the caller
 * is neither root nor in group coloc (run as uid/gid 65534 with no other
 * group), or cannot pass the socket's directory. A member of group coloc is
 * served.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "testutil.h"

#define NOBODY 65534

FIXTURE(colocctl)
{
	char dir[64];
	char sock[128];
	char pin[128];
	char log[128];
	char bin[512];
	char out[4096];
	pid_t pid;
};

FIXTURE_SETUP(colocctl)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-ctl-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	/* others must reach the socket's directory for the group to matter */
	ASSERT_EQ(0, chmod(self->dir, 0755));
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-ctl-%d", getpid());
	tu_bin("colocctl", self->bin, sizeof(self->bin));
	self->pid = 0;
}

FIXTURE_TEARDOWN(colocctl)
{
	if (self->pid > 0)
		tu_stop_colocd(self->pid);
	tu_remove_tree(self->dir);
}

/*
 * Runs "colocctl --socket SOCK ping" as uid and gid 65534 with the given
 * supplementary groups; its output goes to out. Returns its exit status.
 */
static int ping_as_nobody(const char *bin, const char *sock, const gid_t *groups, int ngroups,
			  char *out, size_t len)
{
	int fds[2], st;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *argv[] = { (char *)bin, "--socket", (char *)sock, "ping", NULL };
		/* opened as root: a clone under /root is not searchable by nobody */
		int exe = open(bin, O_RDONLY | O_CLOEXEC);

		close(fds[0]);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		if (exe < 0 || setgroups((size_t)ngroups, groups) || setgid(NOBODY) ||
		    setuid(NOBODY))
			_exit(99);
		fexecve(exe, argv, environ);
		_exit(127);
	}
	close(fds[1]);
	while (got + 1 < len && (n = read(fds[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fds[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

TEST_F(colocctl, connect__missing_socket_says_colocd_is_not_running)
{
	char cmd[1024];

	EXPECT_EQ(1, tu_colocctl(self->sock, "ping", self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "colocd is not running (no socket at"));
	/* how to start it, on this very socket */
	snprintf(cmd, sizeof(cmd), "'colocd --socket %s &'", self->sock);
	EXPECT_NE(NULL, strstr(self->out, cmd));
}

TEST_F(colocctl, connect__socket_nobody_listens_on_says_colocd_is_not_running)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	/* what a crashed colocd leaves: a bound socket with no listener */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0);
	strcpy(addr.sun_path, self->sock);
	ASSERT_EQ(0, bind(fd, (struct sockaddr *)&addr, sizeof(addr)));
	EXPECT_EQ(1, tu_colocctl(self->sock, "ping", self->out, sizeof(self->out)));
	close(fd);
	EXPECT_NE(NULL, strstr(self->out, "colocd is not running (nothing listens on"));
}

TEST_F(colocctl, connect__outsider_is_told_to_join_group_coloc)
{
	self->pid = tu_start_colocd(self->sock, self->pin, self->log);
	ASSERT_GT(self->pid, 0);
	EXPECT_EQ(1, ping_as_nobody(self->bin, self->sock, NULL, 0, self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "permission denied on"));
	if (getgrnam(COLOC_GROUP)) {
		EXPECT_NE(NULL, strstr(self->out, "usermod -aG coloc $USER"));
	} else {
		EXPECT_NE(NULL, strstr(self->out, "group 'coloc' does not exist"));
	}
	/* the daemon is running: the message must not say otherwise */
	EXPECT_EQ(NULL, strstr(self->out, "not running"));
}

TEST_F(colocctl, connect__closed_socket_directory_is_named_as_the_cause)
{
	self->pid = tu_start_colocd(self->sock, self->pin, self->log);
	ASSERT_GT(self->pid, 0);
	ASSERT_EQ(0, chmod(self->dir, 0700));
	EXPECT_EQ(1, ping_as_nobody(self->bin, self->sock, NULL, 0, self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "a directory above it is closed to you"));
	EXPECT_EQ(NULL, strstr(self->out, "not running"));
}

TEST_F(colocctl, connect__member_of_group_coloc_is_served)
{
	struct group *grp = getgrnam(COLOC_GROUP);
	gid_t gid;

	if (!grp)
		SKIP(return, "no '%s' group here ('make deps' creates it)", COLOC_GROUP);
	gid = grp->gr_gid;
	self->pid = tu_start_colocd(self->sock, self->pin, self->log);
	ASSERT_GT(self->pid, 0);
	EXPECT_EQ(0, ping_as_nobody(self->bin, self->sock, &gid, 1, self->out, sizeof(self->out)))
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "\"ok\":true"));
}

TEST_HARNESS_MAIN
