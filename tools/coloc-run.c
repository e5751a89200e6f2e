// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-run: runs one model alone on chosen cores through the executor and
 * prints per-layer and total latency (median of --iters runs) and GFLOP/s
 * (2 x MACs / time), or lists each layer's kernel versions and the oneDNN
 * implementation each runs. The quickest way to see what the executor does
 * with a model before the daemon schedules it. The whole model runs as
 * colocd's executors serve it (activations planned by liveness).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "oom_first.h"
#include "executor.h"
#include "cli.h"
#include "file_own.h"
#include "model_open.h"
#include "mono_clock.h"

/* How a run after --gap-ms starts (--wait). */
enum gap_wait {
	GAP_SLEEP, /* the caller sleeps the gap itself; timed from its wake-up */
	GAP_CALLER, /* a doorbell another thread rings; the caller alone sleeps on it */
	GAP_TEAM, /* the same doorbell, the team parked on it (exec_team_wait) */
};

static const char *const gap_wait_names[] = { "sleep", "caller", "team" };

static struct run_opts {
	const char *model_path;
	const char *cores; /* NULL: every online CPU */
	const char *kernel; /* "auto", a version name, or an index */
	const char *weights; /* NULL: generated from the model's seed */
	const char *save_weights; /* write the generated weights there and exit */
	const char *input; /* raw fp32 of every input layer, in order; NULL: from the seed */
	const char *output; /* write every output there (model_io_layout order), raw fp32 */
	struct onnx_import_opts import; /* --batch and --dim, for an .onnx MODEL */
	int iters;
	int gap_ms; /* idle before each whole-model run, as between served queries */
	enum gap_wait wait; /* how the run after a gap is started */
	const char *times; /* each run after a gap: its start and latency, one a line */
	bool json;
	bool list_versions;
	bool allow_foreign_owner; /* as root, on a model someone else could write */
} opts = {
	.kernel = "0",
	.import = { .batch = 1 },
	.iters = 10,
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: coloc-run MODEL [options]\n"
		"Runs MODEL (a model file, see models/, or an ONNX file MODEL.onnx, see\n"
		"models/ONNX.md) alone and prints per-layer and total latency (median of the\n"
		"runs) and GFLOP/s.\n"
		"\n"
		"  -c, --cores LIST      CPUs to run on, e.g. 0-3,6 (default: all online)\n"
		"  -k, --kernel V        kernel version per layer: auto (fastest measured on\n"
		"                        these cores, in passes through the whole model as\n"
		"                        coloc-profile measures), a name such as row-split,\n"
		"                        or an index; layers without it run version 0\n"
		"                        (default: 0). Which versions a layer has depends on\n"
		"                        the CPU: see -l\n"
		"  -n, --iters N         runs to take the median of, 1..100000 (default: 10)\n"
		"  -g, --gap-ms N        idle N ms (0..10000) before each run of the whole model, as\n"
		"                        a served query after a quiet spell: its threads and cores\n"
		"                        have gone idle (default: 0, back to back)\n"
		"  -W, --wait MODE       how a run after a gap starts: sleep (the caller sleeps\n"
		"                        the gap, timed from its wake-up), caller (another thread\n"
		"                        rings a futex doorbell after the gap, as colocd does, and\n"
		"                        only the caller sleeps on it; timed from the ring), team\n"
		"                        (the same, the whole OpenMP team parked on the doorbell,\n"
		"                        as coloc-executor waits). Default: sleep\n"
		"  -t, --times FILE      with --gap-ms, write each run's start (CLOCK_MONOTONIC ns,\n"
		"                        the clock of colocd's stamps and of tracefs' mono clock)\n"
		"                        and its latency in ms to FILE, one run a line\n"
		"  -j, --json            print JSON instead of a table\n"
		"  -l, --list-versions   list each layer's versions and oneDNN implementations\n"
		"  -w, --weights FILE    load the weights from FILE (see models/WEIGHTS.md)\n"
		"                        instead of generating them from the model's seed\n"
		"  -S, --save-weights FILE\n"
		"                        write the model's generated weights to FILE in that\n"
		"                        format and exit\n"
		"  -i, --input FILE      read the inputs from FILE: raw little-endian fp32, every\n"
		"                        input layer's values in layer order, row-major (token\n"
		"                        ids as floats); default: generated from the seed\n"
		"  -o, --output FILE     write the outputs of the final timed run to FILE as\n"
		"                        raw little-endian fp32, row-major: every layer no\n"
		"                        other layer reads, in layer order, one after the\n"
		"                        other (what colocd returns a client)\n"
		"  -b, --batch N         an .onnx MODEL's batch, for inputs whose first dim is\n"
		"                        symbolic (default: 1)\n"
		"  -d, --dim NAME=VALUE  the value of an .onnx MODEL's symbolic dim NAME, e.g.\n"
		"                        --dim sequence=128 (repeat for each)\n"
		"      --allow-foreign-owner  as root, run a MODEL, weights or external data\n"
		"                        another user owns, or keeps below a directory of\n"
		"                        theirs or one others may write, such as /tmp\n"
		"                        (refused without it: copy them below directories\n"
		"                        only root may write)\n"
		"  -h, --help            this help\n"
		"      --version         print coloc's release and exit\n"
		"\n"
		"Exit status: 0 ok, 1 the model failed to load or run, 2 bad usage.\n"
		"Example: coloc-run models/resnet50.model --cores 0-1 --kernel auto --iters 5\n"
		"         coloc-run models/resnet50.model --save-weights /tmp/r50.wt\n"
		"         coloc-run bert.onnx --dim sequence=128 --cores 0\n"
		"         coloc-run m.onnx --input x.f32 --output y.f32 --iters 1\n");
}

/* Versions per layer from --kernel (not auto): a name or an index. */
static int versions_from_option(const struct exec_model *em, const struct model *m, int *versions)
{
	long idx;
	bool any = false;

	if (cli_all_digits(opts.kernel)) {
		if (cli_parse_long(opts.kernel, 0, EXEC_MAX_VERSIONS - 1, &idx)) {
			fprintf(stderr, "coloc-run: version index must be in 0..%d\n",
				EXEC_MAX_VERSIONS - 1);
			return -EINVAL;
		}
		for (int li = 0; li < m->nr_layers; li++) {
			versions[li] = idx < exec_layer_nr_versions(em, li) ? (int)idx : 0;
			any |= versions[li] == idx;
		}
	} else {
		for (int li = 0; li < m->nr_layers; li++) {
			int v = exec_layer_version_index(em, li, opts.kernel);

			versions[li] = v < 0 ? 0 : v;
			any |= v >= 0;
		}
	}
	if (!any) {
		fprintf(stderr,
			"coloc-run: no layer has version '%s' (see --list-versions for names)\n",
			opts.kernel);
		return -EINVAL;
	}
	return 0;
}

static int list_versions(const struct exec_model *em, const struct model *m, int nr_cores)
{
	json_object *root = opts.json ? json_object_new_array() : NULL;

	for (int li = 0; li < m->nr_layers; li++) {
		const struct model_layer *l = &m->layers[li];
		json_object *jl = NULL, *jv = NULL;

		if (root) {
			jl = json_object_new_object();
			jv = json_object_new_array();
			json_object_object_add(jl, "layer", json_object_new_string(l->name));
			json_object_object_add(jl, "op",
					       json_object_new_string(model_op_name(l->op)));
			json_object_object_add(jl, "versions", jv);
			json_object_array_add(root, jl);
		}
		for (int v = 0; v < exec_layer_nr_versions(em, li); v++) {
			const char *name = exec_layer_version_name(em, li, v);
			const char *impl = exec_layer_impl(em, li, v, nr_cores);

			if (root) {
				json_object *o = json_object_new_object();

				json_object_object_add(o, "index", json_object_new_int(v));
				json_object_object_add(o, "name", json_object_new_string(name));
				json_object_object_add(o, "impl", json_object_new_string(impl));
				json_object_array_add(jv, o);
			} else {
				printf("%4d %-24s %-10s %d %-14s %s\n", li, l->name,
				       model_op_name(l->op), v, name, impl);
			}
		}
	}
	if (root) {
		printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
		json_object_put(root);
	}
	return 0;
}

/* Fills every input layer of q from opts.input; the file must hold exactly their values. */
static int read_inputs(struct exec_query *q, const struct model *m)
{
	FILE *f = fopen(opts.input, "rb");
	int64_t want = 0;
	int ret = 0;

	if (!f) {
		ret = -errno;
		fprintf(stderr, "coloc-run: --input %s: %s\n", opts.input, strerror(-ret));
		return ret;
	}
	for (int li = 0; li < m->nr_layers && !ret; li++) {
		int64_t n = model_shape_elems(&m->layers[li].out);

		if (m->layers[li].op != MODEL_OP_INPUT)
			continue;
		want += n;
		if (fread(exec_query_input(q, li), sizeof(float), (size_t)n, f) != (size_t)n)
			ret = -EINVAL;
	}
	if (!ret && fgetc(f) != EOF)
		ret = -EINVAL;
	if (ret)
		fprintf(stderr,
			"coloc-run: --input %s: expected exactly %lld fp32 values (%lld bytes) "
			"for %s's input layers\n",
			opts.input, (long long)want, (long long)want * 4, m->name);
	fclose(f);
	return ret;
}

/*
 * Writes every output of q (already run) to opts.output, in
 * model_io_layout() order (the layers no later layer reads, in layer
 * order), each dense, one after the other: what colocd returns a client.
 */
static int write_output(const struct exec_query *q, const struct model *m)
{
	struct model_io_layout io;
	struct coloc_err err = { 0 };
	float *out = NULL;
	FILE *f = NULL;
	int ret = model_io_layout(m, &io, &err);

	if (ret) {
		fprintf(stderr, "coloc-run: %s\n", coloc_err_str(&err));
		return ret;
	}
	if (io.out_bytes > SIZE_MAX || !(out = malloc(io.out_bytes ? io.out_bytes : 1))) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < io.nr_outputs && !ret; i++) {
		const struct model_io_tensor *t = &io.outputs[i];

		ret = exec_query_read_output(q, t->layer, out + t->offset / sizeof(float),
					     t->bytes / sizeof(float));
		if (ret)
			fprintf(stderr, "coloc-run: reading %s's output %s failed: %s\n", m->name,
				m->layers[t->layer].name, strerror(-ret));
	}
	if (ret)
		goto out;
	errno = 0;
	f = fopen(opts.output, "wb");
	if (!f || fwrite(out, 1, io.out_bytes, f) != io.out_bytes) {
		ret = errno ? -errno : -EIO;
		fprintf(stderr, "coloc-run: --output %s: %s\n", opts.output, strerror(-ret));
	}
	if (f && fclose(f) && !ret) {
		ret = -errno;
		fprintf(stderr, "coloc-run: --output %s: %s\n", opts.output, strerror(-ret));
	}
out:
	free(out);
	model_io_layout_free(&io);
	return ret;
}

static double gflops(uint64_t macs, uint64_t ns)
{
	return ns ? 2.0 * (double)macs / (double)ns : 0.0;
}

/* The doorbell of --wait caller/team: rung after each gap, as colocd rings an executor's. */
struct doorbell {
	uint32_t seq; /* the futex word the runner waits on */
	uint32_t done; /* the runner's count of finished runs, which the ringer waits on */
	uint64_t rung_ns; /* when seq last changed */
	int runs;
};

static void *ring_after_gaps(void *arg)
{
	struct doorbell *b = arg;
	const struct timespec gap = { .tv_sec = opts.gap_ms / 1000,
				      .tv_nsec = (long)(opts.gap_ms % 1000) * 1000000 };

	for (uint32_t r = 0; r < (uint32_t)b->runs; r++) {
		uint32_t done;

		while ((done = __atomic_load_n(&b->done, __ATOMIC_ACQUIRE)) < r)
			syscall(SYS_futex, &b->done, FUTEX_WAIT, done, NULL, NULL, 0);
		nanosleep(&gap, NULL);
		__atomic_store_n(&b->rung_ns, coloc_now_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(&b->seq, r + 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &b->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	return NULL;
}

/* --times: each run's start and latency, in run order (before lat is sorted). */
static int write_times(const uint64_t *starts, const uint64_t *lat)
{
	/* only a file of our own: no link, FIFO or other user's file where root writes
	 * (docs/security-submit.md) */
	char why[128];
	int fd = file_open_own(opts.times, O_WRONLY | O_CREAT, 0644, why, sizeof(why));
	FILE *f;
	int ret = 0;

	if (fd < 0) {
		fprintf(stderr, "coloc-run: will not write %s: it %s\n", opts.times, why);
		return fd;
	}
	if (ftruncate(fd, 0) || !(f = fdopen(fd, "w"))) {
		ret = -errno;
		fprintf(stderr, "coloc-run: cannot write %s: %s\n", opts.times, strerror(errno));
		close(fd);
		return ret;
	}
	fprintf(f, "start_ns\tlatency_ms\n");
	for (int r = 0; r < opts.iters; r++)
		fprintf(f, "%llu\t%.3f\n", (unsigned long long)starts[r], lat[r] / 1e6);
	if (fclose(f)) {
		ret = -errno;
		fprintf(stderr, "coloc-run: cannot write %s: %s\n", opts.times, strerror(errno));
	}
	return ret;
}

/*
 * The whole model's median and p95 over --iters runs, each after --gap-ms
 * of idle, started as --wait says.
 */
static int measure_after_gaps(struct exec_model *em, struct exec_query *q, const int *versions,
			      const struct exec_cpuset *cores, uint64_t *median_ns,
			      uint64_t *p95_ns)
{
	const struct timespec gap = { .tv_sec = opts.gap_ms / 1000,
				      .tv_nsec = (long)(opts.gap_ms % 1000) * 1000000 };
	uint64_t *lat = calloc((size_t)opts.iters, sizeof(*lat));
	uint64_t *starts = calloc((size_t)opts.iters, sizeof(*starts));
	struct doorbell bell = { .runs = opts.iters };
	pthread_t ringer;
	int ret = 0;

	if (!lat || !starts) {
		free(lat);
		free(starts);
		return -ENOMEM;
	}
	if (opts.wait != GAP_SLEEP && pthread_create(&ringer, NULL, ring_after_gaps, &bell)) {
		free(lat);
		free(starts);
		return -EAGAIN;
	}
	/* a name a sched trace can tell from the team's (tools/trace-blocks.py) */
	if (opts.wait != GAP_SLEEP)
		pthread_setname_np(ringer, "coloc-run-ring");
	for (int r = 0; r < opts.iters; r++) {
		struct exec_block_stats st;
		uint64_t start;

		if (opts.wait == GAP_SLEEP) {
			nanosleep(&gap, NULL);
		} else if (opts.wait == GAP_CALLER) {
			while (__atomic_load_n(&bell.seq, __ATOMIC_ACQUIRE) == (uint32_t)r)
				syscall(SYS_futex, &bell.seq, FUTEX_WAIT, r, NULL, NULL, 0);
		} else {
			exec_team_wait(&bell.seq, (uint32_t)r);
		}
		start = opts.wait == GAP_SLEEP ? coloc_now_ns() :
						 __atomic_load_n(&bell.rung_ns, __ATOMIC_RELAXED);
		if (!ret)
			ret = exec_run_block(em, q, 0, exec_model_graph(em)->nr_layers, versions,
					     cores, &st);
		lat[r] = coloc_now_ns() - start;
		starts[r] = start;
		/* the ringer waits for every run, failed or not */
		__atomic_store_n(&bell.done, (uint32_t)r + 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &bell.done, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	if (opts.wait != GAP_SLEEP)
		pthread_join(ringer, NULL);
	if (!ret && opts.times)
		ret = write_times(starts, lat);
	free(starts);
	if (!ret) {
		int rank =
			(opts.iters * 95 + 99) / 100; /* nearest rank, lat sorted by the median */

		*median_ns = exec_median_u64(lat, opts.iters);
		*p95_ns = lat[(rank < 1 ? 1 : rank) - 1];
	}
	free(lat);
	return ret;
}

/* The live query lq gets q's inputs. */
static void copy_inputs(struct exec_query *lq, struct exec_query *q, const struct model *m)
{
	for (int li = 0; li < m->nr_layers; li++)
		if (m->layers[li].op == MODEL_OP_INPUT)
			memcpy(exec_query_input(lq, li), exec_query_input(q, li),
			       (size_t)model_shape_elems(&m->layers[li].out) * sizeof(float));
}

/*
 * Each layer alone runs on a query that keeps every output (q); the whole
 * model on one whose activations are planned by liveness (lq), as colocd's
 * executors serve, so the total is a served query's compute.
 */
static int run(struct exec_model *em, const struct model *m, const struct exec_cpuset *cores)
{
	struct exec_query *q = exec_query_new(em), *lq = exec_query_new_live(em, NULL);
	int *versions = calloc((size_t)m->nr_layers, sizeof(int));
	uint64_t *layer_ns = calloc((size_t)m->nr_layers, sizeof(uint64_t)), total_ns = 0;
	uint64_t p95_ns = 0;
	int ret = -ENOMEM;

	if (!q || !lq || !versions || !layer_ns)
		goto out;
	if (opts.input) {
		ret = read_inputs(q, m);
		if (ret)
			goto out_quiet;
	} else {
		exec_query_fill_inputs(q, m, m->seed);
	}
	copy_inputs(lq, q, m);
	if (!strcmp(opts.kernel, "auto"))
		ret = exec_pick_fastest_live(em, lq, cores, opts.iters < 5 ? opts.iters : 5,
					     versions, NULL);
	else
		ret = versions_from_option(em, m, versions);
	if (ret)
		goto out;
	ret = exec_run_block(em, q, 0, m->nr_layers, versions, cores, NULL);
	for (int li = 0; li < m->nr_layers && !ret; li++)
		ret = exec_measure_block(em, q, li, li + 1, versions + li, cores, opts.iters,
					 &layer_ns[li]);
	if (!ret && opts.gap_ms)
		ret = measure_after_gaps(em, lq, versions, cores, &total_ns, &p95_ns);
	else if (!ret)
		ret = exec_measure_block(em, lq, 0, m->nr_layers, versions, cores, opts.iters,
					 &total_ns);
	if (ret) {
		fprintf(stderr, "coloc-run: running %s failed: %s\n", m->name, strerror(-ret));
		goto out;
	}
	if (opts.output) {
		ret = write_output(lq, m);
		if (ret)
			goto out_quiet;
	}
	if (opts.json) {
		json_object *root = json_object_new_object(), *jl = json_object_new_array();
		json_object *jc = json_object_new_array();

		for (int i = 0; i < cores->nr; i++)
			json_object_array_add(jc, json_object_new_int(cores->cpus[i]));
		json_object_object_add(root, "model", json_object_new_string(m->name));
		json_object_object_add(root, "cores", jc);
		json_object_object_add(root, "iters", json_object_new_int(opts.iters));
		json_object_object_add(root, "gap_ms", json_object_new_int(opts.gap_ms));
		if (opts.gap_ms)
			json_object_object_add(root, "wait",
					       json_object_new_string(gap_wait_names[opts.wait]));
		for (int li = 0; li < m->nr_layers; li++) {
			const struct model_layer *l = &m->layers[li];
			json_object *o = json_object_new_object();

			json_object_object_add(o, "layer", json_object_new_string(l->name));
			json_object_object_add(o, "op",
					       json_object_new_string(model_op_name(l->op)));
			json_object_object_add(o, "version",
					       json_object_new_string(exec_layer_version_name(
						       em, li, versions[li])));
			json_object_object_add(o, "impl",
					       json_object_new_string(exec_layer_impl(
						       em, li, versions[li], cores->nr)));
			json_object_object_add(o, "median_ms",
					       json_object_new_double(layer_ns[li] / 1e6));
			json_object_object_add(
				o, "gflops", json_object_new_double(gflops(l->macs, layer_ns[li])));
			json_object_array_add(jl, o);
		}
		json_object_object_add(root, "layers", jl);
		json_object_object_add(root, "total_ms", json_object_new_double(total_ns / 1e6));
		if (opts.gap_ms)
			json_object_object_add(root, "total_p95_ms",
					       json_object_new_double(p95_ns / 1e6));
		json_object_object_add(root, "total_gflops",
				       json_object_new_double(gflops(m->macs, total_ns)));
		printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
		json_object_put(root);
	} else {
		uint64_t sum = 0;

		printf("%4s %-24s %-10s %-12s %10s %9s  %s\n", "#", "layer", "op", "version",
		       "median ms", "GFLOP/s", "implementation");
		for (int li = 0; li < m->nr_layers; li++) {
			const struct model_layer *l = &m->layers[li];

			sum += layer_ns[li];
			printf("%4d %-24s %-10s %-12s %10.3f %9.1f  %s\n", li, l->name,
			       model_op_name(l->op), exec_layer_version_name(em, li, versions[li]),
			       layer_ns[li] / 1e6, gflops(l->macs, layer_ns[li]),
			       exec_layer_impl(em, li, versions[li], cores->nr));
		}
		printf("total %s on %d core%s: %.3f ms (median of %d%s), %.1f GFLOP/s; "
		       "sum of per-layer medians %.3f ms\n",
		       m->name, cores->nr, cores->nr > 1 ? "s" : "", total_ns / 1e6, opts.iters,
		       opts.gap_ms ? ", each after an idle gap" : "", gflops(m->macs, total_ns),
		       sum / 1e6);
		if (opts.gap_ms)
			printf("after %d ms gaps, started by --wait %s: p50 %.3f ms, p95 %.3f ms\n",
			       opts.gap_ms, gap_wait_names[opts.wait], total_ns / 1e6,
			       p95_ns / 1e6);
	}
out:
	if (ret == -ENOMEM)
		fprintf(stderr, "coloc-run: out of memory\n");
out_quiet:
	free(layer_ns);
	free(versions);
	exec_query_free(lq);
	exec_query_free(q);
	return ret;
}

/*
 * Opens the model at opts.model_path, loads it on the cores and runs or
 * lists it as opts say: main's exit status.
 */
static int load_and_run(void)
{
	struct exec_options eo = { 0 };
	struct exec_cpuset cores;
	struct exec_model *em;
	struct model_source src;
	struct model *m;
	struct coloc_err model_err = { 0 };
	struct coloc_err cerr = { 0 };
	int ret;

	if (opts.cores && exec_cpuset_parse(opts.cores, &eo.cpus, &cerr)) {
		fprintf(stderr, "coloc-run: --cores: %s\n", coloc_err_str(&cerr));
		return 2;
	}
	if (model_path_is_onnx(opts.model_path) && (opts.weights || opts.save_weights)) {
		fprintf(stderr,
			"coloc-run: %s: an ONNX model's weights are its initializers, in the file; "
			"drop --%s (coloc-import writes them to a weights file)\n",
			opts.model_path, opts.weights ? "weights" : "save-weights");
		return 2;
	}
	if (!model_path_is_onnx(opts.model_path) && model_open_opts_given(&opts.import)) {
		fprintf(stderr, "coloc-run: --batch and --dim apply to an .onnx MODEL only\n");
		return 2;
	}
	/* as root, nothing another user could have written or swapped is run */
	opts.import.owner_rule = geteuid() == 0 && !opts.allow_foreign_owner;
	if (model_open_keyed(opts.model_path, opts.weights, &opts.import, &src, NULL, &model_err)) {
		fprintf(stderr, "coloc-run: %s\n", coloc_err_str(&model_err));
		return 1;
	}
	m = src.model;
	if (opts.save_weights) {
		ret = exec_weights_save(m, opts.save_weights, m->seed, &cerr);
		if (ret)
			fprintf(stderr, "coloc-run: %s\n", coloc_err_str(&cerr));
		model_source_close(&src);
		return ret ? 1 : 0;
	}
	/* the weights as they were read and checked, never the path again */
	eo.weights_path = src.weights_path[0] ? src.weights_path : NULL;
	em = exec_model_load(m, &eo, &cerr);
	if (!em) {
		fprintf(stderr, "coloc-run: %s: %s\n", opts.model_path, coloc_err_str(&cerr));
		model_source_close(&src);
		return 1;
	}
	/* The model's cpus (without --cores: the online ones this process may use). */
	if (opts.cores) {
		cores = eo.cpus;
	} else {
		cpu_set_t allowed;

		cores.nr = 0;
		if (sched_getaffinity(0, sizeof(allowed), &allowed))
			CPU_ZERO(&allowed);
		for (int cpu = 0; cpu < EXEC_MAX_CPUS && cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &allowed) && exec_cpu_online(cpu))
				cores.cpus[cores.nr++] = cpu;
	}
	if (opts.list_versions)
		ret = list_versions(em, m, cores.nr);
	else
		ret = run(em, m, &cores);
	exec_model_free(em);
	model_source_close(&src);
	if (ret == -EINVAL)
		return 2;
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "cores", required_argument, NULL, 'c' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "version", no_argument, NULL, 'R' },
		{ "iters", required_argument, NULL, 'n' },
		{ "gap-ms", required_argument, NULL, 'g' },
		{ "wait", required_argument, NULL, 'W' },
		{ "times", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "list-versions", no_argument, NULL, 'l' },
		{ "weights", required_argument, NULL, 'w' },
		{ "save-weights", required_argument, NULL, 'S' },
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "batch", required_argument, NULL, 'b' },
		{ "dim", required_argument, NULL, 'd' },
		{ "allow-foreign-owner", no_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct coloc_err cerr = { 0 };
	int c;
	long v;

	while ((c = getopt_long(argc, argv, "c:k:n:g:W:t:jlw:S:i:o:b:d:h", long_opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'c':
			opts.cores = optarg;
			break;
		case 'k':
			opts.kernel = optarg;
			break;
		case 'R':
			cli_print_version("coloc-run");
			return 0;
		case 'n':
			if (cli_parse_flag("coloc-run", "--iters", optarg, 1, 100000, &v))
				return 2;
			opts.iters = (int)v;
			break;
		case 'g':
			if (cli_parse_flag("coloc-run", "--gap-ms", optarg, 0, 10000, &v))
				return 2;
			opts.gap_ms = (int)v;
			break;
		case 'W': {
			int w = -1;

			for (int i = 0; i < (int)(sizeof(gap_wait_names) / sizeof(*gap_wait_names));
			     i++)
				if (!strcmp(optarg, gap_wait_names[i]))
					w = i;
			if (w < 0) {
				fprintf(stderr,
					"coloc-run: --wait: '%s' is none of sleep, caller, team\n",
					optarg);
				return 2;
			}
			opts.wait = (enum gap_wait)w;
			break;
		}
		case 't':
			opts.times = optarg;
			break;
		case 'j':
			opts.json = true;
			break;
		case 'l':
			opts.list_versions = true;
			break;
		case 'O':
			opts.allow_foreign_owner = true;
			break;
		case 'w':
			opts.weights = optarg;
			break;
		case 'S':
			opts.save_weights = optarg;
			break;
		case 'i':
			opts.input = optarg;
			break;
		case 'o':
			opts.output = optarg;
			break;
		case 'b':
			if (cli_parse_flag("coloc-run", "--batch", optarg, 1, 1 << 24, &v))
				return 2;
			opts.import.batch = v;
			break;
		case 'd':
			if (onnx_dim_parse(&opts.import, optarg, &cerr)) {
				fprintf(stderr, "coloc-run: --dim: %s\n", coloc_err_str(&cerr));
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "coloc-run: expected exactly one MODEL file\n");
		usage(stderr);
		return 2;
	}
	if (opts.times && !opts.gap_ms) {
		fprintf(stderr,
			"coloc-run: --times needs --gap-ms: it lists the runs after gaps\n");
		return 2;
	}
	opts.model_path = argv[optind];
	/* root loading a model a member may have written: the OOM killer's first choice */
	oom_first_if_root("coloc-run");
	return load_and_run();
}
