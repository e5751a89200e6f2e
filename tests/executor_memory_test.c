// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The executors' memory in aggregate and the OOM killer's choice
 * (docs/security-owners.md, "Executors' memory"). A real colocd with small
 * limits whose --executor is tests/hostile_executor.c: hostile-hog1 and
 * hostile-hog2 each touch 160 MiB at their first block, within each one's
 * own limit (--executor-memory 192); an honest tenant runs the real
 * executor. A member's two hogs over its uid's limit
 * (--max-executor-mib-per-uid 256), or two members' one hog each over the
 * members' three quarters of all executors' (--max-executor-mib 440), or
 * root's hog and a member's over all executors' (328): the kernel kills
 * one hog (the member's, though root's is larger), whose
 * tenant fails naming the limit and its option, and the honest tenant of
 * another member goes on answering. Each member's executor's oom_score_adj
 * is 1000, root's 500 (so a member's hog is killed before root's, the
 * larger) and colocd's below 0; colocd itself is outside the folder of all
 * executors. From inside: a process that enters the executor's sandbox
 * with oom_score_adj 1000 over a floor of -900 (colocd without
 * CAP_SYS_RESOURCE, as under its unit) cannot lower it. A member's default
 * bound is a fifth of the members' part: one member's nibbles, each below
 * another member's hog, are killed in its own folder and the hog stays
 * (review s27 F3). And colocd refuses a tenant's limit above the per-uid
 * one, and a per-uid one above the members' part.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "exec_sandbox.h"
#include "sandbox.h"
#include "own_colocd.h"
#include "testutil.h"

#define MEMBER 64992 /* uids no account on a test machine has */
#define MEMBER2 64993
#define MEMBER3 64994
#define PER_UID_MIB 256 /* below two hogs' 160 MiB each, above one */
/*
 * the members' part (three quarters of ALL_MIB) below two hogs and the
 * honest tenant, above one hog and it; the sizes:
 * docs/measurements/executor.md
 */
#define ALL_MIB 440
#define MEMBERS_MIB 330
/* below two hogs and root's honest tenant, above one hog and it, its members' part above a hog */
#define ROOT_ALL_MIB 328
#define OVERRIDE_MIB 192 /* an operator's per-uid bound above the default fifth: a hog's */
/*
 * review s27 F3: a fifth of its members' part (1284) holds a hog (the
 * victim), under ASan too; at main's default (the whole part) nine nibbles
 * (128 MiB each, less than a hog) of one member beside it take the part
 * past its limit; a member's tenants are at most 9 by default
 */
#define F3_ALL_MIB 1712
#define F3_MEMBERS_MIB 1284
#define F3_PER_UID_MIB 256
#define F3_NIBBLES 9
#define NIBBLE_TOUCHED_MIB 120 /* most of tests/hostile_executor.c's HOSTILE_NIBBLE_MIB, 128 */
#define HOG_TOUCHED_MIB 150 /* most of tests/hostile_executor.c's HOSTILE_HOG_MIB, 160 */
#define STR_(x) #x
#define STR(x) STR_(x)
#define READY_S 180
#define FAIL_S 60

static char cache_dir[64];

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("executor-memory-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(mem)
{
	struct own_colocd d;
	char colocctl[512];
	char model[PATH_MAX + 64]; /* a copy the members may read */
	char out[16384];
};

/* Whether the memory controller is there: v2's, or v1's hierarchy. */
static bool have_memory_controller(void)
{
	size_t len;
	char *ctl = tu_read_file("/sys/fs/cgroup/cgroup.controllers", &len);
	bool v2 = ctl && strstr(ctl, "memory");

	free(ctl);
	return v2 || !access("/sys/fs/cgroup/memory/memory.limit_in_bytes", F_OK);
}

/* colocd is started by each test, with the limits it tries */
FIXTURE_SETUP(mem)
{
	char why[1024], cmd[4 * PATH_MAX + 256];
	int ret;

	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no group " COLOC_GROUP " (tools/deps.sh makes it)");
	if (!have_memory_controller())
		SKIP(return, "no cgroup memory controller (v2 cgroup.controllers, v1 memory)");
	ret = own_colocd_prepare(&self->d, "memguard", cache_dir, true, why, sizeof(why));
	if (ret == 1)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, ret) TH_LOG("%s", why);
	tu_bin("colocctl", self->colocctl, sizeof(self->colocctl));
	/* the members reach the socket and read the model they submit */
	ASSERT_EQ(0, chmod(self->d.dir, 0755));
	snprintf(self->model, sizeof(self->model), "%s/mobilenet_v2.model", self->d.dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0644 '%s'", self->d.model, self->model,
		 self->model);
	ASSERT_EQ(0, system(cmd));
}

FIXTURE_TEARDOWN(mem)
{
	if (own_colocd_finish(&self->d))
		TH_LOG("could not remove %s", self->d.dir);
}

/* colocctl ARGS... as uid (0: root) with the coloc group (tu_colocctl_as); its exit status. */
static int colocctl_as(FIXTURE_DATA(mem) * self, uid_t uid, const char *const *args)
{
	return tu_colocctl_as(self->colocctl, self->d.sock, uid, args, self->out, sizeof(self->out));
}

/* The value of "key": in out as text (a string's, or a number's), or "". */
static void json_value(const char *out, const char *key, char *val, size_t len)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(out, pat);
	val[0] = '\0';
	if (!p)
		return;
	p += strlen(pat);
	if (*p == '"')
		snprintf(val, len, "%.*s", (int)strcspn(p + 1, "\""), p + 1);
	else
		snprintf(val, len, "%.*s", (int)strcspn(p, ",}"), p);
}

/* Root's status of tenant name: its state and reason; 0 or colocctl's status. */
static int state_of(FIXTURE_DATA(mem) * self, const char *name, char *state, char *reason,
		    size_t len)
{
	char args[128];
	int ret;

	snprintf(args, sizeof(args), "status %s --json", name);
	ret = tu_colocctl(self->d.sock, args, self->out, sizeof(self->out));
	json_value(self->out, "state", state, len);
	json_value(self->out, "reason", reason, len);
	return ret;
}

/* Submits name as uid and waits until it is ready: its executor's pid, 0 if never. */
static pid_t submit_ready(FIXTURE_DATA(mem) * self, uid_t uid, const char *name)
{
	const char *args[] = { "submit", name, self->model, "--qos-ms", "60000", NULL };
	char state[64], reason[512], pid[32];

	if (colocctl_as(self, uid, args))
		return 0;
	for (int i = 0; i < READY_S * 10; i++, usleep(100000))
		if (!state_of(self, name, state, reason, sizeof(state)) &&
		    !strcmp(state, "ready")) {
			json_value(self->out, "pid", pid, sizeof(pid));
			return (pid_t)atoi(pid);
		}
	return 0;
}

static int infer_as(FIXTURE_DATA(mem) * self, uid_t uid, const char *name)
{
	const char *args[] = { "infer", name, NULL };

	return colocctl_as(self, uid, args);
}

/* /proc/pid/oom_score_adj, or -2000 if unread. */
static int oom_score_adj(pid_t pid)
{
	char path[64];
	int v = -2000;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", pid);
	f = fopen(path, "re");
	if (f && fscanf(f, "%d", &v) != 1)
		v = -2000;
	if (f)
		fclose(f);
	return v;
}

/* pid's cgroup in the memory controller's hierarchy (v1's memory, else v2's); "" if unread. */
static void memory_cgroup(pid_t pid, char *dir, size_t len, bool *v1)
{
	*v1 = !tu_proc_cgroup(pid, "memory", dir, len);
	if (!*v1)
		tu_proc_cgroup(pid, "", dir, len);
}

/*
 * file (v1's name, or v2's) of the memory folder up levels above pid's
 * tenant folder (0: the tenant's, 1: its owner's uid-U, then a member's
 * members/ where colocd has a members' part, then colocd-PID),
 * with that folder's path as /proc/PID/cgroup writes it; 0 if unread.
 */
static unsigned long long memory_file(pid_t pid, int up, const char *v1_file, const char *v2_file,
				      char *dir, size_t len)
{
	char file[PATH_MAX + 128], *tenant;
	unsigned long long v = 0;
	bool v1;
	FILE *f;

	memory_cgroup(pid, dir, len, &v1);
	tenant = strstr(dir, "/tenant-");
	if (!tenant)
		return 0;
	tenant[1 + strcspn(tenant + 1, "/")] = '\0'; /* v2: its executor's leaf cut */
	for (int i = 0; i < up; i++) {
		char *slash = strrchr(dir, '/');

		if (!slash || slash == dir)
			return 0;
		*slash = '\0';
	}
	snprintf(file, sizeof(file), "/sys/fs/cgroup%s%s/%s", v1 ? "/memory" : "", dir,
		 v1 ? v1_file : v2_file);
	f = fopen(file, "re");
	if (f && fscanf(f, "%llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

/* The memory limit, in bytes, of the folder up levels above pid's tenant folder. */
static unsigned long long limit_above(pid_t pid, int up, char *dir, size_t len)
{
	return memory_file(pid, up, "memory.limit_in_bytes", "memory.max", dir, len);
}

static bool has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };

	return !syscall(SYS_capget, &hdr, data) && (data[cap / 32].effective & (1u << (cap % 32)));
}

static bool log_has(FIXTURE_DATA(mem) * self, const char *text)
{
	size_t len;
	char *log = tu_read_file(self->d.log, &len);
	bool has = log && strstr(log, text);

	free(log);
	return has;
}

/*
 * hogs[0] touches its memory (its tenant's folder holds HOG_TOUCHED_MIB),
 * then hogs[1], each queried as its owner: the first is then the largest
 * executor when a limit is met. Which of them failed within FAIL_S, with
 * its reason; -1 with what went otherwise in reason.
 */
static int hogs_touch(FIXTURE_DATA(mem) * self, const char *const *hogs, const uid_t *owners,
		      pid_t first, char *reason, size_t len)
{
	char state[64], dir[PATH_MAX];
	int s;

	if (infer_as(self, owners[0], hogs[0])) {
		snprintf(reason, len, "%s did not answer: %.400s", hogs[0], self->out);
		return -1;
	}
	for (s = 0; s < FAIL_S * 10; s++, usleep(100000))
		if (memory_file(first, 0, "memory.usage_in_bytes", "memory.current", dir,
				sizeof(dir)) >= (unsigned long long)HOG_TOUCHED_MIB << 20)
			break;
	if (s == FAIL_S * 10) {
		snprintf(reason, len, "%s's folder %.300s never held %d MiB", hogs[0], dir,
			 HOG_TOUCHED_MIB);
		return -1;
	}
	infer_as(self, owners[1], hogs[1]);
	for (int s = 0; s < FAIL_S * 10; s++, usleep(100000))
		for (int i = 0; i < 2; i++)
			if (!state_of(self, hogs[i], state, reason, len) &&
			    !strcmp(state, "failed"))
				return i;
	snprintf(reason, len, "neither hog was killed: %.400s", self->out);
	return -1;
}

/* The hog left, now within the bounds, and honest (another member's) answer and stay ready. */
static void others_answer(struct __test_metadata *_metadata, FIXTURE_DATA(mem) * self,
			  const char *hog, uid_t hog_owner, uid_t honest_owner)
{
	char state[64], reason[512];

	EXPECT_EQ(0, state_of(self, hog, state, reason, sizeof(reason)));
	EXPECT_STREQ("ready", state) TH_LOG("%s: %s", hog, reason);
	EXPECT_EQ(0, infer_as(self, hog_owner, hog)) TH_LOG("%s", self->out);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(0, infer_as(self, honest_owner, "honest")) TH_LOG("%s", self->out);
	}
	EXPECT_EQ(0, state_of(self, "honest", state, reason, sizeof(reason)));
	EXPECT_STREQ("ready", state) TH_LOG("honest: %s", reason);
}

/*
 * Two tenants of one member that each fit their own limit but not their
 * uid's together: their executors are the OOM killer's first choice and
 * colocd its last; they sit in the member's folder with the per-uid limit;
 * once both touched their memory the kernel kills one, its tenant fails
 * naming memory and the option, the other hog and the other member's
 * tenant go on answering.
 */
TEST_F_TIMEOUT(mem, two_hogs_of_one_uid__one_killed_naming_memory_other_uid_serves, 600)
{
	const char *extra[] = { "--executor-memory", "192", "--max-executor-mib-per-uid",
				STR(PER_UID_MIB), NULL };
	const char *hogs[2] = { "hostile-hog1", "hostile-hog2" };
	const uid_t owners[2] = { MEMBER, MEMBER };
	char owner[PATH_MAX], reason[512];
	pid_t pids[3];
	int failed;

	ASSERT_LT(0, own_colocd_start(&self->d, extra)) TH_LOG("colocd did not start");
	pids[0] = submit_ready(self, MEMBER, hogs[0]);
	ASSERT_LT(0, pids[0]) TH_LOG("%s", self->out);
	pids[1] = submit_ready(self, MEMBER, hogs[1]);
	ASSERT_LT(0, pids[1]) TH_LOG("%s", self->out);
	pids[2] = submit_ready(self, MEMBER2, "honest");
	ASSERT_LT(0, pids[2]) TH_LOG("%s", self->out);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(1000, oom_score_adj(pids[i])) TH_LOG("executor %d", pids[i]);
	}
	if (has_cap(CAP_SYS_RESOURCE)) {
		EXPECT_GT(0, oom_score_adj(self->d.pid));
	} else {
		TH_LOG("no CAP_SYS_RESOURCE here: colocd's oom_score_adj stays %d",
		       oom_score_adj(self->d.pid));
		EXPECT_TRUE(log_has(self, "cannot lower its oom_score_adj"));
	}
	for (int i = 0; i < 2; i++) {
		char want[32];

		EXPECT_EQ((unsigned long long)PER_UID_MIB << 20,
			  limit_above(pids[i], 1, owner, sizeof(owner)));
		snprintf(want, sizeof(want), "/uid-%d", MEMBER);
		EXPECT_NE(NULL, strstr(owner, want))
		TH_LOG("%s's memory cgroup: %s", hogs[i], owner);
	}
	EXPECT_EQ((unsigned long long)PER_UID_MIB << 20,
		  limit_above(pids[2], 1, owner, sizeof(owner)));
	/* the first hog's memory, then the second's: 320 MiB over the uid's 256 */
	failed = hogs_touch(self, hogs, owners, pids[0], reason, sizeof(reason));
	ASSERT_LE(0, failed) TH_LOG("%s", reason);
	TH_LOG("%s failed: %s", hogs[failed], reason);
	EXPECT_NE(NULL, strstr(reason, "out of memory"));
	EXPECT_NE(NULL, strstr(reason, "--max-executor-mib-per-uid"));
	others_answer(_metadata, self, hogs[!failed], owners[!failed], MEMBER2);
}

/*
 * A colocd whose tenants' and users' bounds hold each hog, but whose
 * members' part of all executors' bound (three quarters of
 * --max-executor-mib) does not hold two: one hog of each of two members.
 * The per-uid bound, an operator's above its default fifth of the part
 * (a hog's), is allowed up to the part; the members' uid-U folders sit in
 * members/ with the part's limit, in
 * colocd-PID with the whole, which colocd itself is not in; once both
 * hogs touched their memory one is killed, its tenant fails naming the
 * members' part, the other hog and a third member's honest tenant answer.
 * Main put every uid-U in colocd-PID at once and killed neither.
 */
TEST_F_TIMEOUT(mem, two_uids_within_their_bounds_over_the_members_part__one_killed_naming_it, 600)
{
	const char *extra[] = { "--executor-memory", "192", "--max-executor-mib", STR(ALL_MIB),
				"--max-executor-mib-per-uid", STR(OVERRIDE_MIB), NULL };
	const char *hogs[2] = { "hostile-hog1", "hostile-hog2" };
	const uid_t owners[2] = { MEMBER, MEMBER2 };
	char all[PATH_MAX], dir[PATH_MAX], own[PATH_MAX], want[256], reason[512];
	pid_t pids[3];
	size_t n;
	bool v1;
	int failed;

	ASSERT_LT(0, own_colocd_start(&self->d, extra)) TH_LOG("colocd did not start");
	snprintf(want, sizeof(want),
		 "%d MiB a user's (not root's) tenants together, %d MiB members' (not root's) "
		 "tenants together, %d MiB all executors together",
		 OVERRIDE_MIB, MEMBERS_MIB, ALL_MIB);
	EXPECT_TRUE(log_has(self, want)) TH_LOG("no '%s' in colocd's start-up line", want);
	for (int i = 0; i < 2; i++) {
		pids[i] = submit_ready(self, owners[i], hogs[i]);
		ASSERT_LT(0, pids[i]) TH_LOG("%s", self->out);
	}
	pids[2] = submit_ready(self, MEMBER3, "honest");
	ASSERT_LT(0, pids[2]) TH_LOG("%s", self->out);
	EXPECT_EQ((unsigned long long)ALL_MIB << 20, limit_above(pids[2], 3, all, sizeof(all)));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ((unsigned long long)OVERRIDE_MIB << 20,
			  limit_above(pids[i], 1, dir, sizeof(dir)));
		EXPECT_EQ((unsigned long long)MEMBERS_MIB << 20,
			  limit_above(pids[i], 2, dir, sizeof(dir)));
		n = strlen(dir);
		EXPECT_TRUE(n > 8 && !strcmp(dir + n - 8, "/members")) TH_LOG("%s", dir);
		EXPECT_EQ((unsigned long long)ALL_MIB << 20,
			  limit_above(pids[i], 3, dir, sizeof(dir)));
		EXPECT_STREQ(all, dir);
	}
	/* colocd's own memory (the submitted files among it) is charged outside that folder */
	memory_cgroup(self->d.pid, own, sizeof(own), &v1);
	n = strlen(all);
	EXPECT_FALSE(!strncmp(own, all, n) && (own[n] == '/' || !own[n]))
	TH_LOG("colocd is in %s, in %s", own, all);
	failed = hogs_touch(self, hogs, owners, pids[0], reason, sizeof(reason));
	ASSERT_LE(0, failed) TH_LOG("%s", reason);
	TH_LOG("%s failed: %s", hogs[failed], reason);
	snprintf(want, sizeof(want),
		 "out of memory at members' part of all executors' limit (%d MiB together, "
		 "three quarters of --max-executor-mib: the rest is root's)",
		 MEMBERS_MIB);
	EXPECT_NE(NULL, strstr(reason, want));
	others_answer(_metadata, self, hogs[!failed], owners[!failed], MEMBER3);
}

/*
 * Root's hog and a member's, each within its own bound, over all
 * executors' together: root's executor starts below the member's in the
 * OOM killer's order (oom_score_adj 500 against 1000), so although root's
 * hog touched its memory first and is the largest when the limit is met
 * (main, every executor at 1000, killed it), the member's is killed,
 * naming all executors' limit, and root's answers on, beside root's
 * honest tenant (the member's hog alone is within the members' part).
 */
TEST_F_TIMEOUT(mem, root_and_member_over_all__the_members_executor_is_killed, 600)
{
	const char *extra[] = { "--executor-memory", "192", "--max-executor-mib", STR(ROOT_ALL_MIB),
				"--max-executor-mib-per-uid", STR(OVERRIDE_MIB), NULL };
	const char *hogs[2] = { "hostile-hog1", "hostile-hog2" };
	const uid_t owners[2] = { 0, MEMBER };
	char reason[512], want[128];
	pid_t pids[3];
	int failed;

	ASSERT_LT(0, own_colocd_start(&self->d, extra)) TH_LOG("colocd did not start");
	for (int i = 0; i < 2; i++) {
		pids[i] = submit_ready(self, owners[i], hogs[i]);
		ASSERT_LT(0, pids[i]) TH_LOG("%s", self->out);
	}
	pids[2] = submit_ready(self, 0, "honest");
	ASSERT_LT(0, pids[2]) TH_LOG("%s", self->out);
	EXPECT_EQ(500, oom_score_adj(pids[0])) TH_LOG("root's executor %d", pids[0]);
	EXPECT_EQ(1000, oom_score_adj(pids[1])) TH_LOG("the member's executor %d", pids[1]);
	EXPECT_EQ(500, oom_score_adj(pids[2])) TH_LOG("root's executor %d", pids[2]);
	EXPECT_GT(500, oom_score_adj(self->d.pid));
	failed = hogs_touch(self, hogs, owners, pids[0], reason, sizeof(reason));
	ASSERT_LE(0, failed) TH_LOG("%s", reason);
	TH_LOG("%s failed: %s", hogs[failed], reason);
	EXPECT_EQ(1, failed) TH_LOG("root's hog was killed before the member's");
	snprintf(want, sizeof(want),
		 "out of memory at all executors' limit (%d MiB, --max-executor-mib)",
		 ROOT_ALL_MIB);
	EXPECT_NE(NULL, strstr(reason, want)) TH_LOG("%s", reason);
	others_answer(_metadata, self, hogs[!failed], owners[!failed], 0);
}

/*
 * name's executor (pid) touched its memory (its folder holds at least mib
 * MiB), or its tenant failed; 0, or -1 if neither within FAIL_S.
 */
static int touched_or_failed(FIXTURE_DATA(mem) * self, const char *name, pid_t pid,
			     unsigned long long mib, char *reason, size_t len)
{
	char state[64], dir[PATH_MAX];

	for (int s = 0; s < FAIL_S * 10; s++, usleep(100000)) {
		if (memory_file(pid, 0, "memory.usage_in_bytes", "memory.current", dir,
				sizeof(dir)) >= mib << 20)
			return 0;
		if (!state_of(self, name, state, reason, len) && !strcmp(state, "failed"))
			return 0;
	}
	return -1;
}

/*
 * Review s27 F3: one member's executors, each smaller than another
 * member's, at colocd's default per-uid bound. The victim (a hog, 160 MiB,
 * within its own fifth of the members' part) touched its memory; then the
 * attacker's nine nibbles (128 MiB each) touch theirs one after another.
 * A member's bound is a fifth of the part, so the attacker's own uid-U
 * folder is met first and the kernel kills its nibbles there, naming
 * --max-executor-mib-per-uid; the victim stays ready and answers. Main's
 * default was the whole part: the nibbles took members/ past its limit
 * and the kernel killed the largest executor in it, the victim's.
 */
TEST_F_TIMEOUT(mem, one_member_cannot_fill_the_members_part__anothers_executor_stays, 600)
{
	const char *extra[] = { "--max-executor-mib", STR(F3_ALL_MIB), NULL };
	char name[32], state[64], reason[512], dir[PATH_MAX], want[256];
	int own_bound = 0;
	pid_t victim, pid;

	ASSERT_LT(0, own_colocd_start(&self->d, extra)) TH_LOG("colocd did not start");
	snprintf(want, sizeof(want),
		 "%d MiB a user's (not root's) tenants together, %d MiB members' (not root's) "
		 "tenants together",
		 F3_PER_UID_MIB, F3_MEMBERS_MIB);
	EXPECT_TRUE(log_has(self, want)) TH_LOG("no '%s' in colocd's start-up line", want);
	victim = submit_ready(self, MEMBER2, "hostile-hog1");
	ASSERT_LT(0, victim) TH_LOG("%s", self->out);
	EXPECT_EQ((unsigned long long)F3_PER_UID_MIB << 20, limit_above(victim, 1, dir, sizeof(dir)));
	ASSERT_EQ(0, infer_as(self, MEMBER2, "hostile-hog1")) TH_LOG("%s", self->out);
	ASSERT_EQ(0, touched_or_failed(self, "hostile-hog1", victim, HOG_TOUCHED_MIB, reason,
				       sizeof(reason)));
	for (int i = 1; i <= F3_NIBBLES; i++) {
		snprintf(name, sizeof(name), "hostile-nibble%d", i);
		pid = submit_ready(self, MEMBER, name);
		if (!pid) { /* refused or failed: the attacker's own loss */
			TH_LOG("%s: %s", name, self->out);
			continue;
		}
		infer_as(self, MEMBER, name);
		EXPECT_EQ(0, touched_or_failed(self, name, pid, NIBBLE_TOUCHED_MIB, reason,
					       sizeof(reason)))
		TH_LOG("%s never touched its memory nor failed", name);
	}
	usleep(500000);
	for (int i = 1; i <= F3_NIBBLES; i++) {
		snprintf(name, sizeof(name), "hostile-nibble%d", i);
		if (!state_of(self, name, state, reason, sizeof(reason)) &&
		    !strcmp(state, "failed") && strstr(reason, "--max-executor-mib-per-uid"))
			own_bound++;
	}
	TH_LOG("%d of the attacker's %d nibbles killed at its own bound", own_bound, F3_NIBBLES);
	EXPECT_LT(0, own_bound);
	EXPECT_EQ(0, state_of(self, "hostile-hog1", state, reason, sizeof(reason)));
	EXPECT_STREQ("ready", state) TH_LOG("the victim: %s", reason);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(0, infer_as(self, MEMBER2, "hostile-hog1")) TH_LOG("%s", self->out);
	}
}

/* What the process in the sandbox saw (shared with the test). */
struct inside {
	int entered;
	char why[256], missing[256];
	char floor[16]; /* the score colocd had: the floor without CAP_SYS_RESOURCE */
	int lowered_before; /* 0: it could lower its score to the floor before entering */
	int open_err, write_err; /* after entering: errno of each, 0 if it could */
};

/* A capability off this process's effective, permitted and inheritable sets. */
static int drop_cap(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[cap / 32].effective &= ~(1u << (cap % 32));
	data[cap / 32].permitted &= ~(1u << (cap % 32));
	data[cap / 32].inheritable &= ~(1u << (cap % 32));
	return (int)syscall(SYS_capset, &hdr, data);
}

static int write_score(const char *val)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : errno;
}

/*
 * colocd under its unit: oom_score_adj -900 with no CAP_SYS_RESOURCE,
 * which leaves -900 the floor its executors inherit; the executor starts
 * at 1000. Before the sandbox a process so started can go back down to
 * the floor (the premise: the score alone does not hold); once in it, it
 * cannot open its oom_score_adj for writing (not dumpable: its /proc
 * files are root's; Landlock) and stays at 1000.
 */
TEST(exec_sandbox_enter__an_executor_cannot_lower_its_oom_score)
{
	struct inside *in =
		mmap(NULL, sizeof(*in), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	siginfo_t info = { 0 };
	pid_t child;
	int fd;

	if (geteuid() != 0)
		SKIP(return, "needs root to switch uids");
	ASSERT_NE(MAP_FAILED, in);
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		struct exec_sandbox sb = { .uid = SANDBOX_DEFAULT_UID_FIRST + 2,
					   .gid = SANDBOX_DEFAULT_UID_FIRST + 2,
					   .readable = { "/sys/devices/system/cpu", NULL },
					   .parent = getppid() };

		/* colocd's floor: -900 where it may set it, else what it has */
		write_score("-900");
		snprintf(in->floor, sizeof(in->floor), "%d", oom_score_adj(getpid()));
		if (drop_cap(CAP_SYS_RESOURCE) || write_score("1000"))
			_exit(2);
		in->lowered_before = write_score(in->floor);
		if (write_score("1000"))
			_exit(3);
		in->entered = exec_sandbox_enter(&sb, in->missing, sizeof(in->missing), in->why,
						 sizeof(in->why));
		if (in->entered)
			_exit(1);
		fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		in->open_err = fd < 0 ? errno : 0;
		in->write_err = fd < 0 || write(fd, in->floor, strlen(in->floor)) > 0 ? 0 : errno;
		_exit(0);
	}
	/* exited, not reaped: its score is still there to read */
	ASSERT_EQ(0, waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT));
	TH_LOG("floor %s; entered: %d %s; missing: %s; open: %s; write: %s", in->floor, in->entered,
	       in->why, in->missing, strerror(in->open_err), strerror(in->write_err));
	EXPECT_EQ(1000, oom_score_adj(child));
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	ASSERT_EQ(CLD_EXITED, info.si_code);
	ASSERT_EQ(0, info.si_status);
	EXPECT_EQ(0, in->lowered_before);
	EXPECT_EQ(0, in->entered);
	EXPECT_TRUE(in->open_err || in->write_err);
}

/* colocd with flags does not start (exit 2), and says want. */
static void expect_refused(struct __test_metadata *_metadata, const char *flags, const char *want)
{
	char bin[PATH_MAX], cmd[PATH_MAX + 256], out[4096];

	tu_bin("colocd", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd), "'%s' %s", bin, flags);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
}

/* An --executor-memory above --max-executor-mib-per-uid: colocd does not start, and says why. */
TEST(colocd__executor_memory_above_the_per_uid_bound_refused)
{
	expect_refused(_metadata, "--executor-memory 512 --max-executor-mib-per-uid 256",
		       "--executor-memory 512 MiB is above 256 MiB");
}

/*
 * A per-uid bound above the members' part of --max-executor-mib (three
 * quarters), or with none a tenant's above all's: refused with both numbers
 * and the bound that holds it.
 */
TEST(colocd__per_uid_bound_above_the_global_one_refused)
{
	expect_refused(_metadata, "--max-executor-mib-per-uid 512 --max-executor-mib 256",
		       "--max-executor-mib-per-uid 512 MiB is above 192 MiB, the members' part "
		       "of --max-executor-mib 256 (three quarters: the rest is root's): one "
		       "member could fill it");
	expect_refused(_metadata,
		       "--executor-memory 512 --max-executor-mib-per-uid 0 --max-executor-mib 256",
		       "--executor-memory 512 MiB is above 256 MiB, what all executors");
}

TEST_HARNESS_MAIN
