// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * `coloc-executor --print-isa`, run once (isa_probe.h): a child with a
 * pipe for its stdout, read until it closes or the deadline passes, then
 * reaped. The line is checked before it is used in a cache file's name.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "execproc.h"
#include "isa_probe.h"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads the child's output into buf until it closes it or deadline (ms); bytes read or -errno. */
static ssize_t read_until(int fd, char *buf, size_t len, long long deadline)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		n = read(fd, buf + got, len - got);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int isa_ok(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

int isa_probe(const char *executor, char *isa, size_t len, struct coloc_err *err)
{
	char path[4096], out[128];
	char *argv[] = { path, "--print-isa", NULL }, *envp[] = { NULL };
	posix_spawn_file_actions_t fa;
	int pfd[2], st, ret;
	ssize_t n;
	pid_t pid;

	if (executor)
		snprintf(path, sizeof(path), "%s", executor);
	else if ((ret = execproc_default_executor(path, sizeof(path), err)))
		return ret;
	if (pipe2(pfd, O_CLOEXEC))
		return coloc_err_set(err, -errno, "pipe: %s", strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
	ret = posix_spawn(&pid, path, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (ret) {
		close(pfd[0]);
		return coloc_err_set(err, -ret, "cannot run %s --print-isa: %s", path,
				     strerror(ret));
	}
	n = read_until(pfd[0], out, sizeof(out) - 1, now_ms() + ISA_PROBE_TIMEOUT_MS);
	close(pfd[0]);
	if (n < 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (n < 0)
		return coloc_err_set(err, (int)n, "%s --print-isa: %s", path, strerror((int)-n));
	while (n > 0 && out[n - 1] == '\n')
		n--;
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !isa_ok(out, (size_t)n) || (size_t)n >= len)
		return coloc_err_set(err, -EPROTO,
				     "%s --print-isa did not print an ISA name (exit status %d)",
				     path, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	memcpy(isa, out, (size_t)n);
	isa[n] = '\0';
	return 0;
}
