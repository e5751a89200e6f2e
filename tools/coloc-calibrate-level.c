// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-calibrate-level: fits this machine's PMU level model
 * (executor/include/profile/level_model.h), which colocd uses for the per-core interference
 * level where a hardware PMU counts LLC references and misses.
 *
 * A reference workload, one model's whole forward pass (exec_run_block over
 * all its layers), runs on the first --cores cores this process may use,
 * next to bin/coloc-stress on the others (spinning without touching memory
 * at level 0, the "alone" runs, as coloc-profile does). For each stress kind
 * (llc, membw) and each round, the levels 0 and --levels alternate; at each,
 * the workload's cores are counted CPU-wide with the same events colocd's
 * sensor opens (daemon/pmu.c), over --runs runs. A point is then the signals
 * colocd would compute from those counts (level_signals_from_counters) and
 * the measured level: the median run's latency over the median alone
 * latency of that kind. The fit goes to the profile cache as
 * level-MACHINEHASH.model, where colocd looks for it. Without a PMU it says
 * so and exits 1: a model is never made from anything but counted events.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "binpath.h"
#include "cli.h"
#include "executor.h"
#include "level_model.h"
#include "model_open.h"
#include "pmu.h"
#include "profile_host.h"
#include "stress_ctl.h"
#include "mono_clock.h"

#define CAL_MAX_LEVELS 8
#define CAL_MAX_ROUNDS 20
#define CAL_MAX_RUNS 1000
#define CAL_NR_KINDS 2
#define CAL_MAX_POINTS (CAL_NR_KINDS * CAL_MAX_ROUNDS * (CAL_MAX_LEVELS + 1))
/* Time given to the stressor after a level change: five of its 1 ms periods. */
#define CAL_SETTLE_NS 5000000L

static const char *const cal_kinds[CAL_NR_KINDS] = { "llc", "membw" };
/* The counters a point is taken from; DRAM fills only where the PMU counts them. */
static const enum coloc_counter cal_counters[] = { COLOC_CTR_LLC_REFS, COLOC_CTR_LLC_MISSES,
						   COLOC_CTR_DRAM_FILLS };
#define CAL_NR_COUNTERS (sizeof(cal_counters) / sizeof(cal_counters[0]))

static struct {
	const char *model_path;
	const char *output; /* NULL: the cache */
	const char *cache_dir;
	int nr_cores; /* 0: half of the allowed cores, at least 1 */
	int rounds;
	int runs;
	int nr_levels;
	int levels[CAL_MAX_LEVELS];
} opt = {
	.rounds = 3,
	.runs = 10,
	.nr_levels = 4,
	.levels = { 25, 50, 75, 100 },
};

/* One workload core's perf fds, by index in cal_counters; -1: not counted. */
struct cal_core {
	int cpu;
	int fd[CAL_NR_COUNTERS];
};

struct cal_run {
	struct exec_model *em;
	struct exec_query *q;
	int nr_layers;
	struct exec_cpuset work, stress;
	struct cal_core cores[EXEC_MAX_CPUS];
	unsigned int live_mask; /* counters open on every workload core */
	struct level_point pts[CAL_MAX_POINTS];
	uint64_t median_ns[CAL_MAX_POINTS];
	int kind_of[CAL_MAX_POINTS], level_of[CAL_MAX_POINTS];
	int nr_points;
};

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s MODEL [OPTIONS]\n"
		"Fits the PMU interference level model colocd uses on this machine: MODEL\n"
		"(a models/*.model file) runs on some cores next to bin/coloc-stress on the\n"
		"others at several levels, its cores' LLC references, LLC misses and DRAM\n"
		"fills are counted, and the level (latency over latency alone) is fitted as\n"
		"c0 + c1 * llc_miss_ratio + c2 * llc_refs_per_us + c3 * dram_gbps.\n"
		"Needs a hardware PMU (and root or perf_event_paranoid <= 0).\n"
		"\n"
		"  -c, --cores N          cores the workload runs on (default: half of those\n"
		"                         this process may use, at least 1); the stressor\n"
		"                         runs on the rest\n"
		"  -L, --levels LIST      stress levels, increasing, 1..100, at most %d\n"
		"                         (default 25,50,75,100); level 0 is always measured\n"
		"  -r, --rounds N         rounds over the levels, per stress kind (1..%d,\n"
		"                         default 3)\n"
		"  -n, --runs N           whole-model runs per point (1..%d, default 10)\n"
		"  -o, --output FILE      where to write the model (default: the cache, as\n"
		"                         level-MACHINEHASH.model, where colocd looks)\n"
		"  -C, --cache-dir DIR    profile cache (default $COLOC_CACHE_DIR, else\n"
		"                         %s)\n"
		"  -h, --help             show this help\n"
		"      --version          print coloc's release and exit\n"
		"\n"
		"Exit status: 0 model written, 1 failure (no PMU, a fit refused), 2 bad usage.\n"
		"Example: %s models/resnet50.model --cores 4 --rounds 3\n",
		prog, CAL_MAX_LEVELS, CAL_MAX_ROUNDS, CAL_MAX_RUNS, PROFILE_DEFAULT_CACHE_DIR,
		prog);
}

static int parse_levels(const char *list)
{
	char buf[256], *save = NULL;
	int n = 0;

	if (strlen(list) >= sizeof(buf) || !list[0] || list[strlen(list) - 1] == ',')
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long v;

		if (n == CAL_MAX_LEVELS || cli_parse_long(tok, 1, 100, &v))
			return -EINVAL;
		if (n && v <= opt.levels[n - 1])
			return -EINVAL;
		opt.levels[n++] = (int)v;
	}
	opt.nr_levels = n;
	return 0;
}

static int parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cores", required_argument, NULL, 'c' },
		{ "levels", required_argument, NULL, 'L' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "runs", required_argument, NULL, 'n' },
		{ "output", required_argument, NULL, 'o' },
		{ "cache-dir", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *prog = "coloc-calibrate-level";
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "c:L:r:n:o:C:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (cli_parse_flag(prog, "--cores", optarg, 1, EXEC_MAX_CPUS - 1, &v))
				return 2;
			opt.nr_cores = (int)v;
			break;
		case 'L':
			if (parse_levels(optarg)) {
				fprintf(stderr,
					"%s: --levels: want up to %d increasing numbers in 1..100, "
					"comma separated, not '%s'\n",
					prog, CAL_MAX_LEVELS, optarg);
				return 2;
			}
			break;
		case 'r':
			if (cli_parse_flag(prog, "--rounds", optarg, 1, CAL_MAX_ROUNDS, &v))
				return 2;
			opt.rounds = (int)v;
			break;
		case 'n':
			if (cli_parse_flag(prog, "--runs", optarg, 1, CAL_MAX_RUNS, &v))
				return 2;
			opt.runs = (int)v;
			break;
		case 'o':
			opt.output = optarg;
			break;
		case 'C':
			opt.cache_dir = optarg;
			break;
		case 'h':
			usage(stdout, prog);
			exit(0);
		case 'V':
			cli_print_version(prog);
			exit(0);
		default:
			usage(stderr, prog);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "%s: want exactly one MODEL (see --help)\n", prog);
		return 2;
	}
	opt.model_path = argv[optind];
	return 0;
}

/* A counter's count so far, scaled up for the time it was multiplexed out; -1 when never on. */
static double cal_read_fd(int fd)
{
	unsigned long long v[3]; /* value, time enabled, time running */

	if (read(fd, v, sizeof(v)) != sizeof(v) || !v[2])
		return -1;
	return v[2] < v[1] ? (double)v[0] * (double)v[1] / (double)v[2] : (double)v[0];
}

/* Every workload core's counters summed into sums[]; clears from live the ones not read. */
static void cal_read(const struct cal_run *r, double sums[CAL_NR_COUNTERS], unsigned int *live)
{
	for (size_t k = 0; k < CAL_NR_COUNTERS; k++) {
		sums[k] = 0;
		for (int i = 0; i < r->work.nr; i++) {
			double v = r->cores[i].fd[k] >= 0 ? cal_read_fd(r->cores[i].fd[k]) : -1;

			if (v < 0)
				*live &= ~(1u << cal_counters[k]);
			else
				sums[k] += v;
		}
	}
}

static int cal_open_counters(struct cal_run *r, const struct pmu_info *pmu)
{
	r->live_mask = 0;
	for (size_t k = 0; k < CAL_NR_COUNTERS; k++)
		if (pmu->available_mask & (1u << cal_counters[k]))
			r->live_mask |= 1u << cal_counters[k];
	for (int i = 0; i < r->work.nr; i++) {
		r->cores[i].cpu = r->work.cpus[i];
		for (size_t k = 0; k < CAL_NR_COUNTERS; k++) {
			int fd = -1;

			if (r->live_mask & (1u << cal_counters[k]))
				fd = pmu_open_counter(pmu, cal_counters[k], r->work.cpus[i]);
			/* LLC references and misses are needed; DRAM fills only where they open */
			if (fd < 0 && cal_counters[k] != COLOC_CTR_DRAM_FILLS)
				return fd == -1 ? -ENOENT : fd;
			if (fd < 0)
				r->live_mask &= ~(1u << cal_counters[k]);
			r->cores[i].fd[k] = fd;
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One point: --runs runs of the whole model at the stressor's current level. */
static int cal_point(struct cal_run *r, int kind, int level)
{
	double before[CAL_NR_COUNTERS], after[CAL_NR_COUNTERS];
	uint64_t lat[CAL_MAX_RUNS], t0, t1;
	struct coloc_counters delta = { 0 };
	struct level_point *p = &r->pts[r->nr_points];
	unsigned int live = r->live_mask;
	int ret;

	cal_read(r, before, &live);
	t0 = coloc_now_ns();
	for (int i = 0; i < opt.runs; i++) {
		struct exec_block_stats st;

		ret = exec_run_block(r->em, r->q, 0, r->nr_layers, NULL, &r->work, &st);
		if (ret)
			return ret;
		lat[i] = st.latency_ns;
	}
	t1 = coloc_now_ns();
	cal_read(r, after, &live);
	for (size_t k = 0; k < CAL_NR_COUNTERS; k++)
		*coloc_counter_at(&delta, cal_counters[k]) =
			after[k] > before[k] ? (uint64_t)(after[k] - before[k]) : 0;
	/* a counter that stopped counting would leave this point without a term the others have */
	if (live != r->live_mask)
		return -EIO;
	/* every workload core ran the model the whole time: busy time is wall x cores */
	level_signals_from_counters(&delta, live, (t1 - t0) * (uint64_t)r->work.nr, p->x);
	qsort(lat, (size_t)opt.runs, sizeof(lat[0]), cmp_u64);
	r->median_ns[r->nr_points] = lat[opt.runs / 2];
	r->kind_of[r->nr_points] = kind;
	r->level_of[r->nr_points] = level;
	r->nr_points++;
	return 0;
}

/* Levels alternate within each round, so alone and stressed runs interleave in time. */
static int cal_kind(struct cal_run *r, int kind, const char *stress_bin, struct coloc_err *err)
{
	struct timespec settle = { 0, CAL_SETTLE_NS };
	bool shared = r->stress.nr == 0;
	char cores[EXEC_MAX_CPUS * 5] = "";
	const struct exec_cpuset *on = shared ? &r->work : &r->stress;
	struct stress_ctl s;
	size_t off = 0;
	int ret;

	for (int i = 0; i < on->nr; i++)
		off += (size_t)snprintf(cores + off, sizeof(cores) - off, "%s%d", i ? "," : "",
					on->cpus[i]);
	ret = stress_ctl_start(&s, stress_bin, cores, cal_kinds[kind], shared ? "sleep" : "spin",
			       NULL, NULL, err);
	if (ret)
		return ret;
	for (int round = 0; round < opt.rounds && !ret; round++) {
		for (int k = 0; k <= opt.nr_levels && !ret; k++) {
			int level = k ? opt.levels[k - 1] : 0;

			ret = stress_ctl_set_level(&s, level, err);
			if (!ret) {
				nanosleep(&settle, NULL);
				ret = cal_point(r, kind, level);
				if (ret)
					coloc_err_set(err, ret, "a run at %s level %d failed: %s",
						      cal_kinds[kind], level,
						      ret == -EIO ? "a counter did not count "
								    "(multiplexed out by other "
								    "perf users?)" :
								    strerror(-ret));
			}
		}
	}
	if (stress_ctl_stop(&s, ret ? NULL : err) && !ret)
		ret = -ECHILD;
	for (int k = 1; k <= opt.nr_levels && !ret; k++)
		if (s.gbps[opt.levels[k - 1]] >= 0)
			printf("coloc-calibrate-level: %s level %d: the stressor moved %.2f GB/s\n",
			       cal_kinds[kind], opt.levels[k - 1], s.gbps[opt.levels[k - 1]]);
	return ret;
}

/* Each point's level: its median over the median of its kind's level-0 medians. */
static int cal_levels(struct cal_run *r)
{
	for (int kind = 0; kind < CAL_NR_KINDS; kind++) {
		uint64_t alone[CAL_MAX_ROUNDS];
		int n = 0;

		for (int i = 0; i < r->nr_points; i++)
			if (r->kind_of[i] == kind && !r->level_of[i])
				alone[n++] = r->median_ns[i];
		if (!n)
			return -ENODATA;
		qsort(alone, (size_t)n, sizeof(alone[0]), cmp_u64);
		for (int i = 0; i < r->nr_points; i++)
			if (r->kind_of[i] == kind)
				r->pts[i].level = (double)r->median_ns[i] / (double)alone[n / 2];
	}
	return 0;
}

static int cal_split_cores(struct cal_run *r)
{
	cpu_set_t allowed;
	struct exec_cpuset all = { 0 };
	int nw;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -errno;
	for (int cpu = 0; cpu < CPU_SETSIZE && all.nr < EXEC_MAX_CPUS; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			all.cpus[all.nr++] = cpu;
	nw = opt.nr_cores ? opt.nr_cores : (all.nr + 1) / 2;
	if (nw > all.nr)
		return -ERANGE;
	r->work.nr = nw;
	memcpy(r->work.cpus, all.cpus, sizeof(int) * (size_t)nw);
	r->stress.nr = all.nr - nw;
	memcpy(r->stress.cpus, all.cpus + nw, sizeof(int) * (size_t)r->stress.nr);
	return 0;
}

int main(int argc, char **argv)
{
	static struct cal_run r;
	struct exec_options eopts = { 0 };
	struct coloc_err err = { 0 };
	struct model_source src = { 0 };
	struct profile_machine machine;
	struct level_model m = { 0 };
	char stress_bin[PATH_MAX], path[PATH_MAX], note[LEVEL_MODEL_NOTE_LEN];
	const char *out;
	struct pmu_info pmu;
	int ret, rc = 1;

	ret = parse_args(argc, argv);
	if (ret)
		return ret;
	ret = pmu_detect(&pmu);
	if (ret || !pmu.present) {
		fprintf(stderr,
			"coloc-calibrate-level: no hardware PMU (perf_event_open of cycles: %s): "
			"the level model is fitted from counted LLC events; without them colocd "
			"measures the level from block slowdowns\n",
			strerror(ret ? -ret : pmu.open_errno));
		return 1;
	}
	if (!(pmu.available_mask & (1u << COLOC_CTR_LLC_REFS)) ||
	    !(pmu.available_mask & (1u << COLOC_CTR_LLC_MISSES))) {
		fprintf(stderr,
			"coloc-calibrate-level: the PMU (%s table) does not count LLC references and "
			"misses here: no level model can be fitted\n",
			pmu.table ? pmu.table : "no");
		return 1;
	}
	if (binpath_find("coloc-stress", stress_bin, sizeof(stress_bin))) {
		fprintf(stderr, "coloc-calibrate-level: coloc-stress not found (it is built next "
				"to this tool; or set COLOC_BIN to its directory)\n");
		return 1;
	}
	ret = cal_split_cores(&r);
	if (ret) {
		fprintf(stderr, "coloc-calibrate-level: --cores %d: %s\n", opt.nr_cores,
			strerror(-ret));
		return 2;
	}
	if (model_open(opt.model_path, NULL, &src, &err)) {
		fprintf(stderr, "coloc-calibrate-level: %s\n", coloc_err_str(&err));
		return 1;
	}
	ret = profile_machine_detect(&machine);
	if (ret) {
		fprintf(stderr, "coloc-calibrate-level: cannot identify this machine: %s\n",
			strerror(-ret));
		goto cleanup;
	}
	m.machine = profile_machine_hash(&machine);
	eopts.cpus = r.work;
	r.em = exec_model_load(src.model, &eopts, &err);
	r.q = r.em ? exec_query_new(r.em) : NULL;
	if (!r.q) {
		fprintf(stderr, "coloc-calibrate-level: %s\n",
			r.em ? "out of memory for a query" : coloc_err_str(&err));
		goto cleanup;
	}
	r.nr_layers = exec_model_graph(r.em)->nr_layers;
	exec_query_fill_inputs(r.q, src.model, 1);
	ret = cal_open_counters(&r, &pmu);
	if (ret) {
		fprintf(stderr, "coloc-calibrate-level: cannot count LLC events on cpu %d: %s\n",
			r.work.cpus[0], strerror(-ret));
		goto cleanup;
	}
	printf("coloc-calibrate-level: %s on %d cores, stress on %d, levels 0", opt.model_path,
	       r.work.nr, r.stress.nr);
	for (int k = 0; k < opt.nr_levels; k++)
		printf(",%d", opt.levels[k]);
	printf(", %d rounds of %d runs per kind\n", opt.rounds, opt.runs);
	fflush(stdout);
	for (int kind = 0; kind < CAL_NR_KINDS; kind++) {
		ret = cal_kind(&r, kind, stress_bin, &err);
		if (ret) {
			fprintf(stderr, "coloc-calibrate-level: %s\n", coloc_err_str(&err));
			goto cleanup;
		}
	}
	if (cal_levels(&r) || level_model_fit(r.pts, r.nr_points, &m, note, sizeof(note), &err)) {
		fprintf(stderr, "coloc-calibrate-level: no model: %s\n",
			err.code ? coloc_err_str(&err) : "no alone runs");
		goto cleanup;
	}
	for (int i = 0; i < r.nr_points; i++)
		printf("  %-5s level %3d: miss ratio %.4f, %.1f refs/us, %.2f GB/s -> slowdown "
		       "%.3f\n",
		       cal_kinds[r.kind_of[i]], r.level_of[i], r.pts[i].x[0], r.pts[i].x[1],
		       r.pts[i].x[2], r.pts[i].level);
	out = opt.output;
	if (!out) {
		const char *dir = profile_cache_dir(opt.cache_dir);
		int made;

		if (level_model_cache_path(dir, m.machine, path, sizeof(path))) {
			fprintf(stderr, "coloc-calibrate-level: cache path too long\n");
			goto cleanup;
		}
		made = profile_cache_dir_make(dir);
		if (made < 0) {
			fprintf(stderr, "coloc-calibrate-level: %s: %s\n", dir, strerror(-made));
			goto cleanup;
		}
		if (made == 1)
			fprintf(stderr, "coloc-calibrate-level: %s is open to other users: chmod 700 it\n",
				dir);
		out = path;
	}
	if (level_model_save(&m, out, &err)) {
		fprintf(stderr, "coloc-calibrate-level: %s\n", coloc_err_str(&err));
		goto cleanup;
	}
	printf("coloc-calibrate-level: %d points, %s; R² %.3f, RMS %.3f -> %s\n", m.nr_points, note,
	       m.r2, m.rms, out);
	rc = 0;
cleanup:
	for (int i = 0; i < r.work.nr; i++)
		for (size_t k = 0; k < CAL_NR_COUNTERS; k++)
			if (r.cores[i].fd[k] > 0)
				close(r.cores[i].fd[k]);
	exec_query_free(r.q);
	exec_model_free(r.em);
	model_source_close(&src);
	return rc;
}
