// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-sim: runs a policy of the policy table (the same code colocd runs)
 * on a simulated machine of many cores, with tenants on VELTAIR's published
 * latency tables, Poisson or traced arrivals and the provisional
 * interference model of sim/ (sim/README.md says what it assumes). One run
 * at a given load, or the QoS-QPS search (the highest load at which 95 % of
 * every tenant's queries meet QoS). Prints per-tenant results and what
 * policy_decide() cost in the simulator's own calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "sim.h"

#define PROG "coloc-sim"
#define TABLES_FROM_REPO "../shared/data/veltair"

static struct {
	const char *policy;
	long cores, sockets, llc;
	double qps, duration_s, warmup_s, full_slowdown;
	long seed, seeds;
	bool search, json, late_serve, duration_given;
	const char *trace, *tables;
	double start_qps, tol;
} opts = {
	.policy = "fcfs",
	.cores = 64,
	.sockets = 1,
	.llc = 4,
	.duration_s = 10,
	.warmup_s = -1,
	.full_slowdown = SIM_DEFAULT_FULL_SLOWDOWN,
	.seed = 1,
	.seeds = 1,
	.start_qps = 16,
	.tol = 0.01,
};

struct tenant_arg {
	char spec[256];
	double qos_ms, share;
	struct sim_table table;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROG " --tenant MODEL:QOS_MS[:SHARE] [--tenant ...] [--policy NAME|all]\n"
		"                 [--cores N] [--sockets N] [--llc N] [--qps X | --search]\n"
		"                 [--duration S] [--warmup S] [--seed N] [--seeds N] [--trace FILE]\n"
		"                 [--json]\n"
		"Simulates the policy library (the code colocd runs) on a machine of N cores with\n"
		"tenants on VELTAIR's published latency tables, and prints per tenant the\n"
		"fraction of queries within QoS, drops and latency percentiles, and the cost of\n"
		"policy_decide() measured in the simulator's own calls. The interference model is\n"
		"provisional, not fitted from measurements yet (sim/README.md).\n"
		"  --tenant MODEL:QOS_MS[:SHARE]  a tenant: MODEL is veltair:NAME (resnet50,\n"
		"                 googlenet), QOS_MS its latency target, SHARE its share of the\n"
		"                 total rate (default 1); repeat for each tenant, at most %d\n"
		"  --policy NAME  a policy of the table, or 'all' (default %s)\n"
		"  --list-policies  print the policy table and exit\n"
		"  --cores N      simulated cores, 1..%d (default %ld)\n"
		"  --sockets N    sockets, dividing the cores (default %ld)\n"
		"  --llc N        cores per LLC domain (default %ld: a Threadripper 3990X CCX)\n"
		"  --qps X        total queries per second over all tenants, in their shares\n"
		"  --search       find the highest QPS at which >= 95%% of every tenant's queries\n"
		"                 meet QoS (doubling from %.0f, then bisection to 1%%)\n"
		"  --duration S   simulated seconds of arrivals per run (default %.0f)\n"
		"  --warmup S     arrivals before S are served but not counted (default: a\n"
		"                 tenth of the duration)\n"
		"  --seed N       seed of the arrivals (default %ld)\n"
		"  --seeds N      with --search: search once per seed (seed, seed + 1, ...) and\n"
		"                 print the median, its range and the median seed's run\n"
		"  --trace FILE   arrivals from FILE, one per line: TIME_US TENANT_INDEX\n"
		"  --late drop|serve  what the policy does with a query it cannot serve in time\n"
		"                 (default drop)\n"
		"  --full-slowdown X  slowdown of a block whose LLC domains are full of other\n"
		"                 blocks (default %.1f; provisional)\n"
		"  --tables DIR   VELTAIR's tables (default: %s beside the repository)\n"
		"  --json         print the results as JSON\n"
		"  --version      print the version and exit\n"
		"Exit status: 0 done, 1 failed, 2 bad usage.\n",
		POLICY_MAX_TENANTS, opts.policy, POLICY_MAX_CPUS, opts.cores, opts.sockets,
		opts.llc, opts.start_qps, opts.duration_s, opts.seed, opts.full_slowdown,
		TABLES_FROM_REPO);
}

/* A finite number in [lo, hi], whole string. */
static int parse_double(const char *flag, const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
		fprintf(stderr, PROG ": %s wants a number in [%g, %g], not '%s'\n", flag, lo, hi,
			s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* MODEL:QOS_MS[:SHARE]; MODEL itself has one colon (veltair:NAME). */
static int parse_tenant(const char *arg, struct tenant_arg *t)
{
	char buf[256], *qos, *share;

	if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf))
		goto bad;
	qos = strchr(buf, ':');
	qos = qos ? strchr(qos + 1, ':') : NULL;
	if (!qos)
		goto bad;
	*qos++ = '\0';
	share = strchr(qos, ':');
	if (share)
		*share++ = '\0';
	snprintf(t->spec, sizeof(t->spec), "%s", buf);
	t->share = 1;
	if (parse_double("--tenant QOS_MS", qos, 0.001, 1e6, &t->qos_ms) ||
	    (share && parse_double("--tenant SHARE", share, 1e-6, 1e6, &t->share)))
		return -EINVAL;
	return 0;
bad:
	fprintf(stderr,
		PROG ": --tenant wants MODEL:QOS_MS[:SHARE] (e.g. veltair:resnet50:15), "
		     "not '%s'\n",
		arg);
	return -EINVAL;
}

/* VELTAIR's tables beside the repository the binary was built in, else beside the cwd. */
static const char *default_tables(char *buf, size_t len)
{
	/* from bin/ or from build/san/bin/ up to the repository */
	static const char *const ups[] = { "/..", "/../../.." };
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st;

	if (n > 0) {
		const char *dir;

		exe[n] = '\0';
		dir = dirname(exe);
		for (size_t i = 0; i < sizeof(ups) / sizeof(ups[0]); i++) {
			snprintf(buf, len, "%s%s/%s", dir, ups[i], TABLES_FROM_REPO);
			if (!stat(buf, &st) && S_ISDIR(st.st_mode))
				return buf;
		}
	}
	return TABLES_FROM_REPO;
}

static void print_run_text(const struct sim_params *p, const struct tenant_arg *ta,
			   const struct sim_result *r)
{
	printf("  %-20s %7s %6s %8s %8s %7s %8s %8s %7s %7s %7s\n", "tenant", "QoS ms", "share",
	       "arrived", "done", "within", "dropped", "unserved", "p50 ms", "p95 ms", "p99 ms");
	for (int t = 0; t < p->nr_tenants; t++) {
		const struct sim_tenant_result *tr = &r->tenant[t];

		printf("  %-20s %7.1f %6.2f %8llu %8llu %6.1f%% %8llu %8llu %7.2f %7.2f %7.2f\n",
		       ta[t].table.name, ta[t].qos_ms, ta[t].share, (unsigned long long)tr->arrived,
		       (unsigned long long)tr->completed, 100 * tr->fraction_within,
		       (unsigned long long)tr->dropped, (unsigned long long)tr->unserved,
		       tr->p50_ms, tr->p95_ms, tr->p99_ms);
	}
	printf("  policy_decide: %llu calls, p50 %.2f us, p99 %.2f us (wall time here, noisy)\n",
	       (unsigned long long)r->decide_calls, r->decide_p50_us, r->decide_p99_us);
	printf("  simulated %.2f s in %.2f s of wall time (%llu events)\n",
	       (double)r->end_ns * 1e-9, r->wall_s, (unsigned long long)r->events);
}

static void print_run_json(const struct sim_params *p, const struct tenant_arg *ta,
			   const struct sim_result *r)
{
	printf("{\"events\": %llu, \"simulated_s\": %.6f, \"wall_s\": %.3f, "
	       "\"decide\": {\"calls\": %llu, \"p50_us\": %.3f, \"p99_us\": %.3f}, \"tenants\": [",
	       (unsigned long long)r->events, (double)r->end_ns * 1e-9, r->wall_s,
	       (unsigned long long)r->decide_calls, r->decide_p50_us, r->decide_p99_us);
	for (int t = 0; t < p->nr_tenants; t++) {
		const struct sim_tenant_result *tr = &r->tenant[t];

		printf("%s{\"model\": \"%s\", \"qos_ms\": %g, \"share\": %g, \"arrived\": %llu, "
		       "\"completed\": %llu, \"within\": %llu, \"dropped\": %llu, \"unserved\": %llu, "
		       "\"fraction_within\": %.6f, \"p50_ms\": %.4f, \"p95_ms\": %.4f, "
		       "\"p99_ms\": %.4f}",
		       t ? ", " : "", ta[t].table.name, ta[t].qos_ms, ta[t].share,
		       (unsigned long long)tr->arrived, (unsigned long long)tr->completed,
		       (unsigned long long)tr->within, (unsigned long long)tr->dropped,
		       (unsigned long long)tr->unserved, tr->fraction_within, tr->p50_ms,
		       tr->p95_ms, tr->p99_ms);
	}
	printf("]}");
}

/* Index of the median search of nr (the lower middle one when nr is even). */
static int median_search(const struct sim_search_result *s, int nr)
{
	int order[64];

	for (int i = 0; i < nr; i++) {
		int k = i;

		/* insertion by QoS-QPS, stable: a tie keeps the lower seed first */
		for (; k > 0 && s[order[k - 1]].qos_qps > s[i].qos_qps; k--)
			order[k] = order[k - 1];
		order[k] = i;
	}
	return order[(nr - 1) / 2];
}

/* One policy: a run at opts.qps, or the search once per seed; 0 or 1 (failure, printed). */
static int run_policy(struct sim_params *p, const struct tenant_arg *ta, bool first)
{
	int nr = opts.search ? (int)opts.seeds : 1, m, points = 0;
	struct sim_search_result *s = calloc((size_t)nr, sizeof(*s)), *med;
	struct coloc_err err = { 0 };
	double wall = 0, lo = 0, hi = 0;
	int ret = 0;

	if (!s) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (int i = 0; i < nr && !ret; i++) {
		p->seed = (uint64_t)opts.seed + (uint64_t)i;
		if (opts.search)
			ret = sim_search_qos_qps(p, SIM_QOS_FRACTION, opts.start_qps, opts.tol,
						 &s[i], &err);
		else
			ret = sim_run(p, &s[i].at_best, &err);
		points += s[i].points;
		wall += opts.search ? s[i].wall_s : s[i].at_best.wall_s;
		lo = i ? fmin(lo, s[i].qos_qps) : s[i].qos_qps;
		hi = i ? fmax(hi, s[i].qos_qps) : s[i].qos_qps;
	}
	p->seed = (uint64_t)opts.seed;
	if (ret) {
		fprintf(stderr, PROG ": policy %s: %s\n", p->policy->name, coloc_err_str(&err));
		free(s);
		return 1;
	}
	m = median_search(s, nr);
	med = &s[m];
	if (opts.json) {
		printf("%s{\"policy\": \"%s\", ", first ? "" : ",\n", p->policy->name);
		if (opts.search) {
			printf("\"qos_qps\": %.2f, \"fail_qps\": %.2f, \"median_seed\": %ld, "
			       "\"qos_qps_per_seed\": [",
			       med->qos_qps, med->fail_qps, opts.seed + m);
			for (int i = 0; i < nr; i++)
				printf("%s%.2f", i ? ", " : "", s[i].qos_qps);
			printf("], \"points\": %d, \"search_wall_s\": %.3f, ", points, wall);
		} else if (!p->trace) {
			printf("\"qps\": %.3f, ", p->qps);
		}
		printf("\"run\": ");
		print_run_json(p, ta, opts.search && !med->qos_qps ? &med->at_fail : &med->at_best);
		printf("}");
	} else if (opts.search && !med->qos_qps) {
		printf("policy %s: no load meets QoS (fails at every load down to %.2f QPS), %d "
		       "runs in %.2f s of wall time; seed %ld at %.1f QPS:\n",
		       p->policy->name, med->fail_qps, points, wall, opts.seed + m,
		       med->at_fail_qps);
		print_run_text(p, ta, &med->at_fail);
	} else if (opts.search) {
		printf("policy %s: QoS-QPS %.1f", p->policy->name, med->qos_qps);
		if (nr > 1)
			printf(" (median of %d seeds; %.1f .. %.1f)", nr, lo, hi);
		printf(", fails at %.1f; %d runs in %.2f s of wall time; seed %ld at %.1f QPS:\n",
		       med->fail_qps, points, wall, opts.seed + m, med->qos_qps);
		print_run_text(p, ta, &med->at_best);
	} else {
		printf("policy %s:\n", p->policy->name);
		print_run_text(p, ta, &med->at_best);
	}
	free(s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "list-policies", no_argument, NULL, 'L' },
		{ "cores", required_argument, NULL, 'c' },
		{ "sockets", required_argument, NULL, 'S' },
		{ "llc", required_argument, NULL, 'l' },
		{ "tenant", required_argument, NULL, 't' },
		{ "tables", required_argument, NULL, 'T' },
		{ "qps", required_argument, NULL, 'q' },
		{ "duration", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "search", no_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'r' },
		{ "seeds", required_argument, NULL, 'n' },
		{ "trace", required_argument, NULL, 'f' },
		{ "late", required_argument, NULL, 'a' },
		{ "full-slowdown", required_argument, NULL, 'F' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	static struct tenant_arg ta[POLICY_MAX_TENANTS];
	struct sim_tenant tenants[POLICY_MAX_TENANTS];
	struct sim_trace trace = { 0 };
	struct sim_params p = { 0 };
	struct policy_config machine_cfg;
	struct coloc_err err = { 0 };
	char tables_buf[PATH_MAX + 64];
	int nr_tenants = 0, opt, rc = 1, nr_run = 0;

	while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		int bad = 0;

		switch (opt) {
		case 'p':
			opts.policy = optarg;
			if (strcmp(optarg, "all") && !policy_find(optarg)) {
				fprintf(stderr, PROG ": no policy named '%s'; known: all", optarg);
				for (int i = 0; policy_entry_at(i); i++)
					fprintf(stderr, " %s", policy_entry_at(i)->name);
				fprintf(stderr, "\n");
				bad = 1;
			}
			break;
		case 'L':
			for (int i = 0; policy_entry_at(i); i++)
				printf("%-12s %s\n", policy_entry_at(i)->name,
				       policy_entry_at(i)->description);
			return 0;
		case 'c':
			bad = cli_parse_flag(PROG, "--cores", optarg, 1, POLICY_MAX_CPUS,
					     &opts.cores);
			break;
		case 'S':
			bad = cli_parse_flag(PROG, "--sockets", optarg, 1, POLICY_MAX_CPUS,
					     &opts.sockets);
			break;
		case 'l':
			bad = cli_parse_flag(PROG, "--llc", optarg, 1, POLICY_MAX_CPUS, &opts.llc);
			break;
		case 't':
			if (nr_tenants == POLICY_MAX_TENANTS) {
				fprintf(stderr, PROG ": at most %d tenants\n", POLICY_MAX_TENANTS);
				bad = 1;
				break;
			}
			bad = parse_tenant(optarg, &ta[nr_tenants++]);
			break;
		case 'T':
			opts.tables = optarg;
			break;
		case 'q':
			bad = parse_double("--qps", optarg, 1e-6, 1e9, &opts.qps);
			break;
		case 'd':
			bad = parse_double("--duration", optarg, 1e-3, 1e6, &opts.duration_s);
			opts.duration_given = true;
			break;
		case 'w':
			bad = parse_double("--warmup", optarg, 0, 1e6, &opts.warmup_s);
			break;
		case 's':
			opts.search = true;
			break;
		case 'r':
			bad = cli_parse_flag(PROG, "--seed", optarg, 0, LONG_MAX, &opts.seed);
			break;
		case 'n':
			bad = cli_parse_flag(PROG, "--seeds", optarg, 1, 64, &opts.seeds);
			break;
		case 'f':
			opts.trace = optarg;
			break;
		case 'a':
			if (!strcmp(optarg, "drop") || !strcmp(optarg, "serve")) {
				opts.late_serve = !strcmp(optarg, "serve");
			} else {
				fprintf(stderr, PROG ": --late wants drop or serve, not '%s'\n",
					optarg);
				bad = 1;
			}
			break;
		case 'F':
			bad = parse_double("--full-slowdown", optarg, 1, 100, &opts.full_slowdown);
			break;
		case 'j':
			opts.json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			cli_print_version(PROG);
			return 0;
		default:
			bad = 1;
		}
		if (bad) {
			fprintf(stderr, "Try '" PROG " --help'.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!nr_tenants) {
		fprintf(stderr, PROG ": give at least one --tenant MODEL:QOS_MS[:SHARE]\n");
		return 2;
	}
	if (opts.trace && opts.search) {
		fprintf(stderr, PROG ": --search varies the load; it does not apply to --trace\n");
		return 2;
	}
	if (!opts.trace && !opts.search && !(opts.qps > 0)) {
		fprintf(stderr, PROG ": give a load (--qps X), --search or --trace FILE\n");
		return 2;
	}

	if (!opts.tables)
		opts.tables = default_tables(tables_buf, sizeof(tables_buf));
	for (int t = 0; t < nr_tenants; t++) {
		if (sim_table_load(ta[t].spec, opts.tables, &ta[t].table, &err)) {
			fprintf(stderr, PROG ": tenant %d: %s\n", t, coloc_err_str(&err));
			goto cleanup;
		}
		tenants[t] = (struct sim_tenant){
			.model = &ta[t].table.model,
			.name = ta[t].table.name,
			.qos_ns = (uint64_t)llround(ta[t].qos_ms * 1e6),
			.share = ta[t].share,
		};
	}
	if (opts.trace && sim_trace_load(opts.trace, nr_tenants, &trace, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		goto cleanup;
	}
	p = (struct sim_params){
		.machine = { .nr_cores = (int)opts.cores,
			     .nr_sockets = (int)opts.sockets,
			     .llc_size = (int)opts.llc },
		.late = opts.late_serve ? POLICY_LATE_SERVE : POLICY_LATE_DROP,
		.tenants = tenants,
		.nr_tenants = nr_tenants,
		.qps = opts.qps,
		.trace = opts.trace ? &trace : NULL,
		.duration_ns = (uint64_t)llround(opts.duration_s * 1e9),
		.seed = (uint64_t)opts.seed,
		.interference = { .full_slowdown = opts.full_slowdown },
		.max_queued = SIM_DEFAULT_MAX_QUEUED,
	};
	/* a trace without --duration runs to its last arrival */
	if (opts.trace && trace.nr && !opts.duration_given)
		p.duration_ns = trace.time_ns[trace.nr - 1] + 1;
	/* Poisson runs start empty, so their start is not counted; a trace is counted whole */
	p.warmup_ns = opts.trace ? 0 : p.duration_ns / 10;
	if (opts.warmup_s >= 0)
		p.warmup_ns = (uint64_t)llround(opts.warmup_s * 1e9);
	if (sim_machine_config(&p.machine, p.late, &machine_cfg, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		rc = 2;
		goto cleanup;
	}
	if (opts.json)
		printf("{\"cores\": %ld, \"sockets\": %ld, \"llc\": %ld, \"seed\": %ld, "
		       "\"duration_s\": %g, \"warmup_s\": %g, \"full_slowdown\": %g, "
		       "\"interference\": \"provisional, not fitted\", \"results\": [\n",
		       opts.cores, opts.sockets, opts.llc, opts.seed, (double)p.duration_ns * 1e-9,
		       (double)p.warmup_ns * 1e-9, opts.full_slowdown);
	else
		printf(PROG
		       ": %ld cores (%ld socket%s, LLC domains of %ld), %d tenant%s, %s, "
		       "%.1f s per run (warm-up %.1f s), seed %ld; interference model provisional "
		       "(full-domain slowdown %.2f, not fitted)\n",
		       opts.cores, opts.sockets, opts.sockets > 1 ? "s" : "", opts.llc, nr_tenants,
		       nr_tenants > 1 ? "s" : "",
		       opts.trace  ? "traced arrivals" :
		       opts.search ? "QoS-QPS search" :
				     "Poisson arrivals",
		       (double)p.duration_ns * 1e-9, (double)p.warmup_ns * 1e-9, opts.seed,
		       opts.full_slowdown);
	if (!opts.search && !opts.trace && !opts.json)
		printf("load: %.1f QPS in total\n", opts.qps);
	rc = 0;
	for (int i = 0; policy_entry_at(i); i++) {
		if (strcmp(opts.policy, "all") && strcmp(opts.policy, policy_entry_at(i)->name))
			continue;
		/* the simulator does not model time-shared cores (os); named alone, it says so */
		if (!strcmp(opts.policy, "all") && policy_entry_at(i)->shares_cores)
			continue;
		p.policy = policy_entry_at(i);
		rc |= run_policy(&p, ta, !nr_run++);
	}
	if (opts.json)
		printf("\n]}\n");
cleanup:
	sim_trace_free(&trace);
	for (int t = 0; t < nr_tenants; t++)
		sim_table_free(&ta[t].table);
	return rc;
}
