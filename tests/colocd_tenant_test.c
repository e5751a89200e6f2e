// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's per-tenant attribution end to end, the real binary started as a
 * process: a tenant's on-CPU time matches /proc/PID/stat, a cgroup is
 * attributed like its processes (a process deep below it too), bad
 * attributions are refused, and a new tenant starts from zero.
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
	t0 = coloc_now_ns();
	while (cpu_ns < 300000000ull && coloc_now_ns() - t0 < 40000000000ull) {
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

	ASSERT_EQ(0, tu_spawn_spinner(&self->spin, -1, 7, 3));
	ASSERT_TRUE(tenant_add_ok(self->sock, "spinner", self->spin.pid));
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
	ASSERT_TRUE(tenant_add_ok(self->sock, "a", self->spin.pid));

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

	ASSERT_EQ(0, tu_spawn_spinner(&self->spin, -1, 10, 0));
	ASSERT_TRUE(tenant_add_ok(self->sock, "busy", self->spin.pid));
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
	ASSERT_TRUE(tenant_add_ok(self->sock, "idle", idle.pid));
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

TEST_HARNESS_MAIN
