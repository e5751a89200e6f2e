// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-sim: runs a policy of the policy table (the same code colocd runs)
 * on a simulated machine of many cores, with tenants on VELTAIR's published
 * latency tables or on coloc's own profiles of this machine (converted as
 * colocd converts them), Poisson or traced arrivals and the interference
 * model of sim/ (sim/README.md says what it assumes and where it comes
 * from). One run at a given load, or the QoS-QPS search (the highest load
 * at which 95 % of every tenant's queries meet QoS), for tenants given one
 * by one or for the mixes `make bench-qos` measures; then, optionally, the
 * fidelity check against what bench-qos measured. Prints per-tenant results
 * and what policy_decide() cost in the simulator's own calls.
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
#include "profile.h"
#include "sim.h"

#define PROG "coloc-sim"
#define TABLES_FROM_REPO "data/veltair"
#define MODELS_FROM_REPO "models"
#define MIXES_FROM_REPO "tools/qos-mixes.conf"
#define FIDELITY_TOLERANCE 0.15

static struct {
	const char *policy;
	long cores, sockets, llc;
	double qps, duration_s, warmup_s, full_slowdown;
	long seed, seeds;
	long executors; /* --executors: each tenant's (policy_tenant.executors) */
	bool search, json, late_serve, duration_given, brief, query_cost_in_blocks;
	const char *trace, *tables, *models, *profiles, *mixes, *mix, *measured, *qos_from;
	const char *exec_from; /* block logs to fit the executor model on; NULL: none */
	bool penalty_given, exec_per_run, print_scaling, capacity;
	double speed_rho; /* --speed-rho; < 0: the fitted one (0 without --exec-from) */
	const char *block_trace; /* --block-trace FILE: every block of a single run */
	double start_qps, tol;
	double block_cost_us, query_cost_us; /* query_cost_us < 0: from the served solo latency */
	double query_cost_sigma, shared_penalty, query_cost_warm_ms;
	const struct sim_bq_search *like; /* search as bench-qos does; NULL: coloc-sim's own */
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
	.executors = 1,
	.start_qps = 16,
	.tol = 0.01,
	.shared_penalty = 1,
	.speed_rho = -1,
};

struct tenant_arg {
	char spec[256];
	double qos_ms; /* 0: qos_factor x the solo latency on the simulated cores */
	double qos_factor;
	double share; /* 0: inversely proportional to the QoS */
	double served_solo_ms; /* bench-qos's solo latency as served; 0: not known */
	double query_cost_ms;
	struct sim_exec_model exec; /* from --exec-from */
	struct sim_table table;
};

/* What every (mix, policy) searched found, for the summary and the fidelity check. */
static struct sim_qps_table found;
/*
 * Every load point bench-qos measured (points.tsv beside --measured), and
 * what the searches found by the crossing of theirs (sim_crossing_qps);
 * nr 0: none
 */
static struct sim_loads_table measured_loads;
static struct sim_qps_table found_crossing;
/* bench-qos's QoS and served solo latency of each mix's tenants (--qos-from); nr 0: none */
static struct sim_served served;
/* the executor model fitted on --exec-from's block logs; nr_rows 0: none */
static struct sim_exec_fit exec_fit;

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROG " --tenant MODEL:QOS[:SHARE] [--tenant ...] | --mix NAME|all\n"
		"                 [--policy NAME,...|all] [--cores N] [--sockets N] [--llc N]\n"
		"                 [--qps X | --search] [--duration S] [--warmup S] [--seed N]\n"
		"                 [--seeds N] [--trace FILE] [--measured FILE] [--qos-from FILE]\n"
		"                 [--block-cost-us US] [--query-cost-us US|auto]\n"
		"                 [--query-cost-sigma S] [--query-cost-in-blocks] [--shared-penalty X]\n"
		"                 [--exec-from DIR]\n"
		"                 [--search-like quick|full] [--brief] [--json]\n"
		"       " PROG " --scaling\n"
		"Simulates the policy library (the code colocd runs) on a machine of N cores with\n"
		"tenants on VELTAIR's published latency tables or on coloc's own profiles of this\n"
		"machine, and prints per tenant the fraction of queries within QoS, drops and\n"
		"latency percentiles, and the cost of policy_decide() measured in the simulator's\n"
		"own calls. The interference model and what it rests on: sim/README.md.\n"
		"  --tenant MODEL:QOS[:SHARE]  a tenant. MODEL: veltair:NAME (VELTAIR's table:\n"
		"                 resnet50, googlenet), a model NAME of models/ or a model file's\n"
		"                 path (coloc's profile from the cache, as colocd finds it), or\n"
		"                 scaled:NAME (that profile scaled to VELTAIR's 8-64 cores, see\n"
		"                 --scaling).\n"
		"                 QOS: its latency target in ms, or Nx for N times the model's\n"
		"                 solo latency on the simulated cores (e.g. 2x). SHARE: its share\n"
		"                 of the total rate (default 1). Repeat, at most %d tenants\n"
		"  --mix NAME|all  the tenants of a mix of the mixes file (or every mix), as\n"
		"                 make bench-qos runs them: QoS 2x each model's solo latency on\n"
		"                 the simulated cores, rates inversely proportional to QoS\n"
		"  --mixes FILE   the mixes (default: %s of the repository)\n"
		"  --models DIR   where model NAMEs are (default: %s/ of the repository)\n"
		"  --profile-dir DIR  the profile cache (default: as colocd, $COLOC_CACHE_DIR or\n"
		"                 %s)\n"
		"  --policy NAME,...  policies of the table, comma-separated, or 'all' (default\n"
		"                 %s); NAME@N: that policy with N executors a tenant,\n"
		"                 as bench-qos --policies names it. With --measured, its\n"
		"                 NAME@N cells of the policies listed are simulated too\n"
		"  --list-policies  print the policy table and exit\n"
		"  --cores N      simulated cores, 1..%d (default %ld)\n"
		"  --sockets N    sockets, dividing the cores (default %ld)\n"
		"  --llc N        cores per LLC domain (default %ld: a Threadripper 3990X CCX)\n"
		"  --executors N  blocks a tenant may run at once, each of another query, 1..64\n"
		"                 (default 1: colocd starts one executor a tenant unless\n"
		"                 submitted with colocctl submit --executors N)\n"
		"  --qps X        total queries per second over all tenants, in their shares\n"
		"  --search       find the highest QPS at which >= 95%% of every tenant's queries\n"
		"                 meet QoS (doubling from %.0f, then bisection to 1%%)\n"
		"  --search-like quick|full  search as make bench-qos [ARGS=--quick] does: its\n"
		"                 load points, durations (15 or 60 queries of the least frequent\n"
		"                 tenant) and pass rule, so a point is decided on as few\n"
		"                 queries as measured; saturation from the served solo latency\n"
		"                 (--qos-from) or the profiled one. Ignores --duration\n"
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
		"                 blocks (default %.1f: VELTAIR's, an assumption; the pairs\n"
		"                 measured on our 2-core machine give ~1.0, sim/README.md)\n"
		"  --tables DIR   VELTAIR's tables (default: %s in the repository)\n"
		"  --measured FILE  after a --search, compare with make bench-qos's results\n"
		"                 (build/bench-qos/results.tsv): simulated and measured QoS-QPS,\n"
		"                 their ratio, whether within +-15%%, and whether the policies\n"
		"                 rank the same per mix; a missing FILE is reported, not an error.\n"
		"                 A cell bench-qos measured twice (CELL and CELL:TAG) is also\n"
		"                 compared with itself, the most any model could match. With\n"
		"                 points.tsv beside FILE, the same again with QoS-QPS taken from\n"
		"                 every load point of a cell (where the worst tenant's share\n"
		"                 within QoS, fitted non-increasing in load, crosses 95 %%).\n"
		"                 With --mix, the QoS is then taken from points.tsv beside FILE\n"
		"                 when it exists (as --qos-from)\n"
		"  --qos-from FILE  with --mix: each tenant's QoS exactly as make bench-qos gave it\n"
		"                 (its points.tsv: qos_ms; rates inversely proportional to it)\n"
		"  --block-cost-us US  serving cost of every block: colocd's dispatch to the\n"
		"                 executor and back, its cores held (default 0; this machine:\n"
		"                 ~71, coloc-bench-shm's round trip, sim/README.md)\n"
		"  --query-cost-us US|auto  serving cost of every query beyond its blocks,\n"
		"                 added to its latency, no core held (default 0). auto: per\n"
		"                 model, its solo latency as served (points.tsv, --qos-from)\n"
		"                 minus the profiled solo latency and one block cost\n"
		"  --query-cost-sigma S  each query's cost drawn lognormal around that median,\n"
		"                 exp(S x a standard normal) times it (default 0: fixed; this\n"
		"                 machine shared by many: fitted in sim/README.md)\n"
		"  --query-cost-in-blocks  spend each query's cost inside its blocks, holding\n"
		"                 their cores, as colocd's executors do: a block's layers take\n"
		"                 table x (1 + query cost / solo table latency), the spread\n"
		"                 drawn per block; nothing is added after the last block\n"
		"  --query-cost-warm-ms W  with --query-cost-in-blocks, the cost x (1 - exp(-idle\n"
		"                 / W)), idle: since the tenant's last query ended (default 0:\n"
		"                 always whole; this machine: ~18, coloc-run --gap-ms)\n"
		"  --shared-penalty X  blocks of a policy that time-shares cores (os) run X times\n"
		"                 slower than ideal processor sharing makes them while they share\n"
		"                 a core, 0.5..100 (default 1; with --exec-from, the fitted one)\n"
		"  --exec-from DIR  fit the executor model on colocd's block logs in DIR (make\n"
		"                 bench-qos's blocks-MIX-POLICY.tsv, e.g. build/bench-qos), print\n"
		"                 the fit and run every tenant's blocks by it: the table x the\n"
		"                 model's measured factor at that core count, spread lognormally,\n"
		"                 plus the measured dispatch; on shared cores the measured\n"
		"                 collapse onto one core (sim/README.md). Not with\n"
		"                 --query-cost-in-blocks\n"
		"  --speed-rho R  with --exec-from: the share of a block's log spread that the\n"
		"                 machine's slow spells give every block at once, 0..1 (default:\n"
		"                 fitted on the block logs, printed with the executor model;\n"
		"                 0: each block's spread its own, as before the fit)\n"
		"  --block-trace FILE  write every block of a run (not --search) to FILE in the\n"
		"                 columns of colocd's block log that the simulation has: end_ms\n"
		"                 tenant query first last cores alone_us round_trip_us (start to\n"
		"                 end), to compare with colocd --block-log\n"
		"  --exec-per-run  with --exec-from and --mix: each policy on each mix by the\n"
		"                 model fitted on that run's own log (blocks-MIX-POLICY.tsv: the\n"
		"                 machine as it was during that run), the rows it lacks from all\n"
		"                 the logs\n"
		"  --scaling      print how scaled:NAME tables are made (curves by layer size\n"
		"                 fitted on VELTAIR's tables, the time ratio, their errors) and exit\n"
		"  --capacity     with --tenant: print what the tables allow and exit: each\n"
		"                 model's fastest core count and its cheapest one within QoS\n"
		"                 (core x ms per query), and how many more queries a machine\n"
		"                 of --cores serves that way than one query at a time at the\n"
		"                 fastest count (no interference, no waiting: a ceiling)\n"
		"  --brief        one line per policy instead of a table per tenant\n"
		"  --json         print the results as JSON\n"
		"  --version      print the version and exit\n"
		"Exit status: 0 done, 1 failed, 2 bad usage.\n",
		POLICY_MAX_TENANTS, MIXES_FROM_REPO, MODELS_FROM_REPO, PROFILE_DEFAULT_CACHE_DIR,
		opts.policy, POLICY_MAX_CPUS, opts.cores, opts.sockets, opts.llc, opts.start_qps,
		opts.duration_s, opts.seed, opts.full_slowdown, TABLES_FROM_REPO);
}

/* MODEL:QOS[:SHARE]; MODEL has one colon when it is veltair:NAME or scaled:NAME, none otherwise. */
static int parse_tenant(const char *arg, struct tenant_arg *t)
{
	char buf[256], *qos, *share;
	size_t len;

	if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf))
		goto bad;
	qos = strchr(buf, ':');
	if (qos && (!strncmp(buf, "veltair:", strlen("veltair:")) ||
		    !strncmp(buf, "scaled:", strlen("scaled:"))))
		qos = strchr(qos + 1, ':');
	if (!qos)
		goto bad;
	*qos++ = '\0';
	share = strchr(qos, ':');
	if (share)
		*share++ = '\0';
	snprintf(t->spec, sizeof(t->spec), "%s", buf);
	t->share = 1;
	t->qos_ms = 0;
	len = strlen(qos);
	if (len && qos[len - 1] == 'x') {
		qos[len - 1] = '\0';
		if (cli_parse_flag_double(PROG, "--tenant QOS (Nx)", qos, 1, 1000, &t->qos_factor))
			return -EINVAL;
	} else if (cli_parse_flag_double(PROG, "--tenant QOS_MS", qos, 0.001, 1e6, &t->qos_ms)) {
		return -EINVAL;
	}
	if (share && cli_parse_flag_double(PROG, "--tenant SHARE", share, 1e-6, 1e6, &t->share))
		return -EINVAL;
	return 0;
bad:
	fprintf(stderr,
		PROG ": --tenant wants MODEL:QOS[:SHARE] (e.g. veltair:resnet50:15, "
		     "mobilenet_v2:2x), not '%s'\n",
		arg);
	return -EINVAL;
}

/*
 * rel (a path from the repository's root) in the repository the binary was
 * built in, else from the cwd.
 */
static const char *repo_path(const char *rel, char *buf, size_t len)
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
			snprintf(buf, len, "%s%s/%s", dir, ups[i], rel);
			if (!stat(buf, &st))
				return buf;
		}
	}
	return rel;
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

/*
 * A cell bench-qos measured in N searches, by the crossing of every load
 * point as the measurement is taken: the seeds' searches in groups of N
 * (seeds 1..N, N+1..2N, ...), each group's points pooled, the median of
 * the groups into found_crossing (their least and most its range). Nothing
 * for a cell not measured, or fewer seeds than N. 0 or -ENOMEM.
 */
static int add_crossing(const struct sim_search_result *s, int nr, const char *mix,
			const char *name, struct coloc_err *err)
{
	const struct sim_cell_loads *mc = sim_loads_find(&measured_loads, mix, name);
	int group = mc && mc->searches > 0 ? mc->searches : 0, groups = group ? nr / group : 0;
	struct sim_load_point *pts;
	double q[64];
	int ret = 0;

	if (!groups)
		return 0;
	pts = malloc((size_t)group * SIM_SEARCH_MAX_LOADS * sizeof(*pts));
	if (!pts)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	for (int g = 0; g < groups && !ret; g++) {
		int n = 0;

		for (int i = g * group; i < (g + 1) * group; i++)
			for (int k = 0; k < s[i].nr_loads; k++)
				pts[n++] = s[i].load[k];
		ret = sim_crossing_qps(pts, n, SIM_QOS_FRACTION, &q[g], err);
	}
	free(pts);
	if (!ret) /* the median sorts q: its ends are the range */
		ret = sim_qps_table_add(&found_crossing, mix, name, sim_median_double(q, groups), 0,
					err);
	if (!ret) {
		found_crossing.cell[found_crossing.nr - 1].qps_lo = q[0];
		found_crossing.cell[found_crossing.nr - 1].qps_hi = q[groups - 1];
	}
	return ret;
}

/*
 * One cell (name: POLICY, or POLICY@N) on one tenant set: a run at opts.qps,
 * or the search once per seed; 0 or 1 (failure, printed).
 */
static int run_policy(struct sim_params *p, const struct tenant_arg *ta, const char *mix,
		      const char *name, bool first)
{
	int nr = opts.search ? (int)opts.seeds : 1, m, points = 0;
	struct sim_search_result *s = calloc((size_t)nr, sizeof(*s)), *med;
	struct coloc_err err = { 0 };
	double wall = 0, lo = 0, hi = 0, solo_ms[POLICY_MAX_TENANTS];
	int ret = 0;

	/* bench-qos's saturation: from the latency served alone where known */
	for (int t = 0; t < p->nr_tenants; t++)
		solo_ms[t] = ta[t].served_solo_ms ?:
						    (double)policy_model_solo_ns(p->tenants[t].model,
										 p->machine.nr_cores) *
					     1e-6;

	if (!s) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (int i = 0; i < nr && !ret; i++) {
		p->seed = (uint64_t)opts.seed + (uint64_t)i;
		if (opts.search && opts.like)
			ret = sim_search_bench_qos(p, opts.like, solo_ms, SIM_QOS_FRACTION, &s[i],
						   &err);
		else if (opts.search)
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
		fprintf(stderr, PROG ": policy %s: %s\n", name, coloc_err_str(&err));
		free(s);
		return 1;
	}
	m = median_search(s, nr);
	med = &s[m];
	if (opts.search && add_crossing(s, nr, mix, name, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		free(s);
		return 1;
	}
	if (opts.search && sim_qps_table_add(&found, mix, name, med->qos_qps, 0, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		free(s);
		return 1;
	}
	if (opts.search) {
		found.cell[found.nr - 1].qps_lo = lo;
		found.cell[found.nr - 1].qps_hi = hi;
	}
	if (opts.json) {
		printf("%s{\"policy\": \"%s\", ", first ? "" : ",\n", name);
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
	} else if (opts.search && opts.brief) {
		printf("  %-18s QoS-QPS %8.1f", name, med->qos_qps);
		if (nr > 1)
			printf("  (median of %d seeds; %.1f .. %.1f)", nr, lo, hi);
		printf("  %d runs, %.1f s\n", points, wall);
	} else if (opts.search && !med->qos_qps) {
		printf("policy %s: no load meets QoS (fails at every load down to %.2f QPS), %d "
		       "runs in %.2f s of wall time; seed %ld at %.1f QPS:\n",
		       name, med->fail_qps, points, wall, opts.seed + m,
		       med->at_fail_qps);
		print_run_text(p, ta, &med->at_fail);
	} else if (opts.search) {
		printf("policy %s: QoS-QPS %.1f", name, med->qos_qps);
		if (nr > 1)
			printf(" (median of %d seeds; %.1f .. %.1f)", nr, lo, hi);
		printf(", fails at %.1f; %d runs in %.2f s of wall time; seed %ld at %.1f QPS:\n",
		       med->fail_qps, points, wall, opts.seed + m, med->qos_qps);
		print_run_text(p, ta, &med->at_best);
	} else {
		printf("policy %s:\n", name);
		print_run_text(p, ta, &med->at_best);
	}
	free(s);
	return 0;
}

/*
 * A policy as it is run: with its tenants' executors, under the name its
 * results go by (POLICY, with --executors; POLICY@N, with N, as bench-qos
 * names a cell).
 */
struct cell {
	const struct policy_entry *entry;
	int executors;
	char name[80];
};
#define MAX_CELLS 64
static struct cell cells[MAX_CELLS];
static int nr_cells;

/* Adds the cell of name (POLICY or POLICY@N) unless it is there; 0, or -1 (printed). */
static int add_cell(const char *name)
{
	struct coloc_err err = { 0 };
	const struct policy_entry *e;
	int executors;

	if (sim_cell_parse(name, &e, &executors, &err)) {
		fprintf(stderr, PROG ": %s; known: all", coloc_err_str(&err));
		for (int i = 0; policy_entry_at(i); i++)
			fprintf(stderr, " %s", policy_entry_at(i)->name);
		fprintf(stderr, ", each also as POLICY@N\n");
		return -1;
	}
	for (int i = 0; i < nr_cells; i++)
		if (!strcmp(cells[i].name, name))
			return 0;
	if (nr_cells == MAX_CELLS || strlen(name) >= sizeof(cells[0].name)) {
		fprintf(stderr, PROG ": more than %d policies, or a name too long: %s\n", MAX_CELLS,
			name);
		return -1;
	}
	cells[nr_cells] = (struct cell){ .entry = e,
					 .executors = executors ?: (int)opts.executors };
	snprintf(cells[nr_cells].name, sizeof(cells[0].name), "%s", name);
	nr_cells++;
	return 0;
}

/*
 * The cells to run: --policy's (all: every policy of the table), then, with
 * --measured, every POLICY@N cell measured of a policy among them, so that a
 * bench-qos run is simulated with the executors it served each cell with.
 * 0, or -1 (printed).
 */
static int build_cells(void)
{
	char buf[512], *save = NULL;
	struct coloc_err err = { 0 };
	struct sim_qps_table m;
	int nr_listed, ret = 0;

	snprintf(buf, sizeof(buf), "%s", opts.policy);
	for (char *n = strtok_r(buf, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
		if (strcmp(n, "all")) {
			if (add_cell(n))
				return -1;
			continue;
		}
		for (int i = 0; policy_entry_at(i); i++)
			if (add_cell(policy_entry_at(i)->name))
				return -1;
	}
	/* a file that is missing or does not load is the check's to report */
	if (!opts.measured || access(opts.measured, F_OK) ||
	    sim_qps_table_load_tsv(opts.measured, &m, &err))
		return 0;
	nr_listed = nr_cells;
	for (int i = 0; i < m.nr && !ret; i++) {
		const struct policy_entry *e;
		int executors;

		/* a replica (CELL:TAG) is compared with its cell, not simulated */
		if (!strchr(m.cell[i].policy, '@') || strchr(m.cell[i].policy, ':') ||
		    sim_cell_parse(m.cell[i].policy, &e, &executors, &err))
			continue;
		for (int c = 0; c < nr_listed && !ret; c++)
			if (cells[c].entry == e)
				ret = add_cell(m.cell[i].policy);
	}
	sim_qps_table_free(&m);
	return ret;
}

/*
 * Loads the tenants' tables and fixes each QoS (a factor of the solo
 * latency on the simulated cores, where given so) and rate share
 * (inversely proportional to the QoS, where not given). 0 or 1 (printed).
 */
static int load_tenants(struct tenant_arg *ta, int nr, const struct sim_table_dirs *dirs,
			struct sim_tenant *tenants)
{
	struct coloc_err err = { 0 };

	for (int t = 0; t < nr; t++) {
		struct sim_table *tab = &ta[t].table;

		if (sim_table_load(ta[t].spec, dirs, tab, &err)) {
			fprintf(stderr, PROG ": tenant %d: %s\n", t, coloc_err_str(&err));
			return 1;
		}
		if (tab->note[0])
			fprintf(stderr, PROG ": tenant %d (%s): %s\n", t, tab->name, tab->note);
		if (!ta[t].qos_ms) {
			uint64_t solo = policy_model_solo_ns(&tab->model, (int)opts.cores);

			if (!solo) {
				fprintf(stderr,
					PROG ": tenant %d (%s): no profiled core count fits in %ld "
					     "cores, so no solo latency to scale the QoS from\n",
					t, tab->name, opts.cores);
				return 1;
			}
			ta[t].qos_ms = ta[t].qos_factor * (double)solo * 1e-6;
		}
		if (!ta[t].share)
			ta[t].share = 1.0 / ta[t].qos_ms;
		ta[t].query_cost_ms = opts.query_cost_us * 1e-3;
		if (opts.query_cost_us < 0) {
			double solo = (double)policy_model_solo_ns(&tab->model, (int)opts.cores);

			if (!ta[t].served_solo_ms) {
				fprintf(stderr,
					PROG
					": tenant %d (%s): --query-cost-us auto needs its solo "
					"latency as served (--mix with --qos-from FILE)\n",
					t, tab->name);
				return 1;
			}
			/* bench-qos's solo: one block (temporal) of the profiled latency */
			ta[t].query_cost_ms = fmax(0, ta[t].served_solo_ms - solo * 1e-6 -
							      opts.block_cost_us * 1e-3);
		}
		tenants[t] = (struct sim_tenant){
			.model = &tab->model,
			.name = tab->name,
			.qos_ns = (uint64_t)llround(ta[t].qos_ms * 1e6),
			.share = ta[t].share,
			.query_cost_ns = (uint64_t)llround(ta[t].query_cost_ms * 1e6),
		};
		if (exec_fit.nr_rows) {
			if (sim_exec_model_from_fit(&exec_fit, tab->name, &ta[t].exec, &err)) {
				fprintf(stderr, PROG ": tenant %d: %s\n", t, coloc_err_str(&err));
				return 1;
			}
			tenants[t].exec = &ta[t].exec;
		}
	}
	return 0;
}

/* --block-trace: where the blocks go, and whose they are */
struct block_trace {
	FILE *f;
	const struct sim_tenant *tenants;
};

/* One block as colocd's block log has it (the columns the simulation knows). */
static void trace_block(void *ctx, const struct sim_block_record *b)
{
	const struct block_trace *bt = ctx;
	const struct policy_decision *d = b->d;
	const struct policy_model *m = bt->tenants[d->tenant].model;
	int ci = policy_model_core_index(m, d->nr_cores);
	uint64_t alone = 0;

	for (int l = d->first_layer; l < d->last_layer; l++)
		alone += policy_model_cell(m, l, d->versions[l - d->first_layer], ci, 0);
	fprintf(bt->f, "%.3f\t%s\t%llu\t%d\t%d\t%d\t%.1f\t%.1f\n", (double)b->end_ns * 1e-6,
		bt->tenants[d->tenant].name, (unsigned long long)d->query_id, d->first_layer,
		d->last_layer, d->nr_cores, (double)alone * 1e-3,
		(double)(b->end_ns - b->start_ns) * 1e-3);
}

/* The machine's slow spells as fitted (speed.c), with the correlations they were fitted on. */
static void print_speed_fit(void)
{
	const struct sim_speed_fit *f = &exec_fit.speed;

	printf("  the machine's slow spells: rho %.3f, tau %.0f ms (rms error %.3f over %ld pairs of "
	       "blocks of different tenants)%s\n",
	       f->rho, f->tau_ms, f->rms_error, f->pairs,
	       opts.speed_rho >= 0 ? "; --speed-rho given instead" : "");
	if (!f->pairs)
		return;
	printf("    correlation by gap (ms, up to):");
	for (int b = 0; b < SIM_SPEED_BINS; b++)
		printf(" %.0f: %.2f", sim_speed_bin_ms(b), f->corr[b]);
	printf("\n");
}

/* The executor model as fitted, with its fit error (sim/README.md, "The executor model"). */
static void print_exec_fit(void)
{
	printf("executor model fitted on %d block logs (%ld blocks) of %s:\n", exec_fit.nr_files,
	       exec_fit.nr_blocks, opts.exec_from);
	printf("  warm-up time %.0f ms for every model (it explains %.1f %% of the squared log "
	       "error of measured / table)\n",
	       exec_fit.warm_ms, 100 * exec_fit.warm_gain);
	printf("  %-16s %5s %6s %6s %5s %5s %8s   left over q95 (fit) q99 (fit)\n", "model",
	       "cores", "blocks", "factor", "cold", "sigma", "dispatch");
	for (int i = 0; i < exec_fit.nr_rows; i++) {
		const struct sim_exec_row *r = &exec_fit.row[i];

		printf("  %-16s %5d %6d %6.3f %5.3f %5.3f %5.0f us   %5.3f (%5.3f)  %5.3f (%5.3f)\n",
		       r->model, r->cores, r->n, r->factor, r->cold, r->sigma, r->dispatch_us,
		       r->q95, r->q95_fit, r->q99, r->q99_fit);
	}
	printf("  blocks under %.0f us in the table: measured - table x factor (us; drawn from "
	       "these quantiles), least measured / table, dispatch\n",
	       SIM_EXEC_MIN_ALONE_US);
	printf("  %-16s %5s %6s %6s %6s %6s %6s %6s %6s %6s %8s\n", "model", "cores", "blocks",
	       "mean", "(fit)", "p50", "p90", "p99", "max", "floor", "dispatch");
	for (int i = 0; i < exec_fit.nr_rows; i++) {
		const struct sim_exec_row *r = &exec_fit.row[i];

		if (r->n_small)
			printf("  %-16s %5d %6d %6.0f %6.0f %6.0f %6.0f %6.0f %6.0f %6.2f %5.0f us%s\n",
			       r->model, r->cores, r->n_small, r->small_extra_us,
			       sim_exec_small_mean(r->small_q_us),
			       sim_exec_small_extra(r->small_q_us, 0.5),
			       sim_exec_small_extra(r->small_q_us, 0.9),
			       sim_exec_small_extra(r->small_q_us, 0.99),
			       sim_exec_small_extra(r->small_q_us, 1), r->small_floor,
			       r->small_dispatch_us,
			       r->small_floor > 0 ? "" : " (too few: the long blocks' model)");
	}
	print_speed_fit();
	if (!exec_fit.nr_shared)
		return;
	printf("  on shared cores (alone there: no other block overlapped):\n");
	printf("  %-16s %6s %9s %10s %10s %10s %9s\n", "model", "alone", "collapsed", "collapse_p",
	       "collapse_x", "overlapped", "q-err");
	for (int i = 0; i < exec_fit.nr_shared; i++) {
		const struct sim_exec_shared_row *r = &exec_fit.shared[i];

		printf("  %-16s %6d %9d %10.3f %10.3f %10d %9.3f\n", r->model, r->n_alone,
		       r->n_collapsed, r->collapse_p, r->collapse_x, r->n_overlapped, r->fit_error);
	}
	printf("  time-sharing penalty %.2f (rms log error of the overlapped blocks' quartiles "
	       "and p90: %.3f)%s\n",
	       exec_fit.penalty, exec_fit.penalty_error,
	       opts.penalty_given ? "; --shared-penalty given instead" : "");
}

/* The machine's slow spells: as fitted, or --speed-rho's share at the fitted time (1 s if none). */
static void set_speed(struct sim_params *p, const struct sim_speed_fit *fit)
{
	double tau_ms = fit->tau_ms > 0 ? fit->tau_ms : 1000;

	p->speed_rho = opts.speed_rho >= 0 ? opts.speed_rho : fit->rho;
	p->speed_tau_ns = (uint64_t)llround(tau_ms * 1e6);
}

/*
 * --exec-per-run: each tenant's executor model from the run's own log
 * (mix, policy), the core counts and collapse it lacks from all the logs;
 * a run not logged keeps the model of all the logs. The time-sharing
 * penalty likewise, unless --shared-penalty was given.
 */
static int exec_per_run(const char *mix, const char *policy, struct tenant_arg *ta, int nr,
			struct sim_params *p)
{
	struct coloc_err err = { 0 };
	struct sim_exec_fit run;
	int ret = sim_exec_fit_log(opts.exec_from, mix, policy, &run, &err);

	if (ret && ret != -ENOENT) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	if (!opts.penalty_given)
		p->shared_penalty = !ret && run.penalty ? run.penalty : exec_fit.penalty;
	set_speed(p, !ret && run.speed.rho > 0 ? &run.speed : &exec_fit.speed);
	for (int t = 0; t < nr; t++) {
		struct sim_exec_model own;

		if (sim_exec_model_from_fit(&exec_fit, ta[t].table.name, &ta[t].exec, &err)) {
			fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
			sim_exec_fit_free(&run);
			return 1;
		}
		if (ret || sim_exec_model_from_fit(&run, ta[t].table.name, &own, &err))
			continue;
		for (int k = 1; k <= SIM_EXEC_MAX_CORES; k++) {
			if (!own.factor[k])
				continue;
			ta[t].exec.factor[k] = own.factor[k];
			ta[t].exec.sigma[k] = own.sigma[k];
			ta[t].exec.cold[k] = own.cold[k];
			ta[t].exec.dispatch_ns[k] = own.dispatch_ns[k];
			ta[t].exec.small_n[k] = own.small_n[k];
			memcpy(ta[t].exec.small_extra_ns[k], own.small_extra_ns[k],
			       sizeof(own.small_extra_ns[k]));
			ta[t].exec.small_floor[k] = own.small_floor[k];
			ta[t].exec.small_dispatch_ns[k] = own.small_dispatch_ns[k];
		}
		ta[t].exec.warm_ns = own.warm_ns;
		for (int i = 0; i < run.nr_shared; i++)
			if (!strcmp(run.shared[i].model, ta[t].table.name)) {
				ta[t].exec.collapse_p = own.collapse_p;
				ta[t].exec.collapse_x = own.collapse_x;
			}
	}
	if (!ret)
		sim_exec_fit_free(&run);
	return 0;
}

/*
 * The tenants of a mix, rates inversely proportional to QoS. QoS: as
 * bench-qos gave it (--qos-from), else 2x solo on the simulated cores.
 * -1 when --qos-from lacks one of them (printed).
 */
static int mix_tenants(const struct sim_mix *mix, struct tenant_arg *ta)
{
	for (int t = 0; t < mix->nr_models; t++) {
		const struct sim_served_tenant *st =
			sim_served_find(&served, mix->name, mix->model[t]);

		ta[t] = (struct tenant_arg){ .qos_factor = 2, .share = 0 };
		snprintf(ta[t].spec, sizeof(ta[t].spec), "%s", mix->model[t]);
		if (!served.nr)
			continue;
		if (!st) {
			fprintf(stderr,
				PROG ": %s has no line for tenant %s of mix %s: was it measured "
				     "with the same mixes file?\n",
				opts.qos_from, mix->model[t], mix->name);
			return -1;
		}
		ta[t].qos_ms = st->qos_ms;
		ta[t].served_solo_ms = st->solo_ms;
	}
	return mix->nr_models;
}

/* One table: a line per policy, a column per mix, QoS-QPS. */
static void print_summary(const struct sim_mixes *mixes, bool all_mixes)
{
	printf("\nQoS-QPS (total queries/s with >= 95%% of every tenant's within QoS), %ld "
	       "cores:\n%-18s",
	       opts.cores, "policy");
	for (int m = 0; m < mixes->nr; m++)
		if (all_mixes || !strcmp(mixes->mix[m].name, opts.mix))
			printf(" %10s", mixes->mix[m].name);
	printf("\n");
	for (int i = 0; i < nr_cells; i++) {
		const char *name = cells[i].name;

		printf("%-18s", name);
		for (int m = 0; m < mixes->nr; m++) {
			const struct sim_qps_cell *c;

			if (!all_mixes && strcmp(mixes->mix[m].name, opts.mix))
				continue;
			c = sim_qps_table_find(&found, mixes->mix[m].name, name);
			printf(" %10.1f", c ? c->qps : 0.0);
		}
		printf("\n");
	}
}

/*
 * The measurement against itself, where bench-qos measured a cell twice
 * side by side (CELL and CELL:TAG, --policies): the same comparison as the
 * fidelity check's, the replica in the simulation's place. It is the most
 * any model could score against this run. 0, or 1 on an error (printed).
 */
static int print_replicas(const struct sim_qps_table *measured)
{
	struct sim_qps_table cells, replicas;
	struct coloc_err err = { 0 };
	struct sim_fidelity f;

	if (sim_qps_table_split_replicas(measured, &cells, &replicas, &err))
		goto fail;
	if (sim_fidelity_compare(&replicas, &cells, FIDELITY_TOLERANCE, &f, &err)) {
		sim_qps_table_free(&cells);
		sim_qps_table_free(&replicas);
		goto fail;
	}
	if (f.nr_rows) {
		printf("the measurement against itself (each cell measured twice side by side, "
		       "CELL and CELL:TAG; replica / cell, within +-%.0f%%):\n",
		       100 * FIDELITY_TOLERANCE);
		printf("%-10s %-18s %10s %15s %10s %15s %7s  %s\n", "mix", "cell", "measured",
		       "searches' range", "replica", "searches' range", "ratio", "within");
		for (int i = 0; i < f.nr_rows; i++) {
			const struct sim_fidelity_row *r = &f.row[i];

			printf("%-10s %-18s %10.1f %6.1f .. %5.1f %10.1f %6.1f .. %5.1f %7.2f  %s\n",
			       r->sim->mix, r->sim->policy, r->measured->qps, r->measured->qps_lo,
			       r->measured->qps_hi, r->sim->qps, r->sim->qps_lo, r->sim->qps_hi,
			       r->ratio, r->within ? "yes" : "NO");
		}
		printf("the measurement against itself: %d of %d cells within +-%.0f%%, %d of %d "
		       "mixes ranked the same (a model's ceiling on this run)\n",
		       f.nr_within, f.nr_compared, 100 * FIDELITY_TOLERANCE, f.nr_mixes_same,
		       f.nr_mixes);
	}
	sim_fidelity_free(&f);
	sim_qps_table_free(&cells);
	sim_qps_table_free(&replicas);
	return 0;
fail:
	fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
	return 1;
}

/*
 * One way of taking QoS-QPS: simulated against measured, cell by cell and
 * per mix, the verdict, then the measurement against itself where it has
 * replicas. 0, or 1 on an error (printed).
 */
static int print_check(const char *how, const char *explain, const struct sim_qps_table *sim,
		       const struct sim_qps_table *measured)
{
	struct coloc_err err = { 0 };
	struct sim_fidelity f;
	int ret;

	if (sim_fidelity_compare(sim, measured, FIDELITY_TOLERANCE, &f, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	printf("\nfidelity check against %s, QoS-QPS %s (%s; simulated / measured, within "
	       "+-%.0f%%):\n",
	       opts.measured, how, explain, 100 * FIDELITY_TOLERANCE);
	printf("%-10s %-18s %10s %15s %10s %15s %7s  %-6s %-8s %s\n", "mix", "policy", "simulated",
	       "seeds' range", "measured", "searches' range", "ratio", "within", "in range",
	       "ranges meet");
	for (int i = 0; i < f.nr_rows; i++) {
		const struct sim_fidelity_row *r = &f.row[i];

		if (!r->measured) {
			printf("%-10s %-18s %10.1f %6.1f .. %5.1f %10s %15s %7s  not measured\n",
			       r->sim->mix, r->sim->policy, r->sim->qps, r->sim->qps_lo,
			       r->sim->qps_hi, "-", "-", "-");
			continue;
		}
		printf("%-10s %-18s %10.1f %6.1f .. %5.1f %10.1f %6.1f .. %5.1f %7.2f  %-6s %-8s "
		       "%s\n",
		       r->sim->mix, r->sim->policy, r->sim->qps, r->sim->qps_lo, r->sim->qps_hi,
		       r->measured->qps, r->measured->qps_lo, r->measured->qps_hi, r->ratio,
		       r->within ? "yes" : "NO", r->in_range ? "yes" : "no",
		       r->ranges_meet ? "yes" : "no");
	}
	for (int k = 0; k < f.nr_mixes; k++)
		printf("ranking of policies on mix %s: %s (%d of %d pairs ordered the other way)\n",
		       f.mix[k].mix,
		       f.mix[k].same_ranking ? "the same" :
		       f.mix[k].pairs	     ? "DIFFERENT" :
					       "not compared",
		       f.mix[k].discordant, f.mix[k].pairs);
	printf("measured inside the simulated seeds' range: %d of %d cells; the seeds' and the "
	       "measured searches' ranges meet: %d of %d (neither is the issue's bar)\n",
	       f.nr_in_range, f.nr_compared, f.nr_ranges_meet, f.nr_compared);
	printf("fidelity (%s): %d of %d compared cells within +-%.0f%%, %d of %d mixes ranked "
	       "the same: %s\n",
	       how, f.nr_within, f.nr_compared, 100 * FIDELITY_TOLERANCE, f.nr_mixes_same,
	       f.nr_mixes,
	       f.nr_compared && f.nr_within == f.nr_compared && f.nr_mixes_same == f.nr_mixes ?
		       "PASS" :
		       "FAIL (fix the model before quoting a many-core number)");
	ret = print_replicas(measured);
	sim_fidelity_free(&f);
	return ret;
}

/*
 * The fidelity check against make bench-qos's measurements: QoS-QPS as
 * bench-qos takes it (each search's highest pass, the median of a cell's
 * searches), then, with its points.tsv, by the crossing of every point of
 * a cell (sim_crossing_qps). 0, or 1 on a bad file (printed).
 */
static int print_fidelity(void)
{
	struct sim_qps_table measured, crossing = { 0 };
	struct coloc_err err = { 0 };
	int ret;

	if (access(opts.measured, F_OK)) {
		printf("\nfidelity check: no measured results at %s yet; run `make bench-qos` on "
		       "this machine to measure them, then `make bench-sim` again.\n",
		       opts.measured);
		return 0;
	}
	if (sim_qps_table_load_tsv(opts.measured, &measured, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	ret = print_check("by the search",
			  "each search's highest passing load, the median of a cell's searches",
			  &found, &measured);
	if (!ret && found_crossing.nr) {
		ret = sim_loads_crossing(&measured_loads, &measured, SIM_QOS_FRACTION, &crossing,
					 &err);
		if (ret)
			fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		else
			ret = print_check("by every point",
					  "a cell's searches pooled, the worst tenant's share "
					  "within QoS fitted non-increasing in load, where it "
					  "crosses 95 %; simulated: the seeds in groups as many as "
					  "the measured searches",
					  &found_crossing, &crossing);
		sim_qps_table_free(&crossing);
	}
	sim_qps_table_free(&measured);
	return ret ? 1 : 0;
}

/* --scaling: how our profiles become scaled:NAME tables, and how far off they are. */
static int print_scaling(const struct sim_table_dirs *dirs)
{
	static const char *const model[2] = { "ResNet-50 (the time ratio fitted on it)",
					      "GoogLeNet" };
	struct coloc_err err = { 0 };
	struct sim_scaling s;

	if (sim_scaling_fit(dirs, &s, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	printf("scaled:NAME: our profile's 1-core cells x g(k) of the layer's class / time ratio,\n"
	       "k = 8, 16, .. 64 (sim/README.md). g(k) = s + (1 - s - o) / k + o k, fitted\n"
	       "on VELTAIR's ResNet-50 and GoogLeNet layers (t(k) = a + b / k + c k each), in\n"
	       "classes by T1, the layer's time on one of VELTAIR's cores\n");
	printf("%-16s %7s %8s %9s %9s %9s %7s\n", "class (T1, us)", "layers", "s", "o", "g(8)",
	       "g(64)", "best k");
	for (int c = 0; c < SIM_SCALE_CLASSES; c++) {
		const struct sim_scale_class *k = &s.cls[c];
		double lo = c ? s.cls[c - 1].max_work_us : 0;
		double work = c ? lo : k->max_work_us / 2;
		int best_k = 1;
		char range[32];

		for (int n = 2; n <= 256; n++)
			if (sim_scaling_curve(&s, work, n) < sim_scaling_curve(&s, work, best_k))
				best_k = n;
		if (isinf(k->max_work_us))
			snprintf(range, sizeof(range), ">= %.0f", lo);
		else
			snprintf(range, sizeof(range), "%.0f-%.0f", lo, k->max_work_us);
		printf("%-16s %7d %8.4f %9.6f %9.4f %9.4f %7d%s\n", range, k->nr_layers, k->serial,
		       k->per_core, sim_scaling_curve(&s, work, 8), sim_scaling_curve(&s, work, 64),
		       best_k, k->nr_layers ? "" : "  (no layer: its neighbour's curve)");
	}
	printf("error on VELTAIR's own cells, each layer anchored at its 8-core cell: %.1f %%;\n"
	       "each model by the curves of the other alone: %.1f %%\n",
	       100 * s.fit_mape, 100 * s.cross_mape);
	printf("time ratio: our ResNet-50 on one core here over theirs on one of VELTAIR's: %.3f\n",
	       s.time_ratio);
	for (int i = 0; i < 2; i++) {
		printf("whole model scaled-ours / theirs - 1, %s, by the curves of both models:\n ",
		       model[i]);
		for (int ci = 0; ci < s.nr_counts[i]; ci++)
			printf(" %d:%+.0f%%", s.counts[i][ci], 100 * s.model_err[i][ci]);
		printf("\n  by the curves of the other model alone%s:\n ",
		       i ? " (GoogLeNet wholly held out)" : "");
		for (int ci = 0; ci < s.nr_counts[i]; ci++)
			printf(" %d:%+.0f%%", s.counts[i][ci], 100 * s.model_err_cross[i][ci]);
		printf("\n");
	}
	if (s.two_core_cells)
		printf("our 2-core cells / (g(2) x our 1-core cells): median %.2f over %d layers "
		       "(1.00: the curve holds at 2 cores here)\n",
		       s.two_core_ratio, s.two_core_cells);
	return 0;
}

/*
 * --capacity: per tenant, the whole model alone (version 0) at each core
 * count; temporal's cost of a query is the whole machine for its fastest
 * time, a spatial policy's at best k x t(k) for the cheapest k within QoS;
 * capacity ratio = cores x sum(share x t_fast) / sum(share x k t(k)).
 */
static int print_capacity(const struct tenant_arg *ta, int nr)
{
	double temporal = 0, spatial = 0;

	printf("%-24s %8s %10s %6s %10s %12s %12s\n", "tenant", "QoS ms", "fastest k", "ms",
	       "cheapest k", "ms", "core x ms");
	for (int t = 0; t < nr; t++) {
		const struct policy_model *m = &ta[t].table.model;
		double fast = INFINITY, cheap = INFINITY, cheap_ms = 0;
		int fast_k = 0, cheap_k = 0;

		for (int ci = 0; ci < m->nr_core_counts && m->core_counts[ci] <= opts.cores; ci++) {
			double ms = 0;
			int k = m->core_counts[ci];

			for (int l = 0; l < m->nr_layers; l++)
				ms += (double)policy_model_cell(m, l, 0, ci, 0) * 1e-6;
			if (ms < fast) {
				fast = ms;
				fast_k = k;
			}
			if (ms <= ta[t].qos_ms && k * ms < cheap) {
				cheap = k * ms;
				cheap_k = k;
				cheap_ms = ms;
			}
		}
		if (!fast_k) {
			fprintf(stderr, PROG ": %s: no core count fits in %ld cores\n",
				ta[t].table.name, opts.cores);
			return 1;
		}
		if (!cheap_k) {
			printf("%-24s %8.2f %10d %6.2f %10s %12s %12s\n", ta[t].table.name,
			       ta[t].qos_ms, fast_k, fast, "none", "-", "-");
			printf("capacity: %s cannot meet its QoS alone on any core count\n",
			       ta[t].table.name);
			return 0;
		}
		printf("%-24s %8.2f %10d %6.2f %10d %12.2f %12.1f\n", ta[t].table.name,
		       ta[t].qos_ms, fast_k, fast, cheap_k, cheap_ms, cheap);
		temporal += ta[t].share * fast;
		spatial += ta[t].share * cheap;
	}
	printf("capacity ceiling on %ld cores, queries side by side at their cheapest core count "
	       "over one at a time at the fastest: %.2fx (no interference, no waiting)\n",
	       opts.cores, (double)opts.cores * temporal / spatial);
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
		{ "mix", required_argument, NULL, 'x' },
		{ "mixes", required_argument, NULL, 'X' },
		{ "models", required_argument, NULL, 'M' },
		{ "profile-dir", required_argument, NULL, 'P' },
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
		{ "measured", required_argument, NULL, 'm' },
		{ "qos-from", required_argument, NULL, 'Q' },
		{ "block-cost-us", required_argument, NULL, 'B' },
		{ "query-cost-us", required_argument, NULL, 'C' },
		{ "query-cost-sigma", required_argument, NULL, 'G' },
		{ "query-cost-in-blocks", no_argument, NULL, 'I' },
		{ "query-cost-warm-ms", required_argument, NULL, 'W' },
		{ "shared-penalty", required_argument, NULL, 'O' },
		{ "search-like", required_argument, NULL, 'K' },
		{ "exec-from", required_argument, NULL, 'E' },
		{ "exec-per-run", no_argument, NULL, 'R' },
		{ "block-trace", required_argument, NULL, 'Z' },
		{ "speed-rho", required_argument, NULL, 'H' },
		{ "executors", required_argument, NULL, 'N' },
		{ "scaling", no_argument, NULL, 'Y' },
		{ "capacity", no_argument, NULL, 'U' },
		{ "brief", no_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	static struct tenant_arg ta[POLICY_MAX_TENANTS];
	static struct sim_mixes mixes;
	struct sim_tenant tenants[POLICY_MAX_TENANTS];
	struct sim_trace trace = { 0 };
	struct sim_params p = { 0 };
	struct block_trace bt = { 0 };
	struct sim_table_dirs dirs = { 0 };
	struct policy_config machine_cfg;
	struct coloc_err err = { 0 };
	char tables_buf[PATH_MAX + 64], models_buf[PATH_MAX + 64], mixes_buf[PATH_MAX + 64];
	char measured_dir[PATH_MAX], points_buf[PATH_MAX + 64];
	int nr_tenants = 0, opt, rc = 1, nr_run = 0, nr_sets = 1;
	bool all_mixes;

	while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		int bad = 0;

		switch (opt) {
		case 'p':
			opts.policy = optarg;
			bad = strlen(optarg) >= 512;
			if (bad)
				fprintf(stderr, PROG ": --policy: a list of at most 511 characters\n");
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
		case 'N':
			bad = cli_parse_flag(PROG, "--executors", optarg, 1, SIM_MAX_EXECUTORS,
					     &opts.executors);
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
		case 'x':
			opts.mix = optarg;
			break;
		case 'X':
			opts.mixes = optarg;
			break;
		case 'M':
			opts.models = optarg;
			break;
		case 'P':
			opts.profiles = optarg;
			break;
		case 'T':
			opts.tables = optarg;
			break;
		case 'q':
			bad = cli_parse_flag_double(PROG, "--qps", optarg, 1e-6, 1e9, &opts.qps);
			break;
		case 'd':
			bad = cli_parse_flag_double(PROG, "--duration", optarg, 1e-3, 1e6,
						    &opts.duration_s);
			opts.duration_given = true;
			break;
		case 'w':
			bad = cli_parse_flag_double(PROG, "--warmup", optarg, 0, 1e6,
						    &opts.warmup_s);
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
			bad = cli_parse_flag_double(PROG, "--full-slowdown", optarg, 1, 100,
						    &opts.full_slowdown);
			break;
		case 'm':
			opts.measured = optarg;
			break;
		case 'Q':
			opts.qos_from = optarg;
			break;
		case 'B':
			bad = cli_parse_flag_double(PROG, "--block-cost-us", optarg, 0, 1e9,
						    &opts.block_cost_us);
			break;
		case 'K':
			if (!strcmp(optarg, "quick") || !strcmp(optarg, "full")) {
				opts.like = !strcmp(optarg, "quick") ? &sim_bq_quick : &sim_bq_full;
			} else {
				fprintf(stderr,
					PROG ": --search-like wants quick or full, not '%s'\n",
					optarg);
				bad = 1;
			}
			break;
		case 'O':
			bad = cli_parse_flag_double(PROG, "--shared-penalty", optarg, 0.5, 100,
						    &opts.shared_penalty);
			opts.penalty_given = true;
			break;
		case 'E':
			opts.exec_from = optarg;
			break;
		case 'R':
			opts.exec_per_run = true;
			break;
		case 'Z':
			opts.block_trace = optarg;
			break;
		case 'H':
			bad = cli_parse_flag_double(PROG, "--speed-rho", optarg, 0, 1,
						    &opts.speed_rho);
			break;
		case 'G':
			bad = cli_parse_flag_double(PROG, "--query-cost-sigma", optarg, 0, 10,
						    &opts.query_cost_sigma);
			break;
		case 'C':
			if (!strcmp(optarg, "auto"))
				opts.query_cost_us = -1;
			else
				bad = cli_parse_flag_double(PROG, "--query-cost-us", optarg, 0, 1e9,
							    &opts.query_cost_us);
			break;
		case 'b':
			opts.brief = true;
			break;
		case 'Y':
			opts.print_scaling = true;
			break;
		case 'U':
			opts.capacity = true;
			break;
		case 'I':
			opts.query_cost_in_blocks = true;
			break;
		case 'W':
			bad = cli_parse_flag_double(PROG, "--query-cost-warm-ms", optarg, 0, 1e6,
						    &opts.query_cost_warm_ms);
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
	if (build_cells())
		return 2;
	dirs.veltair = opts.tables ?: repo_path(TABLES_FROM_REPO, tables_buf, sizeof(tables_buf));
	dirs.models = opts.models ?: repo_path(MODELS_FROM_REPO, models_buf, sizeof(models_buf));
	dirs.profiles = opts.profiles;
	if (opts.print_scaling)
		return print_scaling(&dirs);
	if (opts.capacity && (opts.mix || opts.search || opts.trace || opts.json)) {
		fprintf(stderr, PROG ": --capacity reads the --tenant tables and exits: not with "
				     "--mix, --search, --trace or --json\n");
		return 2;
	}
	if (!nr_tenants == !opts.mix) {
		fprintf(stderr, PROG ": give --tenant MODEL:QOS[:SHARE] (one or more) or --mix "
				     "NAME|all, not both\n");
		return 2;
	}
	if (opts.trace && (opts.search || opts.mix)) {
		fprintf(stderr, PROG ": a trace names tenants by index and sets the load; it "
				     "does not apply to --search or --mix\n");
		return 2;
	}
	if (!opts.trace && !opts.search && !(opts.qps > 0) && !opts.capacity) {
		fprintf(stderr, PROG ": give a load (--qps X), --search or --trace FILE\n");
		return 2;
	}
	if (opts.like && !opts.search) {
		fprintf(stderr, PROG ": --search-like is a way to --search: give both\n");
		return 2;
	}
	if (opts.measured && !opts.search) {
		fprintf(stderr, PROG ": --measured compares QoS-QPS: it needs --search\n");
		return 2;
	}
	if (opts.qos_from && !opts.mix) {
		fprintf(stderr, PROG ": --qos-from gives the QoS of a mix's tenants: it needs "
				     "--mix\n");
		return 2;
	}
	if (opts.query_cost_us < 0 && !opts.mix) {
		fprintf(stderr, PROG ": --query-cost-us auto takes each model's solo latency as "
				     "served from bench-qos's points.tsv: it needs --mix\n");
		return 2;
	}
	if (opts.block_trace && opts.search) {
		fprintf(stderr,
			PROG ": --block-trace writes one run's blocks: not with --search\n");
		return 2;
	}
	if (opts.exec_per_run && !(opts.exec_from && opts.mix)) {
		fprintf(stderr, PROG ": --exec-per-run fits each mix and policy's own block log: "
				     "it needs --exec-from and --mix\n");
		return 2;
	}
	if (opts.exec_from && opts.query_cost_in_blocks) {
		fprintf(stderr, PROG ": --exec-from and --query-cost-in-blocks both stretch the "
				     "blocks: give one\n");
		return 2;
	}
	if (opts.json && (opts.mix || opts.measured || opts.brief)) {
		fprintf(stderr, PROG ": --json prints one tenant set's runs: not with --mix, "
				     "--measured or --brief\n");
		return 2;
	}

	all_mixes = opts.mix && !strcmp(opts.mix, "all");
	if (opts.mix) {
		if (sim_mixes_load(opts.mixes ?:
					   repo_path(MIXES_FROM_REPO, mixes_buf, sizeof(mixes_buf)),
				   &mixes, &err)) {
			fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
			return 1;
		}
		if (!all_mixes && !sim_mixes_find(&mixes, opts.mix)) {
			fprintf(stderr, PROG ": no mix named '%s'; known: all", opts.mix);
			for (int m = 0; m < mixes.nr; m++)
				fprintf(stderr, " %s", mixes.mix[m].name);
			fprintf(stderr, "\n");
			return 2;
		}
		nr_sets = mixes.nr;
	}
	if (opts.measured) {
		/*
		 * bench-qos writes points.tsv beside results.tsv: with --mix the
		 * QoS it gave, and every load point for the check by their crossing
		 */
		snprintf(measured_dir, sizeof(measured_dir), "%s", opts.measured);
		snprintf(points_buf, sizeof(points_buf), "%s/points.tsv", dirname(measured_dir));
		if (!access(points_buf, F_OK)) {
			if (opts.mix && !opts.qos_from)
				opts.qos_from = points_buf;
			if (sim_loads_load_tsv(points_buf, &measured_loads, &err)) {
				fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
				return 1;
			}
		}
	}
	if (opts.qos_from && sim_served_load_tsv(opts.qos_from, &served, &err)) {
		fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
		return 1;
	}
	if (opts.query_cost_us < 0 && !served.nr) {
		fprintf(stderr, PROG ": --query-cost-us auto: no served solo latencies (give "
				     "--qos-from bench-qos's points.tsv, or --measured with it "
				     "beside)\n");
		return 1;
	}
	if (opts.exec_from) {
		if (sim_exec_fit_dir(opts.exec_from, &exec_fit, &err)) {
			fprintf(stderr, PROG ": %s\n", coloc_err_str(&err));
			return 1;
		}
		if (!opts.penalty_given && exec_fit.penalty)
			opts.shared_penalty = exec_fit.penalty;
		if (!opts.json)
			print_exec_fit();
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
		.qps = opts.qps,
		.trace = opts.trace ? &trace : NULL,
		.duration_ns = (uint64_t)llround(opts.duration_s * 1e9),
		.seed = (uint64_t)opts.seed,
		.interference = { .full_slowdown = opts.full_slowdown },
		.block_cost_ns = (uint64_t)llround(opts.block_cost_us * 1e3),
		.query_cost_sigma = opts.query_cost_sigma,
		.query_cost_in_blocks = opts.query_cost_in_blocks,
		.query_cost_warm_ns = (uint64_t)llround(opts.query_cost_warm_ms * 1e6),
		.shared_penalty = opts.shared_penalty,
		.executors = (int)opts.executors,
		.max_queued = SIM_DEFAULT_MAX_QUEUED,
	};
	set_speed(&p, &exec_fit.speed);
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
	if (opts.capacity)
		printf(PROG ": %ld cores, what the tables allow (version 0, alone)\n", opts.cores);
	else if (opts.json)
		printf("{\"cores\": %ld, \"sockets\": %ld, \"llc\": %ld, \"seed\": %ld, "
		       "\"duration_s\": %g, \"warmup_s\": %g, \"full_slowdown\": %g, "
		       "\"results\": [\n",
		       opts.cores, opts.sockets, opts.llc, opts.seed, (double)p.duration_ns * 1e-9,
		       (double)p.warmup_ns * 1e-9, opts.full_slowdown);
	else
		printf(PROG ": %ld cores (%ld socket%s, LLC domains of %ld), %s, %.1f s per run "
			    "(warm-up %.1f s), seed %ld; full-domain slowdown %.2f; block cost "
			    "%.0f us, query cost spread %.2f, time-sharing penalty %.2f\n",
		       opts.cores, opts.sockets, opts.sockets > 1 ? "s" : "", opts.llc,
		       opts.trace  ? "traced arrivals" :
		       opts.search ? "QoS-QPS search" :
				     "Poisson arrivals",
		       (double)p.duration_ns * 1e-9, (double)p.warmup_ns * 1e-9, opts.seed,
		       opts.full_slowdown, opts.block_cost_us, opts.query_cost_sigma,
		       opts.shared_penalty);
	if (opts.executors > 1 && !opts.json)
		printf("%ld executors a tenant: blocks of up to %ld of its queries at once (colocctl "
		       "submit --executors %ld)\n",
		       opts.executors, opts.executors, opts.executors);
	if (served.nr && !opts.json)
		printf("QoS of each mix's tenants as bench-qos gave it: %s\n", opts.qos_from);
	if (opts.like && !opts.json)
		printf("searched as bench-qos%s does: its loads and point durations (%.0f..%.0f s "
		       "after %.0f s of warm-up), not the run length above\n",
		       opts.like == &sim_bq_quick ? " --quick" : "", opts.like->min_s,
		       opts.like->max_s, opts.like->warmup_s);
	if (!opts.search && !opts.trace && !opts.json && !opts.capacity)
		printf("load: %.1f QPS in total\n", opts.qps);
	if (opts.block_trace) {
		bt.f = fopen(opts.block_trace, "w");
		if (!bt.f) {
			fprintf(stderr, PROG ": cannot write %s: %m\n", opts.block_trace);
			rc = 1;
			goto cleanup;
		}
		bt.tenants = tenants;
		fputs("end_ms\ttenant\tquery\tfirst\tlast\tcores\talone_us\tround_trip_us\n", bt.f);
		p.on_block = trace_block;
		p.ctx = &bt;
	}
	rc = 0;
	for (int set = 0; set < nr_sets && !rc; set++) {
		const char *set_name = "tenants";

		if (opts.mix) {
			if (!all_mixes && strcmp(mixes.mix[set].name, opts.mix))
				continue;
			set_name = mixes.mix[set].name;
			nr_tenants = mix_tenants(&mixes.mix[set], ta);
			if (nr_tenants < 0) {
				rc = 1;
				break;
			}
		}
		p.nr_tenants = nr_tenants;
		if (load_tenants(ta, nr_tenants, &dirs, tenants)) {
			rc = 1;
		} else if (opts.capacity) {
			rc = print_capacity(ta, nr_tenants);
			for (int t = 0; t < nr_tenants; t++)
				sim_table_free(&ta[t].table);
			goto cleanup;
		} else if (!opts.json) {
			printf("== %s:", set_name);
			for (int t = 0; t < nr_tenants; t++)
				if (exec_fit.nr_rows)
					printf(" %s (QoS %.2f ms, share %.3f)", ta[t].table.name,
					       ta[t].qos_ms, ta[t].share);
				else
					printf(" %s (QoS %.2f ms, share %.3f, query cost %.2f ms)",
					       ta[t].table.name, ta[t].qos_ms, ta[t].share,
					       ta[t].query_cost_ms);
			printf("\n");
		}
		for (int c = 0; !rc && c < nr_cells; c++) {
			p.policy = cells[c].entry;
			p.executors = cells[c].executors;
			if (opts.exec_per_run &&
			    exec_per_run(set_name, cells[c].name, ta, nr_tenants, &p)) {
				rc = 1;
				break;
			}
			rc |= run_policy(&p, ta, set_name, cells[c].name, !nr_run++);
		}
		for (int t = 0; t < nr_tenants; t++)
			sim_table_free(&ta[t].table);
	}
	if (opts.json)
		printf("\n]}\n");
	if (!rc && opts.mix && opts.search)
		print_summary(&mixes, all_mixes);
	if (!rc && opts.measured)
		rc = print_fidelity();
cleanup:
	if (bt.f && fclose(bt.f) && !rc) {
		fprintf(stderr, PROG ": writing %s: %m\n", opts.block_trace);
		rc = 1;
	}
	sim_trace_free(&trace);
	sim_qps_table_free(&found);
	sim_qps_table_free(&found_crossing);
	sim_loads_free(&measured_loads);
	sim_served_free(&served);
	sim_exec_fit_free(&exec_fit);
	return rc;
}
