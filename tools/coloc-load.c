// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-load: an open-loop load generator for colocd's tenants, in the shape
 * of MLPerf's server scenario. Each tenant gets Poisson arrivals at its rate
 * (exponential gaps drawn from a seeded PRNG of its own, so a seed repeats a
 * run's arrival times exactly); a query is sent when its time comes, whether
 * or not earlier ones have completed, through libcoloc_client's asynchronous
 * infer. Between arrivals the process sleeps in ppoll() until the next one or
 * a completion, so its own CPU cost (reported) stays small beside what it
 * measures. Latency is taken here, from just before the send to the receipt
 * of the answer, and colocd's own latency_ns is reported beside it, with
 * where it went part by part (the answers' parts_ns), and what lies between
 * the two: the send (the request's bytes into the socket) and the hop (this
 * latency less colocd's, per query: the input's way in and the answer's way
 * back, and from colocd's stamps its parts: the way in, colocd's read of
 * the input, the way out), and this latency less the query's wait behind others (colocd's
 * queued part): what a query costs apart from the load's queueing. With
 * --grpc or --url the queries go through coloc-gateway's KServe v2 gRPC or
 * HTTP API instead (coloc/infer_route.h: the same asynchronous shape); the
 * tenants' QoS and sizes are still read from colocd's socket, and
 * --gateway-pid adds the gateway's CPU time per query.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <json-c/json.h>
#include "cli.h"
#include "rng.h"
#include "coloc/client.h"
#include "coloc/infer_route.h"
#include "coloc/protocol.h"

#define LOAD_MAX_TENANTS 16
#define LOAD_MAX_CONNS 64
#define LOAD_MAX_QPS 100000.0
#define LOAD_REASON_LEN 256
#define LOAD_NR_HOP_PARTS 3
#define NS_PER_S 1000000000ull

static struct {
	const char *socket_path;
	const char *grpc; /* HOST:PORT of coloc-gateway's gRPC API, or */
	const char *url; /* http://HOST:PORT of its HTTP API, or neither: colocd's socket */
	long gateway_pid;
	const char *tenant_spec;
	long duration_s;
	long warmup_s;
	long seed;
	long conns_per_tenant;
	long drain_s;
	bool json;
} opts = {
	.socket_path = COLOC_DEFAULT_SOCKET,
	.seed = 1,
	.conns_per_tenant = 1,
	.drain_s = 10,
};

enum load_outcome { LOAD_OK, LOAD_REJECTED, LOAD_DROPPED, LOAD_FAILED, LOAD_NR_OUTCOMES };

/* Indexed by enum coloc_infer_status: what each answer counts as. */
static const enum load_outcome outcome_of_status[] = {
	[COLOC_INFER_OK] = LOAD_OK,
	[COLOC_INFER_REJECTED] = LOAD_REJECTED,
	[COLOC_INFER_DROPPED] = LOAD_DROPPED,
	[COLOC_INFER_FAILED] = LOAD_FAILED,
};

static const char *const outcome_name[] = {
	[LOAD_OK] = "completed",
	[LOAD_REJECTED] = "rejected",
	[LOAD_DROPPED] = "dropped",
	[LOAD_FAILED] = "failed",
};

struct load_conn {
	struct coloc_route *r; /* colocd's socket, or the gateway (coloc/infer_route.h) */
	int outstanding;
};

struct load_tenant {
	char name[64];
	double qps;
	/* from colocd's status */
	double qos_ms;
	size_t in_bytes, out_bytes;
	/* arrivals */
	struct coloc_rng rng;
	uint64_t next_ns; /* the next arrival, absolute CLOCK_MONOTONIC */
	float *input;
	struct load_conn conns[LOAD_MAX_CONNS];
	int next_conn;
	/* what happened to the queries sent in the measured window */
	uint64_t sent, sent_total, outcome[LOAD_NR_OUTCOMES], within_qos, outstanding;
	char first_reason[LOAD_NR_OUTCOMES][LOAD_REASON_LEN];
	uint64_t *lat_ns, *colocd_ns; /* of OK answers */
	uint64_t *send_ns, *hop_ns; /* their send, and their latency less colocd's */
	uint64_t *unqueued_ns; /* their latency less the wait behind other queries */
	uint64_t *parts_ns[COLOC_NR_PARTS]; /* their colocd latency part by part */
	uint64_t *hop_parts_ns[LOAD_NR_HOP_PARTS]; /* their hop's parts (hop_part_names) */
	size_t nr_lat, cap_lat;
	uint64_t max_slip_ns; /* how late a send started after its arrival time */
};

/* One query sent: its tag indexes this table. */
struct load_query {
	uint64_t send_ns, sent_ns; /* the send began, and returned */
	uint16_t tenant, conn;
	bool measured, answered;
};

static enum coloc_route_kind route;
static const char *route_where;
static struct load_tenant tenants[LOAD_MAX_TENANTS];
static int nr_tenants;
static struct load_query *queries;
static size_t nr_queries, cap_queries;

/*
 * The hop's parts, from colocd's stamps on the same CLOCK_MONOTONIC: "in",
 * the send's start until colocd's first read of the request; "receive",
 * that read until the input was complete; "out", colocd's answer until it
 * was read and parsed here.
 */
static const char *const hop_part_names[LOAD_NR_HOP_PARTS] = { "in", "receive", "out" };

static uint64_t since(uint64_t from, uint64_t to)
{
	return from && to > from ? to - from : 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: coloc-load --tenant NAME:QPS[,NAME:QPS...] --duration S [OPTION]...\n"
		"Drive colocd's tenants with open-loop Poisson arrivals (MLPerf's server\n"
		"scenario) and report, per tenant, offered and achieved rate, latency\n"
		"percentiles (measured here and by colocd), the fraction within the tenant's\n"
		"QoS, drops, failures and rejections, and this tool's own CPU cost.\n"
		"\n"
		"  -t, --tenant LIST     tenants and their mean arrival rates in queries per\n"
		"                        second (a decimal, above 0, at most %.0f), e.g.\n"
		"                        mnv2:20,rn50:4; each must be submitted and ready\n"
		"                        (colocctl submit, colocctl status)\n"
		"  -d, --duration S      the measured window, 1-86400 seconds\n"
		"  -w, --warmup S        arrivals for S seconds first, not counted, 0-3600\n"
		"                        (default 0)\n"
		"  -r, --seed N          seed of the arrival times, 0-%ld (default 1); the same\n"
		"                        seed and rates give the same arrivals\n"
		"  -c, --connections-per-tenant N\n"
		"                        sockets per tenant, 1-%d (default 1); queries go to\n"
		"                        the one with the fewest outstanding\n"
		"      --drain S         after the last arrival, wait up to S seconds for\n"
		"                        answers, 0-3600 (default 10); what is still\n"
		"                        outstanding then counts as a miss\n"
		"  -s, --socket PATH     colocd's control socket (default %s)\n"
		"      --grpc HOST:PORT  send the queries through coloc-gateway's KServe v2 gRPC\n"
		"                        API instead of colocd's socket (tenants are the\n"
		"                        gateway's models; their QoS is still read from colocd)\n"
		"      --url http://HOST:PORT\n"
		"                        the same through its HTTP API (binary extension, one\n"
		"                        pipelined keep-alive connection per -c)\n"
		"      --gateway-pid PID also report that process's CPU time per query (the\n"
		"                        gateway's, from /proc/PID/stat)\n"
		"  -j, --json            print the results as one JSON object\n"
		"  -h, --help            this help\n"
		"  -V, --version         print the version and exit\n"
		"\n"
		"Inputs are random 0s and 1s as fp32 (valid pixels and token ids) of each\n"
		"tenant's input_bytes. Latency here runs from\n"
		"just before a query's send to the receipt of its answer; 'within QoS' is the\n"
		"share of the window's queries answered OK within the tenant's QoS (drops,\n"
		"failures, rejections and outstanding queries count as misses).\n"
		"\n"
		"Exit status: 0 the load ran, 1 colocd is unreachable, a tenant is unknown or\n"
		"not ready, or the connection was lost, 2 bad usage.\n",
		LOAD_MAX_QPS, LONG_MAX, LOAD_MAX_CONNS, COLOC_DEFAULT_SOCKET);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_gap_ns(struct load_tenant *t)
{
	return (uint64_t)(coloc_rng_exp(&t->rng) / t->qps * 1e9);
}

/* A rate: a finite decimal in (0, LOAD_MAX_QPS], no sign. */
static int parse_qps(const char *s, double *out)
{
	double v;

	if (*s == '+' || cli_parse_double(s, 0, LOAD_MAX_QPS, &v) || v <= 0)
		return -EINVAL;
	*out = v;
	return 0;
}

/* NAME:QPS[,NAME:QPS...] into tenants[]; 0, or prints why and returns 2. */
static int parse_tenants(const char *spec)
{
	char *copy = strdup(spec), *save = NULL, *item;
	int ret = 0;

	if (!copy)
		return 2;
	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(item, ':');
		struct load_tenant *t = &tenants[nr_tenants];

		if (nr_tenants == LOAD_MAX_TENANTS) {
			fprintf(stderr, "coloc-load: at most %d tenants\n", LOAD_MAX_TENANTS);
			ret = 2;
			break;
		}
		if (!colon || colon == item || (size_t)(colon - item) >= sizeof(t->name) ||
		    parse_qps(colon + 1, &t->qps)) {
			fprintf(stderr,
				"coloc-load: --tenant wants NAME:QPS with a name of 1-%zu characters "
				"and a rate above 0 and at most %.0f, not '%s'\n",
				sizeof(t->name) - 1, LOAD_MAX_QPS, item);
			ret = 2;
			break;
		}
		*colon = '\0';
		for (int i = 0; i < nr_tenants; i++)
			if (!strcmp(tenants[i].name, item)) {
				fprintf(stderr, "coloc-load: tenant %s is named twice\n", item);
				ret = 2;
			}
		if (ret)
			break;
		snprintf(t->name, sizeof(t->name), "%s", item);
		nr_tenants++;
	}
	if (!ret && !nr_tenants) {
		fprintf(stderr, "coloc-load: --tenant names no tenant\n");
		ret = 2;
	}
	free(copy);
	return ret;
}

static int parse_args(int argc, char **argv)
{
	enum { OPT_DRAIN = 256, OPT_GRPC, OPT_URL, OPT_GATEWAY_PID };
	static const struct option long_opts[] = {
		{ "tenant", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 'r' },
		{ "connections-per-tenant", required_argument, NULL, 'c' },
		{ "drain", required_argument, NULL, OPT_DRAIN },
		{ "socket", required_argument, NULL, 's' },
		{ "grpc", required_argument, NULL, OPT_GRPC },
		{ "url", required_argument, NULL, OPT_URL },
		{ "gateway-pid", required_argument, NULL, OPT_GATEWAY_PID },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "t:d:w:r:c:s:jhV", long_opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			opts.tenant_spec = optarg;
			break;
		case 'd':
			if (cli_parse_flag("coloc-load", "--duration", optarg, 1, 86400,
					   &opts.duration_s))
				return 2;
			break;
		case 'w':
			if (cli_parse_flag("coloc-load", "--warmup", optarg, 0, 3600,
					   &opts.warmup_s))
				return 2;
			break;
		case 'r':
			if (cli_parse_flag("coloc-load", "--seed", optarg, 0, LONG_MAX, &opts.seed))
				return 2;
			break;
		case 'c':
			if (cli_parse_flag("coloc-load", "--connections-per-tenant", optarg, 1,
					   LOAD_MAX_CONNS, &opts.conns_per_tenant))
				return 2;
			break;
		case OPT_DRAIN:
			if (cli_parse_flag("coloc-load", "--drain", optarg, 0, 3600, &opts.drain_s))
				return 2;
			break;
		case 's':
			opts.socket_path = optarg;
			break;
		case OPT_GRPC:
			opts.grpc = optarg;
			break;
		case OPT_URL:
			opts.url = optarg;
			break;
		case OPT_GATEWAY_PID:
			if (cli_parse_flag("coloc-load", "--gateway-pid", optarg, 1, INT_MAX,
					   &opts.gateway_pid))
				return 2;
			break;
		case 'j':
			opts.json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			cli_print_version("coloc-load");
			exit(0);
		default:
			fprintf(stderr, "Try 'coloc-load --help'.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "coloc-load: unexpected argument '%s' (see --help)\n",
			argv[optind]);
		return 2;
	}
	if (opts.grpc && opts.url) {
		fprintf(stderr, "coloc-load: --grpc or --url, not both\n");
		return 2;
	}
	if (!opts.tenant_spec || !opts.duration_s) {
		fprintf(stderr, "coloc-load: --tenant and --duration are required (see --help)\n");
		return 2;
	}
	return parse_tenants(opts.tenant_spec);
}

/* Fills each tenant's QoS and tensor sizes from colocd's status; 0 or prints why and returns 1. */
static int load_read_status(struct coloc_client *c)
{
	struct json_object *req = json_object_new_object(), *resp, *arr;
	int ret = 0;

	json_object_object_add(req, "cmd", json_object_new_string("status"));
	resp = coloc_client_call(c, req);
	json_object_put(req);
	if (!resp || !coloc_client_ok(c, resp) ||
	    !json_object_object_get_ex(resp, "tenants", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		fprintf(stderr, "coloc-load: colocd's status failed: %s\n",
			coloc_client_error(c)[0] ? coloc_client_error(c) :
						   "no tenants in its answer");
		json_object_put(resp);
		return 1;
	}
	for (int i = 0; i < nr_tenants; i++) {
		struct load_tenant *t = &tenants[i];
		struct json_object *found = NULL, *v;
		const char *state = "";

		for (size_t k = 0; k < json_object_array_length(arr) && !found; k++) {
			struct json_object *o = json_object_array_get_idx(arr, k);

			if (json_object_object_get_ex(o, "name", &v) &&
			    !strcmp(json_object_get_string(v), t->name))
				found = o;
		}
		if (!found) {
			fprintf(stderr,
				"coloc-load: colocd has no tenant '%s' (colocctl list shows its "
				"tenants; colocctl submit adds one)\n",
				t->name);
			ret = 1;
			continue;
		}
		if (json_object_object_get_ex(found, "state", &v))
			state = json_object_get_string(v);
		if (strcmp(state, "ready")) {
			const char *reason =
				json_object_object_get_ex(found, "reason", &v) &&
						json_object_is_type(v, json_type_string) ?
					json_object_get_string(v) :
					"";

			fprintf(stderr,
				"coloc-load: tenant '%s' is %s, not ready%s%s (colocctl status %s)\n",
				t->name, state, reason[0] ? ": " : "", reason, t->name);
			ret = 1;
			continue;
		}
		if (json_object_object_get_ex(found, "qos_ms", &v))
			t->qos_ms = json_object_get_double(v);
		if (json_object_object_get_ex(found, "input_bytes", &v))
			t->in_bytes = (size_t)json_object_get_int64(v);
		if (json_object_object_get_ex(found, "output_bytes", &v))
			t->out_bytes = (size_t)json_object_get_int64(v);
	}
	json_object_put(resp);
	return ret;
}

/* Seeds, inputs and connections of every tenant; 0, or prints why and returns 1. */
static int load_prepare(void)
{
	for (int i = 0; i < nr_tenants; i++) {
		struct load_tenant *t = &tenants[i];
		uint64_t sm = (uint64_t)opts.seed * 0x100000001b3ull + (uint64_t)i;
		struct coloc_rng fill;

		coloc_rng_seed(&t->rng, sm);
		/* the inputs come from a generator of their own: arrivals depend on the seed alone */
		coloc_rng_seed(&fill, ~sm);
		t->input = malloc(t->in_bytes ? t->in_bytes : 1);
		if (!t->input) {
			fprintf(stderr, "coloc-load: out of memory\n");
			return 1;
		}
		for (size_t k = 0; k < t->in_bytes / sizeof(float); k++)
			t->input[k] = (float)(coloc_rng_next(&fill) & 1);
		for (int k = 0; k < opts.conns_per_tenant; k++) {
			int err = coloc_route_open(route, route_where, &t->conns[k].r);

			if (err) {
				fprintf(stderr, "coloc-load: connecting to %s at %s: %s\n",
					coloc_route_name(route), route_where, strerror(-err));
				return 1;
			}
		}
	}
	return 0;
}

static int grow_u64(uint64_t **v, size_t cap)
{
	uint64_t *a = realloc(*v, cap * sizeof(*a));

	if (!a)
		return -ENOMEM;
	*v = a;
	return 0;
}

static int lat_push(struct load_tenant *t, const struct load_query *q, uint64_t lat,
		    const struct coloc_infer_result *res)
{
	if (t->nr_lat == t->cap_lat) {
		size_t cap = t->cap_lat ? t->cap_lat * 2 : 1024;

		if (grow_u64(&t->lat_ns, cap) || grow_u64(&t->colocd_ns, cap) ||
		    grow_u64(&t->send_ns, cap) || grow_u64(&t->hop_ns, cap) ||
		    grow_u64(&t->unqueued_ns, cap))
			return -ENOMEM;
		for (int p = 0; p < COLOC_NR_PARTS; p++)
			if (grow_u64(&t->parts_ns[p], cap))
				return -ENOMEM;
		for (int p = 0; p < LOAD_NR_HOP_PARTS; p++)
			if (grow_u64(&t->hop_parts_ns[p], cap))
				return -ENOMEM;
		t->cap_lat = cap;
	}
	t->lat_ns[t->nr_lat] = lat;
	t->colocd_ns[t->nr_lat] = res->latency_ns;
	t->send_ns[t->nr_lat] = q->sent_ns - q->send_ns;
	t->hop_ns[t->nr_lat] = lat > res->latency_ns ? lat - res->latency_ns : 0;
	t->unqueued_ns[t->nr_lat] =
		lat > res->parts_ns[COLOC_PART_QUEUED] ? lat - res->parts_ns[COLOC_PART_QUEUED] : 0;
	for (int p = 0; p < COLOC_NR_PARTS; p++)
		t->parts_ns[p][t->nr_lat] = res->parts_ns[p];
	t->hop_parts_ns[0][t->nr_lat] = since(q->send_ns, res->first_byte_at_ns);
	t->hop_parts_ns[1][t->nr_lat] = res->receive_ns;
	t->hop_parts_ns[2][t->nr_lat] = since(res->answered_at_ns, q->send_ns + lat);
	t->nr_lat++;
	return 0;
}

static int load_send(struct load_tenant *t, int ti, uint64_t arrival_ns, bool measured)
{
	struct load_conn *best = &t->conns[0];
	uint64_t sent_ns;
	int err, ci = 0;

	for (int k = 1; k < opts.conns_per_tenant; k++)
		if (t->conns[k].outstanding < best->outstanding) {
			best = &t->conns[k];
			ci = k;
		}
	if (nr_queries == cap_queries) {
		size_t cap = cap_queries ? cap_queries * 2 : 4096;
		struct load_query *q = realloc(queries, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		queries = q;
		cap_queries = cap;
	}
	sent_ns = now_ns();
	if (sent_ns > arrival_ns && sent_ns - arrival_ns > t->max_slip_ns)
		t->max_slip_ns = sent_ns - arrival_ns;
	queries[nr_queries] = (struct load_query){
		.send_ns = sent_ns,
		.tenant = (uint16_t)ti,
		.conn = (uint16_t)ci,
		.measured = measured,
	};
	err = coloc_route_send(best->r, t->name, nr_queries, t->input, t->in_bytes);
	queries[nr_queries].sent_ns = now_ns();
	if (err) {
		fprintf(stderr, "coloc-load: sending a query of %s: %s\n", t->name,
			coloc_route_error(best->r));
		return err;
	}
	nr_queries++;
	best->outstanding++;
	t->sent_total++;
	if (measured)
		t->sent++;
	return 0;
}

static void load_account(const struct coloc_infer_result *res, uint64_t recv_ns)
{
	struct load_query *q;
	struct load_tenant *t;
	enum load_outcome o;

	if (res->tag >= nr_queries || queries[res->tag].answered)
		return;
	q = &queries[res->tag];
	q->answered = true;
	t = &tenants[q->tenant];
	t->conns[q->conn].outstanding--;
	if (!q->measured)
		return;
	o = (unsigned int)res->status < sizeof(outcome_of_status) / sizeof(outcome_of_status[0]) ?
		    outcome_of_status[res->status] :
		    LOAD_FAILED;
	if (!t->outcome[o]++ && o != LOAD_OK)
		snprintf(t->first_reason[o], LOAD_REASON_LEN, "%s",
			 res->error[0] ? res->error : "(no reason given)");
	if (o != LOAD_OK)
		return;
	if ((double)(recv_ns - q->send_ns) <= t->qos_ms * 1e6)
		t->within_qos++;
	if (lat_push(t, q, recv_ns - q->send_ns, res))
		t->outcome[LOAD_OK]--;
}

/* Takes every answer the connection holds; 0, or -errno when it is lost. */
static int load_drain_conn(struct load_tenant *t, struct load_conn *lc, void *out, size_t out_cap)
{
	struct coloc_infer_result res;

	for (;;) {
		int r = coloc_route_recv(lc->r, &res, out, out_cap);

		if (r == 0)
			return 0;
		if (r < 0 && r != -EMSGSIZE) {
			fprintf(stderr, "coloc-load: tenant %s's connection: %s\n", t->name,
				coloc_route_error(lc->r));
			return r;
		}
		load_account(&res, now_ns());
	}
}

static uint64_t total_outstanding(void)
{
	uint64_t n = 0;

	for (int i = 0; i < nr_tenants; i++)
		for (int k = 0; k < opts.conns_per_tenant; k++)
			n += (uint64_t)tenants[i].conns[k].outstanding;
	return n;
}

/*
 * The run: arrivals until end_ns (those before measure_ns are warm-up), then
 * answers until none is outstanding or drain_end. 0 or -errno.
 */
static int load_run(uint64_t start_ns, uint64_t measure_ns, uint64_t end_ns, void *out,
		    size_t out_cap)
{
	struct pollfd pfds[LOAD_MAX_TENANTS * LOAD_MAX_CONNS];
	uint64_t drain_end = end_ns + (uint64_t)opts.drain_s * NS_PER_S;
	int nfds = nr_tenants * (int)opts.conns_per_tenant;

	for (int i = 0; i < nr_tenants; i++) {
		tenants[i].next_ns = start_ns + rng_gap_ns(&tenants[i]);
		for (int k = 0; k < opts.conns_per_tenant; k++)
			pfds[i * opts.conns_per_tenant + k] =
				(struct pollfd){ .fd = coloc_route_fd(tenants[i].conns[k].r),
						 .events = POLLIN };
	}
	for (;;) {
		uint64_t now = now_ns(), next = UINT64_MAX, wait;
		struct timespec ts;
		int r;

		for (int i = 0; i < nr_tenants; i++) {
			struct load_tenant *t = &tenants[i];

			/* every arrival whose time has come is sent now, late ones included */
			while (t->next_ns < end_ns && t->next_ns <= now) {
				int err = load_send(t, i, t->next_ns, t->next_ns >= measure_ns);

				if (err)
					return err;
				/* send may have read answers into the client's buffer */
				for (int k = 0; k < opts.conns_per_tenant; k++) {
					err = load_drain_conn(t, &t->conns[k], out, out_cap);
					if (err)
						return err;
				}
				t->next_ns += rng_gap_ns(t);
				now = now_ns();
			}
			if (t->next_ns < end_ns && t->next_ns < next)
				next = t->next_ns;
		}
		if (next == UINT64_MAX) {
			if (!total_outstanding() || now >= drain_end)
				return 0;
			next = drain_end;
		}
		/* sending for a later tenant may have taken now past an earlier one's next */
		now = now_ns();
		wait = next > now ? next - now : 0;
		ts.tv_sec = (time_t)(wait / NS_PER_S);
		ts.tv_nsec = (long)(wait % NS_PER_S);
		r = ppoll(pfds, (nfds_t)nfds, &ts, NULL);
		if (r < 0 && errno != EINTR)
			return -errno;
		for (int f = 0; r > 0 && f < nfds; f++) {
			struct load_tenant *t = &tenants[f / opts.conns_per_tenant];
			int err;

			if (!pfds[f].revents)
				continue;
			err = load_drain_conn(t, &t->conns[f % opts.conns_per_tenant], out,
					      out_cap);
			if (err)
				return err;
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array, in ms; 0 when empty. */
static double pct_ms(const uint64_t *v, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	rank = (size_t)ceil(p / 100.0 * (double)n);
	return (double)v[rank ? rank - 1 : 0] / 1e6;
}

struct load_summary {
	double offered, achieved, within;
	double p50, p95, p99, max, c50, c95, c99, cmax;
	double send50, send95, hop50, hop95, unq50, unq95;
	double part50[COLOC_NR_PARTS], part95[COLOC_NR_PARTS]; /* each part's own */
	double hpart50[LOAD_NR_HOP_PARTS], hpart95[LOAD_NR_HOP_PARTS];
};

static const char *const part_names[COLOC_NR_PARTS] = COLOC_PART_NAMES;

static void summarize(struct load_tenant *t, struct load_summary *s)
{
	double window = (double)opts.duration_s;

	qsort(t->lat_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	qsort(t->colocd_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	qsort(t->send_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	qsort(t->hop_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	qsort(t->unqueued_ns, t->nr_lat, sizeof(uint64_t), cmp_u64);
	t->outstanding = t->sent - t->outcome[LOAD_OK] - t->outcome[LOAD_REJECTED] -
			 t->outcome[LOAD_DROPPED] - t->outcome[LOAD_FAILED];
	*s = (struct load_summary){
		.offered = (double)t->sent / window,
		.achieved = (double)t->outcome[LOAD_OK] / window,
		.within = t->sent ? (double)t->within_qos / (double)t->sent : 0,
		.p50 = pct_ms(t->lat_ns, t->nr_lat, 50),
		.p95 = pct_ms(t->lat_ns, t->nr_lat, 95),
		.p99 = pct_ms(t->lat_ns, t->nr_lat, 99),
		.max = pct_ms(t->lat_ns, t->nr_lat, 100),
		.c50 = pct_ms(t->colocd_ns, t->nr_lat, 50),
		.c95 = pct_ms(t->colocd_ns, t->nr_lat, 95),
		.c99 = pct_ms(t->colocd_ns, t->nr_lat, 99),
		.cmax = pct_ms(t->colocd_ns, t->nr_lat, 100),
		.send50 = pct_ms(t->send_ns, t->nr_lat, 50),
		.send95 = pct_ms(t->send_ns, t->nr_lat, 95),
		.hop50 = pct_ms(t->hop_ns, t->nr_lat, 50),
		.hop95 = pct_ms(t->hop_ns, t->nr_lat, 95),
		.unq50 = pct_ms(t->unqueued_ns, t->nr_lat, 50),
		.unq95 = pct_ms(t->unqueued_ns, t->nr_lat, 95),
	};
	for (int p = 0; p < COLOC_NR_PARTS; p++) {
		qsort(t->parts_ns[p], t->nr_lat, sizeof(uint64_t), cmp_u64);
		s->part50[p] = pct_ms(t->parts_ns[p], t->nr_lat, 50);
		s->part95[p] = pct_ms(t->parts_ns[p], t->nr_lat, 95);
	}
	for (int p = 0; p < LOAD_NR_HOP_PARTS; p++) {
		qsort(t->hop_parts_ns[p], t->nr_lat, sizeof(uint64_t), cmp_u64);
		s->hpart50[p] = pct_ms(t->hop_parts_ns[p], t->nr_lat, 50);
		s->hpart95[p] = pct_ms(t->hop_parts_ns[p], t->nr_lat, 95);
	}
}

struct load_cpu {
	double user_s, sys_s, wall_s, share, us_per_query;
	double gateway_s, gateway_us_per_query; /* with --gateway-pid */
};

/* The CPU time (user + system, all threads) of process pid so far, in s; -1 if unknown. */
static double process_cpu_s(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after the command's ")": state, then fields 4..13, then utime and stime */
	p = strrchr(buf, ')');
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void add_num(struct json_object *o, const char *key, double v)
{
	json_object_object_add(o, key, json_object_new_double(round(v * 1000.0) / 1000.0));
}

static void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_int64((int64_t)v));
}

/* {"queued":{"p50_ms":F,"p95_ms":F},...}: colocd's latency part by part */
/* {"NAME":{"p50_ms":F,"p95_ms":F},...} of n parts */
static struct json_object *parts_json(const char *const *names, const double *p50,
				      const double *p95, int n)
{
	struct json_object *o = json_object_new_object();

	for (int p = 0; p < n; p++) {
		struct json_object *part = json_object_new_object();

		add_num(part, "p50_ms", p50[p]);
		add_num(part, "p95_ms", p95[p]);
		json_object_object_add(o, names[p], part);
	}
	return o;
}

static void print_json(const struct load_cpu *cpu)
{
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
	struct json_object *jc = json_object_new_object();

	add_u64(o, "duration_s", (uint64_t)opts.duration_s);
	add_u64(o, "warmup_s", (uint64_t)opts.warmup_s);
	add_u64(o, "seed", (uint64_t)opts.seed);
	add_u64(o, "connections_per_tenant", (uint64_t)opts.conns_per_tenant);
	for (int i = 0; i < nr_tenants; i++) {
		struct load_tenant *t = &tenants[i];
		struct json_object *jt = json_object_new_object();
		struct load_summary s;

		summarize(t, &s);
		json_object_object_add(jt, "name", json_object_new_string(t->name));
		add_num(jt, "qps", t->qps);
		add_num(jt, "qos_ms", t->qos_ms);
		add_u64(jt, "sent", t->sent);
		add_u64(jt, "sent_with_warmup", t->sent_total);
		add_num(jt, "offered_rate", s.offered);
		add_num(jt, "achieved_rate", s.achieved);
		for (int k = 0; k < LOAD_NR_OUTCOMES; k++)
			add_u64(jt, outcome_name[k], t->outcome[k]);
		add_u64(jt, "outstanding", t->outstanding);
		add_num(jt, "within_qos", s.within);
		add_num(jt, "p50_ms", s.p50);
		add_num(jt, "p95_ms", s.p95);
		add_num(jt, "p99_ms", s.p99);
		add_num(jt, "max_ms", s.max);
		add_num(jt, "colocd_p50_ms", s.c50);
		add_num(jt, "colocd_p95_ms", s.c95);
		add_num(jt, "colocd_p99_ms", s.c99);
		add_num(jt, "colocd_max_ms", s.cmax);
		add_num(jt, "send_p50_ms", s.send50);
		add_num(jt, "send_p95_ms", s.send95);
		add_num(jt, "hop_p50_ms", s.hop50);
		add_num(jt, "hop_p95_ms", s.hop95);
		add_num(jt, "unqueued_p50_ms", s.unq50);
		add_num(jt, "unqueued_p95_ms", s.unq95);
		add_num(jt, "max_send_slip_ms", (double)t->max_slip_ns / 1e6);
		json_object_object_add(jt, "colocd_parts",
				       parts_json(part_names, s.part50, s.part95, COLOC_NR_PARTS));
		json_object_object_add(
			jt, "hop_parts",
			parts_json(hop_part_names, s.hpart50, s.hpart95, LOAD_NR_HOP_PARTS));
		for (int k = LOAD_REJECTED; k < LOAD_NR_OUTCOMES; k++) {
			char key[32];

			snprintf(key, sizeof(key), "first_%s_reason", outcome_name[k]);
			json_object_object_add(jt, key,
					       t->first_reason[k][0] ?
						       json_object_new_string(t->first_reason[k]) :
						       NULL);
		}
		json_object_array_add(arr, jt);
	}
	json_object_object_add(o, "tenants", arr);
	add_num(jc, "user_s", cpu->user_s);
	add_num(jc, "sys_s", cpu->sys_s);
	add_num(jc, "wall_s", cpu->wall_s);
	json_object_object_add(jc, "share_of_one_cpu",
			       json_object_new_double(round(cpu->share * 1e5) / 1e5));
	add_num(jc, "us_per_query", cpu->us_per_query);
	json_object_object_add(o, "load_cpu", jc);
	if (opts.gateway_pid) {
		struct json_object *jg = json_object_new_object();

		add_num(jg, "cpu_s", cpu->gateway_s);
		add_num(jg, "us_per_query", cpu->gateway_us_per_query);
		json_object_object_add(o, "gateway_cpu", jg);
	}
	/* json-c's default %.17g prints 0.1 as 0.10000000000000001 */
	json_c_set_serialization_double_format("%.10g", JSON_C_OPTION_THREAD);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

static void print_text(const struct load_cpu *cpu)
{
	printf("coloc-load: %ld s measured (after %ld s warm-up), seed %ld, %ld connection%s per "
	       "tenant\n",
	       opts.duration_s, opts.warmup_s, opts.seed, opts.conns_per_tenant,
	       opts.conns_per_tenant == 1 ? "" : "s");
	printf("%-16s %8s %8s %9s %8s %8s %8s %8s %8s %8s %7s %7s %7s %7s %7s\n", "tenant",
	       "offer/s", "done/s", "completed", "p50 ms", "p95 ms", "p99 ms", "max ms", "cd p50",
	       "cd p99", "in QoS", "dropped", "failed", "reject", "outst");
	for (int i = 0; i < nr_tenants; i++) {
		struct load_tenant *t = &tenants[i];
		struct load_summary s;

		summarize(t, &s);
		printf("%-16s %8.2f %8.2f %9llu %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %6.1f%% %7llu "
		       "%7llu %7llu %7llu\n",
		       t->name, s.offered, s.achieved, (unsigned long long)t->outcome[LOAD_OK],
		       s.p50, s.p95, s.p99, s.max, s.c50, s.c99, 100.0 * s.within,
		       (unsigned long long)t->outcome[LOAD_DROPPED],
		       (unsigned long long)t->outcome[LOAD_FAILED],
		       (unsigned long long)t->outcome[LOAD_REJECTED],
		       (unsigned long long)t->outstanding);
		/* the gateway does not pass colocd's parts on */
		if (route == COLOC_ROUTE_SOCKET) {
			printf("  %s in colocd, p50 / p95 ms:", t->name);
			for (int p = 0; p < COLOC_NR_PARTS; p++)
				printf(" %s %.3f / %.3f", part_names[p], s.part50[p], s.part95[p]);
			printf("\n  %s's hop, p50 / p95 ms: send %.3f / %.3f", t->name, s.send50,
			       s.send95);
			for (int p = 0; p < LOAD_NR_HOP_PARTS; p++)
				printf(" %s %.3f / %.3f", hop_part_names[p], s.hpart50[p],
				       s.hpart95[p]);
			printf("\n");
		}
		for (int k = LOAD_REJECTED; k < LOAD_NR_OUTCOMES; k++)
			if (t->first_reason[k][0])
				printf("  %s: first %s: %s\n", t->name, outcome_name[k],
				       t->first_reason[k]);
	}
	printf("(QoS: ");
	for (int i = 0; i < nr_tenants; i++)
		printf("%s%s %.1f ms", i ? ", " : "", tenants[i].name, tenants[i].qos_ms);
	printf("; 'cd' columns are colocd's own latency_ns; in QoS counts misses of every kind)\n");
	printf("coloc-load's own CPU: %.3f s user + %.3f s sys over %.1f s = %.2f%% of one CPU, "
	       "%.1f us per query\n",
	       cpu->user_s, cpu->sys_s, cpu->wall_s, 100.0 * cpu->share, cpu->us_per_query);
	if (opts.gateway_pid)
		printf("the gateway's CPU (pid %ld): %.3f s, %.1f us per query\n", opts.gateway_pid,
		       cpu->gateway_s, cpu->gateway_us_per_query);
}

int main(int argc, char **argv)
{
	struct coloc_client *ctl = NULL;
	struct rusage ru0, ru1;
	struct load_cpu cpu;
	double gw0;
	uint64_t start, end;
	size_t out_cap = 1;
	void *out = NULL;
	int ret, err;

	ret = parse_args(argc, argv);
	if (ret)
		return ret;
	route = opts.grpc ? COLOC_ROUTE_GRPC : opts.url ? COLOC_ROUTE_HTTP : COLOC_ROUTE_SOCKET;
	route_where = opts.grpc ? opts.grpc : opts.url ? opts.url : opts.socket_path;
	err = coloc_client_connect(opts.socket_path, &ctl);
	if (err) {
		fprintf(stderr,
			"coloc-load: cannot reach colocd at %s: %s (is it running? --socket)\n",
			opts.socket_path, strerror(-err));
		return 1;
	}
	ret = load_read_status(ctl);
	coloc_client_close(ctl);
	if (ret || (ret = load_prepare()))
		goto out;
	for (int i = 0; i < nr_tenants; i++)
		if (tenants[i].out_bytes > out_cap)
			out_cap = tenants[i].out_bytes;
	out = malloc(out_cap);
	if (!out) {
		fprintf(stderr, "coloc-load: out of memory\n");
		ret = 1;
		goto out;
	}
	gw0 = opts.gateway_pid ? process_cpu_s(opts.gateway_pid) : 0;
	getrusage(RUSAGE_SELF, &ru0);
	start = now_ns();
	err = load_run(start, start + (uint64_t)opts.warmup_s * NS_PER_S,
		       start + (uint64_t)(opts.warmup_s + opts.duration_s) * NS_PER_S, out,
		       out_cap);
	end = now_ns();
	getrusage(RUSAGE_SELF, &ru1);
	cpu.gateway_s = opts.gateway_pid ? process_cpu_s(opts.gateway_pid) - gw0 : 0;
	cpu.gateway_us_per_query = nr_queries ? cpu.gateway_s * 1e6 / (double)nr_queries : 0;
	if (err) {
		ret = 1;
		goto out;
	}
	cpu.user_s = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
	cpu.sys_s = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
	cpu.wall_s = (double)(end - start) / 1e9;
	cpu.share = (cpu.user_s + cpu.sys_s) / cpu.wall_s;
	cpu.us_per_query = nr_queries ? (cpu.user_s + cpu.sys_s) * 1e6 / (double)nr_queries : 0;
	if (opts.json)
		print_json(&cpu);
	else
		print_text(&cpu);
out:
	free(out);
	for (int i = 0; i < nr_tenants; i++) {
		for (int k = 0; k < opts.conns_per_tenant; k++)
			coloc_route_close(tenants[i].conns[k].r);
		free(tenants[i].input);
		free(tenants[i].lat_ns);
		free(tenants[i].colocd_ns);
		free(tenants[i].send_ns);
		free(tenants[i].hop_ns);
		free(tenants[i].unqueued_ns);
		for (int p = 0; p < COLOC_NR_PARTS; p++)
			free(tenants[i].parts_ns[p]);
		for (int p = 0; p < LOAD_NR_HOP_PARTS; p++)
			free(tenants[i].hop_parts_ns[p]);
	}
	free(queries);
	return ret;
}
