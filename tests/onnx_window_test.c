// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ONNX importer's window ops against references: Resize (nearest,
 * linear), ConvTranspose and batch norms, 1-D convolutions, transposed
 * convolutions and pools (checked against direct 1-D loops, not
 * ref_conv), a log-mel chain; output padding folded into the end pads;
 * a kernel over the window limit and a 1-D ConvTranspose with output
 * padding past its end pad are refused.
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
 * Resize as PaddlePaddle's FPN writes it (opset 11, nearest, asymmetric,
 * floor, scales [1, 1, 2, 2] with an empty roi), then linear (half_pixel)
 * to sizes 8x12; bicubic is refused naming the node.
 */
TEST(onnx_import__resize_nearest_and_linear_match_reference)
{
	static const int64_t xd[4] = { 1, 2, 3, 4 }, d4[1] = { 4 }, md[4] = { 1, 2, 6, 8 },
			     od[4] = { 1, 2, 8, 12 };
	static const float scales[4] = { 1, 1, 2, 2 };
	static const int64_t sizes[4] = { 1, 2, 8, 12 };
	struct gb g = { .opset = 11 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(24, -1, 1), *mid = mem(96 * 4), *want = mem(192 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "scales", 1, d4, scales);
	init_i64(&g, "sizes", 1, d4, 4, sizes);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Resize", "up2", NAMES("x", "", "scales"), NAMES("m"));
	attr_str(n, "mode", "nearest");
	attr_str(n, "coordinate_transformation_mode", "asymmetric");
	attr_str(n, "nearest_mode", "floor");
	n = node(&g, "Resize", "bilinear", NAMES("m", "", "", "sizes"), NAMES("y"));
	attr_str(n, "mode", "linear");
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(3, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_RESIZE, im.model->layers[1].op);
	EXPECT_FALSE(im.model->layers[1].resize.linear);
	EXPECT_TRUE(im.model->layers[2].resize.linear);
	/* nearest by 2 by hand: output (h, w) is input (h / 2, w / 2) */
	for (int c = 0; c < 2; c++)
		for (int h = 0; h < 6; h++)
			for (int w = 0; w < 8; w++)
				mid[(c * 6 + h) * 8 + w] = x[(c * 3 + h / 2) * 4 + w / 2];
	ref_resize(mid, md, true, od, want);
	run_compare(_metadata, &im, x, want, 192);
	onnx_import_free(&im);
	arena_free();

	g = (struct gb){ .opset = 13 };
	init_f(&g, "scales", 1, d4, scales);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Resize", "cubic", NAMES("x", "", "scales"), NAMES("y"));
	attr_str(n, "mode", "cubic");
	g.outs[g.nr_outs++] = vinfo("y", 4, md, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'cubic' (Resize, opset 13, inputs "
						    "[1,2,3,4], -, [4] const): mode 'cubic'"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/*
 * PaddleOCR's DB head: ConvTranspose (2x2 stride 2) + Add of a bias
 * [1, C, 1, 1] + BatchNormalization fold into one deconv; a grouped,
 * padded ConvTranspose with its bias, after which a Relu reads it; a
 * BatchNormalization after that Relu becomes a scale and a shift.
 */
TEST(onnx_import__conv_transpose_and_batch_norms_match_reference)
{
	static const int64_t xd[4] = { 1, 4, 3, 5 }, w1d[4] = { 4, 6, 2, 2 },
			     bd[4] = { 1, 6, 1, 1 }, w2d[4] = { 6, 2, 3, 3 }, c6[1] = { 6 },
			     m1[4] = { 1, 6, 6, 10 }, od[4] = { 1, 6, 11, 19 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_conv d1 = { .out_channels = 6,
				 .kh = 2,
				 .kw = 2,
				 .stride_h = 2,
				 .stride_w = 2,
				 .dil_h = 1,
				 .dil_w = 1,
				 .groups = 1 };
	struct model_conv d2 = { .out_channels = 6,
				 .kh = 3,
				 .kw = 3,
				 .stride_h = 2,
				 .stride_w = 2,
				 .pad_t = 1,
				 .pad_l = 1,
				 .pad_b = 1,
				 .pad_r = 1,
				 .dil_h = 1,
				 .dil_w = 1,
				 .groups = 3,
				 .bias = true };
	float *w1 = rnd_fill(96, -1, 1), *b1 = rnd_fill(6, -1, 1), *bn1 = rnd_fill(24, 0.2f, 1.5f);
	float *w2 = rnd_fill(108, -1, 1), *b2 = rnd_fill(6, -1, 1), *bn2 = rnd_fill(24, 0.2f, 1.5f);
	float *x = rnd_fill(60, -1, 1), *a = mem(360 * 4), *want = mem(1254 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W1", 4, w1d, w1);
	init_f(&g, "B1", 4, bd, b1);
	init_f(&g, "W2", 4, w2d, w2);
	init_f(&g, "B2", 1, c6, b2);
	init_f(&g, "g1", 1, c6, bn1);
	init_f(&g, "be1", 1, c6, bn1 + 6);
	init_f(&g, "m1", 1, c6, bn1 + 12);
	init_f(&g, "v1", 1, c6, bn1 + 18);
	init_f(&g, "g2", 1, c6, bn2);
	init_f(&g, "be2", 1, c6, bn2 + 6);
	init_f(&g, "m2", 1, c6, bn2 + 12);
	init_f(&g, "v2", 1, c6, bn2 + 18);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "ConvTranspose", "up", NAMES("x", "W1"), NAMES("u"));
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	node(&g, "Add", "up_bias", NAMES("u", "B1"), NAMES("ub"));
	n = node(&g, "BatchNormalization", "bn1", NAMES("ub", "g1", "be1", "m1", "v1"),
		 NAMES("n1"));
	attr_float(n, "epsilon", 1e-3f);
	n = node(&g, "ConvTranspose", "up2", NAMES("n1", "W2", "B2"), NAMES("u2"));
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	attr_int(n, "group", 3);
	node(&g, "Relu", "r", NAMES("u2"), NAMES("r"));
	node(&g, "BatchNormalization", "bn2", NAMES("r", "g2", "be2", "m2", "v2"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(5, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_DECONV, im.model->layers[1].op);
	EXPECT_TRUE(im.model->layers[1].conv.bias);
	EXPECT_EQ(MODEL_OP_DECONV, im.model->layers[2].op);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[2].act);
	EXPECT_EQ(MODEL_OP_MUL, im.model->layers[3].op);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[4].op);
	/* 60 inputs x 6 x 2x2 scattered; 360 x 2 x 3x3 */
	EXPECT_EQ(60u * 24 + 360 * 18, im.model->macs);
	/* 96 + 6 (bias) + 108 + 6, then 6 scales and 6 shifts */
	EXPECT_EQ(96u + 6 + 108 + 6 + 12, im.model->params);
	ref_deconv(x, xd, w1, b1, &d1, m1, a);
	ref_batch_norm(a, 1, 6, 60, bn1, bn1 + 6, bn1 + 12, bn1 + 18, 1e-3f);
	ref_deconv(a, m1, w2, b2, &d2, od, want);
	ref_act(want, 1254, MODEL_ACT_RELU, 0, 0);
	ref_batch_norm(want, 1, 6, 209, bn2, bn2 + 6, bn2 + 12, bn2 + 18, 1e-5f);
	run_compare(_metadata, &im, x, want, 1254);
	onnx_import_free(&im);
	arena_free();
}

/* ---- 1-D windows, checked against direct 1-D loops (not ref_conv) ------- */

struct win1d {
	int k, s, d, pl, pr, g;
};

/* y[OC, OW] = conv of x[C, W] with w[OC, C/g, K] and b[OC] (or none). */
static void conv1d(const float *x, int ch, int iw, const float *w, const float *b, int oc,
		   const struct win1d *p, int ow, float *y)
{
	int cg = ch / p->g;

	for (int o = 0; o < oc; o++)
		for (int j = 0; j < ow; j++) {
			double acc = b ? b[o] : 0;

			for (int ic = 0; ic < cg; ic++)
				for (int t = 0; t < p->k; t++) {
					int i = j * p->s - p->pl + t * p->d;

					if (i >= 0 && i < iw)
						acc += (double)w[(o * cg + ic) * p->k + t] *
						       x[((o / (oc / p->g)) * cg + ic) * iw + i];
				}
			y[o * ow + j] = (float)acc;
		}
}

/* y[OCg * g, OW] = transposed conv of x[C, W] with w[C, OCg, K] (scatter). */
static void deconv1d(const float *x, int ch, int iw, const float *w, int ocg, const struct win1d *p,
		     int ow, float *y)
{
	memset(y, 0, (size_t)ocg * p->g * ow * sizeof(float));
	for (int ic = 0; ic < ch; ic++)
		for (int i = 0; i < iw; i++)
			for (int o = 0; o < ocg; o++)
				for (int t = 0; t < p->k; t++) {
					int j = i * p->s - p->pl + t * p->d;

					if (j >= 0 && j < ow)
						y[((ic / (ch / p->g)) * ocg + o) * ow + j] +=
							x[ic * iw + i] *
							w[(ic * ocg + o) * p->k + t];
				}
}

/* Max or average (padding excluded) over each window of x[C, W]. */
static void pool1d(bool max, const float *x, int ch, int iw, const struct win1d *p, int ow,
		   float *y)
{
	for (int c = 0; c < ch; c++)
		for (int j = 0; j < ow; j++) {
			double acc = max ? -INFINITY : 0;
			int cnt = 0;

			for (int t = 0; t < p->k; t++) {
				int i = j * p->s - p->pl + t;

				if (i < 0 || i >= iw)
					continue;
				acc = max ? fmax(acc, x[c * iw + i]) : acc + x[c * iw + i];
				cnt++;
			}
			y[c * ow + j] = (float)(max ? acc : acc / cnt);
		}
}

/*
 * x[1,4,20] -> Conv(W[6,2,3], B, group 2, dilation 2, stride 2, pads [2,1])
 * -> BatchNormalization -> Relu (both folded into the conv through its
 * view) -> MaxPool(3, stride 2, pads [1,1]) -> ConvTranspose(W[6,3,4],
 * stride 2, pads [1,2]) -> Add([3,1], its bias through the view) ->
 * AveragePool(2): each a 2-D layer on [N, C, 1, W]
 * between two reshape views; a second output, GlobalAveragePool of the
 * relu, is [1,6,1]. Shapes by hand: (20+3-5)/2+1 = 10, (10+2-3)/2+1 = 5,
 * (5-1)*2-3+4 = 9, 9-2+1 = 8.
 */
TEST(onnx_import__1d_windows_match_reference)
{
	static const int64_t xd[3] = { 1, 4, 20 }, w1d[3] = { 6, 2, 3 }, c6[1] = { 6 },
			     w2d[3] = { 6, 3, 4 }, od[3] = { 1, 3, 8 }, gd[3] = { 1, 6, 1 };
	static const struct win1d cv = { .k = 3, .s = 2, .d = 2, .pl = 2, .pr = 1, .g = 2 },
				  mp = { .k = 3, .s = 2, .d = 1, .pl = 1, .pr = 1, .g = 1 },
				  dc = { .k = 4, .s = 2, .d = 1, .pl = 1, .pr = 2, .g = 1 },
				  ap = { .k = 2, .s = 1, .d = 1, .g = 1 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w1 = rnd_fill(36, -1, 1), *b1 = rnd_fill(6, -1, 1), *w2 = rnd_fill(72, -1, 1);
	float *bn = rnd_fill(24, 0.2f, 1.5f), *b2 = rnd_fill(3, -1, 1);
	float *x = rnd_fill(80, -1, 1), *a = mem(60 * 4), *m = mem(30 * 4), *u = mem(27 * 4);
	float *want = mem(24 * 4), *gap = mem(6 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W1", 3, w1d, w1);
	init_f(&g, "B1", 1, c6, b1);
	init_f(&g, "W2", 3, w2d, w2);
	init_f(&g, "B2", 2, (const int64_t[]){ 3, 1 }, b2);
	init_f(&g, "gamma", 1, c6, bn);
	init_f(&g, "beta", 1, c6, bn + 6);
	init_f(&g, "mean", 1, c6, bn + 12);
	init_f(&g, "var", 1, c6, bn + 18);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	n = node(&g, "Conv", "c", NAMES("x", "W1", "B1"), NAMES("c0"));
	attr_int(n, "group", 2);
	attr_ints(n, "kernel_shape", 1, (const int64_t[]){ 3 });
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	attr_ints(n, "dilations", 1, (const int64_t[]){ 2 });
	attr_ints(n, "pads", 2, (const int64_t[]){ 2, 1 });
	node(&g, "BatchNormalization", "bn", NAMES("c0", "gamma", "beta", "mean", "var"),
	     NAMES("c"));
	node(&g, "Relu", "r", NAMES("c"), NAMES("r"));
	n = node(&g, "MaxPool", "mp", NAMES("r"), NAMES("m"));
	attr_ints(n, "kernel_shape", 1, (const int64_t[]){ 3 });
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	attr_ints(n, "pads", 2, (const int64_t[]){ 1, 1 });
	n = node(&g, "ConvTranspose", "up", NAMES("m", "W2"), NAMES("u"));
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	attr_ints(n, "pads", 2, (const int64_t[]){ 1, 2 });
	node(&g, "Add", "up_bias", NAMES("u", "B2"), NAMES("ub"));
	n = node(&g, "AveragePool", "ap", NAMES("ub"), NAMES("y"));
	attr_ints(n, "kernel_shape", 1, (const int64_t[]){ 2 });
	node(&g, "GlobalAveragePool", "gap", NAMES("r"), NAMES("gap"));
	g.outs[g.nr_outs++] = vinfo("y", 3, od, NULL);
	g.outs[g.nr_outs++] = vinfo("gap", 3, gd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(1, count_ops(im.model, MODEL_OP_CONV)) TH_LOG("%s", im.text);
	EXPECT_EQ(0, count_ops(im.model, MODEL_OP_ACT));
	EXPECT_EQ(0, count_ops(im.model, MODEL_OP_MUL));
	EXPECT_EQ(0, count_ops(im.model, MODEL_OP_ADD));
	EXPECT_EQ(MODEL_OP_CONV, im.model->layers[2].op);
	EXPECT_EQ(MODEL_ACT_RELU, im.model->layers[2].act);
	EXPECT_EQ(1, count_ops(im.model, MODEL_OP_DECONV));
	EXPECT_EQ(3, count_ops(im.model, MODEL_OP_POOL));
	/* a view in and a view out around each of the 5 window layers */
	EXPECT_EQ(10, count_ops(im.model, MODEL_OP_RESHAPE));
	ASSERT_EQ(3, im.model->layers[im.outputs[0]].out.ndims);
	EXPECT_EQ(8, im.model->layers[im.outputs[0]].out.dims[2]);
	conv1d(x, 4, 20, w1, b1, 6, &cv, 10, a);
	ref_batch_norm(a, 1, 6, 10, bn, bn + 6, bn + 12, bn + 18, 1e-5f);
	ref_act(a, 60, MODEL_ACT_RELU, 0, 0);
	for (int o = 0; o < 6; o++) {
		double s = 0;

		for (int j = 0; j < 10; j++)
			s += a[o * 10 + j];
		gap[o] = (float)(s / 10);
	}
	pool1d(true, a, 6, 10, &mp, 5, m);
	deconv1d(m, 6, 5, w2, 3, &dc, 9, u);
	for (int i = 0; i < 27; i++)
		u[i] += b2[i / 9];
	pool1d(false, u, 3, 9, &ap, 8, want);
	run_compare_output(_metadata, &im, 0, x, want, 24);
	run_compare_output(_metadata, &im, 1, x, gap, 6);
	onnx_import_free(&im);
	arena_free();
}

/*
 * A log-mel spectrogram as openWakeWord's melspectrogram.onnx writes it,
 * small: an STFT as two 1-D convs with 300-wide kernels (over the 256 the
 * format took before), stride 100, on x [1, 1700] unsqueezed; each [1, 5,
 * 15] result unsqueezed and transposed to [1, 1, 15, 5]; Pow 2 of each (a
 * mul of x by itself), Add, MatMul by a mel bank [5, 3], Clip(1e-10, inf),
 * Log, Mul 10, Div ln 10, Sub 0 (x itself: no layer), then the floor:
 * ReduceMax over every axis
 * without keepdims (a rank-0 value: a reduce and a reshape to [1]), Sub 3,
 * Cast to float (an alias) and Clip(db, that scalar, inf), a max layer of
 * two inputs. The scalar is a second graph output. Checked against direct
 * loops (conv1d() above, then the formulas).
 */
TEST(onnx_import__log_mel_chain_matches_reference)
{
	static const int64_t xd[2] = { 1, 1700 }, wd[3] = { 5, 1, 300 }, md[2] = { 5, 3 },
			     od[4] = { 1, 1, 15, 3 }, one[1] = { 1 }, ax1[1] = { 1 };
	static const struct win1d stft = { .k = 300, .s = 100, .d = 1, .g = 1 };
	static const float two = 2, floor_ = 1e-10f, inf = INFINITY, ten = 10, ln10 = 2.302585093f,
			   range = 3, zero = 0;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *wr = rnd_fill(1500, -0.1f, 0.1f), *wi = rnd_fill(1500, -0.1f, 0.1f);
	float *mel = rnd_fill(15, 0, 1), *x = rnd_fill(1700, -1, 1);
	float *re = mem(75 * 4), *im_ = mem(75 * 4), *pw = mem(75 * 4), *mb = mem(45 * 4);
	float *want = mem(45 * 4), top = -INFINITY;
	const struct model_layer *last;
	Onnx__NodeProto *n;
	int clipped = 0;

	init_f(&g, "W_re", 3, wd, wr);
	init_f(&g, "W_im", 3, wd, wi);
	init_f(&g, "mel", 2, md, mel);
	init_f(&g, "two", 0, NULL, &two);
	init_f(&g, "floor", 0, NULL, &floor_);
	init_f(&g, "inf", 0, NULL, &inf);
	init_f(&g, "ten", 0, NULL, &ten);
	init_f(&g, "ln10", 0, NULL, &ln10);
	init_f(&g, "range", 0, NULL, &range);
	init_f(&g, "zero", 0, NULL, &zero);
	init_i64(&g, "ax1", 1, one, 1, ax1);
	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g, "Unsqueeze", "u", NAMES("x", "ax1"), NAMES("x3"));
	n = node(&g, "Conv", "re", NAMES("x3", "W_re"), NAMES("re"));
	attr_ints(n, "strides", 1, (const int64_t[]){ 100 });
	n = node(&g, "Conv", "im", NAMES("x3", "W_im"), NAMES("im"));
	attr_ints(n, "strides", 1, (const int64_t[]){ 100 });
	node(&g, "Unsqueeze", "ure", NAMES("re", "ax1"), NAMES("re4"));
	node(&g, "Unsqueeze", "uim", NAMES("im", "ax1"), NAMES("im4"));
	attr_ints(node(&g, "Transpose", "tre", NAMES("re4"), NAMES("ret")), "perm", 4,
		  (const int64_t[]){ 0, 1, 3, 2 });
	attr_ints(node(&g, "Transpose", "tim", NAMES("im4"), NAMES("imt")), "perm", 4,
		  (const int64_t[]){ 0, 1, 3, 2 });
	node(&g, "Pow", "sq_re", NAMES("ret", "two"), NAMES("p_re"));
	node(&g, "Pow", "sq_im", NAMES("imt", "two"), NAMES("p_im"));
	node(&g, "Add", "power", NAMES("p_re", "p_im"), NAMES("p"));
	node(&g, "MatMul", "bank", NAMES("p", "mel"), NAMES("m"));
	node(&g, "Clip", "clamp", NAMES("m", "floor", "inf"), NAMES("mc"));
	node(&g, "Log", "log", NAMES("mc"), NAMES("l"));
	node(&g, "Mul", "x10", NAMES("l", "ten"), NAMES("l10"));
	node(&g, "Div", "db", NAMES("l10", "ln10"), NAMES("db0"));
	node(&g, "Sub", "minus0", NAMES("db0", "zero"), NAMES("db"));
	attr_int(node(&g, "ReduceMax", "top", NAMES("db"), NAMES("top")), "keepdims", 0);
	node(&g, "Sub", "low", NAMES("top", "range"), NAMES("low"));
	attr_int(node(&g, "Cast", "cast", NAMES("low"), NAMES("lowf")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
	node(&g, "Clip", "floor_db", NAMES("db", "lowf", "inf"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	g.outs[g.nr_outs++] = vinfo("top", 0, NULL, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	TH_LOG("%s", im.text);
	ASSERT_EQ(24, im.model->nr_layers);
	EXPECT_EQ(2, count_ops(im.model, MODEL_OP_CONV));
	EXPECT_EQ(300, im.model->layers[3].conv.kw);
	EXPECT_EQ(100, im.model->layers[3].conv.stride_w);
	EXPECT_EQ(1, count_ops(im.model, MODEL_OP_LOG));
	EXPECT_EQ(1, count_ops(im.model, MODEL_OP_FC));
	/* the squares, then Mul 10 */
	EXPECT_EQ(3, count_ops(im.model, MODEL_OP_MUL));
	for (int i = 0; i < im.model->nr_layers; i++)
		if (im.model->layers[i].op == MODEL_OP_MUL && !im.model->layers[i].binary.has_const)
			EXPECT_EQ(im.model->layers[i].inputs[0], im.model->layers[i].inputs[1]);
	/* Clip by 1e-10 (a constant) and by the computed floor (a second input) */
	EXPECT_EQ(2, count_ops(im.model, MODEL_OP_MAX));
	last = &im.model->layers[im.outputs[0]];
	EXPECT_EQ(MODEL_OP_MAX, last->op);
	EXPECT_EQ(2, last->nr_inputs);
	ASSERT_EQ(2, im.nr_outputs);
	EXPECT_EQ(1, im.model->layers[im.outputs[1]].out.ndims);
	EXPECT_EQ(1, im.model->layers[im.outputs[1]].out.dims[0]);
	/*
	 * params: the two STFT kernels, the bank and the constants of the four
	 * binary layers (1e-10, 10, ln 10, 3); MACs: the convs and the fc
	 */
	EXPECT_EQ(2u * 1500 + 15 + 4, im.model->params);
	EXPECT_EQ(2u * 5 * 15 * 300 + 15 * 5 * 3, im.model->macs);

	conv1d(x, 1, 1700, wr, NULL, 5, &stft, 15, re);
	conv1d(x, 1, 1700, wi, NULL, 5, &stft, 15, im_);
	for (int o = 0; o < 5; o++)
		for (int t = 0; t < 15; t++)
			pw[t * 5 + o] =
				re[o * 15 + t] * re[o * 15 + t] + im_[o * 15 + t] * im_[o * 15 + t];
	ref_fc(pw, mel, NULL, 15, 5, 3, mb);
	for (int i = 0; i < 45; i++) {
		mb[i] = 10.0f * logf(fmaxf(mb[i], floor_)) / ln10;
		top = fmaxf(top, mb[i]);
	}
	for (int i = 0; i < 45; i++) {
		want[i] = fmaxf(mb[i], top - range);
		clipped += mb[i] < top - range;
	}
	/* the floor is exercised: some bands lie more than 3 dB under the top */
	EXPECT_GT(clipped, 0);
	EXPECT_LT(clipped, 45);
	run_compare_output(_metadata, &im, 0, x, want, 45);
	run_compare_output(_metadata, &im, 1, x, &top, 1);
	onnx_import_free(&im);
	arena_free();
}

/*
 * The window limit moved from 256 to 4096 (MODEL_MAX_WINDOW), not away: a
 * 1-D conv with a 4097-wide kernel is refused naming the node and the limit.
 */
TEST(onnx_import__kernel_over_the_window_limit_is_refused)
{
	static const int64_t xd[3] = { 1, 1, 5000 }, wd[3] = { 1, 1, MODEL_MAX_WINDOW + 1 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	init_f(&g, "W", 3, wd, rnd_fill(MODEL_MAX_WINDOW + 1, -1, 1));
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "Conv", "wide", NAMES("x", "W"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 1, 904 }, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'wide' (Conv, opset 13, inputs "
						    "[1,1,5000], [1,1,4097] const): kernel "
						    "larger than 4096"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/*
 * output_padding within the end pads, as PyTorch's stride-2 "same"
 * upsampling writes it (3x3 stride 2, pads 1, output_padding 1): imported
 * as that much less end pad, grouped, 5x6 -> 10x12, and equal to the
 * reference deconvolution of the wider output.
 */
TEST(onnx_import__conv_transpose_output_padding_folds_into_the_end_pad)
{
	static const int64_t xd[4] = { 1, 4, 5, 6 }, wd[4] = { 4, 3, 3, 3 }, bd[1] = { 6 };
	static const int64_t od[4] = { 1, 6, 10, 12 };
	const struct model_conv cv = { .out_channels = 6, .kh = 3, .kw = 3, .stride_h = 2,
				       .stride_w = 2, .pad_t = 1, .pad_l = 1, .dil_h = 1,
				       .dil_w = 1, .groups = 2, .bias = true };
	float *w = rnd_fill(108, -1, 1), *b = rnd_fill(6, -1, 1), *x = rnd_fill(120, -1, 1);
	float *want = mem(720 * 4);
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	Onnx__NodeProto *n;

	init_f(&g, "W", 4, wd, w);
	init_f(&g, "B", 1, bd, b);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "ConvTranspose", "up", NAMES("x", "W", "B"), NAMES("y"));
	attr_ints(n, "strides", 2, (const int64_t[]){ 2, 2 });
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	attr_ints(n, "output_padding", 2, (const int64_t[]){ 1, 1 });
	attr_int(n, "group", 2);
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(MODEL_OP_DECONV, im.model->layers[1].op);
	EXPECT_EQ(0, im.model->layers[1].conv.pad_b);
	EXPECT_EQ(0, im.model->layers[1].conv.pad_r);
	EXPECT_EQ(10, im.model->layers[1].out.dims[2]);
	EXPECT_EQ(12, im.model->layers[1].out.dims[3]);
	ref_deconv(x, xd, w, b, &cv, od, want);
	run_compare(_metadata, &im, x, want, 720);
	onnx_import_free(&im);
	arena_free();
}

/* A 1-D ConvTranspose with output_padding past its end pad is refused, not run without it. */
TEST(onnx_import__1d_conv_transpose_output_padding_is_refused)
{
	static const int64_t xd[3] = { 1, 2, 5 }, wd[3] = { 2, 2, 3 }, od[3] = { 1, 2, 12 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	Onnx__NodeProto *n;

	init_f(&g, "W", 3, wd, rnd_fill(12, -1, 1));
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	n = node(&g, "ConvTranspose", "up", NAMES("x", "W"), NAMES("y"));
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	attr_ints(n, "output_padding", 1, (const int64_t[]){ 1 });
	g.outs[g.nr_outs++] = vinfo("y", 3, od, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'up' (ConvTranspose, opset"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "output_padding"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

TEST_HARNESS_MAIN
