// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Which kernel versions the executor builds for a layer: two versions never
 * run the same way; an fc, a depthwise conv, a wide conv and a 3x3 conv get
 * the versions oneDNN's own offers call for on this CPU (asked of oneDNN
 * here, independently); split versions share one copy of the weights; a
 * plain reshape is an alias, no step. The outputs of every version are
 * ops_conv_test's and executor_test's.
 */
#define _GNU_SOURCE
#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "kselftest_harness.h"
#include "exec_fixture.h"

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

TEST_HARNESS_MAIN
