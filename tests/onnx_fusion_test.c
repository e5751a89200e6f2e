// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ONNX importer's fusions and patterns: GELU, HardSwish/HardSigmoid,
 * self-gates as swish, LayerNormalization spelled out, constant operands
 * as binary layers, each checked against the plain-C reference; no fusion
 * into a layer something else reads; a GELU lookalike is refused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "model_open.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "profile.h"
#include "reference.h"
#include "serving.h"
#include "testutil.h"
#include "onnx_graph.h"

/*
 * GELU as PyTorch exports it (x * (1 + erf(x / sqrt 2)) * 0.5, its
 * constants from Constant nodes placed between the pattern's nodes) after
 * MatMul + Add becomes the fc's act=gelu; the other operand order, on a
 * graph input, becomes a standalone gelu layer.
 */
TEST(onnx_import__gelu_pattern_fuses)
{
	static const int64_t xd[3] = { 1, 3, 8 }, wd[2] = { 8, 6 }, bd[1] = { 6 };
	static const float sqrt2 = 1.41421356f;
	struct gb g = { 0 }, g2 = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(48, -1, 1), *b = rnd_fill(6, -1, 1), *x = rnd_fill(24, -2, 2);
	float *want = mem(24 * 4);

	init_f(&g, "W", 2, wd, w);
	init_f(&g, "b", 1, bd, b);
	init_f(&g, "sqrt2", 0, NULL, &sqrt2);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "MatMul", "fc1", NAMES("x", "W"), NAMES("m"));
	node(&g, "Add", "fc1_bias", NAMES("m", "b"), NAMES("h"));
	node(&g, "Div", "gelu_div", NAMES("h", "sqrt2"), NAMES("d"));
	node(&g, "Erf", "gelu_erf", NAMES("d"), NAMES("e"));
	const_node(&g, "one", 1.0f);
	node(&g, "Add", "gelu_add", NAMES("one", "e"), NAMES("a"));
	node(&g, "Mul", "gelu_mul", NAMES("h", "a"), NAMES("p"));
	const_node(&g, "half", 0.5f);
	node(&g, "Mul", "gelu_half", NAMES("p", "half"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 3, 6 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_FC, im.model->layers[1].op);
	EXPECT_EQ(MODEL_ACT_GELU, im.model->layers[1].act);
	ref_fc(x, w, b, 3, 8, 6, want);
	ref_act(want, 18, MODEL_ACT_GELU, 0, 0);
	run_compare(_metadata, &im, x, want, 18);
	onnx_import_free(&im);

	/* (1 + erf(x * (1 / sqrt 2))) * 0.5 * x on the graph input: a gelu layer */
	{
		static const float rsqrt2 = 0.70710678f, one = 1.0f, half = 0.5f;

		init_f(&g2, "r", 0, NULL, &rsqrt2);
		init_f(&g2, "one", 0, NULL, &one);
		init_f(&g2, "half", 0, NULL, &half);
	}
	g2.ins[g2.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g2, "Mul", "s", NAMES("x", "r"), NAMES("d"));
	node(&g2, "Erf", "erf", NAMES("d"), NAMES("e"));
	node(&g2, "Add", "add", NAMES("e", "one"), NAMES("a"));
	node(&g2, "Mul", "half", NAMES("half", "a"), NAMES("p"));
	node(&g2, "Mul", "gelu", NAMES("x", "p"), NAMES("y"));
	g2.outs[g2.nr_outs++] = vinfo("y", 3, xd, NULL);
	ASSERT_EQ(0, import(&g2, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_ACT, im.model->layers[1].op);
	EXPECT_EQ(MODEL_ACT_GELU, im.model->layers[1].act);
	memcpy(want, x, 24 * sizeof(float));
	ref_act(want, 24, MODEL_ACT_GELU, 0, 0);
	run_compare(_metadata, &im, x, want, 24);
	onnx_import_free(&im);
	arena_free();
}

/*
 * MobileNetV3 as PaddlePaddle exports it at opset 9: a Conv + hard swish
 * spelt Add 3, Clip(0, 6) (attributes), Mul x, Div 6; a 1x1 Conv +
 * HardSigmoid gating it by Mul. Both activations fuse into their convs.
 */
TEST(onnx_import__hard_swish_pattern_and_hard_sigmoid_fuse)
{
	static const int64_t wd[4] = { 4, 3, 3, 3 }, w2d[4] = { 4, 4, 1, 1 },
			     od[4] = { 1, 4, 8, 8 };
	static const float three = 3.0f, six = 6.0f;
	struct gb g = { .opset = 9 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_conv c1 = CONV3;
	struct model_shape s = { .ndims = 4, .dims = { 1, 4, 8, 8 } };
	float *w1 = rnd_fill(108, -1, 1), *w2 = rnd_fill(16, -1, 1), *b2 = rnd_fill(4, -1, 1);
	float *x = rnd_fill(192, -2, 2), *h = mem(256 * 4), *gt = mem(256 * 4),
	      *want = mem(256 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W1", 4, wd, w1);
	init_f(&g, "W2", 4, w2d, w2);
	init_f(&g, "B2", 1, C4, b2);
	init_f(&g, "three", 0, NULL, &three);
	init_f(&g, "six", 0, NULL, &six);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "Conv", "c1", NAMES("x", "W1"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Add", "hs_add", NAMES("c", "three"), NAMES("a"));
	n = node(&g, "Clip", "hs_clip", NAMES("a"), NAMES("r"));
	attr_float(n, "min", 0.0f);
	attr_float(n, "max", 6.0f);
	node(&g, "Mul", "hs_mul", NAMES("c", "r"), NAMES("m"));
	node(&g, "Div", "hs_div", NAMES("m", "six"), NAMES("h"));
	node(&g, "Conv", "c2", NAMES("h", "W2", "B2"), NAMES("e"));
	n = node(&g, "HardSigmoid", "gate", NAMES("e"), NAMES("gs"));
	attr_float(n, "alpha", 0.2f);
	attr_float(n, "beta", 0.5f);
	node(&g, "Mul", "se", NAMES("h", "gs"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(4, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_ACT_HARD_SWISH, im.model->layers[1].act);
	EXPECT_EQ(MODEL_ACT_HARD_SIGMOID, im.model->layers[2].act);
	EXPECT_EQ(0.2f, im.model->layers[2].act_alpha);
	EXPECT_EQ(0.5f, im.model->layers[2].act_beta);
	EXPECT_EQ(MODEL_OP_MUL, im.model->layers[3].op);
	ref_conv(x, X_DIMS, w1, NULL, &c1, od, h);
	ref_act(h, 256, MODEL_ACT_HARD_SWISH, 0, 0);
	c1 = ref_conv1x1(4, false);
	ref_conv(h, od, w2, b2, &c1, od, gt);
	ref_act(gt, 256, MODEL_ACT_HARD_SIGMOID, 0.2f, 0.5f);
	ref_binary(MODEL_OP_MUL, h, &s, gt, &s, want);
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);
	arena_free();
}

/*
 * x * Sigmoid(x) after a Conv becomes its act=swish (efficientnet's
 * export); x * HardSigmoid(x, 1/6, 1/2) on a graph input, and a HardSwish
 * node, become standalone hard_swish layers.
 */
TEST(onnx_import__self_gates_become_swish_and_hard_swish)
{
	static const int64_t od[4] = { 1, 4, 8, 8 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(108, -1, 1), *x = rnd_fill(192, -4, 4), *want = mem(256 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W", 4, W_DIMS, w);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "Conv", "c", NAMES("x", "W"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Sigmoid", "sig", NAMES("c"), NAMES("s"));
	node(&g, "Mul", "swish", NAMES("s", "c"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_ACT_SWISH, im.model->layers[1].act);
	ref_conv(x, X_DIMS, w, NULL, &CONV3, od, want);
	ref_act(want, 256, MODEL_ACT_SWISH, 0, 0);
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);

	g = (struct gb){ 0 };
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "HardSigmoid", "hsig", NAMES("x"), NAMES("s"));
	attr_float(n, "alpha", 1.0f / 6);
	attr_float(n, "beta", 0.5f);
	node(&g, "Mul", "gate", NAMES("x", "s"), NAMES("h"));
	node(&g, "HardSwish", "hsw", NAMES("h"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, X_DIMS, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(3, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_ACT, im.model->layers[1].op);
	EXPECT_EQ(MODEL_ACT_HARD_SWISH, im.model->layers[1].act);
	EXPECT_EQ(MODEL_ACT_HARD_SWISH, im.model->layers[2].act);
	memcpy(want, x, 192 * sizeof(float));
	ref_act(want, 192, MODEL_ACT_HARD_SWISH, 0, 0);
	ref_act(want, 192, MODEL_ACT_HARD_SWISH, 0, 0);
	run_compare(_metadata, &im, x, want, 192);
	onnx_import_free(&im);
	arena_free();
}

/*
 * Constant operands that fold into no layer become binary layers holding
 * them: an input normalised by Sub of a mean [3, 1, 1] and Div by a std
 * [1, 3, 1, 1], a Conv then Max with a scalar (embedding_model's leaky
 * clamp), Sub from a constant (1 - x), and Sub of two computed tensors
 * (one through Min with a constant). Div of a constant by a tensor is
 * refused.
 */
TEST(onnx_import__constant_operands_become_binary_layers)
{
	static const int64_t c3[3] = { 3, 1, 1 }, c13[4] = { 1, 3, 1, 1 }, od[4] = { 1, 4, 8, 8 };
	static const float lo = 0.1f, one = 1.0f, cap = 0.3f;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_shape xs = { .ndims = 4, .dims = { 1, 3, 8, 8 } };
	struct model_shape ms = { .ndims = 3, .dims = { 3, 1, 1 } };
	struct model_shape ss = { .ndims = 4, .dims = { 1, 3, 1, 1 } };
	struct model_shape os = { .ndims = 4, .dims = { 1, 4, 8, 8 } };
	struct model_shape ks = { .ndims = 1, .dims = { 1 } };
	float *w = rnd_fill(108, -1, 1), *mean = rnd_fill(3, -0.5f, 0.5f);
	float *sd = rnd_fill(3, 0.5f, 2.0f), *x = rnd_fill(192, -2, 2);
	float *t0 = mem(192 * 4), *t1 = mem(192 * 4), *cv = mem(256 * 4), *mx = mem(256 * 4);
	float *r = mem(256 * 4), *mn = mem(256 * 4), *want = mem(256 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W", 4, W_DIMS, w);
	init_f(&g, "mean", 3, c3, mean);
	init_f(&g, "std", 4, c13, sd);
	init_f(&g, "lo", 0, NULL, &lo);
	init_f(&g, "one", 0, NULL, &one);
	init_f(&g, "cap", 0, NULL, &cap);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	node(&g, "Sub", "center", NAMES("x", "mean"), NAMES("a"));
	node(&g, "Div", "scale", NAMES("a", "std"), NAMES("b"));
	n = node(&g, "Conv", "c", NAMES("b", "W"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Max", "clamp", NAMES("c", "lo"), NAMES("m"));
	node(&g, "Sub", "flip", NAMES("one", "m"), NAMES("f"));
	node(&g, "Min", "cap", NAMES("f", "cap"), NAMES("k"));
	node(&g, "Sub", "rest", NAMES("f", "k"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(8, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_SUB, im.model->layers[1].op);
	EXPECT_TRUE(im.model->layers[1].binary.has_const);
	EXPECT_EQ(MODEL_OP_DIV, im.model->layers[2].op);
	EXPECT_EQ(MODEL_OP_MAX, im.model->layers[4].op);
	EXPECT_TRUE(im.model->layers[5].binary.const_first);
	EXPECT_EQ(MODEL_OP_MIN, im.model->layers[6].op);
	EXPECT_EQ(MODEL_OP_SUB, im.model->layers[7].op);
	EXPECT_FALSE(im.model->layers[7].binary.has_const);
	/* conv 4x27 weights + mean 3 + std 3 + the three scalars */
	EXPECT_EQ(108u + 3 + 3 + 3, im.model->params);
	ref_binary(MODEL_OP_SUB, x, &xs, mean, &ms, t0);
	ref_binary(MODEL_OP_DIV, t0, &xs, sd, &ss, t1);
	ref_conv(t1, X_DIMS, w, NULL, &CONV3, od, cv);
	ref_binary(MODEL_OP_MAX, cv, &os, &lo, &ks, mx);
	for (int i = 0; i < 256; i++)
		r[i] = 1.0f - mx[i];
	ref_binary(MODEL_OP_MIN, r, &os, &cap, &ks, mn);
	ref_binary(MODEL_OP_SUB, r, &os, mn, &os, want);
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);
	arena_free();

	g = (struct gb){ 0 };
	init_f(&g, "one", 0, NULL, &one);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	node(&g, "Div", "recip", NAMES("one", "x"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, X_DIMS, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'recip' (Div, opset 13"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "Div of a constant by a computed tensor"));
	arena_free();
}

/*
 * A conv read by a Relu layer, then by an Add of a constant: the constant
 * must not fold into the conv's bias (the relu layer reads the conv's
 * output without it); it becomes an add layer of its own.
 */
TEST(onnx_import__no_fusion_into_a_layer_already_read)
{
	static const int64_t od[4] = { 1, 4, 8, 8 }, bd[4] = { 1, 4, 1, 1 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_shape os = { .ndims = 4, .dims = { 1, 4, 8, 8 } };
	struct model_shape bs = { .ndims = 4, .dims = { 1, 4, 1, 1 } };
	float *w = rnd_fill(108, -1, 1), *b = rnd_fill(4, 2, 5), *x = rnd_fill(192, -1, 1);
	float *cv = mem(256 * 4), *r = mem(256 * 4), *a = mem(256 * 4), *want = mem(256 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W", 4, W_DIMS, w);
	init_f(&g, "B", 4, bd, b);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "Conv", "c", NAMES("x", "W"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Relu", "r", NAMES("c"), NAMES("r"));
	node(&g, "Add", "shift", NAMES("c", "B"), NAMES("a"));
	node(&g, "Add", "sum", NAMES("r", "a"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(5, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_FALSE(im.model->layers[1].conv.bias);
	EXPECT_TRUE(im.model->layers[3].binary.has_const);
	ref_conv(x, X_DIMS, w, NULL, &CONV3, od, cv);
	memcpy(r, cv, 256 * sizeof(float));
	ref_act(r, 256, MODEL_ACT_RELU, 0, 0);
	ref_binary(MODEL_OP_ADD, cv, &os, b, &bs, a);
	ref_binary(MODEL_OP_ADD, r, &os, a, &os, want);
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);
	arena_free();
}

/*
 * LayerNormalization as exporters before opset 17 write it (ReduceMean,
 * Sub, Pow 2, ReduceMean, Add eps from a Constant node, Sqrt, Div, Mul
 * gamma, Add beta) becomes one layer_norm; without gamma and beta too.
 */
TEST(onnx_import__layer_norm_pattern_fuses)
{
	static const int64_t xd[3] = { 1, 3, 8 }, wd[2] = { 8, 8 }, d8[1] = { 8 };
	static const float two = 2.0f;
	struct gb g = { 0 }, g2 = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(64, -1, 1), *gam = rnd_fill(8, 0.5f, 1.5f), *bet = rnd_fill(8, -1, 1);
	float *x = rnd_fill(24, -2, 2), *h = mem(24 * 4), *want = mem(24 * 4);
	float *ones = mem(8 * 4), *zeros = mem(8 * 4);

	init_f(&g, "W", 2, wd, w);
	init_f(&g, "gamma", 1, d8, gam);
	init_f(&g, "beta", 1, d8, bet);
	init_f(&g, "two", 0, NULL, &two);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "MatMul", "fc", NAMES("x", "W"), NAMES("h"));
	attr_ints(node(&g, "ReduceMean", "mean", NAMES("h"), NAMES("m")), "axes", 1,
		  (const int64_t[]){ -1 });
	node(&g, "Sub", "center", NAMES("h", "m"), NAMES("d"));
	node(&g, "Pow", "square", NAMES("d", "two"), NAMES("p"));
	attr_ints(node(&g, "ReduceMean", "var", NAMES("p"), NAMES("v")), "axes", 1,
		  (const int64_t[]){ 2 });
	const_node(&g, "eps", 1e-5f);
	node(&g, "Add", "var_eps", NAMES("v", "eps"), NAMES("ve"));
	node(&g, "Sqrt", "std", NAMES("ve"), NAMES("sd"));
	node(&g, "Div", "norm", NAMES("d", "sd"), NAMES("nm"));
	node(&g, "Mul", "scale", NAMES("gamma", "nm"), NAMES("sc"));
	node(&g, "Add", "shift", NAMES("sc", "beta"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 3, 8 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(3, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_LAYER_NORM, im.model->layers[2].op);
	EXPECT_EQ(8u * 8 + 16, im.model->params);
	ref_fc(x, w, NULL, 3, 8, 8, h);
	ref_layer_norm(h, 3, 8, gam, bet, 1e-5f, want);
	run_compare(_metadata, &im, x, want, 24);
	onnx_import_free(&im);

	init_f(&g2, "two", 0, NULL, &two);
	init_f(&g2, "eps", 0, NULL, (const float[]){ 1e-3f });
	g2.ins[g2.nr_ins++] = vinfo("x", 3, xd, NULL);
	attr_ints(node(&g2, "ReduceMean", "mean", NAMES("x"), NAMES("m")), "axes", 1,
		  (const int64_t[]){ -1 });
	node(&g2, "Sub", "center", NAMES("x", "m"), NAMES("d"));
	node(&g2, "Pow", "square", NAMES("d", "two"), NAMES("p"));
	attr_ints(node(&g2, "ReduceMean", "var", NAMES("p"), NAMES("v")), "axes", 1,
		  (const int64_t[]){ -1 });
	node(&g2, "Add", "var_eps", NAMES("eps", "v"), NAMES("ve"));
	node(&g2, "Sqrt", "std", NAMES("ve"), NAMES("sd"));
	node(&g2, "Div", "norm", NAMES("d", "sd"), NAMES("y"));
	g2.outs[g2.nr_outs++] = vinfo("y", 3, xd, NULL);
	ASSERT_EQ(0, import(&g2, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	for (int i = 0; i < 8; i++)
		ones[i] = 1.0f;
	ref_layer_norm(x, 3, 8, ones, zeros, 1e-3f, want);
	run_compare(_metadata, &im, x, want, 24);
	onnx_import_free(&im);
	arena_free();
}

/* An Erf whose result another node also reads is not a GELU: refused, naming the Erf. */
TEST(onnx_import__gelu_lookalike_is_refused)
{
	static const int64_t xd[2] = { 1, 4 };
	static const float sqrt2 = 1.41421356f, one = 1.0f, half = 0.5f;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	init_f(&g, "sqrt2", 0, NULL, &sqrt2);
	init_f(&g, "one", 0, NULL, &one);
	init_f(&g, "half", 0, NULL, &half);
	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g, "Div", "div", NAMES("x", "sqrt2"), NAMES("d"));
	node(&g, "Erf", "erf", NAMES("d"), NAMES("e"));
	node(&g, "Add", "add", NAMES("e", "one"), NAMES("a"));
	node(&g, "Mul", "mul", NAMES("x", "a"), NAMES("p"));
	node(&g, "Mul", "half", NAMES("p", "half"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	g.outs[g.nr_outs++] = vinfo("e", 2, xd, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	/* the Div by a constant is a div layer; the Erf outside the pattern is refused */
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'erf' (Erf, opset 13"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

TEST_HARNESS_MAIN
