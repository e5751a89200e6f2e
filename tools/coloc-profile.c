// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-profile: measures a model's latency profile (executor/profile.h,
 * format in models/PROFILE.md), the per-layer tables VELTAIR schedules
 * from: every layer x kernel version x core count, alone and under
 * coloc-stress at a few levels, on the live query serving runs
 * (tools/coloc-profile/measure.c), with the machine's conditions meanwhile
 * (tools/coloc-profile/solo.c). This file: the command line, the cache,
 * resuming FILE.partial (with --resume, and only the caller's own), refusing a profile measured on a busy machine
 * (--force keeps it), and checking a cached profile against a fresh
 * whole-model run before reusing it (--verify-cache). Progress goes to
 * FILE.partial every few seconds and on SIGINT/SIGTERM; a later run with
 * the same setup and --resume continues from it. A complete profile is also stored in
 * the cache (keyed by the model's files, its import options and the
 * machine: profile_key.h) and
 * reused from there. It measures in the OpenMP environment of colocd's
 * executors (run_as_served()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <oneapi/dnnl/dnnl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "oom_first.h"
#include "binpath.h"
#include "coloc/shm.h"
#include "model.h"
#include "cli.h"
#include "file_own.h"
#include "coloc-profile/profiler.h"
#include "mono_clock.h"

static struct {
	const char *model_path;
	const char *weights; /* a .model's weights file; NULL: the seed's */
	const char *output;
	struct onnx_import_opts import; /* --batch and --dim, for an .onnx MODEL */
	int iters;
	int nr_levels; /* stress levels, without 0 */
	int levels[PROFILE_MAX_LEVELS - 1];
	enum profile_stress_kind kind;
	const char *cache_dir; /* NULL: $COLOC_CACHE_DIR or the default */
	bool use_cache;
	bool resume; /* insist on resuming from FILE.partial */
	bool force; /* keep a profile measured on a busy machine */
	double busy_spread; /* the spread above which the machine was busy */
	bool verify_cache; /* time the model before reusing a cached profile */
	uint64_t cold_gap_ns; /* idle before each cold run; 0: from the model's latency */
	bool verbose;
	bool allow_foreign_owner; /* as root, on a model someone else owns */
} opt = {
	.iters = 9,
	.import = { .batch = 1 },
	.nr_levels = 3,
	.levels = { 30, 60, 100 },
	.kind = PROFILE_STRESS_LLC,
	.use_cache = true,
	.busy_spread = PROFILE_BUSY_SPREAD,
};

volatile sig_atomic_t profiler_interrupted;

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s MODEL -o FILE [OPTIONS]\n"
		"Measures the latency of every layer of MODEL (a models/*.model file, or an\n"
		"ONNX file MODEL.onnx with its own weights, see models/ONNX.md) for every\n"
		"kernel version and core count, alone and next to bin/coloc-stress at several\n"
		"levels, and writes the profile the scheduler uses (format: models/PROFILE.md).\n"
		"\n"
		"  -o, --output FILE      where to write the profile (required)\n"
		"  -w, --weights FILE     a .model's weights (models/WEIGHTS.md), as colocctl\n"
		"                         submit --weights sends them; part of the cache key\n"
		"                         (default: the weights of the model's seed)\n"
		"  -n, --iters N          timed runs per cell: their median and its 95%% CI are\n"
		"                         kept (1..1000, default 9: from 9 runs the CI need\n"
		"                         not be the extremes)\n"
		"  -L, --levels LIST      stress levels, increasing, 1..100, at most %d\n"
		"                         (default 30,60,100)\n"
		"  -k, --kind llc|membw   the coloc-stress kind (default llc)\n"
		"  -C, --cache-dir DIR    profile cache (default $COLOC_CACHE_DIR, else\n"
		"                         %s)\n"
		"      --no-cache         measure even if the cache holds this profile, and\n"
		"                         do not store it there\n"
		"  -r, --resume           continue from FILE.partial, failing if it does not\n"
		"                         match or is not this user's own (a regular file, no\n"
		"                         link, owned by the effective uid, writable by no\n"
		"                         group or other); without it FILE.partial is not\n"
		"                         read: measuring starts over and replaces it\n"
		"      --verify-cache     before reusing a cached profile, time the whole model\n"
		"                         now and measure again if it differs from the\n"
		"                         profile's whole-model time by more than the spread\n"
		"                         of either (at least %d %%): a profile made on a busy\n"
		"                         machine, or before the machine changed, is stale\n"
		"  -f, --force            keep a profile even if the machine was busy while it\n"
		"                         was measured (its whole-model runs spread over more\n"
		"                         than --busy-spread of their median); without it such\n"
		"                         a profile is refused and nothing is written\n"
		"      --busy-spread PCT  the spread (p90 - p10 of the whole-model runs, in %%\n"
		"                         of their median) above which the machine was busy\n"
		"                         (0..1000, default %d)\n"
		"      --cold-gap-ms N    the long idle gap of the cold ramp, the start of a\n"
		"                         query served alone at low load (1..1000, default\n"
		"                         9 x the model's latency, what 10 %% load leaves\n"
		"                         between queries, within %llu..%llu); the ramp's\n"
		"                         shorter gaps (1, 4, 12 ms) are measured below it\n"
		"  -b, --batch N          an .onnx MODEL's batch, for inputs whose first dim\n"
		"                         is symbolic (default 1); part of the cache key\n"
		"  -d, --dim NAME=VALUE   the value of an .onnx MODEL's symbolic dim NAME\n"
		"                         (repeat for each); part of the cache key\n"
		"  -v, --verbose          print each group's timing\n"
		"      --allow-foreign-owner  as root, measure a MODEL, weights or external\n"
		"                         data another user owns, or keeps below a directory\n"
		"                         of theirs or one others may write, such as /tmp\n"
		"                         (refused without it: copy them below directories\n"
		"                         only root may write and profile the copy)\n"
		"  -h, --help             show this help\n"
		"      --version          print coloc's release and exit\n"
		"\n"
		"Each layer is timed on the query arena serving uses, after the layers before\n"
		"it ran. Layers on fewer than all cores are measured with the stressor on the other\n"
		"cores, kept busy without touching memory for the \"alone\" column; on all\n"
		"cores the stressor shares the layer's cores. Levels alternate in rounds, so\n"
		"alone and stressed runs interleave. Before each core count and at the end the\n"
		"whole model runs in rounds, back to back (hot), then after each gap (cold):\n"
		"each gap's median cold / hot ratio is a point of the cold ramp that prices a\n"
		"block by its cores' idle time; the long gap's scales the model's solo latency.\n"
		"At the end it prints how many rows pass\n"
		"the checks (slowdown >= 1, not falling as the level rises, within the CIs)\n"
		"and the mean slowdown per level. SIGINT saves the progress in FILE.partial;\n"
		"run the same command again with --resume to continue.\n"
		"Exit status: 0 profile written, 1 failure or interrupted, 2 bad usage.\n"
		"Example: %s models/mobilenet_v2.model -o mobilenet_v2.profile --iters 9\n",
		prog, PROFILE_MAX_LEVELS - 1, PROFILE_DEFAULT_CACHE_DIR,
		(int)(PROFILE_STALE_FLOOR * 100), (int)(PROFILE_BUSY_SPREAD * 100),
		PROFILE_COLD_GAP_MIN_NS / 1000000, PROFILE_COLD_GAP_MAX_NS / 1000000, prog);
}

static int parse_levels(const char *list)
{
	char buf[256], *save = NULL, *tok;
	int n = 0;

	if (strlen(list) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", list);
	if (!buf[0] || buf[strlen(buf) - 1] == ',')
		return -EINVAL;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long v;

		if (n == PROFILE_MAX_LEVELS - 1 || cli_parse_long(tok, 1, 100, &v))
			return -EINVAL;
		opt.levels[n] = (int)v;
		if (n && opt.levels[n] <= opt.levels[n - 1])
			return -EINVAL;
		n++;
	}
	opt.nr_levels = n;
	return n ? 0 : -EINVAL;
}

static void on_signal(int sig)
{
	(void)sig;
	profiler_interrupted = 1;
}

/* What the profile shows about itself: the checks a trusted profile passes. */
static void print_check(const struct profile *p)
{
	struct profile_check ck;

	profile_check(p, &ck);
	printf("coloc-profile: check %s %s: %d of %d rows pass (slowdown >= 1, not falling as the level rises, within 95%% CIs)\n",
	       p->model_name, profile_stress_kind_name(p->stress_kind), ck.nr_pass, ck.nr_rows);
	for (int k = 1; k < p->nr_levels; k++) {
		printf("coloc-profile:   level %3d: mean slowdown %.3f, below 1: %d, falling: ",
		       p->levels[k], ck.mean_slowdown[k], ck.below_one[k]);
		if (k >= 2)
			printf("%d", ck.falling[k]);
		else
			printf("-");
		printf("\n");
	}
}

/* The profile this run would produce, with no cells measured yet. */
static struct profile *empty_profile(struct profiler *pr, const struct profile_key *key,
				     const struct profile_machine *machine)
{
	const dnnl_version_t *dv = dnnl_version();
	int levels[PROFILE_MAX_LEVELS] = { 0 }, *nr_versions;
	struct profile *p;
	struct coloc_err err = { 0 };
	time_t t = time(NULL);
	struct tm tm;

	nr_versions = calloc((size_t)pr->model->nr_layers, sizeof(*nr_versions));
	if (!nr_versions)
		return NULL;
	for (int l = 0; l < pr->model->nr_layers; l++)
		nr_versions[l] = exec_layer_nr_versions(pr->em, l);
	memcpy(levels + 1, opt.levels, (size_t)opt.nr_levels * sizeof(int));
	p = profile_new(pr->model->nr_layers, nr_versions, pr->allowed.nr, opt.nr_levels + 1,
			levels, &err);
	free(nr_versions);
	if (!p) {
		fprintf(stderr, "coloc-profile: %s\n", coloc_err_str(&err));
		return NULL;
	}
	snprintf(p->model_name, sizeof(p->model_name), "%s", pr->model->name);
	p->model_key = *key;
	p->machine = *machine;
	snprintf(p->onednn_version, sizeof(p->onednn_version), "%d.%d.%d", dv->major, dv->minor,
		 dv->patch);
	gmtime_r(&t, &tm);
	strftime(p->date, sizeof(p->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	p->stress_kind = opt.kind;
	p->iters = opt.iters;
	for (int l = 0; l < p->nr_layers; l++) {
		snprintf(p->layers[l].name, sizeof(p->layers[l].name), "%s",
			 pr->model->layers[l].name);
		for (int v = 0; v < p->layers[l].nr_versions; v++)
			snprintf(p->layers[l].version_names[v], PROFILE_VERSION_NAME_LEN, "%s",
				 exec_layer_version_name(pr->em, l, v));
	}
	return p;
}

/* A cached profile that answers this run: complete, same setup, at least as many iterations. */
static struct profile *cached_profile(const char *path, const struct profile *want)
{
	struct coloc_err err = { 0 };
	struct profile *c;

	if (access(path, F_OK))
		return NULL;
	c = profile_load(path, &err);
	if (!c) {
		fprintf(stderr, "coloc-profile: ignoring unreadable cache entry: %s\n",
			coloc_err_str(&err));
		return NULL;
	}
	if (c->model_key_old) {
		printf("coloc-profile: the cached profile %s is keyed the way before 2026-12-06 (by "
		       "the model file alone): not used, measuring again\n",
		       path);
	} else if (profile_same_setup(c, want) && !profile_nr_missing(c) &&
		   c->iters >= want->iters) {
		if (c->conditions.nr_cold > 1)
			return c;
		printf("coloc-profile: the cached profile %s records no cold ramp (format %s): stale, measuring again\n",
		       path, c->conditions.nr_cold ? "7" : "6");
	}
	profile_free(c);
	return NULL;
}

/*
 * --resume: takes over FILE.partial's cells when it is this user's own file
 * (file_own.h: anyone else's could forge the cells) and measured the same
 * thing the same way. Without --resume the partial is not read.
 */
static int resume_partial(struct profiler *pr)
{
	struct coloc_err err = { 0 };
	struct profile *old;
	struct stat st;
	char why[96];
	int fd;

	if (!opt.resume) {
		if (!lstat(pr->partial, &st))
			fprintf(stderr,
				"coloc-profile: %s exists but is not resumed without --resume: measuring from the start\n",
				pr->partial);
		return 0;
	}
	fd = file_open_own(pr->partial, O_RDONLY, 0, why, sizeof(why));
	if (fd < 0) {
		fprintf(stderr, "coloc-profile: --resume: %s %s%s\n", pr->partial,
			fd == -ENOENT ? "does not exist" : why,
			fd == -ENOENT ?
				"" :
				"; only a partial profile that is this user's own regular file, writable by no group or other, is resumed");
		return fd;
	}
	old = profile_load_fd(fd, pr->partial, &err);
	close(fd);
	if (!old || !profile_same_setup(old, pr->p) || old->iters != pr->p->iters) {
		fprintf(stderr, "coloc-profile: --resume: %s %s: %s\n", pr->partial,
			old ? "was measured with a different model, machine or options" :
			      "is unreadable",
			old ? "not resumed (measure without --resume to start over)" :
			      coloc_err_str(&err));
		profile_free(old);
		return -EINVAL;
	}
	/* old replaces the fresh profile whole, keeping the date measuring began. */
	profile_free(pr->p);
	pr->p = old;
	pr->cells_done = pr->cells_total - profile_nr_missing(old);
	fprintf(stderr, "coloc-profile: resuming from %s (%zu of %zu cells measured)\n",
		pr->partial, pr->cells_done, pr->cells_total);
	return 0;
}

/*
 * libgomp reads its environment once, before main(): unless this process
 * already runs in the OpenMP environment colocd gives its executors (their
 * spin count, no OMP_WAIT_POLICY), it runs itself again in it, so that its
 * layers wait between parallel regions as a served block's do. Returns only
 * on failure.
 */
static int run_as_served(char **argv)
{
	const char *spin = getenv("GOMP_SPINCOUNT");

	if (spin && !strcmp(spin, COLOC_EXECUTOR_GOMP_SPINCOUNT) && !getenv("OMP_WAIT_POLICY"))
		return 0;
	if (setenv("GOMP_SPINCOUNT", COLOC_EXECUTOR_GOMP_SPINCOUNT, 1) ||
	    unsetenv("OMP_WAIT_POLICY"))
		return -errno;
	execv("/proc/self/exe", argv);
	return -errno;
}

/* Checked up front: finding out after minutes of measuring would waste them. */
static int output_dir_writable(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash)
		return access(".", W_OK);
	if (slash == path)
		return access("/", W_OK);
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	return access(dir, W_OK);
}

/*
 * Finds coloc-stress, opens and loads the model on the CPUs this process
 * may use, and makes the empty profile its cells go in, keyed by the model
 * files' key and this machine. 0, or -1 with the reason printed.
 */
static int profiler_open(struct profiler *pr, struct profile_key *key,
			 struct profile_machine *machine)
{
	struct exec_options eopts = { 0 };
	struct coloc_err model_err = { 0 };
	struct coloc_err cerr = { 0 };
	cpu_set_t allowed;
	int ret;

	pr->src = (struct model_source){ .weights_fd = -1 }; /* closed as nothing on failure */
	ret = binpath_find("coloc-stress", pr->stress_bin, sizeof(pr->stress_bin));
	if (ret) {
		fprintf(stderr,
			"coloc-profile: coloc-stress not found: %s (it is built next to coloc-profile; "
			"or set COLOC_BIN to its directory)\n",
			strerror(-ret));
		return -1;
	}
	/* one descriptor: the key and the cells describe the same bytes */
	/* as root, nothing another user could have written or swapped is measured */
	opt.import.owner_rule = geteuid() == 0 && !opt.allow_foreign_owner;
	ret = model_open_keyed(opt.model_path, opt.weights, &opt.import, &pr->src, key, &model_err);
	if (ret) {
		fprintf(stderr, "coloc-profile: %s\n", coloc_err_str(&model_err));
		return -1;
	}
	pr->model = pr->src.model;
	ret = profile_machine_detect(machine);
	if (ret) {
		fprintf(stderr, "coloc-profile: %s: %s\n", opt.model_path, strerror(-ret));
		return -1;
	}
	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		perror("coloc-profile: sched_getaffinity");
		return -1;
	}
	for (int cpu = 0; cpu < CPU_SETSIZE && pr->allowed.nr < EXEC_MAX_CPUS; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			pr->allowed.cpus[pr->allowed.nr++] = cpu;

	eopts.cpus = pr->allowed;
	if (pr->src.weights_fd >= 0)
		eopts.weights_path = pr->src.weights_path;
	pr->em = exec_model_load(pr->model, &eopts, &cerr);
	if (!pr->em) {
		fprintf(stderr, "coloc-profile: %s\n", coloc_err_str(&cerr));
		return -1;
	}
	pr->q = exec_query_new_live(pr->em, NULL);
	if (!pr->q) {
		fprintf(stderr, "coloc-profile: out of memory for a query\n");
		return -1;
	}
	pr->verbose = opt.verbose;
	pr->cold_gap_ns = opt.cold_gap_ns;
	pr->p = empty_profile(pr, key, machine);
	if (!pr->p)
		return -1;
	pr->cells_total = profile_nr_missing(pr->p);
	return 0;
}

/*
 * Whether the machine was busy while pr->p was measured: its conditions
 * (printed) from the whole-model runs; then, unless --force, nothing is
 * written and the partial profile goes (its cells are as suspect).
 */
static bool measured_busy(struct profiler *pr)
{
	struct profile_conditions *c = &pr->p->conditions;

	profiler_conditions(pr, c);
	profiler_print_conditions("while measuring", c);
	if (c->spread <= opt.busy_spread)
		return false;
	if (opt.force) {
		printf("coloc-profile: kept although the machine was busy (--force)\n");
		return false;
	}
	fprintf(stderr,
		"coloc-profile: the machine was busy while measuring: the whole model's runs spread over %.0f %% of their median (more than %.0f %%; load average %.2f, steal %.1f %%), so its cells are not what this model costs alone; nothing written. Measure again on a quieter machine, or pass --force to keep such a profile\n",
		c->spread * 100, opt.busy_spread * 100, c->loadavg, c->steal * 100);
	unlink(pr->partial);
	return true;
}

/*
 * --verify-cache: the whole model timed now against the cached profile's
 * conditions. True when they differ by more than the spread (stale).
 */
static bool cached_is_stale(struct profiler *pr, const struct profile *cached)
{
	struct profile_conditions now;
	bool stale;

	if (profile_cpu_ticks_read(&pr->ticks_start))
		memset(&pr->ticks_start, 0, sizeof(pr->ticks_start));
	exec_query_reset(pr->q);
	exec_query_fill_inputs(pr->q, pr->model, pr->model->seed);
	if (profiler_time_solo(pr))
		return true;
	profiler_conditions(pr, &now);
	pr->nr_solo = pr->nr_cold = 0; /* a new profile's conditions start afresh */
	stale = profile_is_stale(cached, now.solo_ns, now.spread);
	profiler_print_conditions("now", &now);
	if (!cached->conditions.known)
		printf("coloc-profile: the cached profile records no conditions: kept\n");
	else
		printf("coloc-profile: the cached profile's whole model %.3f ms (spread %.1f %%): %s\n",
		       (double)cached->conditions.solo_ns / 1e6, cached->conditions.spread * 100,
		       stale ? "stale, measuring again" : "fresh");
	return stale;
}

/*
 * Measures every missing cell under stress (saving a partial profile as it
 * goes, and on failure or a signal), then writes the profile to opt.output
 * and, with the cache, to cache_path. 0, or -1 with the reason printed.
 */
static int measure_and_save(struct profiler *pr, const char *cache_dir, const char *cache_path)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct coloc_err cerr = { 0 };
	int ret;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pr->tty = isatty(STDERR_FILENO);
	pr->started_ns = pr->last_save_ns = coloc_now_ns();
	printf("coloc-profile: %s: %d layers, %zu cells (versions x cores 1..%d x levels 0",
	       pr->p->model_name, pr->p->nr_layers, pr->cells_total, pr->p->nr_cores);
	for (int k = 0; k < opt.nr_levels; k++)
		printf(",%d", opt.levels[k]);
	printf("), %d iters, stress %s\n", opt.iters, profile_stress_kind_name(opt.kind));
	fflush(stdout);

	ret = profiler_measure_all(pr);
	if (pr->tty)
		fputc('\n', stderr);
	if (ret || profiler_interrupted) {
		profiler_save_partial(pr);
		fprintf(stderr,
			"coloc-profile: %s: %zu of %zu cells measured, saved in %s; run the same command again with --resume to continue\n",
			profiler_interrupted ? "interrupted" : "failed",
			pr->cells_total - profile_nr_missing(pr->p), pr->cells_total, pr->partial);
		return -1;
	}
	if (measured_busy(pr))
		return -1;

	profile_update_slowdown(pr->p);
	ret = profile_save(pr->p, opt.output, &cerr);
	if (ret) {
		fprintf(stderr, "coloc-profile: %s\n", coloc_err_str(&cerr));
		return -1;
	}
	unlink(pr->partial);
	printf("coloc-profile: wrote %s in %.1f s\n", opt.output,
	       (double)(coloc_now_ns() - pr->started_ns) / 1e9);
	print_check(pr->p);
	if (opt.use_cache) {
		ret = profile_cache_dir_make(cache_dir);
		if (ret == 1)
			fprintf(stderr, "coloc-profile: %s is open to other users: chmod 700 it\n",
				cache_dir);
		if (ret >= 0)
			ret = profile_save(pr->p, cache_path, &cerr);
		if (!ret && chmod(cache_path, 0600))
			ret = coloc_err_set(&cerr, -errno, "%s: %s", cache_path, strerror(errno));
		else
			coloc_err_set(&cerr, ret, "%s: %s", cache_dir, strerror(-ret));
		if (ret)
			fprintf(stderr,
				"coloc-profile: not cached (%s); --cache-dir or COLOC_CACHE_DIR choose another place\n",
				coloc_err_str(&cerr));
		else
			printf("coloc-profile: cached as %s\n", cache_path);
	}
	return 0;
}

/*
 * The profile of opt.model_path into opt.output: the cached one when it
 * matches, else measured (resuming a partial one): main's exit status.
 */
static int profile_model(struct profiler *pr)
{
	struct profile_machine machine;
	struct profile *cached = NULL;
	struct coloc_err cerr = { 0 };
	char cache_path[PATH_MAX];
	const char *cache_dir;
	struct profile_key model_key;
	int ret, rc = 1;

	if (profiler_open(pr, &model_key, &machine))
		goto cleanup;
	cache_dir = profile_cache_dir(opt.cache_dir);
	if (profile_cache_path(cache_dir, pr->p->model_name, &model_key, &machine, cache_path,
			       sizeof(cache_path))) {
		fprintf(stderr, "coloc-profile: cache path under %s too long\n", cache_dir);
		goto cleanup;
	}
	if (opt.use_cache && access(cache_path, F_OK)) {
		int nr_old = profile_cache_old_keyed(cache_dir, pr->p->model_name, &machine);

		if (nr_old)
			printf("coloc-profile: %d profile%s of %s in %s %s keyed the way before "
			       "2026-12-06 (by the model file alone): not used, measuring\n",
			       nr_old, nr_old == 1 ? "" : "s", pr->p->model_name, cache_dir,
			       nr_old == 1 ? "is" : "are");
	}
	if (opt.use_cache && (cached = cached_profile(cache_path, pr->p)) && opt.verify_cache &&
	    cached_is_stale(pr, cached)) {
		profile_free(cached);
		cached = NULL;
	}
	if (cached) {
		ret = profile_save(cached, opt.output, &cerr);
		if (ret) {
			fprintf(stderr, "coloc-profile: %s\n", coloc_err_str(&cerr));
			goto cleanup;
		}
		printf("coloc-profile: reused the cached profile %s (measured %s, %d iters) -> %s\n",
		       cache_path, cached->date, cached->iters, opt.output);
		print_check(cached);
		rc = 0;
		goto cleanup;
	}
	if (resume_partial(pr))
		goto cleanup;
	if (measure_and_save(pr, cache_dir, cache_path))
		goto cleanup;
	rc = 0;
cleanup:
	profile_free(cached);
	profile_free(pr->p);
	if (pr->q)
		exec_query_free(pr->q);
	if (pr->em)
		exec_model_free(pr->em);
	model_source_close(&pr->src);
	return rc;
}

/* Whether the options for the model contradict its format (printed). */
static bool model_args_bad(void)
{
	bool onnx = model_path_is_onnx(opt.model_path);

	if (!onnx && model_open_opts_given(&opt.import))
		fprintf(stderr, "coloc-profile: --batch and --dim apply to an .onnx MODEL only\n");
	else if (onnx && opt.weights)
		fprintf(stderr, "coloc-profile: --weights applies to a .model MODEL only (an ONNX "
				"file holds its weights)\n");
	else
		return false;
	return true;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "iters", required_argument, NULL, 'n' },
		{ "levels", required_argument, NULL, 'L' },
		{ "kind", required_argument, NULL, 'k' },
		{ "cache-dir", required_argument, NULL, 'C' },
		{ "no-cache", no_argument, NULL, 'N' },
		{ "resume", no_argument, NULL, 'r' },
		{ "force", no_argument, NULL, 'f' },
		{ "verify-cache", no_argument, NULL, 'V' },
		{ "busy-spread", required_argument, NULL, 'B' },
		{ "cold-gap-ms", required_argument, NULL, 'G' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "weights", required_argument, NULL, 'w' },
		{ "batch", required_argument, NULL, 'b' },
		{ "dim", required_argument, NULL, 'd' },
		{ "allow-foreign-owner", no_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'R' },
		{ 0 },
	};
	struct profiler pr = { 0 };
	struct coloc_err cerr = { 0 };
	int c, ret;
	long v;

	while ((c = getopt_long(argc, argv, "o:w:n:L:k:C:rfvb:d:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			opt.output = optarg;
			break;
		case 'w':
			opt.weights = optarg;
			break;
		case 'n':
			if (cli_parse_flag("coloc-profile", "--iters", optarg, 1, 1000, &v))
				return 2;
			opt.iters = (int)v;
			break;
		case 'L':
			if (parse_levels(optarg)) {
				fprintf(stderr,
					"coloc-profile: --levels must be up to %d increasing integers in 1..100 separated by commas, not '%s'\n",
					PROFILE_MAX_LEVELS - 1, optarg);
				return 2;
			}
			break;
		case 'k':
			if (!strcmp(optarg, "llc")) {
				opt.kind = PROFILE_STRESS_LLC;
			} else if (!strcmp(optarg, "membw")) {
				opt.kind = PROFILE_STRESS_MEMBW;
			} else {
				fprintf(stderr,
					"coloc-profile: --kind must be llc or membw, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'C':
			opt.cache_dir = optarg;
			break;
		case 'N':
			opt.use_cache = false;
			break;
		case 'r':
			opt.resume = true;
			break;
		case 'f':
			opt.force = true;
			break;
		case 'V':
			opt.verify_cache = true;
			break;
		case 'B':
			if (cli_parse_flag("coloc-profile", "--busy-spread", optarg, 0, 1000, &v))
				return 2;
			opt.busy_spread = (double)v / 100;
			break;
		case 'G':
			if (cli_parse_flag("coloc-profile", "--cold-gap-ms", optarg, 1, 1000, &v))
				return 2;
			opt.cold_gap_ns = (uint64_t)v * 1000000;
			break;
		case 'v':
			opt.verbose = true;
			break;
		case 'O':
			opt.allow_foreign_owner = true;
			break;
		case 'b':
			if (cli_parse_flag("coloc-profile", "--batch", optarg, 1, 1 << 24, &v))
				return 2;
			opt.import.batch = v;
			break;
		case 'd':
			if (onnx_dim_parse(&opt.import, optarg, &cerr)) {
				fprintf(stderr, "coloc-profile: --dim: %s\n", coloc_err_str(&cerr));
				return 2;
			}
			break;
		case 'R':
			cli_print_version("coloc-profile");
			return 0;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind != argc - 1 || !opt.output) {
		fprintf(stderr, "coloc-profile: need one MODEL file and -o FILE (see --help)\n");
		return 2;
	}
	opt.model_path = argv[optind];
	/* root loading a model a member may have written: the OOM killer's first choice */
	oom_first_if_root("coloc-profile");
	if (model_args_bad())
		return 2;
	if (snprintf(pr.partial, sizeof(pr.partial), "%s.partial", opt.output) >=
	    (int)sizeof(pr.partial)) {
		fprintf(stderr, "coloc-profile: output path too long\n");
		return 2;
	}

	ret = run_as_served(argv);
	if (ret) {
		fprintf(stderr, "coloc-profile: running again with GOMP_SPINCOUNT=%s: %s\n",
			COLOC_EXECUTOR_GOMP_SPINCOUNT, strerror(-ret));
		return 1;
	}
	if (opt.verbose)
		fprintf(stderr,
			"coloc-profile: OpenMP as in colocd's executors: GOMP_SPINCOUNT=%s, "
			"OMP_WAIT_POLICY %s\n",
			getenv("GOMP_SPINCOUNT"), getenv("OMP_WAIT_POLICY") ? "set" : "unset");
	if (output_dir_writable(opt.output)) {
		fprintf(stderr, "coloc-profile: cannot write %s: %s\n", opt.output,
			strerror(errno));
		return 1;
	}
	return profile_model(&pr);
}
