// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The infer answer written without json-c's objects (gateway/infer_answer.c),
 * held to the json-c builder it replaced (json_c_answer below, the
 * gateway's code up to s18): byte-identical answers for the same outputs,
 * extreme floats and escaped strings included, within the bytes
 * gw_infer_answer_bytes() charges; and both builders timed side by side
 * on an SSD-MobileNet answer and a 1 M-value one
 * (docs/measurements/gateway.md).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "infer_request.h"
#include "mono_clock.h"

/* One output of n values named "out", shape [1,n]; binary or JSON. */
static void model_one_output(struct gw_model_config *cfg, struct gw_infer_request *req,
			     uint64_t n, bool binary)
{
	memset(cfg, 0, sizeof(*cfg));
	memset(req, 0, sizeof(*req));
	strcpy(cfg->name, "ssd_mobilenet");
	strcpy(cfg->version, "1");
	cfg->nr_outputs = 1;
	strcpy(cfg->outputs[0].name, "out");
	cfg->outputs[0].nr_dims = 2;
	cfg->outputs[0].dims[0] = 1;
	cfg->outputs[0].dims[1] = (int64_t)n;
	cfg->outputs[0].elems = n;
	req->nr_outputs = 1;
	req->binary[0] = binary;
}

static struct json_object *json_c_floats(const float *v, uint64_t n)
{
	struct json_object *a = json_object_new_array_ext((int)n);

	for (uint64_t i = 0; i < n; i++) {
		char s[32];

		snprintf(s, sizeof(s), "%.9g", (double)v[i]);
		json_object_array_add(a, json_object_new_double_s((double)v[i], s));
	}
	return a;
}

/* The answer as the gateway built it with json-c, one object a value. */
static char *json_c_answer(const struct gw_model_config *cfg, const struct gw_infer_request *req,
			   const float *outputs, uint64_t latency_ns, uint64_t exec_ns)
{
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array(), *params;
	uint64_t offsets[GW_REPO_MAX_TENSORS], off = 0;
	char *text;

	for (int i = 0; i < cfg->nr_outputs; i++) {
		offsets[i] = off;
		off += cfg->outputs[i].elems;
	}
	json_object_object_add(o, "model_name", json_object_new_string(cfg->name));
	json_object_object_add(o, "model_version", json_object_new_string(cfg->version));
	if (req->has_id)
		json_object_object_add(o, "id", json_object_new_string(req->id));
	params = json_object_new_object();
	json_object_object_add(params, "coloc_latency_us",
			       json_object_new_int64((int64_t)(latency_ns / 1000)));
	json_object_object_add(params, "coloc_exec_us",
			       json_object_new_int64((int64_t)(exec_ns / 1000)));
	json_object_object_add(o, "parameters", params);
	for (int k = 0; k < req->nr_outputs; k++) {
		const struct gw_tensor *t = &cfg->outputs[req->outputs[k]];
		struct json_object *out = json_object_new_object();
		struct json_object *shape = json_object_new_array();

		json_object_object_add(out, "name", json_object_new_string(t->name));
		json_object_object_add(out, "datatype", json_object_new_string("FP32"));
		for (int i = 0; i < t->nr_dims; i++)
			json_object_array_add(shape, json_object_new_int64(t->dims[i]));
		json_object_object_add(out, "shape", shape);
		if (req->binary[k]) {
			params = json_object_new_object();
			json_object_object_add(params, "binary_data_size",
					       json_object_new_int64((int64_t)t->elems * 4));
			json_object_object_add(out, "parameters", params);
		} else {
			json_object_object_add(
				out, "data",
				json_c_floats(outputs + offsets[req->outputs[k]], t->elems));
		}
		json_object_array_add(arr, out);
	}
	json_object_object_add(o, "outputs", arr);
	text = strdup(json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}

/* n floats from xorshift bits: every exponent, NaN, infinities and denormals among them. */
static float *random_floats(uint64_t n, uint32_t seed)
{
	float *v = malloc(n * sizeof(*v) + 1);

	for (uint64_t i = 0; v && i < n; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 17;
		seed ^= seed << 5;
		memcpy(&v[i], &seed, sizeof(seed));
	}
	return v;
}

TEST(infer_answer__same_bytes_as_json_c_within_its_charge)
{
	static const float extremes[] = { -1.17549435e-38f, -3.4028235e38f, -1e-45f,
					  -1.40129846e-45f, -0.0f, NAN, -INFINITY, 0.1f };
	struct gw_model_config cfg;
	struct gw_infer_request req;
	uint64_t n = 4096;
	float *v = random_floats(n + 3, 2463534242u);
	char *body, *want;
	size_t len, hlen;

	ASSERT_NE(NULL, v);
	memcpy(v, extremes, sizeof(extremes));
	model_one_output(&cfg, &req, n, false);
	/* the second output: 3 values after the first's, asked first and binary */
	strcpy(cfg.outputs[1].name, "b\"\\\x01/\xc3\xa9");
	cfg.outputs[1].nr_dims = 1;
	cfg.outputs[1].dims[0] = 3;
	cfg.outputs[1].elems = 3;
	cfg.nr_outputs = 2;
	req.nr_outputs = 2;
	req.outputs[0] = 1;
	req.binary[0] = true;
	req.outputs[1] = 0;
	req.binary[1] = false;
	strcpy(req.id, "\x1f\"id\"\n\t\\/");
	req.has_id = true;
	ASSERT_EQ(0, gw_infer_response(&cfg, &req, v, 5000000, 3999999, &body, &len, &hlen));
	want = json_c_answer(&cfg, &req, v, 5000000, 3999999);
	ASSERT_NE(NULL, want);
	ASSERT_EQ(strlen(want), hlen);
	EXPECT_EQ(0, memcmp(want, body, hlen));
	ASSERT_EQ(hlen + 12, len);
	EXPECT_EQ(0, memcmp(body + hlen, v + n, 12));
	EXPECT_GE(gw_infer_answer_bytes(&cfg, &req), len);
	TH_LOG("%zu bytes of JSON, %zu charged", hlen, gw_infer_answer_bytes(&cfg, &req));
	free(want);
	free(body);
	free(v);
}

/* Every value at the longest "%.9g" an fp32 has: the charge still holds the answer. */
TEST(infer_answer_bytes__hold_the_longest_values)
{
	struct gw_model_config cfg;
	struct gw_infer_request req;
	uint64_t n = 1000;
	float *v = malloc(n * sizeof(*v));
	char *body;
	size_t len, hlen;

	ASSERT_NE(NULL, v);
	for (uint64_t i = 0; i < n; i++)
		v[i] = -1.17549435e-38f;
	model_one_output(&cfg, &req, n, false);
	memset(req.id, '\x01', GW_ID_MAX - 1);
	req.has_id = true;
	ASSERT_EQ(0, gw_infer_response(&cfg, &req, v, UINT64_MAX, UINT64_MAX, &body, &len, &hlen));
	EXPECT_EQ(len, hlen);
	EXPECT_GE(gw_infer_answer_bytes(&cfg, &req), len);
	EXPECT_GE(len, n * 15);
	free(body);
	free(v);
}

static double ms_since(uint64_t t0)
{
	return (double)(coloc_now_ns() - t0) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define REPLICAS 5

/*
 * json-c's builder and this one, alternated on the same outputs, REPLICAS
 * times each: the medians, spreads and ratio are logged; the test asserts
 * only that the answers agree (timings move with the machine's load).
 */
static void time_both(struct __test_metadata *_metadata, uint64_t n)
{
	struct gw_model_config cfg;
	struct gw_infer_request req;
	double ours[REPLICAS], json_c[REPLICAS];
	float *v = random_floats(n, 88172645u);
	char *body, *want;
	size_t len, hlen;

	ASSERT_NE(NULL, v);
	for (uint64_t i = 0; i < n; i++)
		if (!isfinite(v[i]))
			v[i] = 0.5f;
	model_one_output(&cfg, &req, n, false);
	for (int i = 0; i < REPLICAS; i++) {
		uint64_t t0 = coloc_now_ns();

		want = json_c_answer(&cfg, &req, v, 1000, 1000);
		json_c[i] = ms_since(t0);
		t0 = coloc_now_ns();
		ASSERT_EQ(0, gw_infer_response(&cfg, &req, v, 1000, 1000, &body, &len, &hlen));
		ours[i] = ms_since(t0);
		ASSERT_NE(NULL, want);
		ASSERT_EQ(strlen(want), len);
		EXPECT_EQ(0, memcmp(want, body, len));
		free(want);
		free(body);
	}
	qsort(ours, REPLICAS, sizeof(double), cmp_double);
	qsort(json_c, REPLICAS, sizeof(double), cmp_double);
	TH_LOG("%llu values, %zu bytes: json-c %.1f ms [%.1f-%.1f], written %.1f ms [%.1f-%.1f], "
	       "ratio %.2fx",
	       (unsigned long long)n, len, json_c[REPLICAS / 2], json_c[0], json_c[REPLICAS - 1],
	       ours[REPLICAS / 2], ours[0], ours[REPLICAS - 1],
	       json_c[REPLICAS / 2] / ours[REPLICAS / 2]);
	free(v);
}

TEST(infer_answer__build_time_against_json_c)
{
	time_both(_metadata, 182115); /* models/ssd_mobilenet.model's outputs */
	time_both(_metadata, 1u << 20);
}

TEST_HARNESS_MAIN
