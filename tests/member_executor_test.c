// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd against a member's executor: one that stalls mid-block below the
 * hang limit (daemon/serving_overrun.c), and what other local users see of
 * one (docs/security-executor.md). A real colocd serving one CPU, whose
 * --executor is tests/hostile_executor.c; the tenant hostile-stall takes
 * its first block and stalls in it until the test sends SIGUSR1, the
 * honest tenant runs the real executor. The stalled block overruns its
 * bound and gives its core back, so the honest tenant's query is
 * answered while the stalled one is still out and its tenant still ready
 * (without the bound they waited until the hang limit killed it); once
 * woken, the late block completes OK and both tenants go on serving. An
 * executor's command line, which every user reads, names neither its
 * tenant nor its model; its environment, which does, only root reads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <grp.h>
#include <unistd.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "testutil.h"

#define READY_S 180
#define WAIT_S 60

static char cache_dir[64];

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("member-executor-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(member)
{
	char dir[64], sock[128], pin[128], log[128], executor[128];
	char model[PATH_MAX];
	pid_t colocd;
};

FIXTURE_SETUP(member)
{
	const char *root = getenv("COLOC_ROOT");
	char out[4096], path[PATH_MAX + 64];
	const char *extra[] = { "--cache-dir", cache_dir, "--executor", self->executor, NULL };
	cpu_set_t all, one;

	self->colocd = 0;
	if (geteuid() != 0)
		SKIP(return, "needs root to run colocd");
	snprintf(path, sizeof(path), "%s/models/mobilenet_v2.model", root ? root : ".");
	if (!realpath(path, self->model))
		SKIP(return, "%.900s not found (set COLOC_ROOT to the repo root)", path);
	ASSERT_EQ(0, tu_mount_bpffs());
	ASSERT_EQ(0, tu_quick_profile(self->model, cache_dir, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-member-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-member-test-%d", getpid());
	ASSERT_EQ(0, tu_hostile_executor_dir(self->dir, self->executor, sizeof(self->executor)));
	/* colocd serves the CPUs it may run on: one, which the stalled block holds */
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(all), &all));
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, &one);
			break;
		}
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	self->colocd = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(all), &all));
	ASSERT_LT(0, self->colocd) TH_LOG("colocd did not start");
}

FIXTURE_TEARDOWN(member)
{
	if (self->colocd > 0)
		tu_stop_colocd(self->colocd);
	if (self->dir[0] && tu_remove_tree(self->dir))
		TH_LOG("could not remove %s", self->dir);
}

/* The number after "key": in out, or -1. */
static long json_num(const char *out, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(out, pat);
	return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* Submits tenant name and waits until it is ready: its executor's pid, 0 if never. */
static pid_t submit_ready(FIXTURE_DATA(member) * self, const char *name)
{
	char args[PATH_MAX + 128], out[16384];

	snprintf(args, sizeof(args), "submit %s %s --qos-ms 60000", name, self->model);
	if (tu_colocctl(self->sock, args, out, sizeof(out)))
		return 0;
	snprintf(args, sizeof(args), "status %s --json", name);
	for (int i = 0; i < READY_S * 10; i++, usleep(100000))
		if (!tu_colocctl(self->sock, args, out, sizeof(out)) &&
		    strstr(out, "\"state\":\"ready\""))
			return (pid_t)json_num(out, "pid");
	return 0;
}

/* Tenant name's status --json into out; 0 or colocctl's status. */
static int status_of(FIXTURE_DATA(member) * self, const char *name, char *out, size_t len)
{
	char args[128];

	snprintf(args, sizeof(args), "status %s --json", name);
	return tu_colocctl(self->sock, args, out, len);
}

/* Whether the child has not exited yet (it is not reaped here). */
static bool still_running(const struct tu_child *c)
{
	siginfo_t info = { 0 };

	return !waitid(P_PID, (id_t)c->pid, &info, WEXITED | WNOHANG | WNOWAIT) && !info.si_pid;
}

/*
 * The stalled block gives its only core back at its bound: the honest
 * tenant's queries are answered while the stalled query is still out and
 * its tenant ready, its overrun counted; woken, it completes OK, and both
 * tenants serve again on the core it no longer holds.
 */
TEST_F_TIMEOUT(member, stall__the_core_goes_to_the_honest_tenant_while_it_lasts, 600)
{
	const char *args[] = { "--socket", self->sock, "infer", "hostile-stall", NULL };
	char bin[512], out[16384];
	struct tu_child stalled;
	pid_t honest, hostile;
	int i;

	honest = submit_ready(self, "honest");
	hostile = submit_ready(self, "hostile-stall");
	ASSERT_LT(0, honest);
	ASSERT_LT(0, hostile);
	ASSERT_EQ(0, tu_child_start(tu_bin("colocctl", bin, sizeof(bin)), args, &stalled));
	/* its block sent, and the executor stalling in it (it never completes on its own) */
	for (i = 0; i < WAIT_S * 20; i++, usleep(50000))
		if (!status_of(self, "hostile-stall", out, sizeof(out)) &&
		    json_num(out, "in_flight") == 1)
			break;
	ASSERT_EQ(1, json_num(out, "in_flight")) TH_LOG("%s", out);

	/* one query: under ASan at load three could outlast the late block's hang limit */
	EXPECT_EQ(0, tu_colocctl(self->sock, "infer honest", out, sizeof(out))) TH_LOG("%s", out);
	/* answered while the stalled block is still out: not killed as hung, not completed */
	EXPECT_TRUE(still_running(&stalled));
	ASSERT_EQ(0, status_of(self, "hostile-stall", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"state\":\"ready\"")) TH_LOG("%s", out);
	EXPECT_EQ(1, json_num(out, "in_flight")) TH_LOG("%s", out);
	EXPECT_EQ(1, json_num(out, "overruns")) TH_LOG("%s", out);

	/* woken: the late block ends OK and frees nothing twice */
	ASSERT_EQ(0, kill(hostile, SIGUSR1));
	ASSERT_EQ(0, tu_child_finish(&stalled));
	EXPECT_TRUE(tu_child_exited_with(&stalled, 0)) TH_LOG("%s", stalled.output);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(0, tu_colocctl(self->sock, "infer honest", out, sizeof(out)))
		TH_LOG("%s", out);
		EXPECT_EQ(0, tu_colocctl(self->sock, "infer hostile-stall", out, sizeof(out)))
		TH_LOG("%s", out);
	}
	ASSERT_EQ(0, status_of(self, "hostile-stall", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"state\":\"ready\"")) TH_LOG("%s", out);
	EXPECT_EQ(0, json_num(out, "in_flight")) TH_LOG("%s", out);
	EXPECT_EQ(1, json_num(out, "overruns")) TH_LOG("%s", out);
}

/* /proc/pid/file read by nobody (uid and gid 65534) in a child: 0 if it could, else the errno. */
static int read_as_nobody(pid_t pid, const char *file)
{
	char path[64], buf[64];
	pid_t child;
	int st = -1;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	child = fork();
	if (child == 0) {
		int fd;

		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(255);
		fd = open(path, O_RDONLY);
		_exit(fd < 0 || read(fd, buf, sizeof(buf)) < 0 ? errno : 0);
	}
	if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* /proc/pid/cmdline as root, its NULs made spaces; 0 or -errno. */
static int cmdline_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	for (ssize_t i = 0; i < n; i++)
		buf[i] = buf[i] ? buf[i] : ' ';
	buf[n] = '\0';
	return 0;
}

/*
 * A serving executor's command line (any user's to read) holds neither
 * its tenant's name nor the model's path as submitted; they are in its
 * environment, which another user cannot read.
 */
TEST_F_TIMEOUT(member, cmdline__names_neither_tenant_nor_model, 600)
{
	char cmdline[4096];
	pid_t pid = submit_ready(self, "secretive");

	ASSERT_LT(0, pid);
	ASSERT_EQ(0, cmdline_of(pid, cmdline, sizeof(cmdline)));
	TH_LOG("%s", cmdline);
	EXPECT_EQ(NULL, strstr(cmdline, "secretive"));
	EXPECT_EQ(NULL, strstr(cmdline, self->model));
	EXPECT_EQ(NULL, strstr(cmdline, "mobilenet"));
	EXPECT_EQ(0, read_as_nobody(pid, "cmdline"));
	EXPECT_EQ(EACCES, read_as_nobody(pid, "environ"));
}

TEST_HARNESS_MAIN
