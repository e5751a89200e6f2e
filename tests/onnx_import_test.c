// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ONNX importer (executor/onnx_import.h) on small graphs built with
 * protobuf-c (tests/onnx_graph.h): Conv+BatchNormalization+Relu, a residual
 * Add, MatMul+Add, Gemm, a Shape -> Gather -> Unsqueeze -> Concat ->
 * Reshape subgraph, image ops, an attention block. Each lowered model must
 * parse with the fusions done and hand-computed MACs and parameters, and -
 * the real check - run through the oneDNN executor with the imported
 * weights file to the output the plain-C reference (tests/reference.c)
 * computes straight from the ONNX initializers, batch norm applied
 * unfolded. coloc-import writes the model and weights files, and external
 * data is read beside the model.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "model_file.h"
#include "model_open.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "profile.h"
#include "reference.h"
#include "serving.h"
#include "testutil.h"
#include "onnx_graph.h"

TEST(onnx_import__conv_bn_relu_fuses_and_matches_reference)
{
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	int64_t od[4] = { 1, 4, 8, 8 };
	float *w, *b, *bn, *x = rnd_fill(192, -1, 1), *want = mem(256 * sizeof(float));

	conv_bn_relu(&g, &w, &b, &bn);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* one conv layer: batch norm folded into it, relu fused */
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_CONV, im.model->layers[1].op);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[1].act);
	EXPECT_TRUE(im.model->layers[1].conv.bias);
	/* 8x8 outputs x 4 channels x 3x3x3; 4x27 weights + 4 biases */
	EXPECT_EQ(6912u, im.model->macs);
	EXPECT_EQ(112u, im.model->params);
	EXPECT_EQ(1, im.outputs[0]);
	ref_conv(x, X_DIMS, w, b, &CONV3, od, want);
	ref_batch_norm(want, 1, 4, 64, bn, bn + 4, bn + 8, bn + 12, 1e-3f);
	ref_act(want, 256, MODEL_ACT_RELU, 0, 0);
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);
	arena_free();
}

/* x -> Conv a -> Relu -> Conv b -> Add(b, x) -> Relu: the add takes the relu. */
TEST(onnx_import__residual_add_matches_reference)
{
	static const int64_t xd[4] = { 1, 3, 6, 6 }, wd[4] = { 3, 3, 3, 3 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_conv cv = CONV3;
	struct model_shape s = { .ndims = 4, .dims = { 1, 3, 6, 6 } };
	float *w1 = rnd_fill(81, -0.4f, 0.4f), *w2 = rnd_fill(81, -0.4f, 0.4f);
	float *x = rnd_fill(108, -1, 1), *a = mem(108 * 4), *c = mem(108 * 4), *want = mem(108 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W1", 4, wd, w1);
	init_f(&g, "W2", 4, wd, w2);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Conv", "a", NAMES("x", "W1"), NAMES("a"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Relu", "ra", NAMES("a"), NAMES("ar"));
	n = node(&g, "Conv", "b", NAMES("ar", "W2"), NAMES("b"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Add", "skip", NAMES("b", "x"), NAMES("s"));
	node(&g, "Relu", "rs", NAMES("s"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(4, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[3].op);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[3].act);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[1].act);
	EXPECT_EQ(2u * 36 * 3 * 27, im.model->macs);
	EXPECT_EQ(2u * 81, im.model->params);
	cv.out_channels = 3;
	ref_conv(x, xd, w1, NULL, &cv, xd, a);
	ref_act(a, 108, MODEL_ACT_RELU, 0, 0);
	ref_conv(a, xd, w2, NULL, &cv, xd, c);
	ref_binary(MODEL_OP_ADD, c, &s, x, &s, want);
	ref_act(want, 108, MODEL_ACT_RELU, 0, 0);
	run_compare(_metadata, &im, x, want, 108);
	onnx_import_free(&im);
	arena_free();
}

/*
 * auto_pad=SAME_LOWER with dilation 2 and stride 2 on 8x8: output 4x4, total
 * padding (4-1)*2 + (3-1)*2 + 1 - 8 = 3, the odd pixel at the top/left, so
 * pads t=2, l=2, b=1, r=1 (worked out here by hand, not by the importer).
 */
TEST(onnx_import__dilated_same_lower_conv_matches_reference)
{
	static const int64_t xd[4] = { 1, 2, 8, 8 }, wd[4] = { 3, 2, 3, 3 }, od[4] = { 1, 3, 4, 4 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_conv cv = { .out_channels = 3,
				 .kh = 3,
				 .kw = 3,
				 .stride_h = 2,
				 .stride_w = 2,
				 .pad_t = 2,
				 .pad_l = 2,
				 .pad_b = 1,
				 .pad_r = 1,
				 .dil_h = 2,
				 .dil_w = 2,
				 .groups = 1 };
	float *w = rnd_fill(54, -1, 1), *x = rnd_fill(128, -1, 1), *want = mem(48 * 4);
	Onnx__NodeProto *n;
	Onnx__AttributeProto *a;

	init_f(&g, "W", 4, wd, w);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Conv", "dil", NAMES("x", "W"), NAMES("y"));
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	attr_ints(n, "dilations", 2, (const int64_t[]){ 2, 2 });
	a = attr(n, "auto_pad", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	a->has_s = 1;
	a->s.data = (uint8_t *)"SAME_LOWER";
	a->s.len = 10;
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers);
	EXPECT_EQ(2, im.model->layers[1].conv.pad_t);
	EXPECT_EQ(1, im.model->layers[1].conv.pad_b);
	EXPECT_EQ(2, im.model->layers[1].conv.dil_h);
	EXPECT_EQ(16u * 3 * 18, im.model->macs);
	ref_conv(x, xd, w, NULL, &cv, od, want);
	run_compare(_metadata, &im, x, want, 48);
	onnx_import_free(&im);
	arena_free();
}

/* x[1,5,8] -> MatMul(W[8,6]) -> Add(b[6]) -> Relu: one fc with bias and relu. */
TEST(onnx_import__matmul_add_becomes_fc)
{
	static const int64_t xd[3] = { 1, 5, 8 }, wd[2] = { 8, 6 }, bd[1] = { 6 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(48, -1, 1), *b = rnd_fill(6, -1, 1), *x = rnd_fill(40, -1, 1);
	float *want = mem(30 * 4);

	init_f(&g, "W", 2, wd, w);
	init_f(&g, "b", 1, bd, b);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "MatMul", "mm", NAMES("x", "W"), NAMES("m"));
	node(&g, "Add", "bias", NAMES("m", "b"), NAMES("a"));
	node(&g, "Relu", "r", NAMES("a"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 5, 6 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_FC, im.model->layers[1].op);
	EXPECT_TRUE(im.model->layers[1].fc.bias);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[1].act);
	EXPECT_EQ(5u * 8 * 6, im.model->macs);
	EXPECT_EQ(8u * 6 + 6, im.model->params);
	ref_fc(x, w, b, 5, 8, 6, want);
	ref_act(want, 30, MODEL_ACT_RELU, 0, 0);
	run_compare(_metadata, &im, x, want, 30);
	onnx_import_free(&im);
	arena_free();
}

/* Gemm(transB=1, alpha, beta) with C: fc weights are alpha * B^T, bias beta * C. */
TEST(onnx_import__gemm_trans_b_matches_reference)
{
	static const int64_t xd[2] = { 2, 4 }, bd[2] = { 3, 4 }, cd[1] = { 3 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *bw = rnd_fill(12, -1, 1), *cb = rnd_fill(3, -1, 1), *x = rnd_fill(8, -1, 1);
	float *want = mem(6 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "B", 2, bd, bw);
	init_f(&g, "C", 1, cd, cb);
	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	n = node(&g, "Gemm", "gemm", NAMES("x", "B", "C"), NAMES("y"));
	attr_int(n, "transB", 1);
	attr_float(n, "alpha", 0.5f);
	attr_float(n, "beta", 2.0f);
	g.outs[g.nr_outs++] = vinfo("y", 2, (const int64_t[]){ 2, 3 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* straight from the definition: y = 0.5 * x @ B^T + 2 * C */
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++) {
			double acc = 0;

			for (int k = 0; k < 4; k++)
				acc += x[i * 4 + k] * bw[j * 4 + k];
			want[i * 3 + j] = (float)(0.5 * acc + 2.0 * cb[j]);
		}
	run_compare(_metadata, &im, x, want, 6);
	onnx_import_free(&im);
	arena_free();
}

/*
 * y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) @ W: the
 * shape subgraph folds away, leaving input, reshape [1, 36] and fc.
 */
TEST(onnx_import__shape_subgraph_folds_away)
{
	static const int64_t xd[4] = { 1, 4, 3, 3 }, wd[2] = { 36, 3 }, one[1] = { 1 };
	static const int64_t zero = 0, minus1 = -1;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(108, -1, 1), *x = rnd_fill(36, -1, 1), *want = mem(3 * 4);

	init_f(&g, "W", 2, wd, w);
	init_i64(&g, "idx0", 0, NULL, 1, &zero);
	init_i64(&g, "axes0", 1, one, 1, &zero);
	init_i64(&g, "rest", 1, one, 1, &minus1);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	node(&g, "Shape", "shape", NAMES("x"), NAMES("s"));
	node(&g, "Gather", "batch", NAMES("s", "idx0"), NAMES("n"));
	node(&g, "Unsqueeze", "unsq", NAMES("n", "axes0"), NAMES("n1"));
	attr_int(node(&g, "Concat", "target", NAMES("n1", "rest"), NAMES("t")), "axis", 0);
	node(&g, "Reshape", "flat", NAMES("x", "t"), NAMES("f"));
	node(&g, "MatMul", "head", NAMES("f", "W"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, (const int64_t[]){ 1, 3 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(3, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_RESHAPE, im.model->layers[1].op);
	EXPECT_EQ(2, im.model->layers[1].out.ndims);
	EXPECT_EQ(36, im.model->layers[1].out.dims[1]);
	EXPECT_EQ(MODEL_OP_FC, im.model->layers[2].op);
	EXPECT_EQ(0, count_ops(im.model, MODEL_OP_CONCAT));
	ref_fc(x, w, NULL, 1, 36, 3, want);
	run_compare(_metadata, &im, x, want, 3);
	onnx_import_free(&im);
	arena_free();
}

/*
 * x -> [depthwise Conv (stride 2, asymmetric pads) + Clip(0, 6) | MaxPool
 * ceil_mode | AveragePool] -> Concat -> squeeze-excite (GlobalAveragePool,
 * Sigmoid, Mul with the operands swapped) + LeakyRelu -> Flatten -> Gemm
 * -> Softmax; both the logits and the probabilities are graph outputs.
 */
TEST(onnx_import__image_ops_match_reference)
{
	static const int64_t xd[4] = { 1, 4, 8, 8 }, wd[4] = { 4, 1, 3, 3 }, bd[2] = { 192, 5 },
			     cd[1] = { 5 }, od[4] = { 1, 4, 4, 4 }, catd[4] = { 1, 12, 4, 4 },
			     gd[4] = { 1, 12, 1, 1 };
	static const float zero = 0, six = 6;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_conv cv = { .out_channels = 4,
				 .kh = 3,
				 .kw = 3,
				 .stride_h = 2,
				 .stride_w = 2,
				 .pad_t = 1,
				 .pad_l = 1,
				 .dil_h = 1,
				 .dil_w = 1,
				 .groups = 4 };
	struct model_pool mp = {
		.kind = MODEL_POOL_MAX, .kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2
	};
	struct model_pool ap = {
		.kind = MODEL_POOL_AVG, .kh = 2, .kw = 2, .stride_h = 2, .stride_w = 2
	};
	struct model_pool gp = { .kind = MODEL_POOL_GLOBAL_AVG };
	struct model_shape cs = { .ndims = 4, .dims = { 1, 12, 4, 4 } };
	struct model_shape ss = { .ndims = 4, .dims = { 1, 12, 1, 1 } };
	struct model_shape ls = { .ndims = 2, .dims = { 1, 5 } };
	float *w = rnd_fill(36, -3, 3), *bb = rnd_fill(960, -0.2f, 0.2f), *cc = rnd_fill(5, -1, 1);
	float *x = rnd_fill(256, -2, 2), *br[3], *cat = mem(192 * 4), *gap = mem(12 * 4);
	float *mul = mem(192 * 4), *logits = mem(5 * 4), *prob = mem(5 * 4);
	const float *ins[3];
	const struct model_shape *shp[3];
	struct model_shape os = { .ndims = 4, .dims = { 1, 4, 4, 4 } };
	Onnx__NodeProto *n;

	init_f(&g, "Wd", 4, wd, w);
	init_f(&g, "zero", 0, NULL, &zero);
	init_f(&g, "six", 0, NULL, &six);
	init_f(&g, "Wf", 2, bd, bb);
	init_f(&g, "bf", 1, cd, cc);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Conv", "dw", NAMES("x", "Wd"), NAMES("a0"));
	attr_int(n, "group", 4);
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 0, 0 });
	node(&g, "Clip", "relu6", NAMES("a0", "zero", "six"), NAMES("a"));
	n = node(&g, "MaxPool", "maxpool", NAMES("x"), NAMES("b"));
	attr_ints(n, "kernel_shape", 2, (const int64_t[]){ 3, 3 });
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	attr_int(n, "ceil_mode", 1);
	n = node(&g, "AveragePool", "avgpool", NAMES("x"), NAMES("c"));
	attr_ints(n, "kernel_shape", 2, (const int64_t[]){ 2, 2 });
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	attr_int(node(&g, "Concat", "cat", NAMES("a", "b", "c"), NAMES("cat")), "axis", 1);
	node(&g, "GlobalAveragePool", "se_pool", NAMES("cat"), NAMES("gap"));
	node(&g, "Sigmoid", "se_gate", NAMES("gap"), NAMES("gate"));
	node(&g, "Mul", "se_mul", NAMES("gate", "cat"), NAMES("m"));
	attr_float(node(&g, "LeakyRelu", "leaky", NAMES("m"), NAMES("l")), "alpha", 0.2f);
	node(&g, "Flatten", "flat", NAMES("l"), NAMES("f"));
	node(&g, "Gemm", "head", NAMES("f", "Wf", "bf"), NAMES("logits"));
	node(&g, "Softmax", "softmax", NAMES("logits"), NAMES("prob"));
	g.outs[g.nr_outs++] = vinfo("prob", 2, ls.dims, NULL);
	g.outs[g.nr_outs++] = vinfo("logits", 2, ls.dims, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* input, dw, maxpool, avgpool, cat, gap, gate, mul, flatten, fc, softmax */
	ASSERT_EQ(11, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_ACT_RELU6, im.model->layers[1].act);
	EXPECT_EQ(MODEL_OP_MUL, im.model->layers[7].op);
	EXPECT_EQ(MODEL_ACT_LEAKY_RELU, im.model->layers[7].act);
	EXPECT_EQ(4, im.model->layers[2].out.dims[2]); /* ceil_mode: 3 without it */
	EXPECT_EQ(2, im.nr_outputs);
	/* dw: 64 outputs x 9; fc: 192 x 5 */
	EXPECT_EQ(64u * 9 + 192 * 5, im.model->macs);
	EXPECT_EQ(36u + 192 * 5 + 5, im.model->params);
	for (int i = 0; i < 3; i++)
		br[i] = mem(64 * 4);
	ref_conv(x, xd, w, NULL, &cv, od, br[0]);
	ref_act(br[0], 64, MODEL_ACT_RELU6, 0, 0);
	ref_pool(x, xd, &mp, od, br[1]);
	ref_pool(x, xd, &ap, od, br[2]);
	for (int i = 0; i < 3; i++) {
		ins[i] = br[i];
		shp[i] = &os;
	}
	ref_concat(ins, shp, 3, 1, cat);
	ref_pool(cat, catd, &gp, gd, gap);
	ref_act(gap, 12, MODEL_ACT_SIGMOID, 0, 0);
	ref_binary(MODEL_OP_MUL, cat, &cs, gap, &ss, mul);
	ref_act(mul, 192, MODEL_ACT_LEAKY_RELU, 0.2f, 0);
	ref_fc(mul, bb, cc, 1, 192, 5, logits);
	ref_softmax(logits, &ls, 1, prob);
	run_compare_output(_metadata, &im, 0, x, prob, 5);
	run_compare_output(_metadata, &im, 1, x, logits, 5);
	onnx_import_free(&im);
	arena_free();
}

/*
 * A one-head attention block at opset 17: int64 token ids -> Gather
 * (embedding) -> LayerNormalization -> q (MatMul + Add, the constant
 * first), k (MatMul) -> Transpose -> MatMul -> Div by sqrt 8 (the matmul's
 * alpha) -> Softmax -> MatMul with the normalised embeddings -> residual
 * Add -> Slice of token 0 -> Squeeze -> MatMul, Mul by a constant per
 * channel (folded into the weights), Add, Tanh (the pooler).
 */
TEST(onnx_import__attention_block_matches_reference)
{
	static const int64_t idd[2] = { 1, 6 }, td[2] = { 10, 8 }, d8[1] = { 8 }, w88[2] = { 8, 8 },
			     w84[2] = { 8, 4 }, d4[1] = { 4 }, one[1] = { 1 };
	static const int64_t s0 = 0, e1 = 1, ax1 = 1;
	static const float sqrt8 = 2.82842712f;
	struct gb g = { .opset = 17 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_shape ss = { .ndims = 3, .dims = { 1, 6, 6 } };
	float ids[6] = { 3, 0, 9, 5, 5, 1 };
	float *table = rnd_fill(80, -1, 1), *gam = rnd_fill(8, 0.5f, 1.5f),
	      *bet = rnd_fill(8, -1, 1);
	float *wq = rnd_fill(64, -0.5f, 0.5f), *bq = rnd_fill(8, -1, 1),
	      *wk = rnd_fill(64, -0.5f, 0.5f);
	float *wp = rnd_fill(32, -0.5f, 0.5f), *bp = rnd_fill(4, -1, 1), *sc = rnd_fill(4, -2, 2);
	float *e = mem(48 * 4), *ln = mem(48 * 4), *q = mem(48 * 4), *k = mem(48 * 4);
	float *s = mem(36 * 4), *p = mem(36 * 4), *o = mem(48 * 4), *y = mem(4 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "table", 2, td, table);
	init_f(&g, "gamma", 1, d8, gam);
	init_f(&g, "beta", 1, d8, bet);
	init_f(&g, "Wq", 2, w88, wq);
	init_f(&g, "bq", 1, d8, bq);
	init_f(&g, "Wk", 2, w88, wk);
	init_f(&g, "Wp", 2, w84, wp);
	init_f(&g, "bp", 1, d4, bp);
	init_f(&g, "sc", 1, d4, sc);
	init_f(&g, "sqrt8", 0, NULL, &sqrt8);
	init_i64(&g, "s0", 1, one, 1, &s0);
	init_i64(&g, "e1", 1, one, 1, &e1);
	init_i64(&g, "ax1", 1, one, 1, &ax1);
	vinfo_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	g.ins[g.nr_ins++] = vinfo("ids", 2, idd, NULL);
	node(&g, "Gather", "embed", NAMES("table", "ids"), NAMES("e"));
	n = node(&g, "LayerNormalization", "ln", NAMES("e", "gamma", "beta"), NAMES("ln"));
	attr_float(n, "epsilon", 1e-6f);
	node(&g, "MatMul", "q_mm", NAMES("ln", "Wq"), NAMES("q0"));
	node(&g, "Add", "q_bias", NAMES("bq", "q0"), NAMES("q"));
	node(&g, "MatMul", "k_mm", NAMES("ln", "Wk"), NAMES("k"));
	attr_ints(node(&g, "Transpose", "kt", NAMES("k"), NAMES("kt")), "perm", 3,
		  (const int64_t[]){ 0, 2, 1 });
	node(&g, "MatMul", "scores", NAMES("q", "kt"), NAMES("sraw"));
	node(&g, "Div", "scale", NAMES("sraw", "sqrt8"), NAMES("s"));
	node(&g, "Softmax", "probs", NAMES("s"), NAMES("p"));
	node(&g, "MatMul", "context", NAMES("p", "ln"), NAMES("o"));
	node(&g, "Add", "residual", NAMES("o", "ln"), NAMES("r"));
	node(&g, "Slice", "cls", NAMES("r", "s0", "e1", "ax1"), NAMES("c"));
	node(&g, "Squeeze", "cls_sq", NAMES("c", "ax1"), NAMES("c1"));
	node(&g, "MatMul", "pool_mm", NAMES("c1", "Wp"), NAMES("y00"));
	node(&g, "Mul", "pool_scale", NAMES("sc", "y00"), NAMES("y0"));
	node(&g, "Add", "pool_bias", NAMES("y0", "bp"), NAMES("y1"));
	node(&g, "Tanh", "pool_tanh", NAMES("y1"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, (const int64_t[]){ 1, 4 }, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(MODEL_OP_EMBED, im.model->layers[1].op);
	EXPECT_EQ(2, count_ops(im.model, MODEL_OP_MATMUL));
	EXPECT_EQ(3, count_ops(im.model, MODEL_OP_FC));
	EXPECT_EQ(1, count_ops(im.model, MODEL_OP_SLICE));
	EXPECT_EQ(0, count_ops(im.model, MODEL_OP_MUL));
	EXPECT_EQ(MODEL_ACT_TANH, im.model->layers[im.model->nr_layers - 1].act);
	/* the int64 token ids are input layer 0 */
	EXPECT_EQ(1u, im.int_inputs);
	/* fc q, k: 6x8x8 each; scores 6x6x8; context 6x8x6; pooler 8x4 */
	EXPECT_EQ(2u * 384 + 288 + 288 + 32, im.model->macs) TH_LOG("%s", im.text);
	/* table 80, layer norm 16, q 72, k 64, pooler 36 */
	EXPECT_EQ(80u + 16 + 72 + 64 + 36, im.model->params);
	ref_embed(ids, 6, table, 8, e);
	ref_layer_norm(e, 6, 8, gam, bet, 1e-6f, ln);
	ref_fc(ln, wq, bq, 6, 8, 8, q);
	ref_fc(ln, wk, NULL, 6, 8, 8, k);
	ref_matmul(q, k, 1, 1, 6, 8, 6, 1, 1.0f / sqrt8, s);
	ref_softmax(s, &ss, 2, p);
	ref_matmul(p, ln, 1, 1, 6, 6, 8, 0, 1.0f, o);
	for (int i = 0; i < 8; i++)
		o[i] += ln[i]; /* the residual of token 0, all the slice keeps */
	ref_fc(o, wp, NULL, 1, 8, 4, y);
	for (int i = 0; i < 4; i++)
		y[i] = y[i] * sc[i] + bp[i];
	ref_act(y, 4, MODEL_ACT_TANH, 0, 0);
	run_compare(_metadata, &im, ids, y, 4);
	onnx_import_free(&im);
	arena_free();
}

/* coloc-import writes a model that loads and a weights file that fits it. */
TEST(coloc_import__writes_model_and_weights)
{
	char dir[64], bin[512], cmd[2048], out[4096];
	struct coloc_err err = { 0 };
	struct exec_weights_file *wf;
	struct gb g = { 0 };
	struct model *m;
	float *w, *b, *bn;
	uint8_t *buf;
	size_t len;
	FILE *f;

	ASSERT_EQ(0, tu_make_tmpdir("onnx", dir, sizeof(dir)));
	tu_bin("coloc-import", bin, sizeof(bin));
	conv_bn_relu(&g, &w, &b, &bn);
	buf = pack(&g, &len);
	snprintf(cmd, sizeof(cmd), "%s/m.onnx", dir);
	f = fopen(cmd, "wb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(len, fwrite(buf, 1, len, f));
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s %s/m.onnx -o %s/m.model -w %s/m.weights", bin, dir, dir,
		 dir);
	EXPECT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s/m.model", dir);
	m = model_load(cmd, &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(2, m->nr_layers);
	snprintf(cmd, sizeof(cmd), "%s/m.weights", dir);
	coloc_err_clear(&err);
	wf = exec_weights_open(m, cmd, &err);
	EXPECT_NE(NULL, wf) TH_LOG("%s", coloc_err_str(&err));
	if (wf)
		exec_weights_close(wf);
	model_free(m);
	/* the default names: MODEL with .model and .weights for .onnx */
	snprintf(cmd, sizeof(cmd), "%s %s/m.onnx && test -s %s/m.model && test -s %s/m.weights",
		 bin, dir, dir, dir);
	EXPECT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s %s/m.onnx --dim seq", bin, dir);
	EXPECT_EQ(2, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s %s/nothere.onnx", bin, dir);
	EXPECT_EQ(1, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "nothere.onnx: No such file or directory"));
	snprintf(cmd, sizeof(cmd), "%s --help", bin);
	EXPECT_EQ(0, tu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "--dim NAME=VALUE"));
	tu_remove_tree(dir);
	arena_free();
}

/*
 * Tensors in external data files (what onnx.save_model writes for models
 * over 2 GiB): read from a file beside the model at their offset, with or
 * without a length; a location outside the model's directory, a missing
 * file, a wrong length and a file too short are refused naming the tensor.
 */
TEST(onnx_import__external_data_is_read_beside_the_model)
{
	static const struct {
		const char *loc;
		long long len;
		const char *words;
	} bad[] = {
		{ "../w.bin", 432, "external data location '../w.bin' is not a path below" },
		{ "/etc/passwd", 432, "external data location '/etc/passwd' is not a path below" },
		{ "sub/../../w.bin", 432, "is not a path below the model's directory" },
		{ "none.bin", 432, "tensor 'W': external data file" },
		{ "w.bin", 436, "external data length 436, but its shape and type take 432" },
		{ "short.bin", 432, "has no 432 bytes at offset 16" },
	};
	char dir[64], path[512];
	int64_t od[4] = { 1, 4, 8, 8 };
	float *w, *b, *bn, *x = rnd_fill(192, -1, 1), *want = mem(256 * sizeof(float));
	struct coloc_err err = { 0 };
	struct onnx_import im;
	struct gb g = { 0 };
	FILE *f;

	ASSERT_EQ(0, tu_make_tmpdir("onnx-ext", dir, sizeof(dir)));
	conv_bn_relu(&g, &w, &b, &bn);
	ref_conv(x, X_DIMS, w, b, &CONV3, od, want);
	ref_batch_norm(want, 1, 4, 64, bn, bn + 4, bn + 8, bn + 12, 1e-3f);
	ref_act(want, 256, MODEL_ACT_RELU, 0, 0);
	/* W with a length, B without one, in files of their own */
	externalize(&g, "W", dir, "w.bin", "w.bin", 432);
	externalize(&g, "B", dir, "b.bin", "b.bin", -1);
	ASSERT_EQ(0, write_onnx(&g, dir, "m.onnx", path, sizeof(path)));
	ASSERT_EQ(0, onnx_import_file(path, NULL, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	run_compare(_metadata, &im, x, want, 256);
	onnx_import_free(&im);

	/* a file too short for the tensor: 100 bytes */
	snprintf(path, sizeof(path), "%s/short.bin", dir);
	f = fopen(path, "wb");
	ASSERT_NE(NULL, f);
	fwrite(w, 1, 100, f);
	fclose(f);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		Onnx__TensorProto *t = g.inits[0];

		ASSERT_STREQ("W", t->name);
		t->external_data[0]->value = (char *)bad[i].loc;
		snprintf(t->external_data[2]->value, 32, "%lld", bad[i].len);
		ASSERT_EQ(0, write_onnx(&g, dir, "m.onnx", path, sizeof(path)));
		memset(&err, 0, sizeof(err));
		EXPECT_GT(0, onnx_import_file(path, NULL, &im, &err)) TH_LOG("case %zu", i);
		EXPECT_NE(NULL, strstr(coloc_err_str(&err), bad[i].words))
		TH_LOG("case %zu: %s", i, coloc_err_str(&err));
	}
	EXPECT_EQ(0, tu_remove_tree(dir));
	arena_free();
}

/*
 * onnx_import_file(path), or with by_name onnx_import_buffer() of its bytes
 * (external data found by the name's directory), in a child that SIGALRM
 * ends after 20 s: 0 if it refused with words.
 */
static int import_refused_in_child(const char *path, const char *words, bool by_name)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct coloc_err err = { 0 };
		struct onnx_import im;
		size_t n = 0;
		char *buf = by_name ? tu_read_file(path, &n) : NULL;
		int ret;

		alarm(20); /* a bound on a hang, not a timing: refusing takes no wait */
		ret = by_name ? (buf ? onnx_import_buffer(path, buf, n, NULL, &im, &err) : 0) :
				onnx_import_file(path, NULL, &im, &err);
		_exit(ret < 0 && strstr(coloc_err_str(&err), words) ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * External data is opened below the model's directory through no link and
 * never blocking (review of 2026-12-06, MEDIUM 4: root's coloc-profile read
 * a root-only file through a member's link as weights, and hung on a FIFO):
 * a link at the location or on its way, a FIFO and a directory are refused
 * with words that say what they are, by openat2 and by the per-component
 * fallback alike; the same file without the link is read.
 */
TEST(onnx_import__external_data_through_a_link_or_fifo_is_refused)
{
	static const struct {
		const char *loc;
		const char *words;
	} bad[] = {
		{ "w.bin", "is a symbolic link or lies under one" },
		{ "here/real.bin", "is a symbolic link or lies under one" },
		{ "fifo.bin", "is a FIFO" },
		{ "sub", "is a directory" },
	};
	char dir[64], path[512];
	struct coloc_err err = { 0 };
	struct onnx_import im;
	struct gb g = { 0 };
	float *w, *b, *bn;
	Onnx__TensorProto *t;
	int dir_fd;

	ASSERT_EQ(0, tu_make_tmpdir("onnx-link", dir, sizeof(dir)));
	conv_bn_relu(&g, &w, &b, &bn);
	externalize(&g, "W", dir, "real.bin", "real.bin", 432);
	t = g.inits[0];
	ASSERT_STREQ("W", t->name);
	snprintf(path, sizeof(path), "%s/w.bin", dir);
	ASSERT_EQ(0, symlink("real.bin", path));
	snprintf(path, sizeof(path), "%s/here", dir);
	ASSERT_EQ(0, symlink(".", path));
	snprintf(path, sizeof(path), "%s/fifo.bin", dir);
	ASSERT_EQ(0, mkfifo(path, 0600));
	snprintf(path, sizeof(path), "%s/sub", dir);
	ASSERT_EQ(0, mkdir(path, 0700));

	ASSERT_EQ(0, write_onnx(&g, dir, "m.onnx", path, sizeof(path)));
	ASSERT_EQ(0, onnx_import_file(path, NULL, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	onnx_import_free(&im);
	dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, dir_fd);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *what = NULL;
		int fd;

		t->external_data[0]->value = (char *)bad[i].loc;
		ASSERT_EQ(0, write_onnx(&g, dir, "m.onnx", path, sizeof(path)));
		EXPECT_EQ(0, import_refused_in_child(path, bad[i].words, false))
		TH_LOG("case %zu: %s", i, bad[i].loc);
		/* the importer given no directory, and the fallback, alike */
		EXPECT_EQ(0, import_refused_in_child(path, bad[i].words, true))
		TH_LOG("case %zu: %s", i, bad[i].loc);
		fd = model_external_open_nofollow(dir_fd, bad[i].loc, &what);
		EXPECT_GT(0, fd) TH_LOG("case %zu", i);
		if (fd >= 0)
			close(fd);
		EXPECT_TRUE(what && !strcmp(what, bad[i].words))
		TH_LOG("case %zu: %s", i, what ? what : "(none)");
	}
	{
		const char *what = NULL;
		int fd = model_external_open_nofollow(dir_fd, "./real.bin", &what);

		EXPECT_LE(0, fd) TH_LOG("%s", what ? what : strerror(-fd));
		if (fd >= 0)
			close(fd);
	}
	close(dir_fd);
	EXPECT_EQ(0, tu_remove_tree(dir));
	arena_free();
}

/*
 * The tools key an ONNX model with its external data as colocd keys the
 * submitted files (profile_key.h): model_open_key over the model file,
 * whose scan finds w.bin and b.bin, equals profile_key_compute over the
 * model and those two files by descriptor, in the order a client sends
 * them; the whole file is keyed, so bytes the importer never reads (the
 * padding before the tensor) change the key too.
 */
TEST(model_open_key__keys_external_data_as_colocd_does)
{
	char dir[64], path[512], w_path[600], b_path[600];
	struct profile_key_external ext[2];
	struct profile_key tool, daemon, model_only, other;
	struct coloc_err err = { 0 };
	struct model_source src;
	float *w, *b, *bn;
	struct gb g = { 0 };
	struct profile_key_input in = { .weights_fd = -1, .external = ext, .nr_external = 2 };
	FILE *f;

	ASSERT_EQ(0, tu_make_tmpdir("onnx-key", dir, sizeof(dir)));
	conv_bn_relu(&g, &w, &b, &bn);
	externalize(&g, "W", dir, "w.bin", "w.bin", 432);
	externalize(&g, "B", dir, "b.bin", "b.bin", -1);
	ASSERT_EQ(0, write_onnx(&g, dir, "m.onnx", path, sizeof(path)));
	snprintf(w_path, sizeof(w_path), "%s/w.bin", dir);
	snprintf(b_path, sizeof(b_path), "%s/b.bin", dir);
	ASSERT_EQ(0, model_open_key(path, NULL, NULL, &tool, &err)) TH_LOG("%s", err.msg);

	in.model_fd = open(path, O_RDONLY | O_CLOEXEC);
	ext[0] = (struct profile_key_external){ "w.bin", open(w_path, O_RDONLY | O_CLOEXEC) };
	ext[1] = (struct profile_key_external){ "b.bin", open(b_path, O_RDONLY | O_CLOEXEC) };
	ASSERT_LE(0, in.model_fd);
	ASSERT_LE(0, ext[0].fd);
	ASSERT_LE(0, ext[1].fd);
	ASSERT_EQ(0, profile_key_compute(&in, &daemon, &err)) TH_LOG("%s", err.msg);
	EXPECT_TRUE(profile_key_equal(&tool, &daemon));
	in.nr_external = 0;
	ASSERT_EQ(0, profile_key_compute(&in, &model_only, &err));
	EXPECT_FALSE(profile_key_equal(&tool, &model_only));
	close(in.model_fd);
	close(ext[0].fd);
	close(ext[1].fd);

	/* imported from the descriptors it keyed: the same key */
	ASSERT_EQ(0, model_open_keyed(path, NULL, NULL, &src, &other, &err))
	TH_LOG("%s", err.msg);
	EXPECT_TRUE(profile_key_equal(&tool, &other));
	model_source_close(&src);

	/* a byte of w.bin's padding, which no tensor reads */
	f = fopen(w_path, "r+b");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, fwrite("X", 1, 1, f));
	ASSERT_EQ(0, fclose(f));
	ASSERT_EQ(0, model_open_key(path, NULL, NULL, &other, &err)) TH_LOG("%s", err.msg);
	EXPECT_FALSE(profile_key_equal(&tool, &other));
	tu_remove_tree(dir);
	arena_free();
}

TEST_HARNESS_MAIN
