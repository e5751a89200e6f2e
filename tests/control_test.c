// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control protocol's handler (daemon/control*.c) fed request lines
 * directly, against a real started daemon core (the sensor loaded, maps
 * pinned): strict JSON, no NUL in strings, responses that are always valid
 * UTF-8 and valid strict JSON, and tenant requests translated to the tenant
 * module. Also the UTF-8 rules (daemon/utf8.c) against sequences worked out
 * by hand from RFC 3629's table.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "colocd.h"
#include "control.h"
#include "testutil.h"
#include "utf8.h"

FIXTURE(control)
{
	struct colocd d;
	struct loop *loop;
	pid_t kid;
};

FIXTURE_SETUP(control)
{
	struct colocd_config cfg = { .sample_hz = 1000, .window_ms = 10, .span_ms = 1000 };
	struct coloc_err err = { 0 };
	static char pin[128];

	self->kid = 0;
	if (geteuid() != 0)
		SKIP(return, "needs root to load the sensor");
	ASSERT_EQ(0, tu_mount_bpffs());
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/coloc-control-test-%d", getpid());
	cfg.pin_dir = pin;
	ASSERT_EQ(0, loop_new(&self->loop, &err));
	ASSERT_EQ(0, colocd_start(&self->d, &cfg, self->loop, &err))
	TH_LOG("colocd_start: %s", coloc_err_str(&err));
}

FIXTURE_TEARDOWN(control)
{
	if (self->kid > 0) {
		kill(self->kid, SIGKILL);
		waitpid(self->kid, NULL, 0);
	}
	colocd_stop(&self->d);
	loop_free(self->loop);
}

/*
 * Handles one line and parses the answer as strictly as a client would:
 * strict JSON, UTF-8 validated, one line. NULL if the answer is not that.
 */
static struct json_object *handle(struct colocd *d, const char *line, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	char *resp = control_handle(d, NULL, 0, line, len, coloc_now_ns());
	struct json_object *o = NULL;
	size_t n = resp ? strlen(resp) : 0;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	if (n && resp[n - 1] == '\n' && !memchr(resp, '\n', n - 1))
		o = json_tokener_parse_ex(tok, resp, (int)n - 1);
	if (o && json_tokener_get_parse_end(tok) != n - 1) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	free(resp);
	return o;
}

static struct json_object *handle_str(struct colocd *d, const char *line)
{
	return handle(d, line, strlen(line));
}

static bool is_ok(struct json_object *o)
{
	struct json_object *ok;

	return o && json_object_object_get_ex(o, "ok", &ok) && json_object_get_boolean(ok);
}

static const char *error_of(struct json_object *o)
{
	struct json_object *e;

	return o && json_object_object_get_ex(o, "error", &e) ? json_object_get_string(e) : "";
}

TEST_F(control, handle__ping_answers_with_this_process)
{
	struct json_object *o = handle_str(&self->d, "{\"cmd\":\"ping\"}"), *pid;

	ASSERT_TRUE(is_ok(o));
	ASSERT_TRUE(json_object_object_get_ex(o, "pid", &pid));
	EXPECT_EQ(getpid(), json_object_get_int(pid));
	json_object_put(o);
}

TEST_F(control, handle__loose_json_is_refused)
{
	static const char *const loose[] = {
		"{\"cmd\":\"ping\"} /* comment */",
		"{/* comment */\"cmd\":\"ping\"}",
		"{\"cmd\":\"ping\"} // comment",
		"{'cmd':'ping'}",
		"{'cmd':\"ping\"}",
		"{\"cmd\":\"ping\",'x':1}",
		"{\"cmd\":\"ping\",}",
		"{\"cmd\":[\"ping\",]}",
		"{\"cmd\":\"ping\"}{}",
		"{\"cmd\":\"ping\",\"x\":NaN}",
		"{\"cmd\":\"ping\",\"x\":-Infinity}",
		"{\"cmd\":\"ping\",\"x\":1.}",
		"{\"cmd\":\"ping\",\"x\":\"a\tb\"}",
		"{\"cmd\":\"ping\"",
	};

	for (size_t i = 0; i < sizeof(loose) / sizeof(loose[0]); i++) {
		struct json_object *o = handle(&self->d, loose[i], strlen(loose[i]));

		ASSERT_NE(NULL, o);
		EXPECT_FALSE(is_ok(o));
		TH_LOG("%s -> %s", loose[i], error_of(o));
		json_object_put(o);
	}
}

TEST_F(control, handle__quotes_and_words_inside_strings_are_fine)
{
	struct json_object *o = handle_str(
		&self->d,
		"{\"cmd\":\"ping\",\"note\":\"it's \\\"q\\\" ' NaN 1. \",\"x\":[1.5,-2e3]}");

	EXPECT_TRUE(is_ok(o));
	json_object_put(o);
}

TEST_F(control, handle__a_nul_in_any_string_is_refused)
{
	static const char *const nul[] = {
		"{\"cmd\":\"tenant-add\",\"name\":\"a\",\"cgroup\":\"/sys/fs/cgroup/x\\u0000/../../etc\"}",
		"{\"cmd\":\"ping\\u0000\"}",
		"{\"cmd\":\"ping\",\"x\":[\"\\u0000\"]}",
	};

	for (size_t i = 0; i < sizeof(nul) / sizeof(nul[0]); i++) {
		struct json_object *o = handle(&self->d, nul[i], strlen(nul[i]));

		ASSERT_NE(NULL, o);
		EXPECT_FALSE(is_ok(o));
		EXPECT_NE(NULL, strstr(error_of(o), "NUL"));
		json_object_put(o);
	}
}

TEST_F(control, handle__invalid_utf8_is_refused_and_never_echoed)
{
	const char line[] = "{\"cmd\":\"p\xff\xfeing\"}";
	struct json_object *o = handle(&self->d, line, sizeof(line) - 1);

	/* handle() parsed the answer with UTF-8 validation: NULL would mean bad bytes */
	ASSERT_NE(NULL, o);
	EXPECT_FALSE(is_ok(o));
	EXPECT_EQ(NULL, strchr(error_of(o), '\xff'));
	json_object_put(o);
}

TEST_F(control, handle__an_unknown_cmd_is_cut_between_characters)
{
	char line[256], cmd[80];
	struct json_object *o;

	/* 63 ASCII bytes, then a two-byte e-acute at bytes 64-65: the %.64s cut splits it */
	memset(cmd, 'x', 63);
	memcpy(cmd + 63, "\xc3\xa9", 3);
	snprintf(line, sizeof(line), "{\"cmd\":\"%s\"}", cmd);
	o = handle(&self->d, line, strlen(line));
	ASSERT_NE(NULL, o);
	EXPECT_FALSE(is_ok(o));
	EXPECT_NE(NULL, strstr(error_of(o), "unknown cmd"));
	EXPECT_EQ(NULL, strstr(error_of(o), "\xc3"));
	json_object_put(o);
}

TEST_F(control, handle__tenant_add_and_remove_go_through_the_tenant_module)
{
	struct json_object *o, *t, *pids;
	char line[256];

	self->kid = fork();
	ASSERT_GE(self->kid, 0);
	if (self->kid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	snprintf(line, sizeof(line), "{\"cmd\":\"tenant-add\",\"name\":\"a\",\"pids\":[%d]}",
		 self->kid);
	o = handle(&self->d, line, strlen(line));
	ASSERT_TRUE(is_ok(o));
	ASSERT_TRUE(json_object_object_get_ex(o, "tenant", &t));
	ASSERT_TRUE(json_object_object_get_ex(t, "pids", &pids));
	ASSERT_EQ(1, (int)json_object_array_length(pids));
	EXPECT_EQ(self->kid, json_object_get_int(json_object_array_get_idx(pids, 0)));
	json_object_put(o);
	ASSERT_NE(NULL, tenants_find(&self->d.tenants, "a"));

	o = handle_str(&self->d, "{\"cmd\":\"tenant-remove\",\"name\":\"a\"}");
	EXPECT_TRUE(is_ok(o));
	json_object_put(o);
	EXPECT_EQ(NULL, tenants_find(&self->d.tenants, "a"));

	o = handle_str(&self->d, "{\"cmd\":\"tenant-remove\",\"name\":\"a\"}");
	EXPECT_FALSE(is_ok(o));
	EXPECT_NE(NULL, strstr(error_of(o), "no tenant named 'a'"));
	json_object_put(o);
}

TEST_F(control, handle__pids_must_be_numbers)
{
	static const char *const bad[] = {
		"{\"cmd\":\"tenant-add\",\"name\":\"a\",\"pids\":[\"12\"]}",
		"{\"cmd\":\"tenant-add\",\"name\":\"a\",\"pids\":[1.5]}",
		"{\"cmd\":\"tenant-add\",\"name\":\"a\",\"pids\":12}",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_object *o = handle(&self->d, bad[i], strlen(bad[i]));

		EXPECT_FALSE(is_ok(o));
		EXPECT_NE(NULL, strstr(error_of(o), "pid"));
		json_object_put(o);
	}
	EXPECT_EQ(NULL, tenants_find(&self->d.tenants, "a"));
}

TEST_F(control, handle__serving_commands_check_their_arguments)
{
	static const struct {
		const char *line, *error_part;
	} cases[] = {
		{ "{\"cmd\":\"submit\",\"name\":\"a\"}", "needs \"name\", \"model\"" },
		{ "{\"cmd\":\"submit\",\"name\":\"a\",\"model\":\"/x.model\",\"qos_ms\":5}",
		  "as descriptors sent with the request" },
		{ "{\"cmd\":\"submit\",\"name\":\"a\",\"model\":\"/x.onnx\",\"qos_ms\":5,"
		  "\"external\":[\"../etc/shadow\"]}",
		  "not a relative path below the model's directory" },
		{ "{\"cmd\":\"submit\",\"name\":\"a\",\"model\":\"/x.model\",\"qos_ms\":0}",
		  "above 0" },
		{ "{\"cmd\":\"submit\",\"name\":\"a\",\"model\":\"/x.model\",\"qos_ms\":\"5\"}",
		  "a number" },
		{ "{\"cmd\":\"submit\",\"name\":\"a\",\"model\":\"/x.model\",\"qos_ms\":5,"
		  "\"executors\":0}",
		  "\"executors\" must be an integer from 1 to 8" },
		{ "{\"cmd\":\"submit\",\"name\":\"a\",\"model\":\"/x.model\",\"qos_ms\":5,"
		  "\"executors\":9}",
		  "from 1 to 8" },
		{ "{\"cmd\":\"submit\",\"name\":\"a\",\"model\":\"/x.model\",\"qos_ms\":5,"
		  "\"executors\":\"2\"}",
		  "an integer" },
		{ "{\"cmd\":\"status\",\"name\":\"nobody\"}", "no tenant named 'nobody'" },
		{ "{\"cmd\":\"remove\"}", "needs \"name\"" },
		{ "{\"cmd\":\"restart\",\"name\":\"nobody\"}", "nobody" },
		/* without a connection there is nowhere for the bytes to come from */
		{ "{\"cmd\":\"infer\",\"tenant\":\"a\",\"tag\":1,\"input_bytes\":4}",
		  "needs a connection" },
	};
	struct json_object *o, *arr;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		o = handle_str(&self->d, cases[i].line);
		ASSERT_NE(NULL, o) TH_LOG("%s", cases[i].line);
		EXPECT_FALSE(is_ok(o)) TH_LOG("%s", cases[i].line);
		EXPECT_NE(NULL, strstr(error_of(o), cases[i].error_part))
		TH_LOG("%s -> %s (want %s)", cases[i].line, error_of(o), cases[i].error_part);
		json_object_put(o);
	}
	/* nothing was admitted; status still lists every served core */
	o = handle_str(&self->d, "{\"cmd\":\"list\"}");
	ASSERT_TRUE(is_ok(o));
	ASSERT_TRUE(json_object_object_get_ex(o, "tenants", &arr));
	EXPECT_EQ(0, json_object_array_length(arr));
	json_object_put(o);
	o = handle_str(&self->d, "{\"cmd\":\"status\"}");
	ASSERT_TRUE(is_ok(o));
	ASSERT_TRUE(json_object_object_get_ex(o, "cores", &arr));
	EXPECT_EQ(tu_nr_online_cpus(), (int)json_object_array_length(arr));
	json_object_put(o);
}

TEST(utf8__sequence_len_follows_rfc3629)
{
	/* each: bytes, length, expected sequence length (0: ill-formed) */
	static const struct {
		const char *s;
		size_t len, want;
	} cases[] = {
		{ "A", 1, 1 },
		{ "\xc3\xa9", 2, 2 }, /* U+00E9 */
		{ "\xc0\x80", 2, 0 }, /* overlong NUL */
		{ "\xc1\xbf", 2, 0 }, /* overlong */
		{ "\xe2\x82\xac", 3, 3 }, /* U+20AC */
		{ "\xe0\x80\x80", 3, 0 }, /* overlong */
		{ "\xed\xa0\x80", 3, 0 }, /* surrogate U+D800 */
		{ "\xf0\x9f\x98\x80", 4, 4 }, /* U+1F600 */
		{ "\xf4\x90\x80\x80", 4, 0 }, /* above U+10FFFF */
		{ "\xf5\x80\x80\x80", 4, 0 },
		{ "\x80", 1, 0 }, /* lone continuation */
		{ "\xe2\x82", 2, 0 }, /* cut short */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		EXPECT_EQ(cases[i].want,
			  utf8_sequence_len((const unsigned char *)cases[i].s, cases[i].len));
}

TEST(utf8__sanitize_drops_a_cut_tail_and_replaces_bad_bytes)
{
	char cut[] = "ab\xe2\x82";
	char bad[] = "a\xff"
		     "b\xc3\xa9"
		     "c\xed\xa0\x80";
	char good[] = "\xe2\x82\xac and \xf0\x9f\x98\x80";

	EXPECT_EQ(2u, utf8_sanitize(cut));
	EXPECT_STREQ("ab", cut);
	/* 0xff, and the surrogate's three bytes one by one */
	EXPECT_EQ(4u, utf8_sanitize(bad));
	EXPECT_STREQ("a?b\xc3\xa9"
		     "c???",
		     bad);
	EXPECT_EQ(0u, utf8_sanitize(good));
	EXPECT_STREQ("\xe2\x82\xac and \xf0\x9f\x98\x80", good);
}

TEST_HARNESS_MAIN
