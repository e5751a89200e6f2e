// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd without CAP_KILL, as its systemd unit runs it: started with
 * CAP_KILL dropped from the bounding set (so none of its capability sets
 * has it), it still kills its executors, each of which runs under its
 * tenant's uid, through their cgroup v2 leaves' cgroup.kill. A real colocd
 * with --executor tests/hostile_executor: a tenant named hostile-hang
 * takes its first block and never ends it (SIGTERM ignored), the others
 * run the real executor. The hung block's deadline kills it and the honest
 * tenant goes on serving; a tenant removed mid-block goes; SIGTERM stops
 * colocd cleanly with no executor and no cgroup of its left.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "testutil.h"

#define READY_S 180
#define GONE_S 30 /* a hung block's deadline is 50x its prediction + 2 s */

static char cache_dir[64];

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("colocd-kill-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(nokill)
{
	char dir[64], sock[128], pin[128], log[128], executor[128];
	char model[PATH_MAX];
	pid_t colocd;
};

/* The executor pid of tenant name once it is ready, from status --json; 0 if never. */
static pid_t ready_pid(FIXTURE_DATA(nokill) * self, const char *name)
{
	char args[128], out[16384], *p;

	snprintf(args, sizeof(args), "status %s --json", name);
	for (int i = 0; i < READY_S * 10; i++, usleep(100000))
		if (!tu_colocctl(self->sock, args, out, sizeof(out)) &&
		    strstr(out, "\"state\":\"ready\"") && (p = strstr(out, "\"pid\":")))
			return (pid_t)atoi(p + strlen("\"pid\":"));
	return 0;
}

/* The cgroup v2 folder of pid (the hybrid layout's unified one), or "". */
static void cgroup_v2_dir(pid_t pid, char *dir, size_t len)
{
	char cg[PATH_MAX];
	struct statfs sf;
	bool hybrid = !statfs("/sys/fs/cgroup/unified", &sf) && sf.f_type == CGROUP2_SUPER_MAGIC;

	dir[0] = '\0';
	if (!tu_proc_cgroup(pid, "", cg, sizeof(cg)))
		snprintf(dir, len, "/sys/fs/cgroup%s%.*s", hybrid ? "/unified" : "", PATH_MAX - 64,
			 cg);
}

static bool dir_exists(const char *dir)
{
	struct stat st;

	return !stat(dir, &st) && S_ISDIR(st.st_mode);
}

/* Waits up to GONE_S for pid to be gone (reaped by colocd) and dir removed. */
static bool gone(pid_t pid, const char *dir)
{
	for (int i = 0; i < GONE_S * 20; i++, usleep(50000))
		if (kill(pid, 0) && errno == ESRCH && !dir_exists(dir))
			return true;
	return false;
}

/* Whether colocd's effective capabilities hold CAP_KILL, from /proc. */
static int has_cap_kill(pid_t pid)
{
	char eff[32];

	if (tu_proc_status_field(pid, "CapEff", eff, sizeof(eff)))
		return -1;
	return !!(strtoull(eff, NULL, 16) & (1ull << CAP_KILL));
}

static bool log_has(FIXTURE_DATA(nokill) * self, const char *what)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "grep -q -- '%s' %s", what, self->log);
	return !tu_run(cmd, NULL, 0);
}

FIXTURE_SETUP(nokill)
{
	const char *root = getenv("COLOC_ROOT");
	char out[4096], path[PATH_MAX + 64];
	const char *extra[] = { "--cache-dir", cache_dir, "--executor", self->executor, NULL };
	struct statfs sf;

	self->colocd = 0;
	if (geteuid() != 0)
		SKIP(return, "needs root to run colocd");
	if (statfs("/sys/fs/cgroup", &sf) ||
	    (sf.f_type != CGROUP2_SUPER_MAGIC &&
	     (statfs("/sys/fs/cgroup/unified", &sf) || sf.f_type != CGROUP2_SUPER_MAGIC)))
		SKIP(return, "no cgroup v2 hierarchy: colocd needs CAP_KILL here");
	snprintf(path, sizeof(path), "%s/models/mobilenet_v2.model", root ? root : ".");
	if (!realpath(path, self->model))
		SKIP(return, "%.900s not found (set COLOC_ROOT to the repo root)", path);
	ASSERT_EQ(0, tu_mount_bpffs());
	ASSERT_EQ(0, tu_quick_profile(self->model, cache_dir, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-nokill-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-nokill-test-%d", getpid());
	/* the hostile executor, with the real one beside it for the honest tenants */
	ASSERT_EQ(0, tu_hostile_executor_dir(self->dir, self->executor, sizeof(self->executor)));
	/* colocd, started from here, gets no CAP_KILL in any set: root's are its bounding set */
	ASSERT_EQ(0, prctl(PR_CAPBSET_DROP, CAP_KILL, 0, 0, 0));
	self->colocd = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	ASSERT_LT(0, self->colocd) TH_LOG("colocd did not start");
	ASSERT_EQ(0, has_cap_kill(self->colocd)) TH_LOG("colocd has CAP_KILL");
}

FIXTURE_TEARDOWN(nokill)
{
	char cmd[256];

	if (self->colocd > 0)
		tu_stop_colocd(self->colocd);
	if (self->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
		if (system(cmd))
			TH_LOG("could not remove %s", self->dir);
	}
}

/* Submits tenant name and waits until it is ready: its executor's pid and cgroup v2 leaf. */
static pid_t submit_ready(FIXTURE_DATA(nokill) * self, const char *name, char *leaf, size_t len)
{
	char args[PATH_MAX + 128], out[4096];
	pid_t pid;

	snprintf(args, sizeof(args), "submit %s %s --qos-ms 60000", name, self->model);
	if (tu_colocctl(self->sock, args, out, sizeof(out)))
		return -1;
	pid = ready_pid(self, name);
	if (pid > 0)
		cgroup_v2_dir(pid, leaf, len);
	return pid;
}

/*
 * `colocctl infer name` in the background; 0 once colocd says its query
 * is in flight (its block sent to the executor), -ETIMEDOUT if never.
 */
static int infer_in_background(FIXTURE_DATA(nokill) * self, const char *name, struct tu_child *c)
{
	const char *args[] = { "--socket", self->sock, "infer", name, NULL };
	char bin[512], status[128], out[16384];
	int ret = tu_child_start(tu_bin("colocctl", bin, sizeof(bin)), args, c);

	snprintf(status, sizeof(status), "status %s --json", name);
	for (int i = 0; !ret && i < GONE_S * 20; i++, usleep(50000))
		if (!tu_colocctl(self->sock, status, out, sizeof(out)) &&
		    strstr(out, "\"in_flight\":1"))
			return 0;
	return ret ?: -ETIMEDOUT;
}

/*
 * A block hung past its deadline: colocd, without CAP_KILL, kills its
 * executor (its tenant's uid) through the leaf, which is gone once the
 * executor is reaped; the honest tenant, whose executor is in a leaf of
 * its own, goes on serving.
 */
TEST_F_TIMEOUT(nokill, deadline__hung_executor_killed_the_other_tenant_serves, 600)
{
	char leaf[2][PATH_MAX], out[4096];
	pid_t hung, honest;

	honest = submit_ready(self, "honest", leaf[0], sizeof(leaf[0]));
	hung = submit_ready(self, "hostile-hang", leaf[1], sizeof(leaf[1]));
	ASSERT_LT(0, honest);
	ASSERT_LT(0, hung);
	TH_LOG("honest %d in %s, hostile-hang %d in %s", honest, leaf[0], hung, leaf[1]);
	EXPECT_NE(NULL, strstr(leaf[0], "/tenant-honest/exec-"));
	EXPECT_NE(NULL, strstr(leaf[1], "/tenant-hostile-hang/exec-"));

	EXPECT_NE(0, tu_colocctl(self->sock, "infer hostile-hang", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "hung")) TH_LOG("%s", out);
	EXPECT_TRUE(gone(hung, leaf[1])) TH_LOG("executor %d or %s still there", hung, leaf[1]);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(0, tu_colocctl(self->sock, "infer honest", out, sizeof(out)))
		TH_LOG("%s", out);
	}
	EXPECT_EQ(0, kill(honest, 0));
	EXPECT_TRUE(dir_exists(leaf[0]));
	EXPECT_FALSE(log_has(self, "cannot kill"));
}

/* A tenant removed while its executor is mid-block (hung) goes, its executor and leaf too. */
TEST_F_TIMEOUT(nokill, remove__tenant_mid_block_goes, 600)
{
	char leaf[PATH_MAX], out[4096];
	struct tu_child infer;
	pid_t hung;

	hung = submit_ready(self, "hostile-hang", leaf, sizeof(leaf));
	ASSERT_LT(0, hung);
	ASSERT_EQ(0, infer_in_background(self, "hostile-hang", &infer));
	EXPECT_EQ(0, tu_colocctl(self->sock, "remove hostile-hang", out, sizeof(out)))
	TH_LOG("%s", out);
	EXPECT_TRUE(gone(hung, leaf)) TH_LOG("executor %d or %s still there", hung, leaf);
	ASSERT_EQ(0, tu_child_finish(&infer));
	EXPECT_TRUE(WIFEXITED(infer.status) && WEXITSTATUS(infer.status))
	TH_LOG("the query of the removed tenant was answered: %s", infer.output);
	EXPECT_NE(NULL, strstr(infer.output, "hung")) TH_LOG("%s", infer.output);
	EXPECT_NE(0, tu_colocctl(self->sock, "status hostile-hang", out, sizeof(out)));
	EXPECT_FALSE(log_has(self, "cannot kill"));
}

/*
 * SIGTERM with a block hung mid-way and an idle honest tenant: colocd
 * exits cleanly, no executor of it left, nor any of its cgroups (the
 * leaves, the tenants' folders, its colocd-PID).
 */
TEST_F_TIMEOUT(nokill, shutdown__no_executor_nor_cgroup_left, 600)
{
	char leaf[2][PATH_MAX], top[PATH_MAX], *p;
	struct tu_child infer;
	pid_t pids[2];
	int st = -1;

	pids[0] = submit_ready(self, "honest", leaf[0], sizeof(leaf[0]));
	pids[1] = submit_ready(self, "hostile-hang", leaf[1], sizeof(leaf[1]));
	ASSERT_LT(0, pids[0]);
	ASSERT_LT(0, pids[1]);
	/* .../colocd-PID/tenant-NAME/exec-N */
	snprintf(top, sizeof(top), "%s", leaf[0]);
	for (int i = 0; i < 2 && (p = strrchr(top, '/')); i++)
		*p = '\0';
	EXPECT_NE(NULL, strstr(top, "/colocd-")) TH_LOG("%s", top);
	ASSERT_EQ(0, infer_in_background(self, "hostile-hang", &infer));
	ASSERT_EQ(0, kill(self->colocd, SIGTERM));
	for (int i = 0; i < GONE_S * 20 && waitpid(self->colocd, &st, WNOHANG) == 0; i++)
		usleep(50000);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("colocd's status %#x", st);
	if (!WIFEXITED(st))
		tu_stop_colocd(self->colocd);
	self->colocd = 0;
	for (int i = 0; i < 2; i++) {
		EXPECT_TRUE(gone(pids[i], leaf[i]))
		TH_LOG("executor %d or %s left", pids[i], leaf[i]);
	}
	EXPECT_FALSE(dir_exists(top)) TH_LOG("%s left", top);
	tu_child_finish(&infer);
	EXPECT_FALSE(log_has(self, "cannot kill"));
}

TEST_HARNESS_MAIN
