// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway (KServe v2 over HTTP, docs/gateway.md) end to end: a real
 * colocd serving models/mobilenet_v2.model, the gateway as the
 * unprivileged `coloc` user in front of it (tests/gateway_fixture.h), and
 * clients no one here wrote (curl, Python's requests in
 * tests/gateway/kserve_client.py, a real Prometheus scraping /metrics,
 * read back through its query API), their outputs compared with
 * libcoloc_client's for the same input; and its refusal of root and of bad
 * usage. Its parsers alone: gateway_parse_test.c.
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
#include "testutil.h"
#include "gateway_fixture.h"

#define TOL 1e-3f
#define QOS_MS 60000

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

__attribute__((constructor)) static void make_cache_dir(void)
{
	tu_shared_tmpdir("gateway-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(gw)
{
	struct gw_env env;
	pid_t prometheus;
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

FIXTURE_SETUP(gw)
{
	char why[4096], path[PATH_MAX + 64];
	struct coloc_infer_result res;
	int ret;

	self->prometheus = 0;
	self->ready = false;
	self->c = NULL;
	self->input = self->ref = NULL;
	ret = gw_env_start_colocd(&self->env, "gw", cache_dir, QOS_MS, why, sizeof(why));
	if (ret > 0)
		SKIP(return, "%.900s", why);
	ASSERT_EQ(0, ret) TH_LOG("%s", why);
	ASSERT_EQ(0, coloc_client_connect(self->env.sock, &self->c));
	/* the repository tests load and unload */
	ASSERT_TRUE(gw_env_start_gateway(&self->env, false,
					 (const char *[]){ "--model-control", NULL }))
	gw_env_log_gateway(&self->env);
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
	snprintf(path, sizeof(path), "%s/input.bin", self->env.dir);
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
	tu_stop_child(&self->prometheus);
	coloc_client_close(self->c);
	self->c = NULL;
	if (gw_env_stop(&self->env))
		TH_LOG("could not remove %s", self->env.dir);
	free(self->input);
	free(self->ref);
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
	snprintf(buf, len, "http://127.0.0.1:%d%s", self->env.http_port, path);
}

/*
 * A binary infer request for the model's input into path: the JSON header
 * (with "id" when id is not NULL, asking for a binary output when
 * binary_out), then the raw input; hdr gets its
 * Inference-Header-Content-Length header. 0, or -1.
 */
static int write_binary_request(FIXTURE_DATA(gw) * self, const char *path, const char *id,
				bool binary_out, char *hdr, size_t hdr_len)
{
	FILE *f = fopen(path, "w");
	int hlen;

	if (!f)
		return -1;
	hlen = fprintf(f,
		       "{%s%s%s\"inputs\":[{\"name\":\"data\",\"shape\":[1,3,224,224],"
		       "\"datatype\":\"FP32\",\"parameters\":{\"binary_data_size\":%zu}}]%s}",
		       id ? "\"id\":\"" : "", id ? id : "", id ? "\"," : "", self->in_bytes,
		       binary_out ? ",\"parameters\":{\"binary_data_output\":true}" : "");
	if (hlen < 0 || fwrite(self->input, self->in_bytes, 1, f) != 1) {
		fclose(f);
		return -1;
	}
	snprintf(hdr, hdr_len, "Inference-Header-Content-Length: %d", hlen);
	return fclose(f) ? -1 : 0;
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
	size_t n = self->out_bytes / sizeof(float), len = 0;
	float *got = malloc(self->out_bytes);
	char *body, *text;
	FILE *f;

	NEED_SETUP(self);

	ASSERT_NE(NULL, got);
	/* the metadata names the model's input as its .model file declares it */
	snprintf(meta, sizeof(meta), "%s/meta.json", self->env.dir);
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
	snprintf(req, sizeof(req), "%s/req.json", self->env.dir);
	f = fopen(req, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "{\"id\":\"curl-json\",\"inputs\":[{\"name\":\"data\",\"shape\":[1,3,224,224],"
		   "\"datatype\":\"FP32\",\"data\":[");
	for (size_t i = 0; i < self->in_bytes / sizeof(float); i++)
		fprintf(f, "%s%.9g", i ? "," : "", (double)self->input[i]);
	fprintf(f, "]}]}");
	ASSERT_EQ(0, fclose(f));
	snprintf(resp, sizeof(resp), "%s/resp.json", self->env.dir);
	url_of(self, url, sizeof(url), "/v2/models/mobilenet_v2/versions/1/infer");
	ASSERT_EQ(200, http("POST", url, req, "Content-Type: application/json", resp));
	ASSERT_EQ(0, json_outputs(resp, got, n, "curl-json"));
	EXPECT_EQ(0, differ(got, self->ref, n));

	/* binary: header, then the raw input; the output asked for as binary too */
	ASSERT_EQ(0, write_binary_request(self, req, "curl-bin", true, hdr, sizeof(hdr)));
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
		 root ? root : ".", url, self->env.dir, self->env.dir);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ok"));
	for (int k = 0; k < 2; k++) {
		size_t len = 0;
		char *got;

		snprintf(path, sizeof(path), "%s/py.%s.bin", self->env.dir, kinds[k]);
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

	snprintf(body, sizeof(body), "%s/body", self->env.dir);
	snprintf(resp, sizeof(resp), "%s/resp", self->env.dir);
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
	size_t len = 0;
	char *log;

	NEED_SETUP(self);

	/* the first gateway stops cleanly on SIGTERM (and, under ASan, without a report) */
	st = tu_stop_child(&self->env.gateway);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("wait status %#x", st);
	log = tu_read_file(self->env.gwlog, &len);
	ASSERT_NE(NULL, log);
	EXPECT_EQ(NULL, strstr(log, "Sanitizer")) TH_LOG("%.3000s", log);
	EXPECT_NE(NULL, strstr(log, "stopping (signal 15)"));
	free(log);
	ASSERT_TRUE(gw_env_start_gateway(&self->env, false, extra));
	snprintf(req, sizeof(req), "%s/req.bin", self->env.dir);
	ASSERT_EQ(0, write_binary_request(self, req, NULL, false, hdr, sizeof(hdr)));
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

/*
 * One connection to colocd, six queries at once: one runs on its HTTP
 * thread over the borrowed connection, the others queue to the pool (or
 * borrow it after); every one is answered, each with its own output.
 */
TEST_F_TIMEOUT(gw, http__more_queries_at_once_than_colocd_connections_all_answered, 600)
{
	const char *extra[] = { "--connections", "1", NULL };
	char cmd[2048], out[4096], url[128], hdr[64], req[256], resp[256];
	size_t n = self->out_bytes / sizeof(float), len = 0;
	float *got = malloc(self->out_bytes);
	int ok = 0, st;

	NEED_SETUP(self);

	ASSERT_NE(NULL, got);
	st = tu_stop_child(&self->env.gateway);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("wait status %#x", st);
	ASSERT_TRUE(gw_env_start_gateway(&self->env, false, extra));
	snprintf(req, sizeof(req), "%s/req.bin", self->env.dir);
	ASSERT_EQ(0, write_binary_request(self, req, NULL, true, hdr, sizeof(hdr)));
	url_of(self, url, sizeof(url), "/v2/models/mobilenet_v2/infer");
	snprintf(cmd, sizeof(cmd),
		 "for i in 1 2 3 4 5 6; do curl -s -X POST --data-binary '@%s' -H '%s' "
		 "-o '%s/resp.'$i -w '%%{http_code}\\n' '%s' & done; wait",
		 req, hdr, self->env.dir, url);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	for (char *s = out; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
		ok += atoi(s) == 200;
	EXPECT_EQ(6, ok) TH_LOG("%s", out);
	for (int i = 1; i <= 6; i++) {
		char *body;

		snprintf(resp, sizeof(resp), "%s/resp.%d", self->env.dir, i);
		body = tu_read_file(resp, &len);
		ASSERT_NE(NULL, body);
		ASSERT_LT(self->out_bytes, len);
		memcpy(got, body + len - self->out_bytes, self->out_bytes);
		EXPECT_EQ(0, differ(got, self->ref, n)) TH_LOG("answer %d", i);
		free(body);
	}
	free(got);
}

TEST_F_TIMEOUT(gw, repository__unload_then_load_serves_again, 600)
{
	char url[256], resp[256], out[4096], code[128], cmd[2048];
	bool loading = false;
	struct json_object *list;
	size_t len = 0;
	char *text;

	NEED_SETUP(self);

	snprintf(resp, sizeof(resp), "%s/resp", self->env.dir);
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
	snprintf(code, sizeof(code), "%s/load.code", self->env.dir);
	snprintf(
		cmd, sizeof(cmd),
		"curl -s -X POST -o /dev/null -w '%%{http_code}' '%s' > '%s.part' && mv '%s.part' '%s' &",
		url, code, code, code);
	ASSERT_EQ(0, system(cmd));
	url_of(self, url, sizeof(url), "/v2/repository/index");
	for (int i = 0; i < GW_READY_S * 20 && !loading; i++) {
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
	for (int i = 0; i < GW_READY_S * 10 && !(text = tu_read_file(code, &len)); i++)
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
	snprintf(req, sizeof(req), "%s/req.json", self->env.dir);
	f = fopen(req, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "{\"inputs\":[{\"name\":\"data\",\"shape\":[1,3,224,224],\"datatype\":\"FP32\","
		   "\"data\":[");
	for (size_t i = 0; i < self->in_bytes / sizeof(float); i++)
		fprintf(f, "%s%d", i ? "," : "", (int)(i & 1));
	fprintf(f, "]}]}");
	ASSERT_EQ(0, fclose(f));
	snprintf(resp, sizeof(resp), "%s/resp.json", self->env.dir);
	url_of(self, url, sizeof(url), "/v2/models/mobilenet_v2/infer");
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(200, http("POST", url, req, NULL, resp));

	snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", self->env.dir);
	snprintf(data, sizeof(data), "%s/prometheus-data", self->env.dir);
	snprintf(plog, sizeof(plog), "%s/prometheus.log", self->env.dir);
	f = fopen(cfg, "w");
	ASSERT_NE(NULL, f);
	fprintf(f,
		"global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
		"scrape_configs:\n  - job_name: coloc\n    static_configs:\n"
		"      - targets: ['127.0.0.1:%d']\n",
		self->env.metrics_port);
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

/*
 * The metrics port answers whoever reaches it: it lists the tenants this
 * gateway serves, not colocd's others (another user's tenant, submitted to
 * colocd directly), while colocd's cores and signals stay.
 */
TEST_F_TIMEOUT(gw, metrics__only_this_gateways_tenants, 300)
{
	struct coloc_submit sub = { .name = "not_this_gateways", .model = self->env.model,
				    .qos_ms = QOS_MS };
	struct json_object *r;
	char cmd[256];
	static char out[1 << 18];

	NEED_SETUP(self);
	r = coloc_client_submit(self->c, &sub);
	ASSERT_TRUE(coloc_client_ok(self->c, r)) TH_LOG("%s", r ? json_object_to_json_string(r) : "-");
	json_object_put(r);
	snprintf(cmd, sizeof(cmd), "curl -s 'http://127.0.0.1:%d/metrics'",
		 self->env.metrics_port);
	/* colocd's answers are kept a second: ask once they are newer than the submit */
	usleep(1100000);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "coloc_tenant_cores_held{tenant=\"mobilenet_v2\"}"));
	EXPECT_NE(NULL, strstr(out, "coloc_core_held{cpu=\"0\"}"));
	EXPECT_EQ(NULL, strstr(out, "not_this_gateways")) TH_LOG("%.2000s", out);
}

TEST_HARNESS_MAIN
