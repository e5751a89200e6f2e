// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tenants have owners (docs/security-owners.md), without a socket: the
 * tenant table (daemon/tenants.c) of a real started daemon core, fed real
 * processes running as root and as a second uid, and cgroup v2 directories
 * owned by each; the control handler's views as each uid; and the serving
 * core's ownership and per-uid quotas with real executors. Through a real
 * colocd's socket: owners_wire_test.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "coloc/shm.h"
#include "colocd.h"
#include "control.h"
#include "serving.h"
#include "serving_internal.h"
#include "owners_util.h"
#include "serving_util.h"
#include "testutil.h"

#define QOS_MS 60000 /* nothing is dropped on a loaded machine */

static char cache_dir[64]; /* made once, shared by the forked tests */

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("owners-test", cache_dir, sizeof(cache_dir));
}

static struct json_object *parse(char *resp)
{
	struct json_object *o = resp ? json_tokener_parse(resp) : NULL;

	free(resp);
	return o;
}

/* ---- the tenant table and the handler, no socket ------------------------------------ */

FIXTURE(owners)
{
	struct colocd d;
	struct loop *loop;
	pid_t kids[4];
	char cgroup[PATH_MAX];
};

FIXTURE_SETUP(owners)
{
	struct colocd_config cfg = {
		.sample_hz = 1000, .window_ms = 10, .span_ms = 1000, .max_tenants_per_uid = 2
	};
	struct coloc_err err = { 0 };
	static char pin[128];

	memset(self->kids, 0, sizeof(self->kids));
	self->cgroup[0] = '\0';
	if (geteuid() != 0)
		SKIP(return, "needs root to load the sensor and change uid");
	ASSERT_EQ(0, tu_mount_bpffs());
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/coloc-owners-test-%d", getpid());
	cfg.pin_dir = pin;
	ASSERT_EQ(0, loop_new(&self->loop, &err));
	ASSERT_EQ(0, colocd_start(&self->d, &cfg, self->loop, &err))
	TH_LOG("colocd_start: %s", coloc_err_str(&err));
}

FIXTURE_TEARDOWN(owners)
{
	for (int i = 0; i < 4; i++)
		owners_reap(self->kids[i]);
	colocd_stop(&self->d);
	loop_free(self->loop);
	if (self->cgroup[0])
		rmdir(self->cgroup);
}

static int add(FIXTURE_DATA(owners) * self, const char *name, uid_t uid, pid_t pid,
	       const char *cgroup, struct coloc_err *err)
{
	__s64 pids[1] = { pid };
	struct tenants_add_req req = { .name = name,
				       .pids = pid ? pids : NULL,
				       .nr_pids = pid ? 1 : 0,
				       .cgroup = cgroup,
				       .uid = uid };
	struct tenant *t;

	coloc_err_clear(err);
	return tenants_add(&self->d.tenants, &req, &t, err);
}

static struct json_object *handle_as(FIXTURE_DATA(owners) * self, uid_t uid, const char *line)
{
	return parse(control_handle(&self->d, NULL, uid, line, strlen(line), coloc_now_ns()));
}

TEST_F(owners, tenants_add__refuses_another_users_process)
{
	struct coloc_err err = { 0 };

	self->kids[0] = owners_sleeper_as(0, 0);
	ASSERT_LT(0, self->kids[0]);
	EXPECT_EQ(-EPERM, add(self, "t", MEMBER, self->kids[0], NULL, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "belongs to another user"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(NULL, tenants_find(&self->d.tenants, "t"));
	/* root takes anyone's */
	EXPECT_EQ(0, add(self, "t", 0, self->kids[0], NULL, &err))
	TH_LOG("%s", coloc_err_str(&err));
}

TEST_F(owners, tenants_add__takes_the_callers_own_process_only_real_and_effective)
{
	struct coloc_err err = { 0 };
	struct tenant *t;

	self->kids[0] = owners_sleeper_as(MEMBER, MEMBER);
	/* real uid the member's, effective root's: a set-uid program it started */
	self->kids[1] = owners_sleeper_as(MEMBER, 0);
	self->kids[2] = owners_sleeper_as(MEMBER2, MEMBER2);
	ASSERT_LT(0, self->kids[0]);
	ASSERT_LT(0, self->kids[1]);
	ASSERT_LT(0, self->kids[2]);
	ASSERT_EQ(0, add(self, "mine", MEMBER, self->kids[0], NULL, &err))
	TH_LOG("%s", coloc_err_str(&err));
	t = tenants_find(&self->d.tenants, "mine");
	ASSERT_NE(NULL, t);
	EXPECT_EQ(MEMBER, t->owner);
	EXPECT_EQ(1, t->nr_procs);
	EXPECT_EQ(-EPERM, add(self, "mine", MEMBER, self->kids[1], NULL, &err));
	EXPECT_EQ(-EPERM, add(self, "mine", MEMBER, self->kids[2], NULL, &err));
	EXPECT_EQ(1, t->nr_procs);
}

TEST_F(owners, tenants_add__takes_a_cgroup_its_caller_owns_only)
{
	struct coloc_err err = { 0 };
	char mnt[200];

	if (owners_cgroup2_dir(mnt, sizeof(mnt)))
		SKIP(return, "no cgroup v2 mounted below " TENANTS_CGROUP_ROOT);
	snprintf(self->cgroup, sizeof(self->cgroup), "%s/coloc-owners-%d", mnt, getpid());
	ASSERT_EQ(0, mkdir(self->cgroup, 0755));
	EXPECT_EQ(-EPERM, add(self, "cg", MEMBER, 0, self->cgroup, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "belongs to another user"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(NULL, tenants_find(&self->d.tenants, "cg"));
	/* delegated to the member, as systemd delegates user@UID.service */
	ASSERT_EQ(0, chown(self->cgroup, MEMBER, MEMBER));
	EXPECT_EQ(0, add(self, "cg", MEMBER, 0, self->cgroup, &err))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, tenants_remove(&self->d.tenants, "cg", MEMBER, &err));
}

TEST_F(owners, tenants_remove__and_add_to_another_users_tenant_refused)
{
	struct coloc_err err = { 0 };
	struct tenant *t;

	self->kids[0] = owners_sleeper_as(0, 0);
	self->kids[1] = owners_sleeper_as(MEMBER, MEMBER);
	ASSERT_LT(0, self->kids[0]);
	ASSERT_LT(0, self->kids[1]);
	ASSERT_EQ(0, add(self, "rootsvc", 0, self->kids[0], NULL, &err));
	EXPECT_EQ(-EPERM, tenants_remove(&self->d.tenants, "rootsvc", MEMBER, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "belongs to another user"));
	/* its own process, into root's tenant: still root's tenant */
	EXPECT_EQ(-EPERM, add(self, "rootsvc", MEMBER, self->kids[1], NULL, &err));
	t = tenants_find(&self->d.tenants, "rootsvc");
	ASSERT_NE(NULL, t);
	EXPECT_EQ(1, t->nr_procs);
	EXPECT_EQ(0, t->owner);
	coloc_err_clear(&err);
	EXPECT_EQ(0, tenants_remove(&self->d.tenants, "rootsvc", 0, &err));
	EXPECT_EQ(NULL, tenants_find(&self->d.tenants, "rootsvc"));
}

TEST_F(owners, tenants_add__quota_refuses_the_member_at_n_plus_1_root_unaffected)
{
	struct coloc_err err = { 0 };
	pid_t extra[3];

	for (int i = 0; i < 3; i++) {
		self->kids[i] = owners_sleeper_as(MEMBER, MEMBER);
		ASSERT_LT(0, self->kids[i]);
	}
	/* the fixture's quota: 2 */
	ASSERT_EQ(0, add(self, "a", MEMBER, self->kids[0], NULL, &err));
	ASSERT_EQ(0, add(self, "b", MEMBER, self->kids[1], NULL, &err));
	EXPECT_EQ(-EDQUOT, add(self, "c", MEMBER, self->kids[2], NULL, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "--max-tenants-per-uid"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(NULL, tenants_find(&self->d.tenants, "c"));
	/* more processes in a tenant it has are not a new tenant */
	EXPECT_EQ(0, add(self, "a", MEMBER, self->kids[2], NULL, &err))
	TH_LOG("%s", coloc_err_str(&err));
	/* another member has its own quota; root has none */
	self->kids[3] = owners_sleeper_as(MEMBER2, MEMBER2);
	ASSERT_LT(0, self->kids[3]);
	EXPECT_EQ(0, add(self, "m2", MEMBER2, self->kids[3], NULL, &err));
	for (int i = 0; i < 3; i++) {
		char name[8];

		extra[i] = owners_sleeper_as(0, 0);
		ASSERT_LT(0, extra[i]);
		snprintf(name, sizeof(name), "r%d", i);
		EXPECT_EQ(0, add(self, name, 0, extra[i], NULL, &err))
		TH_LOG("%s", coloc_err_str(&err));
	}
	for (int i = 0; i < 3; i++)
		owners_reap(extra[i]);
}

TEST_F(owners, control_tenants__show_another_users_tenant_by_name_and_owner_only)
{
	struct coloc_err err = { 0 };
	const char *cmds[] = { "{\"cmd\":\"tenants\"}", "{\"cmd\":\"signals\"}" };

	self->kids[0] = owners_sleeper_as(0, 0);
	self->kids[1] = owners_sleeper_as(MEMBER, MEMBER);
	ASSERT_LT(0, self->kids[0]);
	ASSERT_LT(0, self->kids[1]);
	ASSERT_EQ(0, add(self, "rootsvc", 0, self->kids[0], NULL, &err));
	ASSERT_EQ(0, add(self, "mine", MEMBER, self->kids[1], NULL, &err));
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct json_object *as_member = handle_as(self, MEMBER, cmds[i]);
		struct json_object *as_root = handle_as(self, 0, cmds[i]);
		struct json_object *r = owners_entry(as_member, "rootsvc"), *m = owners_entry(as_member, "mine");

		ASSERT_TRUE(owners_is_ok(as_member)) TH_LOG("%s", owners_error_of(as_member));
		ASSERT_NE(NULL, r);
		ASSERT_NE(NULL, m);
		EXPECT_EQ(0, json_object_get_int(json_object_object_get(r, "owner")));
		EXPECT_FALSE(owners_has(r, "pids"));
		EXPECT_FALSE(owners_has(r, "id"));
		EXPECT_FALSE(owners_has(r, "cgroup"));
		EXPECT_FALSE(owners_has(r, "busy"));
		EXPECT_FALSE(owners_has(r, "on_cpu_ns"));
		EXPECT_EQ(2, json_object_object_length(r));
		/* its own in full, and root sees everyone's */
		EXPECT_TRUE(owners_has(m, "pids"));
		EXPECT_EQ(MEMBER, json_object_get_int(json_object_object_get(m, "owner")));
		EXPECT_TRUE(owners_has(owners_entry(as_root, "rootsvc"), "pids"));
		EXPECT_TRUE(owners_has(owners_entry(as_root, "mine"), "pids"));
		/* the machine's own numbers stay public */
		if (i == 1)
			EXPECT_TRUE(owners_has(as_member, "cpus"));
		json_object_put(as_member);
		json_object_put(as_root);
	}
}

TEST_F(owners, control_tenant_remove__refused_for_another_user)
{
	struct coloc_err err = { 0 };
	struct json_object *o;

	self->kids[0] = owners_sleeper_as(0, 0);
	ASSERT_LT(0, self->kids[0]);
	ASSERT_EQ(0, add(self, "rootsvc", 0, self->kids[0], NULL, &err));
	/* a member's name is its own tenant: root's is out of its reach, not refused by owner */
	o = handle_as(self, MEMBER, "{\"cmd\":\"tenant-remove\",\"name\":\"rootsvc\"}");
	EXPECT_FALSE(owners_is_ok(o));
	EXPECT_STREQ("no tenant named '64990:rootsvc'", owners_error_of(o));
	json_object_put(o);
	o = handle_as(self, MEMBER, "{\"cmd\":\"tenant-remove\",\"name\":\"0:rootsvc\"}");
	EXPECT_FALSE(owners_is_ok(o));
	EXPECT_NE(NULL, strstr(owners_error_of(o), "a member names its own tenants only"))
	TH_LOG("%s", owners_error_of(o));
	json_object_put(o);
	EXPECT_NE(NULL, tenants_find(&self->d.tenants, "rootsvc"));
	o = handle_as(self, 0, "{\"cmd\":\"tenant-remove\",\"name\":\"rootsvc\"}");
	EXPECT_TRUE(owners_is_ok(o)) TH_LOG("%s", owners_error_of(o));
	json_object_put(o);
}

/*
 * Each uid's names are its own (docs/design/tenant-names.md): two members
 * attribute a tenant "t" each, keyed apart; root's bare "t" is then an
 * error naming both owners, "UID:t" reaches either, and once one is left
 * the bare name is it. Root makes no tenant in a member's names, and a
 * member's name leaves room for its "UID:" in the key. Main: the second
 * member's add was refused ("belongs to another user").
 */
TEST_F(owners, control_names__two_members_one_name_each_root_says_which)
{
	char line[256], longname[64];
	struct json_object *o;
	struct tenant *t;

	self->kids[0] = owners_sleeper_as(MEMBER, MEMBER);
	self->kids[1] = owners_sleeper_as(MEMBER2, MEMBER2);
	ASSERT_LT(0, self->kids[0]);
	ASSERT_LT(0, self->kids[1]);
	for (int i = 0; i < 2; i++) {
		snprintf(line, sizeof(line), "{\"cmd\":\"tenant-add\",\"name\":\"t\",\"pids\":[%d]}",
			 self->kids[i]);
		o = handle_as(self, i ? MEMBER2 : MEMBER, line);
		EXPECT_TRUE(owners_is_ok(o)) TH_LOG("%s", owners_error_of(o));
		json_object_put(o);
	}
	t = tenants_find(&self->d.tenants, "64990:t");
	ASSERT_NE(NULL, t);
	EXPECT_EQ(MEMBER, t->owner);
	EXPECT_EQ(self->kids[0], (pid_t)t->procs[0]->pid);
	t = tenants_find(&self->d.tenants, "64991:t");
	ASSERT_NE(NULL, t);
	EXPECT_EQ(MEMBER2, t->owner);
	EXPECT_EQ(NULL, tenants_find(&self->d.tenants, "t"));
	o = handle_as(self, 0, "{\"cmd\":\"tenant-remove\",\"name\":\"t\"}");
	EXPECT_STREQ("2 tenants are named 't' (owners 64990, 64991): name one as UID:NAME, e.g. "
		     "'64990:t'",
		     owners_error_of(o));
	json_object_put(o);
	o = handle_as(self, 0, "{\"cmd\":\"tenant-remove\",\"name\":\"64991:t\"}");
	EXPECT_TRUE(owners_is_ok(o)) TH_LOG("%s", owners_error_of(o));
	json_object_put(o);
	EXPECT_EQ(NULL, tenants_find(&self->d.tenants, "64991:t"));
	o = handle_as(self, 0, "{\"cmd\":\"tenant-remove\",\"name\":\"t\"}");
	EXPECT_TRUE(owners_is_ok(o)) TH_LOG("%s", owners_error_of(o));
	json_object_put(o);
	EXPECT_EQ(NULL, tenants_find(&self->d.tenants, "64990:t"));
	snprintf(line, sizeof(line), "{\"cmd\":\"tenant-add\",\"name\":\"64990:u\",\"pids\":[%d]}",
		 self->kids[0]);
	o = handle_as(self, 0, line);
	EXPECT_NE(NULL, strstr(owners_error_of(o), "root makes tenants of its own only"))
	TH_LOG("%s", owners_error_of(o));
	json_object_put(o);
	EXPECT_EQ(NULL, tenants_find(&self->d.tenants, "64990:u"));
	/* 63 bytes hold "64990:" and 57 characters */
	memset(longname, 'n', 58);
	longname[58] = '\0';
	snprintf(line, sizeof(line), "{\"cmd\":\"tenant-add\",\"name\":\"%s\",\"pids\":[%d]}",
		 longname, self->kids[0]);
	o = handle_as(self, MEMBER, line);
	EXPECT_NE(NULL, strstr(owners_error_of(o), "uid 64990's names are at most 57 characters"))
	TH_LOG("%s", owners_error_of(o));
	json_object_put(o);
	longname[57] = '\0';
	snprintf(line, sizeof(line), "{\"cmd\":\"tenant-add\",\"name\":\"%s\",\"pids\":[%d]}",
		 longname, self->kids[0]);
	o = handle_as(self, MEMBER, line);
	EXPECT_TRUE(owners_is_ok(o)) TH_LOG("%s", owners_error_of(o));
	json_object_put(o);
}

/* ---- the serving core's owners and quotas, real executors, no socket ---------------- */

FIXTURE(quota)
{
	struct serving *s;
	char model[PATH_MAX];
	struct tu_zero_queries q;
};

FIXTURE_SETUP(quota)
{
	char why[4096], bin[512];
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)),
				      .cache_dir = cache_dir,
				      .max_tenants_per_uid = 2,
				      .max_executors_per_uid = 3,
				      .max_queued_per_uid = 2 };
	int r;

	self->s = NULL;
	self->q = (struct tu_zero_queries){ 0 };
	if (geteuid() != 0)
		SKIP(return, "needs root to start executors");
	r = tu_serving_start_mobilenet(&cfg, self->model, &self->s, why, sizeof(why));
	if (r > 0)
		SKIP(return, "%.900s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
}

FIXTURE_TEARDOWN(quota)
{
	serving_destroy(self->s);
	free(self->q.input);
}

static int admit(FIXTURE_DATA(quota) * self, const char *name, uid_t owner, int executors,
		 struct coloc_err *err)
{
	struct serving_tenant_spec spec = { .name = name,
					    .model_name = self->model,
					    .qos_ns = QOS_MS * 1000000ull,
					    .executors = executors,
					    .owner = owner };

	coloc_err_clear(err);
	return tu_serving_admit(self->s, spec, self->model, NULL, READY_MS, err);
}

/* One query of zeros to name, counted in self->q.done when answered. */
static int submit(FIXTURE_DATA(quota) * self, const char *name, struct coloc_err *err)
{
	return tu_submit_zeros(self->s, name, &self->q, err);
}

TEST_F_TIMEOUT(quota, serving_authorize__owner_and_root_only, 600)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;

	ASSERT_EQ(0, admit(self, "mine", MEMBER, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, serving_tenant_info(self->s, "mine", &info));
	EXPECT_EQ(MEMBER, info.owner);
	EXPECT_EQ(0, serving_authorize(self->s, "mine", MEMBER, &err));
	EXPECT_EQ(0, serving_authorize(self->s, "mine", 0, &err));
	EXPECT_EQ(-EPERM, serving_authorize(self->s, "mine", MEMBER2, &err));
	EXPECT_STREQ("tenant mine belongs to another user", coloc_err_str(&err));
	coloc_err_clear(&err);
	EXPECT_EQ(-ENOENT, serving_authorize(self->s, "nobody", MEMBER, &err));
}

TEST_F_TIMEOUT(quota, serving_admit__tenant_quota_refuses_at_n_plus_1_root_unaffected, 600)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;

	ASSERT_EQ(0, admit(self, "a", MEMBER, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "b", MEMBER, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EDQUOT, admit(self, "c", MEMBER, 1, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "--max-tenants-per-uid"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-ENOENT, serving_tenant_info(self->s, "c", &info));
	EXPECT_EQ(0, admit(self, "m2", MEMBER2, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	for (int i = 0; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "r%d", i);
		EXPECT_EQ(0, admit(self, name, 0, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	}
	/* a removed tenant frees its place */
	ASSERT_EQ(0, serving_remove(self->s, "a", &err));
	EXPECT_EQ(0, admit(self, "c", MEMBER, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
}

TEST_F_TIMEOUT(quota, serving_admit__executor_quota_counts_every_executor, 600)
{
	struct coloc_err err = { 0 };

	/* the fixture's quota: 3 executors */
	ASSERT_EQ(0, admit(self, "a", MEMBER, 2, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EDQUOT, admit(self, "b", MEMBER, 2, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "--max-executors-per-uid"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, admit(self, "b", MEMBER, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, admit(self, "r", 0, 4, &err)) TH_LOG("%s", coloc_err_str(&err));
}

TEST_F_TIMEOUT(quota, serving_submit__queued_quota_over_the_owners_tenants, 600)
{
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;

	ASSERT_EQ(0, admit(self, "a", MEMBER, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "b", MEMBER, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "r", 0, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* starting tenants queue queries; none completes while the test calls nothing else */
	ASSERT_EQ(0, submit(self, "a", &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, submit(self, "b", &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EAGAIN, submit(self, "a", &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "--max-queued-per-uid"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EAGAIN, submit(self, "b", &err));
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &info));
	EXPECT_EQ(1, info.queued + info.in_flight);
	EXPECT_EQ(1, (int)info.stats.rejected);
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(0, submit(self, "r", &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, self->q.done);
}

/*
 * The serving core made again with an input quota (*limit) of one and a
 * half of the model's inputs, the member's tenant "a" and root's "r"
 * admitted; a tenant of the model's info in *info.
 */
static int with_input_quota(FIXTURE_DATA(quota) * self, struct serving_tenant_info *info,
			    size_t *limit, struct coloc_err *err)
{
	char bin[512];
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)),
				      .cache_dir = cache_dir };
	int ret;

	ret = admit(self, "probe", 0, 1, err);
	if (ret || (ret = serving_tenant_info(self->s, "probe", info)))
		return ret;
	serving_destroy(self->s);
	self->s = NULL;
	cfg.max_input_bytes_per_uid = *limit = info->in_bytes + info->in_bytes / 2;
	ret = serving_create(&cfg, &self->s, err);
	if (ret || (ret = admit(self, "a", MEMBER, 1, err)))
		return ret;
	return admit(self, "r", 0, 1, err);
}

/*
 * Queued inputs copied into colocd count against the owner in bytes: those
 * an executor's slots take are no longer colocd's, one more is held, and
 * the next would hold two inputs' bytes, over a limit of one and a half:
 * refused with the bytes held and the limit. Root's tenant is not held to
 * it. Main took every query.
 */
TEST_F_TIMEOUT(quota, serving_submit__queued_input_bytes_over_the_owners_limit_refused, 600)
{
	char want[160];
	int accepted = 0, ret = 0;
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	size_t limit;

	ASSERT_EQ(0, with_input_quota(self, &info, &limit, &err)) TH_LOG("%s", coloc_err_str(&err));
	while (accepted < COLOC_SHM_NR_SLOTS + 2 && !(ret = submit(self, "a", &err)))
		accepted++;
	TH_LOG("%d accepted, then %d: %s", accepted, ret, coloc_err_str(&err));
	/* the slots' and one held: a second held input would pass the limit */
	EXPECT_EQ(-EAGAIN, ret);
	EXPECT_GE(accepted, 1);
	EXPECT_LE(accepted, COLOC_SHM_NR_SLOTS + 1);
	snprintf(want, sizeof(want), "owner uid %u holds %.1f MiB of queued inputs, limit %.1f MiB",
		 MEMBER, (double)info.in_bytes / (1 << 20), (double)limit / (1 << 20));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), want)) TH_LOG("want '%s'", want);
	EXPECT_EQ(0, serving_input_room(self->s, "a", 0, &err));
	EXPECT_EQ(-EAGAIN, serving_input_room(self->s, "a", info.in_bytes, &err));
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &info));
	EXPECT_EQ(accepted, info.queued + info.in_flight);
	EXPECT_EQ(1, (int)info.stats.rejected);
	for (int i = 0; i < COLOC_SHM_NR_SLOTS + 2; i++)
		EXPECT_EQ(0, submit(self, "r", &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, serving_input_room(self->s, "r", 1ull << 40, &err));
	EXPECT_EQ(0, self->q.done);
}

/*
 * The bytes of submitted files a member's tenants hold count against it
 * for their life (review of 2026-12-06, HIGH 1): at a quota of one and a
 * half models, the member's second tenant is refused with the quota and
 * its option, root's is not, and once the first is removed the second
 * fits. Main admitted every one.
 */
TEST_F_TIMEOUT(quota, serving_admit__submitted_bytes_over_the_owners_quota_refused, 600)
{
	char bin[512];
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)),
				      .cache_dir = cache_dir };
	struct coloc_err err = { 0 };
	struct stat st;

	ASSERT_EQ(0, stat(self->model, &st));
	serving_destroy(self->s);
	self->s = NULL;
	cfg.max_submit_bytes_per_uid = (uint64_t)st.st_size + (uint64_t)st.st_size / 2;
	ASSERT_EQ(0, serving_create(&cfg, &self->s, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(cfg.max_submit_bytes_per_uid, serving_submit_bytes_left(self->s, MEMBER));
	ASSERT_EQ(0, admit(self, "a", MEMBER, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ((uint64_t)st.st_size / 2, serving_submit_bytes_left(self->s, MEMBER));
	EXPECT_EQ(UINT64_MAX, serving_submit_bytes_left(self->s, 0));
	EXPECT_EQ(-EDQUOT, admit(self, "b", MEMBER, 1, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "--max-submit-mib-per-uid"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, admit(self, "m2", MEMBER2, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, admit(self, "r1", 0, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, admit(self, "r2", 0, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* a removed tenant frees its bytes */
	ASSERT_EQ(0, serving_remove(self->s, "a", &err));
	EXPECT_EQ(0, admit(self, "b", MEMBER, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
}

/*
 * The fixture's serving core made again, its --max-submit-mib at num/den
 * of the model's size (a multiple of 16 bytes: its quarters and fifths are
 * then what colocd computes), --max-submit-mib-per-uid at per_uid (0:
 * none); the model's size into *m, the bound into *max. 0 or -errno.
 */
static int remake_with_submit_bound(FIXTURE_DATA(quota) * self, uint64_t num, uint64_t den,
				    uint64_t per_uid, uint64_t *m, uint64_t *max,
				    struct coloc_err *err)
{
	char bin[512];
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)),
				      .cache_dir = cache_dir,
				      .max_submit_bytes_per_uid = per_uid };
	struct stat st;

	if (stat(self->model, &st))
		return coloc_err_set(err, -errno, "%s: %s", self->model, strerror(errno));
	serving_destroy(self->s);
	self->s = NULL;
	*m = (uint64_t)st.st_size;
	*max = cfg.max_submit_bytes = (*m * num / den) & ~15ull;
	return serving_create(&cfg, &self->s, err);
}

/*
 * Submitted files are bounded over all uids too (review s21, "Fix" 3: six
 * members at 4 GiB each filled a 24 GiB machine): at a bound of 6.8
 * models, of which a quarter is root's, root's four tenants and a member's
 * fill the members' part (5.1 models), so another member is refused with
 * the option named; root's fifth fits in its share, its sixth is refused
 * past the whole; root's files count against the members'.
 */
TEST_F_TIMEOUT(quota, serving_admit__submitted_bytes_of_all_members_bounded_root_keeps_a_share, 600)
{
	struct coloc_err err = { 0 };
	uint64_t m, max, members;

	ASSERT_EQ(0, remake_with_submit_bound(self, 34, 5, 0, &m, &max, &err))
	TH_LOG("%s", coloc_err_str(&err));
	members = max / 4 * 3;
	EXPECT_EQ(members / 5, serving_submit_bytes_left(self->s, MEMBER));
	EXPECT_EQ(max, serving_submit_bytes_left(self->s, 0));
	for (int i = 0; i < 4; i++) {
		char name[8];

		snprintf(name, sizeof(name), "r%d", i);
		ASSERT_EQ(0, admit(self, name, 0, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	}
	ASSERT_EQ(0, admit(self, "a", MEMBER, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(members - 5 * m, serving_submit_bytes_left(self->s, MEMBER2));
	EXPECT_EQ(max - 5 * m, serving_submit_bytes_left(self->s, 0));
	EXPECT_EQ(-EDQUOT, admit(self, "b", MEMBER2, 1, &err));
	EXPECT_NE(NULL,
		  strstr(coloc_err_str(&err), "members may fill (the rest of --max-submit-mib"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, admit(self, "r4", 0, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EDQUOT, admit(self, "r5", 0, 1, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "MiB of --max-submit-mib"))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, serving_remove(self->s, "a", &err));
	EXPECT_EQ(-EDQUOT, admit(self, "b", MEMBER2, 1, &err)) TH_LOG("root's r0-r4 count");
	ASSERT_EQ(0, serving_remove(self->s, "r4", &err));
	EXPECT_EQ(0, admit(self, "b", MEMBER2, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
}

/*
 * No one member holds the members' part (review s23 HIGH 2: at its per-uid
 * quota, unset, one member took it all and every other member's and
 * gateway's submit was refused): with --max-submit-mib at seven models and
 * no per-uid quota, a member's quota is a fifth of the members' part, 1.05
 * models: its second tenant is refused naming its own quota; another
 * member's, a gateway's uid's and root's tenants are admitted. At a
 * per-uid quota of one model, a member holding it is refused by the
 * admission check, before a copy. (s22 admitted the member's tenants until
 * the members' part was full; s23's quota was a quarter, 1.31 models.)
 */
TEST_F_TIMEOUT(quota, serving_admit__one_member_holds_a_fifth_of_the_members_part, 600)
{
	char want[128];
	struct coloc_err err = { 0 };
	struct serving_tenant_spec spec = { .name = "a-held", .owner = MEMBER, .qos_ns = 1 };
	uid_t gateway = 64995;
	uint64_t m, max, quota;
	int admitted = 0;

	ASSERT_EQ(0, remake_with_submit_bound(self, 7, 1, 0, &m, &max, &err))
	TH_LOG("%s", coloc_err_str(&err));
	quota = max / 4 * 3 / 5;
	for (int i = 0; i < 5; i++) {
		char name[8];

		snprintf(name, sizeof(name), "a%d", i);
		if (admit(self, name, MEMBER, 1, &err))
			break;
		admitted++;
	}
	TH_LOG("member admitted %d: %s", admitted, coloc_err_str(&err));
	EXPECT_EQ(1, admitted);
	snprintf(want, sizeof(want), "past its quota of %.1f MiB", (double)quota / (1 << 20));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), want)) TH_LOG("want '%s'", want);
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "a fifth of what members may fill"));
	EXPECT_EQ(quota - m, serving_submit_bytes_left(self->s, MEMBER));
	EXPECT_EQ(quota, serving_submit_bytes_left(self->s, MEMBER2));
	EXPECT_EQ(0, admit(self, "b", MEMBER2, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, admit(self, "g", gateway, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, admit(self, "r", 0, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* a member at its quota is refused before its files are copied */
	ASSERT_EQ(0, remake_with_submit_bound(self, 7, 1, m, &m, &max, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "a", MEMBER, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EDQUOT, serving_admit_check(self->s, &spec, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "hold its quota of"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "--max-submit-mib-per-uid)"));
}

/*
 * Four members together do not fill the members' part (review s23: "four
 * members together still fill it"): at --max-submit-mib of 11.3 models
 * (members' part 8.5, a member's fifth 1.7), four members each admit what
 * they may, one model each (a second is refused past its quota), and a
 * fifth member, holding nothing, still has its whole quota and its model
 * is admitted. Main (a quarter each, 2.1 models) admitted two models a
 * member, 8 of the 8.5, and refused the fifth member's.
 */
TEST_F_TIMEOUT(quota, serving_admit__four_members_at_their_quota_leave_a_fifth_its_own, 600)
{
	char name[16];
	struct coloc_err err = { 0 };
	uid_t newcomer = MEMBER + 4;
	uint64_t m, max, quota;

	ASSERT_EQ(0, remake_with_submit_bound(self, 34, 3, 0, &m, &max, &err))
	TH_LOG("%s", coloc_err_str(&err));
	quota = max / 4 * 3 / 5;
	for (uid_t uid = MEMBER; uid < newcomer; uid++) {
		int admitted = 0;

		for (int i = 0; i < 3; i++) {
			snprintf(name, sizeof(name), "u%u-%d", uid - MEMBER, i);
			if (admit(self, name, uid, 1, &err))
				break;
			admitted++;
		}
		TH_LOG("uid %u admitted %d: %s", uid, admitted, coloc_err_str(&err));
		EXPECT_EQ(-EDQUOT, err.code);
		EXPECT_NE(NULL, strstr(coloc_err_str(&err), "past its quota of"))
		TH_LOG("%s", coloc_err_str(&err));
	}
	EXPECT_EQ(quota, serving_submit_bytes_left(self->s, newcomer));
	EXPECT_EQ(0, admit(self, "new", newcomer, 1, &err)) TH_LOG("%s", coloc_err_str(&err));
}

/* This thread's CPU time, in ns. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A memfd of len bytes, its pages there (a hole reads cheaper), sealed
 * against shrinking and growing as input_memfd_check() wants.
 */
static int sealed_memfd(size_t len)
{
	int fd = memfd_create("quota-input", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd >= 0 && (fallocate(fd, 0, 0, (off_t)len) ||
			fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))) {
		close(fd);
		return -1;
	}
	return fd;
}

#define FLOOD 4000

/*
 * A memfd query past its owner's held share is copied only once nothing
 * refuses it (review s24 HIGH 1: colocd read the whole input on its loop,
 * then refused it on the input quota; ~100 bytes a line made it copy up
 * to 64 MiB). At an input quota of one and a half inputs, the member's
 * memfd queries are held up to the share, one is copied, and the next is
 * refused on the quota: given a descriptor colocd cannot read, it is still
 * refused on the quota, not failed reading it; FLOOD more cost less CPU
 * than a quarter as many reads of the input. Root's tenant takes its
 * query. Main read each one: the unreadable one failed "reading the
 * input's memfd", the flood cost FLOOD reads.
 */
TEST_F_TIMEOUT(quota, serving_submit_fd__past_the_held_share_refused_before_a_copy, 600)
{
	char path[64];
	struct coloc_err err = { 0 };
	struct serving_tenant_info info;
	uint64_t t0, refused_ns, reads_ns;
	int fd, dup_fd, wronly, accepted = 0, ret = 0;
	size_t limit;
	void *buf;

	ASSERT_EQ(0, with_input_quota(self, &info, &limit, &err)) TH_LOG("%s", coloc_err_str(&err));
	fd = sealed_memfd(info.in_bytes);
	ASSERT_LE(0, fd);
	while (!ret) {
		dup_fd = dup(fd);
		ASSERT_LE(0, dup_fd);
		ret = serving_submit_fd(self->s, "a", &dup_fd, 0, info.in_bytes, tu_count_done,
					&self->q.done, NULL, &err);
		close(dup_fd); /* -1 once taken */
		accepted += !ret;
	}
	TH_LOG("%d accepted, then %d: %s", accepted, ret, coloc_err_str(&err));
	/* the executor's slots read theirs; the share held; one copied */
	EXPECT_GE(accepted, SV_MAX_INPUT_FDS_PER_UID + 1);
	EXPECT_LE(accepted, SV_MAX_INPUT_FDS_PER_UID + 1 + COLOC_SHM_NR_SLOTS);
	ASSERT_EQ(-EAGAIN, ret);
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "MiB of queued inputs"));

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	wronly = open(path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, wronly);
	EXPECT_EQ(-EAGAIN, serving_submit_fd(self->s, "a", &wronly, 0, info.in_bytes, tu_count_done,
					     &self->q.done, NULL, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "MiB of queued inputs"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_LE(0, wronly);
	close(wronly);

	t0 = thread_cpu_ns();
	for (int i = 0; i < FLOOD; i++)
		if (serving_submit_fd(self->s, "a", &fd, 0, info.in_bytes, tu_count_done,
				      &self->q.done, NULL, &err) != -EAGAIN)
			break;
	refused_ns = thread_cpu_ns() - t0;
	buf = malloc(info.in_bytes);
	ASSERT_NE(NULL, buf);
	t0 = thread_cpu_ns();
	for (int i = 0; i < FLOOD / 4; i++)
		ASSERT_EQ((ssize_t)info.in_bytes, pread(fd, buf, info.in_bytes, 0));
	reads_ns = thread_cpu_ns() - t0;
	free(buf);
	TH_LOG("%d refused: %.1f ms of CPU; %d reads of the %zu-byte input: %.1f ms", FLOOD,
	       refused_ns / 1e6, FLOOD / 4, info.in_bytes, reads_ns / 1e6);
	EXPECT_LT(refused_ns, reads_ns);
	ASSERT_EQ(0, serving_tenant_info(self->s, "a", &info));
	EXPECT_EQ(accepted, info.queued + info.in_flight);
	EXPECT_EQ(FLOOD + 2, (int)info.stats.rejected);
	dup_fd = dup(fd);
	ASSERT_LE(0, dup_fd);
	EXPECT_EQ(0, serving_submit_fd(self->s, "r", &dup_fd, 0, info.in_bytes, tu_count_done,
				       &self->q.done, NULL, &err))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-1, dup_fd);
	EXPECT_EQ(0, self->q.done);
	close(fd);
}

TEST_HARNESS_MAIN
