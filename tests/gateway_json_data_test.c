// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The JSON infer's "data" arrays read without json-c (gateway/json_data.c),
 * held to json-c's reading of the same text (the parser the gateway used
 * before): generated arrays, well formed and mutated, must be accepted or
 * refused alike and give byte-identical fp32 tensors. json-c accepts a few
 * forms RFC 8259 does not (NaN, Infinity, leading zeros, "1.", integers past
 * 64 bits clamped, overflowing exponents); those are refused with 400 here
 * and left out of the comparison (docs/design/gateway-json.md).
 */
#define _GNU_SOURCE
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "infer_request.h"

#define ELEMS 12 /* the model's one input, [3,4] */

static void model_3x4(struct gw_model_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->name, "m");
	strcpy(cfg->version, "1");
	cfg->nr_inputs = 1;
	strcpy(cfg->inputs[0].name, "x");
	cfg->inputs[0].nr_dims = 2;
	cfg->inputs[0].dims[0] = 3;
	cfg->inputs[0].dims[1] = 4;
	cfg->inputs[0].elems = ELEMS;
	cfg->nr_outputs = 1;
	strcpy(cfg->outputs[0].name, "y");
	cfg->outputs[0].nr_dims = 1;
	cfg->outputs[0].dims[0] = 1;
	cfg->outputs[0].elems = 1;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* json-c's numbers of a (nested) array, at most levels deep, each finite as fp32. */
static int ref_flatten(struct json_object *a, float *out, size_t *n, int depth, int levels)
{
	if (depth > levels)
		return -1;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *v = json_object_array_get_idx(a, i);

		if (json_object_is_type(v, json_type_array)) {
			if (ref_flatten(v, out, n, depth + 1, levels))
				return -1;
			continue;
		}
		if ((!json_object_is_type(v, json_type_double) &&
		     !json_object_is_type(v, json_type_int)) ||
		    *n == ELEMS)
			return -1;
		out[*n] = (float)json_object_get_double(v);
		if (!isfinite(out[(*n)++]))
			return -1;
	}
	return 0;
}

/* The tensor json-c reads from the array's text: 0, or -1 where it refuses. */
static int ref_parse(const char *arr, float *out)
{
	struct json_tokener *tok = json_tokener_new_ex(GW_JSON_MAX_DEPTH);
	struct json_object *o;
	size_t n = 0, end;
	int r = -1;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, arr, (int)strlen(arr));
	end = o ? json_tokener_get_parse_end(tok) : 0;
	while (o && arr[end] && strchr(" \t\r\n", arr[end]))
		end++;
	if (o && !arr[end] && json_object_is_type(o, json_type_array) &&
	    !ref_flatten(o, out, &n, 1, 2) && n == ELEMS)
		r = 0;
	json_object_put(o);
	json_tokener_free(tok);
	return r;
}

/* The tensor the gateway reads from {"inputs":[{... "data": arr}]}: 0 or its status. */
static int gw_parse(const struct gw_model_config *cfg, const char *arr, float *out, char *why)
{
	struct gw_infer_request req;
	char body[4096];
	int r;

	snprintf(
		body, sizeof(body),
		"{\"inputs\":[{\"name\":\"x\",\"shape\":[3,4],\"datatype\":\"FP32\",\"data\":%s}]}",
		arr);
	r = gw_infer_parse(cfg, body, strlen(body), (size_t)-1, &req, why, 256);
	if (!r)
		memcpy(out, req.input, ELEMS * sizeof(float));
	gw_infer_request_free(&req);
	return r;
}

/* One number in one of the forms JSON allows, in fp32's range or just past it. */
static void gen_number(uint64_t *s, char *p, size_t len)
{
	static const char *const edges[] = {
		"0",
		"-0",
		"-0.0",
		"0.0",
		"1e-45",
		"1.4e-45",
		"7e-46",
		"1e-400",
		"3.4028235e38",
		"3.40282356e38",
		"-3.4028235e38",
		"16777217",
		"9223372036854775807",
		"-9223372036854775808",
		"18446744073709551615",
		"9007199254740993",
		"1E+2",
		"1e-2",
		"2.5E3",
		"0.1",
		"123456789012345678",
	};
	double d;

	switch (next(s) % 6) {
	case 0:
		snprintf(p, len, "%s", edges[next(s) % (sizeof(edges) / sizeof(edges[0]))]);
		break;
	case 1:
		snprintf(p, len, "%lld", (long long)(next(s) % 2000001) - 1000000);
		break;
	case 2:
		memcpy(&d, &(uint64_t){ next(s) }, sizeof(d));
		snprintf(p, len, "%.17g", isfinite(d) && fabs(d) < 3e38 ? d : 1.5);
		break;
	case 3:
		snprintf(p, len, "%.9g", ((double)(next(s) % 100000) - 50000) / 977.0);
		break;
	case 4:
		snprintf(p, len, "%lldE%d", (long long)(next(s) % 1000), (int)(next(s) % 80) - 40);
		break;
	default:
		snprintf(p, len, "-%llu.%llue-%d", (unsigned long long)(next(s) % 100),
			 (unsigned long long)(next(s) % 1000), (int)(next(s) % 50));
	}
}

/* 12 numbers flat, as [3][4], or ragged, with white space here and there. */
static void gen_array(uint64_t *s, char *p, size_t len)
{
	static const char *const ws[] = { "", "", "", " ", "\n", "\t", "\r\n " };
	int form = (int)(next(s) % 3), cut = (int)(next(s) % ELEMS);
	size_t off = 0;

	off += (size_t)snprintf(p + off, len - off, "%s[", ws[next(s) % 7]);
	for (int i = 0; i < ELEMS; i++) {
		char num[64];
		bool open = (form == 1 && i % 4 == 0) || (form == 2 && (i == 0 || i == cut));
		bool close = (form == 1 && i % 4 == 3) ||
			     (form == 2 && (i == cut - 1 || i == ELEMS - 1));

		gen_number(s, num, sizeof(num));
		off += (size_t)snprintf(p + off, len - off, "%s%s%s%s%s%s", i ? "," : "",
					ws[next(s) % 7], open ? "[" : "", num, close ? "]" : "",
					ws[next(s) % 7]);
	}
	snprintf(p + off, len - off, "]%s", ws[next(s) % 7]);
}

/* Changes, inserts or removes one byte of p, from the bytes numbers and arrays are made of. */
static void mutate(uint64_t *s, char *p)
{
	static const char bytes[] = "0123456789-+.eE[], \t\"x{}:NIa";
	size_t len = strlen(p), at = next(s) % (len + 1);
	char c = bytes[next(s) % (sizeof(bytes) - 1)];

	switch (next(s) % 3) {
	case 0:
		if (at < len)
			p[at] = c;
		break;
	case 1:
		memmove(p + at + 1, p + at, len - at + 1);
		p[at] = c;
		break;
	default:
		if (at < len)
			memmove(p + at, p + at + 1, len - at);
	}
}

/* Text json-c reads as a number that RFC 8259 does not allow (refused by the gateway only). */
static regex_t lax;

TEST(json_data__generated_arrays_read_as_json_c_reads_them)
{
	struct gw_model_config cfg;
	uint64_t s = 0x2545f4914f6cdd1dull;
	int compared = 0, accepted = 0, lax_skipped = 0;

	ASSERT_EQ(0, regcomp(&lax,
			     "(^|[^0-9.eE+-])-?0[0-9]|-\\.|[0-9]\\.([^0-9]|$)|[eE][+-]?0*[0-9]{3,}|"
			     "[0-9]{19,}|N|I",
			     REG_EXTENDED | REG_NOSUB));
	model_3x4(&cfg);
	for (int iter = 0; iter < 30000; iter++) {
		float want[ELEMS], got[ELEMS];
		char arr[2048], why[256] = "";
		int mutations = iter % 3 ? (int)(next(&s) % 3) + 1 : 0, r, ref;

		gen_array(&s, arr, sizeof(arr) - 16);
		for (int m = 0; m < mutations; m++)
			mutate(&s, arr);
		r = gw_parse(&cfg, arr, got, why);
		ref = ref_parse(arr, want);
		if (regexec(&lax, arr, 0, NULL, 0) == 0 && (r != 0) != (ref != 0)) {
			/* json-c took a form RFC 8259 refuses: the gateway must say 400 */
			EXPECT_EQ(400, r) TH_LOG("%s", arr);
			lax_skipped++;
			continue;
		}
		compared++;
		ASSERT_EQ(ref == 0, r == 0)
		TH_LOG("'%s': json-c %s, the gateway %d (%s)", arr, ref ? "refuses" : "reads", r,
		       why);
		if (r) {
			ASSERT_EQ(400, r);
			continue;
		}
		accepted++;
		ASSERT_EQ(0, memcmp(want, got, sizeof(want))) TH_LOG("'%s'", arr);
	}
	regfree(&lax);
	TH_LOG("%d compared (%d read, the same bytes), %d of json-c's laxer forms refused",
	       compared, accepted, lax_skipped);
	ASSERT_GT(accepted, 5000);
	ASSERT_GT(compared - accepted, 5000);
}

/* What json-c reads but a KServe v2 tensor must not hold: each a 400 with its reason. */
TEST(json_data__numbers_past_rfc_8259_or_fp32_are_400)
{
	static const struct {
		const char *number, *why;
	} cases[] = {
		{ "NaN", "array of numbers" },
		{ "Infinity", "array of numbers" },
		{ "-Infinity", "array of numbers" },
		{ "1e999", "out of range" },
		{ "1e39", "out of range" },
		{ "-3.5e38", "out of range" },
		{ "01", "array of numbers" },
		{ "-01", "array of numbers" },
		{ "00", "array of numbers" },
		{ "1.", "array of numbers" },
		{ ".5", "array of numbers" },
		{ "+1", "array of numbers" },
		{ "1e", "array of numbers" },
		{ "0x10", "array of numbers" },
		{ "18446744073709551616", "out of range" },
		{ "-9223372036854775809", "out of range" },
	};
	struct gw_model_config cfg;

	model_3x4(&cfg);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char arr[256], why[256] = "";
		float got[ELEMS];

		snprintf(arr, sizeof(arr), "[1,2,3,4,5,6,7,8,9,10,11,%s]", cases[i].number);
		EXPECT_EQ(400, gw_parse(&cfg, arr, got, why)) TH_LOG("%s", cases[i].number);
		EXPECT_NE(NULL, strstr(why, cases[i].why))
		TH_LOG("%s: '%s' does not say '%s'", cases[i].number, why, cases[i].why);
	}
}

/* The arrays json-c no longer sees: nesting past the shape, a "data" not an array, escapes. */
TEST(json_data__data_members_outside_the_rules_are_400)
{
	static const struct {
		const char *input, *why;
	} cases[] = {
		{ "\"data\":[[[1,2,3,4]],[[5,6,7,8]],[[9,10,11,12]]]", "nested deeper than 2" },
		{ "\"data\":7", "array of numbers" },
		{ "\"data\":\"[1]\"", "array of numbers" },
		{ "\"d\\u0061ta\":[1,2,3,4,5,6,7,8,9,10,11,12]", "without escapes" },
		{ "\"data\":[1,2,3,4,5,6,7,8,9,10,11,12", "array of numbers" },
		{ "\"data\":[1,2,3,4,5,6,7,8,9,10,11,12,]", "array of numbers" },
		{ "\"data\":[1,2,3,4,5,6,7,8,9,10,11 12]", "array of numbers" },
	};
	struct gw_model_config cfg;

	model_3x4(&cfg);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gw_infer_request req;
		char body[512], why[256] = "";

		snprintf(body, sizeof(body),
			 "{\"inputs\":[{\"name\":\"x\",\"shape\":[3,4],\"datatype\":\"FP32\",%s}]}",
			 cases[i].input);
		EXPECT_EQ(400, gw_infer_parse(&cfg, body, strlen(body), (size_t)-1, &req, why,
					      sizeof(why)))
		TH_LOG("%s", cases[i].input);
		EXPECT_NE(NULL, strstr(why, cases[i].why))
		TH_LOG("%s: '%s' does not say '%s'", cases[i].input, why, cases[i].why);
		gw_infer_request_free(&req);
	}
}

/*
 * Values json-c would hold outside "data" are counted before it sees them:
 * past the margin, 413, though the JSON part's size and its values in all
 * are within what the model's input can need.
 */
TEST(json_data__values_outside_data_past_the_margin_are_413)
{
	const int elems = 4096;
	size_t cap = 16 * (size_t)elems + 512, len;
	char *body = malloc(cap), why[256] = "";
	struct gw_model_config cfg;
	struct gw_infer_request req;

	ASSERT_NE(NULL, body);
	model_3x4(&cfg);
	cfg.inputs[0].dims[0] = 1;
	cfg.inputs[0].dims[1] = elems;
	cfg.inputs[0].elems = (uint64_t)elems;
	for (int extra = 0; extra < 2; extra++) {
		len = (size_t)sprintf(body, "{\"parameters\":{\"p\":[0");
		for (int i = 0; i < GW_JSON_MARGIN_VALUES - 64 + extra * 128; i++)
			len += (size_t)sprintf(body + len, ",0");
		len += (size_t)sprintf(body + len,
				       "]},\"inputs\":[{\"name\":\"x\",\"shape\":[1,%d],"
				       "\"datatype\":\"FP32\"%s",
				       elems, extra ? "}]}" : ",\"data\":[0");
		for (int i = 1; !extra && i < elems; i++)
			len += (size_t)sprintf(body + len, ",0");
		if (!extra)
			sprintf(body + len, "]}]}");
		EXPECT_EQ(extra ? 413 : 0, gw_infer_parse(&cfg, body, strlen(body), (size_t)-1,
							  &req, why, sizeof(why)))
		TH_LOG("%d more: %s", extra * 128, why);
		if (extra)
			EXPECT_NE(NULL, strstr(why, "besides its \"data\" arrays"));
		gw_infer_request_free(&req);
	}
	free(body);
}

/* What http_infer.c charges before the parse covers the tensor the parse makes, binary or JSON. */
TEST(json_data__tensor_bound_covers_what_the_parse_allocates)
{
	const char *json = "{\"inputs\":[{\"name\":\"x\",\"shape\":[3,4],\"datatype\":\"FP32\","
			   "\"data\":[0,0,0,0,0,0,0,0,0,0,0,0]}]}";
	const char *bin = "{\"inputs\":[{\"name\":\"x\",\"shape\":[3,4],\"datatype\":\"FP32\","
			  "\"parameters\":{\"binary_data_size\":48}}]}";
	char body[512], why[256];
	struct gw_model_config cfg;
	struct gw_infer_request req;
	size_t hl = strlen(bin);

	model_3x4(&cfg);
	/* JSON: the whole tensor, 48 bytes, made and charged */
	ASSERT_EQ(0, gw_infer_parse(&cfg, json, strlen(json), (size_t)-1, &req, why, sizeof(why)));
	EXPECT_NE(NULL, req.input_buf);
	EXPECT_EQ(48, gw_infer_tensor_bound(&cfg, strlen(json), (size_t)-1));
	gw_infer_request_free(&req);
	/* binary, one input: used in the body, nothing made; the bound is its JSON's worth */
	memcpy(body, bin, hl);
	memset(body + hl, 0, 48);
	ASSERT_EQ(0, gw_infer_parse(&cfg, body, hl + 48, hl, &req, why, sizeof(why)));
	EXPECT_EQ(NULL, req.input_buf);
	EXPECT_EQ(48, gw_infer_tensor_bound(&cfg, hl + 48, hl)); /* 2 * hl + 2 > 48 */
	EXPECT_EQ(22, gw_infer_tensor_bound(&cfg, hl + 48, 10));
	gw_infer_request_free(&req);
	/* two inputs: always copied into the tensor, binary or not */
	cfg.nr_inputs = 2;
	cfg.inputs[1] = cfg.inputs[0];
	strcpy(cfg.inputs[1].name, "z");
	EXPECT_EQ(96, gw_infer_tensor_bound(&cfg, hl + 48, 10));
}

TEST_HARNESS_MAIN
