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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include "cli.h"
#include "coloc-load/load.h"
#include "mono_clock.h"

struct load_opts load_opts = {
	.socket_path = COLOC_DEFAULT_SOCKET,
	.seed = 1,
	.conns_per_tenant = 1,
	.drain_s = 10,
};
enum coloc_route_kind load_route;
const char *load_route_where;
struct load_tenant load_tenants[LOAD_MAX_TENANTS];
int load_nr_tenants;
FILE *load_samples;

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
		"      --arrivals KIND   poisson (default): exponential gaps at each tenant's\n"
		"                        rate; fixed: exactly 1/QPS apart (tenants shifted\n"
		"                        by a share of it), so that a tenant served below\n"
		"                        its capacity has no query waiting behind another\n"
		"      --samples FILE    also write one tab-separated line per answered\n"
		"                        query of the window (its arrival, send, latency,\n"
		"                        colocd's latency, hop and their parts, in ms)\n"
		"  -c, --connections-per-tenant N\n"
		"                        sockets per tenant, 1-%d (default 1); queries go to\n"
		"                        the one with the fewest outstanding\n"
		"      --drain S         after the last arrival (or its send, if that\n"
		"                        returned later), wait up to S seconds for\n"
		"                        answers, 0-3600 (default 10); what is still\n"
		"                        outstanding then counts as a miss\n"
		"  -s, --socket PATH     colocd's control socket (default %s)\n"
		"      --socket-copy     send each input's bytes on the socket; by default\n"
		"                        colocd's socket gets a memfd holding the input\n"
		"                        instead (made once per tenant, read by colocd\n"
		"                        straight into the query's slot)\n"
		"      --grpc HOST:PORT  send the queries through coloc-gateway's KServe v2 gRPC\n"
		"                        API instead of colocd's socket (tenants are the\n"
		"                        gateway's models; their QoS is still read from colocd)\n"
		"      --grpc-client raw|core\n"
		"                        --grpc's client: an HTTP/2 client of coloc's own\n"
		"                        (raw, the default), or gRPC's C core (core, which\n"
		"                        costs ~0.3-0.6 ms a query of its own)\n"
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

/* A rate: a finite decimal in (0, LOAD_MAX_QPS], no sign. */
static int parse_qps(const char *s, double *out)
{
	double v;

	if (*s == '+' || cli_parse_double(s, 0, LOAD_MAX_QPS, &v) || v <= 0)
		return -EINVAL;
	*out = v;
	return 0;
}

/* NAME:QPS[,NAME:QPS...] into load_tenants[]; 0, or prints why and returns 2. */
static int parse_tenants(const char *spec)
{
	char *copy = strdup(spec), *save = NULL, *item;
	int ret = 0;

	if (!copy)
		return 2;
	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(item, ':');
		struct load_tenant *t = &load_tenants[load_nr_tenants];

		if (load_nr_tenants == LOAD_MAX_TENANTS) {
			fprintf(stderr, "coloc-load: at most %d tenants\n", LOAD_MAX_TENANTS);
			ret = 2;
			break;
		}
		t->input_fd = -1;
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
		for (int i = 0; i < load_nr_tenants; i++)
			if (!strcmp(load_tenants[i].name, item)) {
				fprintf(stderr, "coloc-load: tenant %s is named twice\n", item);
				ret = 2;
			}
		if (ret)
			break;
		snprintf(t->name, sizeof(t->name), "%s", item);
		load_nr_tenants++;
	}
	if (!ret && !load_nr_tenants) {
		fprintf(stderr, "coloc-load: --tenant names no tenant\n");
		ret = 2;
	}
	free(copy);
	return ret;
}

static int parse_args(int argc, char **argv)
{
	enum {
		OPT_DRAIN = 256,
		OPT_GRPC,
		OPT_GRPC_CLIENT,
		OPT_URL,
		OPT_GATEWAY_PID,
		OPT_ARRIVALS,
		OPT_SAMPLES,
		OPT_SOCKET_COPY
	};
	static const struct option long_opts[] = {
		{ "tenant", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 'r' },
		{ "connections-per-tenant", required_argument, NULL, 'c' },
		{ "drain", required_argument, NULL, OPT_DRAIN },
		{ "arrivals", required_argument, NULL, OPT_ARRIVALS },
		{ "samples", required_argument, NULL, OPT_SAMPLES },
		{ "socket", required_argument, NULL, 's' },
		{ "socket-copy", no_argument, NULL, OPT_SOCKET_COPY },
		{ "grpc", required_argument, NULL, OPT_GRPC },
		{ "grpc-client", required_argument, NULL, OPT_GRPC_CLIENT },
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
			load_opts.tenant_spec = optarg;
			break;
		case 'd':
			if (cli_parse_flag("coloc-load", "--duration", optarg, 1, 86400,
					   &load_opts.duration_s))
				return 2;
			break;
		case 'w':
			if (cli_parse_flag("coloc-load", "--warmup", optarg, 0, 3600,
					   &load_opts.warmup_s))
				return 2;
			break;
		case 'r':
			if (cli_parse_flag("coloc-load", "--seed", optarg, 0, LONG_MAX, &load_opts.seed))
				return 2;
			break;
		case 'c':
			if (cli_parse_flag("coloc-load", "--connections-per-tenant", optarg, 1,
					   LOAD_MAX_CONNS, &load_opts.conns_per_tenant))
				return 2;
			break;
		case OPT_DRAIN:
			if (cli_parse_flag("coloc-load", "--drain", optarg, 0, 3600, &load_opts.drain_s))
				return 2;
			break;
		case OPT_ARRIVALS:
			if (strcmp(optarg, "poisson") && strcmp(optarg, "fixed")) {
				fprintf(stderr,
					"coloc-load: --arrivals is poisson or fixed, not '%s'\n",
					optarg);
				return 2;
			}
			load_opts.fixed_arrivals = !strcmp(optarg, "fixed");
			break;
		case OPT_SAMPLES:
			load_opts.samples_path = optarg;
			break;
		case 's':
			load_opts.socket_path = optarg;
			break;
		case OPT_SOCKET_COPY:
			load_opts.socket_copy = true;
			break;
		case OPT_GRPC:
			load_opts.grpc = optarg;
			break;
		case OPT_GRPC_CLIENT:
			if (strcmp(optarg, "raw") && strcmp(optarg, "core")) {
				fprintf(stderr, "coloc-load: --grpc-client raw or core, not '%s'\n",
					optarg);
				return 2;
			}
			load_opts.grpc_core = !strcmp(optarg, "core");
			break;
		case OPT_URL:
			load_opts.url = optarg;
			break;
		case OPT_GATEWAY_PID:
			if (cli_parse_flag("coloc-load", "--gateway-pid", optarg, 1, INT_MAX,
					   &load_opts.gateway_pid))
				return 2;
			break;
		case 'j':
			load_opts.json = true;
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
	if (load_opts.grpc && load_opts.url) {
		fprintf(stderr, "coloc-load: --grpc or --url, not both\n");
		return 2;
	}
	if (!load_opts.tenant_spec || !load_opts.duration_s) {
		fprintf(stderr, "coloc-load: --tenant and --duration are required (see --help)\n");
		return 2;
	}
	return parse_tenants(load_opts.tenant_spec);
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
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
	load_route = load_opts.grpc ? COLOC_ROUTE_GRPC : load_opts.url ? COLOC_ROUTE_HTTP : COLOC_ROUTE_SOCKET;
	if (load_route == COLOC_ROUTE_GRPC && load_opts.grpc_core)
		load_route = COLOC_ROUTE_GRPC_CORE;
	load_route_where = load_opts.grpc ? load_opts.grpc : load_opts.url ? load_opts.url : load_opts.socket_path;
	err = coloc_client_connect(load_opts.socket_path, &ctl);
	if (err) {
		fprintf(stderr,
			"coloc-load: cannot reach colocd at %s: %s (is it running? --socket)\n",
			load_opts.socket_path, strerror(-err));
		return 1;
	}
	ret = load_read_status(ctl);
	coloc_client_close(ctl);
	if (ret || (ret = load_prepare()))
		goto out;
	if (load_opts.samples_path) {
		load_samples = fopen(load_opts.samples_path, "we");
		if (!load_samples) {
			fprintf(stderr, "coloc-load: --samples %s: %s\n", load_opts.samples_path,
				strerror(errno));
			ret = 1;
			goto out;
		}
		load_samples_header(load_samples);
	}
	for (int i = 0; i < load_nr_tenants; i++)
		if (load_tenants[i].out_bytes > out_cap)
			out_cap = load_tenants[i].out_bytes;
	out = malloc(out_cap);
	if (!out) {
		fprintf(stderr, "coloc-load: out of memory\n");
		ret = 1;
		goto out;
	}
	gw0 = load_opts.gateway_pid ? load_process_cpu_s(load_opts.gateway_pid) : 0;
	getrusage(RUSAGE_SELF, &ru0);
	start = coloc_now_ns();
	err = load_run(start, start + (uint64_t)load_opts.warmup_s * NS_PER_S,
		       start + (uint64_t)(load_opts.warmup_s + load_opts.duration_s) * NS_PER_S, out,
		       out_cap);
	end = coloc_now_ns();
	getrusage(RUSAGE_SELF, &ru1);
	cpu.gateway_s = load_opts.gateway_pid ? load_process_cpu_s(load_opts.gateway_pid) - gw0 : 0;
	cpu.gateway_us_per_query = load_nr_queries ? cpu.gateway_s * 1e6 / (double)load_nr_queries : 0;
	if (err) {
		ret = 1;
		goto out;
	}
	cpu.user_s = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
	cpu.sys_s = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
	cpu.wall_s = (double)(end - start) / 1e9;
	cpu.share = (cpu.user_s + cpu.sys_s) / cpu.wall_s;
	cpu.us_per_query = load_nr_queries ? (cpu.user_s + cpu.sys_s) * 1e6 / (double)load_nr_queries : 0;
	if (load_opts.json)
		load_print_json(&cpu);
	else
		load_print_text(&cpu);
out:
	free(out);
	if (load_samples && fclose(load_samples) && !ret) {
		fprintf(stderr, "coloc-load: --samples %s: %s\n", load_opts.samples_path,
			strerror(errno));
		ret = 1;
	}
	for (int i = 0; i < load_nr_tenants; i++) {
		for (int k = 0; k < load_opts.conns_per_tenant; k++)
			coloc_route_close(load_tenants[i].conns[k].r);
		free(load_tenants[i].input);
		if (load_tenants[i].input_fd >= 0)
			close(load_tenants[i].input_fd);
		free(load_tenants[i].lat_ns);
		free(load_tenants[i].colocd_ns);
		free(load_tenants[i].send_ns);
		free(load_tenants[i].hop_ns);
		free(load_tenants[i].unqueued_ns);
		free(load_tenants[i].colocd_unqueued_ns);
		free(load_tenants[i].overhead_ns);
		for (int p = 0; p < COLOC_NR_PARTS; p++)
			free(load_tenants[i].parts_ns[p]);
		for (int p = 0; p < LOAD_NR_HOP_PARTS; p++)
			free(load_tenants[i].hop_parts_ns[p]);
	}
	free(load_queries);
	return ret;
}
