// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The operators that reshape, reduce or normalise, against the plain-C
 * reference (tests/ops_fixture.h): resize, reduce, pad, concat, layer norm,
 * softmax, lrn, transpose, reshape and slice, on the plain and the NHWC
 * layout.
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

TEST_HARNESS_MAIN
