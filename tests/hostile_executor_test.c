// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd against compromised executors: a real colocd whose --executor is
 * tests/hostile_executor.c, which misbehaves as each tenant's name says
 * (hostile-MODE) and runs the real coloc-executor for any other tenant. Every
 * breach of the shared-memory protocol fails its tenant with a reason that
 * names it, while root's ping is answered throughout and an honest tenant
 * in the same colocd keeps serving correct outputs; reported times out of
 * bounds are clamped to colocd's round trip, in the block log and status;
 * a summary of the model that lies or overflows refuses its tenant only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "coloc/client.h"
#include "own_colocd.h"
#include "reference.h"
#include "testutil.h"

#define READY_MS 180000
#define QOS_MS 60000
#define TOL 1e-3f

static char cache_dir[64];

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("hostile-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(hostile)
{
	struct own_colocd d;
	struct coloc_client *c, *ping;
	float *input, *want;
	size_t in_bytes, out_bytes;
};

FIXTURE_SETUP(hostile)
{
	char why[8192];
	int r = own_colocd_prepare(&self->d, "hostile", cache_dir, true, why, sizeof(why));

	if (r > 0)
		SKIP(return, "%.900s", why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	ASSERT_LT(0, own_colocd_start(&self->d, NULL)) TH_LOG("colocd did not start");
	ASSERT_EQ(0, coloc_client_connect(self->d.sock, &self->c));
	ASSERT_EQ(0, coloc_client_connect(self->d.sock, &self->ping));
}

FIXTURE_TEARDOWN(hostile)
{
	coloc_client_close(self->c);
	coloc_client_close(self->ping);
	if (own_colocd_finish(&self->d))
		TH_LOG("could not remove %s", self->d.dir);
	free(self->input);
	free(self->want);
}

static struct json_object *call(struct coloc_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static struct json_object *call(struct coloc_client *c, const char *fmt, ...)
{
	char line[4096], *resp = NULL;
	struct json_object *o;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (coloc_client_request(c, line, &resp))
		return NULL;
	o = json_tokener_parse(resp);
	free(resp);
	return o;
}

static bool is_ok(struct json_object *o)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v);
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) && json_object_get_string(v) ?
		       json_object_get_string(v) :
		       "";
}

static double num_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : -1;
}

/* Root's ping on its own connection: answered, or colocd is stuck. */
static bool pinged(FIXTURE_DATA(hostile) * self)
{
	struct json_object *r = call(self->ping, "{\"cmd\":\"ping\"}");
	bool ok = is_ok(r);

	json_object_put(r);
	return ok;
}

/* The status object of tenant name (put it), or NULL. */
static struct json_object *tenant_status(FIXTURE_DATA(hostile) * self, const char *name)
{
	struct json_object *resp = call(self->c, "{\"cmd\":\"status\",\"name\":\"%s\"}", name);
	struct json_object *arr, *t = NULL;

	if (is_ok(resp) && json_object_object_get_ex(resp, "tenants", &arr) &&
	    json_object_array_length(arr) == 1)
		t = json_object_get(json_object_array_get_idx(arr, 0));
	json_object_put(resp);
	return t;
}

/* Waits until name is in state (or failed, when that is not it); its status then (put it). */
static struct json_object *wait_state(FIXTURE_DATA(hostile) * self, const char *name,
				      const char *state)
{
	for (int waited = 0; waited < READY_MS; waited += 20) {
		struct json_object *t = tenant_status(self, name);
		const char *now = str_of(t, "state");

		if (!strcmp(now, state) || !strcmp(now, "failed"))
			return t;
		json_object_put(t);
		if (!pinged(self))
			return NULL;
		usleep(20000);
	}
	return NULL;
}

/* Through libcoloc_client, which hands the model over as a descriptor. */
static bool submit(FIXTURE_DATA(hostile) * self, const char *name)
{
	struct coloc_submit sub = { .name = name, .model = self->d.model, .qos_ms = QOS_MS };
	struct json_object *r = coloc_client_submit(self->c, &sub);
	bool ok = is_ok(r);

	json_object_put(r);
	return ok;
}

/* The honest tenant, ready, with an input and its in-process outputs. */
static bool honest_ready(FIXTURE_DATA(hostile) * self)
{
	struct json_object *t;
	size_t out_elems = 0;
	bool ready;

	if (!submit(self, "honest"))
		return false;
	t = wait_state(self, "honest", "ready");
	ready = !strcmp(str_of(t, "state"), "ready");
	self->in_bytes = (size_t)num_of(t, "input_bytes");
	self->out_bytes = (size_t)num_of(t, "output_bytes");
	json_object_put(t);
	self->input = malloc(self->in_bytes);
	if (!ready || !self->input)
		return false;
	for (size_t i = 0; i < self->in_bytes / sizeof(float); i++)
		self->input[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
	self->want = tu_model_outputs(self->d.model, self->input, &out_elems);
	return self->want && out_elems * sizeof(float) == self->out_bytes;
}

/* One query of the honest tenant: answered OK with the in-process outputs. */
static void expect_honest_served(struct __test_metadata *_metadata, FIXTURE_DATA(hostile) * self)
{
	struct coloc_infer_result res;
	float *got = calloc(1, self->out_bytes), max_err, max_ref;

	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, coloc_client_infer(self->c, "honest", self->input, self->in_bytes, got,
					self->out_bytes, &res))
	TH_LOG("%s", coloc_client_error(self->c));
	ASSERT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
	ref_compare(got, self->want, (int64_t)(self->out_bytes / sizeof(float)), &max_err,
		    &max_ref);
	EXPECT_LE(max_err, TOL * (1.0f + max_ref)) TH_LOG("max |error| %g", max_err);
	free(got);
}

/*
 * Each breach fails its tenant with a reason naming it; the executor that
 * made its doorbell blocking keeps its tenant (nothing of colocd's changed)
 * and has its query refused; throughout, ping is answered and the honest
 * tenant serves correct outputs.
 */
TEST_F_TIMEOUT(hostile, breaches__each_fails_its_tenant_colocd_serves_the_others, 900)
{
	static const struct {
		const char *name, *state, *says;
		bool query;
	} cases[] = {
		{ "hostile-silent", "failed", "hung", true },
		{ "hostile-header", "failed", "rewrote the shared memory's header", true },
		{ "hostile-status", "failed", "with status 77", true },
		{ "hostile-reason", "failed", "without its end", true },
		{ "hostile-echo", "failed", "the command was slot", true },
		{ "hostile-boundary", "failed", "where its plan", true },
		{ "hostile-unsent", "failed", "never sent", true },
		{ "hostile-twice", "failed", "rewrote its completion", true },
		{ "hostile-flood", "failed", "rang its doorbell", false },
		{ "hostile-hangup", "failed", "closed its end of the doorbell", false },
		{ "hostile-flags", "ready", "", true },
	};
	const int nr = sizeof(cases) / sizeof(cases[0]);
	struct coloc_infer_result res;
	int sent = 0, answered = 0;
	float *out;

	ASSERT_TRUE(honest_ready(self));
	out = malloc(self->out_bytes);
	ASSERT_NE(NULL, out);
	for (int i = 0; i < nr; i++) {
		ASSERT_TRUE(submit(self, cases[i].name)) TH_LOG("%s", cases[i].name);
	}
	for (int i = 0; i < nr; i++) {
		struct json_object *t = wait_state(self, cases[i].name, "ready");

		ASSERT_NE(NULL, t) TH_LOG("%s: no state, or colocd stuck", cases[i].name);
		json_object_put(t);
	}
	for (int i = 0; i < nr; i++)
		if (cases[i].query) {
			ASSERT_EQ(0, coloc_client_infer_send(self->c, cases[i].name, (uint64_t)i,
							     self->input, self->in_bytes));
			sent++;
		}
	while (answered < sent) {
		int r = coloc_client_infer_recv(self->c, &res, out, self->out_bytes, 100);

		ASSERT_GE(r, 0) TH_LOG("%s", coloc_client_error(self->c));
		ASSERT_TRUE(pinged(self));
		if (!r)
			continue;
		answered++;
		/* none of them ran the model: never an answer taken for an output */
		EXPECT_NE(COLOC_INFER_OK, res.status)
		TH_LOG("%s answered ok", cases[res.tag].name);
		TH_LOG("%s: %s", cases[res.tag].name, res.error);
	}
	for (int i = 0; i < nr; i++) {
		struct json_object *t = wait_state(self, cases[i].name, cases[i].state);

		ASSERT_NE(NULL, t);
		EXPECT_STREQ(cases[i].state, str_of(t, "state")) TH_LOG("%s", cases[i].name);
		EXPECT_NE(NULL, strstr(str_of(t, "reason"), cases[i].says))
		TH_LOG("%s: %s", cases[i].name, str_of(t, "reason"));
		TH_LOG("%s: %s %s", cases[i].name, str_of(t, "state"), str_of(t, "reason"));
		json_object_put(t);
		ASSERT_TRUE(pinged(self));
	}
	/* past the serving timer's idle second, when a shared doorbell would have hung colocd */
	for (int i = 0; i < 15; i++) {
		ASSERT_TRUE(pinged(self));
		usleep(100000);
	}
	expect_honest_served(_metadata, self);
	free(out);
}

/* The lines of colocd's log that start with prefix; -1 if it cannot be read. */
static int log_lines(FIXTURE_DATA(hostile) * self, const char *prefix, bool *escape_seen)
{
	FILE *f = fopen(self->d.log, "r");
	char line[8192];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, prefix, strlen(prefix)))
			n++;
		if (strchr(line, '\x1b') || strchr(line, '\r'))
			*escape_seen = true;
	}
	fclose(f);
	return n;
}

/*
 * What an executor writes to stdout and stderr reaches colocd's log, each
 * line behind its tenant's name, made printable (no escape byte, no
 * carriage return, no line of its own that looks like colocd's), at most
 * 64 lines a window; the rest is counted and said when it leaves. The
 * honest tenant keeps being served throughout.
 */
TEST_F_TIMEOUT(hostile, output__logged_behind_its_tenant_printable_and_bounded, 300)
{
	const char *prefix = "colocd: tenant hostile-chatter executor ";
	struct json_object *t, *r;
	bool escape = false;
	int n = 0;

	ASSERT_TRUE(honest_ready(self));
	ASSERT_TRUE(submit(self, "hostile-chatter"));
	t = wait_state(self, "hostile-chatter", "ready");
	ASSERT_NE(NULL, t);
	json_object_put(t);
	for (int i = 0; i < 100 && n < 64; i++) {
		usleep(50000);
		n = log_lines(self, prefix, &escape);
	}
	EXPECT_EQ(64, n) TH_LOG("%d lines of the executor logged (1005 written)", n);
	EXPECT_FALSE(escape);
	EXPECT_EQ(0, log_lines(self, "colocd: forged", &escape));
	ASSERT_TRUE(pinged(self));
	expect_honest_served(_metadata, self);
	r = call(self->c, "{\"cmd\":\"remove\",\"name\":\"hostile-chatter\"}");
	ASSERT_TRUE(is_ok(r));
	json_object_put(r);
	for (int i = 0;
	     i < 100 && log_lines(self, "colocd: tenant hostile-chatter executor", &escape) <= 64;
	     i++)
		usleep(50000);
	n = log_lines(self, prefix, &escape);
	EXPECT_EQ(65, n) TH_LOG("no count of the lines not logged once it left");
	EXPECT_FALSE(escape);
	ASSERT_TRUE(pinged(self));
}

/*
 * Executors that lie in the summary their tenant is admitted by, or in the
 * kernel versions they report at ready (shm.h): each submit is refused
 * with the check that failed, quoting nothing of what they wrote (a list
 * of versions that passes the checks but is not the profile's: its first
 * difference), and its tenant is gone; so is a tenant whose second
 * executor describes another model than its first. Throughout, ping is
 * answered and the honest tenant serves correct outputs.
 */
TEST_F_TIMEOUT(hostile, summary__lying_or_oversized_refused_its_tenant_only, 900)
{
	static const struct {
		const char *name, *says;
	} cases[] = {
		{ "hostile-oversize", "described its model with a layer count out of 1 to 8192" },
		{ "hostile-overflow", "described its model with layer costs whose sum overflows" },
		{ "hostile-name", "described its model with a name that is not 1 to 63" },
		{ "hostile-versions", "reported a kernel version name that is not 1 to 47" },
		{ "hostile-shuffle", "is of other kernel versions than its executor built" },
	};
	struct coloc_submit sub = { .model = self->d.model, .qos_ms = QOS_MS };
	struct json_object *r, *t;

	ASSERT_TRUE(honest_ready(self));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sub.name = cases[i].name;
		r = coloc_client_submit(self->c, &sub);
		ASSERT_NE(NULL, r) TH_LOG("%s", coloc_client_error(self->c));
		EXPECT_FALSE(is_ok(r)) TH_LOG("%s admitted", cases[i].name);
		EXPECT_NE(NULL, strstr(str_of(r, "error"), cases[i].says))
		TH_LOG("%s: %s", cases[i].name, str_of(r, "error"));
		EXPECT_EQ(NULL, strstr(str_of(r, "error"), "passwd"))
		TH_LOG("%s", str_of(r, "error"));
		json_object_put(r);
		t = tenant_status(self, cases[i].name);
		EXPECT_EQ(NULL, t) TH_LOG("%s is still there", cases[i].name);
		json_object_put(t);
		ASSERT_TRUE(pinged(self));
	}
	unlink("/tmp/coloc-hostile-second");
	sub.name = "hostile-second";
	sub.executors = 2;
	r = coloc_client_submit(self->c, &sub);
	ASSERT_NE(NULL, r) TH_LOG("%s", coloc_client_error(self->c));
	EXPECT_FALSE(is_ok(r)) TH_LOG("hostile-second admitted");
	EXPECT_NE(NULL, strstr(str_of(r, "error"), "described another model than the tenant's"))
	TH_LOG("%s", str_of(r, "error"));
	json_object_put(r);
	t = tenant_status(self, "hostile-second");
	EXPECT_EQ(NULL, t) TH_LOG("hostile-second is still there");
	json_object_put(t);
	unlink("/tmp/coloc-hostile-second");
	ASSERT_TRUE(pinged(self));
	expect_honest_served(_metadata, self);
}

/* The column named name in a TSV header line; -1 if none. */
static int column(const char *header, const char *name)
{
	char copy[1024], *save = NULL, *tok;
	int i = 0;

	snprintf(copy, sizeof(copy), "%s", header);
	for (tok = strtok_r(copy, "\t\n", &save); tok; tok = strtok_r(NULL, "\t\n", &save), i++)
		if (!strcmp(tok, name))
			return i;
	return -1;
}

static const char *field(char *line, int col, char *buf, size_t len)
{
	char *save = NULL, *tok = strtok_r(line, "\t\n", &save);

	for (int i = 0; tok && i < col; i++)
		tok = strtok_r(NULL, "\t\n", &save);
	snprintf(buf, len, "%s", tok ? tok : "");
	return buf;
}

/*
 * An executor reporting ~2^64, 0 and 2^63 ns: every block of it is logged
 * at most at colocd's round trip and marked clamped, status counts them;
 * the honest tenant's blocks are not clamped and its outputs stay right.
 */
TEST_F_TIMEOUT(hostile, times__clamped_to_the_round_trip_in_block_log_and_status, 900)
{
	struct coloc_infer_result res;
	int hostile_blocks = 0, honest_blocks = 0, c_tenant, c_measured, c_rtt, c_clamped;
	char line[8192], header[1024], a[64], b[64], d[64], e[64];
	struct json_object *t;
	float *out;
	FILE *f;

	ASSERT_TRUE(honest_ready(self));
	ASSERT_TRUE(submit(self, "hostile-times"));
	t = wait_state(self, "hostile-times", "ready");
	ASSERT_STREQ("ready", str_of(t, "state")) TH_LOG("%s", str_of(t, "reason"));
	json_object_put(t);
	out = malloc(self->out_bytes);
	ASSERT_NE(NULL, out);
	for (int i = 0; i < 6; i++) {
		ASSERT_EQ(0, coloc_client_infer(self->c, "hostile-times", self->input,
						self->in_bytes, out, self->out_bytes, &res));
		EXPECT_EQ(COLOC_INFER_OK, res.status) TH_LOG("%s", res.error);
		EXPECT_LE(res.exec_ns, res.latency_ns);
		ASSERT_TRUE(pinged(self));
	}
	for (int i = 0; i < 3; i++)
		expect_honest_served(_metadata, self);
	free(out);

	f = fopen(self->d.blocks, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(header, sizeof(header), f));
	c_tenant = column(header, "tenant");
	c_measured = column(header, "measured_us");
	c_rtt = column(header, "round_trip_us");
	c_clamped = column(header, "clamped");
	ASSERT_GE(c_clamped, 0) TH_LOG("%s", header);
	while (fgets(line, sizeof(line), f)) {
		char l1[8192], l2[8192], l3[8192];
		bool hostile;

		memcpy(l1, line, sizeof(l1));
		memcpy(l2, line, sizeof(l2));
		memcpy(l3, line, sizeof(l3));
		hostile = !strcmp(field(line, c_tenant, a, sizeof(a)), "hostile-times");
		field(l1, c_measured, b, sizeof(b));
		field(l2, c_rtt, d, sizeof(d));
		field(l3, c_clamped, e, sizeof(e));
		EXPECT_LE(strtod(b, NULL), strtod(d, NULL)) TH_LOG("%s", line);
		EXPECT_STREQ(hostile ? "1" : "0", e);
		hostile_blocks += hostile;
		honest_blocks += !hostile;
	}
	fclose(f);
	TH_LOG("%d blocks of hostile-times, %d of honest in the block log", hostile_blocks,
	       honest_blocks);
	EXPECT_GE(hostile_blocks, 6);
	EXPECT_GE(honest_blocks, 3);
	t = tenant_status(self, "hostile-times");
	EXPECT_EQ(hostile_blocks, num_of(t, "clamped_times"));
	json_object_put(t);
	t = tenant_status(self, "honest");
	EXPECT_EQ(0, num_of(t, "clamped_times"));
	json_object_put(t);
}

TEST_HARNESS_MAIN
