// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What members leave each other (docs/security-owners.md, "Quotas"),
 * through a real colocd at its default quotas, with members' clients and
 * processes forked as uids of the coloc group: five members each get the
 * same tenant quota, a fifth of the members' part, so four at their quota
 * leave a fifth its own; and a member's attributed tenant goes when its
 * last process exits, its slot back in its owner's quota, while root's
 * stays until removed.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "owners_util.h"
#include "testutil.h"

#define MEMBERS 5
#define MEMBERS_PART 48 /* of colocd's 64 tenant slots; the rest are root's */
#define TRIES 20 /* past any quota colocd could default to within the part */
#define SLEEPERS (MEMBERS * TRIES + 4)
#define GONE_MS 10000

FIXTURE(share)
{
	char dir[64], sock[128], pin[128], log[128];
	pid_t colocd;
	pid_t kids[SLEEPERS];
	int nr_kids;
	char out[65536];
};

FIXTURE_SETUP(share)
{
	const char *extra[] = { NULL };

	self->colocd = 0;
	self->nr_kids = 0;
	self->dir[0] = '\0';
	if (geteuid() != 0)
		SKIP(return, "needs root to run colocd and change uid");
	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no group " COLOC_GROUP " (tools/deps.sh makes it)");
	ASSERT_EQ(0, tu_mount_bpffs());
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-owners-share-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_EQ(0, chmod(self->dir, 0755)); /* the members reach the socket */
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-owners-share-%d", getpid());
	self->colocd = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	ASSERT_LT(0, self->colocd) TH_LOG("colocd did not start");
}

FIXTURE_TEARDOWN(share)
{
	for (int i = 0; i < self->nr_kids; i++)
		owners_reap(self->kids[i]);
	if (self->colocd > 0)
		tu_stop_colocd(self->colocd);
	if (self->dir[0] && tu_remove_tree(self->dir))
		TH_LOG("could not remove %s", self->dir);
}

/* One request line as uid (0: root) with the coloc group; the answer, parsed (put it). */
static struct json_object *request_as(FIXTURE_DATA(share) * self, uid_t uid, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static struct json_object *request_as(FIXTURE_DATA(share) * self, uid_t uid, const char *fmt, ...)
{
	struct json_object *o;
	va_list ap;

	va_start(ap, fmt);
	o = owners_vrequest_as(self->sock, uid, 0, self->out, sizeof(self->out), fmt, ap);
	va_end(ap);
	return o;
}

/* A new process of uid's attributed to uid's tenant name, as uid asks: the answer (put it). */
static struct json_object *add_as(FIXTURE_DATA(share) * self, uid_t uid, const char *name)
{
	pid_t pid = owners_sleeper_as(uid, uid);

	if (pid <= 0 || self->nr_kids >= SLEEPERS)
		return NULL;
	self->kids[self->nr_kids++] = pid;
	return request_as(self, uid, "{\"cmd\":\"tenant-add\",\"name\":\"%s\",\"pids\":[%d]}\n",
			  name, pid);
}

/* Tenants uid adds, fill0, fill1, ..., until one is refused (its reason in why): how many. */
static int fill(FIXTURE_DATA(share) * self, uid_t uid, char *why, size_t len)
{
	char name[32];
	int n;

	why[0] = '\0';
	for (n = 0; n < TRIES; n++) {
		struct json_object *o;
		bool ok;

		snprintf(name, sizeof(name), "fill%d", n);
		o = add_as(self, uid, name);
		ok = owners_is_ok(o);
		if (!ok)
			snprintf(why, len, "%s", o ? owners_error_of(o) : "no answer");
		json_object_put(o);
		if (!ok)
			break;
	}
	return n;
}

/* How many attributed tenants uid's "tenants" lists as uid's own. */
static int tenants_of(FIXTURE_DATA(share) * self, uid_t uid)
{
	struct json_object *o = request_as(self, uid, "{\"cmd\":\"tenants\"}\n"), *arr;
	int n = 0;

	if (!o || !json_object_object_get_ex(o, "tenants", &arr)) {
		json_object_put(o);
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(arr); i++)
		n += json_object_get_int64(json_object_object_get(json_object_array_get_idx(arr, i),
								  "owner")) == (int64_t)uid;
	json_object_put(o);
	return n;
}

/* colocd --help with every run of white space made one blank (its lines wrap anywhere). */
static void help_text(char *out, size_t len)
{
	char bin[PATH_MAX], cmd[PATH_MAX + 32];
	size_t at = 0;

	tu_bin("colocd", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd), "'%s' --help", bin);
	tu_run(cmd, out, len);
	for (size_t i = 0; out[i]; i++)
		if (!isspace((unsigned char)out[i]) || (at && out[at - 1] != ' '))
			out[at++] = isspace((unsigned char)out[i]) ? ' ' : out[i];
	out[at] = '\0';
}

/*
 * colocd's default --max-tenants-per-uid: five members adding tenants
 * until refused each get the same number, at least one, and five such
 * quotas fit in the members' part (16 a member, main's, let four fill
 * it and left the fifth none); the refusal names the option, and --help
 * says the default and why.
 */
TEST_F_TIMEOUT(share, tenant_add__four_members_at_their_default_quota_leave_a_fifth_its_own, 300)
{
	char why[512], want[64];
	int got[MEMBERS];

	for (int m = 0; m < MEMBERS; m++) {
		got[m] = fill(self, MEMBER + m, why, sizeof(why));
		TH_LOG("uid %d: %d tenants, then: %s", MEMBER + m, got[m], why);
	}
	ASSERT_LT(0, got[0]);
	EXPECT_GE(MEMBERS_PART, MEMBERS * got[0]);
	for (int m = 1; m < MEMBERS; m++) {
		EXPECT_EQ(got[0], got[m]) TH_LOG("uid %d", MEMBER + m);
	}
	EXPECT_NE(NULL, strstr(why, "colocd --max-tenants-per-uid raises it")) TH_LOG("%s", why);
	help_text(self->out, sizeof(self->out));
	snprintf(want, sizeof(want), "(default %d)", got[0]);
	EXPECT_NE(NULL, strstr(self->out, want)) TH_LOG("no '%s' in colocd --help", want);
	EXPECT_NE(NULL, strstr(self->out, "four members at their quota leave a fifth its own"));
}

/*
 * A member at its quota whose processes all exit: its tenants go (its
 * client never removes them), and it may add its quota again; root's
 * tenant whose process exited stays until removed.
 */
TEST_F_TIMEOUT(share, tenant_add__a_members_tenants_go_with_their_processes, 300)
{
	char why[512];
	struct json_object *o;
	int quota, left = -1;

	o = add_as(self, 0, "rootsvc");
	ASSERT_TRUE(owners_is_ok(o)) TH_LOG("%s", owners_error_of(o));
	json_object_put(o);
	quota = fill(self, MEMBER, why, sizeof(why));
	ASSERT_LT(0, quota);
	ASSERT_GT(TRIES, quota) TH_LOG("no quota met");
	EXPECT_EQ(quota, tenants_of(self, MEMBER));
	/* every process exits, root's too; the test's other sleepers are none */
	for (int i = 0; i < self->nr_kids; i++)
		owners_reap(self->kids[i]);
	self->nr_kids = 0;
	for (int waited = 0; waited < GONE_MS; waited += 50, usleep(50000)) {
		left = tenants_of(self, MEMBER);
		if (!left)
			break;
	}
	EXPECT_EQ(0, left) TH_LOG("uid %d's tenants stayed after their processes exited", MEMBER);
	EXPECT_EQ(1, tenants_of(self, 0)) TH_LOG("root's tenant went with its process");
	EXPECT_EQ(quota, fill(self, MEMBER, why, sizeof(why))) TH_LOG("%s", why);
}

TEST_HARNESS_MAIN
