// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tenants have owners (docs/security-owners.md), through a real colocd's
 * socket: a member of group coloc (a forked child that drops to an unused
 * uid) is refused another user's tenant and sees no file names, and the
 * tenant quota is colocd's option. Without a socket: owners_test.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "owners_util.h"
#include "testutil.h"

static char cache_dir[64]; /* made once, shared by the forked tests */

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("owners-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(wire)
{
	char dir[64], sock[128], pin[128], log[128], model[PATH_MAX + 64], colocctl[512];
	pid_t colocd, kids[2];
	char out[16384];
};

FIXTURE_SETUP(wire)
{
	const char *extra[] = { "--cache-dir", cache_dir, "--max-tenants-per-uid", "1", NULL };
	char out[4096], cmd[3 * (PATH_MAX + 64) + 32], real[PATH_MAX];

	self->colocd = 0;
	memset(self->kids, 0, sizeof(self->kids));
	self->dir[0] = '\0';
	if (geteuid() != 0)
		SKIP(return, "needs root to run colocd and change uid");
	if (!getgrnam(COLOC_GROUP))
		SKIP(return, "no group " COLOC_GROUP " (tools/deps.sh makes it)");
	if (tu_repo_realpath("models/mobilenet_v2.model", real, out, sizeof(out)))
		SKIP(return, "%.900s", out);
	ASSERT_NE(0, cache_dir[0]);
	ASSERT_EQ(0, tu_mount_bpffs());
	ASSERT_EQ(0, tu_quick_profile(real, cache_dir, out, sizeof(out))) TH_LOG("%s", out);
	tu_bin("colocctl", self->colocctl, sizeof(self->colocctl));
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-owners-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	/* a member must reach the socket, and read the model it submits */
	ASSERT_EQ(0, chmod(self->dir, 0755));
	snprintf(self->model, sizeof(self->model), "%s/mobilenet_v2.model", self->dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0644 '%s'", real, self->model,
		 self->model);
	ASSERT_EQ(0, system(cmd));
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-owners-wire-%d", getpid());
	/*
	 * colocd as under its unit (dist/colocd.service.in): no CAP_SYS_PTRACE,
	 * so it places a member's process without ptrace access to it.
	 */
	ASSERT_EQ(0, prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0));
	self->colocd = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	ASSERT_LT(0, self->colocd) TH_LOG("colocd did not start");
}

FIXTURE_TEARDOWN(wire)
{
	for (int i = 0; i < 2; i++)
		owners_reap(self->kids[i]);
	if (self->colocd > 0)
		tu_stop_colocd(self->colocd);
	if (self->dir[0]) {
		if (tu_remove_tree(self->dir))
			TH_LOG("could not remove %s", self->dir);
	}
}

/*
 * As uid (0: root) with the coloc group: one request line, then len bytes
 * of payload (none when 0); the answer line, parsed (put it).
 */
static struct json_object *request_as(FIXTURE_DATA(wire) * self, uid_t uid, size_t len,
				      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static struct json_object *request_as(FIXTURE_DATA(wire) * self, uid_t uid, size_t len,
				      const char *fmt, ...)
{
	struct json_object *o;
	va_list ap;

	va_start(ap, fmt);
	o = owners_vrequest_as(self->sock, uid, len, self->out, sizeof(self->out), fmt, ap);
	va_end(ap);
	return o;
}

/* colocctl ARGS... as uid (0: root) with the coloc group (tu_colocctl_as); its exit status. */
static int colocctl_as(FIXTURE_DATA(wire) * self, uid_t uid, const char *const *args)
{
	return tu_colocctl_as(self->colocctl, self->sock, uid, args, self->out, sizeof(self->out));
}

static int submit_as(FIXTURE_DATA(wire) * self, uid_t uid, const char *name)
{
	const char *args[] = { "submit", name, self->model, "--qos-ms", "60000", NULL };

	return colocctl_as(self, uid, args);
}

/* uid's status of name as uid writes it (put it), or NULL. */
static struct json_object *status_of(FIXTURE_DATA(wire) * self, uid_t uid, const char *name)
{
	const char *colon = strchr(name, ':');
	struct json_object *o =
		request_as(self, uid, 0, "{\"cmd\":\"status\",\"name\":\"%s\"}\n", name);
	struct json_object *t = json_object_get(owners_entry(o, colon ? colon + 1 : name));

	json_object_put(o);
	return t;
}

static bool wait_ready(FIXTURE_DATA(wire) * self, uid_t uid, const char *name)
{
	for (int waited = 0; waited < READY_MS; waited += 50) {
		struct json_object *t = status_of(self, uid, name), *st;
		bool ready = t && json_object_object_get_ex(t, "state", &st) &&
			     !strcmp(json_object_get_string(st), "ready");

		json_object_put(t);
		if (ready)
			return true;
		usleep(50000);
	}
	return false;
}

static int64_t number_of(struct json_object *t, const char *key)
{
	return json_object_get_int64(json_object_object_get(t, key));
}

/* An infer of in_bytes zeros by uid into name as uid writes it: whether it was answered ok. */
static bool infer_as(FIXTURE_DATA(wire) * self, uid_t uid, const char *name, size_t in_bytes)
{
	struct json_object *o = request_as(
		self, uid, in_bytes,
		"{\"cmd\":\"infer\",\"tenant\":\"%s\",\"tag\":1,\"input_bytes\":%zu}\n", name,
		in_bytes);
	bool ok = owners_is_ok(o);

	json_object_put(o);
	return ok;
}

TEST_F_TIMEOUT(wire, another_users_remove_restart_infer_status_tenant_remove__refused_it_serves_on,
	       600)
{
	struct json_object *t = NULL, *o;
	size_t in_bytes;
	const char *refused[] = {
		"{\"cmd\":\"remove\",\"name\":\"rootsvc\"}\n",
		"{\"cmd\":\"restart\",\"name\":\"rootsvc\"}\n",
		"{\"cmd\":\"status\",\"name\":\"rootsvc\"}\n",
		"{\"cmd\":\"tenant-remove\",\"name\":\"rootsvc\"}\n",
	};

	ASSERT_EQ(0, submit_as(self, 0, "rootsvc")) TH_LOG("%s", self->out);
	ASSERT_TRUE(wait_ready(self, 0, "rootsvc"));
	t = status_of(self, 0, "rootsvc");
	ASSERT_NE(NULL, t);
	in_bytes = (size_t)json_object_get_int64(json_object_object_get(t, "input_bytes"));
	json_object_put(t);
	ASSERT_LT(0, in_bytes);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		o = request_as(self, MEMBER, 0, "%s", refused[i]);
		EXPECT_FALSE(owners_is_ok(o)) TH_LOG("%s -> %s", refused[i], self->out);
		/* the member's rootsvc is its own, and it has none */
		EXPECT_NE(NULL, strstr(owners_error_of(o), "64990:rootsvc")) TH_LOG("%s", self->out);
		EXPECT_NE(NULL, strstr(owners_error_of(o), "no tenant"))
		TH_LOG("%s -> %s", refused[i], self->out);
		json_object_put(o);
	}
	o = request_as(self, MEMBER, in_bytes,
		       "{\"cmd\":\"infer\",\"tenant\":\"rootsvc\",\"tag\":7,\"input_bytes\":%zu}\n",
		       in_bytes);
	EXPECT_FALSE(owners_is_ok(o)) TH_LOG("%s", self->out);
	EXPECT_STREQ("rejected", json_object_get_string(json_object_object_get(o, "status")));
	EXPECT_STREQ("no tenant 64990:rootsvc", owners_error_of(o));
	json_object_put(o);
	/* none of it reached the tenant: ready, nothing offered or rejected, and it serves */
	t = status_of(self, 0, "rootsvc");
	ASSERT_NE(NULL, t);
	EXPECT_STREQ("ready", json_object_get_string(json_object_object_get(t, "state")));
	EXPECT_EQ(0, json_object_get_int64(json_object_object_get(t, "offered")));
	EXPECT_EQ(0, json_object_get_int64(json_object_object_get(t, "rejected")));
	json_object_put(t);
	o = request_as(self, 0, in_bytes,
		       "{\"cmd\":\"infer\",\"tenant\":\"rootsvc\",\"tag\":8,\"input_bytes\":%zu}\n",
		       in_bytes);
	EXPECT_TRUE(owners_is_ok(o)) TH_LOG("%s", self->out);
	json_object_put(o);
}

TEST_F_TIMEOUT(wire, list_status_tenants_as_another_user__hide_file_names_and_details, 600)
{
	const char *cmds[] = { "{\"cmd\":\"list\"}\n", "{\"cmd\":\"status\"}\n",
			       "{\"cmd\":\"tenants\"}\n", "{\"cmd\":\"signals\"}\n" };
	const char *ls[] = { "list", NULL };
	struct json_object *o, *t;

	ASSERT_EQ(0, submit_as(self, 0, "rootsvc")) TH_LOG("%s", self->out);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		o = request_as(self, MEMBER, 0, "%s", cmds[i]);
		ASSERT_TRUE(owners_is_ok(o)) TH_LOG("%s -> %s", cmds[i], self->out);
		EXPECT_EQ(NULL, strstr(self->out, "mobilenet")) TH_LOG("%s", self->out);
		EXPECT_EQ(NULL, strstr(self->out, self->dir)) TH_LOG("%s", self->out);
		t = owners_entry(o, "rootsvc");
		/* the serving tenant; tenants and signals list its executors' attribution */
		ASSERT_NE(NULL, t) TH_LOG("%s -> %s", cmds[i], self->out);
		EXPECT_EQ(0, json_object_get_int(json_object_object_get(t, "owner")));
		EXPECT_FALSE(owners_has(t, "model"));
		EXPECT_FALSE(owners_has(t, "qos_ms"));
		EXPECT_FALSE(owners_has(t, "pid"));
		EXPECT_FALSE(owners_has(t, "pids"));
		json_object_put(o);
	}
	/* root sees the file */
	o = request_as(self, 0, 0, "{\"cmd\":\"status\"}\n");
	EXPECT_NE(NULL, strstr(self->out, "mobilenet")) TH_LOG("%s", self->out);
	json_object_put(o);
	/* colocctl prints the member's view */
	EXPECT_EQ(0, colocctl_as(self, MEMBER, ls)) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "rootsvc")) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "uid 0's")) TH_LOG("%s", self->out);
}

TEST_F_TIMEOUT(wire, tenant_add__member_gets_its_own_process_not_roots_nor_a_root_cgroup, 600)
{
	struct json_object *o;
	char cg[256], mnt[200];

	self->kids[0] = owners_sleeper_as(0, 0);
	self->kids[1] = owners_sleeper_as(MEMBER, MEMBER);
	ASSERT_LT(0, self->kids[0]);
	ASSERT_LT(0, self->kids[1]);
	o = request_as(self, MEMBER, 0, "{\"cmd\":\"tenant-add\",\"name\":\"t\",\"pids\":[%d]}\n",
		       self->kids[0]);
	EXPECT_FALSE(owners_is_ok(o)) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(owners_error_of(o), "belongs to another user")) TH_LOG("%s", self->out);
	json_object_put(o);
	/* a machine without cgroup v2 has no cgroup to refuse (the no-socket test says SKIP) */
	if (!owners_cgroup2_dir(mnt, sizeof(mnt))) {
		snprintf(cg, sizeof(cg), "%s/coloc-owners-wire-%d", mnt, getpid());
		ASSERT_EQ(0, mkdir(cg, 0755));
		o = request_as(self, MEMBER, 0,
			       "{\"cmd\":\"tenant-add\",\"name\":\"t\",\"cgroup\":\"%s\"}\n", cg);
		EXPECT_FALSE(owners_is_ok(o)) TH_LOG("%s", self->out);
		EXPECT_NE(NULL, strstr(owners_error_of(o), "belongs to another user"))
		TH_LOG("%s", self->out);
		json_object_put(o);
		rmdir(cg);
	}
	o = request_as(self, MEMBER, 0, "{\"cmd\":\"tenant-add\",\"name\":\"t\",\"pids\":[%d]}\n",
		       self->kids[1]);
	EXPECT_TRUE(owners_is_ok(o)) TH_LOG("%s", self->out);
	json_object_put(o);
	/* the colocd option's quota: 1 */
	o = request_as(self, MEMBER, 0, "{\"cmd\":\"tenant-add\",\"name\":\"t2\",\"pids\":[%d]}\n",
		       self->kids[1]);
	EXPECT_FALSE(owners_is_ok(o)) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(owners_error_of(o), "--max-tenants-per-uid")) TH_LOG("%s", self->out);
	json_object_put(o);
	/* root attributes its own process */
	o = request_as(self, 0, 0, "{\"cmd\":\"tenant-add\",\"name\":\"r\",\"pids\":[%d]}\n",
		       self->kids[0]);
	EXPECT_TRUE(owners_is_ok(o)) TH_LOG("%s", self->out);
	json_object_put(o);
}

/*
 * Review s24 LOW 1: root's tenant-add NAME is root's own tenant NAME, made
 * if need be, never a member's that took the name first (main put root's
 * process in the member's tenant, its pids and counters shown to the member).
 */
TEST_F_TIMEOUT(wire, tenant_add__roots_bare_name_is_roots_own_not_a_members, 600)
{
	struct json_object *o, *t, *pids;
	char pid[16];

	self->kids[0] = owners_sleeper_as(0, 0);
	self->kids[1] = owners_sleeper_as(MEMBER, MEMBER);
	ASSERT_LT(0, self->kids[0]);
	ASSERT_LT(0, self->kids[1]);
	o = request_as(self, MEMBER, 0, "{\"cmd\":\"tenant-add\",\"name\":\"batch\",\"pids\":[%d]}\n",
		       self->kids[1]);
	ASSERT_TRUE(owners_is_ok(o)) TH_LOG("%s", self->out);
	json_object_put(o);
	o = request_as(self, 0, 0, "{\"cmd\":\"tenant-add\",\"name\":\"batch\",\"pids\":[%d]}\n",
		       self->kids[0]);
	ASSERT_TRUE(owners_is_ok(o)) TH_LOG("%s", self->out);
	json_object_put(o);
	snprintf(pid, sizeof(pid), "%d", self->kids[0]);
	o = request_as(self, MEMBER, 0, "{\"cmd\":\"tenants\"}\n");
	ASSERT_TRUE(owners_is_ok(o)) TH_LOG("%s", self->out);
	t = owners_entry(o, "batch");
	ASSERT_NE(NULL, t) TH_LOG("%s", self->out);
	EXPECT_EQ(MEMBER, number_of(t, "owner")) TH_LOG("%s", self->out);
	pids = json_object_object_get(t, "pids");
	ASSERT_NE(NULL, pids) TH_LOG("%s", self->out);
	EXPECT_EQ(1, (int)json_object_array_length(pids)) TH_LOG("%s", self->out);
	EXPECT_EQ(NULL, strstr(json_object_to_json_string(pids), pid)) TH_LOG("%s", self->out);
	json_object_put(o);
	/* root's bare name now means its own batch: removed, the member's kept */
	o = request_as(self, 0, 0, "{\"cmd\":\"tenant-remove\",\"name\":\"batch\"}\n");
	EXPECT_TRUE(owners_is_ok(o)) TH_LOG("%s", self->out);
	json_object_put(o);
	o = request_as(self, MEMBER, 0, "{\"cmd\":\"tenants\"}\n");
	t = owners_entry(o, "batch");
	ASSERT_NE(NULL, t) TH_LOG("the member's batch is gone: %s", self->out);
	EXPECT_EQ(MEMBER, number_of(t, "owner")) TH_LOG("%s", self->out);
	json_object_put(o);
}

TEST_F_TIMEOUT(wire, submit_quota__members_second_tenant_refused_root_unaffected, 600)
{
	ASSERT_EQ(0, submit_as(self, MEMBER, "m1")) TH_LOG("%s", self->out);
	EXPECT_EQ(1, submit_as(self, MEMBER, "m2")) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "--max-tenants-per-uid")) TH_LOG("%s", self->out);
	EXPECT_EQ(0, submit_as(self, 0, "r1")) TH_LOG("%s", self->out);
	EXPECT_EQ(0, submit_as(self, 0, "r2")) TH_LOG("%s", self->out);
	/* the member removes its own */
	{
		const char *rm[] = { "remove", "m1", NULL };

		EXPECT_EQ(0, colocctl_as(self, MEMBER, rm)) TH_LOG("%s", self->out);
	}
}

/* How many pids uid's "tenants" lists for its tenant name (-1: none listed), the first in pid. */
static int pids_listed(FIXTURE_DATA(wire) * self, uid_t uid, const char *name, pid_t *pid)
{
	struct json_object *o = request_as(self, uid, 0, "{\"cmd\":\"tenants\"}\n");
	struct json_object *t = owners_entry(o, name), *pids;
	int n = t && json_object_object_get_ex(t, "pids", &pids) ?
			(int)json_object_array_length(pids) :
			-1;

	if (pid)
		*pid = n > 0 ? (pid_t)json_object_get_int64(json_object_array_get_idx(pids, 0)) : 0;
	json_object_put(o);
	return n;
}

static bool wait_failed(FIXTURE_DATA(wire) * self, uid_t uid, const char *name)
{
	for (int waited = 0; waited < READY_MS; waited += 50, usleep(50000)) {
		struct json_object *t = status_of(self, uid, name), *st;
		bool failed = t && json_object_object_get_ex(t, "state", &st) &&
			      !strcmp(json_object_get_string(st), "failed");

		json_object_put(t);
		if (failed)
			return true;
	}
	return false;
}

/*
 * The attributed tenant colocd made for a member's serving tenant holds
 * its executors and its slot (s26 attack3's LOW lead): the member's
 * tenant-remove of it is refused, naming the remove that takes both, and
 * its executors stay measured, a restart's too; main removed it, and the
 * member's serving tenant then ran unmeasured, its slot free for another
 * tenant-add past the quota of 1.
 */
TEST_F_TIMEOUT(wire, tenant_remove__a_members_serving_tenants_attribution_refused, 600)
{
	struct json_object *o;
	pid_t executor;

	ASSERT_EQ(0, submit_as(self, MEMBER, "m")) TH_LOG("%s", self->out);
	ASSERT_TRUE(wait_ready(self, MEMBER, "m"));
	EXPECT_LT(0, pids_listed(self, MEMBER, "m", NULL));
	o = request_as(self, MEMBER, 0, "{\"cmd\":\"tenant-remove\",\"name\":\"m\"}\n");
	EXPECT_FALSE(owners_is_ok(o)) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(owners_error_of(o), "holds the executors of serving tenant 'm'"))
	TH_LOG("%s", self->out);
	json_object_put(o);
	ASSERT_LT(0, pids_listed(self, MEMBER, "m", &executor))
	TH_LOG("the executors went unmeasured");
	/* its executor killed, the tenant failed and restarted: the new executor joins it */
	ASSERT_EQ(0, kill(executor, SIGKILL));
	ASSERT_TRUE(wait_failed(self, MEMBER, "m"));
	o = request_as(self, MEMBER, 0, "{\"cmd\":\"restart\",\"name\":\"m\"}\n");
	EXPECT_TRUE(owners_is_ok(o)) TH_LOG("%s", self->out);
	json_object_put(o);
	ASSERT_TRUE(wait_ready(self, MEMBER, "m"));
	EXPECT_LT(0, pids_listed(self, MEMBER, "m", NULL)) TH_LOG("a restart left it unmeasured");
}

/*
 * A member's names are its own (review s22 MEDIUM 1): two members each
 * have a tenant "mobilenet" and each one's queries go to its own; root's
 * bare name, with two owners, is an error naming them, and UID:NAME
 * reaches either. Main refused the second submit ("exists").
 */
TEST_F_TIMEOUT(wire, names__two_members_one_name_each_serve_their_own_root_says_which, 600)
{
	const char *rm[] = { "remove", "64991:mobilenet", NULL };
	struct json_object *t, *o;
	size_t in_bytes;

	ASSERT_EQ(0, submit_as(self, MEMBER, "mobilenet")) TH_LOG("%s", self->out);
	ASSERT_EQ(0, submit_as(self, MEMBER2, "mobilenet")) TH_LOG("%s", self->out);
	ASSERT_TRUE(wait_ready(self, MEMBER, "mobilenet"));
	ASSERT_TRUE(wait_ready(self, MEMBER2, "mobilenet"));
	t = status_of(self, MEMBER, "mobilenet");
	ASSERT_NE(NULL, t);
	EXPECT_EQ(MEMBER, number_of(t, "owner"));
	in_bytes = (size_t)number_of(t, "input_bytes");
	json_object_put(t);
	ASSERT_LT(0, in_bytes);
	EXPECT_TRUE(infer_as(self, MEMBER, "mobilenet", in_bytes)) TH_LOG("%s", self->out);
	for (int i = 0; i < 2; i++)
		EXPECT_TRUE(infer_as(self, MEMBER2, "mobilenet", in_bytes)) TH_LOG("%s", self->out);
	t = status_of(self, MEMBER, "mobilenet");
	EXPECT_EQ(1, number_of(t, "offered"));
	json_object_put(t);
	t = status_of(self, MEMBER2, "mobilenet");
	EXPECT_EQ(MEMBER2, number_of(t, "owner"));
	EXPECT_EQ(2, number_of(t, "offered"));
	json_object_put(t);
	/* root: the bare name is two tenants' */
	o = request_as(self, 0, 0, "{\"cmd\":\"status\",\"name\":\"mobilenet\"}\n");
	EXPECT_FALSE(owners_is_ok(o)) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(owners_error_of(o), "2 tenants are named 'mobilenet' (owners "))
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(owners_error_of(o), "name one as UID:NAME")) TH_LOG("%s", self->out);
	json_object_put(o);
	t = status_of(self, 0, "64991:mobilenet");
	ASSERT_NE(NULL, t) TH_LOG("%s", self->out);
	EXPECT_EQ(MEMBER2, number_of(t, "owner"));
	EXPECT_EQ(2, number_of(t, "offered"));
	json_object_put(t);
	EXPECT_TRUE(infer_as(self, 0, "64990:mobilenet", in_bytes)) TH_LOG("%s", self->out);
	/* root's colocctl removes the one it names; the other serves on */
	EXPECT_EQ(0, colocctl_as(self, 0, rm)) TH_LOG("%s", self->out);
	EXPECT_EQ(NULL, status_of(self, MEMBER2, "mobilenet"));
	t = status_of(self, 0, "mobilenet");
	ASSERT_NE(NULL, t) TH_LOG("the one left is root's bare name's: %s", self->out);
	EXPECT_EQ(MEMBER, number_of(t, "owner"));
	EXPECT_EQ(2, number_of(t, "offered"));
	json_object_put(t);
}

/*
 * A member without a tenant "mobilenet" reaches none by that name, nor
 * another's by UID:NAME: remove, restart, status, infer and tenant-remove
 * fail, and the owner's tenant is untouched; list shows it by name and
 * owner only. Main: the name was the other's, refused "belongs to another user".
 */
TEST_F_TIMEOUT(wire, names__a_member_reaches_no_other_members_tenant_of_its_name, 600)
{
	const char *names[] = { "mobilenet", "64990:mobilenet" };
	const char *cmds[] = { "remove", "restart", "status", "tenant-remove" };
	struct json_object *t, *o;
	size_t in_bytes;

	ASSERT_EQ(0, submit_as(self, MEMBER, "mobilenet")) TH_LOG("%s", self->out);
	ASSERT_TRUE(wait_ready(self, MEMBER, "mobilenet"));
	t = status_of(self, MEMBER, "mobilenet");
	ASSERT_NE(NULL, t);
	in_bytes = (size_t)number_of(t, "input_bytes");
	json_object_put(t);
	for (size_t n = 0; n < 2; n++) {
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			o = request_as(self, MEMBER2, 0, "{\"cmd\":\"%s\",\"name\":\"%s\"}\n",
				       cmds[i], names[n]);
			EXPECT_FALSE(owners_is_ok(o)) TH_LOG("%s %s -> %s", cmds[i], names[n], self->out);
			EXPECT_NE(NULL, strstr(owners_error_of(o), n ? "a member names its own tenants only" :
								       "no tenant"))
			TH_LOG("%s %s -> %s", cmds[i], names[n], self->out);
			json_object_put(o);
		}
		EXPECT_FALSE(infer_as(self, MEMBER2, names[n], in_bytes)) TH_LOG("%s", self->out);
	}
	o = request_as(self, MEMBER2, 0, "{\"cmd\":\"list\"}\n");
	t = owners_entry(o, "mobilenet");
	ASSERT_NE(NULL, t) TH_LOG("%s", self->out);
	EXPECT_EQ(MEMBER, number_of(t, "owner"));
	EXPECT_FALSE(owners_has(t, "pid"));
	EXPECT_FALSE(owners_has(t, "qos_ms"));
	json_object_put(o);
	t = status_of(self, MEMBER, "mobilenet");
	ASSERT_NE(NULL, t);
	EXPECT_STREQ("ready", json_object_get_string(json_object_object_get(t, "state")));
	EXPECT_EQ(0, number_of(t, "offered"));
	json_object_put(t);
}

TEST_HARNESS_MAIN
