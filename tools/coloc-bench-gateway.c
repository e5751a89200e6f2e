// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-bench-gateway: what coloc-gateway adds to a query's latency, beside
 * colocd's own Unix socket. Each replica sends its queries alternately (the
 * order flipped every pair) through libcoloc_client and through the
 * gateway's KServe v2 HTTP API with the binary extension (a plain HTTP/1.1
 * keep-alive connection, TCP_NODELAY), or with --grpc through its KServe
 * v2 gRPC API (ModelInfer with raw_input_contents, coloc/kserve.h), or
 * with --grpc-raw through the same API on an HTTP/2 client of coloc's own
 * (client/kserve_h2.c: no gRPC library, so the client's cost
 * is not counted in the gateway's), same input. For every query the
 * round trip seen here and colocd's own latency (latency_ns, which the
 * gateway returns in the answer's parameters) are taken; their difference
 * is the transport's share, free of the model's run-to-run spread. Printed
 * per replica: medians of both, and the gateway's added time (HTTP's
 * transport minus the socket's, at p50 and p95); then the median over
 * replicas. With --gateway-pid, the gateway's CPU time per query and how
 * often its threads were put on a CPU per query (wake-ups; all its threads'
 * /proc/PID/task/TID/schedstat). docs/measurements/gateway.md has runs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <json-c/json.h>
#include "cli.h"
#include "coloc/client.h"
#include "coloc/kserve.h"
#include "coloc/protocol.h"
#include "mono_clock.h"

static const char *prog = "coloc-bench-gateway";

static struct {
	const char *socket_path, *http, *grpc, *grpc_raw, *model;
	long queries, replicas, gateway_pid;
	bool direct_memfd; /* the socket path's input in a memfd (coloc_client_use_memfd) */
	bool json; /* the HTTP door's input as JSON "data" (%.9g each), not binary */
} opts = {
	.socket_path = COLOC_DEFAULT_SOCKET,
	.http = "127.0.0.1:8000",
	.model = "mobilenet_v2",
	.queries = 100,
	.replicas = 5,
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int64_t median(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * CPU time (ns) of every thread of pid so far, and how many times its
 * threads were put on a CPU (schedstat's third field: each is a wake-up or
 * a preemption's return); zeros when pid is gone.
 */
static void process_sched(long pid, uint64_t *cpu_ns, uint64_t *runs)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	*cpu_ns = *runs = 0;
	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char f[128];
		unsigned long long run = 0, wait = 0, slices = 0;
		FILE *fp;

		if (de->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "/proc/%ld/task/%.20s/schedstat", pid, de->d_name);
		fp = fopen(f, "r");
		if (fp && fscanf(fp, "%llu %llu %llu", &run, &wait, &slices) == 3) {
			*cpu_ns += run;
			*runs += slices;
		}
		if (fp)
			fclose(fp);
	}
	closedir(d);
}

/* The q-quantile (0..1) of v (sorted in place). */
static int64_t quantile(int64_t *v, size_t n, double q)
{
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);

	qsort(v, n, sizeof(*v), cmp_i64);
	return v[i < n ? i : n - 1];
}

struct http_conn {
	int fd;
	char *req;
	size_t req_len;
	char *buf;
	size_t cap;
};

static int http_connect(struct http_conn *h)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	const char *colon = strrchr(opts.http, ':');
	char host[64];
	long port;
	int one = 1;

	if (!colon || (size_t)(colon - opts.http) >= sizeof(host) ||
	    cli_parse_long(colon + 1, 1, 65535, &port))
		return -EINVAL;
	memcpy(host, opts.http, (size_t)(colon - opts.http));
	host[colon - opts.http] = '\0';
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return -EINVAL;
	a.sin_port = htons((uint16_t)port);
	h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->fd < 0 || connect(h->fd, (struct sockaddr *)&a, sizeof(a)))
		return -errno;
	setsockopt(h->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* Sends req, reads one answer: its status, body (in h->buf) and Inference-Header-Content-Length. */
static int http_roundtrip(struct http_conn *h, const char *req, size_t len, size_t *body_at,
			  size_t *body_len, long *infer_hlen)
{
	size_t got = 0, head_end = 0;
	long clen = -1, status = -1;

	*infer_hlen = -1;
	for (size_t off = 0; off < len;) {
		ssize_t n = send(h->fd, req + off, len - off, MSG_NOSIGNAL);

		if (n <= 0)
			return -EPIPE;
		off += (size_t)n;
	}
	for (;;) {
		ssize_t n;

		if (got == h->cap) {
			size_t cap = h->cap ? h->cap * 2 : 65536;
			char *b = realloc(h->buf, cap + 1);

			if (!b)
				return -ENOMEM;
			h->buf = b;
			h->cap = cap;
		}
		n = recv(h->fd, h->buf + got, h->cap - got, 0);
		if (n <= 0)
			return -EPIPE;
		got += (size_t)n;
		h->buf[got] = '\0';
		if (!head_end) {
			char *e = strstr(h->buf, "\r\n\r\n"), *p;

			if (!e)
				continue;
			head_end = (size_t)(e - h->buf) + 4;
			*e = '\0';
			status = strtol(h->buf + 9, NULL, 10);
			for (p = strstr(h->buf, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
				if (!strncasecmp(p + 2, "Content-Length:", 15))
					clen = strtol(p + 17, NULL, 10);
				if (!strncasecmp(p + 2, "Inference-Header-Content-Length:", 32))
					*infer_hlen = strtol(p + 34, NULL, 10);
			}
			*e = '\r';
			if (clen < 0)
				return -EPROTO;
		}
		if (head_end && got >= head_end + (size_t)clen)
			break;
	}
	*body_at = head_end;
	*body_len = (size_t)clen;
	return (int)status;
}

/* The first input's name and shape, from the model's metadata. */
static int http_input(struct http_conn *h, char *name, size_t name_len, char *shape,
		      size_t shape_len)
{
	char req[256];
	size_t at, len;
	long hl;
	struct json_object *o, *inputs, *in, *v;
	int n = snprintf(req, sizeof(req), "GET /v2/models/%s HTTP/1.1\r\nHost: bench\r\n\r\n",
			 opts.model);
	int st = http_roundtrip(h, req, (size_t)n, &at, &len, &hl);

	if (st != 200)
		return -1;
	h->buf[at + len] = '\0';
	o = json_tokener_parse(h->buf + at);
	if (!o || !json_object_object_get_ex(o, "inputs", &inputs) ||
	    json_object_array_length(inputs) != 1) {
		json_object_put(o);
		return -1;
	}
	in = json_object_array_get_idx(inputs, 0);
	json_object_object_get_ex(in, "name", &v);
	snprintf(name, name_len, "%s", json_object_get_string(v));
	json_object_object_get_ex(in, "shape", &v);
	snprintf(shape, shape_len, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return 0;
}

/* The request of the input as JSON "data" in h->req (9 digits a value: the fp32 exactly). */
static int http_prepare_json(struct http_conn *h, const char *name, const char *shape,
			     const float *in, size_t n)
{
	char *json = malloc(512 + n * 20);
	size_t jl;
	int hl;

	h->req = json ? malloc(1024 + n * 20) : NULL;
	if (!h->req) {
		free(json);
		return -1;
	}
	jl = (size_t)sprintf(json, "{\"inputs\":[{\"name\":\"%s\",\"shape\":%s,"
				   "\"datatype\":\"FP32\",\"data\":[",
			     name, shape);
	for (size_t i = 0; i < n; i++)
		jl += (size_t)sprintf(json + jl, "%s%.9g", i ? "," : "", (double)in[i]);
	jl += (size_t)sprintf(json + jl, "]}],\"parameters\":{\"binary_data_output\":true}}");
	hl = sprintf(h->req,
		     "POST /v2/models/%s/infer HTTP/1.1\r\nHost: bench\r\n"
		     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
		     opts.model, jl);
	memcpy(h->req + hl, json, jl);
	h->req_len = (size_t)hl + jl;
	free(json);
	return 0;
}

static int http_prepare(struct http_conn *h, const void *input, size_t in_bytes)
{
	char name[128], shape[256], json[1024];
	int jl, hl;

	if (http_input(h, name, sizeof(name), shape, sizeof(shape)))
		return -1;
	if (opts.json)
		return http_prepare_json(h, name, shape, input, in_bytes / sizeof(float));
	jl = snprintf(json, sizeof(json),
		      "{\"inputs\":[{\"name\":\"%s\",\"shape\":%s,\"datatype\":\"FP32\","
		      "\"parameters\":{\"binary_data_size\":%zu}}],\"parameters\":{"
		      "\"binary_data_output\":true}}",
		      name, shape, in_bytes);
	h->req = malloc(1024 + (size_t)jl + in_bytes);
	if (!h->req)
		return -1;
	hl = sprintf(h->req,
		     "POST /v2/models/%s/infer HTTP/1.1\r\nHost: bench\r\n"
		     "Content-Type: application/octet-stream\r\n"
		     "Inference-Header-Content-Length: %d\r\nContent-Length: %zu\r\n\r\n%s",
		     opts.model, jl, (size_t)jl + in_bytes, json);
	memcpy(h->req + hl, input, in_bytes);
	h->req_len = (size_t)hl + in_bytes;
	return 0;
}

/* One query through the gateway: 0 with its round trip and colocd's latency (ns). */
static int http_query(struct http_conn *h, int64_t *rtt, int64_t *colocd_ns)
{
	uint64_t t0 = coloc_now_ns();
	size_t at, len;
	long hl;
	int st = http_roundtrip(h, h->req, h->req_len, &at, &len, &hl);
	struct json_object *o, *p, *v;
	char save;

	*rtt = (int64_t)(coloc_now_ns() - t0);
	if (st != 200 || hl < 0 || (size_t)hl > len) {
		fprintf(stderr, "%s: HTTP %d: %.300s\n", prog, st, h->buf + at);
		return -1;
	}
	save = h->buf[at + (size_t)hl];
	h->buf[at + (size_t)hl] = '\0';
	o = json_tokener_parse(h->buf + at);
	h->buf[at + (size_t)hl] = save;
	if (!o || !json_object_object_get_ex(o, "parameters", &p) ||
	    !json_object_object_get_ex(p, "coloc_latency_us", &v)) {
		json_object_put(o);
		return -1;
	}
	*colocd_ns = json_object_get_int64(v) * 1000;
	json_object_put(o);
	return 0;
}

/* One query through the gateway's gRPC API: 0 with its round trip and colocd's latency (ns). */
static int grpc_query(struct kserve_grpc *g, const void *in, size_t in_bytes, void *out,
		      size_t out_bytes, int64_t *rtt, int64_t *colocd_ns)
{
	struct coloc_infer_result res;
	uint64_t t0 = coloc_now_ns();
	int r = kserve_grpc_infer_send(g, opts.model, 0, in, in_bytes);

	if (!r)
		r = kserve_grpc_infer_recv(g, &res, out, out_bytes, -1);
	*rtt = (int64_t)(coloc_now_ns() - t0);
	if (r != 1 || res.status != COLOC_INFER_OK) {
		fprintf(stderr, "%s: gRPC query: %s\n", prog,
			r == 1 ? res.error : kserve_grpc_error(g));
		return -1;
	}
	*colocd_ns = (int64_t)res.latency_ns;
	return 0;
}

/* One query on the raw HTTP/2 client: as grpc_query. */
static int grpc_raw_query(struct kserve_h2 *g, const void *in, size_t in_bytes, void *out,
			  size_t out_bytes, int64_t *rtt, int64_t *colocd_ns)
{
	struct coloc_infer_result res;
	uint64_t t0 = coloc_now_ns();
	int r = kserve_h2_infer(g, opts.model, in, in_bytes, out, out_bytes, &res);

	*rtt = (int64_t)(coloc_now_ns() - t0);
	if (r != 1 || res.status != COLOC_INFER_OK) {
		fprintf(stderr, "%s: raw gRPC query: %s\n", prog,
			r == 1 ? res.error : kserve_h2_error(g));
		return -1;
	}
	*colocd_ns = (int64_t)res.latency_ns;
	return 0;
}

static int socket_query(struct coloc_client *c, const void *in, size_t in_bytes, void *out,
			size_t out_bytes, int64_t *rtt, int64_t *colocd_ns)
{
	struct coloc_infer_result res;
	uint64_t t0 = coloc_now_ns();
	int r = coloc_client_infer(c, opts.model, in, in_bytes, out, out_bytes, &res);

	*rtt = (int64_t)(coloc_now_ns() - t0);
	if (r || res.status != COLOC_INFER_OK) {
		fprintf(stderr, "%s: socket query: %s\n", prog, coloc_client_error(c));
		return -1;
	}
	/* as the gateway reports it: whole µs */
	*colocd_ns = (int64_t)(res.latency_ns / 1000) * 1000;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [--socket PATH] [--http ADDR:PORT | --grpc ADDR:PORT |\n"
		"          --grpc-raw ADDR:PORT] [--model NAME]\n"
		"          [--queries N] [--replicas N] [--gateway-pid PID] [--direct-memfd] [--json]\n"
		"The latency coloc-gateway adds to a query of NAME (default %s), beside colocd's\n"
		"socket: N queries each way per replica (default %ld, %ld replicas), interleaved.\n"
		"--direct-memfd: the socket path's input goes in a memfd, not on the socket.\n"
		"--json: the HTTP door's input goes as JSON \"data\" (9 digits a value), not binary.\n"
		"--grpc-raw: the gRPC API through an HTTP/2 client of this tool's own, not gRPC's\n"
		"C core, so that a gRPC library's own cost is not counted as the gateway's.\n"
		"The first answer of each replica is compared with the socket's (printed).\n"
		"colocd and the gateway must be serving NAME already.\n",
		prog, opts.model, opts.queries, opts.replicas);
}

/* The tenant's input and output bytes from colocd's status; left 0 if unknown. */
static void tenant_io_bytes(struct coloc_client *c, const char *name, size_t *in, size_t *out)
{
	struct json_object *req = json_object_new_object(), *resp, *arr, *t, *v;

	json_object_object_add(req, "cmd", json_object_new_string("status"));
	json_object_object_add(req, "name", json_object_new_string(name));
	resp = coloc_client_call(c, req);
	json_object_put(req);
	if (resp && coloc_client_ok(c, resp) && json_object_object_get_ex(resp, "tenants", &arr) &&
	    json_object_array_length(arr) == 1) {
		t = json_object_array_get_idx(arr, 0);
		if (json_object_object_get_ex(t, "input_bytes", &v))
			*in = (size_t)json_object_get_int64(v);
		if (json_object_object_get_ex(t, "output_bytes", &v))
			*out = (size_t)json_object_get_int64(v);
	}
	json_object_put(resp);
}

/* Options into opts: -1 to go on, else the exit code (help, or a bad option). */
static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "http", required_argument, NULL, 'u' },
		{ "grpc", required_argument, NULL, 'g' },
		{ "grpc-raw", required_argument, NULL, 'G' },
		{ "model", required_argument, NULL, 'm' },
		{ "queries", required_argument, NULL, 'n' },
		{ "replicas", required_argument, NULL, 'r' },
		{ "gateway-pid", required_argument, NULL, 'p' },
		{ "direct-memfd", no_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case 's':
			opts.socket_path = optarg;
			break;
		case 'u':
			opts.http = optarg;
			break;
		case 'g':
			opts.grpc = optarg;
			break;
		case 'G':
			opts.grpc_raw = optarg;
			break;
		case 'm':
			opts.model = optarg;
			break;
		case 'n':
			if (cli_parse_flag(prog, "--queries", optarg, 1, 100000, &opts.queries))
				return 2;
			break;
		case 'r':
			if (cli_parse_flag(prog, "--replicas", optarg, 1, 64, &opts.replicas))
				return 2;
			break;
		case 'p':
			if (cli_parse_flag(prog, "--gateway-pid", optarg, 1, 1L << 22,
					   &opts.gateway_pid))
				return 2;
			break;
		case 'd':
			opts.direct_memfd = true;
			break;
		case 'j':
			opts.json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	return -1;
}

/* The gateways' clients: one of them is open. */
struct gateway_door {
	struct http_conn h;
	struct kserve_grpc *g;
	struct kserve_h2 *raw;
	const char *name;
};

static int door_open(struct gateway_door *d, const float *in, size_t in_bytes)
{
	d->h.fd = -1;
	d->name = opts.grpc_raw ? "grpc_raw" : opts.grpc ? "grpc" : "http";
	if (opts.grpc_raw)
		return kserve_h2_connect(opts.grpc_raw, &d->raw);
	if (opts.grpc)
		return kserve_grpc_connect(opts.grpc, &d->g);
	return http_connect(&d->h) || http_prepare(&d->h, in, in_bytes);
}

static int door_query(struct gateway_door *d, const void *in, size_t in_bytes, void *out,
		      size_t out_bytes, int64_t *rtt, int64_t *colocd_ns)
{
	if (d->raw)
		return grpc_raw_query(d->raw, in, in_bytes, out, out_bytes, rtt, colocd_ns);
	if (d->g)
		return grpc_query(d->g, in, in_bytes, out, out_bytes, rtt, colocd_ns);
	return http_query(&d->h, rtt, colocd_ns);
}

static void door_close(struct gateway_door *d)
{
	if (d->h.fd >= 0)
		close(d->h.fd);
	free(d->h.req);
	free(d->h.buf);
	kserve_grpc_close(d->g);
	kserve_h2_close(d->raw);
}

/* The gateway's answer against the socket's (gRPC doors: HTTP's body is not
 * kept): 0 when every output is within 1e-3 of the largest, else -1. */
static int answers_agree(const float *gw, const float *sock, size_t out_bytes, long replica)
{
	float diff = 0, big = 0;

	if (!opts.grpc && !opts.grpc_raw)
		return 0;
	for (size_t i = 0; i < out_bytes / 4; i++) {
		float d = gw[i] > sock[i] ? gw[i] - sock[i] : sock[i] - gw[i];
		float a = sock[i] < 0 ? -sock[i] : sock[i];

		diff = d > diff ? d : diff;
		big = a > big ? a : big;
	}
	fprintf(stderr, "%s: replica %ld: the gateway's first answer is the socket's within %g "
			"(largest output %g)\n",
		prog, replica, (double)diff, (double)big);
	return diff <= 1e-3f * (big > 1 ? big : 1) ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct gateway_door door = { .h.fd = -1 };
	struct coloc_client *c = NULL;
	size_t in_bytes = 0, out_bytes = 0;
	int64_t *sock_rtt, *http_rtt, *sock_x, *http_x, added[64], added95[64], cpu_sum = 0;
	int64_t runs_sum = 0;
	float *in, *out, *out_gw;
	int rc = parse_args(argc, argv);

	if (rc >= 0)
		return rc;
	rc = 1;
	if (coloc_client_connect(opts.socket_path, &c)) {
		fprintf(stderr, "%s: cannot reach colocd at %s\n", prog, opts.socket_path);
		return 1;
	}
	coloc_client_use_memfd(c, opts.direct_memfd);
	tenant_io_bytes(c, opts.model, &in_bytes, &out_bytes);
	in = malloc(in_bytes ? in_bytes : 1);
	out = calloc(1, out_bytes ? out_bytes : 1);
	out_gw = calloc(1, out_bytes ? out_bytes : 1);
	sock_rtt = calloc((size_t)opts.queries, sizeof(int64_t));
	http_rtt = calloc((size_t)opts.queries, sizeof(int64_t));
	sock_x = calloc((size_t)opts.queries, sizeof(int64_t));
	http_x = calloc((size_t)opts.queries, sizeof(int64_t));
	if (!in_bytes || !in || !out || !out_gw || !sock_rtt || !http_rtt || !sock_x || !http_x) {
		fprintf(stderr, "%s: colocd serves no tenant %s (or out of memory)\n", prog,
			opts.model);
		goto out;
	}
	for (size_t i = 0; i < in_bytes / 4; i++)
		in[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
	if (door_open(&door, in, in_bytes)) {
		fprintf(stderr, "%s: cannot use the gateway at %s for %s%s%s\n", prog,
			opts.grpc_raw ? opts.grpc_raw : opts.grpc ? opts.grpc : opts.http,
			opts.model, door.raw ? ": " : "", door.raw ? kserve_h2_error(door.raw) : "");
		goto out;
	}
	printf("replica  socket_p50_us  %s_p50_us  socket_transport_p50_us  "
	       "%s_transport_p50_us  added_p50_us  added_p95_us  gateway_cpu_us_per_query  "
	       "gateway_runs_per_query\n",
	       door.name, door.name);
	for (long r = 0; r < opts.replicas; r++) {
		uint64_t cpu0 = 0, runs0 = 0, cpu = 0, runs = 0;
		int64_t colocd;

		if (opts.gateway_pid)
			process_sched(opts.gateway_pid, &cpu0, &runs0);

		for (long i = 0; i < opts.queries; i++) {
			bool http_first = i & 1;

			for (int k = 0; k < 2; k++) {
				int err = (k == 0) != http_first ?
						  socket_query(c, in, in_bytes, out, out_bytes,
							       &sock_rtt[i], &colocd) :
						  door_query(&door, in, in_bytes, out_gw,
							     out_bytes, &http_rtt[i], &colocd);

				if (err)
					goto out;
				if ((k == 0) == http_first)
					http_x[i] = http_rtt[i] - colocd;
				else
					sock_x[i] = sock_rtt[i] - colocd;
			}
			if (i == 0 && answers_agree(out_gw, out, out_bytes, r))
				goto out;
		}
		if (opts.gateway_pid) {
			process_sched(opts.gateway_pid, &cpu, &runs);
			cpu -= cpu0;
			runs -= runs0;
		}
		cpu_sum += (int64_t)cpu;
		runs_sum += (int64_t)runs;
		{
			size_t n = (size_t)opts.queries;
			int64_t sx = median(sock_x, n), hx = median(http_x, n);

			added[r] = hx - sx;
			added95[r] = quantile(http_x, n, 0.95) - quantile(sock_x, n, 0.95);
			printf("%7ld  %13.1f  %11.1f  %23.1f  %21.1f  %12.1f  %12.1f  %24.1f  %22.2f\n",
			       r, median(sock_rtt, n) / 1e3, median(http_rtt, n) / 1e3, sx / 1e3,
			       hx / 1e3, added[r] / 1e3, added95[r] / 1e3, cpu / 1e3 / (double)n,
			       (double)runs / (double)n);
		}
	}
	printf("median over %ld replicas of %ld queries each way: the gateway adds %.1f us per "
	       "query (p50), %.1f us (p95)",
	       opts.replicas, opts.queries, median(added, (size_t)opts.replicas) / 1e3,
	       median(added95, (size_t)opts.replicas) / 1e3);
	if (opts.gateway_pid)
		printf(", its CPU %.1f us and %.2f thread runs per query",
		       cpu_sum / 1e3 / (double)(opts.queries * opts.replicas),
		       (double)runs_sum / (double)(opts.queries * opts.replicas));
	printf("\n");
	rc = 0;
out:
	door_close(&door);
	free(in);
	free(out);
	free(out_gw);
	free(sock_rtt);
	free(http_rtt);
	free(sock_x);
	free(http_x);
	coloc_client_close(c);
	return rc;
}
