// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd as an operator runs it: the real binary started as a process, its
 * control socket spoken to over a real Unix socket and through colocctl,
 * its pins read with bpftool, stopped with SIGTERM. Covers bad requests
 * (the daemon answers with an error and keeps serving), bad flags, a second
 * daemon on the same socket, and per-tenant attribution end to end.
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

FIXTURE(colocd)
{
	char dir[64];
	char sock[128];
	char pin[128];
	char log[128];
	pid_t pid;
	struct tu_spinner spin;
	char cgroup[512]; /* made by a test, removed by teardown */
	int cgroup_levels; /* levels "d/d/..." a test made below it */
};

FIXTURE_SETUP(colocd)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-test-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-test-%d", getpid());
	self->spin.pid = 0;
	self->spin.go_fd = -1;
	self->cgroup[0] = '\0';
	self->cgroup_levels = 0;
	self->pid = tu_start_colocd(self->sock, self->pin, self->log);
	if (self->pid < 0) {
		char out[4096];
		snprintf(out, sizeof(out), "cat %s", self->log);
		tu_run(out, out, sizeof(out));
		TH_LOG("colocd did not start: %s", out);
	}
	ASSERT_GT(self->pid, 0);
}

FIXTURE_TEARDOWN(colocd)
{
	char cmd[256];

	tu_kill(&self->spin);
	for (int level = self->cgroup_levels; level > 0; level--) {
		char path[1024];
		int n = snprintf(path, sizeof(path), "%s", self->cgroup);

		for (int i = 0; i < level; i++)
			n += snprintf(path + n, sizeof(path) - (size_t)n, "/d");
		rmdir(path);
	}
	if (self->cgroup[0])
		rmdir(self->cgroup);
	if (self->pid > 0)
		tu_stop_colocd(self->pid);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->dir);
	tu_run(cmd, NULL, 0);
}

static struct json_object *request_json(const char *sock, const char *req)
{
	char resp[1 << 16];

	if (tu_request(sock, req, resp, sizeof(resp)) <= 0)
		return NULL;
	return json_tokener_parse(resp);
}

static bool resp_ok(struct json_object *resp)
{
	struct json_object *ok;

	return resp && json_object_object_get_ex(resp, "ok", &ok) && json_object_get_boolean(ok);
}

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
	struct json_object *resp;
	char cmd[256], out[1 << 16], req[256];

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
	snprintf(req, sizeof(req), "{\"cmd\":\"tenant-add\",\"name\":\"t\",\"pids\":[%d]}\n",
		 self->spin.pid);
	resp = request_json(self->sock, req);
	ASSERT_TRUE(resp_ok(resp));
	json_object_put(resp);
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
 * Lets the fixture's spinner (already attributed to the daemon's only
 * tenant) run until it has used 300 ms of CPU time (the resolution a 20%
 * comparison needs; on a loaded machine that takes longer), stops it, and
 * compares the tenant's on-CPU time with the kernel's utime+stime: within
 * 20%, the interval's hypervisor steal allowed on top (the sensor counts by
 * the clock).
 */
static void expect_tenant_matches_proc(struct __test_metadata *_metadata, const char *sock,
				       struct tu_spinner *spin)
{
	struct json_object *resp, *tenants, *t, *on_cpu;
	__u64 cpu_ns = 0, steal0, steal1, t0;
	double got;

	ASSERT_EQ(0, tu_steal_ns(&steal0));
	tu_release(spin);
	t0 = tu_now_ns();
	while (cpu_ns < 300000000ull && tu_now_ns() - t0 < 40000000000ull) {
		usleep(100000);
		ASSERT_EQ(0, tu_proc_cpu_ns(spin->pid, &cpu_ns));
	}
	kill(spin->pid, SIGSTOP);
	usleep(50000);
	ASSERT_EQ(0, tu_steal_ns(&steal1));
	ASSERT_EQ(0, tu_proc_cpu_ns(spin->pid, &cpu_ns));

	resp = request_json(sock, "{\"cmd\":\"tenants\"}\n");
	ASSERT_TRUE(resp_ok(resp));
	ASSERT_TRUE(json_object_object_get_ex(resp, "tenants", &tenants));
	ASSERT_EQ(1, (int)json_object_array_length(tenants));
	t = json_object_array_get_idx(tenants, 0);
	ASSERT_TRUE(json_object_object_get_ex(t, "on_cpu_ns", &on_cpu));
	got = (double)json_object_get_int64(on_cpu);
	TH_LOG("tenant on-CPU %.3f s, /proc utime+stime %.3f s, steal %.3f s", got / 1e9,
	       cpu_ns / 1e9, (steal1 - steal0) / 1e9);
	ASSERT_GE(cpu_ns, 300000000ull); /* it got the CPU time asked for */
	EXPECT_LT(got, cpu_ns * 1.2 + (double)(steal1 - steal0));
	EXPECT_GT(got, cpu_ns * 0.8);
	json_object_put(resp);
}

TEST_F_TIMEOUT(colocd, tenant__on_cpu_time_matches_proc_stat, 60)
{
	struct json_object *resp;
	char req[256];

	ASSERT_EQ(0, tu_spawn_spinner(&self->spin, -1, 7, 3));
	snprintf(req, sizeof(req), "{\"cmd\":\"tenant-add\",\"name\":\"spinner\",\"pids\":[%d]}\n",
		 self->spin.pid);
	resp = request_json(self->sock, req);
	ASSERT_TRUE(resp_ok(resp));
	json_object_put(resp);
	expect_tenant_matches_proc(_metadata, self->sock, &self->spin);

	resp = request_json(self->sock, "{\"cmd\":\"tenant-remove\",\"name\":\"spinner\"}\n");
	EXPECT_TRUE(resp_ok(resp));
	json_object_put(resp);
}

/* The cgroup v2 mount point, from /proc/mounts; 0 or -ENOENT. */
static int cgroup2_mount(char *buf, size_t len)
{
	char dev[256], dir[256], type[64];
	FILE *f = fopen("/proc/mounts", "r");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (err && fscanf(f, "%255s %255s %63s %*[^\n]", dev, dir, type) == 3)
		if (!strcmp(type, "cgroup2")) {
			snprintf(buf, len, "%s", dir);
			err = 0;
		}
	fclose(f);
	return err;
}

TEST_F_TIMEOUT(colocd, tenant__cgroup_is_attributed_like_its_processes, 60)
{
	struct json_object *resp;
	char mnt[256], path[600], req[800], pid[32];
	char *cg = self->cgroup;
	FILE *f;

	if (cgroup2_mount(mnt, sizeof(mnt)))
		SKIP(return, "no cgroup v2 hierarchy mounted");
	snprintf(cg, sizeof(self->cgroup), "%s/coloc-test-%d", mnt, getpid());
	ASSERT_EQ(0, mkdir(cg, 0755));
	ASSERT_EQ(0, tu_spawn_spinner(&self->spin, -1, 7, 3));
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	snprintf(pid, sizeof(pid), "%d\n", self->spin.pid);
	fputs(pid, f);
	ASSERT_EQ(0, fclose(f));

	snprintf(req, sizeof(req),
		 "{\"cmd\":\"tenant-add\",\"name\":\"by-cgroup\",\"cgroup\":\"%s\"}\n", cg);
	resp = request_json(self->sock, req);
	ASSERT_TRUE(resp_ok(resp));
	json_object_put(resp);
	expect_tenant_matches_proc(_metadata, self->sock, &self->spin);
}

/*
 * The BPF side looks for a tenant's cgroup among a task's ancestors, up to
 * SENSOR_CGROUP_DEPTH (32) levels (protocol.h): a process 12 levels below
 * the tenant's cgroup, past the old bound of 8, is counted.
 */
TEST_F_TIMEOUT(colocd, tenant__a_process_deep_below_the_cgroup_is_counted, 60)
{
	char mnt[256], path[1024], req[800], pid[32];
	struct json_object *resp;
	int n;
	FILE *f;

	if (cgroup2_mount(mnt, sizeof(mnt)))
		SKIP(return, "no cgroup v2 hierarchy mounted");
	snprintf(self->cgroup, sizeof(self->cgroup), "%s/coloc-test-%d", mnt, getpid());
	ASSERT_EQ(0, mkdir(self->cgroup, 0755));
	n = snprintf(path, sizeof(path), "%s", self->cgroup);
	for (int level = 1; level <= 12; level++) {
		n += snprintf(path + n, sizeof(path) - (size_t)n, "/d");
		ASSERT_EQ(0, mkdir(path, 0755));
		self->cgroup_levels = level;
	}
	ASSERT_EQ(0, tu_spawn_spinner(&self->spin, -1, 7, 3));
	snprintf(path + n, sizeof(path) - (size_t)n, "/cgroup.procs");
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	snprintf(pid, sizeof(pid), "%d\n", self->spin.pid);
	fputs(pid, f);
	ASSERT_EQ(0, fclose(f));

	snprintf(req, sizeof(req), "{\"cmd\":\"tenant-add\",\"name\":\"deep\",\"cgroup\":\"%s\"}\n",
		 self->cgroup);
	resp = request_json(self->sock, req);
	ASSERT_TRUE(resp_ok(resp));
	json_object_put(resp);
	expect_tenant_matches_proc(_metadata, self->sock, &self->spin);
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

static volatile pid_t thread_tid;

static void *blocked_thread(void *arg)
{
	int *block = arg;
	char c;

	thread_tid = gettid();
	if (read(block[0], &c, 1) < 0)
		return NULL;
	return NULL;
}

TEST_F(colocd, tenant__bad_attributions_are_refused)
{
	struct json_object *resp, *err;
	char req[512];
	int block[2];
	pthread_t th;

	ASSERT_EQ(0, tu_spawn_spinner(&self->spin, -1, 1, 20));
	snprintf(req, sizeof(req), "{\"cmd\":\"tenant-add\",\"name\":\"a\",\"pids\":[%d]}\n",
		 self->spin.pid);
	resp = request_json(self->sock, req);
	ASSERT_TRUE(resp_ok(resp));
	json_object_put(resp);

	/* one process, two tenants */
	snprintf(req, sizeof(req), "{\"cmd\":\"tenant-add\",\"name\":\"b\",\"pids\":[%d]}\n",
		 self->spin.pid);
	resp = request_json(self->sock, req);
	ASSERT_FALSE(resp_ok(resp));
	ASSERT_TRUE(json_object_object_get_ex(resp, "error", &err));
	EXPECT_NE(NULL, strstr(json_object_get_string(err), "already belongs to tenant 'a'"));
	json_object_put(resp);

	/* a thread id rather than a process id */
	ASSERT_EQ(0, pipe(block));
	ASSERT_EQ(0, pthread_create(&th, NULL, blocked_thread, block));
	while (!thread_tid)
		usleep(1000);
	snprintf(req, sizeof(req), "{\"cmd\":\"tenant-add\",\"name\":\"c\",\"pids\":[%d]}\n",
		 (int)thread_tid);
	resp = request_json(self->sock, req);
	ASSERT_TRUE(json_object_object_get_ex(resp, "error", &err));
	EXPECT_NE(NULL, strstr(json_object_get_string(err), "is a thread of process"));
	json_object_put(resp);
	close(block[1]);
	pthread_join(th, NULL);
	close(block[0]);

	/* a path outside /sys/fs/cgroup, existing or not, gets the same answer */
	resp = request_json(self->sock,
			    "{\"cmd\":\"tenant-add\",\"name\":\"d\",\"cgroup\":\"/root\"}\n");
	ASSERT_TRUE(json_object_object_get_ex(resp, "error", &err));
	EXPECT_NE(NULL, strstr(json_object_get_string(err), "not an existing cgroup v2 directory"));
	json_object_put(resp);
}

/* A removed tenant's slot must not hand its numbers to the next tenant. */
/*
 * A tenant slot reused by a new tenant does not inherit the old one's time:
 * the new tenant's on-CPU time stays within what its only process ever ran
 * (/proc/PID/stat, its start-up included), steal allowed on top, and a
 * millisecond for the switches that accounting rounds.
 */
TEST_F(colocd, tenant__a_new_tenant_starts_from_zero)
{
	struct json_object *resp, *tenants, *t, *on_cpu;
	struct tu_spinner idle = { 0, -1 };
	__u64 busy_ns, idle_ns, steal0, steal1;
	char req[256];

	ASSERT_EQ(0, tu_spawn_spinner(&self->spin, -1, 10, 0));
	snprintf(req, sizeof(req), "{\"cmd\":\"tenant-add\",\"name\":\"busy\",\"pids\":[%d]}\n",
		 self->spin.pid);
	resp = request_json(self->sock, req);
	ASSERT_TRUE(resp_ok(resp));
	json_object_put(resp);
	tu_release(&self->spin);
	usleep(500000);
	ASSERT_EQ(0, tu_proc_cpu_ns(self->spin.pid, &busy_ns));
	resp = request_json(self->sock, "{\"cmd\":\"tenant-remove\",\"name\":\"busy\"}\n");
	ASSERT_TRUE(resp_ok(resp));
	json_object_put(resp);

	/* a process that never runs: it waits for tu_release */
	ASSERT_EQ(0, tu_spawn_spinner(&idle, -1, 10, 0));
	usleep(100000);
	ASSERT_EQ(0, tu_steal_ns(&steal0));
	snprintf(req, sizeof(req), "{\"cmd\":\"tenant-add\",\"name\":\"idle\",\"pids\":[%d]}\n",
		 idle.pid);
	resp = request_json(self->sock, req);
	ASSERT_TRUE(resp_ok(resp));
	json_object_put(resp);
	usleep(300000);
	resp = request_json(self->sock, "{\"cmd\":\"tenants\"}\n");
	ASSERT_TRUE(json_object_object_get_ex(resp, "tenants", &tenants));
	t = json_object_array_get_idx(tenants, 0);
	ASSERT_TRUE(json_object_object_get_ex(t, "on_cpu_ns", &on_cpu));
	ASSERT_EQ(0, tu_proc_cpu_ns(idle.pid, &idle_ns));
	ASSERT_EQ(0, tu_steal_ns(&steal1));
	TH_LOG("new tenant %.3f ms on-CPU; its process ran %.3f ms; the old tenant's %.3f ms",
	       json_object_get_int64(on_cpu) / 1e6, idle_ns / 1e6, busy_ns / 1e6);
	EXPECT_LT((double)json_object_get_int64(on_cpu),
		  idle_ns * 1.2 + (double)(steal1 - steal0) + 1000000.0);
	json_object_put(resp);
	tu_kill(&idle);
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
	char bin[256], cmd[512], out[1 << 16];
	struct json_object *resp;

	tu_bin("colocctl", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd), "%s --socket %s signals", bin, self->sock);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "BUSY%"));
	EXPECT_NE(NULL, strstr(out, "live:"));
	snprintf(cmd, sizeof(cmd), "%s --socket %s signals --json", bin, self->sock);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	resp = json_tokener_parse(out);
	EXPECT_TRUE(resp_ok(resp));
	json_object_put(resp);
	snprintf(cmd, sizeof(cmd), "%s --socket %s signals --watch --interval 100 --count 3 --json",
		 bin, self->sock);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(strstr(strstr(out, "\"ok\"") + 1, "\"ok\"") + 1, "\"ok\""));
	snprintf(cmd, sizeof(cmd), "%s --socket %s tenant rm ghost", bin, self->sock);
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "no tenant named 'ghost'"));
	snprintf(cmd, sizeof(cmd), "%s --socket %s/none ping", bin, self->dir);
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "colocd is not running (no socket at"));
	snprintf(cmd, sizeof(cmd), "%s --socket %s frobnicate", bin, self->sock);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out)));
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

/* Pings over fd; 1 when served, 0 when refused (the refusal in why), -1 on no answer. */
static int ping_on(int fd, char *why, size_t len)
{
	char line[1024];

	/* a refused peer may find the socket closed before it sends: read anyway */
	send(fd, "{\"cmd\":\"ping\"}\n", 15, MSG_NOSIGNAL);
	if (tu_read_line(fd, line, sizeof(line)) <= 0)
		return -1;
	if (why)
		snprintf(why, len, "%s", line);
	return strstr(line, "\"ok\":true") ? 1 : 0;
}

static void set_recv_timeout(int fd, int sec)
{
	struct timeval tv = { .tv_sec = sec };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/*
 * A member of the coloc group holds its share of connections: one more is
 * refused, and root still gets in though the slots others may use fill up.
 */
TEST_F(colocd, conns__a_uid_over_its_share_is_refused_and_root_still_gets_in)
{
	struct group *grp = getgrnam(COLOC_GROUP);
	int fds[2], held[80], nr_held = 0, st;
	char why[1024] = { 0 };
	pid_t pid;

	if (!grp)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int conns[20];

		close(fds[0]);
		if (setgroups(0, NULL) || setgid(grp->gr_gid) || setuid(65534))
			_exit(99);
		/* SERVER_UID_SHARE (16) served, the 17th refused */
		for (int i = 0; i < 17; i++) {
			conns[i] = tu_connect(self->sock);
			if (conns[i] < 0)
				_exit(98);
			set_recv_timeout(conns[i], 30);
			if (ping_on(conns[i], why, sizeof(why)) != (i < 16))
				_exit(95);
		}
		if (write(fds[1], why, strlen(why)) < 0 || write(fds[1], "", 1) < 0)
			_exit(97);
		/* hold them until the parent is done and kills this child */
		for (;;)
			pause();
	}
	close(fds[1]);
	ASSERT_GT(read(fds[0], why, sizeof(why) - 1), 0);
	EXPECT_NE(NULL, strstr(why, "too many connections from this user"));
	/* root fills every slot, idle, then one more root connection is served */
	for (nr_held = 0; nr_held < 64; nr_held++) {
		held[nr_held] = tu_connect(self->sock);
		ASSERT_GE(held[nr_held], 0);
	}
	{
		int fd = tu_connect(self->sock);

		ASSERT_GE(fd, 0);
		set_recv_timeout(fd, 30);
		EXPECT_EQ(1, ping_on(fd, why, sizeof(why)));
		close(fd);
	}
	for (int i = 0; i < nr_held; i++)
		close(held[i]);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	close(fds[0]);
}

/*
 * A child of uid (group coloc) that opens n connections and pings on each,
 * writes "R" (all served) or "F" to report, then, if watch, the next line
 * its first connection receives; it holds them until killed.
 */
static pid_t hold_conns(const char *sock, uid_t uid, gid_t gid, int n, int report, bool watch)
{
	pid_t pid = fork();
	int conns[COLOC_CONNS_PER_UID];
	char line[1024] = { 0 };
	bool all = true;

	if (pid)
		return pid;
	if (setgroups(0, NULL) || setgid(gid) || setuid(uid))
		_exit(99);
	for (int i = 0; i < n; i++) {
		conns[i] = tu_connect(sock);
		if (conns[i] < 0)
			_exit(98);
		set_recv_timeout(conns[i], 30);
		all &= ping_on(conns[i], NULL, 0) == 1;
	}
	if (write(report, all ? "R" : "F", 1) != 1)
		_exit(97);
	if (watch && tu_read_line(conns[0], line, sizeof(line)) > 0 &&
	    write(report, line, strlen(line)) < 0)
		_exit(96);
	for (;;)
		pause();
}

/*
 * Four users fill the 56 slots others may use (16, 15, 15, 10): a fifth
 * still gets in, by evicting the oldest idle connection of the user holding
 * the most, who is told why.
 */
TEST_F(colocd, conns__a_newcomer_evicts_the_oldest_idle_connection_of_the_busiest_user)
{
	static const int counts[4] = { 16, 15, 15, 10 };
	struct group *grp = getgrnam(COLOC_GROUP);
	int report[5][2], st;
	char got[1024] = { 0 };
	pid_t kids[5];

	if (!grp)
		SKIP(return, "no '%s' group (make deps creates it)", COLOC_GROUP);
	ASSERT_EQ(COLOC_MAX_CONNS - COLOC_ROOT_CONNS,
		  counts[0] + counts[1] + counts[2] + counts[3]);
	ASSERT_EQ(0, chmod(self->dir, 0755));
	for (int u = 0; u < 5; u++) {
		ASSERT_EQ(0, pipe(report[u]));
		kids[u] = hold_conns(self->sock, 60001 + u, grp->gr_gid, u < 4 ? counts[u] : 1,
				     report[u][1], u == 0);
		ASSERT_GT(kids[u], 0);
		/* one user at a time, so the first user's connections are the oldest */
		ASSERT_EQ(1, read(report[u][0], got, 1));
		EXPECT_EQ('R', got[0]);
	}
	/* the first user's first connection was evicted, with the reason */
	ASSERT_GT(read(report[0][0], got, sizeof(got) - 1), 0);
	EXPECT_NE(NULL, strstr(got, "connection limit"));
	for (int u = 0; u < 5; u++) {
		kill(kids[u], SIGKILL);
		ASSERT_EQ(kids[u], waitpid(kids[u], &st, 0));
		close(report[u][0]);
		close(report[u][1]);
	}
}

/* With --conn-timeout-ms, an idle connection and a stalled request are closed. */
TEST(colocd_conns__idle_and_stalled_connections_are_closed)
{
	const char *extra[] = { "--conn-timeout-ms", "300", NULL };
	char dir[64] = "/tmp/coloc-test-XXXXXX", sock[128], pin[128], log[128], line[512];
	int idle, stalled, fresh;
	pid_t pid;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/colocd.sock", dir);
	snprintf(log, sizeof(log), "%s/colocd.log", dir);
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/coloc-test-to-%d", getpid());
	pid = tu_start_colocd_with(sock, pin, log, extra);
	ASSERT_GT(pid, 0);
	idle = tu_connect(sock);
	stalled = tu_connect(sock);
	ASSERT_GE(idle, 0);
	ASSERT_GE(stalled, 0);
	set_recv_timeout(idle, 30);
	set_recv_timeout(stalled, 30);
	ASSERT_EQ(5, send(stalled, "{\"cmd", 5, MSG_NOSIGNAL));
	/* closed by colocd: EOF, not the 30 s receive timeout */
	EXPECT_EQ(0, tu_read_line(idle, line, sizeof(line)));
	EXPECT_EQ(0, tu_read_line(stalled, line, sizeof(line)));
	close(idle);
	close(stalled);
	/* and the daemon still serves */
	fresh = tu_connect(sock);
	ASSERT_GE(fresh, 0);
	EXPECT_EQ(1, ping_on(fresh, NULL, 0));
	close(fresh);
	EXPECT_EQ(0, tu_stop_colocd(pid));
	snprintf(line, sizeof(line), "rm -rf %s", dir);
	tu_run(line, NULL, 0);
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
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	tu_run(cmd, NULL, 0);
}

/* A client in another pid namespace would name other processes: refused. */
TEST_F(colocd, conns__a_peer_in_another_pid_namespace_is_refused)
{
	char line[1024] = { 0 };
	int fds[2], st;
	pid_t pid;

	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		pid_t inner;

		close(fds[0]);
		if (unshare(CLONE_NEWPID))
			_exit(99);
		/* the namespace applies to children: the first one is its pid 1 */
		inner = fork();
		if (inner == 0) {
			int fd = tu_connect(self->sock), n;

			if (fd < 0)
				_exit(98);
			set_recv_timeout(fd, 30);
			n = ping_on(fd, line, sizeof(line));
			if (n < 0 || write(fds[1], line, strlen(line)) < 0)
				_exit(97);
			_exit(0);
		}
		if (inner < 0 || waitpid(inner, &st, 0) != inner)
			_exit(96);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 95);
	}
	close(fds[1]);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	if (WEXITSTATUS(st) == 99)
		SKIP(return, "cannot create a pid namespace here");
	ASSERT_EQ(0, WEXITSTATUS(st));
	ASSERT_GT(read(fds[0], line, sizeof(line) - 1), 0);
	close(fds[0]);
	EXPECT_NE(NULL, strstr(line, "pid namespace"));
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
	struct json_object *resp;
	char req[256];
	struct stat st;

	ASSERT_EQ(0, tu_spawn_spinner(&self->spin, -1, 1, 20));
	snprintf(req, sizeof(req), "{\"cmd\":\"tenant-add\",\"name\":\"a\",\"pids\":[%d]}\n",
		 self->spin.pid);
	resp = request_json(self->sock, req);
	ASSERT_TRUE(resp_ok(resp));
	json_object_put(resp);
	tu_release(&self->spin);
	EXPECT_EQ(0, tu_stop_colocd(self->pid));
	self->pid = 0;
	EXPECT_EQ(-1, stat(self->pin, &st));
	EXPECT_EQ(-1, stat(self->sock, &st));
}

TEST_HARNESS_MAIN
