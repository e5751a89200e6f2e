// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-sim's command line: the defaults, --help, and the options in one
 * table (struct simcli_option), each a name, how its argument is read (a
 * flag, a number in a range, a string, or a function of its own) and the
 * field of simcli_opts it sets; then the combinations refused, one line of
 * a table each. A new option is one entry here and a line in --help.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "profile.h"
#include "coloc_sim.h"

struct simcli_opts simcli_opts = {
	.policy = "fcfs",
	.cores = 64,
	.sockets = 1,
	.llc = 4,
	.duration_s = 10,
	.warmup_s = -1,
	.full_slowdown = SIM_DEFAULT_FULL_SLOWDOWN,
	.seed = 1,
	.confirm = -1,
	.seeds = 1,
	.executors = 1,
	.start_qps = 16,
	.tol = 0.01,
	.shared_penalty = 1,
	.speed_rho = -1,
};

struct tenant_arg simcli_tenants[POLICY_MAX_TENANTS];
int simcli_nr_tenants;

/* what an option's function returns when the program is done (--help, --version) */
#define SIMCLI_EXIT_OK (-1)

void simcli_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROG " --tenant MODEL:QOS[:SHARE] [--tenant ...] | --mix NAME|all\n"
		"                 [--policy NAME,...|all] [--cores N] [--sockets N] [--llc N]\n"
		"                 [--qps X | --search] [--duration S] [--warmup S] [--seed N]\n"
		"                 [--seeds N] [--trace FILE] [--measured FILE] [--qos-from FILE]\n"
		"                 [--block-cost-us US] [--query-cost-us US|auto]\n"
		"                 [--query-cost-sigma S] [--query-cost-in-blocks] [--shared-penalty X]\n"
		"                 [--exec-from DIR | --parts FILE]\n"
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
		"  --lanes N      N lanes of one executor process a tenant (colocd --executor-lanes\n"
		"                 with colocctl submit --executors N, 1..8 there): N queries at\n"
		"                 once, as --executors N, but one copy of the weights, warm for\n"
		"                 all lanes (with --exec-from or a query cost's warm-up); not with\n"
		"                 --executors\n"
		"  --qps X        total queries per second over all tenants, in their shares\n"
		"  --search       find the highest QPS at which >= 95%% of every tenant's queries\n"
		"                 meet QoS (doubling from %.0f, then bisection to 1%%)\n"
		"  --search-like quick|full  search as make bench-qos [ARGS=--quick] does: its\n"
		"                 points, durations, pass rule and walk (--confirm K as its,\n"
		"                 default 2, 0: none), a point decided on as few queries as\n"
		"                 measured; saturation from the served solo latency (--qos-from)\n"
		"                 or the profiled one. Ignores --duration\n"
		"  --duration S   simulated seconds of arrivals per run (default %.0f)\n"
		"  --warmup S     arrivals before S are served but not counted (default: a\n"
		"                 tenth of the duration)\n"
		"  --seed N       seed of the arrivals (default %ld)\n"
		"  --seeds N      with --search: search once per seed (seed, seed + 1, ...) and\n"
		"                 print the median, its range and the median seed's run\n"
		"  --trace FILE   arrivals from FILE, one per line: TIME_US TENANT_INDEX\n"
		"  --arrivals poisson|even  Poisson (default), or each tenant's evenly spaced at\n"
		"                 its rate from a seeded phase: no bursts, as --capacity takes\n"
		"  --late drop|serve  what the policy does with a query it cannot serve in time\n"
		"                 (default drop)\n"
		"  --level blocks|model  the level each round sees: colocd's estimate from the\n"
		"                 finished blocks' times (default, as colocd without a PMU), or\n"
		"                 the interference model's slowdown itself (a perfect sensor)\n"
		"  --full-slowdown X  slowdown of a block whose LLC domains are full of other\n"
		"                 blocks (default %.1f: VELTAIR's, an assumption; the pairs\n"
		"                 measured on our 2-core machine give ~1.0, sim/README.md)\n"
		"  --socket-slowdown X  slowdown of a block whose socket's other cores all run\n"
		"                 other blocks, past its LLC domains (memory bandwidth; default\n"
		"                 --full-slowdown's value, sim/README.md; 1: none)\n"
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
		"  --parts FILE   the serving path's parts of each model (sim/README.md; written\n"
		"                 by tools/bench-sim-latency.sh): each block's compute, dispatch,\n"
		"                 notice and copy, each query's reply and hop, drawn from their\n"
		"                 measured p50 and p95. Not with --exec-from or\n"
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
		"  --capacity     with --tenant: print the tables' ceiling and exit: each\n"
		"                 model's fastest count, its cheapest counts within QoS that\n"
		"                 its --executors keep up with, and the QPS of --cores that way\n"
		"                 over temporal's (no interference, no waiting; also without\n"
		"                 the executors' bound); with --search, also the best fixed\n"
		"                 servers of whole queries (a model's, all), searched as a policy\n"
		"  --brief        one line per policy instead of a table per tenant\n"
		"  --json         print the results as JSON\n"
		"  --version      print the version and exit\n"
		"Exit status: 0 done, 1 failed, 2 bad usage.\n",
		POLICY_MAX_TENANTS, MIXES_FROM_REPO, MODELS_FROM_REPO, PROFILE_DEFAULT_CACHE_DIR,
		simcli_opts.policy, POLICY_MAX_CPUS, simcli_opts.cores, simcli_opts.sockets,
		simcli_opts.llc, simcli_opts.start_qps, simcli_opts.duration_s, simcli_opts.seed,
		simcli_opts.full_slowdown, TABLES_FROM_REPO);
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

static int opt_policy(const char *arg)
{
	simcli_opts.policy = arg;
	if (strlen(arg) < 512)
		return 0;
	fprintf(stderr, PROG ": --policy: a list of at most 511 characters\n");
	return 1;
}

static int opt_list_policies(const char *arg)
{
	(void)arg;
	for (int i = 0; policy_entry_at(i); i++)
		printf("%-12s %s\n", policy_entry_at(i)->name, policy_entry_at(i)->description);
	return SIMCLI_EXIT_OK;
}

static int opt_tenant(const char *arg)
{
	if (simcli_nr_tenants == POLICY_MAX_TENANTS) {
		fprintf(stderr, PROG ": at most %d tenants\n", POLICY_MAX_TENANTS);
		return 1;
	}
	return parse_tenant(arg, &simcli_tenants[simcli_nr_tenants++]) ? 1 : 0;
}

/* The index of arg among the NULL-terminated words, or -1 (printed as what option wants). */
static int one_of(const char *option, const char *arg, const char *const *words)
{
	for (int i = 0; words[i]; i++)
		if (!strcmp(arg, words[i]))
			return i;
	fprintf(stderr, PROG ": %s wants %s or %s, not '%s'\n", option, words[0], words[1], arg);
	return -1;
}

static int opt_late(const char *arg)
{
	static const char *const words[] = { "drop", "serve", NULL };
	int i = one_of("--late", arg, words);

	simcli_opts.late_serve = i == 1;
	return i < 0;
}

static int opt_arrivals(const char *arg)
{
	static const char *const words[] = { "poisson", "even", NULL };
	int i = one_of("--arrivals", arg, words);

	simcli_opts.even_arrivals = i == 1;
	return i < 0;
}

static int opt_search_like(const char *arg)
{
	static const char *const words[] = { "quick", "full", NULL };
	int i = one_of("--search-like", arg, words);

	if (i >= 0)
		simcli_opts.like = i ? &sim_bq_full : &sim_bq_quick;
	return i < 0;
}

static int opt_level(const char *arg)
{
	static const char *const words[] = { "blocks", "model", NULL };
	int i = one_of("--level", arg, words);

	simcli_opts.level_source = i == 1 ? SIM_LEVEL_MODEL : SIM_LEVEL_BLOCKS;
	return i < 0;
}

static int opt_query_cost_us(const char *arg)
{
	if (!strcmp(arg, "auto")) {
		simcli_opts.query_cost_us = -1;
		return 0;
	}
	return cli_parse_flag_double(PROG, "--query-cost-us", arg, 0, 1e9,
				     &simcli_opts.query_cost_us) != 0;
}

static int opt_help(const char *arg)
{
	(void)arg;
	simcli_usage(stdout);
	return SIMCLI_EXIT_OK;
}

static int opt_version(const char *arg)
{
	(void)arg;
	cli_print_version(PROG);
	return SIMCLI_EXIT_OK;
}

enum simcli_kind {
	SIMCLI_FLAG, /* no argument: sets a bool */
	SIMCLI_LONG, /* an integer in [min, max] */
	SIMCLI_DOUBLE, /* a number in [min, max] */
	SIMCLI_STRING, /* kept as given */
	SIMCLI_CALL, /* an argument, read by call */
	SIMCLI_ACTION, /* no argument: call(NULL) */
};

struct simcli_option {
	const char *name;
	enum simcli_kind kind;
	void *field; /* in simcli_opts: bool, long, double or const char * by kind */
	double min, max;
	bool *given; /* set when the option is given; NULL: not kept */
	/* 0, 1 (bad, printed) or SIMCLI_EXIT_OK */
	int (*call)(const char *arg);
};

/* The entries by kind: the option's name, its field of simcli_opts, a number's range. */
/* clang-format off */
#define FLAG(n, f) { .name = n, .kind = SIMCLI_FLAG, .field = &simcli_opts.f }
#define STRING(n, f) { .name = n, .kind = SIMCLI_STRING, .field = &simcli_opts.f }
#define LONG(n, f, lo, hi) \
	{ .name = n, .kind = SIMCLI_LONG, .field = &simcli_opts.f, .min = lo, .max = hi }
#define DOUBLE(n, f, lo, hi) \
	{ .name = n, .kind = SIMCLI_DOUBLE, .field = &simcli_opts.f, .min = lo, .max = hi }
#define DOUBLE_GIVEN(n, f, lo, hi, g) \
	{ .name = n, .kind = SIMCLI_DOUBLE, .field = &simcli_opts.f, .min = lo, .max = hi, \
	  .given = &simcli_opts.g }
#define CALL(n, fn) { .name = n, .kind = SIMCLI_CALL, .call = fn }
#define ACTION(n, fn) { .name = n, .kind = SIMCLI_ACTION, .call = fn }
/* clang-format on */
static const struct simcli_option options[] = {
	CALL("policy", opt_policy),
	ACTION("list-policies", opt_list_policies),
	LONG("cores", cores, 1, POLICY_MAX_CPUS),
	LONG("sockets", sockets, 1, POLICY_MAX_CPUS),
	LONG("llc", llc, 1, POLICY_MAX_CPUS),
	LONG("executors", executors, 1, SIM_MAX_EXECUTORS),
	LONG("lanes", lanes, 1, SIM_MAX_EXECUTORS),
	CALL("tenant", opt_tenant),
	STRING("mix", mix),
	STRING("mixes", mixes),
	STRING("models", models),
	STRING("profile-dir", profiles),
	STRING("tables", tables),
	DOUBLE("qps", qps, 1e-6, 1e9),
	DOUBLE_GIVEN("duration", duration_s, 1e-3, 1e6, duration_given),
	DOUBLE("warmup", warmup_s, 0, 1e6),
	FLAG("search", search),
	LONG("seed", seed, 0, (double)LONG_MAX),
	LONG("seeds", seeds, 1, 64),
	STRING("trace", trace),
	CALL("arrivals", opt_arrivals),
	CALL("late", opt_late),
	CALL("level", opt_level),
	DOUBLE("full-slowdown", full_slowdown, 1, 100),
	DOUBLE_GIVEN("socket-slowdown", socket_slowdown, 1, 100, socket_given),
	STRING("measured", measured),
	STRING("qos-from", qos_from),
	DOUBLE("block-cost-us", block_cost_us, 0, 1e9),
	CALL("query-cost-us", opt_query_cost_us),
	DOUBLE("query-cost-sigma", query_cost_sigma, 0, 10),
	FLAG("query-cost-in-blocks", query_cost_in_blocks),
	DOUBLE("query-cost-warm-ms", query_cost_warm_ms, 0, 1e6),
	DOUBLE_GIVEN("shared-penalty", shared_penalty, 0.5, 100, penalty_given),
	CALL("search-like", opt_search_like),
	LONG("confirm", confirm, 0, 100),
	STRING("exec-from", exec_from),
	STRING("parts", parts),
	FLAG("exec-per-run", exec_per_run),
	STRING("block-trace", block_trace),
	DOUBLE("speed-rho", speed_rho, 0, 1),
	FLAG("scaling", print_scaling),
	FLAG("capacity", capacity),
	FLAG("brief", brief),
	FLAG("json", json),
	ACTION("help", opt_help),
	ACTION("version", opt_version),
};
#undef FLAG
#undef STRING
#undef LONG
#undef DOUBLE
#undef DOUBLE_GIVEN
#undef CALL
#undef ACTION

#define NR_OPTIONS (int)(sizeof(options) / sizeof(options[0]))

/* Applies option o with arg: 0, 1 (bad, printed) or SIMCLI_EXIT_OK. */
static int apply(const struct simcli_option *o, const char *arg)
{
	char flag[64];
	long v;

	snprintf(flag, sizeof(flag), "--%s", o->name);
	if (o->given)
		*o->given = true;
	switch (o->kind) {
	case SIMCLI_FLAG:
		*(bool *)o->field = true;
		return 0;
	case SIMCLI_LONG:
		/* LONG_MAX as a double rounds up, beyond what a long holds */
		if (cli_parse_flag(PROG, flag, arg, (long)o->min,
				   o->max >= (double)LONG_MAX ? LONG_MAX : (long)o->max, &v))
			return 1;
		*(long *)o->field = v;
		return 0;
	case SIMCLI_DOUBLE:
		return cli_parse_flag_double(PROG, flag, arg, o->min, o->max, o->field) != 0;
	case SIMCLI_STRING:
		*(const char **)o->field = arg;
		return 0;
	case SIMCLI_CALL:
	case SIMCLI_ACTION:
		return o->call(arg);
	}
	return 1;
}

int simcli_parse(int argc, char **argv)
{
	struct option long_opts[NR_OPTIONS + 1];
	int opt;

	for (int i = 0; i < NR_OPTIONS; i++)
		long_opts[i] = (struct option){ options[i].name,
						options[i].kind == SIMCLI_FLAG ||
								options[i].kind == SIMCLI_ACTION ?
							no_argument :
							required_argument,
						NULL, 256 + i };
	long_opts[NR_OPTIONS] = (struct option){ 0 };
	while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		int ret = opt == 'h' ? opt_help(NULL) :
			  opt >= 256 && opt < 256 + NR_OPTIONS ?
				       apply(&options[opt - 256], optarg) :
				       1;

		if (ret == SIMCLI_EXIT_OK)
			return 0;
		if (ret) {
			fprintf(stderr, "Try '" PROG " --help'.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	/* before the cells take their executors (simcli_build_cells) */
	if (simcli_opts.lanes && simcli_opts.executors > 1) {
		fprintf(stderr, PROG ": --lanes N is N executors as lanes of one process: not with "
				     "--executors\n");
		return 2;
	}
	if (simcli_opts.lanes)
		simcli_opts.executors = simcli_opts.lanes;
	return -1;
}

int simcli_check(void)
{
	const struct simcli_opts *o = &simcli_opts;
	const struct {
		bool refused;
		const char *why;
	} combos[] = {
		{ o->capacity && (o->mix || o->like || o->trace || o->json),
		  "--capacity reads the --tenant tables and exits: not with --mix, "
		  "--search-like, --trace or --json" },
		{ !simcli_nr_tenants == !o->mix,
		  "give --tenant MODEL:QOS[:SHARE] (one or more) or --mix NAME|all, not both" },
		{ o->trace && (o->search || o->mix),
		  "a trace names tenants by index and sets the load; it does not apply to "
		  "--search or --mix" },
		{ !o->trace && !o->search && !(o->qps > 0) && !o->capacity,
		  "give a load (--qps X), --search or --trace FILE" },
		{ o->like && !o->search, "--search-like is a way to --search: give both" },
		{ o->confirm >= 0 && !o->like,
		  "--confirm is the walk of --search-like: give both" },
		{ o->measured && !o->search, "--measured compares QoS-QPS: it needs --search" },
		{ o->qos_from && !o->mix,
		  "--qos-from gives the QoS of a mix's tenants: it needs --mix" },
		{ o->query_cost_us < 0 && !o->mix,
		  "--query-cost-us auto takes each model's solo latency as served from "
		  "bench-qos's points.tsv: it needs --mix" },
		{ o->block_trace && o->search,
		  "--block-trace writes one run's blocks: not with --search" },
		{ o->exec_per_run && !(o->exec_from && o->mix),
		  "--exec-per-run fits each mix and policy's own block log: it needs --exec-from "
		  "and --mix" },
		{ o->exec_from && o->query_cost_in_blocks,
		  "--exec-from and --query-cost-in-blocks both stretch the blocks: give one" },
		{ o->parts && (o->exec_from || o->query_cost_in_blocks),
		  "--parts spends the serving path's parts in every block: not with --exec-from "
		  "or --query-cost-in-blocks" },
		{ o->json && (o->mix || o->measured || o->brief),
		  "--json prints one tenant set's runs: not with --mix, --measured or --brief" },
	};

	for (size_t i = 0; i < sizeof(combos) / sizeof(combos[0]); i++)
		if (combos[i].refused) {
			fprintf(stderr, PROG ": %s\n", combos[i].why);
			return 2;
		}
	return 0;
}
