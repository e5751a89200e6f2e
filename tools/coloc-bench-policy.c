// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-bench-policy: what one scheduling decision costs. For each policy of
 * the table (or the one named), it builds a machine (--cores, LLC domains of
 * 8), --tenants tenants on synthetic latency tables shaped like our profiles
 * (--layers layers, 3 versions, every core count, 4 interference levels) and
 * --queued queries per tenant, all cores free at a live slowdown of 1.3
 * (between two level columns), layer work given, and times policy_decide()
 * call by call. Alternated with each timed round is an empty round (the same
 * machine, no queries), the floor of the call itself, measured side by side.
 * Prints p50 and p99 in µs of both, and the scheduler issue's goal (p99 <=
 * 20 µs with 16 tenants and 64 cores). --grid measures the simulator issue's
 * four machines instead (64 and 256 cores, 16 and 64 tenants). With
 * --level-moves each timed round sees another live slowdown, as colocd's
 * measured one moves with every finished block: a policy that caches its
 * table reads by level then pays for reading them again. A benchmark, not a
 * test: on a loaded machine the numbers are noisy; re-measure on a quiet one.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "policy.h"
#include "util.h"

#define PROG "coloc-bench-policy"
#define NR_MODELS 4
#define NR_VERSIONS 3
#define NR_LEVELS 4
#define GOAL_P99_US 20.0 /* the scheduler issue's goal, on this machine: */
#define GOAL_TENANTS 16
#define GOAL_CORES 64
/* the live slowdown of every core, and with --level-moves its range over LEVEL_STEPS rounds */
#define LEVEL 1.3
#define LEVEL_SPAN 0.1
#define LEVEL_STEPS 97

static struct {
	long tenants;
	long cores;
	long layers;
	long queued;
	long rounds;
	bool level_moves;
	bool grid;
} opts = {
	.tenants = 16,
	.cores = 64,
	.layers = 53, /* ResNet-50's conv and fc layers */
	.queued = 4,
	.rounds = 20000,
};

/* --grid: the machines the simulator issue asks the decision cost on */
static const struct {
	long cores, tenants;
} grid[] = { { 64, 16 }, { 64, 64 }, { 256, 16 }, { 256, 64 } };

struct bench_model {
	int counts[POLICY_MAX_CPUS];
	double levels[NR_LEVELS];
	uint64_t *ns;
	uint64_t *ops; /* each layer's work, as colocd's and the simulator's tables carry */
	struct policy_costs m;
};

/*
 * Latency of a layer: work / cores^0.85 (parallel efficiency falling with
 * cores), version v trading speed alone for robustness under interference,
 * as VELTAIR's versions do. Only the shape matters here, not the values.
 */
static int bench_model_init(struct bench_model *bm, int seed)
{
	static const double level_slowdown[NR_LEVELS] = { 1.0, 1.2, 1.5, 2.0 };
	int nl = (int)opts.layers, nc = (int)opts.cores;

	bm->ns = calloc((size_t)nl * NR_VERSIONS * nc * NR_LEVELS, sizeof(*bm->ns));
	bm->ops = calloc((size_t)nl, sizeof(*bm->ops));
	if (!bm->ns || !bm->ops)
		return -1;
	memcpy(bm->levels, level_slowdown, sizeof(level_slowdown));
	for (int c = 0; c < nc; c++)
		bm->counts[c] = c + 1;
	for (int l = 0; l < nl; l++) {
		double work_ns = 20000.0 + 180000.0 * (double)((l * 7 + seed * 13) % 11) / 10.0;

		bm->ops[l] = (uint64_t)work_ns;

		for (int v = 0; v < NR_VERSIONS; v++)
			for (int c = 0; c < nc; c++)
				for (int k = 0; k < NR_LEVELS; k++) {
					double alone =
						work_ns * (1.0 + 0.08 * v) / pow(c + 1, 0.85);
					double slow =
						1.0 + (level_slowdown[k] - 1.0) * (1.0 - 0.3 * v);
					size_t i = (((size_t)l * NR_VERSIONS + v) * nc + c) *
							   NR_LEVELS +
						   k;

					bm->ns[i] = (uint64_t)(alone * slow);
				}
	}
	bm->m = (struct policy_costs){
		.nr_layers = nl,
		.nr_versions = NR_VERSIONS,
		.nr_core_counts = nc,
		.nr_levels = NR_LEVELS,
		.core_counts = bm->counts,
		.level_slowdown = bm->levels,
		.latency_ns = bm->ns,
		.layer_ops = bm->ops,
	};
	return 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double percentile(double *v, long n, double p)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[(long)(p * (double)(n - 1) + 0.5)];
}

struct bench {
	struct policy_config cfg;
	struct policy_tenant tenants[POLICY_MAX_TENANTS];
	struct policy_query *queries;
	struct policy_cpuset free;
	struct policy_signal cores[POLICY_MAX_CPUS];
	struct policy_decision *decisions;
	uint8_t *versions;
	struct policy_drop *drops;
	struct policy_output out;
	double *full_us, *empty_us;
};

/* Times one policy; returns 0, or 1 with the reason printed. */
static int bench_policy(struct bench *b, const struct policy_entry *e)
{
	struct policy_input full = {
		.now_ns = 1000000,
		.tenants = b->tenants,
		.nr_tenants = (int)opts.tenants,
		.queries = b->queries,
		.nr_queries = (int)(opts.tenants * opts.queued),
		.free = &b->free,
		.cores = b->cores,
	};
	struct policy_input empty = full;
	struct coloc_err err = { 0 };
	struct policy *p = policy_create(e, &b->cfg, &err);
	double p50, p99;
	int decided = 0;

	if (!p) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	empty.nr_queries = 0;
	for (long r = 0; r < opts.rounds; r++) {
		double t0, t1, t2;
		int ret;

		policy_output_reset(&b->out);
		if (opts.level_moves)
			for (int c = 0; c < opts.cores; c++)
				b->cores[c].slowdown =
					LEVEL - LEVEL_SPAN / 2 +
					LEVEL_SPAN * (double)(r % LEVEL_STEPS) / LEVEL_STEPS;
		t0 = now_us();
		ret = policy_decide(p, &full, &b->out, &err);
		t1 = now_us();
		decided = b->out.nr_decisions;
		policy_output_reset(&b->out);
		if (!ret)
			ret = policy_decide(p, &empty, &b->out, &err);
		t2 = now_us();
		if (ret) {
			fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
			policy_destroy(p);
			return 1;
		}
		b->full_us[r] = t1 - t0;
		b->empty_us[r] = t2 - t1;
	}
	policy_destroy(p);
	p50 = percentile(b->full_us, opts.rounds, 0.5);
	p99 = percentile(b->full_us, opts.rounds, 0.99);
	printf("%-18s %9d %10.2f %10.2f %14.2f %14.2f  %s\n", e->name, decided, p50, p99,
	       percentile(b->empty_us, opts.rounds, 0.5),
	       percentile(b->empty_us, opts.rounds, 0.99),
	       opts.tenants != GOAL_TENANTS || opts.cores != GOAL_CORES ? "-" :
	       p99 <= GOAL_P99_US					? "yes" :
									  "no");
	return 0;
}

/* Builds the machine opts describe and times each policy (only that one when only); 0 or 1. */
static int bench_machine(const struct policy_entry *only)
{
	struct bench_model models[NR_MODELS] = { 0 };
	struct bench *b = calloc(1, sizeof(*b));
	long nr_queries;
	int rc = 1;

	if (!b) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	nr_queries = opts.tenants * opts.queued;
	b->queries = calloc((size_t)nr_queries + 1, sizeof(*b->queries));
	b->decisions = calloc((size_t)opts.tenants, sizeof(*b->decisions));
	b->versions = calloc((size_t)(opts.tenants * opts.layers), 1);
	b->drops = calloc((size_t)nr_queries + 1, sizeof(*b->drops));
	b->full_us = calloc((size_t)opts.rounds, sizeof(double));
	b->empty_us = calloc((size_t)opts.rounds, sizeof(double));
	if (!b->queries || !b->decisions || !b->versions || !b->drops || !b->full_us ||
	    !b->empty_us) {
		fprintf(stderr, PROG ": out of memory\n");
		goto cleanup;
	}
	for (int i = 0; i < NR_MODELS; i++)
		if (bench_model_init(&models[i], i)) {
			fprintf(stderr, PROG ": out of memory\n");
			goto cleanup;
		}
	for (int c = 0; c < opts.cores; c++) {
		policy_cpuset_set(&b->cfg.online, c);
		b->cfg.llc[c] = c / 8;
	}
	b->cfg.late = POLICY_LATE_SERVE; /* time the decisions, not the drops */
	b->free = b->cfg.online;
	/* a live slowdown between level columns, so policies that read it interpolate */
	for (int c = 0; c < opts.cores; c++)
		b->cores[c] =
			(struct policy_signal){ .live = POLICY_SIG_SLOWDOWN, .slowdown = LEVEL };
	for (int t = 0; t < opts.tenants; t++)
		b->tenants[t] = (struct policy_tenant){ .costs = &models[t % NR_MODELS].m,
							.qos_ns = 15000000,
							.uid = (uint64_t)t };
	/* arrivals interleaved across tenants, so FCFS order is not tenant order */
	for (long i = 0; i < nr_queries; i++)
		b->queries[i] = (struct policy_query){
			.id = (uint64_t)i,
			.tenant = (int)((i * 7) % opts.tenants),
			.arrival_ns = (uint64_t)(nr_queries - i) * 1000,
			.deadline_ns = (uint64_t)(nr_queries - i) * 1000 + 15000000,
		};
	b->out = (struct policy_output){
		.decisions = b->decisions,
		.max_decisions = (int)opts.tenants,
		.versions = b->versions,
		.max_versions = (int)(opts.tenants * opts.layers),
		.drops = b->drops,
		.max_drops = (int)nr_queries + 1,
	};

	printf("%ld tenants, %ld cores, %ld layers x %d versions x %ld core counts x %d levels, "
	       "%ld queued per tenant, %ld rounds, level %s\n",
	       opts.tenants, opts.cores, opts.layers, NR_VERSIONS, opts.cores, NR_LEVELS,
	       opts.queued, opts.rounds, opts.level_moves ? "moving every round" : "fixed");
	printf("%-18s %9s %10s %10s %14s %14s  %s\n", "policy", "decisions", "p50 us", "p99 us",
	       "empty p50 us", "empty p99 us", "p99<=20us");
	rc = 0;
	for (int i = 0; policy_entry_at(i) && !rc; i++)
		if (!only || only == policy_entry_at(i))
			rc = bench_policy(b, policy_entry_at(i));
cleanup:
	for (int i = 0; i < NR_MODELS; i++) {
		free(models[i].ns);
		free(models[i].ops);
	}
	free(b->queries);
	free(b->decisions);
	free(b->versions);
	free(b->drops);
	free(b->full_us);
	free(b->empty_us);
	free(b);
	return rc;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROG " [--policy NAME] [--tenants N] [--cores N] [--layers N]\n"
		"                          [--queued N] [--rounds N] [--grid] [--level-moves]\n"
		"Times policy_decide() call by call with every core free and queries queued,\n"
		"alternated with an empty round (no queries) as the floor, and prints p50/p99 in\n"
		"microseconds per policy. Goal for the scheduler: p99 <= %.0f us at %d tenants,\n"
		"%d cores. Timing is noisy on a shared machine; compare runs side by side.\n"
		"  --policy NAME  only this policy (default: every policy of the table)\n"
		"  --tenants N    tenants, 1..%d (default %ld)\n"
		"  --cores N      cores, 1..%d (default %ld)\n"
		"  --layers N     layers per model (default %ld)\n"
		"  --queued N     queries queued per tenant (default %ld)\n"
		"  --rounds N     timed calls per policy (default %ld)\n"
		"  --grid         each of 64 and 256 cores with 16 and 64 tenants, one table\n"
		"                 each (instead of --cores and --tenants)\n"
		"  --level-moves  the live slowdown differs in every timed round (%.2f to %.2f),\n"
		"                 as colocd's measured one does (default: %.2f throughout)\n"
		"  --version      print the version and exit\n",
		GOAL_P99_US, GOAL_TENANTS, GOAL_CORES, POLICY_MAX_TENANTS, opts.tenants,
		POLICY_MAX_CPUS, opts.cores, opts.layers, opts.queued, opts.rounds,
		LEVEL - LEVEL_SPAN / 2, LEVEL + LEVEL_SPAN / 2, LEVEL);
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "tenants", required_argument, NULL, 't' },
		{ "cores", required_argument, NULL, 'c' },
		{ "layers", required_argument, NULL, 'l' },
		{ "queued", required_argument, NULL, 'q' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "level-moves", no_argument, NULL, 'm' },
		{ "grid", no_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	const struct policy_entry *only = NULL;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		int bad = 0;

		switch (opt) {
		case 'p':
			only = policy_find(optarg);
			if (!only) {
				fprintf(stderr, PROG ": no policy named '%s'; known:", optarg);
				for (int i = 0; policy_entry_at(i); i++)
					fprintf(stderr, " %s", policy_entry_at(i)->name);
				fprintf(stderr, "\n");
				bad = 1;
			}
			break;
		case 't':
			bad = cli_parse_flag(PROG, "--tenants", optarg, 1, POLICY_MAX_TENANTS,
					     &opts.tenants);
			break;
		case 'c':
			bad = cli_parse_flag(PROG, "--cores", optarg, 1, POLICY_MAX_CPUS,
					     &opts.cores);
			break;
		case 'l':
			bad = cli_parse_flag(PROG, "--layers", optarg, 1, 10000, &opts.layers);
			break;
		case 'q':
			bad = cli_parse_flag(PROG, "--queued", optarg, 0, 1000, &opts.queued);
			break;
		case 'r':
			bad = cli_parse_flag(PROG, "--rounds", optarg, 1, 10000000, &opts.rounds);
			break;
		case 'm':
			opts.level_moves = true;
			break;
		case 'g':
			opts.grid = true;
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
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
		return 2;
	}

	if (!opts.grid)
		return bench_machine(only);
	for (int i = 0; i < (int)ARRAY_SIZE(grid); i++) {
		opts.cores = grid[i].cores;
		opts.tenants = grid[i].tenants;
		rc = bench_machine(only);
		if (rc)
			return rc;
		if (i + 1 < (int)ARRAY_SIZE(grid))
			printf("\n");
	}
	return 0;
}
