// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Every window operator, and every kernel version of it, against the
 * plain-C reference (tests/ops_fixture.h): conv (plain, wide, batched, few
 * channels, grouped, depthwise, strided, dilated, asymmetric pads, bias and
 * each activation, batch norm folded), deconv and pool.
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

TEST_HARNESS_MAIN
