// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Every operator, and every kernel version of it, against the plain-C
 * reference (tests/reference.c) on small random tensors, at 1 core and (when
 * the machine has two) 2 cores. Each test builds a tiny model: inputs, then
 * the operator under test, sometimes behind a conv so that its input arrives
 * in the executor's NHWC layout rather than the plain one.
 *
 * Tolerance: max |got - ref| <= 1e-4 * (1 + max |ref|). The executor
 * accumulates in fp32 in an order of its choosing; for the dot products here
 * (K <= 600) the rounding error is below K * 2^-24 * max|terms| ~ 4e-5 of
 * the magnitude, and oneDNN's polynomial approximations of exp/erf/tanh are
 * good to ~1e-6 relative. A wrong index, layout or missing bias is off by
 * O(1) instead.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "reference.h"

#define TOL 1e-4f

static uint32_t rnd_state = 12345;
/* Inputs are uniform in [-input_scale, input_scale). */
static float input_scale = 1.0f;

static float rnd(void)
{
	rnd_state = rnd_state * 1664525u + 1013904223u;
	return input_scale * ((float)(rnd_state >> 8) / 16777216.0f * 2.0f - 1.0f);
}

/* Runs every version of every layer at 1 and 2 cores; checks the last layer. */
static void check_model(struct __test_metadata *_metadata, struct model *m)
{
	struct exec_cpuset sets[2] = { { .nr = 1, .cpus = { 0 } }, { .nr = 2, .cpus = { 0, 1 } } };
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	int nr_sets = 1, last = m->nr_layers - 1, max_versions = 1;
	float **ref = calloc((size_t)m->nr_layers, sizeof(float *));
	int64_t n = model_shape_elems(&m->layers[last].out);
	float *got = malloc((size_t)n * sizeof(float));
	struct exec_model *em;
	struct exec_query *q;
	struct coloc_err cerr = { 0 };

	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
		opts.cpus = sets[1];
		nr_sets = 2;
	}
	ASSERT_NE(NULL, ref);
	ASSERT_NE(NULL, got);
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("load: %s", coloc_err_str(&cerr));
	q = exec_query_new(em);
	ASSERT_NE(NULL, q);
	for (int li = 0; li < m->nr_layers; li++) {
		const float *ins[MODEL_MAX_INPUTS];
		int64_t e = model_shape_elems(&m->layers[li].out);

		ref[li] = malloc((size_t)e * sizeof(float));
		ASSERT_NE(NULL, ref[li]);
		if (m->layers[li].op == MODEL_OP_INPUT) {
			float *in = exec_query_input(q, li);

			ASSERT_NE(NULL, in);
			for (int64_t i = 0; i < e; i++)
				in[i] = ref[li][i] = rnd();
			continue;
		}
		for (int j = 0; j < m->layers[li].nr_inputs; j++)
			ins[j] = ref[m->layers[li].inputs[j]];
		ASSERT_EQ(0, ref_layer(m, li, ins, ref[li]));
		if (exec_layer_nr_versions(em, li) > max_versions)
			max_versions = exec_layer_nr_versions(em, li);
	}
	for (int v = 0; v < max_versions; v++) {
		int *versions = calloc((size_t)m->nr_layers, sizeof(int));

		ASSERT_NE(NULL, versions);
		for (int li = 0; li < m->nr_layers; li++)
			versions[li] = v < exec_layer_nr_versions(em, li) ? v : 0;
		for (int s = 0; s < nr_sets; s++) {
			struct exec_block_stats st;
			float max_err, max_ref;

			ASSERT_EQ(0,
				  exec_run_block(em, q, 0, m->nr_layers, versions, &sets[s], &st));
			ASSERT_EQ(0, exec_query_read_output(q, last, got, (size_t)n));
			ref_compare(got, ref[last], n, &max_err, &max_ref);
			EXPECT_LE(max_err, TOL * (1.0f + max_ref))
			TH_LOG("%s: version %d (%s: %s) on %d cores: max err %g, max |ref| %g",
			       m->layers[last].name, v,
			       exec_layer_version_name(em, last, versions[last]),
			       exec_layer_impl(em, last, versions[last], sets[s].nr), sets[s].nr,
			       max_err, max_ref);
		}
		free(versions);
	}
	for (int li = 0; li < m->nr_layers; li++)
		free(ref[li]);
	free(ref);
	free(got);
	exec_query_free(q);
	exec_model_free(em);
}

static int add_input(struct model *m, int ndims, const int64_t *dims)
{
	ref_model_add(m, MODEL_OP_INPUT, "in", 0, NULL, ndims, dims);
	return m->nr_layers - 1;
}

struct conv_case {
	int64_t n, ic, h, w, oc, groups;
	int k, stride, dil, pad_t, pad_l, pad_b, pad_r;
	bool bias, bn;
	enum model_act act;
	float alpha;
};

static int64_t conv_out(int64_t in, int k, int stride, int dil, int pa, int pb)
{
	return (in + pa + pb - (int64_t)dil * (k - 1) - 1) / stride + 1;
}

static int add_conv(struct model *m, int in, const struct conv_case *c)
{
	const struct model_shape *is = &m->layers[in].out;
	int64_t od[4] = { is->dims[0], c->oc,
			  conv_out(is->dims[2], c->k, c->stride, c->dil, c->pad_t, c->pad_b),
			  conv_out(is->dims[3], c->k, c->stride, c->dil, c->pad_l, c->pad_r) };
	struct model_layer *l = ref_model_add(m, MODEL_OP_CONV, "conv", 1, &in, 4, od);

	l->conv = (struct model_conv){
		.out_channels = c->oc,
		.kh = c->k,
		.kw = c->k,
		.stride_h = c->stride,
		.stride_w = c->stride,
		.pad_t = c->pad_t,
		.pad_l = c->pad_l,
		.pad_b = c->pad_b,
		.pad_r = c->pad_r,
		.dil_h = c->dil,
		.dil_w = c->dil,
		.groups = c->groups,
		.bias = c->bias,
		.batch_norm = c->bn,
	};
	l->act = c->act;
	l->act_alpha = c->alpha;
	l->act_beta = 0.5f; /* hard_sigmoid's offset; the other activations ignore it */
	return m->nr_layers - 1;
}

static void check_conv(struct __test_metadata *_metadata, const struct conv_case *c)
{
	struct model *m = ref_model_new("conv", 7, 4);
	int64_t d[4] = { c->n, c->ic, c->h, c->w };

	add_conv(m, add_input(m, 4, d), c);
	check_model(_metadata, m);
	model_free(m);
}

FIXTURE(ops)
{
	int unused;
};

FIXTURE_SETUP(ops)
{
	self->unused = 0;
}

FIXTURE_TEARDOWN(ops)
{
}

TEST_F(ops, conv__plain_3x3_matches_reference)
{
	struct conv_case c = { .n = 1,
			       .ic = 32,
			       .h = 9,
			       .w = 9,
			       .oc = 48,
			       .groups = 1,
			       .k = 3,
			       .stride = 1,
			       .dil = 1,
			       .pad_t = 1,
			       .pad_l = 1,
			       .pad_b = 1,
			       .pad_r = 1 };
	check_conv(_metadata, &c);
}

TEST_F(ops, conv__wide_output_split_matches_reference)
{
	struct conv_case c = { .n = 1,
			       .ic = 64,
			       .h = 7,
			       .w = 7,
			       .oc = 192,
			       .groups = 1,
			       .k = 3,
			       .stride = 1,
			       .dil = 1,
			       .pad_t = 1,
			       .pad_l = 1,
			       .pad_b = 1,
			       .pad_r = 1,
			       .bias = true,
			       .act = MODEL_ACT_RELU };
	check_conv(_metadata, &c);
}

TEST_F(ops, conv__batch_of_two_1x1_matches_reference)
{
	struct conv_case c = { .n = 2,
			       .ic = 32,
			       .h = 6,
			       .w = 7,
			       .oc = 64,
			       .groups = 1,
			       .k = 1,
			       .stride = 1,
			       .dil = 1,
			       .bias = true };
	check_conv(_metadata, &c);
}

TEST_F(ops, conv__three_input_channels_matches_reference)
{
	struct conv_case c = { .n = 1,
			       .ic = 3,
			       .h = 11,
			       .w = 11,
			       .oc = 16,
			       .groups = 1,
			       .k = 3,
			       .stride = 2,
			       .dil = 1,
			       .pad_t = 1,
			       .pad_l = 1,
			       .pad_b = 1,
			       .pad_r = 1,
			       .bias = true,
			       .act = MODEL_ACT_RELU };
	check_conv(_metadata, &c);
}

TEST_F(ops, conv__grouped_matches_reference)
{
	struct conv_case c = { .n = 1,
			       .ic = 32,
			       .h = 8,
			       .w = 8,
			       .oc = 32,
			       .groups = 4,
			       .k = 3,
			       .stride = 1,
			       .dil = 1,
			       .pad_t = 1,
			       .pad_l = 1,
			       .pad_b = 1,
			       .pad_r = 1,
			       .bias = true };
	check_conv(_metadata, &c);
}

TEST_F(ops, conv__depthwise_matches_reference)
{
	struct conv_case c = { .n = 1,
			       .ic = 32,
			       .h = 9,
			       .w = 9,
			       .oc = 32,
			       .groups = 32,
			       .k = 3,
			       .stride = 2,
			       .dil = 1,
			       .pad_t = 1,
			       .pad_l = 1,
			       .pad_b = 1,
			       .pad_r = 1,
			       .bn = true,
			       .act = MODEL_ACT_RELU6 };
	check_conv(_metadata, &c);
}

TEST_F(ops, conv__strided_matches_reference)
{
	struct conv_case c = { .n = 1,
			       .ic = 16,
			       .h = 10,
			       .w = 10,
			       .oc = 32,
			       .groups = 1,
			       .k = 3,
			       .stride = 2,
			       .dil = 1,
			       .pad_t = 1,
			       .pad_l = 1,
			       .pad_b = 1,
			       .pad_r = 1 };
	check_conv(_metadata, &c);
}

TEST_F(ops, conv__dilated_matches_reference)
{
	struct conv_case c = { .n = 1,
			       .ic = 16,
			       .h = 10,
			       .w = 10,
			       .oc = 32,
			       .groups = 1,
			       .k = 3,
			       .stride = 1,
			       .dil = 2,
			       .pad_t = 2,
			       .pad_l = 2,
			       .pad_b = 2,
			       .pad_r = 2,
			       .bias = true };
	check_conv(_metadata, &c);
}

TEST_F(ops, conv__asymmetric_pad_matches_reference)
{
	struct conv_case c = { .n = 1,
			       .ic = 16,
			       .h = 9,
			       .w = 8,
			       .oc = 32,
			       .groups = 1,
			       .k = 3,
			       .stride = 2,
			       .dil = 1,
			       .pad_t = 0,
			       .pad_l = 1,
			       .pad_b = 2,
			       .pad_r = 1 };
	check_conv(_metadata, &c);
}

TEST_F(ops, conv__bias_and_each_activation_match_reference)
{
	static const enum model_act acts[] = { MODEL_ACT_RELU,	     MODEL_ACT_RELU6,
					       MODEL_ACT_LEAKY_RELU, MODEL_ACT_SIGMOID,
					       MODEL_ACT_SWISH,	     MODEL_ACT_GELU,
					       MODEL_ACT_TANH,	     MODEL_ACT_HARD_SIGMOID,
					       MODEL_ACT_HARD_SWISH, MODEL_ACT_CLIP };

	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++) {
		struct conv_case c = { .n = 1,
				       .ic = 16,
				       .h = 6,
				       .w = 6,
				       .oc = 32,
				       .groups = 1,
				       .k = 3,
				       .stride = 1,
				       .dil = 1,
				       .pad_t = 1,
				       .pad_l = 1,
				       .pad_b = 1,
				       .pad_r = 1,
				       .bias = true,
				       .act = acts[i],
				       .alpha = 0.1f };
		check_conv(_metadata, &c);
	}
}

TEST_F(ops, conv__batch_norm_folded_matches_reference)
{
	struct conv_case c = { .n = 1,
			       .ic = 32,
			       .h = 7,
			       .w = 7,
			       .oc = 32,
			       .groups = 1,
			       .k = 3,
			       .stride = 1,
			       .dil = 1,
			       .pad_t = 1,
			       .pad_l = 1,
			       .pad_b = 1,
			       .pad_r = 1,
			       .bias = true,
			       .bn = true,
			       .act = MODEL_ACT_RELU };
	check_conv(_metadata, &c);
}

static void check_fc(struct __test_metadata *_metadata, int ndims, const int64_t *in_dims,
		     int64_t out, bool bias, enum model_act act)
{
	struct model *m = ref_model_new("fc", 11, 4);
	int in = add_input(m, ndims, in_dims);
	int64_t od[MODEL_MAX_DIMS];
	struct model_layer *l;

	memcpy(od, in_dims, sizeof(int64_t) * (size_t)ndims);
	od[ndims - 1] = out;
	l = ref_model_add(m, MODEL_OP_FC, "fc", 1, &in, ndims, od);
	l->fc.out_features = out;
	l->fc.bias = bias;
	l->act = act;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, fc__2d_with_bias_matches_reference)
{
	int64_t d[2] = { 3, 64 };

	check_fc(_metadata, 2, d, 40, true, MODEL_ACT_NONE);
}

TEST_F(ops, fc__3d_gelu_matches_reference)
{
	int64_t d[3] = { 1, 5, 48 };

	check_fc(_metadata, 3, d, 96, true, MODEL_ACT_GELU);
}

static void check_matmul(struct __test_metadata *_metadata, int nd, const int64_t *a,
			 const int64_t *b, const int64_t *o, bool tb, float alpha)
{
	struct model *m = ref_model_new("matmul", 3, 4);
	int ins[2];
	struct model_layer *l;

	ins[0] = add_input(m, nd, a);
	ins[1] = add_input(m, nd, b);
	l = ref_model_add(m, MODEL_OP_MATMUL, "mm", 2, ins, nd, o);
	l->matmul.transpose_b = tb;
	l->matmul.alpha = alpha;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, matmul__batched_matches_reference)
{
	int64_t a[4] = { 2, 3, 5, 8 }, b[4] = { 2, 3, 8, 6 }, o[4] = { 2, 3, 5, 6 };

	check_matmul(_metadata, 4, a, b, o, false, 1.0f);
}

TEST_F(ops, matmul__transpose_b_alpha_matches_reference)
{
	int64_t a[4] = { 1, 4, 7, 16 }, b[4] = { 1, 4, 9, 16 }, o[4] = { 1, 4, 7, 9 };

	check_matmul(_metadata, 4, a, b, o, true, 0.125f);
}

TEST_F(ops, matmul__single_batch_row_split_matches_reference)
{
	int64_t a[3] = { 1, 7, 8 }, b[3] = { 1, 8, 5 }, o[3] = { 1, 7, 5 };

	check_matmul(_metadata, 3, a, b, o, false, 2.0f);
}

TEST_F(ops, matmul__broadcast_b_matches_reference)
{
	int64_t a[3] = { 3, 4, 8 }, b[3] = { 1, 8, 5 }, o[3] = { 3, 4, 5 };

	check_matmul(_metadata, 3, a, b, o, false, 1.0f);
}

static void check_pool(struct __test_metadata *_metadata, struct model_pool p, int64_t oh,
		       int64_t ow)
{
	struct model *m = ref_model_new("pool", 5, 4);
	int64_t d[4] = { 1, 16, 9, 9 }, od[4] = { 1, 16, oh, ow };
	int in = add_input(m, 4, d);

	ref_model_add(m, MODEL_OP_POOL, "pool", 1, &in, 4, od)->pool = p;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, pool__max_3x3_s2_matches_reference)
{
	struct model_pool p = { .kind = MODEL_POOL_MAX,
				.kh = 3,
				.kw = 3,
				.stride_h = 2,
				.stride_w = 2,
				.pad_t = 1,
				.pad_l = 1,
				.pad_b = 1,
				.pad_r = 1 };
	check_pool(_metadata, p, 5, 5);
}

TEST_F(ops, pool__avg_excludes_padding)
{
	struct model_pool p = { .kind = MODEL_POOL_AVG,
				.kh = 3,
				.kw = 3,
				.stride_h = 1,
				.stride_w = 1,
				.pad_t = 1,
				.pad_l = 1,
				.pad_b = 1,
				.pad_r = 1 };
	check_pool(_metadata, p, 9, 9);
}

TEST_F(ops, pool__global_avg_matches_reference)
{
	struct model_pool p = { .kind = MODEL_POOL_GLOBAL_AVG };

	check_pool(_metadata, p, 1, 1);
}

TEST_F(ops, act__each_activation_matches_reference)
{
	static const enum model_act acts[] = { MODEL_ACT_RELU,	     MODEL_ACT_RELU6,
					       MODEL_ACT_LEAKY_RELU, MODEL_ACT_SIGMOID,
					       MODEL_ACT_SWISH,	     MODEL_ACT_GELU,
					       MODEL_ACT_TANH,	     MODEL_ACT_HARD_SIGMOID,
					       MODEL_ACT_HARD_SWISH, MODEL_ACT_CLIP };

	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++) {
		struct model *m = ref_model_new("act", 5, 4);
		int64_t d[3] = { 2, 5, 33 };
		int in = add_input(m, 3, d);
		struct model_layer *l = ref_model_add(m, MODEL_OP_ACT, "act", 1, &in, 3, d);

		l->act = acts[i];
		l->act_alpha = 0.2f;
		l->act_beta = 0.5f;
		/* Wide enough to reach relu6's clip and the saturating tails. */
		input_scale = 8.0f;
		check_model(_metadata, m);
		input_scale = 1.0f;
		model_free(m);
	}
}

/* Binary ops behind a conv, so src0 arrives in NHWC and src1 broadcasts per channel. */
TEST_F(ops, add__per_channel_broadcast_on_nhwc_matches_reference)
{
	struct model *m = ref_model_new("add", 9, 6);
	int64_t d[4] = { 1, 16, 5, 5 }, bd[4] = { 1, 16, 1, 1 };
	struct conv_case c = { .ic = 16, .oc = 16, .groups = 1, .k = 1, .stride = 1, .dil = 1 };
	int ins[2];
	struct model_layer *l;

	ins[0] = add_conv(m, add_input(m, 4, d), &c);
	ins[1] = add_input(m, 4, bd);
	l = ref_model_add(m, MODEL_OP_ADD, "add", 2, ins, 4, d);
	l->act = MODEL_ACT_RELU;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, mul__trailing_broadcast_matches_reference)
{
	struct model *m = ref_model_new("mul", 9, 4);
	int64_t d[3] = { 2, 4, 8 }, bd[1] = { 8 };
	int ins[2];

	ins[0] = add_input(m, 3, d);
	ins[1] = add_input(m, 1, bd);
	ref_model_add(m, MODEL_OP_MUL, "mul", 2, ins, 3, d);
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, add__same_shape_mixed_layouts_matches_reference)
{
	struct model *m = ref_model_new("add", 9, 6);
	int64_t d[4] = { 1, 16, 5, 5 };
	struct conv_case c = { .ic = 16, .oc = 16, .groups = 1, .k = 1, .stride = 1, .dil = 1 };
	int ins[2];

	ins[1] = add_input(m, 4, d);
	ins[0] = add_conv(m, ins[1], &c);
	ref_model_add(m, MODEL_OP_ADD, "add", 2, ins, 4, d);
	check_model(_metadata, m);
	model_free(m);
}

/* Whether layer li's add became part of the conv before it (exec_fuse.c), on one core. */
static bool add_is_fused(struct __test_metadata *_metadata, const struct model *m, int li)
{
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct coloc_err cerr = { 0 };
	struct exec_model *em = exec_model_load(m, &opts, &cerr);
	bool fused;

	if (!em) {
		TH_LOG("load: %s", coloc_err_str(&cerr));
		return false;
	}
	fused = !strncmp(exec_layer_impl(em, li, 0, 1), "fused into ", 11);
	exec_model_free(em);
	return fused;
}

/*
 * Two ResNet-style blocks: r = conv(x); y = relu(conv(conv(r)) + r);
 * z = relu(conv(conv(y)) + y). Both adds are fused into the conv before
 * them, which sums in place into r's buffer, so the second block's
 * residual is itself a fused add's output. Every version of every conv
 * (row splits included), at 1 and 2 cores, against the reference.
 */
TEST_F(ops, add__residual_fused_into_conv_matches_reference)
{
	struct model *m = ref_model_new("residual", 9, 10);
	int64_t d[4] = { 1, 16, 6, 6 };
	struct conv_case c3 = { .ic = 16,
				.oc = 16,
				.groups = 1,
				.k = 3,
				.stride = 1,
				.dil = 1,
				.pad_t = 1,
				.pad_l = 1,
				.pad_b = 1,
				.pad_r = 1,
				.bias = true,
				.act = MODEL_ACT_RELU };
	struct conv_case c1 = {
		.ic = 16, .oc = 16, .groups = 1, .k = 1, .stride = 1, .dil = 1, .bn = true
	};
	int r, ins[2], y, z;

	r = add_conv(m, add_input(m, 4, d), &c3);
	ins[0] = add_conv(m, add_conv(m, r, &c3), &c1);
	ins[1] = r;
	ref_model_add(m, MODEL_OP_ADD, "add", 2, ins, 4, d)->act = MODEL_ACT_RELU;
	y = m->nr_layers - 1;
	ins[0] = add_conv(m, add_conv(m, y, &c3), &c1);
	ins[1] = y;
	ref_model_add(m, MODEL_OP_ADD, "add", 2, ins, 4, d)->act = MODEL_ACT_RELU;
	z = m->nr_layers - 1;
	check_model(_metadata, m);
	EXPECT_TRUE(add_is_fused(_metadata, m, y));
	EXPECT_TRUE(add_is_fused(_metadata, m, z));
	model_free(m);
}

/*
 * Where the residual is read after the conv (here by a second add), or is
 * a model input (a query sets it once), summing in place would corrupt it:
 * the add stays a step of its own, and the result is still right.
 */
TEST_F(ops, add__residual_read_later_or_input_is_not_fused)
{
	struct model *m = ref_model_new("residual", 9, 8);
	int64_t d[4] = { 1, 16, 5, 5 };
	struct conv_case c = { .ic = 16, .oc = 16, .groups = 1, .k = 1, .stride = 1, .dil = 1 };
	int x, r, ins[2], first, on_input;

	x = add_input(m, 4, d);
	r = add_conv(m, x, &c);
	ins[0] = add_conv(m, x, &c);
	ins[1] = r;
	ref_model_add(m, MODEL_OP_ADD, "add", 2, ins, 4, d);
	first = m->nr_layers - 1;
	ins[0] = add_conv(m, first, &c);
	ins[1] = x;
	ref_model_add(m, MODEL_OP_ADD, "add", 2, ins, 4, d);
	on_input = m->nr_layers - 1;
	ins[0] = on_input;
	ins[1] = r;
	ref_model_add(m, MODEL_OP_ADD, "add", 2, ins, 4, d);
	check_model(_metadata, m);
	EXPECT_FALSE(add_is_fused(_metadata, m, first));
	EXPECT_FALSE(add_is_fused(_metadata, m, on_input));
	model_free(m);
}

/*
 * Each binary op behind a conv (src0 in NHWC): by a per-channel layer made
 * positive by a sigmoid (so div stays finite), then by a constant [C, 1, 1]
 * from the weights, then const - x for sub.
 */
TEST_F(ops, binary__each_op_by_layer_and_constant_matches_reference)
{
	static const enum model_op bops[] = { MODEL_OP_ADD, MODEL_OP_MUL, MODEL_OP_SUB,
					      MODEL_OP_DIV, MODEL_OP_MAX, MODEL_OP_MIN };

	for (size_t i = 0; i < sizeof(bops) / sizeof(bops[0]); i++) {
		struct model *m = ref_model_new("binary", 11, 8);
		int64_t d[4] = { 2, 8, 5, 5 }, bd[4] = { 1, 8, 1, 1 };
		struct conv_case c = {
			.ic = 8, .oc = 8, .groups = 1, .k = 1, .stride = 1, .dil = 1
		};
		struct model_layer *l;
		int ins[2], x;

		x = add_input(m, 4, d);
		ins[0] = add_conv(m, x, &c);
		x = add_input(m, 4, bd);
		l = ref_model_add(m, MODEL_OP_ACT, "gate", 1, &x, 4, bd);
		l->act = MODEL_ACT_SIGMOID;
		ins[1] = m->nr_layers - 1;
		l = ref_model_add(m, bops[i], "by_layer", 2, ins, 4, d);
		l->act = MODEL_ACT_TANH;
		x = m->nr_layers - 1;
		l = ref_model_add(m, bops[i], "by_const", 1, &x, 4, d);
		l->binary = (struct model_binary){ .has_const = true,
						   .cshape = { .ndims = 3, .dims = { 8, 1, 1 } } };
		if (bops[i] == MODEL_OP_SUB) {
			x = m->nr_layers - 1;
			l = ref_model_add(m, MODEL_OP_SUB, "from_const", 1, &x, 4, d);
			l->binary = (struct model_binary){
				.has_const = true,
				.const_first = true,
				.cshape = { .ndims = 1, .dims = { 1 } },
			};
			l->act = MODEL_ACT_RELU;
		}
		check_model(_metadata, m);
		model_free(m);
	}
}

/* Nearest by factors 2 and 4 behind a conv (NHWC), bilinear up by 2 and to 7x5. */
TEST_F(ops, resize__nearest_and_linear_match_reference)
{
	static const struct {
		bool linear;
		int64_t oh, ow;
	} cases[] = { { false, 6, 20 }, { true, 6, 10 }, { true, 7, 5 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct model *m = ref_model_new("resize", 13, 4);
		int64_t d[4] = { 2, 8, 3, 5 }, od[4] = { 2, 8, cases[i].oh, cases[i].ow };
		struct conv_case c = {
			.ic = 8, .oc = 8, .groups = 1, .k = 1, .stride = 1, .dil = 1
		};
		struct model_layer *l;
		int x = add_conv(m, add_input(m, 4, d), &c);

		l = ref_model_add(m, MODEL_OP_RESIZE, "up", 1, &x, 4, od);
		l->resize.linear = cases[i].linear;
		check_model(_metadata, m);
		model_free(m);
	}
}

/* Transposed convolutions: PaddleOCR's 2x2 stride 2, grouped 3x3 stride 2 with padding, dilated. */
TEST_F(ops, deconv__strided_grouped_dilated_match_reference)
{
	static const struct model_conv cases[] = {
		{ .out_channels = 8,
		  .kh = 2,
		  .kw = 2,
		  .stride_h = 2,
		  .stride_w = 2,
		  .dil_h = 1,
		  .dil_w = 1,
		  .groups = 1,
		  .bias = true },
		{ .out_channels = 12,
		  .kh = 3,
		  .kw = 3,
		  .stride_h = 2,
		  .stride_w = 2,
		  .pad_t = 1,
		  .pad_l = 1,
		  .pad_b = 0,
		  .pad_r = 1,
		  .dil_h = 1,
		  .dil_w = 1,
		  .groups = 4 },
		{ .out_channels = 1,
		  .kh = 3,
		  .kw = 2,
		  .stride_h = 1,
		  .stride_w = 3,
		  .dil_h = 2,
		  .dil_w = 1,
		  .groups = 1,
		  .bias = true },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct model_conv *c = &cases[i];
		struct model *m = ref_model_new("deconv", 17, 3);
		int64_t d[4] = { 2, 8, 5, 6 }, od[4] = { 2, c->out_channels, 0, 0 };
		struct model_layer *l;
		int x = add_input(m, 4, d);

		od[2] = (d[2] - 1) * c->stride_h - c->pad_t - c->pad_b + c->dil_h * (c->kh - 1) + 1;
		od[3] = (d[3] - 1) * c->stride_w - c->pad_l - c->pad_r + c->dil_w * (c->kw - 1) + 1;
		l = ref_model_add(m, MODEL_OP_DECONV, "up", 1, &x, 4, od);
		l->conv = *c;
		l->act = i == 0 ? MODEL_ACT_RELU : MODEL_ACT_NONE;
		check_model(_metadata, m);
		model_free(m);
	}
}

/* Each reduction over H and W behind a conv (NHWC), and mean over the last axis of [2, 5, 33]. */
TEST_F(ops, reduce__each_kind_matches_reference)
{
	for (int k = MODEL_REDUCE_MEAN; k <= MODEL_REDUCE_SUM; k++) {
		struct model *m = ref_model_new("reduce", 19, 5);
		int64_t d[4] = { 2, 8, 5, 6 }, od[4] = { 2, 8, 1, 1 }, t[3] = { 2, 5, 33 },
			to[3] = { 2, 5, 1 };
		struct conv_case c = {
			.ic = 8, .oc = 8, .groups = 1, .k = 1, .stride = 1, .dil = 1
		};
		struct model_layer *l;
		int x = add_conv(m, add_input(m, 4, d), &c);

		l = ref_model_add(m, MODEL_OP_REDUCE, "hw", 1, &x, 4, od);
		l->reduce = (struct model_reduce){ .kind = (enum model_reduce_kind)k, .axes = 0xc };
		check_model(_metadata, m);
		model_free(m);
		m = ref_model_new("reduce", 19, 3);
		x = add_input(m, 3, t);
		l = ref_model_add(m, MODEL_OP_REDUCE, "last", 1, &x, 3, to);
		l->reduce = (struct model_reduce){ .kind = (enum model_reduce_kind)k, .axes = 0x4 };
		check_model(_metadata, m);
		model_free(m);
	}
}

/*
 * log of a conv's output squared (a mul of the layer by itself, as an
 * ONNX Pow 2 lowers) plus a constant in [0.5, 1.5): NHWC behind the conv,
 * and plain on a [2, 3, 33] input squared the same way; every input to the
 * log is at least 0.5, so no -inf or NaN enters the comparison.
 */
TEST_F(ops, log__of_squares_plus_const_matches_reference)
{
	static const int64_t d[4] = { 2, 8, 5, 6 }, t[3] = { 2, 3, 33 };
	const int64_t *dims[2] = { d, t };

	for (int i = 0; i < 2; i++) {
		struct model *m = ref_model_new("log", 29, 5);
		struct conv_case c = {
			.ic = 8, .oc = 8, .groups = 1, .k = 1, .stride = 1, .dil = 1
		};
		int nd = i ? 3 : 4, x = add_input(m, nd, dims[i]), ins[2];
		struct model_layer *l;

		if (!i)
			x = add_conv(m, x, &c);
		ins[0] = ins[1] = x;
		ref_model_add(m, MODEL_OP_MUL, "square", 2, ins, nd, dims[i]);
		x = m->nr_layers - 1;
		l = ref_model_add(m, MODEL_OP_ADD, "floor", 1, &x, nd, dims[i]);
		l->binary = (struct model_binary){ .has_const = true,
						   .cshape = { .ndims = 1, .dims = { 1 } } };
		x = m->nr_layers - 1;
		ref_model_add(m, MODEL_OP_LOG, "log", 1, &x, nd, dims[i]);
		check_model(_metadata, m);
		model_free(m);
	}
}

/* A zero border around H and W behind a conv (NHWC), and -1.5 before and after a sequence. */
TEST_F(ops, pad__constant_borders_match_reference)
{
	struct model *m = ref_model_new("pad", 23, 3);
	int64_t d[4] = { 2, 8, 5, 6 }, od[4] = { 2, 8, 8, 7 }, t[3] = { 2, 5, 33 },
		to[3] = { 2, 9, 34 };
	struct conv_case c = { .ic = 8, .oc = 8, .groups = 1, .k = 1, .stride = 1, .dil = 1 };
	struct model_layer *l;
	int x = add_conv(m, add_input(m, 4, d), &c);

	l = ref_model_add(m, MODEL_OP_PAD, "border", 1, &x, 4, od);
	l->pad = (struct model_pad){ .begin = { 0, 0, 1, 0 }, .end = { 0, 0, 2, 1 } };
	check_model(_metadata, m);
	model_free(m);
	m = ref_model_new("pad", 23, 2);
	x = add_input(m, 3, t);
	l = ref_model_add(m, MODEL_OP_PAD, "seq", 1, &x, 3, to);
	l->pad = (struct model_pad){ .begin = { 0, 3, 0 }, .end = { 0, 1, 1 }, .value = -1.5f };
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, concat__channels_of_nhwc_matches_reference)
{
	struct model *m = ref_model_new("concat", 13, 6);
	int64_t d[4] = { 1, 16, 5, 5 }, od[4] = { 1, 48, 5, 5 };
	struct conv_case c1 = { .ic = 16, .oc = 16, .groups = 1, .k = 1, .stride = 1, .dil = 1 };
	struct conv_case c2 = { .ic = 16,
				.oc = 32,
				.groups = 1,
				.k = 3,
				.stride = 1,
				.dil = 1,
				.pad_t = 1,
				.pad_l = 1,
				.pad_b = 1,
				.pad_r = 1 };
	int in = add_input(m, 4, d), ins[2];

	ins[0] = add_conv(m, in, &c1);
	ins[1] = add_conv(m, in, &c2);
	ref_model_add(m, MODEL_OP_CONCAT, "concat", 2, ins, 4, od)->axis = 1;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, concat__last_axis_of_plain_matches_reference)
{
	struct model *m = ref_model_new("concat", 13, 5);
	int64_t a[3] = { 2, 3, 4 }, b[3] = { 2, 3, 6 }, od[3] = { 2, 3, 10 };
	int ins[2];

	ins[0] = add_input(m, 3, a);
	ins[1] = add_input(m, 3, b);
	ref_model_add(m, MODEL_OP_CONCAT, "concat", 2, ins, 3, od)->axis = -1;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, layer_norm__last_dim_matches_reference)
{
	struct model *m = ref_model_new("ln", 17, 4);
	int64_t d[3] = { 1, 6, 64 };
	int in = add_input(m, 3, d);

	ref_model_add(m, MODEL_OP_LAYER_NORM, "ln", 1, &in, 3, d)->eps = 1e-5f;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, softmax__last_axis_matches_reference)
{
	struct model *m = ref_model_new("softmax", 17, 4);
	int64_t d[3] = { 2, 3, 10 };
	int in = add_input(m, 3, d);

	ref_model_add(m, MODEL_OP_SOFTMAX, "softmax", 1, &in, 3, d)->axis = -1;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, softmax__channel_axis_of_nhwc_matches_reference)
{
	struct model *m = ref_model_new("softmax", 17, 4);
	int64_t d[4] = { 1, 16, 3, 4 };
	struct conv_case c = { .ic = 16, .oc = 16, .groups = 1, .k = 1, .stride = 1, .dil = 1 };
	int in = add_conv(m, add_input(m, 4, d), &c);

	ref_model_add(m, MODEL_OP_SOFTMAX, "softmax", 1, &in, 4, d)->axis = 1;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, lrn__across_channels_matches_reference)
{
	struct model *m = ref_model_new("lrn", 19, 4);
	int64_t d[4] = { 1, 16, 5, 5 };
	int in = add_input(m, 4, d);
	struct model_layer *l = ref_model_add(m, MODEL_OP_LRN, "lrn", 1, &in, 4, d);

	l->lrn = (struct model_lrn){ .size = 5, .alpha = 1e-2f, .beta = 0.75f, .k = 2.0f };
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, transpose__heads_permutation_matches_reference)
{
	struct model *m = ref_model_new("transpose", 23, 4);
	int64_t d[4] = { 2, 3, 4, 5 }, od[4] = { 2, 4, 3, 5 };
	int in = add_input(m, 4, d);
	struct model_layer *l = ref_model_add(m, MODEL_OP_TRANSPOSE, "t", 1, &in, 4, od);

	l->perm[0] = 0;
	l->perm[1] = 2;
	l->perm[2] = 1;
	l->perm[3] = 3;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, transpose__of_nhwc_matches_reference)
{
	struct model *m = ref_model_new("transpose", 23, 4);
	int64_t d[4] = { 1, 16, 3, 4 }, od[4] = { 1, 4, 16, 3 };
	struct conv_case c = { .ic = 16, .oc = 16, .groups = 1, .k = 1, .stride = 1, .dil = 1 };
	int in = add_conv(m, add_input(m, 4, d), &c);
	struct model_layer *l = ref_model_add(m, MODEL_OP_TRANSPOSE, "t", 1, &in, 4, od);

	l->perm[0] = 0;
	l->perm[1] = 3;
	l->perm[2] = 1;
	l->perm[3] = 2;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, reshape__plain_then_fc_matches_reference)
{
	struct model *m = ref_model_new("reshape", 29, 4);
	int64_t d[3] = { 2, 3, 4 }, od[2] = { 6, 4 }, fd[2] = { 6, 8 };
	int in = add_input(m, 3, d), r;
	struct model_layer *l;

	ref_model_add(m, MODEL_OP_RESHAPE, "r", 1, &in, 2, od)->reshape.ndims = 2;
	r = m->nr_layers - 1;
	l = ref_model_add(m, MODEL_OP_FC, "fc", 1, &r, 2, fd);
	l->fc.out_features = 8;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, reshape__of_nhwc_flattens_in_logical_order)
{
	struct model *m = ref_model_new("reshape", 29, 4);
	int64_t d[4] = { 1, 16, 3, 3 }, od[2] = { 1, 144 };
	struct conv_case c = { .ic = 16, .oc = 16, .groups = 1, .k = 1, .stride = 1, .dil = 1 };
	int in = add_conv(m, add_input(m, 4, d), &c);

	ref_model_add(m, MODEL_OP_RESHAPE, "flatten", 1, &in, 2, od);
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, slice__middle_of_axis_matches_reference)
{
	struct model *m = ref_model_new("slice", 31, 4);
	int64_t d[3] = { 2, 7, 5 }, od[3] = { 2, 3, 5 };
	int in = add_input(m, 3, d);

	ref_model_add(m, MODEL_OP_SLICE, "s", 1, &in, 3, od)->slice =
		(struct model_slice){ .axis = 1, .start = 2, .len = 3 };
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, embed__looks_up_rows)
{
	struct model *m = ref_model_new("embed", 37, 4);
	int64_t d[2] = { 1, 7 }, od[3] = { 1, 7, 16 };
	int in = add_input(m, 2, d);
	struct model_layer *l = ref_model_add(m, MODEL_OP_EMBED, "emb", 1, &in, 3, od);
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct exec_layer_params p;
	struct exec_model *em;
	struct exec_query *q;
	float got[7 * 16], *ids;
	struct coloc_err cerr = { 0 };

	l->embed = (struct model_embed){ .vocab = 50, .dim = 16 };
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	q = exec_query_new(em);
	ids = exec_query_input(q, in);
	for (int i = 0; i < 7; i++)
		ids[i] = (float)((i * 13 + 5) % 50);
	ASSERT_EQ(0, exec_run_block(em, q, 0, 2, NULL, &opts.cpus, NULL));
	ASSERT_EQ(0, exec_query_read_output(q, 1, got, 7 * 16));
	ASSERT_EQ(0, exec_layer_params_generate(m, 1, &p));
	for (int i = 0; i < 7; i++)
		for (int j = 0; j < 16; j++)
			ASSERT_EQ(p.weights[((i * 13 + 5) % 50) * 16 + j], got[i * 16 + j]);
	/* An id outside the vocabulary is an error, not a wild read. */
	ids[3] = 50.0f;
	ASSERT_EQ(-ERANGE, exec_run_block(em, q, 0, 2, NULL, &opts.cpus, NULL));
	exec_layer_params_free(&p);
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
}

TEST_HARNESS_MAIN
