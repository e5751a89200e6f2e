// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-bench-executor (make bench-executor): what the executor's kernel
 * versions buy over oneDNN's defaults, measured side by side in one run.
 *
 * Per model: median solo latency and GFLOP/s at 1 and 2 cores of (a) the
 * baseline, every layer on oneDNN's first implementation with layouts left
 * to oneDNN (exec_model_load_default), and (b) the fastest version of each
 * layer, measured first; the runs of (a) and (b) alternate so load on the
 * machine hits both alike, and the result is the ratio of medians. Then the
 * fraction of this machine's single-core peak (a big 3x3 conv, best
 * version) the model's large conv layers reach, and resident memory
 * against the fp32 weights. Last, the cost of switching a block's core set
 * (p50/p99 over many switches). Every figure depends on the CPU and on the
 * ISA oneDNN dispatches to, so the run opens with both, and the peak lines
 * name the oneDNN implementation each version ran.
 */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <oneapi/dnnl/dnnl.h>
#include "executor.h"
#include "profile_host.h"
#include "cli.h"

static struct bench_opts {
	int iters; /* alternating runs per configuration */
	int pick_reps; /* runs per layer and version when picking the fastest */
	const char *models_glob;
} opts = {
	.iters = 7,
	.pick_reps = 3,
	.models_glob = "models/*.model",
};

/* Models above this many MACs get fewer runs, to keep the default run short. */
#define BIG_MODEL_MACS 50000000000ull
#define LARGE_CONV_MACS 50000000ull

static const char peak_model[] = "model peak_conv3x3\n"
				 "seed 1\n"
				 "macs 1.85G\n"
				 "params 590K\n"
				 "input x shape=1x256x56x56\n"
				 "conv c out=256 k=3 pad=1\n"
				 "end\n";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: coloc-bench-executor [options] [MODEL...]\n"
		"Latency and GFLOP/s of each model (default: models/*.model) at 1 and 2 cores,\n"
		"best kernel versions vs oneDNN's default implementation, as a ratio; the share\n"
		"of single-core peak its large convs reach; memory; block-switch cost.\n"
		"\n"
		"  -n, --iters N   alternating runs per configuration, 1..1000 (default 7;\n"
		"                  models above 50 GMACs use ceil(N/2))\n"
		"  -r, --reps N    runs per layer and version when picking versions (default 3)\n"
		"  -h, --help      this help\n"
		"      --version   print coloc's release and exit\n"
		"\n"
		"Exit status: 0 ok, 1 a model failed, 2 bad usage.\n");
}

static size_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * (size_t)sysconf(_SC_PAGESIZE);
}

static double gflops(uint64_t macs, uint64_t ns)
{
	return ns ? 2.0 * (double)macs / (double)ns : 0.0;
}

static void peak_line(const char *version, const char *impl, uint64_t macs, uint64_t ns,
		      double *peak)
{
	if (gflops(macs, ns) > *peak)
		*peak = gflops(macs, ns);
	printf("  peak conv 3x3 256->256 56x56, 1 core, %-14s %-36s %7.1f GFLOP/s\n", version, impl,
	       gflops(macs, ns));
}

/*
 * Single-core peak: the best GFLOP/s of a 256->256 3x3 conv on 56x56 over
 * every version and oneDNN's default.
 */
static int measure_peak(double *peak)
{
	struct exec_options eo = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct coloc_err cerr = { 0 };
	struct coloc_err model_err = { 0 };
	struct model *m = model_parse("peak", peak_model, sizeof(peak_model) - 1, &model_err);
	struct exec_model *em = m ? exec_model_load(m, &eo, &cerr) : NULL;
	struct exec_model *def = em ? exec_model_load_default(m, &eo, &cerr) : NULL;
	struct exec_query *q = def ? exec_query_new(em) : NULL;
	struct exec_query *qd = q ? exec_query_new(def) : NULL;
	uint64_t ns;
	int ret = -EINVAL;

	*peak = 0.0;
	if (!qd) {
		fprintf(stderr, "coloc-bench-executor: peak conv: %s\n",
			m ? coloc_err_str(&cerr) : coloc_err_str(&model_err));
		goto out;
	}
	exec_query_fill_inputs(q, m, 1);
	exec_query_fill_inputs(qd, m, 1);
	for (int v = 0; v < exec_layer_nr_versions(em, 1); v++) {
		ret = exec_measure_block(em, q, 1, 2, &v, &eo.cpus, 9, &ns);
		if (ret)
			goto out;
		peak_line(exec_layer_version_name(em, 1, v), exec_layer_impl(em, 1, v, 1),
			  m->layers[1].macs, ns, peak);
	}
	ret = exec_measure_block(def, qd, 1, 2, NULL, &eo.cpus, 9, &ns);
	if (!ret)
		peak_line("onednn-default", exec_layer_impl(def, 1, 0, 1), m->layers[1].macs, ns,
			  peak);
out:
	exec_query_free(qd);
	exec_query_free(q);
	exec_model_free(def);
	exec_model_free(em);
	model_free(m);
	return ret;
}

/* Which machine the figures are from: they hold for this CPU and ISA only. */
static void print_machine(void)
{
	const dnnl_version_t *dv = dnnl_version();
	struct profile_machine pm;

	if (profile_machine_detect(&pm)) {
		printf("measured on: unknown CPU\n");
		return;
	}
	printf("measured on: %s, %d online CPUs, oneDNN %d.%d.%d dispatching to %s\n", pm.cpu_model,
	       pm.nr_cores, dv->major, dv->minor, dv->patch, pm.isa);
}

/* Alternating runs of the baseline and the best versions; medians of each. */
static int compare(struct exec_model *def, struct exec_query *qd, struct exec_model *em,
		   struct exec_query *q, const int *versions, const struct exec_cpuset *cores,
		   int iters, uint64_t *def_ns, uint64_t *best_ns)
{
	int n = exec_model_graph(em)->nr_layers, ret = 0;
	uint64_t *a = calloc((size_t)iters, sizeof(*a)), *b = calloc((size_t)iters, sizeof(*b));

	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	for (int i = 0; i < iters && !ret; i++) {
		struct exec_block_stats sa, sb;

		ret = exec_run_block(def, qd, 0, n, NULL, cores, &sa);
		if (!ret)
			ret = exec_run_block(em, q, 0, n, versions, cores, &sb);
		a[i] = sa.latency_ns;
		b[i] = sb.latency_ns;
	}
	*def_ns = exec_median_u64(a, iters);
	*best_ns = exec_median_u64(b, iters);
	free(a);
	free(b);
	return ret;
}

static int bench_model(const char *path, double peak)
{
	struct exec_options eo = { 0 };
	struct exec_model *em = NULL, *def = NULL;
	struct exec_query *q = NULL, *qd = NULL;
	size_t rss0, rss1, weights;
	int *versions = NULL, nr_cores = 0, ret = -EINVAL, iters, reps;
	bool big;
	uint64_t *layer_ns = NULL;
	struct coloc_err cerr = { 0 };
	struct coloc_err model_err = { 0 };
	struct model *m = model_load(path, &model_err);

	if (!m) {
		fprintf(stderr, "coloc-bench-executor: %s\n", coloc_err_str(&model_err));
		return -EINVAL;
	}
	big = m->macs > BIG_MODEL_MACS;
	iters = big ? (opts.iters + 1) / 2 : opts.iters;
	reps = big ? 1 : opts.pick_reps;
	weights = (size_t)m->params * sizeof(float);
	for (int c = 0; c < 2; c++)
		if (exec_cpu_online(c))
			eo.cpus.cpus[eo.cpus.nr++] = c;
	/* Give freed heap back first, or the load reuses it and the delta shrinks. */
	malloc_trim(0);
	rss0 = rss_bytes();
	em = exec_model_load(m, &eo, &cerr);
	malloc_trim(0);
	rss1 = rss_bytes();
	if (em)
		def = exec_model_load_default(m, &eo, &cerr);
	if (!def) {
		fprintf(stderr, "coloc-bench-executor: %s: %s\n", path, coloc_err_str(&cerr));
		goto out;
	}
	q = exec_query_new(em);
	qd = exec_query_new(def);
	versions = calloc((size_t)m->nr_layers, sizeof(int));
	layer_ns = calloc((size_t)m->nr_layers, sizeof(uint64_t));
	ret = -ENOMEM;
	if (!q || !qd || !versions || !layer_ns)
		goto out;
	exec_query_fill_inputs(q, m, m->seed);
	exec_query_fill_inputs(qd, m, m->seed);
	printf("%s: %.2f GMACs, %.1f MB fp32 weights; resident %.1f MB (%.2fx weights), "
	       "RSS delta at load %.1f MB (%.2fx)\n",
	       m->name, m->macs / 1e9, weights / 1e6, exec_model_resident_bytes(em) / 1e6,
	       (double)exec_model_resident_bytes(em) / (double)weights,
	       ((double)rss1 - (double)rss0) / 1e6,
	       ((double)rss1 - (double)rss0) / (double)weights);
	for (nr_cores = 1; nr_cores <= eo.cpus.nr; nr_cores++) {
		struct exec_cpuset cores = { .nr = nr_cores, .cpus = { 0, 1 } };
		uint64_t def_ns, best_ns, conv_macs = 0, conv_ns = 0;
		double worst = 1e9;
		int nr_large = 0;

		ret = exec_pick_fastest(em, q, &cores, reps, versions, layer_ns);
		if (!ret)
			ret = compare(def, qd, em, q, versions, &cores, iters, &def_ns, &best_ns);
		if (ret) {
			fprintf(stderr, "coloc-bench-executor: %s: run failed: %s\n", m->name,
				strerror(-ret));
			goto out;
		}
		printf("  %d core%s: onednn-default %9.2f ms %6.1f GFLOP/s | best versions %9.2f ms "
		       "%6.1f GFLOP/s | speedup %.2fx (median of %d alternating runs)\n",
		       nr_cores, nr_cores > 1 ? "s" : " ", def_ns / 1e6, gflops(m->macs, def_ns),
		       best_ns / 1e6, gflops(m->macs, best_ns), (double)def_ns / (double)best_ns,
		       iters);
		if (nr_cores != 1 || peak <= 0.0)
			continue;
		for (int li = 0; li < m->nr_layers; li++) {
			const struct model_layer *l = &m->layers[li];
			double g;

			if (l->op != MODEL_OP_CONV || l->macs < LARGE_CONV_MACS)
				continue;
			g = gflops(l->macs, layer_ns[li]);
			worst = g < worst ? g : worst;
			conv_macs += l->macs;
			conv_ns += layer_ns[li];
			nr_large++;
		}
		if (nr_large)
			printf("  large convs (>= %llu MMACs, %d layers), 1 core, best versions: "
			       "%.1f GFLOP/s = %.0f%% of peak (worst layer %.0f%%)\n",
			       LARGE_CONV_MACS / 1000000ull, nr_large, gflops(conv_macs, conv_ns),
			       100.0 * gflops(conv_macs, conv_ns) / peak, 100.0 * worst / peak);
	}
	ret = 0;
out:
	free(layer_ns);
	free(versions);
	exec_query_free(qd);
	exec_query_free(q);
	exec_model_free(def);
	exec_model_free(em);
	model_free(m);
	return ret;
}

/* Block-switch cost: alternate core sets on an empty block (the input layer). */
static int measure_switch(void)
{
	struct exec_options eo = { 0 };
	struct exec_cpuset sets[3] = { { .nr = 1, .cpus = { 0 } },
				       { .nr = 2, .cpus = { 0, 1 } },
				       { .nr = 1, .cpus = { 1 } } };
	enum { RUNS = 2000 };
	uint64_t *sw = calloc(RUNS, sizeof(*sw));
	struct coloc_err cerr = { 0 };
	struct model *m = model_parse("peak", peak_model, sizeof(peak_model) - 1, NULL);
	struct exec_model *em;
	struct exec_query *q;
	int ret = 0;

	if (!m || !sw || !exec_cpu_online(1)) {
		free(sw);
		model_free(m);
		printf("block switch: needs 2 online cpus, skipped\n");
		return 0;
	}
	eo.cpus = sets[1];
	em = exec_model_load(m, &eo, &cerr);
	if (!em)
		fprintf(stderr, "coloc-bench-executor: block switch: %s\n", coloc_err_str(&cerr));
	q = em ? exec_query_new(em) : NULL;
	for (int i = 0; i < RUNS && q && !ret; i++) {
		struct exec_block_stats st;

		ret = exec_run_block(em, q, 0, 1, NULL, &sets[i % 3], &st);
		sw[i] = st.switch_ns;
	}
	if (q && !ret) {
		exec_median_u64(sw, RUNS);
		printf("block switch (re-pinning the team to a new core set), %d switches: "
		       "p50 %.1f us, p99 %.1f us, max %.1f us\n",
		       RUNS, sw[RUNS / 2] / 1e3, sw[RUNS * 99 / 100] / 1e3, sw[RUNS - 1] / 1e3);
	}
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
	free(sw);
	return q ? ret : -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "iters", required_argument, NULL, 'n' },
		{ "reps", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'R' },
		{ 0 },
	};
	glob_t g = { 0 };
	double peak;
	int c, failed = 0;
	long v;

	while ((c = getopt_long(argc, argv, "n:r:h", long_opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (cli_parse_flag("coloc-bench-executor", "--iters", optarg, 1, 1000, &v))
				return 2;
			opts.iters = (int)v;
			break;
		case 'r':
			if (cli_parse_flag("coloc-bench-executor", "--reps", optarg, 1, 1000, &v))
				return 2;
			opts.pick_reps = (int)v;
			break;
		case 'R':
			cli_print_version("coloc-bench-executor");
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind == argc && glob(opts.models_glob, 0, NULL, &g)) {
		fprintf(stderr,
			"coloc-bench-executor: no models match %s (run from the repo root)\n",
			opts.models_glob);
		return 2;
	}
	printf("coloc-bench-executor: medians; ratios are onednn-default / best, measured "
	       "side by side\n");
	print_machine();
	if (measure_peak(&peak))
		failed = 1;
	printf("single-core peak (best version of a big 3x3 conv): %.1f GFLOP/s\n", peak);
	if (optind < argc) {
		for (int i = optind; i < argc; i++)
			failed |= bench_model(argv[i], peak) != 0;
	} else {
		for (size_t i = 0; i < g.gl_pathc; i++)
			failed |= bench_model(g.gl_pathv[i], peak) != 0;
		globfree(&g);
	}
	failed |= measure_switch() != 0;
	return failed ? 1 : 0;
}
