// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway (KServe v2 over HTTP, docs/gateway.md). First its parsers
 * on their own: infer bodies (JSON and the binary extension), the model
 * repository, listening addresses, each fed good and hostile input. Then
 * end to end: a real colocd serving models/mobilenet_v2.model, the gateway
 * as the unprivileged `coloc` user in front of it, and clients no one here
 * wrote (curl, Python's requests in tests/gateway/kserve_client.py, a real
 * Prometheus scraping /metrics, read back through its query API), their
 * outputs compared with libcoloc_client's for the same input.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include "kselftest_harness.h"
#include "coloc/client.h"
#include "addr.h"
#include "infer_request.h"
#include "repository.h"
#include "testutil.h"

#define READY_S 240
#define TOL 1e-3f
#define QOS_MS 60000

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
		  0, -1, "exactly 6 numbers" },
		{ "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,2,3],\"datatype\":\"FP32\",\"data\":[[[[[[[[[[1]]]]]]]]]]}]}",
		  0, -1, "exactly 6 numbers" },
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

static char unit_dir[96];

__attribute__((constructor)) static void make_dirs(void);

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
	ASSERT_EQ(0, gw_repo_read_model(repo, "m1", &cfg, &err)) TH_LOG("%s", err.msg);
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
	EXPECT_EQ(2, gw_repo_list(repo, names, 4, &err));
	EXPECT_STREQ("m0", names[0]);
	EXPECT_STREQ("m1", names[1]);
	ASSERT_EQ(0, gw_repo_read_model(repo, "m0", &cfg, &err)) TH_LOG("%s", err.msg);
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
		EXPECT_GT(0, gw_repo_read_model(repo, "m", &cfg, &err))
		TH_LOG("%s", cases[i].config);
		EXPECT_NE(NULL, strstr(err.msg, cases[i].why))
		TH_LOG("%s: '%s' does not say '%s'", cases[i].config, err.msg, cases[i].why);
	}
	for (int i = 0; i < 3; i++) {
		struct coloc_err err = { 0 };
		const char *bad[] = { "../m", ".hidden", "a b" };

		EXPECT_EQ(-EINVAL, gw_repo_read_model(repo, bad[i], &cfg, &err));
	}
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

TEST(start__refuses_root_and_bad_usage_with_the_reason)
{
	char bin[PATH_MAX], cmd[PATH_MAX + 256], out[4096];

	tu_bin("coloc-gateway", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd), "'%s' --model-repository /nonexistent --http 1.2.3:80", bin);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "--http wants ADDR:PORT"));
	snprintf(cmd, sizeof(cmd), "'%s' --http 127.0.0.1:80", bin);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "--model-repository DIR is required"));
	snprintf(cmd, sizeof(cmd), "'%s' --model-repository /x --max-queue 0", bin);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "--max-queue wants"));
	if (geteuid() != 0)
		SKIP(return, "the refusal of root needs root");
	snprintf(cmd, sizeof(cmd), "'%s' --model-repository /nonexistent", bin);
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "refusing to run as root"));
}

/* ---- end to end: colocd, the gateway as `coloc`, real clients ---------------------------- */

static char cache_dir[64];

__attribute__((constructor)) static void make_dirs(void)
{
	tu_shared_tmpdir("gateway-test", cache_dir, sizeof(cache_dir));
	if (cache_dir[0]) {
		snprintf(unit_dir, sizeof(unit_dir), "%s/unit", cache_dir);
		if (mkdir(unit_dir, 0755))
			unit_dir[0] = '\0';
	}
}

FIXTURE(gw)
{
	char dir[64], sock[128], pin[128], log[128], gwlog[128], repo[128];
	char model[PATH_MAX];
	int http_port, metrics_port;
	pid_t colocd, gateway, prometheus;
	bool ready; /* setup went through (the harness runs a test after a setup SKIP) */
	struct coloc_client *c;
	float *input, *ref;
	size_t in_bytes, out_bytes;
};

/* curl: the HTTP status of METHOD url (body from a file, or none), the answer in out_file. */
static int http(const char *method, const char *url, const char *body_file, const char *header,
		const char *out_file)
{
	char cmd[2048], out[64];

	snprintf(cmd, sizeof(cmd), "curl -s -X %s %s%s%s %s%s%s -o '%s' -w '%%{http_code}' '%s'",
		 method, body_file ? "--data-binary '@" : "", body_file ? body_file : "",
		 body_file ? "'" : "", header ? "-H '" : "", header ? header : "",
		 header ? "'" : "", out_file ? out_file : "/dev/null", url);
	if (tu_run(cmd, out, sizeof(out)) != 0)
		return -1;
	return atoi(out);
}

/* Starts the gateway as the coloc user with these extra flags; waits until /v2/health/ready. */
static bool start_gateway(FIXTURE_DATA(gw) * self, const char *const *extra)
{
	char bin[PATH_MAX], http_addr[64], metrics_addr[64], url[128];
	const char *argv[32] = { "/usr/bin/setpriv",
				 "--reuid=coloc",
				 "--regid=coloc",
				 "--init-groups",
				 "--",
				 bin,
				 "--socket",
				 self->sock,
				 "--model-repository",
				 self->repo,
				 "--http",
				 http_addr,
				 "--metrics",
				 metrics_addr };
	int n = 14;

	tu_bin("coloc-gateway", bin, sizeof(bin));
	self->http_port = tu_free_port();
	self->metrics_port = tu_free_port();
	snprintf(http_addr, sizeof(http_addr), "127.0.0.1:%d", self->http_port);
	snprintf(metrics_addr, sizeof(metrics_addr), "127.0.0.1:%d", self->metrics_port);
	for (int i = 0; extra && extra[i] && n < 31; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	self->gateway = tu_spawn_logged(argv, self->gwlog);
	if (self->gateway <= 0)
		return false;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v2/health/ready", self->http_port);
	for (int i = 0; i < READY_S * 5; i++) {
		if (http("GET", url, NULL, NULL, NULL) == 200)
			return true;
		if (waitpid(self->gateway, NULL, WNOHANG) == self->gateway) {
			self->gateway = 0;
			return false;
		}
		usleep(200000);
	}
	return false;
}

FIXTURE_SETUP(gw)
{
	const char *root = getenv("COLOC_ROOT");
	const char *extra[] = { "--cache-dir", cache_dir, NULL };
	char out[4096], path[PATH_MAX + 64], cmd[PATH_MAX * 2];
	struct coloc_infer_result res;

	self->colocd = self->gateway = self->prometheus = 0;
	self->ready = false;
	self->c = NULL;
	self->input = self->ref = NULL;
	if (geteuid() != 0)
		SKIP(return, "needs root to run colocd");
	snprintf(path, sizeof(path), "%s/models/mobilenet_v2.model", root ? root : ".");
	if (!realpath(path, self->model))
		SKIP(return, "%.900s not found (set COLOC_ROOT to the repo root)", path);
	ASSERT_NE(0, cache_dir[0]);
	ASSERT_EQ(0, tu_mount_bpffs());
	ASSERT_EQ(0, tu_quick_profile(self->model, cache_dir, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-gw-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	/* the gateway runs as coloc: it must reach the socket and read the repository */
	ASSERT_EQ(0, chmod(self->dir, 0755));
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->gwlog, sizeof(self->gwlog), "%s/gateway.log", self->dir);
	snprintf(self->repo, sizeof(self->repo), "%s/repo", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-gw-test-%d", getpid());
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/mobilenet_v2/1' && cp '%s' '%s/mobilenet_v2/1/model.model' && "
		 "echo '{\"qos_ms\": %d}' > '%s/mobilenet_v2/config.json' && chmod -R a+rX '%s'",
		 self->repo, self->model, self->repo, QOS_MS, self->repo, self->repo);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	self->colocd = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	ASSERT_LT(0, self->colocd) TH_LOG("colocd did not start");
	ASSERT_EQ(0, coloc_client_connect(self->sock, &self->c));
	ASSERT_TRUE(start_gateway(self, NULL))
	{
		size_t len = 0;
		char *log = tu_read_file(self->gwlog, &len);

		TH_LOG("the gateway did not become ready: %.3000s", log ? log : "(no log)");
		free(log);
	}
	/* the reference: the same input through libcoloc_client */
	self->in_bytes = 3 * 224 * 224 * sizeof(float);
	self->out_bytes = 1000 * sizeof(float);
	self->input = malloc(self->in_bytes);
	self->ref = malloc(self->out_bytes);
	ASSERT_NE(NULL, self->input);
	ASSERT_NE(NULL, self->ref);
	for (size_t i = 0; i < self->in_bytes / sizeof(float); i++)
		self->input[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
	ASSERT_EQ(0, coloc_client_infer(self->c, "mobilenet_v2", self->input, self->in_bytes,
					self->ref, self->out_bytes, &res));
	ASSERT_EQ(COLOC_INFER_OK, res.status);
	ASSERT_EQ(self->out_bytes, res.output_bytes);
	snprintf(path, sizeof(path), "%s/input.bin", self->dir);
	{
		FILE *f = fopen(path, "wb");

		ASSERT_NE(NULL, f);
		ASSERT_EQ(1, fwrite(self->input, self->in_bytes, 1, f));
		ASSERT_EQ(0, fclose(f));
	}
	self->ready = true;
}

#define NEED_SETUP(self)                                                    \
	do {                                                                \
		if (!(self)->ready)                                         \
			SKIP(return, "no colocd and gateway (needs root)"); \
	} while (0)

FIXTURE_TEARDOWN(gw)
{
	char cmd[256];

	tu_stop_child(&self->prometheus);
	tu_stop_child(&self->gateway);
	coloc_client_close(self->c);
	if (self->colocd > 0)
		tu_stop_colocd(self->colocd);
	free(self->input);
	free(self->ref);
	if (self->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
		if (system(cmd))
			TH_LOG("could not remove %s", self->dir);
	}
}

/* got (n floats) against the client library's answer, within the tests' tolerance. */
static int differ(const float *got, const float *ref, size_t n)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++)
		if (!(fabsf(got[i] - ref[i]) <= TOL * fmaxf(1.0f, fabsf(ref[i]))))
			bad++;
	return bad;
}

static void url_of(FIXTURE_DATA(gw) * self, char *buf, size_t len, const char *path)
{
	snprintf(buf, len, "http://127.0.0.1:%d%s", self->http_port, path);
}

/* The outputs of the JSON part of a response in path ("data" of output 0), n floats. */
static int json_outputs(const char *path, float *out, size_t n, const char *want_id)
{
	size_t len = 0;
	char *text = tu_read_file(path, &len);
	struct json_object *o = text ? json_tokener_parse(text) : NULL, *v, *outs, *data;
	int r = -1;

	if (o && json_object_object_get_ex(o, "id", &v) &&
	    !strcmp(json_object_get_string(v), want_id) &&
	    json_object_object_get_ex(o, "outputs", &outs) &&
	    json_object_object_get_ex(json_object_array_get_idx(outs, 0), "data", &data) &&
	    json_object_array_length(data) == n) {
		for (size_t i = 0; i < n; i++)
			out[i] = (float)json_object_get_double(json_object_array_get_idx(data, i));
		r = 0;
	}
	json_object_put(o);
	free(text);
	return r;
}

TEST_F_TIMEOUT(gw, http__curl_json_and_binary_answers_equal_the_client_library, 600)
{
	char url[256], req[256], resp[256], hdr[128], meta[256];
	size_t n = self->out_bytes / sizeof(float), len = 0, hlen;
	float *got = malloc(self->out_bytes);
	char *body, *text;
	FILE *f;

	NEED_SETUP(self);

	ASSERT_NE(NULL, got);
	/* the metadata names the model's input as its .model file declares it */
	snprintf(meta, sizeof(meta), "%s/meta.json", self->dir);
	url_of(self, url, sizeof(url), "/v2/models/mobilenet_v2");
	ASSERT_EQ(200, http("GET", url, NULL, NULL, meta));
	text = tu_read_file(meta, &len);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "\"inputs\":[{\"name\":\"data\",\"datatype\":\"FP32\","
				     "\"shape\":[1,3,224,224]}]"))
	TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "\"shape\":[1000]"));
	free(text);

	/* JSON: the input as a flat array of numbers printed with %.9g (exact for fp32) */
	snprintf(req, sizeof(req), "%s/req.json", self->dir);
	f = fopen(req, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "{\"id\":\"curl-json\",\"inputs\":[{\"name\":\"data\",\"shape\":[1,3,224,224],"
		   "\"datatype\":\"FP32\",\"data\":[");
	for (size_t i = 0; i < self->in_bytes / sizeof(float); i++)
		fprintf(f, "%s%.9g", i ? "," : "", (double)self->input[i]);
	fprintf(f, "]}]}");
	ASSERT_EQ(0, fclose(f));
	snprintf(resp, sizeof(resp), "%s/resp.json", self->dir);
	url_of(self, url, sizeof(url), "/v2/models/mobilenet_v2/versions/1/infer");
	ASSERT_EQ(200, http("POST", url, req, "Content-Type: application/json", resp));
	ASSERT_EQ(0, json_outputs(resp, got, n, "curl-json"));
	EXPECT_EQ(0, differ(got, self->ref, n));

	/* binary: header, then the raw input; the output asked for as binary too */
	f = fopen(req, "w");
	ASSERT_NE(NULL, f);
	hlen = (size_t)fprintf(
		f,
		"{\"id\":\"curl-bin\",\"inputs\":[{\"name\":\"data\",\"shape\":[1,3,"
		"224,224],\"datatype\":\"FP32\",\"parameters\":{\"binary_data_size\":"
		"%zu}}],\"parameters\":{\"binary_data_output\":true}}",
		self->in_bytes);
	ASSERT_EQ(1, fwrite(self->input, self->in_bytes, 1, f));
	ASSERT_EQ(0, fclose(f));
	snprintf(hdr, sizeof(hdr), "Inference-Header-Content-Length: %zu", hlen);
	url_of(self, url, sizeof(url), "/v2/models/mobilenet_v2/infer");
	ASSERT_EQ(200, http("POST", url, req, hdr, resp));
	body = tu_read_file(resp, &len);
	ASSERT_NE(NULL, body);
	ASSERT_LT(self->out_bytes, len);
	EXPECT_NE(NULL, strstr(body, "\"id\":\"curl-bin\""));
	EXPECT_NE(NULL, strstr(body, "\"binary_data_size\":4000"));
	memcpy(got, body + len - self->out_bytes, self->out_bytes);
	EXPECT_EQ(0, differ(got, self->ref, n));
	free(body);
	free(got);
}

TEST_F_TIMEOUT(gw, http__python_requests_client_agrees_with_the_client_library, 600)
{
	char cmd[1024], out[4096], path[256], url[128];
	const char *root = getenv("COLOC_ROOT");
	size_t n = self->out_bytes / sizeof(float);
	const char *kinds[] = { "json", "binary" };

	NEED_SETUP(self);

	url_of(self, url, sizeof(url), "");
	snprintf(cmd, sizeof(cmd),
		 "python3 '%s/tests/gateway/kserve_client.py' '%s' mobilenet_v2 '%s/input.bin' "
		 "'%s/py' --concurrent 8",
		 root ? root : ".", url, self->dir, self->dir);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ok"));
	for (int k = 0; k < 2; k++) {
		size_t len = 0;
		char *got;

		snprintf(path, sizeof(path), "%s/py.%s.bin", self->dir, kinds[k]);
		got = tu_read_file(path, &len);
		ASSERT_NE(NULL, got);
		ASSERT_EQ(self->out_bytes, len);
		EXPECT_EQ(0, differ((float *)got, self->ref, n)) TH_LOG("%s", kinds[k]);
		free(got);
	}
}

TEST_F_TIMEOUT(gw, http__refusals_carry_their_status_and_reason, 600)
{
	static const struct {
		const char *method, *path, *body;
		int status;
		const char *why;
	} cases[] = {
		{ "GET", "/v2/health/live", NULL, 200, NULL },
		{ "GET", "/v2/models/mobilenet_v2/ready", NULL, 200, NULL },
		{ "GET", "/v2/models/mobilenet_v2/versions/1/ready", NULL, 200, NULL },
		{ "GET", "/v2/models/resnet50", NULL, 404, "unknown model" },
		{ "GET", "/v2/models/mobilenet_v2/versions/2", NULL, 404, "no version '2'" },
		{ "GET", "/v1/models", NULL, 404, "under /v2" },
		{ "GET", "/v2/models/mobilenet_v2/infer", NULL, 405, "POST" },
		{ "POST", "/v2/models/mobilenet_v2/infer", "{\"inputs\":", 400, "not one JSON" },
		{ "POST", "/v2/models/mobilenet_v2/infer",
		  "{\"inputs\":[{\"name\":\"data\",\"shape\":[1,3,224],\"datatype\":\"FP32\",\"data\":[1]}]}",
		  400, "shape must be [1,3,224,224]" },
		{ "POST", "/v2/repository/models/..%2f..%2fetc/load", "", 404, "no such path" },
		{ "POST", "/v2/repository/models/.hidden/load", "", 400, "model names" },
		{ "POST", "/v2/repository/models/absent/load", "", 404, "no model absent" },
	};
	char url[512], body[256], resp[256];

	NEED_SETUP(self);

	snprintf(body, sizeof(body), "%s/body", self->dir);
	snprintf(resp, sizeof(resp), "%s/resp", self->dir);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t len = 0;
		char *text;

		if (cases[i].body) {
			FILE *f = fopen(body, "w");

			ASSERT_NE(NULL, f);
			fputs(cases[i].body, f);
			ASSERT_EQ(0, fclose(f));
		}
		url_of(self, url, sizeof(url), cases[i].path);
		EXPECT_EQ(cases[i].status,
			  http(cases[i].method, url, cases[i].body ? body : NULL, NULL, resp))
		TH_LOG("%s %s", cases[i].method, cases[i].path);
		text = tu_read_file(resp, &len);
		ASSERT_NE(NULL, text);
		if (cases[i].why) {
			EXPECT_NE(NULL, strstr(text, "{\"error\":\"")) TH_LOG("%s", text);
			EXPECT_NE(NULL, strstr(text, cases[i].why))
			TH_LOG("%s %s: '%s' does not say '%s'", cases[i].method, cases[i].path,
			       text, cases[i].why);
		}
		free(text);
	}
	/* a body over the limit: 413 before it is read */
	{
		char cmd[1024], out[64];

		url_of(self, url, sizeof(url), "/v2/models/mobilenet_v2/infer");
		snprintf(
			cmd, sizeof(cmd),
			"head -c 70000000 /dev/zero | curl -s -X POST --data-binary @- -o /dev/null "
			"-w '%%{http_code}' '%s'",
			url);
		ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
		EXPECT_EQ(413, atoi(out));
	}
}

/* The queue holds one: of eight requests sent at once, some are refused with 503, the rest answered. */
TEST_F_TIMEOUT(gw, http__a_full_queue_refuses_with_503, 600)
{
	const char *extra[] = { "--max-queue", "1", NULL };
	char cmd[2048], out[4096], url[128], hdr[64], req[256];
	int ok = 0, refused = 0, other = 0, st;
	size_t hlen, len = 0;
	char *log;
	FILE *f;

	NEED_SETUP(self);

	/* the first gateway stops cleanly on SIGTERM (and, under ASan, without a report) */
	st = tu_stop_child(&self->gateway);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("wait status %#x", st);
	log = tu_read_file(self->gwlog, &len);
	ASSERT_NE(NULL, log);
	EXPECT_EQ(NULL, strstr(log, "Sanitizer")) TH_LOG("%.3000s", log);
	EXPECT_NE(NULL, strstr(log, "stopping (signal 15)"));
	free(log);
	ASSERT_TRUE(start_gateway(self, extra));
	snprintf(req, sizeof(req), "%s/req.bin", self->dir);
	f = fopen(req, "w");
	ASSERT_NE(NULL, f);
	hlen = (size_t)fprintf(
		f,
		"{\"inputs\":[{\"name\":\"data\",\"shape\":[1,3,224,224],\"datatype\""
		":\"FP32\",\"parameters\":{\"binary_data_size\":%zu}}]}",
		self->in_bytes);
	ASSERT_EQ(1, fwrite(self->input, self->in_bytes, 1, f));
	ASSERT_EQ(0, fclose(f));
	snprintf(hdr, sizeof(hdr), "Inference-Header-Content-Length: %zu", hlen);
	url_of(self, url, sizeof(url), "/v2/models/mobilenet_v2/infer");
	snprintf(cmd, sizeof(cmd),
		 "for i in 1 2 3 4 5 6 7 8; do curl -s -X POST --data-binary '@%s' -H '%s' "
		 "-o /dev/null -w '%%{http_code}\\n' '%s' & done; wait",
		 req, hdr, url);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	for (char *s = out; *s; s++) {
		int code = atoi(s);

		if (code == 200)
			ok++;
		else if (code == 503)
			refused++;
		else
			other++;
		s = strchr(s, '\n');
		if (!s)
			break;
	}
	TH_LOG("8 at once with a queue of 1: %d answered, %d refused", ok, refused);
	EXPECT_EQ(8, ok + refused);
	EXPECT_EQ(0, other);
	EXPECT_LE(1, ok);
	EXPECT_LE(1, refused);
}

TEST_F_TIMEOUT(gw, repository__unload_then_load_serves_again, 600)
{
	char url[256], resp[256], out[4096], code[128], cmd[2048];
	bool loading = false;
	struct json_object *list;
	size_t len = 0;
	char *text;

	NEED_SETUP(self);

	snprintf(resp, sizeof(resp), "%s/resp", self->dir);
	url_of(self, url, sizeof(url), "/v2/repository/models/mobilenet_v2/unload");
	ASSERT_EQ(200, http("POST", url, NULL, NULL, resp));
	/* colocd no longer serves it; the gateway says so */
	list = NULL;
	ASSERT_EQ(0, coloc_client_request(self->c, "{\"cmd\":\"list\"}", &text));
	list = json_tokener_parse(text);
	free(text);
	ASSERT_NE(NULL, list);
	EXPECT_EQ(NULL, strstr(json_object_to_json_string(list), "mobilenet_v2"));
	json_object_put(list);
	url_of(self, url, sizeof(url), "/v2/models/mobilenet_v2/ready");
	EXPECT_EQ(400, http("GET", url, NULL, NULL, NULL));
	url_of(self, url, sizeof(url), "/v2/repository/index");
	ASSERT_EQ(200, http("POST", url, NULL, NULL, resp));
	text = tu_read_file(resp, &len);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "{\"name\":\"mobilenet_v2\",\"version\":\"1\",\"state\":"
				     "\"UNAVAILABLE\",\"reason\":\"unloaded\"}"))
	TH_LOG("%s", text);
	free(text);
	/* an unloaded model is not counted against the server's readiness */
	url_of(self, url, sizeof(url), "/v2/health/ready");
	EXPECT_EQ(200, http("GET", url, NULL, NULL, NULL));

	/*
	 * The load in the background; while the index says LOADING, an unload
	 * is refused with 409 (the HTTP threads do not queue behind a load).
	 */
	url_of(self, url, sizeof(url), "/v2/repository/models/mobilenet_v2/load");
	snprintf(code, sizeof(code), "%s/load.code", self->dir);
	snprintf(
		cmd, sizeof(cmd),
		"curl -s -X POST -o /dev/null -w '%%{http_code}' '%s' > '%s.part' && mv '%s.part' '%s' &",
		url, code, code, code);
	ASSERT_EQ(0, system(cmd));
	url_of(self, url, sizeof(url), "/v2/repository/index");
	for (int i = 0; i < READY_S * 20 && !loading; i++) {
		ASSERT_EQ(200, http("POST", url, NULL, NULL, resp));
		text = tu_read_file(resp, &len);
		loading = text && strstr(text, "\"state\":\"LOADING\"");
		free(text);
		if (!loading)
			usleep(50000);
	}
	ASSERT_TRUE(loading);
	url_of(self, url, sizeof(url), "/v2/repository/models/mobilenet_v2/unload");
	EXPECT_EQ(409, http("POST", url, NULL, NULL, resp));
	text = tu_read_file(resp, &len);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "another model is loading or unloading")) TH_LOG("%s", text);
	free(text);
	for (int i = 0; i < READY_S * 10 && !(text = tu_read_file(code, &len)); i++)
		usleep(100000);
	ASSERT_NE(NULL, text);
	EXPECT_STREQ("200", text);
	free(text);
	url_of(self, url, sizeof(url), "/v2/models/mobilenet_v2/ready");
	EXPECT_EQ(200, http("GET", url, NULL, NULL, NULL));
	url_of(self, url, sizeof(url), "/v2/repository/index");
	ASSERT_EQ(200, http("POST", url, NULL, NULL, resp));
	text = tu_read_file(resp, &len);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "\"state\":\"READY\"")) TH_LOG("%s", text);
	free(text);
	ASSERT_EQ(0, tu_run("true", out, sizeof(out)));
}

/* The value of the first series of a Prometheus query (instant vector), or NAN. */
static double prom_query(int port, const char *query, int *nr_series)
{
	char cmd[1024], out[32768];
	struct json_object *o, *data, *result, *value;
	double v = NAN;

	*nr_series = 0;
	snprintf(cmd, sizeof(cmd),
		 "curl -s -G 'http://127.0.0.1:%d/api/v1/query' --data-urlencode 'query=%s'", port,
		 query);
	if (tu_run(cmd, out, sizeof(out)))
		return NAN;
	o = json_tokener_parse(out);
	if (o && json_object_object_get_ex(o, "data", &data) &&
	    json_object_object_get_ex(data, "result", &result) &&
	    json_object_is_type(result, json_type_array)) {
		*nr_series = (int)json_object_array_length(result);
		if (*nr_series && json_object_object_get_ex(json_object_array_get_idx(result, 0),
							    "value", &value))
			v = strtod(json_object_get_string(json_object_array_get_idx(value, 1)),
				   NULL);
	}
	json_object_put(o);
	return v;
}

TEST_F_TIMEOUT(gw, metrics__prometheus_scrapes_triton_and_coloc_series, 600)
{
	char cfg[256], data[256], plog[256], addr[64], url[256], req[256], resp[256], text[512];
	const char *argv[] = { "/usr/bin/prometheus", NULL, NULL, NULL, NULL, NULL };
	char a1[300], a2[300], a3[100];
	int pport = tu_free_port(), series = 0, nr_cpus = tu_nr_online_cpus();
	double count = NAN, qos = NAN, busy = NAN, compute = NAN, served = NAN;
	FILE *f;

	NEED_SETUP(self);

	if (access(argv[0], X_OK))
		SKIP(return, "prometheus is not installed (tools/deps.sh installs it)");
	/* three queries through the gateway, counted before any scrape */
	snprintf(req, sizeof(req), "%s/req.json", self->dir);
	f = fopen(req, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "{\"inputs\":[{\"name\":\"data\",\"shape\":[1,3,224,224],\"datatype\":\"FP32\","
		   "\"data\":[");
	for (size_t i = 0; i < self->in_bytes / sizeof(float); i++)
		fprintf(f, "%s%d", i ? "," : "", (int)(i & 1));
	fprintf(f, "]}]}");
	ASSERT_EQ(0, fclose(f));
	snprintf(resp, sizeof(resp), "%s/resp.json", self->dir);
	url_of(self, url, sizeof(url), "/v2/models/mobilenet_v2/infer");
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(200, http("POST", url, req, NULL, resp));

	snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", self->dir);
	snprintf(data, sizeof(data), "%s/prometheus-data", self->dir);
	snprintf(plog, sizeof(plog), "%s/prometheus.log", self->dir);
	f = fopen(cfg, "w");
	ASSERT_NE(NULL, f);
	fprintf(f,
		"global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
		"scrape_configs:\n  - job_name: coloc\n    static_configs:\n"
		"      - targets: ['127.0.0.1:%d']\n",
		self->metrics_port);
	ASSERT_EQ(0, fclose(f));
	snprintf(a1, sizeof(a1), "--config.file=%s", cfg);
	snprintf(a2, sizeof(a2), "--storage.tsdb.path=%s", data);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", pport);
	snprintf(a3, sizeof(a3), "--web.listen-address=%s", addr);
	argv[1] = a1;
	argv[2] = a2;
	argv[3] = a3;
	self->prometheus = tu_spawn_logged(argv, plog);
	ASSERT_LT(0, self->prometheus);
	for (int i = 0; i < 240 && !(count == 3 && served >= 4 && series); i++) {
		usleep(500000);
		count = prom_query(pport, "coloc_inference_count{model=\"mobilenet_v2\"}", &series);
		served = prom_query(pport,
				    "coloc_tenant_queries_total{tenant=\"mobilenet_v2\","
				    "outcome=\"served\"}",
				    &series);
	}
	/* the gateway counted its three; colocd served those, the warm-up and the reference */
	EXPECT_EQ(3, count);
	EXPECT_LE(5, served);
	compute = prom_query(pport, "coloc_inference_compute_duration_us{model=\"mobilenet_v2\"}",
			     &series);
	EXPECT_LT(0, compute);
	qos = prom_query(pport, "coloc_tenant_qos_target_ms{tenant=\"mobilenet_v2\"}", &series);
	EXPECT_EQ(QOS_MS, qos);
	busy = prom_query(pport, "coloc_cpu_busy_ratio", &series);
	EXPECT_EQ(nr_cpus, series);
	EXPECT_LE(0, busy);
	EXPECT_GE(1.0001, busy);
	prom_query(pport, "coloc_colocd_up == 1", &series);
	EXPECT_EQ(1, series);
	snprintf(text, sizeof(text), "count %g served %g compute_us %g qos %g", count, served,
		 compute, qos);
	TH_LOG("read back from Prometheus: %s", text);
}

TEST_HARNESS_MAIN
