// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A member takes a gateway's tenant name after colocd restarts (review s22
 * MEDIUM 1): a real colocd, the gateway as `coloc` with --tenant-prefix
 * (tests/gateway_fixture.h). The gateway is stopped (SIGSTOP) while colocd
 * restarts without --state and a member submits the prefixed name, so the
 * member is first every time; then it goes on. colocd's names are each
 * uid's own (docs/design/tenant-names.md): the gateway's watcher finds no
 * tenant of its own, submits the model again and serves it, and the
 * member's tenant is neither touched nor sent the gateway's queries.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "testutil.h"
#include "gateway_fixture.h"

#define MEMBER 64990 /* no account on a test machine has it */
#define TENANT "ns.isvc.mobilenet_v2"
#define IN_BYTES (3 * 224 * 224 * sizeof(float))
#define BACK_S 60 /* the watcher looks each second; a submit takes a few on a loaded machine */

static char cache_dir[64];

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("gateway-squat-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(squat)
{
	struct gw_env env;
};

FIXTURE_SETUP(squat)
{
	const char *prefixed[] = { "--tenant-prefix", "ns.isvc.", NULL };
	char why[4096];
	int ret = gw_env_start_colocd(&self->env, "gwsquat", cache_dir, 60000, why, sizeof(why));

	if (ret > 0)
		SKIP(return, "%.900s", why);
	ASSERT_EQ(0, ret) TH_LOG("%s", why);
	ASSERT_TRUE(gw_env_start_gateway(&self->env, false, prefixed))
	gw_env_log_gateway(&self->env);
}

FIXTURE_TEARDOWN(squat)
{
	if (self->env.gateway > 0)
		kill(self->env.gateway, SIGCONT);
	if (gw_env_stop(&self->env))
		TH_LOG("could not remove %s", self->env.dir);
}

/* The HTTP status of GET path, or of a binary infer of zeros when path is NULL; -1. */
static int gw_status(FIXTURE_DATA(squat) * self, const char *path)
{
	char cmd[2048], out[64], req[256], hdr[96];
	FILE *f;
	int hlen;

	if (path) {
		snprintf(cmd, sizeof(cmd), "curl -s -o /dev/null -w '%%{http_code}' "
			 "'http://127.0.0.1:%d%s'", self->env.http_port, path);
		return tu_run(cmd, out, sizeof(out)) ? -1 : atoi(out);
	}
	snprintf(req, sizeof(req), "%s/req.bin", self->env.dir);
	f = fopen(req, "w");
	if (!f)
		return -1;
	hlen = fprintf(f, "{\"inputs\":[{\"name\":\"data\",\"shape\":[1,3,224,224],"
			  "\"datatype\":\"FP32\",\"parameters\":{\"binary_data_size\":%zu}}]}",
		       IN_BYTES);
	for (size_t i = 0; i < IN_BYTES; i++)
		fputc(0, f);
	if (fclose(f) || hlen < 0)
		return -1;
	snprintf(hdr, sizeof(hdr), "Inference-Header-Content-Length: %d", hlen);
	snprintf(cmd, sizeof(cmd), "curl -s -X POST --data-binary '@%s' -H '%s' -o /dev/null "
		 "-w '%%{http_code}' 'http://127.0.0.1:%d/v2/models/mobilenet_v2/infer'",
		 req, hdr, self->env.http_port);
	return tu_run(cmd, out, sizeof(out)) ? -1 : atoi(out);
}

/* root's status of the member's tenant (put it), or NULL. */
static struct json_object *members_tenant(FIXTURE_DATA(squat) * self)
{
	char resp[65536];
	struct json_object *o, *arr, *t = NULL;

	if (tu_request(self->env.sock, "{\"cmd\":\"status\",\"name\":\"64990:" TENANT "\"}\n",
		       resp, sizeof(resp)) < 0)
		return NULL;
	o = json_tokener_parse(resp);
	if (json_object_object_get_ex(o, "tenants", &arr) && json_object_array_length(arr) == 1)
		t = json_object_get(json_object_array_get_idx(arr, 0));
	json_object_put(o);
	return t;
}

TEST_F_TIMEOUT(squat, restart__a_members_tenant_of_the_prefixed_name_keeps_nothing, 900)
{
	const char *extra[] = { "--cache-dir", cache_dir, NULL };
	char model[PATH_MAX + 64], colocctl[512], out[8192];
	const char *submit[] = { "submit", TENANT, model, "--qos-ms", "60000", NULL };
	struct json_object *t;
	int ready = 0, infer = 0;

	ASSERT_EQ(200, gw_status(self, NULL));
	snprintf(model, sizeof(model), "%s/mobilenet_v2/1/model.model", self->env.repo);
	ASSERT_EQ(0, kill(self->env.gateway, SIGSTOP));
	ASSERT_EQ(0, tu_stop_colocd(self->env.colocd));
	self->env.colocd = tu_start_colocd_with(self->env.sock, self->env.pin, self->env.log, extra);
	ASSERT_LT(0, self->env.colocd);
	ASSERT_EQ(0, tu_colocctl_as(tu_bin("colocctl", colocctl, sizeof(colocctl)),
				    self->env.sock, MEMBER, submit, out, sizeof(out)))
	TH_LOG("the member's submit: %s", out);
	ASSERT_EQ(0, kill(self->env.gateway, SIGCONT));
	/* main: ready while every infer failed, or UNAVAILABLE for as long as the member liked */
	for (int s = 0; s < BACK_S && (ready != 200 || infer != 200); s++) {
		sleep(1);
		ready = gw_status(self, "/v2/models/mobilenet_v2/ready");
		infer = ready == 200 ? gw_status(self, NULL) : 0;
	}
	EXPECT_EQ(200, ready);
	EXPECT_EQ(200, infer) gw_env_log_gateway(&self->env);
	t = members_tenant(self);
	ASSERT_NE(NULL, t) TH_LOG("the member's tenant is gone");
	EXPECT_EQ(MEMBER, json_object_get_int(json_object_object_get(t, "owner")));
	EXPECT_EQ(0, json_object_get_int64(json_object_object_get(t, "offered")))
	TH_LOG("the gateway's queries went to the member's tenant");
	json_object_put(t);
}

TEST_HARNESS_MAIN
