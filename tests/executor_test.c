// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The executor as a whole: a multi-layer model (hand-built, parsed from
 * model text, and model files from models/) matches the plain-C reference
 * end to end at every version and core count; picking versions on a live
 * query keeps it serving; splitting a query into blocks with different
 * versions and core sets changes nothing; bad arguments are refused. The
 * versions themselves: exec_versions_test.c; the threads: exec_threads_test.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "exec_fixture.h"

#define TOL 1e-4f /* see tests/ops_fixture.h */

static const char small_net_text[] = "model tiny_text\n"
				     "seed 9\n"
				     "macs 909312\n"
				     "params 11840\n"
				     "input data shape=1x3x16x16\n"
				     "conv c1 out=32 k=3 pad=1 bn act=relu\n"
				     "pool p1 kind=max k=2 stride=2\n"
				     "conv c2 out=32 k=3 pad=1 bn\n"
				     "add r1 in=c2,p1 act=relu\n"
				     "conv c3 out=48 k=1 bn act=relu\n"
				     "pool gap kind=global_avg\n"
				     "end\n";

static uint32_t rnd_state = 777;

static float rnd(void)
{
	rnd_state = rnd_state * 1664525u + 1013904223u;
	return (float)(rnd_state >> 8) / 16777216.0f * 2.0f - 1.0f;
}

/* The reference output of every layer, inputs filled into q and returned. */
static float **reference_all(struct __test_metadata *_metadata, const struct model *m,
			     struct exec_query *q)
{
	float **ref = calloc((size_t)m->nr_layers, sizeof(float *));

	for (int li = 0; li < m->nr_layers; li++) {
		int64_t e = model_shape_elems(&m->layers[li].out);
		const float *ins[MODEL_MAX_INPUTS];

		ref[li] = malloc((size_t)e * sizeof(float));
		if (m->layers[li].op == MODEL_OP_INPUT) {
			float *in = exec_query_input(q, li);

			for (int64_t i = 0; i < e; i++)
				in[i] = ref[li][i] = rnd();
			continue;
		}
		for (int j = 0; j < m->layers[li].nr_inputs; j++)
			ins[j] = ref[m->layers[li].inputs[j]];
		EXPECT_EQ(0, ref_layer(m, li, ins, ref[li]));
	}
	return ref;
}

static void free_all(const struct model *m, float **ref)
{
	for (int li = 0; li < m->nr_layers; li++)
		free(ref[li]);
	free(ref);
}

static void expect_output(struct __test_metadata *_metadata, struct exec_query *q, int layer,
			  const float *want, int64_t n, const char *what)
{
	float *got = malloc((size_t)n * sizeof(float)), max_err, max_ref;

	ASSERT_EQ(0, exec_query_read_output(q, layer, got, (size_t)n));
	ref_compare(got, want, n, &max_err, &max_ref);
	EXPECT_LE(max_err, TOL * (1.0f + max_ref))
	TH_LOG("%s: max err %g, max |ref| %g", what, max_err, max_ref);
	free(got);
}

TEST_F(exec, run_block__hand_built_net_matches_reference)
{
	struct exec_cpuset one = { .nr = 1, .cpus = { 0 } };
	int last = self->m->nr_layers - 1;
	float **ref = reference_all(_metadata, self->m, self->q);
	float sum = 0.0f, *got = malloc(10 * sizeof(float));

	ASSERT_EQ(0, exec_run_block(self->em, self->q, 0, self->m->nr_layers, NULL, &one, NULL));
	expect_output(_metadata, self->q, last, ref[last], 10, "softmax");
	/* The fc before the softmax, whose values are not squashed into [0, 1]. */
	expect_output(_metadata, self->q, last - 1, ref[last - 1], 10, "fc");
	/* Independent property: softmax rows sum to 1. */
	ASSERT_EQ(0, exec_query_read_output(self->q, last, got, 10));
	for (int i = 0; i < 10; i++)
		sum += got[i];
	EXPECT_LE(fabsf(sum - 1.0f), 1e-5f);
	free(got);
	free_all(self->m, ref);
}

/*
 * Picking versions in context runs a live query's layers one at a time in
 * order (out of order it refuses them), gives every layer one of its
 * versions and a time, and leaves the query serving: the model run whole
 * with the picked versions matches the reference.
 */
TEST_F(exec, pick_fastest_live__times_layers_in_passes_and_keeps_the_query)
{
	struct exec_cpuset one = { .nr = 1, .cpus = { 0 } };
	struct exec_query *lq = exec_query_new_live(self->em, NULL);
	int n = self->m->nr_layers, last = n - 1;
	int *versions = calloc((size_t)n, sizeof(int));
	uint64_t *ns = calloc((size_t)n, sizeof(uint64_t));
	float **ref;

	ASSERT_NE(NULL, lq);
	ASSERT_NE(NULL, versions);
	ASSERT_NE(NULL, ns);
	ref = reference_all(_metadata, self->m, lq);
	EXPECT_EQ(-EINVAL, exec_pick_fastest_live(self->em, lq, &one, 0, versions, ns));
	ASSERT_EQ(0, exec_pick_fastest_live(self->em, lq, &one, 3, versions, ns));
	for (int li = 0; li < n; li++) {
		EXPECT_LE(0, versions[li]);
		EXPECT_GT(exec_layer_nr_versions(self->em, li), versions[li]);
		EXPECT_LT(0u, ns[li]) TH_LOG("layer %d", li);
	}
	ASSERT_EQ(0, exec_run_block(self->em, lq, 0, n, versions, &one, NULL));
	expect_output(_metadata, lq, last, ref[last], 10, "softmax, picked versions");
	free_all(self->m, ref);
	free(ns);
	free(versions);
	exec_query_free(lq);
}

TEST_F(exec, run_block__parsed_model_matches_reference)
{
	struct exec_cpuset one = { .nr = 1, .cpus = { 0 } };
	struct coloc_err cerr = { 0 };
	struct coloc_err model_err = { 0 };
	struct model *m =
		model_parse("tiny_text", small_net_text, sizeof(small_net_text) - 1, &model_err);
	struct exec_model *em;
	struct exec_query *q;
	float **ref;
	int last;

	ASSERT_NE(NULL, m) TH_LOG("parse: %s", coloc_err_str(&model_err));
	last = m->nr_layers - 1;
	ASSERT_EQ(48, model_shape_elems(&m->layers[last].out));
	em = exec_model_load(m, &self->opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("load: %s", coloc_err_str(&cerr));
	q = exec_query_new(em);
	ASSERT_NE(NULL, q);
	ref = reference_all(_metadata, m, q);
	ASSERT_EQ(0, exec_run_block(em, q, 0, m->nr_layers, NULL, &one, NULL));
	expect_output(_metadata, q, last, ref[last], 48, "global pool");
	free_all(m, ref);
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
}

/*
 * A model file from models/ against the reference, with every layer at
 * version 0, 1 and 2, on one core and on two: on one core the split versions
 * cut each layer in two, on two cores one piece per core.
 */
static void check_model_file(struct __test_metadata *_metadata, const char *name)
{
	const char *root = getenv("COLOC_ROOT");
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct exec_cpuset sets[2] = { { .nr = 1, .cpus = { 0 } }, { .nr = 2, .cpus = { 0, 1 } } };
	struct coloc_err cerr = { 0 };
	char path[512];
	struct coloc_err model_err = { 0 };
	struct exec_model *em;
	struct exec_query *q;
	struct model *m;
	float **ref, *got;
	int64_t n;
	int last;

	snprintf(path, sizeof(path), "%s/models/%s.model", root ? root : ".", name);
	if (access(path, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", path);
	if (nr_cpus() >= 2)
		opts.cpus = sets[1];
	m = model_load(path, &model_err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&model_err));
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	q = exec_query_new(em);
	ASSERT_NE(NULL, q);
	ref = reference_all(_metadata, m, q);
	last = m->nr_layers - 1;
	n = model_shape_elems(&m->layers[last].out);
	got = malloc((size_t)n * sizeof(float));
	for (int c = 0; c < opts.cpus.nr; c++) {
		for (int v = 0; v < 3; v++) {
			int *versions = calloc((size_t)m->nr_layers, sizeof(int));
			float max_err, max_ref;

			for (int li = 0; li < m->nr_layers; li++)
				versions[li] = v < exec_layer_nr_versions(em, li) ? v : 0;
			ASSERT_EQ(0,
				  exec_run_block(em, q, 0, m->nr_layers, versions, &sets[c], NULL));
			ASSERT_EQ(0, exec_query_read_output(q, last, got, (size_t)n));
			ref_compare(got, ref[last], n, &max_err, &max_ref);
			EXPECT_LE(max_err, TOL * (1.0f + max_ref))
			TH_LOG("%s, %d core(s), version %d: max err %g, max |ref| %g", name,
			       sets[c].nr, v, max_err, max_ref);
			free(versions);
		}
	}
	free(got);
	free_all(m, ref);
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
}

TEST(exec_run__mobilenet_v2_file_matches_reference)
{
	check_model_file(_metadata, "mobilenet_v2");
}

/* Squeeze-excite, swish, 5x5 depthwise; 1x1 maps that take the gemm and own-layout versions. */
TEST(exec_run__efficientnet_b0_file_matches_reference)
{
	check_model_file(_metadata, "efficientnet_b0");
}

/*
 * Four blocks, each with its own core set and versions (the last version of
 * every layer in odd blocks), give the output of one block at version 0.
 */
TEST_F(exec, run_block__split_into_blocks_gives_same_output)
{
	int n = self->m->nr_layers, last = n - 1;
	int bounds[5] = { 0, 2, 5, 8, n };
	struct exec_cpuset sets[3] = { { .nr = 1, .cpus = { 0 } },
				       { .nr = 1, .cpus = { 1 } },
				       { .nr = 2, .cpus = { 0, 1 } } };
	float **ref = reference_all(_metadata, self->m, self->q);
	float *whole = malloc(10 * sizeof(float)), max_err, max_ref;
	int *versions = calloc((size_t)n, sizeof(int));

	if (self->opts.cpus.nr < 2)
		sets[1] = sets[2] = sets[0];
	ASSERT_EQ(0, exec_run_block(self->em, self->q, 0, n, NULL, &sets[0], NULL));
	ASSERT_EQ(0, exec_query_read_output(self->q, last, whole, 10));
	exec_query_reset(self->q);
	/* Reset zeroes the activations: inputs must be written again. */
	memcpy(exec_query_input(self->q, 0), ref[0], 3 * 20 * 20 * sizeof(float));
	for (int blk = 0; blk < 4; blk++) {
		struct exec_block_stats st;

		for (int li = bounds[blk]; li < bounds[blk + 1]; li++)
			versions[li] = blk % 2 ? exec_layer_nr_versions(self->em, li) - 1 : 0;
		ASSERT_EQ(0, exec_run_block(self->em, self->q, bounds[blk], bounds[blk + 1],
					    versions + bounds[blk], &sets[blk % 3], &st));
		EXPECT_LE(st.switch_ns, st.latency_ns);
	}
	expect_output(_metadata, self->q, last, whole, 10, "blocks vs whole");
	expect_output(_metadata, self->q, last, ref[last], 10, "blocks vs reference");
	ref_compare(whole, ref[last], 10, &max_err, &max_ref);
	EXPECT_LE(max_err, TOL * (1.0f + max_ref));
	free(versions);
	free(whole);
	free_all(self->m, ref);
}

/*
 * Inputs staged for a block are copied by its team before its first layer,
 * each thread a share that may cross from one input into the next (two
 * inputs of 32,000 bytes: on two threads the cut is at byte 28,672, in the
 * first): the block adds what was staged, the copy's time is part of the
 * block's, and only that block copies (the next one leaves the inputs be).
 */
TEST_F(exec, stage_inputs__copied_by_the_first_block_only)
{
	struct model *m = ref_model_new("two_inputs", 3, 3);
	int64_t d[4] = { 1, 5, 40, 40 }, n = 5 * 40 * 40;
	struct exec_cpuset cores = self->opts.cpus;
	struct exec_input_copy copies[2];
	struct exec_block_stats st = { 0 };
	struct coloc_err cerr = { 0 };
	float *src[2], *got = malloc((size_t)n * sizeof(float));
	int ins[2] = { 0, 1 };
	struct exec_model *em;
	struct exec_query *q;

	ref_model_add(m, MODEL_OP_INPUT, "a", 0, NULL, 4, d);
	ref_model_add(m, MODEL_OP_INPUT, "b", 0, NULL, 4, d);
	ref_model_add(m, MODEL_OP_ADD, "sum", 2, ins, 4, d);
	em = exec_model_load(m, &self->opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	q = exec_query_new(em);
	ASSERT_NE(NULL, q);
	for (int k = 0; k < 2; k++) {
		src[k] = malloc((size_t)n * sizeof(float));
		for (int64_t i = 0; i < n; i++)
			src[k][i] = rnd();
		copies[k] = (struct exec_input_copy){ .dst = exec_query_input(q, k),
						      .src = src[k],
						      .bytes = (size_t)n * sizeof(float) };
	}
	exec_query_stage_inputs(q, copies, 2);
	ASSERT_EQ(0, exec_run_block(em, q, 0, 3, NULL, &cores, &st));
	EXPECT_GT(st.input_ns, 0);
	EXPECT_LE(st.input_ns + st.switch_ns, st.latency_ns);
	for (int k = 0; k < 2; k++)
		EXPECT_EQ(0, memcmp(exec_query_input(q, k), src[k], (size_t)n * sizeof(float)));
	ASSERT_EQ(0, exec_query_read_output(q, 2, got, (size_t)n));
	for (int64_t i = 0; i < n; i++) {
		ASSERT_EQ(src[0][i] + src[1][i], got[i]) TH_LOG("element %ld", (long)i);
	}
	/* taken by that block: changed sources are not copied by the next one */
	src[0][0] += 1.0f;
	ASSERT_EQ(0, exec_run_block(em, q, 0, 3, NULL, &cores, &st));
	EXPECT_EQ(0, st.input_ns);
	EXPECT_NE(src[0][0], exec_query_input(q, 0)[0]);
	for (int k = 0; k < 2; k++)
		free(src[k]);
	free(got);
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
}

TEST_F(exec, run_block__rejects_bad_arguments)
{
	struct exec_cpuset bad = { .nr = 1, .cpus = { 200 } }, one = { .nr = 1, .cpus = { 0 } };
	int versions[1] = { 7 };

	EXPECT_EQ(-EINVAL, exec_run_block(self->em, self->q, 0, 99, NULL, &one, NULL));
	EXPECT_EQ(-EINVAL, exec_run_block(self->em, self->q, 3, 3, NULL, &one, NULL));
	EXPECT_EQ(-EINVAL, exec_run_block(self->em, self->q, 0, 1, NULL, &bad, NULL));
	EXPECT_EQ(-EINVAL, exec_run_block(self->em, self->q, 1, 2, versions, &one, NULL));
	EXPECT_EQ(-EINVAL, exec_query_read_output(self->q, 1, (float[1]){ 0 }, 1));
	EXPECT_EQ(NULL, exec_query_input(self->q, 1));
}

TEST(exec_load__rejects_offline_cpu)
{
	struct model *m = small_net();
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { EXEC_MAX_CPUS - 1 } } };
	struct coloc_err cerr = { 0 };

	EXPECT_EQ(NULL, exec_model_load(m, &opts, &cerr));
	EXPECT_EQ(-ENODEV, cerr.code);
	EXPECT_NE(NULL, strstr(cerr.msg, "not online")) TH_LOG("err: %s", cerr.msg);
	model_free(m);
}

TEST_HARNESS_MAIN
