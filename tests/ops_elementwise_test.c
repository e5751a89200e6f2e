// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The elementwise operators against the plain-C reference
 * (tests/ops_fixture.h): each activation, add and mul with broadcasting
 * and mixed layouts, a residual add fused into its conv (and not fused
 * when read later or an input), each binary op by layer and by constant,
 * and log.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "reference.h"
#include "ops_fixture.h"

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

TEST_HARNESS_MAIN
