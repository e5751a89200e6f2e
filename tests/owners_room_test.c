// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Root always has room (docs/security-owners.md, "Quotas"): four members
 * at their quotas fill only three quarters of the
 * attributed tenants' slots (a real daemon core, real processes running
 * as each member), of the serving places (submits being copied, held) and
 * of the queries queued over all tenants (real executors); root's adds,
 * submits and queries still pass, and a member's serving tenant takes its
 * attributed slot from its owner's quota.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "colocd.h"
#include "control.h"
#include "serving.h"
#include "serving_internal.h"
#include "owners_util.h"
#include "serving_util.h"
#include "testutil.h"

#define MEMBERS 4
#define QUOTA 16 /* the default --max-tenants-per-uid */
#define QOS_MS 60000
#define QUEUE_TOTAL 8 /* queries queued over all tenants: members 6, root 2 */
#define SLEEPERS (MEMBERS * QUOTA + COLOC_MAX_TENANTS)

static char cache_dir[64]; /* made once, shared by the forked tests */

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("owners-room-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(room)
{
	struct colocd d;
	struct loop *loop;
	pid_t kids[SLEEPERS];
	int nr_kids;
};

FIXTURE_SETUP(room)
{
	struct colocd_config cfg = {
		.sample_hz = 1000, .window_ms = 10, .span_ms = 1000, .max_tenants_per_uid = QUOTA
	};
	struct coloc_err err = { 0 };
	static char pin[128];

	self->nr_kids = 0;
	if (geteuid() != 0)
		SKIP(return, "needs root to load the sensor and change uid");
	ASSERT_EQ(0, tu_mount_bpffs());
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/coloc-owners-room-test-%d", getpid());
	cfg.pin_dir = pin;
	ASSERT_EQ(0, loop_new(&self->loop, &err));
	ASSERT_EQ(0, colocd_start(&self->d, &cfg, self->loop, &err))
	TH_LOG("colocd_start: %s", coloc_err_str(&err));
}

FIXTURE_TEARDOWN(room)
{
	for (int i = 0; i < self->nr_kids; i++)
		owners_reap(self->kids[i]);
	colocd_stop(&self->d);
	loop_free(self->loop);
}

/* A tenant-add of name for a new process of uid's, as uid asks it, through the control handler. */
static struct json_object *add_as(FIXTURE_DATA(room) * self, uid_t uid, const char *name)
{
	char line[256];
	pid_t pid = owners_sleeper_as(uid, uid);

	if (pid <= 0 || self->nr_kids >= SLEEPERS)
		return NULL;
	self->kids[self->nr_kids++] = pid;
	snprintf(line, sizeof(line), "{\"cmd\":\"tenant-add\",\"name\":\"%s\",\"pids\":[%d]}", name,
		 pid);
	return json_tokener_parse(control_handle(&self->d, NULL, uid, line, strlen(line), 0));
}

/* A submit of name as uid, without files: the checks made before any byte is copied. */
static struct json_object *submit_as(FIXTURE_DATA(room) * self, uid_t uid, const char *name)
{
	char line[256];

	snprintf(line, sizeof(line),
		 "{\"cmd\":\"submit\",\"name\":\"%s\",\"model\":\"m.model\",\"qos_ms\":100}", name);
	return json_tokener_parse(control_handle(&self->d, NULL, uid, line, strlen(line), 0));
}

TEST_F_TIMEOUT(room, tenants_add__four_members_at_their_quota_leave_root_a_quarter, 300)
{
	int members = 0, refused = 0;
	struct json_object *o;
	char name[32];

	for (int m = 0; m < MEMBERS; m++)
		for (int i = 0; i < QUOTA; i++) {
			snprintf(name, sizeof(name), "fill%d", i);
			o = add_as(self, MEMBER + m, name);
			ASSERT_NE(NULL, o);
			if (owners_is_ok(o)) {
				members++;
			} else {
				refused++;
				EXPECT_NE(NULL, strstr(owners_error_of(o), "root's"))
				TH_LOG("%s", owners_error_of(o));
			}
			json_object_put(o);
		}
	EXPECT_EQ(COLOC_MAX_TENANTS * 3 / 4, members);
	EXPECT_EQ(MEMBERS * QUOTA - COLOC_MAX_TENANTS * 3 / 4, refused);
	/* a member's submit needs a slot for its executors: refused before a copy */
	o = submit_as(self, MEMBER + MEMBERS - 1, "late");
	EXPECT_NE(NULL, strstr(owners_error_of(o), "the rest of colocd's 64 are root's"))
	TH_LOG("%s", owners_error_of(o));
	json_object_put(o);
	/* root's quarter: every slot left */
	for (int i = 0; i < COLOC_MAX_TENANTS / 4; i++) {
		snprintf(name, sizeof(name), "root%d", i);
		o = add_as(self, 0, name);
		ASSERT_NE(NULL, o);
		EXPECT_TRUE(owners_is_ok(o)) TH_LOG("%s: %s", name, owners_error_of(o));
		json_object_put(o);
	}
	/* the table full: root's next add, and root's submit, refused with why */
	o = add_as(self, 0, "over");
	EXPECT_STREQ("all 64 tenant slots are taken; remove one first", owners_error_of(o));
	json_object_put(o);
	o = submit_as(self, 0, "rootsrv");
	EXPECT_STREQ("tenant rootsrv: all 64 tenant slots are taken; remove one first",
		     owners_error_of(o));
	json_object_put(o);
}

TEST_F_TIMEOUT(room, submit__a_members_serving_tenant_counts_in_its_tenant_quota, 300)
{
	struct tenants_add_req req = { .name = "64990:srv", .nr_pids = 1, .charge = MEMBER };
	struct coloc_err err = { 0 };
	struct json_object *o;
	struct tenant *t;
	char name[32];
	__s64 pid;

	for (int i = 0; i < QUOTA; i++) {
		snprintf(name, sizeof(name), "fill%d", i);
		o = add_as(self, MEMBER, name);
		ASSERT_TRUE(owners_is_ok(o)) TH_LOG("%s", owners_error_of(o));
		json_object_put(o);
	}
	/* its submit is refused before a copy, naming the quota */
	o = submit_as(self, MEMBER, "srv");
	EXPECT_STREQ("tenant 64990:srv: uid 64990 already has 16 tenants, its quota of 16 "
		     "(serving tenants included; colocd --max-tenants-per-uid raises it)",
		     owners_error_of(o));
	json_object_put(o);
	/* root's attribution of the member's executors is charged to the member (lifecycle.c) */
	pid = owners_sleeper_as(0, 0);
	ASSERT_LT(0, pid);
	self->kids[self->nr_kids++] = (pid_t)pid;
	req.pids = &pid;
	EXPECT_EQ(-EDQUOT, tenants_add(&self->d.tenants, &req, &t, &err));
	EXPECT_EQ(NULL, tenants_find(&self->d.tenants, "64990:srv"));
	/* root's own, charged to nobody, is not */
	req.charge = 0;
	req.name = "srv";
	EXPECT_EQ(0, tenants_add(&self->d.tenants, &req, &t, &err))
	TH_LOG("%s", coloc_err_str(&err));
}

FIXTURE(places)
{
	struct serving *s;
	struct serving_hold *holds[SV_MAX_TENANTS];
	int nr_holds;
};

FIXTURE_SETUP(places)
{
	char bin[512];
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)),
				      .cache_dir = cache_dir,
				      .max_tenants_per_uid = QUOTA };
	struct coloc_err err = { 0 };

	self->s = NULL;
	self->nr_holds = 0;
	if (geteuid() != 0)
		SKIP(return, "needs root to start executors");
	ASSERT_EQ(0, serving_create(&cfg, &self->s, &err)) TH_LOG("%s", coloc_err_str(&err));
}

FIXTURE_TEARDOWN(places)
{
	for (int i = 0; i < self->nr_holds; i++)
		serving_release(self->s, self->holds[i]);
	serving_destroy(self->s);
}

/* A tenant of one executor as owner's, of no files yet: places holds it, queue admits it. */
static struct serving_tenant_spec room_spec(const char *name, uid_t owner)
{
	return (struct serving_tenant_spec){ .name = name,
					     .model_fd = -1,
					     .weights_fd = -1,
					     .qos_ns = QOS_MS * 1000000ull,
					     .executors = 1,
					     .owner = owner };
}

static int hold(FIXTURE_DATA(places) * self, const char *name, uid_t owner, struct coloc_err *err)
{
	struct serving_tenant_spec spec = room_spec(name, owner);
	int ret;

	coloc_err_clear(err);
	ret = serving_hold(self->s, &spec, &self->holds[self->nr_holds], err);
	if (!ret)
		self->nr_holds++;
	return ret;
}

TEST_F_TIMEOUT(places, serving_hold__four_members_at_their_quota_leave_root_a_quarter, 120)
{
	struct coloc_err err = { 0 };
	int members = 0;
	char name[32];

	for (int m = 0; m < MEMBERS; m++)
		for (int i = 0; i < QUOTA; i++) {
			snprintf(name, sizeof(name), "%u:s%d", MEMBER + m, i);
			members += !hold(self, name, MEMBER + m, &err);
		}
	EXPECT_EQ(SV_MAX_TENANTS * 3 / 4, members);
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "the rest of colocd's 64 are root's"))
	TH_LOG("%s", coloc_err_str(&err));
	for (int i = 0; i < SV_MAX_TENANTS / 4; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		EXPECT_EQ(0, hold(self, name, 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	}
}

FIXTURE(queue)
{
	struct serving *s;
	char model[PATH_MAX];
	struct tu_zero_queries q;
};

FIXTURE_SETUP(queue)
{
	char why[4096], bin[512];
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)),
				      .cache_dir = cache_dir,
				      .max_queue_total = QUEUE_TOTAL };
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

FIXTURE_TEARDOWN(queue)
{
	serving_destroy(self->s);
	free(self->q.input);
}

static int admit(FIXTURE_DATA(queue) * self, const char *name, uid_t owner, struct coloc_err *err)
{
	struct serving_tenant_spec spec = room_spec(name, owner);

	spec.model_name = self->model;
	coloc_err_clear(err);
	return tu_serving_admit(self->s, spec, self->model, NULL, READY_MS, err);
}

/* One query of zeros to name, counted in self->q.done when answered. */
static int query(FIXTURE_DATA(queue) * self, const char *name, struct coloc_err *err)
{
	return tu_submit_zeros(self->s, name, &self->q, err);
}

TEST_F_TIMEOUT(queue, serving_submit__members_queue_three_quarters_root_the_rest, 600)
{
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, admit(self, "64990:a", MEMBER, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "64991:b", MEMBER2, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, admit(self, "r", 0, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* none completes while the test calls nothing else: two members queue their part */
	for (int i = 0; i < QUEUE_TOTAL * 3 / 4; i++) {
		ASSERT_EQ(0, query(self, i % 2 ? "64991:b" : "64990:a", &err))
		TH_LOG("%d: %s", i, coloc_err_str(&err));
	}
	EXPECT_EQ(-EAGAIN, query(self, "64990:a", &err));
	EXPECT_STREQ("members' tenants have 6 queries queued or running, the most members may "
		     "(the rest of colocd's 8 is root's)",
		     coloc_err_str(&err));
	EXPECT_EQ(-EAGAIN, query(self, "64991:b", &err));
	for (int i = 0; i < QUEUE_TOTAL / 4; i++) {
		EXPECT_EQ(0, query(self, "r", &err)) TH_LOG("%d: %s", i, coloc_err_str(&err));
	}
	EXPECT_EQ(-EAGAIN, query(self, "r", &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "the most colocd takes"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, self->q.done);
}

TEST_HARNESS_MAIN
