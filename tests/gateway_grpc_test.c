// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway's gRPC front door (KServe v2's inference.GRPCInferenceService,
 * docs/gateway.md) end to end: a real colocd serving models/mobilenet_v2.model,
 * the gateway as the unprivileged `coloc` user with --grpc, and clients no
 * one here wrote: Python grpcio with stubs generated now from
 * gateway/proto/grpc_service.proto by Debian's protoc and grpc_python_plugin
 * (tests/gateway/kserve_grpc_client.py), and Node's @grpc/grpc-js from npm
 * (tests/gateway/kserve_grpc_client.cjs). Their outputs are compared with
 * `colocctl infer`'s and the HTTP gateway's for the same input; errors with
 * the protocol's status codes; a flood with RESOURCE_EXHAUSTED; garbage on
 * the port. The server is the default, our own over HTTP/2; one case runs
 * the Python client against gRPC's C core (--grpc-server core). The gRPC message parser alone is the fuzz target
 * tests/fuzz/fuzz_gateway.c.
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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "testutil.h"
#include "gateway_fixture.h"

#define TOL 1e-3f
#define QOS_MS 60000
#define PYTHON "/usr/bin/python3" /* Debian's, with python3-grpcio */
#define IN_BYTES (3 * 224 * 224 * 4)
#define OUT_BYTES (1000 * 4)

static char cache_dir[64];
static const char *const gw_flags[] = { "--max-body-bytes", "1048576", NULL };

__attribute__((constructor)) static void make_dirs(void)
{
	tu_shared_tmpdir("gateway-grpc-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(grpc)
{
	struct gw_env env;
	char stubs[128];
	bool ready;
	float ref[OUT_BYTES / 4];
};

FIXTURE_SETUP(grpc)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	char out[4096], path[PATH_MAX + 64], cmd[PATH_MAX * 3], bin[PATH_MAX];
	size_t len = 0;
	float *input;
	char *got;
	FILE *f;
	int ret;

	self->ready = false;
	ret = gw_env_start_colocd(&self->env, "gwgrpc", cache_dir, QOS_MS, out, sizeof(out));
	if (ret > 0)
		SKIP(return, "%.900s", out);
	ASSERT_EQ(0, ret) TH_LOG("%s", out);
	snprintf(self->stubs, sizeof(self->stubs), "%s/stubs", self->env.dir);
	ASSERT_EQ(0, mkdir(self->stubs, 0755));
	/* the Python stubs, from the protocol's .proto, by Debian's gRPC tools */
	snprintf(cmd, sizeof(cmd),
		 "protoc --proto_path='%s/gateway/proto' --python_out='%s' --grpc_python_out='%s' "
		 "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin "
		 "'%s/gateway/proto/grpc_service.proto' 2>&1",
		 root, self->stubs, self->stubs, root);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_TRUE(gw_env_start_gateway(&self->env, true, gw_flags))
	gw_env_log_gateway(&self->env);

	/* the input, and the reference: colocctl infer on the same bytes */
	input = malloc(IN_BYTES);
	ASSERT_NE(NULL, input);
	for (size_t i = 0; i < IN_BYTES / 4; i++)
		input[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
	snprintf(path, sizeof(path), "%s/input.bin", self->env.dir);
	f = fopen(path, "wb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, fwrite(input, IN_BYTES, 1, f));
	ASSERT_EQ(0, fclose(f));
	free(input);
	tu_bin("colocctl", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd),
		 "'%s' --socket '%s' infer mobilenet_v2 --input '%s/input.bin' --output "
		 "'%s/ref.bin' 2>&1",
		 bin, self->env.sock, self->env.dir, self->env.dir);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(path, sizeof(path), "%s/ref.bin", self->env.dir);
	got = tu_read_file(path, &len);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(OUT_BYTES, len);
	memcpy(self->ref, got, OUT_BYTES);
	free(got);
	self->ready = true;
}

#define NEED_SETUP(self)                                                    \
	do {                                                                \
		if (!(self)->ready)                                         \
			SKIP(return, "no colocd and gateway (needs root)"); \
	} while (0)

FIXTURE_TEARDOWN(grpc)
{
	if (gw_env_stop(&self->env))
		TH_LOG("could not remove %s", self->env.dir);
}

/* Floats of the file at path that differ from ref beyond the tolerance; -1 if it is not OUT_BYTES. */
static int differ_file(const char *path, const float *ref)
{
	size_t len = 0;
	char *got = tu_read_file(path, &len);
	int bad = 0;

	if (!got || len != OUT_BYTES) {
		free(got);
		return -1;
	}
	for (size_t i = 0; i < OUT_BYTES / 4; i++) {
		float v;

		memcpy(&v, got + i * 4, 4);
		if (!(fabsf(v - ref[i]) <= TOL * fmaxf(1.0f, fabsf(ref[i]))))
			bad++;
	}
	free(got);
	return bad;
}

/* Runs the Python client in mode (with arg, or NULL); its exit status, its output in out. */
static int python_client(FIXTURE_DATA(grpc) * self, const char *mode, const char *arg, char *out,
			 size_t len)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 PYTHON " '%s/tests/gateway/kserve_grpc_client.py' '%s' 127.0.0.1:%d mobilenet_v2 "
			"'%s/input.bin' '%s/py' %s %s 2>&1",
		 root, self->stubs, self->env.grpc_port, self->env.dir, self->env.dir, mode,
		 arg ? arg : "");
	return tu_run(cmd, out, len);
}

/* The value of the metrics line starting with prefix, or -1. */
static double metric(FIXTURE_DATA(grpc) * self, const char *prefix)
{
	char cmd[256], path[192], *text, *p;
	size_t len = 0;
	double v = -1;

	snprintf(path, sizeof(path), "%s/metrics.txt", self->env.dir);
	snprintf(cmd, sizeof(cmd), "curl -s -o '%s' http://127.0.0.1:%d/metrics", path,
		 self->env.metrics_port);
	if (system(cmd))
		return -1;
	text = tu_read_file(path, &len);
	for (p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, prefix, strlen(prefix))) {
			v = strtod(p + strlen(prefix), NULL);
			break;
		}
	}
	free(text);
	return v;
}

TEST_F_TIMEOUT(grpc, python_client__infer_equals_colocctl_and_the_http_gateway, 600)
{
	char out[8192], cmd[2048], path[192], hdr[256];
	size_t len = 0;
	char *body;
	int hlen;

	NEED_SETUP(self);
	ASSERT_EQ(0, python_client(self, "check", NULL, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "input data [1, 3, 224, 224], output output [1000]"))
	TH_LOG("%s", out);
	snprintf(path, sizeof(path), "%s/py.raw.bin", self->env.dir);
	EXPECT_EQ(0, differ_file(path, self->ref));
	snprintf(path, sizeof(path), "%s/py.typed.bin", self->env.dir);
	EXPECT_EQ(0, differ_file(path, self->ref));

	/* the HTTP door on the same input (binary extension) agrees */
	hlen = snprintf(hdr, sizeof(hdr),
			"{\"inputs\":[{\"name\":\"data\",\"shape\":[1,3,224,224],\"datatype\":"
			"\"FP32\",\"parameters\":{\"binary_data_size\":%d}}],\"parameters\":"
			"{\"binary_data_output\":true}}",
			IN_BYTES);
	snprintf(cmd, sizeof(cmd),
		 "{ printf '%%s' '%s'; cat '%s/input.bin'; } | curl -s -X POST --data-binary @- "
		 "-H 'Inference-Header-Content-Length: %d' -o '%s/http.out' "
		 "http://127.0.0.1:%d/v2/models/mobilenet_v2/infer",
		 hdr, self->env.dir, hlen, self->env.dir, self->env.http_port);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(path, sizeof(path), "%s/http.out", self->env.dir);
	body = tu_read_file(path, &len);
	ASSERT_NE(NULL, body);
	ASSERT_LT(OUT_BYTES, len);
	snprintf(path, sizeof(path), "%s/http.bin", self->env.dir);
	{
		FILE *f = fopen(path, "wb");

		ASSERT_NE(NULL, f);
		ASSERT_EQ(1, fwrite(body + len - OUT_BYTES, OUT_BYTES, 1, f));
		ASSERT_EQ(0, fclose(f));
	}
	free(body);
	EXPECT_EQ(0, differ_file(path, self->ref));
}

TEST_F_TIMEOUT(grpc, python_client__errors_carry_their_status_codes_and_are_counted, 600)
{
	static const char *const want[] = {
		"unknown_model NOT_FOUND",	   "unknown_model_ready NOT_FOUND",
		"unknown_version NOT_FOUND",	   "wrong_shape INVALID_ARGUMENT",
		"short_raw INVALID_ARGUMENT",	   "wrong_input_name INVALID_ARGUMENT",
		"wrong_datatype INVALID_ARGUMENT", "too_large RESOURCE_EXHAUSTED",
		"past_deadline DEADLINE_EXCEEDED",
	};
	const char *grpc_requests =
		"coloc_gateway_requests_total{model=\"mobilenet_v2\",version=\"1\",protocol=\"grpc\"}";
	const char *bad = "coloc_gateway_refusals_total{model=\"mobilenet_v2\",version=\"1\","
			  "reason=\"bad_request\"}";
	double before = metric(self, grpc_requests), bad_before = metric(self, bad);
	char out[8192];

	NEED_SETUP(self);
	ASSERT_LE(0, before);
	ASSERT_EQ(0, python_client(self, "errors", NULL, out, sizeof(out))) TH_LOG("%s", out);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		EXPECT_NE(NULL, strstr(out, want[i])) TH_LOG("no '%s' in %s", want[i], out);
	}
	EXPECT_NE(NULL, strstr(out, "the shape must be [1,3,224,224]")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "must be 602112 bytes")) TH_LOG("%s", out);
	/* the infers that reached the model (not the unknown one, not the oversized one) */
	EXPECT_LE(before + 4, metric(self, grpc_requests));
	EXPECT_EQ(bad_before + 4, metric(self, bad));
	EXPECT_EQ(0, waitpid(self->env.gateway, NULL, WNOHANG)); /* still running */
}

TEST_F_TIMEOUT(grpc, python_client__a_flood_past_max_queue_gets_resource_exhausted, 600)
{
	const char *extra[] = { "--max-queue", "3", NULL };
	char out[8192];
	int ok = -1, exhausted = -1, other = -1;
	const char *p;

	NEED_SETUP(self);
	tu_stop_child(&self->env.gateway);
	ASSERT_TRUE(gw_env_start_gateway(&self->env, true, extra))
	gw_env_log_gateway(&self->env);
	ASSERT_EQ(0, python_client(self, "flood", "48", out, sizeof(out))) TH_LOG("%s", out);
	p = strstr(out, "ok=");
	ASSERT_NE(NULL, p) TH_LOG("%s", out);
	ASSERT_EQ(3, sscanf(p, "ok=%d exhausted=%d other=%d", &ok, &exhausted, &other));
	EXPECT_EQ(48, ok + exhausted + other);
	EXPECT_LT(0, ok) TH_LOG("%s", out);
	EXPECT_LT(0, exhausted) TH_LOG("%s", out);
	EXPECT_EQ(0, other) TH_LOG("%s", out);
}

/* gRPC's C core (--grpc-server core), no longer the default, still serves the same answers. */
TEST_F_TIMEOUT(grpc, core_server__python_client_infer_equals_colocctl, 600)
{
	const char *extra[] = { "--grpc-server", "core", NULL };
	char out[8192], path[192];

	NEED_SETUP(self);
	tu_stop_child(&self->env.gateway);
	ASSERT_TRUE(gw_env_start_gateway(&self->env, true, extra))
	gw_env_log_gateway(&self->env);
	ASSERT_EQ(0, python_client(self, "check", NULL, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(path, sizeof(path), "%s/py.raw.bin", self->env.dir);
	EXPECT_EQ(0, differ_file(path, self->ref));
	snprintf(path, sizeof(path), "%s/py.typed.bin", self->env.dir);
	EXPECT_EQ(0, differ_file(path, self->ref));
}

TEST_F_TIMEOUT(grpc, node_client__infer_equals_colocctl, 600)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	char out[8192], cmd[2048], path[192];

	NEED_SETUP(self);
	snprintf(cmd, sizeof(cmd), "'%s/tools/grpc-node/install.sh' 2>&1", root);
	if (tu_run(cmd, out, sizeof(out)))
		SKIP(return, "the Node gRPC client could not be installed from npm: %.500s", out);
	snprintf(path, sizeof(path), "%s/node.bin", self->env.dir);
	snprintf(cmd, sizeof(cmd),
		 "node '%s/tests/gateway/kserve_grpc_client.cjs' '%s/build/grpc-node/node_modules' "
		 "'%s/gateway/proto/grpc_service.proto' 127.0.0.1:%d mobilenet_v2 '%s/input.bin' "
		 "'%s' 2>&1",
		 root, root, root, self->env.grpc_port, self->env.dir, path);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ok"));
	EXPECT_EQ(0, differ_file(path, self->ref));
}

/*
 * coloc-load through the gateway (route: --grpc or --url, and the load, by
 * default 4/s for 3 s on 4 connections): its JSON report's "sent", or -1.
 */
static int load_through(FIXTURE_DATA(grpc) * self, const char *route, long *completed, long *failed,
			long *outstanding, char *out, size_t out_len)
{
	char bin[PATH_MAX], cmd[PATH_MAX + 512], *p;
	long sent = -1;

	tu_bin("coloc-load", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd),
		 "'%s' --socket '%s' %s %s --drain 60 --gateway-pid %d --json 2>&1", bin,
		 self->env.sock, route,
		 strstr(route, "--tenant") ? "" : "--tenant mobilenet_v2:4 --duration 3 -c 4",
		 self->env.gateway);
	if (tu_run(cmd, out, out_len))
		return -1;
	p = strstr(out, "\"sent\":");
	if (!p || sscanf(p, "\"sent\":%ld", &sent) != 1)
		return -1;
	p = strstr(out, "\"completed\":");
	if (!p || sscanf(p, "\"completed\":%ld", completed) != 1)
		return -1;
	p = strstr(out, "\"failed\":");
	if (!p || sscanf(p, "\"failed\":%ld", failed) != 1)
		return -1;
	p = strstr(out, "\"outstanding\":");
	if (!p || sscanf(p, "\"outstanding\":%ld", outstanding) != 1)
		return -1;
	if (!strstr(out, "\"gateway_cpu\""))
		return -1;
	return (int)sent;
}

/* Every query coloc-load sends through a door is one the gateway counts for that door. */
TEST_F_TIMEOUT(grpc, coloc_load__drives_the_gateway_over_grpc_and_http, 600)
{
	static const struct {
		const char *route_fmt, *metric;
	} doors[] = {
		{ "--grpc 127.0.0.1:%d", "coloc_gateway_requests_total{model=\"mobilenet_v2\","
					 "version=\"1\",protocol=\"grpc\"}" },
		{ "--grpc 127.0.0.1:%d --grpc-client core",
		  "coloc_gateway_requests_total{model=\"mobilenet_v2\","
		  "version=\"1\",protocol=\"grpc\"}" },
		{ "--url http://127.0.0.1:%d",
		  "coloc_gateway_requests_total{model=\"mobilenet_v2\","
		  "version=\"1\",protocol=\"http\"}" },
	};

	NEED_SETUP(self);
	for (size_t i = 0; i < ARRAY_SIZE(doors); i++) {
		char route[64];
		double before = metric(self, doors[i].metric);
		long completed = -1, failed = -1, outstanding = -1;
		char out[16384] = "";
		int sent;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral" /* the doors' literals above */
		snprintf(route, sizeof(route), doors[i].route_fmt,
			 i < 2 ? self->env.grpc_port : self->env.http_port);
#pragma GCC diagnostic pop
		sent = load_through(self, route, &completed, &failed, &outstanding, out, sizeof(out));
		ASSERT_LT(0, sent) TH_LOG("%s: coloc-load failed: %s", route, out);
		EXPECT_LT(0, completed) TH_LOG("%s: %s", route, out);
		EXPECT_EQ(0, failed) TH_LOG("%s: %s", route, out);
		/* warm-up is 0: what it sent is what the gateway received from it */
		EXPECT_EQ(before + sent, metric(self, doors[i].metric)) TH_LOG("%s: %s", route, out);
	}
}

/*
 * coloc-load's raw HTTP/2 client (client/kserve_h2.c) with many calls in
 * flight on one connection: 300/s for 2 s against a model that serves ~250
 * at most here, so calls queue in the gateway and colocd and their answers
 * come back on interleaved streams; each is matched to its query (none
 * outstanding or failed) and the gateway counted every one. The sends
 * wait at the stream limit, on a loaded machine for long: the drain runs
 * from the last one's return (gateway_stream_limit_test.c). colocd runs
 * --policy os: under its own policy a block this load slows past its bound
 * goes late, at the lowest CPU weight, and beside a busy test is killed as
 * hung, its queries failed: colocd's rule (serving_overrun.c), not this
 * test's subject (docs/measurements/gateway.md).
 */
TEST_F_TIMEOUT(grpc, coloc_load__many_calls_in_flight_on_one_raw_connection, 600)
{
	const char *m = "coloc_gateway_requests_total{model=\"mobilenet_v2\",version=\"1\","
			"protocol=\"grpc\"}";
	const char *colocd_extra[] = { "--cache-dir", cache_dir, "--policy", "os", NULL };
	long completed = -1, failed = -1, outstanding = -1;
	double before;
	char route[128], out[16384] = "";
	int sent, stopped;

	NEED_SETUP(self);
	tu_stop_child(&self->env.gateway);
	stopped = tu_stop_colocd(self->env.colocd);
	self->env.colocd = 0;
	ASSERT_EQ(0, stopped);
	self->env.colocd =
		tu_start_colocd_with(self->env.sock, self->env.pin, self->env.log, colocd_extra);
	ASSERT_LT(0, self->env.colocd);
	ASSERT_TRUE(gw_env_start_gateway(&self->env, true, gw_flags))
	gw_env_log_gateway(&self->env);
	before = metric(self, m);
	snprintf(route, sizeof(route),
		 "--grpc 127.0.0.1:%d --tenant mobilenet_v2:300 --duration 2 -c 1",
		 self->env.grpc_port);
	sent = load_through(self, route, &completed, &failed, &outstanding, out, sizeof(out));
	ASSERT_LT(100, sent) TH_LOG("%s", out);
	EXPECT_LT(0, completed) TH_LOG("%s", out);
	EXPECT_EQ(0, failed) TH_LOG("%s", out);
	EXPECT_EQ(0, outstanding) TH_LOG("%s", out);
	EXPECT_EQ(before + sent, metric(self, m)) TH_LOG("%s", out);
}

/* Writes bytes to a fresh connection to the gRPC port and reads until it closes (or 2 s). */
static int send_garbage(int port, const void *bytes, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 2 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char buf[4096];

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (write(fd, bytes, len) < 0 && errno != EPIPE && errno != ECONNRESET) {
		close(fd);
		return -1;
	}
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(grpc, garbage__the_gateway_survives_garbage_on_the_grpc_port, 600)
{
	/* an HTTP/2 preface, then a SETTINGS frame claiming 16 MB and a HEADERS frame of junk */
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	char out[8192], buf[8192];
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	size_t n;

	NEED_SETUP(self);
	signal(SIGPIPE, SIG_IGN);
	for (int round = 0; round < 8; round++) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			buf[i] = (char)rng;
		}
		n = sizeof(buf) / (size_t)(round + 1);
		if (round % 2) {
			memcpy(buf, preface, sizeof(preface) - 1);
			buf[24] = (char)0xff; /* length 0xffffff */
			buf[25] = (char)0xff;
			buf[26] = (char)0xff;
			buf[27] = (char)(round == 3 ? 0x1 : 0x4); /* HEADERS, SETTINGS */
		}
		ASSERT_EQ(0, send_garbage(self->env.grpc_port, buf, n));
	}
	ASSERT_EQ(0, send_garbage(self->env.grpc_port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27));
	EXPECT_EQ(0, waitpid(self->env.gateway, NULL, WNOHANG));
	ASSERT_EQ(0, python_client(self, "check", NULL, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ok"));
}

TEST_HARNESS_MAIN
