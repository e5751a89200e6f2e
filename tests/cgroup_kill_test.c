// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Killing an executor through its cgroup v2 leaf (daemon/cgroup_leaf.h),
 * as colocd does without CAP_KILL: real executors of
 * models/mobilenet_v2.model started in a tenant's sandbox (its uid, its
 * cgroups, a leaf each) by this process, which has dropped CAP_KILL from
 * its effective set, so that no signal of its own can reach them. Each
 * executor sits alone in its leaf; a kill takes it and not its tenant's
 * other executor, which goes on serving; a reaped executor's leaf is
 * gone. Without a leaf the kill fails, saying what is missing, and
 * sandbox_create refuses a colocd that could kill by neither means.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "kselftest_harness.h"
#include "execproc.h"
#include "sandbox.h"
#include "testutil.h"

#define READY_MS 120000
#define DONE_MS 60000

/* CAP_KILL in or out of this process's effective set (it stays permitted). */
static int set_cap_kill(bool on)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	if (on)
		data[0].effective |= 1u << CAP_KILL;
	else
		data[0].effective &= ~(1u << CAP_KILL);
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

/* The pids in a cgroup's cgroup.procs, up to max; -errno if unreadable. */
static int cgroup_pids(const char *dir, pid_t *pids, int max)
{
	char path[PATH_MAX + 32], buf[4096], *p, *end;
	int fd, n = 0;
	ssize_t len;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len < 0)
		return -errno;
	buf[len] = '\0';
	for (p = buf; n < max; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		pids[n++] = (pid_t)v;
	}
	return n;
}

static bool dir_exists(const char *dir)
{
	struct stat st;

	return !stat(dir, &st) && S_ISDIR(st.st_mode);
}

FIXTURE(kill)
{
	struct sandbox *sb;
	struct execproc *ep[2];
	char model[PATH_MAX], bin[512];
	int model_fd;
};

FIXTURE_SETUP(kill)
{
	struct sandbox_config cfg = { 0 };
	struct execproc_opts o = { .tenant = "ck" };
	struct coloc_err err = { 0 };
	const char *root = getenv("COLOC_ROOT");
	char path[PATH_MAX];

	self->sb = NULL;
	self->model_fd = -1;
	if (geteuid() != 0)
		SKIP(return, "needs root to start executors under other uids");
	snprintf(path, sizeof(path), "%s/models/mobilenet_v2.model", root ? root : ".");
	if (!realpath(path, self->model))
		SKIP(return, "%.900s not found (set COLOC_ROOT to the repo root)", path);
	tu_bin("coloc-executor", self->bin, sizeof(self->bin));
	ASSERT_EQ(0, sandbox_create(&cfg, &self->sb, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, sandbox_tenant_open(self->sb, "ck", 0, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, sandbox_tenant_spawn_opts(self->sb, "ck", &o, &err))
	TH_LOG("%s", coloc_err_str(&err));
	if (!o.cgroup_leaf_parent)
		SKIP(return, "no cgroup v2 hierarchy to kill executors through: %s",
		     sandbox_describe(self->sb));
	self->model_fd = open(self->model, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->model_fd);
	ASSERT_EQ(0, set_cap_kill(false));
}

FIXTURE_TEARDOWN(kill)
{
	set_cap_kill(true);
	for (int i = 1; i >= 0; i--)
		execproc_free(self->ep[i]);
	if (self->model_fd >= 0)
		close(self->model_fd);
	if (self->sb)
		sandbox_tenant_close(self->sb, "ck");
	sandbox_free(self->sb);
}

/* An executor of tenant ck, ready; with_leaf false: without a leaf (killed by signal). */
static int spawn_ready(FIXTURE_DATA(kill) * self, int i, bool with_leaf, struct coloc_err *err)
{
	struct execproc_opts o = { .executor = self->bin,
				   .model_fd = self->model_fd,
				   .model_name = self->model,
				   .weights_fd = -1,
				   .tenant = "ck" };
	int ret = sandbox_tenant_spawn_opts(self->sb, "ck", &o, err);

	if (ret)
		return ret;
	if (!with_leaf)
		o.cgroup_leaf_parent = NULL;
	ret = execproc_spawn(&o, &self->ep[i], err);
	return ret ?: execproc_wait_ready(self->ep[i], READY_MS, err);
}

static int run_whole_model(struct execproc *ep, struct execproc_result *res, struct coloc_err *err)
{
	int cpu = 0;
	struct execproc_block b = { .last = execproc_header(ep)->nr_layers,
				    .cpus = &cpu,
				    .nr_cpus = 1 };
	int ret = execproc_submit_block(ep, &b, err);

	return ret ?: execproc_wait_done(ep, res, DONE_MS, err);
}

/*
 * Dead of SIGKILL, as execproc_poll says once it has reaped it, after any
 * completion written before the kill landed (on a busy machine the block
 * may end between its start and the kill: execproc_poll delivers that first).
 */
static bool killed_by_sigkill(struct execproc *ep)
{
	struct execproc_result res;
	struct coloc_err err = { 0 };
	int ret = 1;

	for (int i = 0; i < 8 && ret > 0; i++)
		ret = execproc_poll(ep, &res, &err);
	return execproc_reaped(ep) && ret < 0 && strstr(coloc_err_str(&err), "killed by signal 9");
}

/*
 * The executor, under its tenant's uid, alone in its leaf; this process
 * cannot signal it (no CAP_KILL); execproc_kill ends it mid-block all the
 * same, through cgroup.kill, and its leaf is gone once it is reaped.
 */
TEST_F_TIMEOUT(kill, execproc_kill__through_its_leaf_mid_block_without_cap_kill, 300)
{
	char leaf[PATH_MAX];
	struct coloc_err err = { 0 };
	struct execproc_block b = { 0 };
	int cpu = 0, n;
	pid_t pids[8];

	ASSERT_EQ(0, spawn_ready(self, 0, true, &err)) TH_LOG("%s", coloc_err_str(&err));
	snprintf(leaf, sizeof(leaf), "%s", execproc_cgroup_leaf(self->ep[0]));
	ASSERT_NE(0, leaf[0]);
	n = cgroup_pids(leaf, pids, 8);
	ASSERT_EQ(1, n) TH_LOG("%s holds %d processes", leaf, n);
	EXPECT_EQ(execproc_pid(self->ep[0]), pids[0]);
	EXPECT_EQ(-1, syscall(SYS_pidfd_send_signal, execproc_pidfd(self->ep[0]), 0, NULL, 0));
	EXPECT_EQ(EPERM, errno) TH_LOG("this process can still signal its executor");

	b.last = execproc_header(self->ep[0])->nr_layers;
	b.cpus = &cpu;
	b.nr_cpus = 1;
	ASSERT_EQ(0, execproc_submit_block(self->ep[0], &b, &err)) TH_LOG("%s", coloc_err_str(&err));
	for (int i = 0; i < 10000 && !execproc_started(self->ep[0]); i++)
		usleep(100);
	EXPECT_EQ(0, execproc_kill(self->ep[0]));
	EXPECT_TRUE(killed_by_sigkill(self->ep[0]));
	EXPECT_FALSE(dir_exists(leaf)) TH_LOG("%s left after its executor was reaped", leaf);
}

/*
 * Two executors of one tenant, each in a leaf of its own under the same
 * tenant folder: killing one leaves the other serving whole queries.
 */
TEST_F_TIMEOUT(kill, execproc_kill__one_executor_of_a_tenant_the_other_serves, 300)
{
	char leaf[2][PATH_MAX], *slash[2];
	struct execproc_result res;
	struct coloc_err err = { 0 };

	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, spawn_ready(self, i, true, &err)) TH_LOG("%s", coloc_err_str(&err));
		snprintf(leaf[i], sizeof(leaf[i]), "%s", execproc_cgroup_leaf(self->ep[i]));
		slash[i] = strrchr(leaf[i], '/');
		ASSERT_NE(NULL, slash[i]);
	}
	EXPECT_STRNE(leaf[0], leaf[1]);
	EXPECT_EQ(slash[0] - leaf[0], slash[1] - leaf[1]);
	EXPECT_EQ(0, strncmp(leaf[0], leaf[1], (size_t)(slash[0] - leaf[0])))
	TH_LOG("leaves %s and %s under different tenants", leaf[0], leaf[1]);

	EXPECT_EQ(0, execproc_kill(self->ep[0]));
	EXPECT_TRUE(killed_by_sigkill(self->ep[0]));
	EXPECT_FALSE(dir_exists(leaf[0]));
	for (int q = 0; q < 3; q++) {
		ASSERT_EQ(1, run_whole_model(self->ep[1], &res, &err))
		TH_LOG("%s", coloc_err_str(&err));
		EXPECT_EQ(COLOC_SHM_DONE_OK, res.status) TH_LOG("%s", res.reason);
	}
	EXPECT_TRUE(dir_exists(leaf[1]));
	EXPECT_FALSE(execproc_reaped(self->ep[1]));
	errno = 0;
	EXPECT_EQ(-1, kill(execproc_pid(self->ep[1]), 0));
	EXPECT_EQ(EPERM, errno) TH_LOG("the other executor is gone (ESRCH) or signalable");
}

/*
 * One process of two lanes (execproc_spawn_lanes) has one leaf; a kill
 * through the later lane's handle ends the process, and the first lane's
 * handle, which reaps it, removes the leaf.
 */
TEST_F_TIMEOUT(kill, execproc_signal_kill__a_later_lane_kills_through_the_shared_leaf, 300)
{
	struct execproc_opts o = { .executor = self->bin,
				   .model_fd = self->model_fd,
				   .model_name = self->model,
				   .weights_fd = -1,
				   .tenant = "ck" };
	struct coloc_err err = { 0 };
	char leaf[PATH_MAX];

	ASSERT_EQ(0, sandbox_tenant_spawn_opts(self->sb, "ck", &o, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, execproc_spawn_lanes(&o, 2, self->ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, execproc_wait_ready(self->ep[i], READY_MS, &err))
	TH_LOG("%s", coloc_err_str(&err));
	snprintf(leaf, sizeof(leaf), "%s", execproc_cgroup_leaf(self->ep[0]));
	ASSERT_TRUE(dir_exists(leaf));
	EXPECT_EQ(0, execproc_signal_kill(self->ep[1]));
	/* gone by that kill alone: the first lane's pidfd turns readable, its poll reaps */
	EXPECT_EQ(1, poll(&(struct pollfd){ .fd = execproc_pidfd(self->ep[0]), .events = POLLIN },
			  1, DONE_MS));
	EXPECT_GT(0, execproc_poll(self->ep[0], NULL, &err));
	EXPECT_TRUE(killed_by_sigkill(self->ep[0])) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_FALSE(dir_exists(leaf)) TH_LOG("%s left after its process was reaped", leaf);
}

/*
 * Without a leaf (no cgroup v2) and without CAP_KILL the kill fails with
 * -EPERM, and colocd's log names both; with CAP_KILL back it goes through.
 */
TEST_F_TIMEOUT(kill, execproc_signal_kill__without_leaf_nor_cap_kill_says_so, 300)
{
	char log[PATH_MAX], text[4096] = "";
	struct coloc_err err = { 0 };
	int saved, fd;

	ASSERT_EQ(0, spawn_ready(self, 0, false, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, execproc_cgroup_leaf(self->ep[0])[0]);
	snprintf(log, sizeof(log), "/tmp/coloc-cgroup-kill-%d.log", getpid());
	fd = open(log, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	EXPECT_EQ(-EPERM, execproc_signal_kill(self->ep[0]));
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	EXPECT_LT(0, pread(fd, text, sizeof(text) - 1, 0));
	close(fd);
	unlink(log);
	EXPECT_NE(NULL, strstr(text, "CAP_KILL")) TH_LOG("logged: %s", text);
	EXPECT_NE(NULL, strstr(text, "cgroup.kill")) TH_LOG("logged: %s", text);
	EXPECT_FALSE(execproc_reaped(self->ep[0]));

	ASSERT_EQ(0, set_cap_kill(true));
	EXPECT_EQ(0, execproc_kill(self->ep[0]));
	EXPECT_TRUE(killed_by_sigkill(self->ep[0]));
}

/*
 * A colocd that could kill its executors by neither means (cgroups off,
 * so no leaf, and no CAP_KILL) is refused at start, the reason naming
 * both; with CAP_KILL it starts, saying it kills by signal.
 */
TEST_F(kill, sandbox_create__refused_without_cgroup_kill_nor_cap_kill)
{
	struct sandbox_config cfg = { .no_cgroups = true, .allow_weak = true };
	struct coloc_err err = { 0 };
	struct sandbox *sb = NULL;

	EXPECT_NE(NULL, strstr(sandbox_describe(self->sb), "cgroup.kill"))
	TH_LOG("%s", sandbox_describe(self->sb));
	EXPECT_EQ(-EPERM, sandbox_create(&cfg, &sb, &err));
	EXPECT_EQ(NULL, sb);
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "CAP_KILL")) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "cgroup.kill"))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, set_cap_kill(true));
	ASSERT_EQ(0, sandbox_create(&cfg, &sb, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(sandbox_describe(sb), "killed by signal (CAP_KILL)"))
	TH_LOG("%s", sandbox_describe(sb));
	sandbox_free(sb);
}

TEST_HARNESS_MAIN
