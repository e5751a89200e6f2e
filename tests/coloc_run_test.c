// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-run (tools/coloc-run.c) as a user runs it: --output writes every
 * output of the model (the layers no later layer reads) in layer order, one
 * after the other, each equal to what the executor library computes for
 * that layer on the same input. The model's outputs have different sizes,
 * so an output left out, or two swapped, fails. --times lists each run after
 * a gap, in the order they ran, and only into a regular file of its own;
 * --gap-ms times each run after an idle gap and refuses one out of range;
 * run by root, the OOM killer takes it first.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "testutil.h"

/* a feeds b and c; x feeds d: b, c and d are read by no layer */
static const char outs_model[] = "model outs\n"
				 "seed 3\n"
				 "macs 11952\n"
				 "params 340\n"
				 "input x shape=1x4x6x6\n"
				 "conv a out=8 k=3 pad=1 act=relu\n"
				 "conv b in=a out=3 k=1 bias\n"
				 "pool c in=a kind=max k=2 stride=2\n"
				 "conv d in=x out=5 k=1 bias\n"
				 "end\n";

/* The outputs in the order worked out by hand: layer order, sizes 1x3x6x6, 1x8x3x3, 1x5x6x6. */
static const struct {
	const char *layer;
	size_t n;
} outs_order[] = { { "b", 108 }, { "c", 72 }, { "d", 180 } };

#define IN_ELEMS (4 * 6 * 6)

static int layer_named(const struct model *m, const char *name)
{
	for (int li = 0; li < m->nr_layers; li++)
		if (!strcmp(m->layers[li].name, name))
			return li;
	return -1;
}

/* The model above into DIR/outs.model, its path into path. */
static int write_outs_model(const char *dir, char *path, size_t len)
{
	FILE *f;
	int ok;

	snprintf(path, len, "%s/outs.model", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ok = fwrite(outs_model, 1, sizeof(outs_model) - 1, f) == sizeof(outs_model) - 1;
	return fclose(f) || !ok ? -1 : 0;
}

FIXTURE(coloc_run) {};
FIXTURE_SETUP(coloc_run) {}
FIXTURE_TEARDOWN(coloc_run) {}

TEST_F(coloc_run, output__writes_every_output_in_layer_order)
{
	char dir[64], path[PATH_MAX], in[PATH_MAX], out[PATH_MAX];
	char bin[PATH_MAX], cmd[4 * PATH_MAX], log[4096];
	struct exec_options o = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct coloc_err err = { 0 };
	float x[IN_ELEMS], *got;
	struct exec_model *em;
	struct exec_query *q;
	struct model *m;
	size_t len, at = 0;
	FILE *f;

	ASSERT_EQ(0, tu_make_tmpdir("run-out", dir, sizeof(dir)));
	ASSERT_EQ(0, write_outs_model(dir, path, sizeof(path)));
	snprintf(in, sizeof(in), "%s/in.f32", dir);
	snprintf(out, sizeof(out), "%s/out.f32", dir);
	for (int i = 0; i < IN_ELEMS; i++)
		x[i] = sinf(0.37f * (float)i);
	f = fopen(in, "wb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ((size_t)IN_ELEMS, fwrite(x, sizeof(float), IN_ELEMS, f));
	ASSERT_EQ(0, fclose(f));

	snprintf(cmd, sizeof(cmd), "'%s' '%s' --cores 0 --input '%s' --output '%s' --iters 1",
		 tu_bin("coloc-run", bin, sizeof(bin)), path, in, out);
	ASSERT_EQ(0, tu_run(cmd, log, sizeof(log))) TH_LOG("%s", log);
	got = (float *)tu_read_file(out, &len);
	ASSERT_NE(NULL, got);
	ASSERT_EQ((108 + 72 + 180) * sizeof(float), len);

	/* each output, by its layer's name, as the library computes it */
	m = model_load(path, &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	em = exec_model_load(m, &o, &err);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&err));
	q = exec_query_new(em);
	ASSERT_NE(NULL, q);
	memcpy(exec_query_input(q, 0), x, sizeof(x));
	ASSERT_EQ(0, exec_run_block(em, q, 0, m->nr_layers, NULL, &o.cpus, NULL));
	for (size_t i = 0; i < sizeof(outs_order) / sizeof(outs_order[0]); i++) {
		int li = layer_named(m, outs_order[i].layer);
		float want[180], max_err = 0.0f, max_ref = 0.0f;

		ASSERT_LE(0, li);
		ASSERT_EQ((int64_t)outs_order[i].n, model_shape_elems(&m->layers[li].out));
		ASSERT_EQ(0, exec_query_read_output(q, li, want, outs_order[i].n));
		for (size_t k = 0; k < outs_order[i].n; k++) {
			max_ref = fmaxf(max_ref, fabsf(want[k]));
			max_err = fmaxf(max_err, fabsf(got[at + k] - want[k]));
		}
		EXPECT_GT(max_ref, 0.0f);
		EXPECT_LE(max_err, 1e-5f * (1.0f + max_ref))
		TH_LOG("output %zu (layer %s): max |coloc-run - library| %g", i,
		       outs_order[i].layer, max_err);
		at += outs_order[i].n;
	}
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
	free(got);
	tu_remove_tree(dir);
}

/*
 * Each run after a gap is one line, in the order they ran: the next run is
 * rung only after the previous one ended and the gap was slept, so each
 * start is at least the previous start plus its latency plus the gap.
 */
TEST_F(coloc_run, times__one_line_a_run_after_each_gap)
{
	char dir[64], path[PATH_MAX], times[PATH_MAX];
	char bin[PATH_MAX], cmd[4 * PATH_MAX], log[4096], line[256];
	unsigned long long start, prev_start = 0;
	double ms, prev_ms = 0;
	int runs = 0;
	FILE *f;

	ASSERT_EQ(0, tu_make_tmpdir("run-times", dir, sizeof(dir)));
	ASSERT_EQ(0, write_outs_model(dir, path, sizeof(path)));
	snprintf(times, sizeof(times), "%s/times.tsv", dir);
	tu_bin("coloc-run", bin, sizeof(bin));

	/* without --gap-ms there are no such runs: bad usage */
	snprintf(cmd, sizeof(cmd), "'%s' '%s' --cores 0 --iters 2 --times '%s'", bin, path, times);
	ASSERT_EQ(2, tu_run(cmd, log, sizeof(log))) TH_LOG("%s", log);
	ASSERT_NE(NULL, strstr(log, "--gap-ms")) TH_LOG("%s", log);

	snprintf(cmd, sizeof(cmd), "'%s' '%s' --iters 5 --gap-ms 3 --wait team --times '%s' --json",
		 bin, path, times);
	ASSERT_EQ(0, tu_run(cmd, log, sizeof(log))) TH_LOG("%s", log);
	f = fopen(times, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(line, sizeof(line), f));
	ASSERT_STREQ("start_ns\tlatency_ms\n", line);
	while (fgets(line, sizeof(line), f)) {
		ASSERT_EQ(2, sscanf(line, "%llu\t%lf", &start, &ms)) TH_LOG("%s", line);
		EXPECT_GT(ms, 0.0);
		if (runs) {
			EXPECT_GE((double)(start - prev_start) / 1e6, prev_ms + 3.0)
			TH_LOG("run %d started %.3f ms after run %d, which took %.3f ms", runs,
			       (double)(start - prev_start) / 1e6, runs - 1, prev_ms);
		}
		prev_start = start;
		prev_ms = ms;
		runs++;
	}
	EXPECT_EQ(5, runs);
	fclose(f);
	tu_remove_tree(dir);
}

/*
 * --times writes only a regular file of its own (root runs coloc-run in the
 * benches, often into /tmp): a FIFO planted at the name is refused at once
 * (a plain open blocked for good), a file with a second name is not written
 * through, and both say why.
 */
TEST_F(coloc_run, times__refuses_a_fifo_and_a_hard_link)
{
	char dir[64], path[PATH_MAX], fifo[PATH_MAX];
	char file[PATH_MAX], other[PATH_MAX], bin[PATH_MAX], cmd[4 * PATH_MAX], log[4096];
	FILE *f;

	ASSERT_EQ(0, tu_make_tmpdir("run-times", dir, sizeof(dir)));
	ASSERT_EQ(0, write_outs_model(dir, path, sizeof(path)));
	snprintf(fifo, sizeof(fifo), "%s/times.fifo", dir);
	snprintf(file, sizeof(file), "%s/times.tsv", dir);
	snprintf(other, sizeof(other), "%s/other-name", dir);
	tu_bin("coloc-run", bin, sizeof(bin));

	ASSERT_EQ(0, mkfifo(fifo, 0644));
	snprintf(cmd, sizeof(cmd), "timeout 60 '%s' '%s' --iters 2 --gap-ms 1 --times '%s'", bin,
		 path, fifo);
	ASSERT_EQ(1, tu_run(cmd, log, sizeof(log))) TH_LOG("%s", log);
	EXPECT_NE(NULL, strstr(log, "will not write")) TH_LOG("%s", log);

	f = fopen(file, "w");
	ASSERT_NE(NULL, f);
	fputs("kept\n", f);
	fclose(f);
	ASSERT_EQ(0, link(file, other));
	snprintf(cmd, sizeof(cmd), "'%s' '%s' --iters 2 --gap-ms 1 --times '%s'", bin, path, file);
	ASSERT_EQ(1, tu_run(cmd, log, sizeof(log))) TH_LOG("%s", log);
	EXPECT_NE(NULL, strstr(log, "hard links")) TH_LOG("%s", log);
	f = fopen(other, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(log, sizeof(log), f));
	EXPECT_STREQ("kept\n", log);
	fclose(f);
	tu_remove_tree(dir);
}

/*
 * coloc-run --gap-ms N times the whole model after N ms of idle each run, as
 * a served query after a quiet spell; the table says so. Out of range: bad
 * usage (exit 2), with the bounds.
 */
TEST(coloc_run__gap_ms_times_each_run_after_an_idle_gap)
{
	const char *root = getenv("COLOC_ROOT");
	char bin[PATH_MAX], cmd[2 * PATH_MAX + 64], out[16384];

	tu_bin("coloc-run", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd), "%s %s/models/mobilenet_v2.model --cores 0 --iters 2 --gap-ms 5",
		 bin, root ? root : ".");
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "(median of 2, each after an idle gap)")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s %s/models/mobilenet_v2.model --gap-ms 10001", bin,
		 root ? root : ".");
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "--gap-ms")) TH_LOG("%s", out);
}

/*
 * Run by root, it is the OOM killer's first choice (oom_score_adj 1000, as a
 * member's executor): the model may be a member's, declaring weights that no
 * quota bounds.
 */
TEST(coloc_run__as_root_the_oom_killers_first_choice)
{
	const char *root = getenv("COLOC_ROOT");
	char bin[PATH_MAX], cmd[2 * PATH_MAX + 256], out[256];

	if (geteuid() != 0)
		SKIP(return, "the score is set only when root runs it");
	tu_bin("coloc-run", bin, sizeof(bin));
	snprintf(cmd, sizeof(cmd),
		 "%s %s/models/mobilenet_v2.model --cores 0 --iters 2 --gap-ms 3000 >/dev/null 2>&1 &"
		 " p=$!; sleep 0.5; cat /proc/$p/oom_score_adj; kill $p; wait $p; exit 0",
		 bin, root ? root : ".");
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_EQ(1000, atoi(out)) TH_LOG("oom_score_adj '%s'", out);
}

TEST_HARNESS_MAIN
