// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The executor as a whole: a multi-layer model (hand-built, and parsed from
 * model text) matches the plain-C reference end to end; splitting a query
 * into blocks with different versions and core sets changes nothing;
 * running queries creates no oneDNN primitive (the count the executor keeps
 * and oneDNN's own verbose log agree); each team thread is pinned to its
 * core and observed only there while a block runs; block-switch cost is
 * measured and printed (never asserted: timings on this 2-core box are
 * noisy).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "reference.h"
#include "testutil.h"

#define TOL 1e-4f /* see tests/ops_fixture.h */

/*
 * A small residual net: conv, max pool, a bottleneck with a skip add,
 * global pool, flatten, fc, softmax. 11 layers.
 */
static struct model *small_net(void)
{
	struct model *m = ref_model_new("small", 42, 16);
	int64_t in_d[4] = { 1, 3, 20, 20 }, pd[4] = { 1, 32, 5, 5 }, gd[4] = { 1, 32, 1, 1 };
	int64_t fd[2] = { 1, 32 }, od[2] = { 1, 10 };
	int x, a, b, c, s;
	struct model_layer *l;

	x = 0;
	ref_model_add(m, MODEL_OP_INPUT, "image", 0, NULL, 4, in_d);
	x = ref_model_add_conv(m, x, 32, 3, 2, 1, true, MODEL_ACT_RELU);
	ref_model_add(m, MODEL_OP_POOL, "pool", 1, &x, 4, pd)->pool = (struct model_pool){
		.kind = MODEL_POOL_MAX, .kh = 2, .kw = 2, .stride_h = 2, .stride_w = 2
	};
	x = m->nr_layers - 1;
	a = ref_model_add_conv(m, x, 16, 1, 1, 0, true, MODEL_ACT_RELU);
	b = ref_model_add_conv(m, a, 16, 3, 1, 1, true, MODEL_ACT_RELU);
	c = ref_model_add_conv(m, b, 32, 1, 1, 0, true, MODEL_ACT_NONE);
	{
		int ins[2] = { c, x };

		l = ref_model_add(m, MODEL_OP_ADD, "skip", 2, ins, 4, pd);
		l->act = MODEL_ACT_RELU;
	}
	s = m->nr_layers - 1;
	ref_model_add(m, MODEL_OP_POOL, "gap", 1, &s, 4, gd)->pool.kind = MODEL_POOL_GLOBAL_AVG;
	s = m->nr_layers - 1;
	ref_model_add(m, MODEL_OP_RESHAPE, "flatten", 1, &s, 2, fd);
	s = m->nr_layers - 1;
	l = ref_model_add(m, MODEL_OP_FC, "fc", 1, &s, 2, od);
	l->fc.out_features = 10;
	l->fc.bias = true;
	s = m->nr_layers - 1;
	ref_model_add(m, MODEL_OP_SOFTMAX, "prob", 1, &s, 2, od)->axis = 1;
	return m;
}

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

static int nr_cpus(void)
{
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

FIXTURE(exec)
{
	struct model *m;
	struct exec_model *em;
	struct exec_query *q;
	struct exec_options opts;
};

FIXTURE_SETUP(exec)
{
	struct coloc_err cerr = { 0 };

	self->m = small_net();
	ASSERT_NE(NULL, self->m);
	memset(&self->opts, 0, sizeof(self->opts));
	self->opts.cpus.nr = nr_cpus() >= 2 ? 2 : 1;
	self->opts.cpus.cpus[1] = 1;
	self->em = exec_model_load(self->m, &self->opts, &cerr);
	ASSERT_NE(NULL, self->em) TH_LOG("load: %s", coloc_err_str(&cerr));
	self->q = exec_query_new(self->em);
	ASSERT_NE(NULL, self->q);
}

FIXTURE_TEARDOWN(exec)
{
	exec_query_free(self->q);
	exec_model_free(self->em);
	model_free(self->m);
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

/* A real model file (65 layers) end to end, every version, against the reference. */
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
 * Two versions of a layer never run the same way on this CPU: at every core
 * count their impl strings (kernel, layouts and split structure) differ.
 * How many versions a layer gets depends on the ISA; every conv, fc and
 * matmul here has at least two, as a split into single-thread pieces never
 * runs as the whole-layer kernel does.
 */
TEST_F(exec, load__versions_of_a_layer_run_differently)
{
	for (int li = 0; li < self->m->nr_layers; li++) {
		enum model_op op = self->m->layers[li].op;
		int nv = exec_layer_nr_versions(self->em, li);

		if (op != MODEL_OP_CONV && op != MODEL_OP_FC && op != MODEL_OP_MATMUL) {
			EXPECT_EQ(1, nv);
			continue;
		}
		EXPECT_GE(nv, 2);
		for (int v = 0; v < nv; v++) {
			const char *impl = exec_layer_impl(self->em, li, v, 1);

			ASSERT_NE(NULL, impl);
			/* Names are oneDNN's: "jit:...", "brg:...", "gemm:..." and the like. */
			EXPECT_NE(NULL, strchr(impl, ':'))
			TH_LOG("layer %d v%d impl '%s'", li, v, impl);
			for (int w = 0; w < v; w++) {
				EXPECT_STRNE(exec_layer_version_name(self->em, li, v),
					     exec_layer_version_name(self->em, li, w));
				/* a different execution at every core count, not a new name */
				for (int c = 1; c <= self->opts.cpus.nr; c++)
					EXPECT_STRNE(exec_layer_impl(self->em, li, v, c),
						     exec_layer_impl(self->em, li, w, c));
			}
		}
	}
	EXPECT_EQ(NULL, exec_layer_version_name(self->em, 1, 99));
}

/* The implementation oneDNN itself picks first for a plain fp32 matmul [m,k] x [k,n]. */
static void onednn_first_matmul(int64_t m, int64_t k, int64_t n, char *impl, size_t len)
{
	dnnl_dims_t sd = { m, k }, wd = { k, n }, dd = { m, n };
	dnnl_memory_desc_t src, wei, dst;
	dnnl_primitive_desc_iterator_t it;
	dnnl_matmul_desc_t desc;
	dnnl_engine_t engine;
	const char *s = "?";

	snprintf(impl, len, "none");
	dnnl_memory_desc_init_by_tag(&src, 2, sd, dnnl_f32, dnnl_ab);
	dnnl_memory_desc_init_by_tag(&wei, 2, wd, dnnl_f32, dnnl_ab);
	dnnl_memory_desc_init_by_tag(&dst, 2, dd, dnnl_f32, dnnl_ab);
	if (dnnl_engine_create(&engine, dnnl_cpu, 0))
		return;
	if (!dnnl_matmul_desc_init(&desc, &src, &wei, NULL, &dst) &&
	    !dnnl_primitive_desc_iterator_create(&it, &desc, NULL, engine, NULL)) {
		dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);

		if (pd) {
			dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s);
			snprintf(impl, len, "%s", s);
			dnnl_primitive_desc_destroy(pd);
		}
		dnnl_primitive_desc_iterator_destroy(it);
	}
	dnnl_engine_destroy(engine);
}

/*
 * An fc's first version is the gemm-based matmul; oneDNN's own first
 * choice is offered as "matmul" only where it is another kernel (brgemm on
 * AVX-512); where it already is gemm (AVX2), "matmul" would be the same
 * kernel twice and another version takes its place.
 */
TEST(exec_load__fc_offers_matmul_only_where_it_differs)
{
	struct model *m = ref_model_new("fc", 9, 3);
	int64_t in_d[2] = { 1, 1280 }, od[2] = { 1, 1000 };
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct exec_model *em;
	struct model_layer *l;
	struct coloc_err cerr = { 0 };
	char first[128];
	int zero = 0, matmul = -1;

	ref_model_add(m, MODEL_OP_INPUT, "in", 0, NULL, 2, in_d);
	l = ref_model_add(m, MODEL_OP_FC, "fc", 1, &zero, 2, od);
	l->fc.out_features = 1000;
	onednn_first_matmul(1, 1280, 1000, first, sizeof(first));
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	EXPECT_STREQ("gemm", exec_layer_version_name(em, 1, 0));
	EXPECT_NE(NULL, strstr(exec_layer_impl(em, 1, 0, 1), "gemm"));
	for (int v = 0; v < exec_layer_nr_versions(em, 1); v++)
		if (!strcmp(exec_layer_version_name(em, 1, v), "matmul"))
			matmul = v;
	if (strstr(first, "gemm")) {
		EXPECT_EQ(-1, matmul) TH_LOG("oneDNN's first fc kernel here is %s", first);
	} else {
		ASSERT_LE(0, matmul) TH_LOG("oneDNN's first fc kernel here is %s", first);
		EXPECT_STREQ(first, exec_layer_impl(em, 1, matmul, 1));
	}
	EXPECT_EQ(3, exec_layer_nr_versions(em, 1));
	exec_model_free(em);
	model_free(m);
}

/*
 * Whether oneDNN has an implementation whose name starts with `impl` for a
 * 3x3 stride-1 conv of ic -> oc channels in `groups` groups over [1, ic,
 * hw, hw] (src and dst in `tag`, weights in oneDNN's choice of layout).
 */
static bool onednn_offers_3x3(dnnl_alg_kind_t alg, int64_t ic, int64_t oc, int64_t groups,
			      int64_t hw, dnnl_format_tag_t tag, const char *impl)
{
	dnnl_dims_t sd = { 1, ic, hw, hw }, dd = { 1, oc, hw, hw }, st = { 1, 1 }, pad = { 1, 1 };
	dnnl_dims_t gwd = { groups, oc / groups, ic / groups, 3, 3 }, wd = { oc, ic, 3, 3 };
	dnnl_memory_desc_t src, wei, dst;
	dnnl_primitive_desc_iterator_t it;
	dnnl_convolution_desc_t desc;
	dnnl_engine_t engine;
	bool found = false;

	dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, tag);
	dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, tag);
	if (groups > 1)
		dnnl_memory_desc_init_by_tag(&wei, 5, gwd, dnnl_f32, dnnl_format_tag_any);
	else
		dnnl_memory_desc_init_by_tag(&wei, 4, wd, dnnl_f32, dnnl_format_tag_any);
	if (dnnl_engine_create(&engine, dnnl_cpu, 0))
		return false;
	if (!dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference, alg, &src, &wei,
						NULL, &dst, st, pad, pad) &&
	    !dnnl_primitive_desc_iterator_create(&it, &desc, NULL, engine, NULL)) {
		do {
			dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
			const char *s = "";

			if (!pd)
				break;
			dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s);
			found = !strncmp(s, impl, strlen(impl));
			dnnl_primitive_desc_destroy(pd);
		} while (!found && dnnl_primitive_desc_iterator_next(it) == dnnl_success);
		dnnl_primitive_desc_iterator_destroy(it);
	}
	dnnl_engine_destroy(engine);
	return found;
}

/* Whether oneDNN offers jit_dw for a depthwise 3x3 conv over [1, c, hw, hw] in NHWC. */
static bool onednn_offers_jit_dw(int64_t c, int64_t hw)
{
	return onednn_offers_3x3(dnnl_convolution_direct, c, c, c, hw, dnnl_nhwc, "jit_dw");
}

/*
 * A depthwise conv's first version is oneDNN's jit_dw wherever oneDNN has
 * it (on AVX-512 it lists brdgmm_dw first, slower here; ops_conv_test checks
 * the outputs of every version against the reference).
 */
TEST(exec_load__depthwise_takes_jit_dw_where_offered)
{
	struct model *m = ref_model_new("dw", 9, 3);
	int64_t d[4] = { 1, 32, 12, 12 };
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct coloc_err cerr = { 0 };
	struct exec_model *em;
	int in = 0, dw;

	ref_model_add(m, MODEL_OP_INPUT, "in", 0, NULL, 4, d);
	dw = ref_model_add_conv(m, in, 32, 3, 1, 1, false, MODEL_ACT_SWISH);
	m->layers[dw].conv.groups = 32;
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	if (onednn_offers_jit_dw(32, 12)) {
		EXPECT_EQ(0, strncmp(exec_layer_impl(em, dw, 0, 1), "jit_dw", 6))
		TH_LOG("version 0 runs %s", exec_layer_impl(em, dw, 0, 1));
	} else {
		TH_LOG("oneDNN offers no jit_dw here: version 0 runs %s",
		       exec_layer_impl(em, dw, 0, 1));
	}
	exec_model_free(em);
	model_free(m);
}

/*
 * A wide conv gets its two split versions (not the blocked fallback) on a
 * machine where oneDNN's first choice is a brgemm kernel, and all three
 * versions use one weight buffer: resident memory grows by one copy of
 * the weights, not three.
 */
TEST(exec_load__conv_split_versions_share_weights)
{
	struct model *m = ref_model_new("wide", 5, 4);
	int64_t in_d[4] = { 1, 256, 14, 14 };
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct exec_model *em;
	struct coloc_err cerr = { 0 };
	size_t weights;

	ref_model_add(m, MODEL_OP_INPUT, "in", 0, NULL, 4, in_d);
	ref_model_add_conv(m, 0, 512, 3, 1, 1, false, MODEL_ACT_RELU);
	weights = 512 * 256 * 9 * sizeof(float);
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	if (!strstr(exec_layer_impl(em, 1, 0, 1), "brg")) {
		char impl[128];

		snprintf(impl, sizeof(impl), "%s", exec_layer_impl(em, 1, 0, 1));
		exec_model_free(em);
		model_free(m);
		SKIP(return, "oneDNN's default conv here is %s, not brgemm", impl);
	}
	ASSERT_EQ(3, exec_layer_nr_versions(em, 1));
	EXPECT_STREQ("onednn-nhwc", exec_layer_version_name(em, 1, 0));
	EXPECT_STREQ("row-split", exec_layer_version_name(em, 1, 1));
	EXPECT_STREQ("oc-split", exec_layer_version_name(em, 1, 2));
	EXPECT_LT(exec_model_resident_bytes(em), 2 * weights)
	TH_LOG("resident %zu bytes for %zu bytes of weights", exec_model_resident_bytes(em),
	       weights);
	exec_model_free(em);
	model_free(m);
}

/*
 * A 3x3 stride-1 conv with small weights gets a "winograd" version where
 * oneDNN has Winograd's algorithm for its shape, its activation a step of
 * its own where oneDNN cannot fuse it (ops_conv_test checks every version's
 * output, with each activation); one with more than 2 MiB of weights, one
 * with 3 input channels, a 1x1 conv and a depthwise conv get none.
 */
TEST(exec_load__winograd_only_for_3x3_with_small_weights)
{
	struct model *m = ref_model_new("wino", 11, 7);
	int64_t d[4] = { 1, 256, 14, 14 }, rgb[4] = { 1, 3, 14, 14 };
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct coloc_err cerr = { 0 };
	struct exec_model *em;
	int small, big, one, dw, three, v;

	ref_model_add(m, MODEL_OP_INPUT, "in", 0, NULL, 4, d);
	ref_model_add(m, MODEL_OP_INPUT, "rgb", 0, NULL, 4, rgb);
	three = ref_model_add_conv(m, 1, 32, 3, 1, 1, false, MODEL_ACT_RELU);
	/* 288 KiB, and leaky ReLU, which oneDNN's Winograd does not fuse */
	small = ref_model_add_conv(m, 0, 32, 3, 1, 1, false, MODEL_ACT_LEAKY_RELU);
	m->layers[small].act_alpha = 0.1f;
	big = ref_model_add_conv(m, 0, 256, 3, 1, 1, false, MODEL_ACT_RELU); /* 2.25 MiB */
	one = ref_model_add_conv1x1(m, 0, 256, MODEL_ACT_RELU);
	dw = ref_model_add_conv(m, 0, 256, 3, 1, 1, false, MODEL_ACT_RELU);
	m->layers[dw].conv.groups = 256;
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	if (!onednn_offers_3x3(dnnl_convolution_winograd, 256, 32, 1, 14, dnnl_format_tag_any,
			       "jit")) {
		EXPECT_EQ(-1, exec_layer_version_index(em, small, "winograd"));
		exec_model_free(em);
		model_free(m);
		SKIP(return, "oneDNN has no fp32 Winograd conv on this CPU");
	}
	v = exec_layer_version_index(em, small, "winograd");
	ASSERT_LE(0, v);
	EXPECT_NE(NULL, strstr(exec_layer_impl(em, small, v, 1), "wino"))
	TH_LOG("winograd runs %s", exec_layer_impl(em, small, v, 1));
	EXPECT_NE(NULL, strstr(exec_layer_impl(em, small, v, 1), "+act"));
	EXPECT_EQ(-1, exec_layer_version_index(em, big, "winograd"));
	EXPECT_EQ(-1, exec_layer_version_index(em, one, "winograd"));
	EXPECT_EQ(-1, exec_layer_version_index(em, dw, "winograd"));
	EXPECT_EQ(-1, exec_layer_version_index(em, three, "winograd"));
	exec_model_free(em);
	model_free(m);
}

/* A reshape of a dense tensor is an alias of its input: no step, same bytes. */
TEST(exec_load__plain_reshape_is_free)
{
	struct model *m = ref_model_new("reshape", 3, 4);
	int64_t d[3] = { 2, 3, 4 }, od[2] = { 6, 4 };
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct exec_model *em;
	struct exec_query *q;
	float got[24], *in;
	int zero = 0;
	struct coloc_err cerr = { 0 };

	ref_model_add(m, MODEL_OP_INPUT, "in", 0, NULL, 3, d);
	ref_model_add(m, MODEL_OP_RESHAPE, "r", 1, &zero, 2, od);
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	q = exec_query_new(em);
	in = exec_query_input(q, 0);
	for (int i = 0; i < 24; i++)
		in[i] = (float)i * 0.5f;
	EXPECT_STREQ("alias", exec_layer_impl(em, 1, 0, 1));
	ASSERT_EQ(0, exec_run_block(em, q, 0, 2, NULL, &opts.cpus, NULL));
	ASSERT_EQ(0, exec_query_read_output(q, 1, got, 24));
	for (int i = 0; i < 24; i++)
		EXPECT_EQ((float)i * 0.5f, got[i]);
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
}

/* oneDNN writes its verbose log to stdout: capture it in a file. */
static int capture_stdout(char *path, size_t len, int *saved)
{
	int fd;

	snprintf(path, len, "/tmp/coloc-exec-verbose-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	fflush(stdout);
	*saved = dup(1);
	dup2(fd, 1);
	close(fd);
	return 0;
}

static int count_lines(const char *path, const char *needle)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* Threads of this process: entries of /proc/self/task. */
static int nr_tasks(void)
{
	return tu_nr_dir_entries("/proc/self/task");
}

TEST_F(exec, run_block__creates_no_primitives_nor_threads)
{
	int tasks = nr_tasks();
	struct exec_cpuset sets[2] = { { .nr = 1, .cpus = { 0 } }, { .nr = 2, .cpus = { 0, 1 } } };
	uint64_t before = exec_model_nr_primitives(self->em);
	int n = self->m->nr_layers, saved = -1, *versions = calloc((size_t)n, sizeof(int));
	char path[64];

	ASSERT_GT(before, (uint64_t)n);
	ASSERT_EQ(0, capture_stdout(path, sizeof(path), &saved));
	ASSERT_EQ(dnnl_success, dnnl_set_verbose(2));
	for (int v = 0; v < 3; v++) {
		for (int li = 0; li < n; li++)
			versions[li] = v < exec_layer_nr_versions(self->em, li) ? v : 0;
		for (int s = 0; s < self->opts.cpus.nr; s++)
			ASSERT_EQ(0, exec_run_block(self->em, self->q, 0, n, versions, &sets[s],
						    NULL));
	}
	dnnl_set_verbose(0);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	EXPECT_EQ(before, exec_model_nr_primitives(self->em));
	EXPECT_EQ(tasks, nr_tasks());
	EXPECT_EQ(0, count_lines(path, ",create"));
	EXPECT_GT(count_lines(path, ",exec,"), n);
	unlink(path);
	free(versions);
}

/* ---- pinning ------------------------------------------------------------------ */

#define SAMPLER_MAX_TASKS 64

/*
 * Watches every thread of the process but itself: a thread that gained CPU
 * time since the last look is recorded as having run on the CPU it last ran
 * on (field 39 of its stat). Idle threads are not counted where they sleep.
 */
struct sampler {
	pthread_t thread;
	volatile int stop;
	pid_t self;
	int nr;
	pid_t tids[SAMPLER_MAX_TASKS];
	uint64_t ticks[SAMPLER_MAX_TASKS];
	uint64_t ran_on; /* bit c: some thread of the process ran on cpu c */
	int samples;
};

/* CPU time (utime + stime) and the CPU last run on, from /proc/self/task/TID/stat. */
static int task_stat(pid_t tid, uint64_t *ticks, int *cpu)
{
	unsigned long long ut, st;
	char path[64], buf[1024], *p;
	FILE *f;
	size_t len;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces */
	if (!p ||
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
		   "%*d %*u %*u %*d %*u %*u %*u %*u %*u %*u %*u %*u %*u %*u %*u %*u %*u %*d %d",
		   &ut, &st, cpu) != 3)
		return -1;
	*ticks = ut + st;
	return 0;
}

static void sampler_look(struct sampler *s)
{
	struct dirent *e;
	DIR *d = opendir("/proc/self/task");

	if (!d)
		return;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		uint64_t ticks;
		int i, cpu;

		if (tid <= 0 || tid == s->self || task_stat(tid, &ticks, &cpu))
			continue;
		for (i = 0; i < s->nr && s->tids[i] != tid; i++)
			;
		if (i == s->nr) {
			if (s->nr == SAMPLER_MAX_TASKS)
				continue;
			s->tids[s->nr++] = tid;
			s->ticks[i] = ticks;
			continue;
		}
		if (ticks > s->ticks[i] && cpu >= 0 && cpu < 64)
			s->ran_on |= 1ull << cpu;
		s->ticks[i] = ticks;
	}
	closedir(d);
	s->samples++;
}

static void *sample_cpus(void *arg)
{
	struct sampler *s = arg;
	cpu_set_t all;

	s->self = (pid_t)syscall(SYS_gettid);
	/* Created by a pinned thread: free the sampler to run beside the team. */
	CPU_ZERO(&all);
	for (int c = 0; c < nr_cpus() && c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	sched_setaffinity(0, sizeof(all), &all);
	while (!s->stop) {
		sampler_look(s);
		usleep(2000);
	}
	return NULL;
}

/* The calling thread (team thread 0, and the parent of any new team thread) is confined. */
static bool caller_confined_to(uint64_t allowed)
{
	cpu_set_t mask;

	if (sched_getaffinity(0, sizeof(mask), &mask))
		return false;
	for (int c = 0; c < 64 && c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mask) && !(allowed & (1ull << c)))
			return false;
	return CPU_COUNT(&mask) > 0;
}

TEST_F(exec, run_block__threads_run_only_on_block_cores)
{
	struct exec_cpuset sets[3] = { { .nr = 1, .cpus = { 0 } },
				       { .nr = 1, .cpus = { 1 } },
				       { .nr = 2, .cpus = { 0, 1 } } };
	int n = self->m->nr_layers;

	if (self->opts.cpus.nr < 2)
		SKIP(return, "needs 2 online CPUs");
	for (int s = 0; s < 3; s++) {
		struct sampler smp = { .self = -1 };
		uint64_t allowed = 0;
		int cpus[2] = { -1, -1 };

		for (int i = 0; i < sets[s].nr; i++)
			allowed |= 1ull << sets[s].cpus[i];
		ASSERT_EQ(0, exec_run_block(self->em, self->q, 0, n, NULL, &sets[s], NULL));
		/* Inside the team, thread i runs on cpus[i] (libgomp reuses its threads). */
#pragma omp parallel num_threads(sets[s].nr)
		cpus[omp_get_thread_num()] = sched_getcpu();
		for (int i = 1; i < sets[s].nr; i++)
			EXPECT_EQ(sets[s].cpus[i], cpus[i]);
		EXPECT_TRUE(caller_confined_to(allowed));

		/*
		 * Threads left out of the team were moved off the set and may spin
		 * there briefly (GOMP_SPINCOUNT) after the pinning: let that end, then
		 * no thread at all may gain CPU time outside the set while blocks run.
		 */
		usleep(100000);
		ASSERT_EQ(0, pthread_create(&smp.thread, NULL, sample_cpus, &smp));
		/* Run until the sampler has looked often enough (bounded). */
		for (int it = 0; it < 30 || (smp.samples < 20 && it < 5000); it++)
			ASSERT_EQ(0, exec_run_block(self->em, self->q, 0, n, NULL, &sets[s], NULL));
		smp.stop = 1;
		pthread_join(smp.thread, NULL);
		EXPECT_GT(smp.samples, 0);
		EXPECT_NE(0, smp.ran_on & allowed);
		EXPECT_EQ(0, smp.ran_on & ~allowed);
		EXPECT_TRUE(caller_confined_to(allowed));
		TH_LOG("set %d: %d threads watched, ran on cpus %#llx, allowed %#llx", s, smp.nr,
		       (unsigned long long)smp.ran_on, (unsigned long long)allowed);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

TEST_F(exec, run_block__measures_core_switch_cost)
{
	struct exec_cpuset sets[3] = { { .nr = 1, .cpus = { 0 } },
				       { .nr = 2, .cpus = { 0, 1 } },
				       { .nr = 1, .cpus = { 1 } } };
	enum { RUNS = 300 };
	uint64_t sw[RUNS];

	if (self->opts.cpus.nr < 2)
		SKIP(return, "needs 2 online CPUs");
	for (int i = 0; i < RUNS; i++) {
		struct exec_block_stats st;

		/* One cheap layer (the pool), so the switch dominates the block. */
		ASSERT_EQ(0, exec_run_block(self->em, self->q, 2, 3, NULL, &sets[i % 3], &st));
		ASSERT_LE(st.switch_ns, st.latency_ns);
		sw[i] = st.switch_ns;
	}
	qsort(sw, RUNS, sizeof(sw[0]), cmp_u64);
	printf("# block switch cost over %d switches: p50 %.1f us, p99 %.1f us, max %.1f us\n",
	       RUNS, sw[RUNS / 2] / 1e3, sw[RUNS * 99 / 100] / 1e3, sw[RUNS - 1] / 1e3);
	fflush(stdout);
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

TEST_HARNESS_MAIN
