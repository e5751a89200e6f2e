// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The executors' uids in-process (docs/security-sandbox.md, "Executor
 * uids"): the slots of the default range claimed by their locks
 * (uid_slot.h), each once, refused with words when all are held, and
 * never through a directory or a file another user could make or hold;
 * and the NSS lookups (getpwuid, getgrgid and their _r forms, defined
 * here over libc's to count the calls and to make some uids known) made
 * at sandbox_create and on a refresh, never at a tenant's open. Root:
 * the lock files are root's, and the sandbox needs CAP_KILL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "sandbox.h"
#include "testutil.h"
#include "uid_known.h"
#include "uid_slot.h"

/* The --uid-range of the NSS tests: FIRST + 1 is a user, FIRST + 2 a group. */
#define FIRST 1879113728u /* 0x70010000: past the default range */
#define LAST (FIRST + 15)

static atomic_int lookups; /* of a uid in FIRST..LAST, by any of the four */
static atomic_uint extra_user; /* a uid made a user later; 0: none */

static bool fake_user(uid_t uid)
{
	return uid == FIRST + 1 || (extra_user && uid == extra_user);
}

static struct passwd fake_pw = { .pw_name = "uidtest", .pw_passwd = "x", .pw_dir = "/",
				 .pw_shell = "/bin/false" };
static struct group fake_gr = { .gr_name = "uidtest", .gr_passwd = "x" };

static void count(uid_t uid)
{
	if (uid >= FIRST && uid <= LAST)
		atomic_fetch_add(&lookups, 1);
}

struct passwd *getpwuid(uid_t uid)
{
	count(uid);
	fake_pw.pw_uid = uid;
	return fake_user(uid) ? &fake_pw : NULL;
}

struct group *getgrgid(gid_t gid)
{
	count(gid);
	fake_gr.gr_gid = gid;
	return gid == FIRST + 2 ? &fake_gr : NULL;
}

int getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len, struct passwd **out)
{
	(void)buf;
	(void)len;
	count(uid);
	*pw = fake_pw;
	pw->pw_uid = uid;
	*out = fake_user(uid) ? pw : NULL;
	return 0;
}

int getgrgid_r(gid_t gid, struct group *gr, char *buf, size_t len, struct group **out)
{
	(void)buf;
	(void)len;
	count(gid);
	*gr = fake_gr;
	gr->gr_gid = gid;
	*out = gid == FIRST + 2 ? gr : NULL;
	return 0;
}

FIXTURE(slots)
{
	char dir[64], locks[128];
};

FIXTURE_SETUP(slots)
{
	if (geteuid() != 0)
		SKIP(return, "needs root: the slots' locks are root's");
	snprintf(self->dir, sizeof(self->dir), "/tmp/uid-range-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->locks, sizeof(self->locks), "%s/locks", self->dir);
}

FIXTURE_TEARDOWN(slots)
{
	if (self->dir[0])
		tu_remove_tree(self->dir);
}

/*
 * Every slot once: disjoint ranges that tile the default one, in order;
 * with all held the next claim is refused and says what to do; a slot
 * let go is the next one taken.
 */
TEST_F(slots, claim__each_slot_once_then_refused_with_words)
{
	struct uid_slot s[UID_SLOT_COUNT + 1];
	struct coloc_err err = { 0 };
	uid_t next = SANDBOX_DEFAULT_UID_FIRST;

	for (int i = 0; i < UID_SLOT_COUNT; i++) {
		ASSERT_EQ(0, uid_slot_claim(self->locks, SANDBOX_DEFAULT_UID_FIRST,
					    SANDBOX_DEFAULT_UID_LAST, &s[i], &err))
		TH_LOG("slot %d: %s", i, coloc_err_str(&err));
		EXPECT_EQ(i, s[i].index);
		EXPECT_EQ(next, s[i].first);
		EXPECT_LT(s[i].first, s[i].last);
		next = s[i].last + 1;
	}
	EXPECT_EQ(SANDBOX_DEFAULT_UID_LAST + 1, next);
	EXPECT_EQ(-EUSERS, uid_slot_claim(self->locks, SANDBOX_DEFAULT_UID_FIRST,
					  SANDBOX_DEFAULT_UID_LAST, &s[UID_SLOT_COUNT], &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "held by another colocd"));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "--uid-range"));
	uid_slot_release(&s[5]);
	coloc_err_clear(&err);
	ASSERT_EQ(0, uid_slot_claim(self->locks, SANDBOX_DEFAULT_UID_FIRST,
				    SANDBOX_DEFAULT_UID_LAST, &s[5], &err));
	EXPECT_EQ(5, s[5].index);
	for (int i = 0; i < UID_SLOT_COUNT; i++)
		uid_slot_release(&s[i]);
}

/* A lock file only root could open (mode 0600), a directory 0700. */
TEST_F(slots, claim__locks_root_only)
{
	struct uid_slot s;
	struct coloc_err err = { 0 };
	char path[256];
	struct stat st;

	ASSERT_EQ(0, uid_slot_claim(self->locks, SANDBOX_DEFAULT_UID_FIRST,
				    SANDBOX_DEFAULT_UID_LAST, &s, &err));
	ASSERT_EQ(0, fstat(s.fd, &st));
	EXPECT_EQ(0u, st.st_uid);
	EXPECT_EQ(0600u, st.st_mode & 07777);
	ASSERT_EQ(0, stat(self->locks, &st));
	EXPECT_EQ(0700u, st.st_mode & 07777);
	snprintf(path, sizeof(path), "%s/slot-0", self->locks);
	EXPECT_STREQ(path, s.path);
	uid_slot_release(&s);
}

/*
 * What another user could make or hold is refused, never used: a
 * directory of theirs, a directory others may write, a link at a lock's
 * name, a lock file others may open, a directory under one they could
 * rename it out of.
 */
TEST_F(slots, claim__refuses_what_a_member_could_make_or_hold)
{
	struct uid_slot s;
	struct coloc_err err = { 0 };
	char path[320], under[256];

	ASSERT_EQ(0, mkdir(self->locks, 0700));
	ASSERT_EQ(0, chown(self->locks, 65534, 65534));
	EXPECT_EQ(-EPERM, uid_slot_claim(self->locks, SANDBOX_DEFAULT_UID_FIRST,
					 SANDBOX_DEFAULT_UID_LAST, &s, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "not root's alone"));

	ASSERT_EQ(0, chown(self->locks, 0, 0));
	ASSERT_EQ(0, chmod(self->locks, 0777));
	coloc_err_clear(&err);
	EXPECT_EQ(-EPERM, uid_slot_claim(self->locks, SANDBOX_DEFAULT_UID_FIRST,
					 SANDBOX_DEFAULT_UID_LAST, &s, &err));

	ASSERT_EQ(0, chmod(self->locks, 0700));
	snprintf(path, sizeof(path), "%s/slot-0", self->locks);
	ASSERT_EQ(0, symlink("/etc/passwd", path));
	coloc_err_clear(&err);
	EXPECT_EQ(-ELOOP, uid_slot_claim(self->locks, SANDBOX_DEFAULT_UID_FIRST,
					 SANDBOX_DEFAULT_UID_LAST, &s, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "symbolic link"));

	ASSERT_EQ(0, unlink(path));
	ASSERT_EQ(0, close(open(path, O_CREAT | O_WRONLY, 0644)));
	ASSERT_EQ(0, chmod(path, 0644));
	coloc_err_clear(&err);
	EXPECT_EQ(-EPERM, uid_slot_claim(self->locks, SANDBOX_DEFAULT_UID_FIRST,
					 SANDBOX_DEFAULT_UID_LAST, &s, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "mode 0600"));

	/* a folder of another user's above: it could rename the locks away */
	snprintf(under, sizeof(under), "%s/theirs", self->dir);
	ASSERT_EQ(0, mkdir(under, 0755));
	ASSERT_EQ(0, chown(under, 65534, 65534));
	snprintf(path, sizeof(path), "%s/locks", under);
	coloc_err_clear(&err);
	EXPECT_EQ(-EPERM, uid_slot_claim(path, SANDBOX_DEFAULT_UID_FIRST,
					 SANDBOX_DEFAULT_UID_LAST, &s, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "above"));
}

static struct sandbox *nss_sandbox(struct __test_metadata *_metadata)
{
	struct sandbox_config cfg = { .uid_first = FIRST,
				      .uid_last = LAST,
				      .no_cgroups = true,
				      .allow_weak = true };
	struct coloc_err err = { 0 };
	struct sandbox *sb = NULL;

	if (sandbox_create(&cfg, &sb, &err))
		TH_LOG("sandbox_create: %s", coloc_err_str(&err));
	return sb;
}

/*
 * The range's uids are looked up once, at sandbox_create; opening
 * tenants asks NSS nothing (on main each open asked about every
 * candidate), and skips the user FIRST + 1 and the group FIRST + 2.
 */
TEST(sandbox__tenant_open_asks_nss_nothing)
{
	struct coloc_err err = { 0 };
	struct sandbox *sb;
	int at_create;

	if (geteuid() != 0)
		SKIP(return, "needs root (CAP_KILL) for a sandbox");
	atomic_store(&lookups, 0);
	sb = nss_sandbox(_metadata);
	ASSERT_NE(NULL, sb);
	at_create = atomic_load(&lookups);
	EXPECT_LE(LAST - FIRST + 1, (unsigned int)at_create);
	for (int i = 0; i < 13; i++) {
		char name[16];
		uid_t uid;

		snprintf(name, sizeof(name), "t%d", i);
		ASSERT_EQ(0, sandbox_tenant_open(sb, name, 0, &err)) TH_LOG("%s", coloc_err_str(&err));
		uid = sandbox_tenant_uid(sb, name);
		EXPECT_NE(FIRST + 1, uid);
		EXPECT_NE(FIRST + 2, uid);
		EXPECT_LE(FIRST, uid);
		EXPECT_GE(LAST, uid);
	}
	/* 16 uids, 2 taken by NSS, 13 tenants: one left, then none */
	ASSERT_EQ(0, sandbox_tenant_open(sb, "t13", 0, &err));
	EXPECT_EQ(at_create, atomic_load(&lookups)) TH_LOG("NSS asked at a tenant's open");
	/* used up: refused in words, and a new look begins (on its thread) */
	EXPECT_EQ(-EUSERS, sandbox_tenant_open(sb, "t14", 0, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "try again shortly"));
	sandbox_free(sb);
}

/*
 * A refresh (SIGHUP, or the range used up) looks up again on a thread of
 * its own: a uid that became a user's since is skipped once it is done.
 */
TEST(known__refresh_sees_a_new_user)
{
	struct coloc_err err = { 0 };
	struct uid_known *k;
	int at_create, i;

	atomic_store(&extra_user, 0);
	atomic_store(&lookups, 0);
	ASSERT_EQ(0, uid_known_new(FIRST, LAST, &k, &err));
	at_create = atomic_load(&lookups);
	EXPECT_TRUE(uid_known_has(k, FIRST + 1));
	EXPECT_TRUE(uid_known_has(k, FIRST + 2));
	EXPECT_FALSE(uid_known_has(k, FIRST + 3));
	EXPECT_EQ(2u, uid_known_count(k));
	EXPECT_EQ(at_create, atomic_load(&lookups));
	atomic_store(&extra_user, FIRST + 3);
	ASSERT_EQ(0, uid_known_refresh(k));
	/* a state, not a time: until the thread's bitmap is taken in (a minute at most) */
	for (i = 0; i < 1200 && !uid_known_has(k, FIRST + 3); i++)
		usleep(50000);
	EXPECT_TRUE(uid_known_has(k, FIRST + 3));
	EXPECT_EQ(3u, uid_known_count(k));
	EXPECT_LT(at_create + LAST - FIRST, (unsigned int)atomic_load(&lookups));
	uid_known_free(k);
	atomic_store(&extra_user, 0);

	EXPECT_EQ(-EINVAL, uid_known_new(1000, 1000 + UID_KNOWN_MAX_SPAN, &k, &err));
}

TEST_HARNESS_MAIN
