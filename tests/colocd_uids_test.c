// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Executor uids across colocds (docs/security-sandbox.md, "Executor
 * uids"): two real colocds started side by side, a tenant of
 * models/mobilenet_v2.model submitted to each, run their executors under
 * uids of different slots, each inside the range its start-up line names
 * (read from the executors' /proc status); a colocd that finds every slot
 * held refuses to start and says what to do.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "sandbox.h"
#include "testutil.h"
#include "uid_slot.h"

#define READY_S 180

static char cache_dir[64];

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("colocd-uids-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(two)
{
	char dir[64], model[PATH_MAX];
	char sock[2][128], pin[2][128], log[2][128];
	pid_t colocd[2];
};

FIXTURE_SETUP(two)
{
	const char *root = getenv("COLOC_ROOT");
	char out[4096], prof[PATH_MAX + 64];

	self->colocd[0] = self->colocd[1] = 0;
	self->dir[0] = '\0';
	if (geteuid() != 0)
		SKIP(return, "needs root to run colocd");
	snprintf(prof, sizeof(prof), "%s/models/mobilenet_v2.model", root ? root : ".");
	if (!realpath(prof, self->model))
		SKIP(return, "%.900s not found (set COLOC_ROOT to the repo root)", prof);
	ASSERT_EQ(0, tu_mount_bpffs());
	ASSERT_EQ(0, tu_quick_profile(self->model, cache_dir, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-uids-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	for (int i = 0; i < 2; i++) {
		snprintf(self->sock[i], sizeof(self->sock[i]), "%s/colocd%d.sock", self->dir, i);
		snprintf(self->log[i], sizeof(self->log[i]), "%s/colocd%d.log", self->dir, i);
		snprintf(self->pin[i], sizeof(self->pin[i]), "/sys/fs/bpf/coloc-uids-test-%d-%d",
			 getpid(), i);
	}
}

FIXTURE_TEARDOWN(two)
{
	for (int i = 0; i < 2; i++)
		if (self->colocd[i] > 0)
			tu_stop_colocd(self->colocd[i]);
	if (self->dir[0])
		tu_remove_tree(self->dir);
}

/* The executor pid of tenant name once it is ready, from status --json; 0 if never. */
static pid_t ready_pid(const char *sock, const char *name)
{
	char args[128], out[16384], *p;

	snprintf(args, sizeof(args), "status %s --json", name);
	for (int i = 0; i < READY_S * 10; i++, usleep(100000))
		if (!tu_colocctl(sock, args, out, sizeof(out)) &&
		    strstr(out, "\"state\":\"ready\"") && (p = strstr(out, "\"pid\":")))
			return (pid_t)atoi(p + strlen("\"pid\":"));
	return 0;
}

/* The real uid in /proc/PID/status; 0 if unknown. */
static unsigned long proc_uid(pid_t pid)
{
	char uid[64];

	return tu_proc_status_field(pid, "Uid", uid, sizeof(uid)) ? 0 : strtoul(uid, NULL, 10);
}

/* "in FIRST-LAST (slot" of the start-up line in log; 0 if not there. */
static int logged_range(const char *log, unsigned long *first, unsigned long *last)
{
	char text[16384], cmd[256], *p;

	snprintf(cmd, sizeof(cmd), "cat '%s'", log);
	tu_run(cmd, text, sizeof(text));
	p = strstr(text, "a uid of their own in ");
	if (!p || sscanf(p, "a uid of their own in %lu-%lu (slot", first, last) != 2)
		return -1;
	return strstr(p, "(slot ") ? 0 : -1;
}

/*
 * Two colocds on the default slots' locks, one tenant each: on main both
 * gave the first uid of 1879048192-1879052287 to their first tenant.
 */
TEST_F_TIMEOUT(two, two_colocds__executors_under_disjoint_uids, 900)
{
	const char *extra[] = { "--cache-dir", cache_dir, NULL };
	unsigned long first[2], last[2], uid[2];
	char out[4096], args[PATH_MAX + 128];

	for (int i = 0; i < 2; i++) {
		self->colocd[i] = tu_start_colocd_with(self->sock[i], self->pin[i], self->log[i],
						       extra);
		ASSERT_LT(0, self->colocd[i]) TH_LOG("colocd %d did not start (%s)", i, self->log[i]);
		first[i] = SANDBOX_DEFAULT_UID_FIRST;
		last[i] = SANDBOX_DEFAULT_UID_LAST;
		EXPECT_EQ(0, logged_range(self->log[i], &first[i], &last[i]))
		TH_LOG("no slot named in %s", self->log[i]);
		EXPECT_LE(SANDBOX_DEFAULT_UID_FIRST, first[i]);
		EXPECT_GE(SANDBOX_DEFAULT_UID_LAST, last[i]);
	}
	EXPECT_TRUE(last[0] < first[1] || last[1] < first[0])
	TH_LOG("ranges %lu-%lu and %lu-%lu overlap", first[0], last[0], first[1], last[1]);
	for (int i = 0; i < 2; i++) {
		snprintf(args, sizeof(args), "submit uidt %s --qos-ms 60000", self->model);
		ASSERT_EQ(0, tu_colocctl(self->sock[i], args, out, sizeof(out))) TH_LOG("%s", out);
	}
	for (int i = 0; i < 2; i++) {
		pid_t pid = ready_pid(self->sock[i], "uidt");

		ASSERT_LT(0, pid) TH_LOG("colocd %d's tenant never got ready", i);
		uid[i] = proc_uid(pid);
		TH_LOG("colocd %d: slot %lu-%lu, executor pid %d uid %lu", i, first[i], last[i],
		       pid, uid[i]);
		EXPECT_LE(first[i], uid[i]);
		EXPECT_GE(last[i], uid[i]);
	}
	EXPECT_NE(uid[0], uid[1]);
}

/*
 * With every slot of its lock directory held (here by the test, as
 * other colocds would), colocd does not start, and says why and what to do.
 */
TEST_F_TIMEOUT(two, every_slot_held__colocd_refuses_with_words, 300)
{
	char locks[128], path[192], cmd[256], text[8192];
	const char *extra[] = { "--uid-lock-dir", locks, NULL };
	int fds[UID_SLOT_COUNT];

	snprintf(locks, sizeof(locks), "%s/locks", self->dir);
	ASSERT_EQ(0, mkdir(locks, 0700));
	for (int i = 0; i < UID_SLOT_COUNT; i++) {
		snprintf(path, sizeof(path), "%s/slot-%d", locks, i);
		fds[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		ASSERT_LE(0, fds[i]);
		ASSERT_EQ(0, flock(fds[i], LOCK_EX | LOCK_NB));
	}
	self->colocd[0] = tu_start_colocd_with(self->sock[0], self->pin[0], self->log[0], extra);
	EXPECT_GT(0, self->colocd[0]) TH_LOG("colocd started with every slot held");
	snprintf(cmd, sizeof(cmd), "cat '%s'", self->log[0]);
	tu_run(cmd, text, sizeof(text));
	TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "every one of the 16 executor uid slots"));
	EXPECT_NE(NULL, strstr(text, "--uid-range"));
	/* one let go: the next colocd takes it */
	close(fds[7]);
	self->colocd[0] = tu_start_colocd_with(self->sock[0], self->pin[0], self->log[0], extra);
	ASSERT_LT(0, self->colocd[0]) TH_LOG("colocd did not start with slot 7 free");
	tu_run(cmd, text, sizeof(text));
	EXPECT_NE(NULL, strstr(text, "(slot 7 of 16")) TH_LOG("%s", text);
	for (int i = 0; i < UID_SLOT_COUNT; i++)
		if (i != 7)
			close(fds[i]);
}

TEST_HARNESS_MAIN
