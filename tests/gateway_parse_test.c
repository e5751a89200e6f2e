// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway's parsers on their own, without a server (docs/gateway.md):
 * KServe v2 infer bodies (JSON and the binary extension) and responses,
 * the model repository, listening addresses, each fed good and hostile
 * input. The gateway end to end is gateway_test.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "addr.h"
#include "grpc_h2.h"
#include "infer_request.h"
#include "repository.h"
#include "testutil.h"

/* ---- the parsers, without a server ------------------------------------------------ */

/* A model of one input [1,2,3] and two outputs [2] and [1,3]. */
static void small_model(struct gw_model_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->name, "small");
	strcpy(cfg->version, "3");
	cfg->nr_inputs = 1;
	strcpy(cfg->inputs[0].name, "x");
	cfg->inputs[0].nr_dims = 3;
	cfg->inputs[0].dims[0] = 1;
	cfg->inputs[0].dims[1] = 2;
	cfg->inputs[0].dims[2] = 3;
	cfg->inputs[0].elems = 6;
	cfg->nr_outputs = 2;
	strcpy(cfg->outputs[0].name, "a");
	cfg->outputs[0].nr_dims = 1;
	cfg->outputs[0].dims[0] = 2;
	cfg->outputs[0].elems = 2;
	strcpy(cfg->outputs[1].name, "b");
	cfg->outputs[1].nr_dims = 2;
	cfg->outputs[1].dims[0] = 1;
	cfg->outputs[1].dims[1] = 3;
	cfg->outputs[1].elems = 3;
}

TEST(infer_parse__nested_flat_and_binary_inputs_read_alike)
{
	static const float want[6] = { 1.5f, -2.0f, 0.25f, 3e-7f, 1e9f, -0.0f };
	struct gw_model_config cfg;
	struct gw_infer_request req;
	char why[256], body[1024];
	const char *nested =
		"{\"id\":\"n\",\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],"
		"\"datatype\":\"FP32\",\"data\":[[[1.5,-2,0.25],[3e-7,1e9,-0.0]]]}]}\n";
	const char *flat = "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\","
			   "\"data\":[1.5,-2,0.25,3e-7,1e9,-0.0]}]}";
	int n;

	small_model(&cfg);
	ASSERT_EQ(0,
		  gw_infer_parse(&cfg, nested, strlen(nested), (size_t)-1, &req, why, sizeof(why)))
	TH_LOG("%s", why);
	ASSERT_EQ(sizeof(want), req.input_bytes);
	EXPECT_EQ(0, memcmp(want, req.input, sizeof(want)));
	EXPECT_TRUE(req.has_id);
	EXPECT_STREQ("n", req.id);
	/* no "outputs": every output, as JSON */
	ASSERT_EQ(2, req.nr_outputs);
	EXPECT_EQ(0, req.outputs[0]);
	EXPECT_EQ(1, req.outputs[1]);
	EXPECT_FALSE(req.binary[0]);
	gw_infer_request_free(&req);

	ASSERT_EQ(0, gw_infer_parse(&cfg, flat, strlen(flat), (size_t)-1, &req, why, sizeof(why)));
	EXPECT_EQ(0, memcmp(want, req.input, sizeof(want)));
	EXPECT_FALSE(req.has_id);
	gw_infer_request_free(&req);

	n = snprintf(body, sizeof(body),
		     "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\","
		     "\"parameters\":{\"binary_data_size\":24}}],\"outputs\":[{\"name\":\"b\","
		     "\"parameters\":{\"binary_data\":true}}]}");
	memcpy(body + n, want, sizeof(want));
	ASSERT_EQ(0, gw_infer_parse(&cfg, body, (size_t)n + sizeof(want), (size_t)n, &req, why,
				    sizeof(why)))
	TH_LOG("%s", why);
	EXPECT_EQ(0, memcmp(want, req.input, sizeof(want)));
	ASSERT_EQ(1, req.nr_outputs);
	EXPECT_EQ(1, req.outputs[0]);
	EXPECT_TRUE(req.binary[0]);
	gw_infer_request_free(&req);
}

/* Each hostile body is refused with 400 and a reason naming the problem. */
TEST(infer_parse__hostile_bodies_get_400_with_the_reason)
{
	static const struct {
		const char *json;
		size_t binary; /* bytes of binary data after the JSON (0xff each) */
		long header; /* -1: no binary extension; -2: past the body */
		const char *why;
	} cases[] = {
		{ "{\"inputs\":[]}", 0, -1, "input(s)" },
		{ "[1,2]", 0, -1, "not one JSON object" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,6]}]} x",
		  0, -1, "not one JSON object" },
		{ "{\"inputs\":[{\"name\":\"y\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,6]}]}",
		  0, -1, "no input named 'y'" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[6],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,6]}]}",
		  0, -1, "shape must be [1,2,3]" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"INT64\",\"data\":[1,2,3,4,5,6]}]}",
		  0, -1, "datatype" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5]}]}",
		  0, -1, "exactly 6 numbers" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,6,7]}]}",
		  0, -1, "exactly 6 numbers" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,\"6\"]}]}",
		  0, -1, "array of numbers" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[[[[[[[[[[1]]]]]]]]]]}]}",
		  0, -1, "nested deeper than 3" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"parameters\":{\"binary_data_size\":24}}]}",
		  23, 0, "past the body's end" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"parameters\":{\"binary_data_size\":24}}]}",
		  25, 0, "1 bytes after" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"parameters\":{\"binary_data_size\":-24}}]}",
		  0, 0, "binary_data_size must be 24" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"parameters\":{\"binary_data_size\":9223372036854775807}}]}",
		  24, 0, "binary_data_size must be 24" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,6]}]}",
		  0, -2, "past the body" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,6]},"
		  "{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,6]}]}",
		  0, -1, "input(s)" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,6]}],"
		  "\"outputs\":[{\"name\":\"zz\"}]}",
		  0, -1, "no output named 'zz'" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,6]}],"
		  "\"outputs\":[{\"name\":\"a\"},{\"name\":\"a\"}]}",
		  0, -1, "asked twice" },
		{ "{\"id\":7,\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,6]}]}",
		  0, -1, "\"id\" must be a string" },
		{ "{\"id\":\"a\\u0000b\",\"inputs\":[]}", 0, -1, "\"id\" must be a string" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,6],}]}",
		  0, -1, "not one JSON object" },
	};
	struct gw_model_config cfg;

	small_model(&cfg);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t jlen = strlen(cases[i].json), len = jlen + cases[i].binary;
		char *body = malloc(len + 1), why[256] = "";
		struct gw_infer_request req;
		size_t header = cases[i].header == -1 ? (size_t)-1 :
				cases[i].header == -2 ? len + 1 :
							jlen;

		ASSERT_NE(NULL, body);
		memcpy(body, cases[i].json, jlen);
		memset(body + jlen, 0xff, cases[i].binary);
		EXPECT_EQ(400, gw_infer_parse(&cfg, body, len, header, &req, why, sizeof(why)))
		TH_LOG("case %zu: %s", i, cases[i].json);
		EXPECT_NE(NULL, strstr(why, cases[i].why))
		TH_LOG("case %zu: '%s' does not say '%s'", i, why, cases[i].why);
		gw_infer_request_free(&req);
		free(body);
	}
	/* a long id is refused, one byte shorter is echoed */
	for (int extra = 0; extra < 2; extra++) {
		char body[1024], why[256];
		struct gw_infer_request req;
		int n = snprintf(body, sizeof(body),
				 "{\"id\":\"%0*d\",\"inputs\":[{\"name\":\"x\","
				 "\"shape\":[1,2,3],\"datatype\":\"FP32\","
				 "\"data\":[1,2,3,4,5,6]}]}",
				 GW_ID_MAX - 1 + extra, 0);

		EXPECT_EQ(extra ? 400 : 0, gw_infer_parse(&cfg, body, (size_t)n, (size_t)-1, &req,
							  why, sizeof(why)));
		gw_infer_request_free(&req);
	}
}

/*
 * Mutants of good bodies (JSON with nested data; the binary extension with
 * its header length moved too), each in a buffer of its exact size so that
 * ASan sees any read past it: every one is parsed or refused with 400 and
 * a reason, never anything else.
 */
/* The peak RSS of this process in kB (reset to the current one by clear_refs 5), or -1. */
static long peak_rss_kb(bool reset)
{
	long kb = tu_proc_status_kb(0, "VmHWM");

	if (reset)
		tu_reset_peak_rss(0);
	return kb;
}

/*
 * JSON parts of empty objects (json-c: ~100 B to ~1 KB each) are refused
 * with 413 by their length or their count of values before json-c parses
 * them: this process's peak RSS grows by far less than json-c would take.
 */
TEST(infer_parse__values_past_the_models_inputs_are_refused_413_unparsed)
{
	static const char head[] = "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],"
				   "\"datatype\":\"FP32\",\"data\":[";
	size_t sizes[] = { 3000, 8u << 20 }; /* by the count; by the length */
	struct gw_model_config cfg;
	struct gw_infer_request req;
	char why[256];

	small_model(&cfg);
	for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
		size_t len = strlen(head), nr = sizes[k] / 3;
		char *body = malloc(sizes[k] + 256);
		long before, after;

		ASSERT_NE(NULL, body);
		memcpy(body, head, len);
		for (size_t i = 0; i < nr; i++) {
			memcpy(body + len, i ? ",{}" : "{}", i ? 3 : 2);
			len += i ? 3 : 2;
		}
		memcpy(body + len, "]}]}", 4);
		len += 4;
		before = peak_rss_kb(true);
		EXPECT_EQ(413, gw_infer_parse(&cfg, body, len, (size_t)-1, &req, why, sizeof(why)));
		after = peak_rss_kb(false);
		EXPECT_NE(NULL, strstr(why, k ? "longer than" : "more values")) TH_LOG("%s", why);
		/* json-c would take ~800 B for each of 2.8M objects: GBs */
		if (before > 0) {
			EXPECT_LT(after, before + (64 << 10));
			TH_LOG("%ld kB, %ld before", after, before);
		}
		gw_infer_request_free(&req);
		free(body);
	}
	/* within the margin: parsed, and refused for what it holds */
	{
		const char *ok = "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],"
				 "\"datatype\":\"FP32\",\"data\":[1,2,3,4,5,{}]}]}";

		EXPECT_EQ(400,
			  gw_infer_parse(&cfg, ok, strlen(ok), (size_t)-1, &req, why, sizeof(why)));
		gw_infer_request_free(&req);
	}
}

/*
 * Nested bodies as clients write them are within the limits however many
 * inner lists their shape makes: [4096,1] as [[v],[v],...] and [1,64,64,3]
 * (a channels-last image's tolist()), each also pretty-printed as Python's
 * json.dumps(indent=2) writes it (a line per value, indented by depth).
 */
TEST(infer_parse__nested_bodies_with_many_inner_lists_are_within_the_limits)
{
	static const int64_t shapes[2][4] = { { 4096, 1 }, { 1, 64, 64, 3 } };
	static const int ranks[2] = { 2, 4 };
	struct gw_model_config cfg;
	struct gw_infer_request req;
	char why[256];

	small_model(&cfg);
	for (int k = 0; k < 2; k++) {
		for (int indent = 0; indent <= 2; indent += 2) {
			struct gw_tensor *t = &cfg.inputs[0];
			size_t cap = 16u << 20, len = 0;
			char *body = malloc(cap);
			int64_t idx[4] = { 0 }, v = 0;
			int depth;

			ASSERT_NE(NULL, body);
			t->nr_dims = ranks[k];
			t->elems = 1;
			for (int d = 0; d < ranks[k]; d++) {
				t->dims[d] = shapes[k][d];
				t->elems *= (uint64_t)shapes[k][d];
			}
			len += (size_t)snprintf(body, cap, "{\"inputs\":[{\"name\":\"x\",\"shape\":[");
			for (int d = 0; d < ranks[k]; d++)
				len += (size_t)snprintf(body + len, cap - len, "%s%lld", d ? "," : "",
							(long long)shapes[k][d]);
			len += (size_t)snprintf(body + len, cap - len,
						"],\"datatype\":\"FP32\",\"data\":");
			/* row-major, one list per index of every dimension but the last */
			depth = 0;
			for (;;) {
				while (depth < ranks[k]) {
					len += (size_t)snprintf(body + len, cap - len, "[");
					depth++;
				}
				for (int64_t i = 0; i < shapes[k][ranks[k] - 1]; i++)
					len += (size_t)snprintf(body + len, cap - len, "%s\n%*s%.6g",
								i ? "," : "", indent * depth,
								"", -1.2345678e-5 * (double)++v);
				for (;;) {
					len += (size_t)snprintf(body + len, cap - len, "\n%*s]",
								indent * (depth - 1), "");
					if (--depth == 0)
						break;
					if (++idx[depth - 1] < shapes[k][depth - 1]) {
						len += (size_t)snprintf(body + len, cap - len, ",");
						break;
					}
					idx[depth - 1] = 0;
				}
				if (depth == 0)
					break;
			}
			len += (size_t)snprintf(body + len, cap - len, "}]}");
			ASSERT_LT(len, cap);
			EXPECT_EQ(0, gw_infer_parse(&cfg, body, len, (size_t)-1, &req, why,
						    sizeof(why)))
			TH_LOG("shape %d, indent %d, %zu bytes: %s", k, indent, len, why);
			EXPECT_EQ(t->elems * 4, req.input_bytes);
			gw_infer_request_free(&req);
			free(body);
		}
	}
}

TEST(infer_parse__mutated_bodies_are_parsed_or_refused_with_400)
{
	const char *good_json =
		"{\"id\":\"a\",\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],"
		"\"datatype\":\"FP32\",\"data\":[[[1.5,-2,0.25],[3e-7,1e9,-0.0]]]}],"
		"\"outputs\":[{\"name\":\"b\"}]}";
	const char *good_bin = "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":"
			       "\"FP32\",\"parameters\":{\"binary_data_size\":24}}],"
			       "\"parameters\":{\"binary_data_output\":true}}";
	struct gw_model_config cfg;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	size_t parsed = 0;

	small_model(&cfg);
	for (int iter = 0; iter < 6000; iter++) {
		const char *good = iter % 2 ? good_bin : good_json;
		size_t good_len = strlen(good), edits = 1 + (size_t)iter % 5, len, header;
		char *text = malloc(good_len + edits + 24), *body, why[256] = "";
		struct gw_infer_request req;
		int r;

		ASSERT_NE(NULL, text);
		memcpy(text, good, good_len);
		len = tu_mutate(text, good_len, (int)edits, "{}[]\",:0123456789.-e\"x", &rng);
		header = len;
		if (iter % 2) {
			/* 24 bytes of tensor after the JSON; the header length off by a little */
			memset(text + len, 0x3f, 24);
			header = len + (size_t)(rng % 5) - 2;
			len += 24;
		} else {
			header = (size_t)-1;
		}
		body = malloc(len ? len : 1);
		ASSERT_NE(NULL, body);
		memcpy(body, text, len);
		r = gw_infer_parse(&cfg, body, len, header, &req, why, sizeof(why));
		if (r == 0) {
			parsed++;
			ASSERT_EQ(24, req.input_bytes);
			ASSERT_LE(1, req.nr_outputs);
			ASSERT_GE(2, req.nr_outputs);
		} else {
			ASSERT_EQ(400, r);
			ASSERT_NE(0, why[0]);
		}
		gw_infer_request_free(&req);
		free(body);
		free(text);
	}
	TH_LOG("%zu of 6000 mutants still parsed", parsed);
}

/* The response's JSON floats read back to the very floats; binary outputs follow it as bytes. */
TEST(infer_response__json_floats_round_trip_and_binary_follows)
{
	static const float out[5] = { 0.1f, -3.4028235e38f, 1.17549435e-38f, 7.0f, -1e-45f };
	const char *want_b = "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\","
			     "\"data\":[1,2,3,4,5,6]}],\"id\":\"q\",\"outputs\":[{\"name\":\"b\","
			     "\"parameters\":{\"binary_data\":true}},{\"name\":\"a\"}]}";
	struct gw_model_config cfg;
	struct gw_infer_request req;
	struct json_object *o, *outs, *a, *data, *v;
	char why[256], *body, *json;
	size_t len, hlen;

	small_model(&cfg);
	ASSERT_EQ(0,
		  gw_infer_parse(&cfg, want_b, strlen(want_b), (size_t)-1, &req, why, sizeof(why)));
	ASSERT_EQ(0, gw_infer_response(&cfg, &req, out, 5000000, 3999999, &body, &len, &hlen));
	/* b (outputs 2..4) as 12 bytes after the JSON */
	ASSERT_EQ(hlen + 12, len);
	EXPECT_EQ(0, memcmp(body + hlen, out + 2, 12));
	json = strndup(body, hlen);
	ASSERT_NE(NULL, json);
	o = json_tokener_parse(json);
	free(json);
	ASSERT_NE(NULL, o);
	ASSERT_TRUE(json_object_object_get_ex(o, "id", &v));
	EXPECT_STREQ("q", json_object_get_string(v));
	ASSERT_TRUE(json_object_object_get_ex(o, "parameters", &v));
	EXPECT_STREQ("{\"coloc_latency_us\":5000,\"coloc_exec_us\":3999}",
		     json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	ASSERT_TRUE(json_object_object_get_ex(o, "model_version", &v));
	EXPECT_STREQ("3", json_object_get_string(v));
	ASSERT_TRUE(json_object_object_get_ex(o, "outputs", &outs));
	ASSERT_EQ(2, json_object_array_length(outs));
	ASSERT_TRUE(
		json_object_object_get_ex(json_object_array_get_idx(outs, 0), "parameters", &v));
	ASSERT_TRUE(json_object_object_get_ex(v, "binary_data_size", &v));
	EXPECT_EQ(12, json_object_get_int(v));
	a = json_object_array_get_idx(outs, 1);
	ASSERT_TRUE(json_object_object_get_ex(a, "data", &data));
	ASSERT_EQ(2, json_object_array_length(data));
	for (int i = 0; i < 2; i++) {
		float f = (float)json_object_get_double(json_object_array_get_idx(data, i));

		EXPECT_EQ(0, memcmp(&f, &out[i], sizeof(f)))
		TH_LOG("output a[%d]: %.9g read back as %.9g", i, (double)out[i], (double)f);
	}
	json_object_put(o);
	free(body);
	gw_infer_request_free(&req);
}

static char unit_dir[64];

__attribute__((constructor)) static void make_unit_dir(void)
{
	tu_shared_tmpdir("gateway-parse-test", unit_dir, sizeof(unit_dir));
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* A repository with model NAME: config text, and versions (model files) as listed. */
static int make_model(const char *repo, const char *name, const char *config,
		      const char *const *files)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", repo, name);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -1;
	if (write_file(path, "config.json", config))
		return -1;
	for (int i = 0; files[i]; i++) {
		char file[PATH_MAX + 256], *slash;

		snprintf(file, sizeof(file), "%s/%s", path, files[i]);
		slash = strrchr(file, '/');
		*slash = '\0';
		if (mkdir(file, 0755) && errno != EEXIST)
			return -1;
		*slash = '/';
		if (write_file(
			    path, files[i],
			    strstr(files[i], ".model") ?
				    "model m\ninput image shape=1x3x8x8\ninput ids shape=1x16\n" :
				    "x"))
			return -1;
	}
	return 0;
}

/* --repository-links for at_repo */
static bool repo_links;

/* The repository at path, as coloc-gateway makes it (static: one at a time). */
static const struct gw_repo *at_repo(const char *path)
{
	static struct gw_repo r;

	if (gw_repo_init(&r, path, repo_links, NULL))
		r.path[0] = '\0';
	return &r;
}

TEST(repo_read_model__reads_config_highest_version_and_model_inputs)
{
	const char *files[] = { "1/model.onnx",
				"12/model.model",
				"3/model.model",
				"12/w.bin",
				"007/model.model",
				"99/readme",
				NULL };
	struct gw_model_config cfg;
	struct coloc_err err = { 0 };
	char repo[128], names[4][GW_NAME_MAX];

	ASSERT_NE(0, unit_dir[0]);
	snprintf(repo, sizeof(repo), "%s/repo-good", unit_dir);
	ASSERT_EQ(0, mkdir(repo, 0755));
	ASSERT_EQ(0, make_model(repo, "m1",
				"{\"qos_ms\": 12.5, \"executors\": 2, \"weights\": \"w.bin\"}",
				files));
	ASSERT_EQ(0, gw_repo_read_model(at_repo(repo), "m1", &cfg, &err)) TH_LOG("%s", err.msg);
	/* 12 is the highest whole version with a model file; 007 and 99 are not versions */
	EXPECT_STREQ("12", cfg.version);
	EXPECT_NE(NULL, strstr(cfg.path, "/m1/12/model.model"));
	EXPECT_EQ('/', cfg.path[0]);
	EXPECT_NE(NULL, strstr(cfg.weights, "/m1/12/w.bin"));
	EXPECT_EQ(12.5, cfg.qos_ms);
	EXPECT_EQ(2, cfg.executors);
	/* the .model file's input lines */
	ASSERT_EQ(2, cfg.nr_inputs);
	EXPECT_STREQ("image", cfg.inputs[0].name);
	EXPECT_EQ(192, cfg.inputs[0].elems);
	EXPECT_EQ(4, cfg.inputs[0].nr_dims);
	EXPECT_STREQ("ids", cfg.inputs[1].name);
	EXPECT_EQ(16, cfg.inputs[1].elems);
	/* the sizes colocd reports must add up; a missing output is one flat tensor */
	EXPECT_EQ(-EINVAL, gw_repo_check_sizes(&cfg, 4 * 200, 40, &err));
	coloc_err_clear(&err);
	ASSERT_EQ(0, gw_repo_check_sizes(&cfg, 4 * 208, 40, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(1, cfg.nr_outputs);
	EXPECT_EQ(10, cfg.outputs[0].dims[0]);

	ASSERT_EQ(0, make_model(repo, "m0", "{\"qos_ms\": 5}",
				(const char *[]){ "2/model.onnx", NULL }));
	ASSERT_EQ(0, mkdir(strcat(strcpy((char[256]){ 0 }, repo), "/no-config"), 0755));
	EXPECT_EQ(2, gw_repo_list(at_repo(repo), names, 4, &err));
	EXPECT_STREQ("m0", names[0]);
	EXPECT_STREQ("m1", names[1]);
	ASSERT_EQ(0, gw_repo_read_model(at_repo(repo), "m0", &cfg, &err)) TH_LOG("%s", err.msg);
	EXPECT_NE(NULL, strstr(cfg.path, "/m0/2/model.onnx"));
	EXPECT_EQ(0, cfg.nr_inputs);
	ASSERT_EQ(0, gw_repo_check_sizes(&cfg, 8, 4, &err));
	EXPECT_STREQ("input", cfg.inputs[0].name);
	EXPECT_EQ(2, cfg.inputs[0].dims[0]);
}

TEST(repo_read_model__refuses_bad_configs_and_names_with_the_reason)
{
	static const struct {
		const char *config, *why;
	} cases[] = {
		{ "{}", "qos_ms" },
		{ "{\"qos_ms\": 0}", "qos_ms" },
		{ "{\"qos_ms\": \"5\"}", "qos_ms" },
		{ "{\"qos_ms\": 5, \"qos\": 1}", "unknown key" },
		{ "{\"qos_ms\": 5, \"executors\": 99}", "executors" },
		{ "{\"qos_ms\": 5, \"weights\": \"../../etc/shadow\"}", "weights" },
		{ "{\"qos_ms\": 5, \"weights\": \"absent.bin\"}", "not found" },
		{ "{\"qos_ms\": 5, \"input\": [{\"name\": \"x\", \"dims\": [0]}]}", "dims" },
		{ "{\"qos_ms\": 5, \"input\": [{\"name\": \"x\", \"dims\": [65536, 65536]}]}",
		  "dims" },
		{ "{\"qos_ms\": 5, \"input\": [{\"name\": \"x\", \"dims\": [1], \"data_type\": \"TYPE_INT64\"}]}",
		  "TYPE_FP32" },
		{ "{\"qos_ms\": 5, \"input\": [{\"name\": \"x/y\", \"dims\": [1]}]}",
		  "tensor name" },
		{ "{\"qos_ms\": 5, \"output\": [{\"name\": \"o\", \"dims\": [1]}, {\"name\": \"o\", \"dims\": [2]}]}",
		  "named twice" },
		{ "{\"qos_ms\": 5,}", "not a JSON object" },
	};
	const char *files[] = { "1/model.onnx", NULL };
	struct gw_model_config cfg;
	char repo[128];

	ASSERT_NE(0, unit_dir[0]);
	snprintf(repo, sizeof(repo), "%s/repo-bad", unit_dir);
	ASSERT_EQ(0, mkdir(repo, 0755));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct coloc_err err = { 0 };

		ASSERT_EQ(0, make_model(repo, "m", cases[i].config, files));
		EXPECT_GT(0, gw_repo_read_model(at_repo(repo), "m", &cfg, &err))
		TH_LOG("%s", cases[i].config);
		EXPECT_NE(NULL, strstr(err.msg, cases[i].why))
		TH_LOG("%s: '%s' does not say '%s'", cases[i].config, err.msg, cases[i].why);
	}
	for (int i = 0; i < 3; i++) {
		struct coloc_err err = { 0 };
		const char *bad[] = { "../m", ".hidden", "a b" };

		EXPECT_EQ(-EINVAL, gw_repo_read_model(at_repo(repo), bad[i], &cfg, &err));
	}
}

/* A FIFO (or anything but a regular file) as config.json is refused, never waited on. */
TEST(repo_read_model__a_fifo_as_config_is_refused_not_opened_blocking)
{
	const char *files[] = { "1/model.model", NULL };
	struct gw_model_config cfg;
	struct coloc_err err = { 0 };
	char repo[128], path[192];

	ASSERT_NE(0, unit_dir[0]);
	snprintf(repo, sizeof(repo), "%s/repo-fifo", unit_dir);
	ASSERT_EQ(0, mkdir(repo, 0755));
	ASSERT_EQ(0, make_model(repo, "m", "{\"qos_ms\": 5}", files));
	snprintf(path, sizeof(path), "%s/m/config.json", repo);
	ASSERT_EQ(0, unlink(path));
	ASSERT_EQ(0, mkfifo(path, 0644));
	/* before: open() waited for a writer that never comes (the harness's timeout) */
	EXPECT_EQ(-EINVAL, gw_repo_read_model(at_repo(repo), "m", &cfg, &err));
	EXPECT_NE(NULL, strstr(err.msg, "not a regular file")) TH_LOG("%s", err.msg);
}

/*
 * Symbolic links in the repository are not followed: a model file, a
 * version folder, the weights or the model's folder that is a link (here to
 * files outside the repository) is refused or skipped, with the reason.
 */
TEST(repo_read_model__symbolic_links_are_followed_only_when_asked)
{
	const char *files[] = { "1/model.model", "1/w.bin", NULL };
	struct gw_model_config cfg;
	char repo[128], out[128], a[256], b[256];
	struct coloc_err err = { 0 };

	ASSERT_NE(0, unit_dir[0]);
	snprintf(repo, sizeof(repo), "%s/repo-links", unit_dir);
	snprintf(out, sizeof(out), "%s/outside", unit_dir);
	ASSERT_EQ(0, mkdir(repo, 0755));
	ASSERT_EQ(0, make_model(unit_dir, "outside", "{\"qos_ms\": 5}", files));
	/* the served version's model file is a link: that version is no version */
	ASSERT_EQ(0, make_model(repo, "m", "{\"qos_ms\": 5}", files));
	snprintf(a, sizeof(a), "%s/m/2", repo);
	ASSERT_EQ(0, mkdir(a, 0755));
	snprintf(a, sizeof(a), "%s/m/2/model.model", repo);
	snprintf(b, sizeof(b), "%s/1/model.model", out);
	ASSERT_EQ(0, symlink(b, a));
	ASSERT_EQ(0, gw_repo_read_model(at_repo(repo), "m", &cfg, &err)) TH_LOG("%s", err.msg);
	EXPECT_STREQ("1", cfg.version);
	/* a version folder that is a link */
	snprintf(a, sizeof(a), "%s/m/3", repo);
	snprintf(b, sizeof(b), "%s/1", out);
	ASSERT_EQ(0, symlink(b, a));
	ASSERT_EQ(0, gw_repo_read_model(at_repo(repo), "m", &cfg, &err)) TH_LOG("%s", err.msg);
	EXPECT_STREQ("1", cfg.version);
	/* weights that are a link */
	ASSERT_EQ(0, make_model(repo, "w", "{\"qos_ms\": 5, \"weights\": \"l.bin\"}", files));
	snprintf(a, sizeof(a), "%s/w/1/l.bin", repo);
	snprintf(b, sizeof(b), "%s/1/w.bin", out);
	ASSERT_EQ(0, symlink(b, a));
	coloc_err_clear(&err);
	EXPECT_GT(0, gw_repo_read_model(at_repo(repo), "w", &cfg, &err));
	EXPECT_NE(NULL, strstr(err.msg, "not a symbolic link")) TH_LOG("%s", err.msg);
	/* the model's folder itself a link */
	snprintf(a, sizeof(a), "%s/l", repo);
	ASSERT_EQ(0, symlink(out, a));
	coloc_err_clear(&err);
	EXPECT_EQ(-EINVAL, gw_repo_read_model(at_repo(repo), "l", &cfg, &err));
	EXPECT_NE(NULL, strstr(err.msg, "symbolic link")) TH_LOG("%s", err.msg);
	/* --repository-links: each is followed (KServe links a pvc:// model's folders) */
	repo_links = true;
	coloc_err_clear(&err);
	EXPECT_EQ(0, gw_repo_read_model(at_repo(repo), "m", &cfg, &err)) TH_LOG("%s", err.msg);
	EXPECT_STREQ("3", cfg.version);
	EXPECT_EQ(0, gw_repo_read_model(at_repo(repo), "w", &cfg, &err)) TH_LOG("%s", err.msg);
	EXPECT_EQ(0, gw_repo_read_model(at_repo(repo), "l", &cfg, &err)) TH_LOG("%s", err.msg);
	repo_links = false;
}

TEST(parse_addr__ipv4_ipv6_and_bad_forms)
{
	static const char *const bad[] = { "8000",	   "127.0.0.1",
					   "127.0.0.1:",   "127.0.0.1:65536",
					   "127.0.0.1:-1", "localhost:80",
					   "::1:80",	   "1.2.3.4:80x" };
	struct sockaddr_storage ss;
	socklen_t len;

	ASSERT_EQ(0, gw_parse_addr("127.0.0.1:8000", &ss, &len, 0));
	EXPECT_EQ(AF_INET, ss.ss_family);
	EXPECT_EQ(8000, ntohs(((struct sockaddr_in *)&ss)->sin_port));
	ASSERT_EQ(0, gw_parse_addr("[::1]:9", &ss, &len, 0));
	EXPECT_EQ(AF_INET6, ss.ss_family);
	EXPECT_EQ(-EINVAL, gw_parse_addr("0.0.0.0:0", &ss, &len, 0));
	EXPECT_EQ(0, gw_parse_addr("0.0.0.0:0", &ss, &len, 1));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-EINVAL, gw_parse_addr(bad[i], &ss, &len, 1)) TH_LOG("%s", bad[i]);
	}
}

/*
 * grpc-timeout on the own gRPC server: 1 to 8 digits and a unit. The
 * largest values are past 2^64 ns and mean no deadline (UINT64_MAX), never
 * a wrapped product: main's check (product > x) let 97357816H through as
 * 199.5 s.
 */
TEST(grpc_timeout__largest_values_saturate_malformed_ones_are_0)
{
	EXPECT_EQ(UINT64_MAX, h2s_grpc_timeout_ns("99999999H", 9));
	EXPECT_EQ(UINT64_MAX, h2s_grpc_timeout_ns("97357816H", 9));
	EXPECT_EQ(5999999940000000000ull, h2s_grpc_timeout_ns("99999999M", 9));
	EXPECT_EQ(99999999000000000ull, h2s_grpc_timeout_ns("99999999S", 9));
	EXPECT_EQ(99999999000000ull, h2s_grpc_timeout_ns("99999999m", 9));
	EXPECT_EQ(5124095ull * 3600000000000ull, h2s_grpc_timeout_ns("5124095H", 8));
	EXPECT_EQ(UINT64_MAX, h2s_grpc_timeout_ns("5124096H", 8));
	EXPECT_EQ(1500000000ull, h2s_grpc_timeout_ns("1500m", 5));
	EXPECT_EQ(1, h2s_grpc_timeout_ns("0n", 2));
	EXPECT_EQ(1, h2s_grpc_timeout_ns("0H", 2));
	EXPECT_EQ(0, h2s_grpc_timeout_ns("123456789S", 10)); /* 9 digits */
	EXPECT_EQ(0, h2s_grpc_timeout_ns("1x", 2));
	EXPECT_EQ(0, h2s_grpc_timeout_ns("S", 1));
	EXPECT_EQ(0, h2s_grpc_timeout_ns("-1S", 3));
}

TEST_HARNESS_MAIN
