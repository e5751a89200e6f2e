// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A child in mount namespaces of its own hands the test a descriptor
 * (submit_ns.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include "submit_ns.h"
#include "testutil.h"

static int submit_ns_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -1;
	ret = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
	close(fd);
	return ret;
}

/* The member becomes root of a user namespace of its own, as unshare -Ur maps it. */
static int submit_ns_map_root(uid_t uid)
{
	char map[32];

	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	return submit_ns_write("/proc/self/setgroups", "deny") ||
			       submit_ns_write("/proc/self/uid_map", map) ||
			       submit_ns_write("/proc/self/gid_map", map) ?
		       -1 :
		       0;
}

static const char *submit_ns_enter(uid_t uid)
{
	/* dumpable again after the uid change, so that its /proc/self is its own */
	if (uid && (tu_become_member(uid) || prctl(PR_SET_DUMPABLE, 1)))
		return "becoming the member";
	if (unshare(uid ? CLONE_NEWUSER | CLONE_NEWNS : CLONE_NEWNS))
		return "unshare";
	if (uid && submit_ns_map_root(uid))
		return "mapping the member to root in its user namespace";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return "making its mounts private";
	return NULL;
}

static void submit_ns_child_run(uid_t uid, submit_ns_prepare_fn prepare, void *arg,
				const char *path, int sock)
{
	const char *step = submit_ns_enter(uid);
	char why[256] = "", byte;
	int fd = -1;

	if (!step)
		step = prepare(arg);
	if (!step && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		step = "opening the file";
	if (step)
		snprintf(why, sizeof(why), "%s: %s", step, strerror(errno));
	if (tu_send_fds(sock, why, strlen(why) + 1, &fd, fd >= 0, 0))
		_exit(1);
	/*
	 * Closed while the child's mounts are served (at its exit a FUSE file's
	 * flush would wait for the server thread the exit has ended), and said
	 * so: the test counts its server's requests from then on.
	 */
	if (fd >= 0)
		close(fd);
	if (write(sock, "", 1) != 1)
		_exit(1);
	while (read(sock, &byte, 1) > 0)
		;
	_exit(0);
}

/* The child's answer: its error text, and the descriptor when there is one. */
static int submit_ns_receive(int sock, int *fd, char *why, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { why, len - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
			      .msg_controllen = sizeof(cbuf.buf) };
	struct cmsghdr *cm;
	ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);

	*fd = -1;
	if (n <= 0) {
		snprintf(why, len, "no answer from the child: %s", n ? strerror(errno) : "it ended");
		return -1;
	}
	why[n] = '\0';
	cm = CMSG_FIRSTHDR(&msg);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	return *fd >= 0 ? 0 : -1;
}

int submit_ns_open(uid_t uid, submit_ns_prepare_fn prepare, void *arg, const char *path,
		   struct submit_ns_child *c, int *fd, char *why, size_t len)
{
	struct timeval limit = { .tv_sec = 20 };
	int sv[2];

	c->pid = -1;
	c->sock = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		snprintf(why, len, "socketpair: %s", strerror(errno));
		return -1;
	}
	c->pid = fork();
	if (c->pid == 0) {
		close(sv[0]);
		submit_ns_child_run(uid, prepare, arg, path, sv[1]);
	}
	close(sv[1]);
	c->sock = sv[0];
	if (c->pid < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	setsockopt(c->sock, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	if (submit_ns_receive(c->sock, fd, why, len))
		return -1;
	if (read(c->sock, why, 1) != 1) {
		snprintf(why, len, "the child did not close its copy: %s", strerror(errno));
		close(*fd);
		*fd = -1;
		return -1;
	}
	why[0] = '\0';
	return 0;
}

void submit_ns_end(struct submit_ns_child *c, int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	if (c->sock >= 0)
		close(c->sock);
	if (c->pid > 0)
		waitpid(c->pid, NULL, 0);
	c->sock = -1;
	c->pid = -1;
}
