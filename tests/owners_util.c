// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What owners_test.c (no socket) and owners_wire_test.c (through colocd's
 * socket) share (owners_util.h): processes running as another uid, and
 * reading the answers' JSON.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "owners_util.h"
#include "testutil.h"
#include "tenants.h"

pid_t owners_sleeper_as(uid_t ruid, uid_t euid)
{
	int fds[2];
	char c = 0;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		if ((ruid || euid) &&
		    (setgroups(0, NULL) || setgid((gid_t)ruid) || setresuid(ruid, euid, 0)))
			_exit(99);
		if (write(fds[1], "x", 1) != 1)
			_exit(98);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], &c, 1) != 1) {
		close(fds[0]);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	close(fds[0]);
	return pid;
}

void owners_reap(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

bool owners_is_ok(struct json_object *o)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v);
}

const char *owners_error_of(struct json_object *o)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, "error", &v) ? json_object_get_string(v) : "";
}

bool owners_has(struct json_object *o, const char *key)
{
	return o && json_object_object_get_ex(o, key, NULL);
}

struct json_object *owners_entry(struct json_object *o, const char *name)
{
	struct json_object *arr;

	if (!o || !json_object_object_get_ex(o, "tenants", &arr))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *t = json_object_array_get_idx(arr, i), *n;

		if (json_object_object_get_ex(t, "name", &n) &&
		    !strcmp(json_object_get_string(n), name))
			return t;
	}
	return NULL;
}

int owners_cgroup2_dir(char *buf, size_t len)
{
	return tu_cgroup2_mount(TENANTS_CGROUP_ROOT, buf, len);
}

struct json_object *owners_vrequest_as(const char *sock, uid_t uid, size_t pad, char *out,
				       size_t outlen, const char *fmt, va_list ap)
{
	char line[1024];
	int fds[2], st;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	vsnprintf(line, sizeof(line), fmt, ap);
	if (pipe(fds))
		return NULL;
	pid = fork();
	if (pid == 0) {
		static char resp[65536];
		char *zeros = calloc(1, pad ? pad : 1);
		int fd;

		close(fds[0]);
		if ((uid && tu_become_member(uid)) || !zeros)
			_exit(99);
		fd = tu_connect(sock);
		if (fd < 0 || send(fd, line, strlen(line), MSG_NOSIGNAL) != (ssize_t)strlen(line) ||
		    (pad && send(fd, zeros, pad, MSG_NOSIGNAL) != (ssize_t)pad))
			_exit(98);
		n = tu_read_line(fd, resp, sizeof(resp));
		if (n <= 0 || write(fds[1], resp, (size_t)n) != n)
			_exit(97);
		_exit(0);
	}
	close(fds[1]);
	while (pid > 0 && got + 1 < outlen && (n = read(fds[0], out + got, outlen - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return NULL;
	return json_tokener_parse(out);
}
