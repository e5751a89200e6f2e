// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * client/infer_line.c, the infer lines without json-c, held to json-c's
 * readings: every answer line colocd wrote in a real run (captured from
 * colocd's socket, 2026-12-05: ok, a tag past 2^32, rejected, dropped) is
 * read by the scanner, member for member as a json-c reading of it
 * written here reads it; lines in another form (escapes, members twice,
 * numbers json-c reads otherwise, trailing bytes, no tag) are given back
 * to json-c; 200,000 random edits of the real lines are either given back
 * or read as json-c reads them. The request line is byte for byte
 * json-c's, and given back for a tenant name json-c would escape.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "infer_line.h"
#include "testutil.h"

/* colocd's answers in a real run (tools: a client on its socket, one tenant per qos) */
static const char *const real_lines[] = {
	"{\"ok\":true,\"tag\":0,\"status\":\"ok\",\"latency_ns\":11176925,\"exec_ns\""
	":3884563,\"parts_ns\":{\"queued\":1501210,\"dispatch\":4142864,\"compute\":3"
	"884563,\"copy\":1519545,\"notice\":128433,\"decide\":0,\"reply\":310},\"rece"
	"ive_ns\":809748,\"first_byte_at_ns\":33875465793649,\"answered_at_ns\":33875"
	"477937519,\"output_bytes\":4000}",
	"{\"ok\":true,\"tag\":123456789012,\"status\":\"ok\",\"latency_ns\":3647945,\"exec_ns\":3279345,\"parts_ns\":{\"queued\":131319,\"dispatch\":95452,\"comp"
	"ute\":3279345,\"copy\":32641,\"notice\":109067,\"decide\":0,\"reply\":121},\"receive_ns\":1051567,\"first_byte_at_ns\":33875503286574,\"answered_at_ns\""
	":33875507993780,\"output_bytes\":4000}",
	"{\"ok\":false,\"tag\":5,\"status\":\"rejected\",\"error\":\"no tenant nosuch"
	"\"}",
	"{\"ok\":false,\"tag\":9,\"status\":\"rejected\",\"error\":\"tenant mn: the i"
	"nput is 1000 bytes, its model takes 602112\"}",
	"{\"ok\":false,\"tag\":41,\"status\":\"dropped\",\"latency_ns\":4559906,\"exe"
	"c_ns\":0,\"parts_ns\":{\"queued\":0,\"dispatch\":0,\"compute\":0,\"copy\":0,"
	"\"notice\":0,\"decide\":0,\"reply\":4559906},\"receive_ns\":4794701,\"first_"
	"byte_at_ns\":33880504894994,\"answered_at_ns\":33880514252325,\"error\":\"ca"
	"nnot meet its deadline: 4.248 ms predicted for the rest, 0.448 ms left to it"
	"s deadline\"}",
	"{\"ok\":true,\"tag\":40,\"status\":\"ok\",\"latency_ns\":10184130,\"exec_ns\":7660841,\"parts_ns\":{\"queued\":1025127,\"dispatch\":345745,\"compute\":7"
	"660841,\"copy\":1059863,\"notice\":92284,\"decide\":0,\"reply\":270},\"recei"
	"ve_ns\":3890695,\"first_byte_at_ns\":33880499933426,\"answered_at_ns\":33880"
	"514173526,\"output_bytes\":4000}",
};

/* An answer read with json-c, as client_infer.c's fallback does, written again here. */
static int ref_read(const char *line, struct coloc_infer_result *res, size_t *out_bytes)
{
	static const char *const names[COLOC_NR_PARTS] = COLOC_PART_NAMES;
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = json_tokener_parse_ex(tok, line, (int)strlen(line)), *v, *parts;
	const char *status = NULL;

	json_tokener_free(tok);
	memset(res, 0, sizeof(*res));
	*out_bytes = 0;
	if (!o)
		return -1;
	if (!json_object_object_get_ex(o, "tag", &v)) {
		json_object_put(o);
		return -1;
	}
	res->tag = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(o, "error", &v))
		snprintf(res->error, sizeof(res->error), "%s", json_object_get_string(v));
	if (json_object_object_get_ex(o, "status", &v))
		status = json_object_get_string(v);
	res->status = !status			 ? COLOC_INFER_REJECTED :
		      !strcmp(status, "ok")	 ? COLOC_INFER_OK :
		      !strcmp(status, "dropped") ? COLOC_INFER_DROPPED :
		      !strcmp(status, "failed")	 ? COLOC_INFER_FAILED :
						   COLOC_INFER_REJECTED;
	if (json_object_object_get_ex(o, "latency_ns", &v))
		res->latency_ns = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(o, "exec_ns", &v))
		res->exec_ns = (uint64_t)json_object_get_int64(v);
#define REF_COUNT(key, field)                                                                 \
	if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int) && \
	    json_object_get_int64(v) >= 0)                                                    \
		res->field = (uint64_t)json_object_get_int64(v);
	REF_COUNT("receive_ns", receive_ns);
	REF_COUNT("first_byte_at_ns", first_byte_at_ns);
	REF_COUNT("answered_at_ns", answered_at_ns);
	REF_COUNT("woke_at_ns", woke_at_ns);
#undef REF_COUNT
	if (json_object_object_get_ex(o, "parts_ns", &parts) &&
	    json_object_is_type(parts, json_type_object))
		for (int p = 0; p < COLOC_NR_PARTS; p++)
			if (json_object_object_get_ex(parts, names[p], &v) &&
			    json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0)
				res->parts_ns[p] = (uint64_t)json_object_get_int64(v);
	if (res->status == COLOC_INFER_OK && json_object_object_get_ex(o, "output_bytes", &v)) {
		int64_t n = json_object_get_int64(v);

		if (!json_object_is_type(v, json_type_int) || n < 0 ||
		    (uint64_t)n > COLOC_MAX_PAYLOAD) {
			json_object_put(o);
			return -1;
		}
		*out_bytes = (size_t)n;
	}
	json_object_put(o);
	return 0;
}

/* Whether the scanner's reading of line is json-c's (a line it gave back agrees trivially). */
static bool agrees(const char *line, bool *taken)
{
	struct coloc_infer_result a, b;
	size_t na, nb;

	*taken = coloc_answer_line_read(line, strlen(line), &a, &na);
	if (!*taken)
		return true;
	if (ref_read(line, &b, &nb))
		return false;
	return a.tag == b.tag && a.status == b.status && a.latency_ns == b.latency_ns &&
	       a.exec_ns == b.exec_ns && !memcmp(a.parts_ns, b.parts_ns, sizeof(a.parts_ns)) &&
	       a.receive_ns == b.receive_ns && a.first_byte_at_ns == b.first_byte_at_ns &&
	       a.answered_at_ns == b.answered_at_ns && a.woke_at_ns == b.woke_at_ns &&
	       !strcmp(a.error, b.error) && na == nb;
}

TEST(real_answers_read_as_json_c_reads_them)
{
	for (size_t i = 0; i < sizeof(real_lines) / sizeof(*real_lines); i++) {
		bool taken;

		EXPECT_TRUE(agrees(real_lines[i], &taken)) TH_LOG("%s", real_lines[i]);
		EXPECT_TRUE(taken) TH_LOG("given back: %s", real_lines[i]);
	}
}

TEST(an_ok_answer_member_for_member)
{
	const char *line = "{\"ok\":true,\"tag\":7,\"status\":\"ok\",\"latency_ns\":3000123,"
			   "\"exec_ns\":2900000,\"parts_ns\":{\"queued\":5,\"dispatch\":6,"
			   "\"compute\":7,\"copy\":8,\"notice\":9,\"decide\":10,\"reply\":11},"
			   "\"receive_ns\":12,\"first_byte_at_ns\":13,\"answered_at_ns\":14,"
			   "\"woke_at_ns\":15,\"output_bytes\":4000}";
	struct coloc_infer_result r;
	size_t n;

	ASSERT_EQ(1, coloc_answer_line_read(line, strlen(line), &r, &n));
	EXPECT_EQ(7u, r.tag);
	EXPECT_EQ(COLOC_INFER_OK, r.status);
	EXPECT_EQ(3000123u, r.latency_ns);
	EXPECT_EQ(2900000u, r.exec_ns);
	for (int p = 0; p < COLOC_NR_PARTS; p++)
		EXPECT_EQ((uint64_t)(5 + p), r.parts_ns[p]);
	EXPECT_EQ(12u, r.receive_ns);
	EXPECT_EQ(13u, r.first_byte_at_ns);
	EXPECT_EQ(14u, r.answered_at_ns);
	EXPECT_EQ(15u, r.woke_at_ns);
	EXPECT_EQ(4000u, n);
	EXPECT_STREQ("", r.error);
}

TEST(other_forms_go_back_to_json_c)
{
	static const char *const lines[] = {
		"{\"tag\":1,\"status\":\"failed\",\"error\":\"a \\\"quoted\\\" why\"}",
		"{\"tag\":1,\"tag\":2,\"status\":\"ok\"}",
		"{\"tag\":01,\"status\":\"ok\"}",
		"{\"tag\":-1,\"status\":\"ok\"}",
		"{\"tag\":1,\"latency_ns\":1.5,\"status\":\"ok\"}",
		"{\"tag\":1,\"latency_ns\":1e3,\"status\":\"ok\"}",
		"{\"tag\":9223372036854775808,\"status\":\"ok\"}",
		"{\"tag\":1,\"status\":\"ok\",\"output_bytes\":67108865}",
		"{\"tag\":1,\"status\":\"ok\"} ",
		"{\"tag\":1,\"status\":\"ok\"}x",
		"{\"ok\":false,\"error\":\"unknown cmd\"}",
		"{\"tag\":1,\"status\":\"ok\",\"more\":[1]}",
		"{\"tag\":1,\"status\":\"ok\",\"more\":{}}",
		"{\"tag\":1,\"status\":\"ok\",\"more\":null}",
		"{ \"tag\":1,\"status\":\"ok\"}",
		"{\"tag\":1,\"status\":\"\xc3\xa9\"}",
		"{\"tag\":1,\"parts_ns\":{\"queued\":1,\"queued\":2}}",
		"{\"tag\":\"1\",\"status\":\"ok\"}",
		"{\"tag\":1,\"status\":ok}",
		"{\"tag\":1,\"ok\":tru}",
		"{\"tag\":1,",
		"{}",
		"",
		"[]",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(*lines); i++) {
		struct coloc_infer_result r;
		size_t n;

		EXPECT_EQ(0, coloc_answer_line_read(lines[i], strlen(lines[i]), &r, &n))
		TH_LOG("taken: %s", lines[i]);
	}
}

TEST(edited_answers_are_given_back_or_read_as_json_c_reads_them)
{
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	long taken_edited = 0;

	for (int round = 0; round < 200000; round++) {
		const char *good =
			real_lines[(size_t)round % (sizeof(real_lines) / sizeof(*real_lines))];
		char line[1024];
		size_t len = strlen(good);
		bool taken;

		ASSERT_LT(len + 8, sizeof(line));
		memcpy(line, good, len);
		len = tu_mutate(line, len, 1 + round % 4, "0123456789{}[]:,\"\\-.e", &rng);
		line[len] = '\0';
		if (strlen(line) != len)
			continue; /* a NUL in the middle: neither reader sees past it */
		EXPECT_TRUE(agrees(line, &taken)) TH_LOG("disagree: %s", line);
		taken_edited += taken;
	}
	/* the edits reach the scanner's reading, not only its refusals */
	EXPECT_LT(1000, taken_edited);
}

/* The request line as client_infer.c builds it with json-c. */
static void ref_request(char *out, size_t cap, const char *tenant, uint64_t tag, size_t len,
			bool memfd, size_t offset)
{
	struct json_object *req = json_object_new_object();

	json_object_object_add(req, "cmd", json_object_new_string("infer"));
	json_object_object_add(req, "tenant", json_object_new_string(tenant));
	json_object_object_add(req, "tag", json_object_new_int64((int64_t)tag));
	json_object_object_add(req, "input_bytes", json_object_new_int64((int64_t)len));
	if (memfd)
		json_object_object_add(req, "input", json_object_new_string("memfd"));
	if (offset)
		json_object_object_add(req, "input_offset", json_object_new_int64((int64_t)offset));
	snprintf(out, cap, "%s\n", json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
	json_object_put(req);
}

TEST(request_lines_are_json_c_s)
{
	static const char *const tenants[] = { "mnv2", "a", "Tenant_1.v-2", "mnA" };
	static const uint64_t tags[] = { 0, 1, 4294967296ull, INT64_MAX };
	static const size_t offsets[] = { 0, 5, 602112 };

	for (size_t t = 0; t < 4; t++)
		for (size_t g = 0; g < 4; g++)
			for (size_t o = 0; o < 3; o++)
				for (int m = 0; m < 2; m++) {
					char a[256], b[256];
					size_t n = coloc_infer_line_write(a, sizeof(a), tenants[t],
									  tags[g], 602112, m,
									  offsets[o]);

					ref_request(b, sizeof(b), tenants[t], tags[g], 602112, m,
						    offsets[o]);
					ASSERT_EQ(strlen(b), n);
					EXPECT_STREQ(b, a);
				}
}

TEST(tenants_json_c_escapes_are_left_to_it)
{
	static const char *const tenants[] = {
		"a/b", "a\"b", "a\\b", "a\nb", "caf\xc3\xa9", "a b"
	};
	char out[256];

	for (size_t i = 0; i < sizeof(tenants) / sizeof(*tenants); i++)
		EXPECT_EQ(0u, coloc_infer_line_write(out, sizeof(out), tenants[i], 1, 2, true, 0));
	/* nor a line that does not fit */
	EXPECT_EQ(0u, coloc_infer_line_write(out, 20, "mnv2", 1, 2, true, 0));
	EXPECT_EQ(0u, coloc_infer_line_write(out, sizeof(out), "mnv2", (uint64_t)INT64_MAX + 1, 2,
					     true, 0));
}

TEST_HARNESS_MAIN
