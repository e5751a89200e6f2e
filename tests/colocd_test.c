// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd as an operator runs it: the real binary started as a process, its
 * control socket spoken to over a real Unix socket and through colocctl,
 * its pins read with bpftool, stopped with SIGTERM. Covers bad requests
 * (the daemon answers with an error and keeps serving), bad flags, a second
 * daemon on the same socket, the socket's directory and a listener that
 * never accepts. Per-tenant attribution is tested in colocd_tenant_test.c,
 * the limits on connections in colocd_conns_test.c.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include <bpf/bpf.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "testutil.h"
#include "colocd_fixture.h"

TEST_F(colocd, start__prints_which_signals_are_live)
{
	char cmd[256], out[4096];

	snprintf(cmd, sizeof(cmd), "cat %s", self->log);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "live:"));
	EXPECT_NE(NULL, strstr(out, "task_clock"));
	EXPECT_NE(NULL, strstr(out, "ctx_switches"));
}

TEST_F(colocd, signals__reports_every_online_cpu)
{
	struct json_object *resp, *cpus, *c, *busy;

	usleep(300000);
	resp = request_json(self->sock, "{\"cmd\":\"signals\"}\n");
	ASSERT_TRUE(resp_ok(resp));
	ASSERT_TRUE(json_object_object_get_ex(resp, "cpus", &cpus));
	ASSERT_EQ(tu_nr_online_cpus(), (int)json_object_array_length(cpus));
	c = json_object_array_get_idx(cpus, 0);
	ASSERT_TRUE(json_object_object_get_ex(c, "busy", &busy));
	EXPECT_GE(json_object_get_double(busy), 0.0);
	EXPECT_LE(json_object_get_double(busy), 1.05);
	json_object_put(resp);
}

TEST_F(colocd, control__malformed_requests_get_errors_and_the_next_succeeds)
{
	static const char *const bad[] = {
		"this is not json\n",
		"{\"cmd\":42}\n",
		"{}\n",
		"[1,2,3]\n",
		"{\"cmd\":\"signals\"} trailing\n",
		"{\"cmd\":\"no-such-command\"}\n",
		"{\"cmd\":\"tenant-add\",\"name\":\"bad name!\",\"pids\":[1]}\n",
		"{\"cmd\":\"tenant-add\",\"name\":\"t\",\"pids\":[999999999]}\n",
		"{\"cmd\":\"tenant-add\",\"name\":\"t\",\"pids\":\"12\"}\n",
		"{\"cmd\":\"tenant-add\",\"name\":\"t\"}\n",
		"{\"cmd\":\"tenant-remove\",\"name\":\"nobody\"}\n",
		"{\"cmd\":\"tenant-add\",\"name\":\"t\",\"cgroup\":\"/tmp\"}\n",
		"{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}\n",
		"\n",
	};
	char line[4096];
	int fd = tu_connect(self->sock);

	ASSERT_GE(fd, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_object *resp, *err;

		ASSERT_EQ((ssize_t)strlen(bad[i]), send(fd, bad[i], strlen(bad[i]), MSG_NOSIGNAL));
		ASSERT_GT(tu_read_line(fd, line, sizeof(line)), 0);
		resp = json_tokener_parse(line);
		ASSERT_NE(NULL, resp);
		EXPECT_FALSE(resp_ok(resp));
		ASSERT_TRUE(json_object_object_get_ex(resp, "error", &err));
		EXPECT_GT(strlen(json_object_get_string(err)), 10);
		TH_LOG("%.40s -> %s", bad[i], json_object_get_string(err));
		json_object_put(resp);
	}
	/* the same connection still serves a good request */
	ASSERT_GT(send(fd, "{\"cmd\":\"ping\"}\n", 15, MSG_NOSIGNAL), 0);
	ASSERT_GT(tu_read_line(fd, line, sizeof(line)), 0);
	EXPECT_NE(NULL, strstr(line, "\"ok\":true"));
	close(fd);
}

TEST_F(colocd, control__oversized_request_is_refused_and_the_daemon_keeps_serving)
{
	size_t len = COLOC_MAX_REQUEST + 1000;
	char *big = malloc(len), line[4096];
	struct json_object *resp;
	int fd = tu_connect(self->sock);

	ASSERT_NE(NULL, big);
	ASSERT_GE(fd, 0);
	memset(big, 'x', len);
	/* the daemon answers and closes; it may do so before reading all of it */
	send(fd, big, len, MSG_NOSIGNAL);
	free(big);
	ASSERT_GT(tu_read_line(fd, line, sizeof(line)), 0);
	EXPECT_NE(NULL, strstr(line, "larger than"));
	EXPECT_EQ(0, tu_read_line(fd, line, sizeof(line))); /* closed */
	close(fd);

	resp = request_json(self->sock, "{\"cmd\":\"ping\"}\n");
	EXPECT_TRUE(resp_ok(resp));
	json_object_put(resp);
}

TEST_F(colocd, pins__bpftool_reads_live_per_cpu_signals)
{
	char cmd[256], out[1 << 16];

	usleep(300000);
	snprintf(cmd, sizeof(cmd), "bpftool map dump pinned %s/cpu_live", self->pin);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "task_clock_ns"));
	EXPECT_NE(NULL, strstr(out, "\"window_ns\": 10000000"));
	EXPECT_NE(NULL, strstr(out, "\"ctx_switches\": "));
	/* tenant totals list the tenants in use, and no others */
	snprintf(cmd, sizeof(cmd), "bpftool map dump pinned %s/tenant_totals", self->pin);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	EXPECT_EQ(NULL, strstr(out, "on_cpu_ns"));
	ASSERT_EQ(0, tu_spawn_spinner(&self->spin, -1, 1, 0));
	ASSERT_TRUE(tenant_add_ok(self->sock, "t", self->spin.pid));
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "on_cpu_ns"));
	EXPECT_NE(NULL, strstr(out, "\"page_faults\": "));
}

TEST_F(colocd, sigterm__exits_0_and_removes_pins_and_socket)
{
	char lock[160];
	struct stat st;

	ASSERT_EQ(0, stat(self->pin, &st));
	ASSERT_EQ(0, stat(self->sock, &st));
	EXPECT_EQ(0, tu_stop_colocd(self->pid));
	self->pid = 0;
	EXPECT_EQ(-1, stat(self->pin, &st));
	EXPECT_EQ(-1, stat(self->sock, &st));
	snprintf(lock, sizeof(lock), "%s.lock", self->sock);
	EXPECT_EQ(-1, stat(lock, &st));
}

TEST_F(colocd, start__second_daemon_on_the_same_socket_is_refused)
{
	char bin[256], cmd[768], out[4096];
	struct json_object *resp;

	snprintf(cmd, sizeof(cmd), "%s --socket %s --pin-dir %s-2",
		 tu_bin("colocd", bin, sizeof(bin)), self->sock, self->pin);
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "in use"));
	/* and the first one is undisturbed */
	resp = request_json(self->sock, "{\"cmd\":\"ping\"}\n");
	EXPECT_TRUE(resp_ok(resp));
	json_object_put(resp);
}

/*
 * Even with the socket file opened up to everyone, a caller that is neither
 * root nor in the coloc group is refused by the SO_PEERCRED check.
 */
TEST_F(colocd, control__peer_neither_root_nor_coloc_group_is_refused)
{
	char line[1024] = { 0 };
	int fds[2], st;
	pid_t pid;

	/* the child drops every supplementary group; only its gid could be coloc */
	if (getgrnam(COLOC_GROUP) && getgrnam(COLOC_GROUP)->gr_gid == 65534)
		SKIP(return, "group '%s' is gid 65534, nobody's own group", COLOC_GROUP);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	ASSERT_EQ(0, chmod(self->sock, 0666));
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd, n;

		close(fds[0]);
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(99);
		fd = tu_connect(self->sock);
		if (fd < 0)
			_exit(98);
		send(fd, "{\"cmd\":\"ping\"}\n", 15, MSG_NOSIGNAL);
		n = tu_read_line(fd, line, sizeof(line));
		if (n > 0 && write(fds[1], line, (size_t)n) != n)
			_exit(97);
		_exit(0);
	}
	close(fds[1]);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_EQ(0, WEXITSTATUS(st));
	ASSERT_GT(read(fds[0], line, sizeof(line) - 1), 0);
	close(fds[0]);
	EXPECT_NE(NULL, strstr(line, "permission denied"));
}

TEST_F(colocd, control__last_request_without_newline_is_answered)
{
	char line[1024];
	int fd = tu_connect(self->sock);

	ASSERT_GE(fd, 0);
	ASSERT_GT(send(fd, "{\"cmd\":\"ping\"}\r", 15, MSG_NOSIGNAL), 0);
	ASSERT_EQ(0, shutdown(fd, SHUT_WR));
	ASSERT_GT(tu_read_line(fd, line, sizeof(line)), 0);
	EXPECT_NE(NULL, strstr(line, "\"ok\":true"));
	close(fd);
}

TEST_F(colocd, start__pin_dir_of_a_running_daemon_is_refused)
{
	char bin[256], cmd[768], out[4096];

	snprintf(cmd, sizeof(cmd), "%s --socket %s/other.sock --pin-dir %s",
		 tu_bin("colocd", bin, sizeof(bin)), self->dir, self->pin);
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "in use by another colocd"));
	snprintf(cmd, sizeof(cmd), "bpftool map show pinned %s/cpu_live", self->pin);
	EXPECT_EQ(0, tu_run(cmd, out, sizeof(out))); /* the first daemon's pins are intact */
}

TEST(colocd_start__leaves_other_pins_and_sockets_alone)
{
	char bin[256], cmd[1024], out[4096], dir[128], sock[100], foreign[256];
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int map_fd;
	struct stat st;
	int lfd;

	tu_bin("colocd", bin, sizeof(bin));
	ASSERT_EQ(0, tu_mount_bpffs());
	/* the root of bpffs is never a pin dir */
	snprintf(cmd, sizeof(cmd), "%s --socket /tmp/coloc-root-%d.sock --pin-dir /sys/fs/bpf", bin,
		 getpid());
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "root of a bpf filesystem"));

	/* someone else's socket, alive, at our path */
	snprintf(sock, sizeof(sock), "/tmp/coloc-foreign-%d.sock", getpid());
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_GE(lfd, 0);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock);
	ASSERT_EQ(0, bind(lfd, (struct sockaddr *)&addr, sizeof(addr)));
	ASSERT_EQ(0, listen(lfd, 1));
	snprintf(cmd, sizeof(cmd), "%s --socket %s --pin-dir /sys/fs/bpf/coloc-f-%d", bin, sock,
		 getpid());
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "in use by another process"));
	EXPECT_EQ(0, stat(sock, &st));
	close(lfd);
	unlink(sock);

	/* a foreign pin in the pin dir survives a colocd run */
	snprintf(dir, sizeof(dir), "/sys/fs/bpf/coloc-shared-%d", getpid());
	snprintf(foreign, sizeof(foreign), "%s/not_ours", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s", dir);
	tu_run(cmd, out, sizeof(out));
	map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "foreign", 4, 4, 1, NULL);
	ASSERT_GE(map_fd, 0);
	ASSERT_EQ(0, bpf_obj_pin(map_fd, foreign));
	close(map_fd);
	{
		pid_t pid = tu_start_colocd(sock, dir, "/dev/null");

		ASSERT_GT(pid, 0);
		EXPECT_EQ(0, tu_stop_colocd(pid));
	}
	EXPECT_EQ(0, stat(foreign, &st));
	unlink(foreign);
	rmdir(dir);
}

/* A supervisor restarting colocd at once after a crash gets a working daemon. */
TEST_F(colocd, start__right_after_a_crash_cleans_up_and_serves)
{
	char cmd[256], out[4096];
	struct json_object *resp;

	ASSERT_EQ(0, kill(self->pid, SIGKILL));
	ASSERT_EQ(self->pid, waitpid(self->pid, NULL, 0));
	self->pid = tu_start_colocd(self->sock, self->pin, self->log);
	ASSERT_GT(self->pid, 0);
	snprintf(cmd, sizeof(cmd), "cat %s", self->log);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "stale pin"));
	resp = request_json(self->sock, "{\"cmd\":\"ping\"}\n");
	EXPECT_TRUE(resp_ok(resp));
	json_object_put(resp);
}

TEST_F(colocd, colocctl__prints_tables_and_json)
{
	char out[1 << 16], none[128];
	struct json_object *resp;

	ASSERT_EQ(0, tu_colocctl(self->sock, "signals", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "BUSY%"));
	EXPECT_NE(NULL, strstr(out, "live:"));
	ASSERT_EQ(0, tu_colocctl(self->sock, "signals --json", out, sizeof(out)));
	resp = json_tokener_parse(out);
	EXPECT_TRUE(resp_ok(resp));
	json_object_put(resp);
	ASSERT_EQ(0, tu_colocctl(self->sock, "signals --watch --interval 100 --count 3 --json", out,
				 sizeof(out)));
	EXPECT_NE(NULL, strstr(strstr(strstr(out, "\"ok\"") + 1, "\"ok\"") + 1, "\"ok\""));
	EXPECT_EQ(1, tu_colocctl(self->sock, "tenant rm ghost", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "no tenant named 'ghost'"));
	snprintf(none, sizeof(none), "%s/none", self->dir);
	EXPECT_EQ(1, tu_colocctl(none, "ping", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "colocd is not running (no socket at"));
	EXPECT_EQ(2, tu_colocctl(self->sock, "frobnicate", out, sizeof(out)));
}

TEST(colocd_args__bad_flags_and_unusable_pin_dir_are_clear_errors)
{
	char bin[256], cmd[512], out[4096];

	tu_bin("colocd", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd), "%s --sample-hz 0", bin);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "--sample-hz"));
	snprintf(cmd, sizeof(cmd), "%s --window-ms ten", bin);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out)));
	snprintf(cmd, sizeof(cmd), "%s --no-such-flag", bin);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out)));
	snprintf(cmd, sizeof(cmd), "%s --help", bin);
	EXPECT_EQ(0, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "--pin-dir"));
	snprintf(cmd, sizeof(cmd),
		 "%s --socket /tmp/coloc-args-%d.sock --pin-dir /tmp/coloc-notbpf-%d", bin,
		 getpid(), getpid());
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "not on a bpf filesystem"));
	snprintf(cmd, sizeof(cmd), "rmdir /tmp/coloc-notbpf-%d", getpid());
	tu_run(cmd, out, sizeof(out));
}

TEST(colocd_args__refuses_to_run_unprivileged)
{
	char bin[256], out[4096];
	int fds[2], st;
	pid_t pid;

	tu_bin("colocd", bin, sizeof(bin));
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *argv[] = { bin, NULL };
		/* opened as root: a clone under a 0700 directory is closed to nobody */
		int exe = open(bin, O_RDONLY | O_CLOEXEC);

		dup2(fds[1], 2);
		if (exe < 0 || setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(99);
		fexecve(exe, argv, environ);
		_exit(98);
	}
	close(fds[1]);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	memset(out, 0, sizeof(out));
	ASSERT_GT(read(fds[0], out, sizeof(out) - 1), 0);
	close(fds[0]);
	EXPECT_EQ(1, WEXITSTATUS(st));
	EXPECT_NE(NULL, strstr(out, "must run as root"));
}

/* A program that listens on the socket path but never accepts: named, not waited on. */
TEST(colocd_start__a_listener_that_never_accepts_is_refused_promptly)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char bin[256], cmd[768], out[4096], sock[100];
	int lfd, clients[8], n = 0;

	snprintf(sock, sizeof(sock), "/tmp/coloc-deaf-%d.sock", getpid());
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_GE(lfd, 0);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock);
	ASSERT_EQ(0, bind(lfd, (struct sockaddr *)&addr, sizeof(addr)));
	ASSERT_EQ(0, listen(lfd, 0));
	/* fill its backlog: the next connect would block for ever */
	while (n < 8) {
		clients[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		ASSERT_GE(clients[n], 0);
		if (connect(clients[n], (struct sockaddr *)&addr, sizeof(addr))) {
			ASSERT_EQ(EAGAIN, errno);
			close(clients[n]);
			break;
		}
		n++;
	}
	ASSERT_LT(n, 8);
	/* `timeout` only stops a hang from hanging the test; the exit code says which */
	snprintf(cmd, sizeof(cmd), "timeout 60 %s --socket %s --pin-dir /sys/fs/bpf/coloc-deaf-%d",
		 tu_bin("colocd", bin, sizeof(bin)), sock, getpid());
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "does not accept connections"));
	for (int i = 0; i < n; i++)
		close(clients[i]);
	close(lfd);
	unlink(sock);
}

/* The socket's directory: no other user may write it, and no link is followed. */
TEST(colocd_start__socket_dir_others_can_write_is_refused_and_links_are_not_followed)
{
	char bin[256], cmd[768], out[4096], dir[64] = "/tmp/coloc-test-XXXXXX", lock[128],
					    target[128];
	struct stat st;

	tu_bin("colocd", bin, sizeof(bin));
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, chmod(dir, 0777));
	snprintf(cmd, sizeof(cmd), "%s --socket %s/colocd.sock --pin-dir /sys/fs/bpf/coloc-w-%d",
		 bin, dir, getpid());
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "writable by other users"));

	/* sticky, like /tmp: allowed, but a planted link is never followed */
	ASSERT_EQ(0, chmod(dir, 01777));
	snprintf(lock, sizeof(lock), "%s/colocd.sock.lock", dir);
	snprintf(target, sizeof(target), "%s/created-through-the-link", dir);
	ASSERT_EQ(0, symlink(target, lock));
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "symbolic link"));
	EXPECT_EQ(-1, stat(target, &st));

	/* a directory of another user's */
	unlink(lock);
	ASSERT_EQ(0, chmod(dir, 0755));
	ASSERT_EQ(0, chown(dir, 65534, 65534));
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "not root"));
	tu_remove_tree(dir);
}

/* A client that goes away mid-request, or ends on a cut request, costs nothing. */
TEST_F(colocd, control__disconnect_mid_request_and_truncated_request)
{
	char line[1024];
	int fd = tu_connect(self->sock);
	struct json_object *resp;

	ASSERT_GE(fd, 0);
	ASSERT_EQ(11, send(fd, "{\"cmd\":\"sig", 11, MSG_NOSIGNAL));
	close(fd);
	/* cut, then EOF: answered as incomplete */
	fd = tu_connect(self->sock);
	ASSERT_GE(fd, 0);
	set_recv_timeout(fd, 30);
	ASSERT_EQ(11, send(fd, "{\"cmd\":\"pin", 11, MSG_NOSIGNAL));
	ASSERT_EQ(0, shutdown(fd, SHUT_WR));
	ASSERT_GT(tu_read_line(fd, line, sizeof(line)), 0);
	EXPECT_NE(NULL, strstr(line, "incomplete"));
	close(fd);
	resp = request_json(self->sock, "{\"cmd\":\"ping\"}\n");
	EXPECT_TRUE(resp_ok(resp));
	json_object_put(resp);
}

TEST_F(colocd, sigterm__with_tenants_attributed_unpins_and_exits_0)
{
	struct stat st;

	ASSERT_EQ(0, tu_spawn_spinner(&self->spin, -1, 1, 20));
	ASSERT_TRUE(tenant_add_ok(self->sock, "a", self->spin.pid));
	tu_release(&self->spin);
	EXPECT_EQ(0, tu_stop_colocd(self->pid));
	self->pid = 0;
	EXPECT_EQ(-1, stat(self->pin, &st));
	EXPECT_EQ(-1, stat(self->sock, &st));
}

TEST_HARNESS_MAIN
