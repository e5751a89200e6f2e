// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway: KServe v2 (Open Inference Protocol) over HTTP and gRPC in
 * front of colocd, with a Triton-layout model repository and Prometheus metrics
 * (docs/gateway.md). An unprivileged process: it reads the repository,
 * submits its models to colocd through the control socket (so its user
 * must be in the coloc group) and forwards queries to colocd's socket. It
 * refuses to run as root unless --allow-root says so: HTTP and gRPC parsers
 * facing the network have no business holding root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include "cli.h"
#include "coloc/protocol.h"
#include "addr.h"
#include "control.h"
#include "forward.h"
#include "grpc_server.h"
#include "http.h"
#include "metrics.h"
#include "models.h"

#define GW_MALLOC_MMAP_THRESHOLD (64 << 20)
#define GW_MALLOC_ARENAS 4

static const char *prog = "coloc-gateway";

static struct {
	const char *socket_path;
	const char *repo;
	const char *http;
	const char *metrics;
	const char *grpc;
	const char *tenant_prefix; /* --tenant-prefix */
	struct gw_trusted_proxies trusted; /* --trusted-proxy */
	long threads, conns, max_queue, timeout_ms, colocd_timeout_ms, max_body, load_timeout_s;
	long max_connections, pipeline, grpc_read_timeout_ms, grpc_max_streams;
	long max_conns_per_ip, request_timeout_ms, grpc_max_conns, grpc_max_conns_per_ip;
	long grpc_idle_timeout_ms, grpc_max_buffer, grpc_max_waiting_per_ip, http_max_buffer;
	long http_min_rate;
	bool grpc_own; /* --grpc-server own, the default */
	bool allow_root;
	bool model_control; /* --model-control */
	bool repository_links; /* --repository-links */
	bool socket_copy; /* --colocd-socket-copy */
} opts = {
	.socket_path = COLOC_DEFAULT_SOCKET,
	.http = "127.0.0.1:8000",
	.metrics = "127.0.0.1:8002",
	.tenant_prefix = "",
	.threads = 4,
	.conns = 4,
	.max_queue = 1024,
	.timeout_ms = 30000,
	.colocd_timeout_ms = 5000,
	.max_body = 64L << 20,
	.load_timeout_s = 300,
	.max_connections = 1024,
	.max_conns_per_ip = 64,
	.request_timeout_ms = 30000,
	.pipeline = COLOC_MAX_INFLIGHT,
	.grpc_max_streams = 100,
	.grpc_max_conns = 1024,
	.grpc_max_conns_per_ip = 64,
	.grpc_max_waiting_per_ip = 256,
	.grpc_idle_timeout_ms = 60000,
	.grpc_own = true,
	.grpc_max_buffer = 1L << 30,
	.http_max_buffer = 256L << 20,
	.http_min_rate = 64L << 10,
};

#define GW_GRPC_READ_TIMEOUT_MS 10000 /* --grpc-read-timeout-ms's default, at most */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s --model-repository DIR [options]\n"
		"KServe v2 / Open Inference Protocol over HTTP and gRPC in front of colocd.\n"
		"\n"
		"  --model-repository DIR  models in Triton's layout: DIR/NAME/config.json and\n"
		"                          DIR/NAME/VERSION/model.model or model.onnx\n"
		"                          (docs/gateway.md); each is submitted to colocd at start\n"
		"  --socket PATH           colocd's control socket (default %s)\n"
		"  --http ADDR:PORT        the KServe v2 REST API (default %s)\n"
		"  --metrics ADDR:PORT     Prometheus /metrics (default %s)\n"
		"  --grpc ADDR:PORT        the KServe v2 gRPC API (inference.GRPCInferenceService);\n"
		"                          off unless given (Triton's port is 8001)\n"
		"  --grpc-server own|core  the gRPC server: our own over HTTP/2 (default;\n"
		"                          docs/design/gateway-grpc.md), or gRPC's C core, which\n"
		"                          holds a message to the widest model in the repository\n"
		"                          at start, the rate floor to a deadline on the whole\n"
		"                          message, and has no --grpc-max-conns,\n"
		"                          --grpc-max-conns-per-ip or --grpc-max-buffer-bytes\n"
		"                          (docs/gateway.md, \"gRPC's C core\")\n"
		"  --threads N             the gRPC server's threads (default %ld)\n"
		"  --connections N         connections to colocd for queries, 1-16 (default %ld)\n"
		"  --max-queue N           queries waiting or in flight before 503 or gRPC's\n"
		"                          RESOURCE_EXHAUSTED; also gRPC calls at once (default %ld)\n"
		"  --timeout-ms N          an infer's limit from arrival, then 504 or\n"
		"                          DEADLINE_EXCEEDED (default %ld)\n"
		"  --colocd-timeout-ms N   longest a query's input may take to go to colocd, or\n"
		"                          an answer's output to come from it (a colocd that\n"
		"                          stopped reading or writing): then 504 or\n"
		"                          DEADLINE_EXCEEDED and that connection is closed\n"
		"                          (default %ld)\n"
		"  --colocd-pipeline N     queries in flight on one colocd connection at most,\n"
		"                          1-%d (default %d); more wait for answers\n"
		"  --colocd-socket-copy    send each input's bytes on colocd's socket; by\n"
		"                          default it gets a memfd holding the input (an HTTP\n"
		"                          binary body is received straight into one)\n"
		"  --max-body-bytes N      largest request body or gRPC message, then 413 or\n"
		"                          RESOURCE_EXHAUSTED (default %ld)\n"
		"  --max-connections N     HTTP connections at once (default %ld)\n"
		"  --http-max-conns-per-ip N  HTTP connections at once from one client address\n"
		"                          (an IPv6 one by its /64), more are closed at once\n"
		"                          (default %ld; 0: no limit)\n"
		"  --http-request-timeout-ms N  longest an HTTP request may take to arrive whole,\n"
		"                          from its connection's opening or the previous answer\n"
		"                          on it, then the connection is closed (default %ld;\n"
		"                          0: only the 60 s idle timeout); an answer must be\n"
		"                          sent within --timeout-ms plus this of its request\n"
		"  --http-min-rate-bytes N  bytes a second an HTTP request must arrive at, on\n"
		"                          average from its first byte, once a second has\n"
		"                          passed: slower, 408 and the connection closed; a\n"
		"                          gRPC call's message too (DEADLINE_EXCEEDED; the C\n"
		"                          core: not whole within the time its largest takes)\n"
		"                          (default %ld; 0: only the request timeout)\n"
		"  --trusted-proxy CIDR    from these addresses (repeatable, at most %d), an HTTP\n"
		"                          request's or gRPC call's client for the\n"
		"                          per-address bounds is the one X-Forwarded-For names\n"
		"                          (its rightmost entry not itself a trusted proxy),\n"
		"                          and their connections are not counted per address\n"
		"                          (default: none)\n"
		"  --http-max-buffer-bytes N  HTTP request bodies held at once, in all (default\n"
		"                          %ld): taken from Content-Length before a body\n"
		"                          is read (a chunked one's as it grows); past it, or\n"
		"                          past an eighth of it (or one --max-body-bytes body, if\n"
		"                          larger) from one client address, 503 and the\n"
		"                          connection closed; a body no share can hold, 413\n"
		"  --grpc-read-timeout-ms N  longest a gRPC call may take to send its request\n"
		"                          message after opening, then it is cancelled with\n"
		"                          DEADLINE_EXCEEDED (default: --timeout-ms, at most %d)\n"
		"  --grpc-max-streams N    gRPC calls at once on one connection (default %ld);\n"
		"                          --max-queue bounds them over all connections, but\n"
		"                          never the health methods\n"
		"  --grpc-max-conns N      gRPC connections at once (own server; default %ld)\n"
		"  --grpc-max-conns-per-ip N  gRPC connections at once from one client address,\n"
		"                          more are closed at once (own server; default %ld;\n"
		"                          0: no limit)\n"
		"  --grpc-max-waiting-per-ip N  gRPC calls from one client address waiting for\n"
		"                          their request message at once, more get\n"
		"                          RESOURCE_EXHAUSTED; the own server's --max-queue\n"
		"                          counts a call only once its message is whole\n"
		"                          (default %ld; 0: no limit)\n"
		"  --grpc-idle-timeout-ms N  a gRPC connection with no call open this long is\n"
		"                          sent away (GOAWAY), whatever PINGs it sends (own\n"
		"                          server; default %ld; 0: never)\n"
		"  --grpc-max-buffer-bytes N  request messages held at once, in all (own server;\n"
		"                          default %ld; 16 MiB of what is above one\n"
		"                          --max-body-bytes message kept for the health\n"
		"                          calls): a call past it, or past an eighth of it in\n"
		"                          messages still coming from one client address, gets\n"
		"                          RESOURCE_EXHAUSTED\n"
		"  --model-control         allow the repository API's load and unload (HTTP\n"
		"                          /v2/repository/models/NAME/load|unload, gRPC\n"
		"                          RepositoryModelLoad|Unload): off by default, as\n"
		"                          anyone who reaches the HTTP or gRPC port could use it\n"
		"  --repository-links      follow symbolic links in the model repository (off: a\n"
		"                          linked model folder, version, model file or weights\n"
		"                          is skipped or refused, as a link could name a file\n"
		"                          outside it; KServe links a pvc:// model's folders)\n"
		"  --tenant-prefix P       name each model's tenant in colocd P + the model's name\n"
		"                          (default none): gateways on one colocd, each with a\n"
		"                          prefix of its own, never meet on a tenant name\n"
		"  --load-timeout-s N      how long a model may take to become ready (default %ld)\n"
		"  --allow-root            run as root anyway (not recommended: run it as its own\n"
		"                          user in the '%s' group)\n"
		"  --help, --version\n"
		"\n"
		"Exit status: 0 after SIGINT/SIGTERM, 1 on failure, 2 on bad usage.\n",
		prog, COLOC_DEFAULT_SOCKET, opts.http, opts.metrics, opts.threads, opts.conns,
		opts.max_queue, opts.timeout_ms, opts.colocd_timeout_ms, COLOC_MAX_INFLIGHT,
		COLOC_MAX_INFLIGHT, opts.max_body, opts.max_connections, opts.max_conns_per_ip,
		opts.request_timeout_ms, opts.http_min_rate, GW_TRUSTED_PROXIES_MAX, opts.http_max_buffer, GW_GRPC_READ_TIMEOUT_MS, opts.grpc_max_streams,
		opts.grpc_max_conns, opts.grpc_max_conns_per_ip, opts.grpc_max_waiting_per_ip,
		opts.grpc_idle_timeout_ms, opts.grpc_max_buffer, opts.load_timeout_s, COLOC_GROUP);
}

enum {
	OPT_SOCKET = 256,
	OPT_REPO,
	OPT_HTTP,
	OPT_METRICS,
	OPT_GRPC,
	OPT_THREADS,
	OPT_CONNS,
	OPT_QUEUE,
	OPT_TIMEOUT,
	OPT_COLOCD_TIMEOUT,
	OPT_BODY,
	OPT_MAXCONN,
	OPT_LOAD,
	OPT_ROOT,
	OPT_SOCKET_COPY,
	OPT_PIPELINE,
	OPT_GRPC_READ_TIMEOUT,
	OPT_GRPC_STREAMS,
	OPT_MODEL_CONTROL,
	OPT_REPOSITORY_LINKS,
	OPT_CONNS_PER_IP,
	OPT_REQUEST_TIMEOUT,
	OPT_GRPC_SERVER,
	OPT_GRPC_MAXCONN,
	OPT_GRPC_CONNS_PER_IP,
	OPT_GRPC_IDLE,
	OPT_GRPC_BUFFER,
	OPT_HTTP_BUFFER,
	OPT_GRPC_WAITING_PER_IP,
	OPT_TENANT_PREFIX,
	OPT_HTTP_MIN_RATE,
	OPT_TRUSTED_PROXY,
	OPT_VERSION
};

static const struct option long_opts[] = {
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "model-repository", required_argument, NULL, OPT_REPO },
	{ "http", required_argument, NULL, OPT_HTTP },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "grpc", required_argument, NULL, OPT_GRPC },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "connections", required_argument, NULL, OPT_CONNS },
	{ "max-queue", required_argument, NULL, OPT_QUEUE },
	{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
	{ "colocd-timeout-ms", required_argument, NULL, OPT_COLOCD_TIMEOUT },
	{ "max-body-bytes", required_argument, NULL, OPT_BODY },
	{ "max-connections", required_argument, NULL, OPT_MAXCONN },
	{ "load-timeout-s", required_argument, NULL, OPT_LOAD },
	{ "tenant-prefix", required_argument, NULL, OPT_TENANT_PREFIX },
	{ "allow-root", no_argument, NULL, OPT_ROOT },
	{ "colocd-socket-copy", no_argument, NULL, OPT_SOCKET_COPY },
	{ "colocd-pipeline", required_argument, NULL, OPT_PIPELINE },
	{ "grpc-read-timeout-ms", required_argument, NULL, OPT_GRPC_READ_TIMEOUT },
	{ "grpc-max-streams", required_argument, NULL, OPT_GRPC_STREAMS },
	{ "model-control", no_argument, NULL, OPT_MODEL_CONTROL },
	{ "repository-links", no_argument, NULL, OPT_REPOSITORY_LINKS },
	{ "http-max-conns-per-ip", required_argument, NULL, OPT_CONNS_PER_IP },
	{ "http-request-timeout-ms", required_argument, NULL, OPT_REQUEST_TIMEOUT },
	{ "http-min-rate-bytes", required_argument, NULL, OPT_HTTP_MIN_RATE },
	{ "trusted-proxy", required_argument, NULL, OPT_TRUSTED_PROXY },
	{ "grpc-server", required_argument, NULL, OPT_GRPC_SERVER },
	{ "grpc-max-conns", required_argument, NULL, OPT_GRPC_MAXCONN },
	{ "grpc-max-conns-per-ip", required_argument, NULL, OPT_GRPC_CONNS_PER_IP },
	{ "grpc-idle-timeout-ms", required_argument, NULL, OPT_GRPC_IDLE },
	{ "grpc-max-buffer-bytes", required_argument, NULL, OPT_GRPC_BUFFER },
	{ "http-max-buffer-bytes", required_argument, NULL, OPT_HTTP_BUFFER },
	{ "grpc-max-waiting-per-ip", required_argument, NULL, OPT_GRPC_WAITING_PER_IP },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* The numeric flags: which field, and its range. */
static const struct {
	int opt;
	const char *flag;
	long *field, lo, hi;
} numeric_opts[] = {
	{ OPT_THREADS, "--threads", &opts.threads, 1, 256 },
	{ OPT_CONNS, "--connections", &opts.conns, 1, 16 },
	{ OPT_QUEUE, "--max-queue", &opts.max_queue, 1, 1000000 },
	{ OPT_TIMEOUT, "--timeout-ms", &opts.timeout_ms, 1, 3600000 },
	{ OPT_COLOCD_TIMEOUT, "--colocd-timeout-ms", &opts.colocd_timeout_ms, 1, 3600000 },
	{ OPT_BODY, "--max-body-bytes", &opts.max_body, 1024, 1L << 30 },
	{ OPT_MAXCONN, "--max-connections", &opts.max_connections, 1, 65536 },
	{ OPT_LOAD, "--load-timeout-s", &opts.load_timeout_s, 1, 86400 },
	{ OPT_PIPELINE, "--colocd-pipeline", &opts.pipeline, 1, COLOC_MAX_INFLIGHT },
	{ OPT_GRPC_READ_TIMEOUT, "--grpc-read-timeout-ms", &opts.grpc_read_timeout_ms, 1, 3600000 },
	{ OPT_GRPC_STREAMS, "--grpc-max-streams", &opts.grpc_max_streams, 1, 65536 },
	{ OPT_CONNS_PER_IP, "--http-max-conns-per-ip", &opts.max_conns_per_ip, 0, 65536 },
	{ OPT_REQUEST_TIMEOUT, "--http-request-timeout-ms", &opts.request_timeout_ms, 0, 3600000 },
	{ OPT_HTTP_MIN_RATE, "--http-min-rate-bytes", &opts.http_min_rate, 0, 1L << 30 },
	{ OPT_GRPC_MAXCONN, "--grpc-max-conns", &opts.grpc_max_conns, 1, 65536 },
	{ OPT_GRPC_CONNS_PER_IP, "--grpc-max-conns-per-ip", &opts.grpc_max_conns_per_ip, 0, 65536 },
	{ OPT_GRPC_IDLE, "--grpc-idle-timeout-ms", &opts.grpc_idle_timeout_ms, 0, 86400000 },
	{ OPT_GRPC_BUFFER, "--grpc-max-buffer-bytes", &opts.grpc_max_buffer, 1L << 20, 1L << 40 },
	{ OPT_HTTP_BUFFER, "--http-max-buffer-bytes", &opts.http_max_buffer, 1L << 20, 1L << 40 },
	{ OPT_GRPC_WAITING_PER_IP, "--grpc-max-waiting-per-ip", &opts.grpc_max_waiting_per_ip, 0,
	  1000000 },
};

/* A socket a connection: as many files as the hard limit allows (a unit's default soft is 1024). */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

#define GW_FILES_BESIDES 16 /* files the gateway holds besides its connections, about */

/*
 * --grpc-max-conns within RLIMIT_NOFILE (after raise_nofile): past it, the
 * own server would refuse connections with EMFILE instead of its limit, so
 * it is clamped, with a warning (LimitNOFILE= in the unit sets the limit).
 */
static void clamp_grpc_conns(void)
{
	struct rlimit rl;
	long room;

	if (!opts.grpc || !opts.grpc_own || getrlimit(RLIMIT_NOFILE, &rl) ||
	    rl.rlim_cur == RLIM_INFINITY)
		return;
	room = rl.rlim_cur > 2 * GW_FILES_BESIDES ? (long)rl.rlim_cur - GW_FILES_BESIDES :
						    (long)rl.rlim_cur / 2;
	if (opts.grpc_max_conns <= room)
		return;
	fprintf(stderr,
		"%s: warning: --grpc-max-conns %ld is over the open files limit (%ld) less "
		"what the gateway needs besides: %ld (raise LimitNOFILE=)\n",
		prog, opts.grpc_max_conns, (long)rl.rlim_cur, room > 1 ? room : 1);
	opts.grpc_max_conns = room > 1 ? room : 1;
}

static int parse_args(int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		size_t i;

		for (i = 0; i < sizeof(numeric_opts) / sizeof(*numeric_opts); i++)
			if (numeric_opts[i].opt == c)
				break;
		if (i < sizeof(numeric_opts) / sizeof(*numeric_opts)) {
			if (cli_parse_flag(prog, numeric_opts[i].flag, optarg, numeric_opts[i].lo,
					   numeric_opts[i].hi, numeric_opts[i].field))
				return 2;
			continue;
		}
		switch (c) {
		case OPT_SOCKET:
			opts.socket_path = optarg;
			break;
		case OPT_REPO:
			opts.repo = optarg;
			break;
		case OPT_HTTP:
			opts.http = optarg;
			break;
		case OPT_METRICS:
			opts.metrics = optarg;
			break;
		case OPT_GRPC:
			opts.grpc = optarg;
			break;
		case OPT_GRPC_SERVER:
			if (strcmp(optarg, "own") && strcmp(optarg, "core")) {
				fprintf(stderr, "%s: --grpc-server wants own or core, not '%s'\n",
					prog, optarg);
				return 2;
			}
			opts.grpc_own = !strcmp(optarg, "own");
			break;
		case OPT_ROOT:
			opts.allow_root = true;
			break;
		case OPT_SOCKET_COPY:
			opts.socket_copy = true;
			break;
		case OPT_MODEL_CONTROL:
			opts.model_control = true;
			break;
		case OPT_REPOSITORY_LINKS:
			opts.repository_links = true;
			break;
		case OPT_TENANT_PREFIX:
			opts.tenant_prefix = optarg;
			break;
		case OPT_TRUSTED_PROXY:
			if (gw_trusted_proxies_add(&opts.trusted, optarg)) {
				fprintf(stderr,
					"%s: --trusted-proxy wants ADDR or ADDR/BITS (IPv4 or "
					"IPv6), at most %d of them, not '%s'\n",
					prog, GW_TRUSTED_PROXIES_MAX, optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case OPT_VERSION:
			cli_print_version(prog);
			exit(0);
		default:
			fprintf(stderr, "Try '%s --help'.\n", prog);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog, argv[optind]);
		return 2;
	}
	if (!opts.repo) {
		fprintf(stderr, "%s: --model-repository DIR is required (see --help)\n", prog);
		return 2;
	}
	return 0;
}

/* The HTTP side's options from the command line's (its address aside). */
static void http_opts_of(struct gw_http_opts *h)
{
	h->max_connections = (int)opts.max_connections;
	h->max_conns_per_ip = (int)opts.max_conns_per_ip;
	h->request_timeout_ms = (int)opts.request_timeout_ms;
	h->min_rate = (size_t)opts.http_min_rate;
	h->trusted = &opts.trusted;
	h->max_body = (size_t)opts.max_body;
	h->max_buffer = (size_t)opts.http_max_buffer;
	h->max_buffer_per_addr = h->max_buffer / 8 > h->max_body ? h->max_buffer / 8 : h->max_body;
	h->timeout_ms = (int)opts.timeout_ms;
	h->idle_timeout_s = 60;
	h->model_control = opts.model_control;
}

/* how long the stopping gateway waits for the loader (watching, or a model's load) */
#define LOADER_JOIN_S 2

static void *load_thread(void *arg)
{
	gw_models_load_all(arg);
	gw_models_watch(arg);
	return NULL;
}

/* Stops the loader's watching; whether it ended within LOADER_JOIN_S. */
static bool loader_stopped(struct gw_models *ms, pthread_t loader)
{
	struct timespec until;

	gw_models_stop_watching(ms);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += LOADER_JOIN_S;
	return !pthread_timedjoin_np(loader, NULL, &until);
}

int main(int argc, char **argv)
{
	struct gw_http_opts hopts = { 0 };
	struct sockaddr_storage maddr;
	socklen_t mlen;
	struct coloc_err err = { 0 };
	struct gw_ctl *ctl = NULL, *mctl = NULL;
	struct gw_fwd *fw = NULL;
	struct gw_models *ms = NULL;
	struct gw_http *http = NULL;
	struct gw_metrics *mx = NULL;
	struct gw_grpc *grpc = NULL;
	struct gw_grpc_opts gopts = { 0 };
	struct gw_http_budget *budget;
	pthread_t loader;
	bool loading = false;
	sigset_t sigs;
	int r, sig, rc = 1;

	r = parse_args(argc, argv);
	if (r)
		return r;
	raise_nofile();
	clamp_grpc_conns();
	if (gw_parse_addr(opts.http, &hopts.addr, &hopts.addr_len, 1)) {
		fprintf(stderr, "%s: --http wants ADDR:PORT (e.g. 127.0.0.1:8000), not '%s'\n",
			prog, opts.http);
		return 2;
	}
	if (opts.grpc && gw_parse_addr(opts.grpc, &maddr, &mlen, 1)) {
		fprintf(stderr, "%s: --grpc wants ADDR:PORT (e.g. 127.0.0.1:8001), not '%s'\n",
			prog, opts.grpc);
		return 2;
	}
	if (gw_parse_addr(opts.metrics, &maddr, &mlen, 1)) {
		fprintf(stderr, "%s: --metrics wants ADDR:PORT (e.g. 127.0.0.1:8002), not '%s'\n",
			prog, opts.metrics);
		return 2;
	}
	if (geteuid() == 0 && !opts.allow_root) {
		fprintf(stderr,
			"%s: refusing to run as root: run it as its own user in the '%s' group "
			"(docs/gateway.md), or pass --allow-root\n",
			prog, COLOC_GROUP);
		return 1;
	}
	/*
	 * A query's buffers (a tensor, a message) are hundreds of KB: from the
	 * heap, reused, not a fresh mmap whose pages fault in on every query
	 * (docs/measurements/gateway.md)
	 */
	mallopt(M_MMAP_THRESHOLD, GW_MALLOC_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, 4 * GW_MALLOC_MMAP_THRESHOLD);
	/* not one arena per connection's thread, each keeping what it freed */
	mallopt(M_ARENA_MAX, GW_MALLOC_ARENAS);
	/* SIGPIPE from a client that went away is an error return, not a death */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	http_opts_of(&hopts);
	/* one share an address of HTTP's bodies and answers and gRPC's answers */
	budget = gw_http_budget_create(hopts.max_buffer, hopts.max_buffer_per_addr);
	hopts.budget = budget;
	if (!budget) {
		coloc_err_set(&err, -ENOMEM, "out of memory");
		goto out;
	}
	if (gw_ctl_open(opts.socket_path, &ctl, &err) ||
	    gw_ctl_open(opts.socket_path, &mctl, &err) ||
	    gw_fwd_create(opts.socket_path, (int)opts.conns, (int)opts.max_queue,
			  (int)opts.colocd_timeout_ms, &fw, &err))
		goto out;
	gw_fwd_set_socket_copy(fw, opts.socket_copy);
	gw_fwd_set_pipeline(fw, (int)opts.pipeline);
	if (gw_models_create(opts.repo, opts.repository_links, opts.tenant_prefix, ctl, fw,
			     (int)opts.load_timeout_s, &ms, &err))
		goto out;
	if (gw_http_start(&hopts, ms, fw, &http, &err)) {
		coloc_err_prefix(&err, "--http %s", opts.http);
		goto out;
	}
	gopts.server = opts.grpc_own ? GW_GRPC_SERVER_OWN : GW_GRPC_SERVER_CORE;
	gopts.max_conns = (int)opts.grpc_max_conns;
	gopts.max_conns_per_ip = (int)opts.grpc_max_conns_per_ip;
	gopts.max_waiting_per_ip = (int)opts.grpc_max_waiting_per_ip;
	gopts.addr = opts.grpc;
	gopts.threads = (int)opts.threads;
	gopts.max_calls = (int)opts.max_queue;
	gopts.max_message = (size_t)opts.max_body;
	gopts.min_rate = (size_t)opts.http_min_rate;
	gopts.timeout_ms = (int)opts.timeout_ms;
	gopts.idle_timeout_ms = (int)opts.grpc_idle_timeout_ms;
	gopts.max_buffer_bytes = (size_t)opts.grpc_max_buffer;
	gopts.answers = budget;
	gopts.trusted = &opts.trusted;
	gopts.model_control = opts.model_control;
	gopts.max_streams = (int)opts.grpc_max_streams;
	gopts.read_timeout_ms = (int)opts.grpc_read_timeout_ms;
	if (!gopts.read_timeout_ms)
		gopts.read_timeout_ms = opts.timeout_ms < GW_GRPC_READ_TIMEOUT_MS ?
						(int)opts.timeout_ms :
						GW_GRPC_READ_TIMEOUT_MS;
	if (opts.grpc && gw_grpc_start(&gopts, ms, fw, &grpc, &err)) {
		coloc_err_prefix(&err, "--grpc %s", opts.grpc);
		goto out;
	}
	if (gw_metrics_start(&maddr, ms, mctl, &mx, &err)) {
		coloc_err_prefix(&err, "--metrics %s", opts.metrics);
		goto out;
	}
	fprintf(stderr, "%s: KServe v2 HTTP on port %d, metrics on port %d, colocd at %s\n", prog,
		gw_http_port(http), gw_metrics_port(mx), opts.socket_path);
	if (grpc)
		fprintf(stderr, "%s: KServe v2 gRPC on port %d\n", prog, gw_grpc_port(grpc));
	if (pthread_create(&loader, NULL, load_thread, ms)) {
		coloc_err_set(&err, -EAGAIN, "cannot start the loading thread");
		goto out;
	}
	loading = true;
	while (sigwait(&sigs, &sig))
		;
	fprintf(stderr, "%s: stopping (signal %d)\n", prog, sig);
	rc = 0;
out:
	if (err.code)
		fprintf(stderr, "%s: %s\n", prog, coloc_err_str(&err));
	if (http)
		gw_http_quiesce(http);
	gw_grpc_quiesce(grpc);
	/* answers every forwarded query (a connection thread waits for it), then the listeners go */
	if (fw)
		gw_fwd_stop(fw);
	gw_http_stop(http);
	gw_grpc_stop(grpc);
	gw_metrics_stop(mx);
	/* a model still loading holds the pool and the connections: the process exit frees them */
	if (loading && !loader_stopped(ms, loader))
		return rc;
	gw_models_destroy(ms);
	gw_fwd_destroy(fw);
	gw_ctl_close(mctl);
	gw_ctl_close(ctl);
	gw_http_budget_destroy(budget);
	return rc;
}
