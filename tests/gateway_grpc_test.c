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
 * the port. The gRPC message parser alone is the fuzz target
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

#define READY_S 240
#define TOL 1e-3f
#define QOS_MS 60000
#define PYTHON "/usr/bin/python3" /* Debian's, with python3-grpcio */
#define IN_BYTES (3 * 224 * 224 * 4)
#define OUT_BYTES (1000 * 4)

static char cache_dir[64];

__attribute__((constructor)) static void make_dirs(void)
{
	tu_shared_tmpdir("gateway-grpc-test", cache_dir, sizeof(cache_dir));
}

FIXTURE(grpc)
{
	char dir[64], sock[128], pin[128], log[128], gwlog[128], repo[128], stubs[128];
	char model[PATH_MAX];
	int http_port, grpc_port, metrics_port;
	pid_t colocd, gateway;
	bool ready;
	float ref[OUT_BYTES / 4];
};

/* The gateway as the coloc user with --grpc and these extra flags; waits until ready. */
static bool start_gateway(FIXTURE_DATA(grpc) * self, const char *const *extra)
{
	char bin[PATH_MAX], http_addr[64], grpc_addr[64], metrics_addr[64], cmd[256], out[64];
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
				 "--grpc",
				 grpc_addr,
				 "--metrics",
				 metrics_addr };
	int n = 16;

	tu_bin("coloc-gateway", bin, sizeof(bin));
	self->http_port = tu_free_port();
	self->grpc_port = tu_free_port();
	self->metrics_port = tu_free_port();
	snprintf(http_addr, sizeof(http_addr), "127.0.0.1:%d", self->http_port);
	snprintf(grpc_addr, sizeof(grpc_addr), "127.0.0.1:%d", self->grpc_port);
	snprintf(metrics_addr, sizeof(metrics_addr), "127.0.0.1:%d", self->metrics_port);
	for (int i = 0; extra && extra[i] && n < 31; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	self->gateway = tu_spawn_logged(argv, self->gwlog);
	if (self->gateway <= 0)
		return false;
	snprintf(cmd, sizeof(cmd),
		 "curl -s -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/v2/health/ready",
		 self->http_port);
	for (int i = 0; i < READY_S * 5; i++) {
		if (tu_run(cmd, out, sizeof(out)) == 0 && atoi(out) == 200)
			return true;
		if (waitpid(self->gateway, NULL, WNOHANG) == self->gateway) {
			self->gateway = 0;
			return false;
		}
		usleep(200000);
	}
	return false;
}

static void log_gateway(FIXTURE_DATA(grpc) * self)
{
	size_t len = 0;
	char *log = tu_read_file(self->gwlog, &len);

	fprintf(stderr, "# gateway log: %.3000s\n", log ? log : "(none)");
	free(log);
}

FIXTURE_SETUP(grpc)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	const char *extra[] = { "--cache-dir", cache_dir, NULL };
	const char *gw_extra[] = { "--max-body-bytes", "1048576", NULL };
	char out[4096], path[PATH_MAX + 64], cmd[PATH_MAX * 3], bin[PATH_MAX];
	size_t len = 0;
	float *input;
	char *got;
	FILE *f;

	self->colocd = self->gateway = 0;
	self->ready = false;
	if (geteuid() != 0)
		SKIP(return, "needs root to run colocd");
	snprintf(path, sizeof(path), "%s/models/mobilenet_v2.model", root);
	if (!realpath(path, self->model))
		SKIP(return, "%.900s not found (set COLOC_ROOT to the repo root)", path);
	ASSERT_NE(0, cache_dir[0]);
	ASSERT_EQ(0, tu_mount_bpffs());
	ASSERT_EQ(0, tu_quick_profile(self->model, cache_dir, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-gwgrpc-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_EQ(0, chmod(self->dir, 0755));
	snprintf(self->sock, sizeof(self->sock), "%s/colocd.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/colocd.log", self->dir);
	snprintf(self->gwlog, sizeof(self->gwlog), "%s/gateway.log", self->dir);
	snprintf(self->repo, sizeof(self->repo), "%s/repo", self->dir);
	snprintf(self->stubs, sizeof(self->stubs), "%s/stubs", self->dir);
	snprintf(self->pin, sizeof(self->pin), "/sys/fs/bpf/coloc-gwgrpc-test-%d", getpid());
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/mobilenet_v2/1' '%s' && cp '%s' '%s/mobilenet_v2/1/model.model' && "
		 "echo '{\"qos_ms\": %d}' > '%s/mobilenet_v2/config.json' && chmod -R a+rX '%s'",
		 self->repo, self->stubs, self->model, self->repo, QOS_MS, self->repo, self->repo);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	/* the Python stubs, from the protocol's .proto, by Debian's gRPC tools */
	snprintf(cmd, sizeof(cmd),
		 "protoc --proto_path='%s/gateway/proto' --python_out='%s' --grpc_python_out='%s' "
		 "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin "
		 "'%s/gateway/proto/grpc_service.proto' 2>&1",
		 root, self->stubs, self->stubs, root);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	self->colocd = tu_start_colocd_with(self->sock, self->pin, self->log, extra);
	ASSERT_LT(0, self->colocd) TH_LOG("colocd did not start");
	ASSERT_TRUE(start_gateway(self, gw_extra)) log_gateway(self);

	/* the input, and the reference: colocctl infer on the same bytes */
	input = malloc(IN_BYTES);
	ASSERT_NE(NULL, input);
	for (size_t i = 0; i < IN_BYTES / 4; i++)
		input[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
	snprintf(path, sizeof(path), "%s/input.bin", self->dir);
	f = fopen(path, "wb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, fwrite(input, IN_BYTES, 1, f));
	ASSERT_EQ(0, fclose(f));
	free(input);
	tu_bin("colocctl", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd),
		 "'%s' --socket '%s' infer mobilenet_v2 --input '%s/input.bin' --output "
		 "'%s/ref.bin' 2>&1",
		 bin, self->sock, self->dir, self->dir);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(path, sizeof(path), "%s/ref.bin", self->dir);
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
	char cmd[256];

	tu_stop_child(&self->gateway);
	if (self->colocd > 0)
		tu_stop_colocd(self->colocd);
	if (self->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
		if (system(cmd))
			TH_LOG("could not remove %s", self->dir);
	}
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
		 root, self->stubs, self->grpc_port, self->dir, self->dir, mode, arg ? arg : "");
	return tu_run(cmd, out, len);
}

/* The value of the metrics line starting with prefix, or -1. */
static double metric(FIXTURE_DATA(grpc) * self, const char *prefix)
{
	char cmd[256], path[192], *text, *p;
	size_t len = 0;
	double v = -1;

	snprintf(path, sizeof(path), "%s/metrics.txt", self->dir);
	snprintf(cmd, sizeof(cmd), "curl -s -o '%s' http://127.0.0.1:%d/metrics", path,
		 self->metrics_port);
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
	snprintf(path, sizeof(path), "%s/py.raw.bin", self->dir);
	EXPECT_EQ(0, differ_file(path, self->ref));
	snprintf(path, sizeof(path), "%s/py.typed.bin", self->dir);
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
		 hdr, self->dir, hlen, self->dir, self->http_port);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(path, sizeof(path), "%s/http.out", self->dir);
	body = tu_read_file(path, &len);
	ASSERT_NE(NULL, body);
	ASSERT_LT(OUT_BYTES, len);
	snprintf(path, sizeof(path), "%s/http.bin", self->dir);
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
	EXPECT_EQ(0, waitpid(self->gateway, NULL, WNOHANG)); /* still running */
}

TEST_F_TIMEOUT(grpc, python_client__a_flood_past_max_queue_gets_resource_exhausted, 600)
{
	const char *extra[] = { "--max-queue", "3", NULL };
	char out[8192];
	int ok = -1, exhausted = -1, other = -1;
	const char *p;

	NEED_SETUP(self);
	tu_stop_child(&self->gateway);
	ASSERT_TRUE(start_gateway(self, extra)) log_gateway(self);
	ASSERT_EQ(0, python_client(self, "flood", "48", out, sizeof(out))) TH_LOG("%s", out);
	p = strstr(out, "ok=");
	ASSERT_NE(NULL, p) TH_LOG("%s", out);
	ASSERT_EQ(3, sscanf(p, "ok=%d exhausted=%d other=%d", &ok, &exhausted, &other));
	EXPECT_EQ(48, ok + exhausted + other);
	EXPECT_LT(0, ok) TH_LOG("%s", out);
	EXPECT_LT(0, exhausted) TH_LOG("%s", out);
	EXPECT_EQ(0, other) TH_LOG("%s", out);
}

TEST_F_TIMEOUT(grpc, node_client__infer_equals_colocctl, 600)
{
	const char *root = getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".";
	char out[8192], cmd[2048], path[192];

	NEED_SETUP(self);
	snprintf(cmd, sizeof(cmd), "'%s/tools/grpc-node/install.sh' 2>&1", root);
	if (tu_run(cmd, out, sizeof(out)))
		SKIP(return, "the Node gRPC client could not be installed from npm: %.500s", out);
	snprintf(path, sizeof(path), "%s/node.bin", self->dir);
	snprintf(cmd, sizeof(cmd),
		 "node '%s/tests/gateway/kserve_grpc_client.cjs' '%s/build/grpc-node/node_modules' "
		 "'%s/gateway/proto/grpc_service.proto' 127.0.0.1:%d mobilenet_v2 '%s/input.bin' "
		 "'%s' 2>&1",
		 root, root, root, self->grpc_port, self->dir, path);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ok"));
	EXPECT_EQ(0, differ_file(path, self->ref));
}

/* coloc-load through the gateway (--grpc or --url) for 3 s: its JSON report's "sent", or -1. */
static int load_through(FIXTURE_DATA(grpc) * self, const char *route, long *completed, long *failed)
{
	char bin[PATH_MAX], cmd[PATH_MAX + 512], out[16384], *p;
	long sent = -1;

	tu_bin("coloc-load", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd),
		 "'%s' --socket '%s' %s --tenant mobilenet_v2:4 --duration 3 -c 4 --drain 60 "
		 "--gateway-pid %d --json 2>&1",
		 bin, self->sock, route, self->gateway);
	if (tu_run(cmd, out, sizeof(out)))
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
		{ "--url http://127.0.0.1:%d",
		  "coloc_gateway_requests_total{model=\"mobilenet_v2\","
		  "version=\"1\",protocol=\"http\"}" },
	};

	NEED_SETUP(self);
	for (size_t i = 0; i < ARRAY_SIZE(doors); i++) {
		char route[64];
		double before = metric(self, doors[i].metric);
		long completed = -1, failed = -1;
		int sent;

		snprintf(route, sizeof(route), doors[i].route_fmt,
			 i == 0 ? self->grpc_port : self->http_port);
		sent = load_through(self, route, &completed, &failed);
		ASSERT_LT(0, sent) TH_LOG("%s: coloc-load failed", route);
		EXPECT_LT(0, completed) TH_LOG("%s", route);
		EXPECT_EQ(0, failed) TH_LOG("%s", route);
		/* warm-up is 0: what it sent is what the gateway received from it */
		EXPECT_EQ(before + sent, metric(self, doors[i].metric)) TH_LOG("%s", route);
	}
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
		ASSERT_EQ(0, send_garbage(self->grpc_port, buf, n));
	}
	ASSERT_EQ(0, send_garbage(self->grpc_port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27));
	EXPECT_EQ(0, waitpid(self->gateway, NULL, WNOHANG));
	ASSERT_EQ(0, python_client(self, "check", NULL, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ok"));
}

TEST_HARNESS_MAIN
