// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Test helpers that run colocd and its tools (declared in testutil.h): a
 * colocd of the test's own, started until it answers a ping and stopped
 * with SIGTERM; colocctl as root or as a member of the coloc group; a file
 * sealed as colocd copies a submit's; a quick profile; a hostile executor
 * put where colocd looks for coloc-executor.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "coloc/protocol.h"
#include "submit_files.h"
#include "testutil.h"

/*
 * Whether the colocd of pid answers a ping on fd, connected: its listener,
 * not a killed colocd's socket that lingers while the kernel tears down that
 * one's io_uring (seen under load: the connection was reset once that
 * ended), and its loop running, so that what it prints at start is in its
 * log.
 */
static bool tu_colocd_answers(int fd, pid_t pid)
{
	static const char ping[] = "{\"cmd\":\"ping\"}\n";
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char resp[256];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || cred.pid != pid)
		return false;
	return send(fd, ping, strlen(ping), MSG_NOSIGNAL) == (ssize_t)strlen(ping) &&
	       tu_read_line(fd, resp, sizeof(resp)) > 0 && strstr(resp, "\"ok\":true");
}

pid_t tu_start_colocd_with(const char *socket_path, const char *pin_dir, const char *log,
			   const char *const *extra)
{
	const char *argv[24];
	char bin[512];
	int argc = 0;
	pid_t pid;

	tu_bin("colocd", bin, sizeof(bin));
	argv[argc++] = bin;
	argv[argc++] = "--socket";
	argv[argc++] = socket_path;
	argv[argc++] = "--pin-dir";
	argv[argc++] = pin_dir;
	for (int i = 0; extra && extra[i] && argc < 23; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	/* a minute: BPF verification and the sensor's start on a loaded or ASan machine */
	for (int i = 0; i < 1200; i++) {
		int fd = tu_connect(socket_path), st;

		if (fd >= 0) {
			bool up = tu_colocd_answers(fd, pid);

			close(fd);
			if (up)
				return pid;
		}
		if (waitpid(pid, &st, WNOHANG) == pid)
			return -1;
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

pid_t tu_start_colocd(const char *socket_path, const char *pin_dir, const char *log)
{
	return tu_start_colocd_with(socket_path, pin_dir, log, NULL);
}

int tu_stop_colocd(pid_t pid)
{
	int st;

	if (kill(pid, SIGTERM))
		return -1;
	/* a minute: draining, stopping executors and LeakSanitizer's pass at exit */
	for (int i = 0; i < 1200; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}


int tu_become_member(uid_t uid)
{
	struct group *g = getgrnam(COLOC_GROUP);
	gid_t groups[1] = { g ? g->gr_gid : (gid_t)uid };

	return setgroups(1, groups) || setgid((gid_t)uid) || setuid(uid) ? -1 : 0;
}

int tu_colocctl_as(const char *colocctl, const char *sock, uid_t uid, const char *const *args,
		   char *out, size_t len)
{
	char *argv[16] = { (char *)colocctl, "--socket", (char *)sock };
	int fds[2], st, argc = 3;
	pid_t pid;

	for (int i = 0; args[i] && argc < 15; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;
	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		int exe = open(colocctl, O_RDONLY | O_CLOEXEC);

		close(fds[0]);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		if (exe < 0 || (uid && tu_become_member(uid)))
			_exit(99);
		fexecve(exe, argv, environ);
		_exit(127);
	}
	close(fds[1]);
	tu_read_all(fds[0], out, len);
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

int tu_colocctl(const char *sock, const char *args, char *out, size_t len)
{
	char bin[512], cmd[4096];

	snprintf(cmd, sizeof(cmd), "'%s' --socket '%s' %s", tu_bin("colocctl", bin, sizeof(bin)),
		 sock, args);
	return tu_run(cmd, out, len);
}


int tu_sealed_copy(const char *path)
{
	uint64_t budget = COLOC_MAX_SUBMIT_BYTES;
	int fd = open(path, O_RDONLY | O_CLOEXEC), out, ret;

	if (fd < 0)
		return -errno;
	ret = submit_file_seal(fd, path, &budget, &out, NULL);
	close(fd);
	return ret ? ret : out;
}


int tu_quick_profile(const char *model, const char *cache_dir, char *out, size_t len)
{
	char bin[512], prof[PATH_MAX], cmd[3 * PATH_MAX + 1024];

	snprintf(prof, sizeof(prof), "%s/quick.profile", cache_dir);
	if (!access(prof, R_OK))
		return 0;
	snprintf(cmd, sizeof(cmd), "%s '%s' -o '%s' --iters 1 --levels 50 --force --cache-dir '%s'",
		 tu_bin("coloc-profile", bin, sizeof(bin)), model, prof, cache_dir);
	if (tu_run(cmd, out, len) == 0)
		return 0;
	snprintf(prof, sizeof(prof), "%s", out);
	snprintf(out, len, "%s: %s", cmd, prof);
	return -1;
}

int tu_quick_profile_weights(const char *model, const char *weights, const char *cache_dir,
			     char *out, size_t len)
{
	char bin[512], cmd[4 * PATH_MAX + 1024], first[1024];

	snprintf(cmd, sizeof(cmd),
		 "%s '%s' --weights '%s' -o '%s/quick-weights.profile' --iters 1 --levels 50 "
		 "--force --cache-dir '%s'",
		 tu_bin("coloc-profile", bin, sizeof(bin)), model, weights, cache_dir, cache_dir);
	if (tu_run(cmd, out, len) == 0)
		return 0;
	snprintf(first, sizeof(first), "%s", out);
	snprintf(out, len, "%s: %s", cmd, first);
	return -1;
}


const char *tu_hostile_executor_bin(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n < 0)
		return NULL;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return NULL;
	snprintf(slash + 1, len - (size_t)(slash + 1 - buf), "hostile_executor");
	return buf;
}

int tu_hostile_executor_dir(const char *dir, char *executor, size_t len)
{
	char hostile[PATH_MAX], real[512], path[PATH_MAX + 64];

	if (!tu_hostile_executor_bin(hostile, sizeof(hostile)))
		return -1;
	snprintf(executor, len, "%s/executor", dir);
	snprintf(path, sizeof(path), "%s/coloc-executor", dir);
	if (symlink(hostile, executor) ||
	    symlink(tu_bin("coloc-executor", real, sizeof(real)), path))
		return -1;
	return 0;
}

