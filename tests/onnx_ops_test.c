// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ONNX importer's elementwise, logic and data-movement ops: Clip and
 * Pow with scalar bounds, comparisons and logic folded away, run-time
 * casts, Where on a constant condition, Clip bounds as max/min, Split and
 * reductions, Pad, each against the plain-C reference; limits that coloc
 * cannot run exactly are refused.
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
 * A computed scalar keeps rank 0 where ONNX shapes matter: ReduceMean over
 * every axis without keepdims, Unsqueeze'd on axes 0 and 1, is [1, 1] (not
 * [1, 1, 1]); Clip(x, none, mean) is a min layer of two inputs; Pow by 1
 * is x itself; the [1, 1] then adds onto [1, 4, 3]. By hand: y = min(x,
 * mean) + mean.
 */
TEST(onnx_import__scalar_clip_bound_and_pow_one)
{
	static const int64_t xd[3] = { 1, 4, 3 }, axes[2] = { 0, 1 }, two_d[1] = { 2 };
	static const float one = 1;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(12, -1, 1), *want = mem(12 * 4);
	const struct model_layer *u = NULL;
	double mean = 0;

	init_f(&g, "one", 0, NULL, &one);
	init_i64(&g, "axes", 1, two_d, 2, axes);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	attr_int(node(&g, "ReduceMean", "mean", NAMES("x"), NAMES("s")), "keepdims", 0);
	node(&g, "Unsqueeze", "u", NAMES("s", "axes"), NAMES("s2"));
	node(&g, "Clip", "cap", NAMES("x", "", "s"), NAMES("c"));
	node(&g, "Pow", "same", NAMES("c", "one"), NAMES("p"));
	node(&g, "Add", "shift", NAMES("p", "s2"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	TH_LOG("%s", im.text);
	/* input, reduce, reshape [1], reshape [1, 1], min, add */
	ASSERT_EQ(6, im.model->nr_layers);
	for (int i = 0; i < im.model->nr_layers; i++)
		if (im.model->layers[i].op == MODEL_OP_RESHAPE)
			u = &im.model->layers[i];
	ASSERT_NE(NULL, u);
	EXPECT_EQ(2, u->out.ndims);
	EXPECT_EQ(MODEL_OP_MIN, im.model->layers[4].op);
	EXPECT_EQ(2, im.model->layers[4].nr_inputs);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[5].op);
	for (int i = 0; i < 12; i++)
		mean += x[i];
	mean /= 12;
	for (int i = 0; i < 12; i++)
		want[i] = fminf(x[i], (float)mean) + (float)mean;
	run_compare(_metadata, &im, x, want, 12);
	onnx_import_free(&im);
	arena_free();
}

/*
 * What stays refused around the log-mel lowering: Pow by another exponent,
 * a Clip with a computed bound and a finite other one, and a computed
 * scalar into an op that is not elementwise.
 */
TEST(onnx_import__pow_clip_and_scalar_limits_are_refused)
{
	static const int64_t xd[2] = { 1, 4 };
	static const float three = 3, one = 1;
	static const struct {
		const char *op, *in1, *in2, *words;
		bool on_scalar;
	} refused[] = {
		{ "Pow", "three", NULL,
		  "node 'n' (Pow, opset 13, inputs [1,4], [] const): the exponent is neither 1 "
		  "nor 2",
		  false },
		{ "Clip", "s", "one", "Clip with a computed bound and another bound", false },
		{ "Softmax", NULL, NULL, "input 0 is a computed scalar (rank 0)", true },
	};

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct gb g = { 0 };
		struct onnx_import im;
		struct coloc_err err = { 0 };
		const char *x = refused[i].on_scalar ? "s" : "x";

		init_f(&g, "three", 0, NULL, &three);
		init_f(&g, "one", 0, NULL, &one);
		g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
		attr_int(node(&g, "ReduceMax", "top", NAMES("x"), NAMES("s")), "keepdims", 0);
		node(&g, refused[i].op, "n",
		     refused[i].in2 ? NAMES(x, refused[i].in1, refused[i].in2) :
		     refused[i].in1 ? NAMES(x, refused[i].in1) :
				      NAMES(x),
		     NAMES("y"));
		g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
		EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
		EXPECT_NE(NULL, strstr(coloc_err_str(&err), refused[i].words))
		TH_LOG("%s", coloc_err_str(&err));
		arena_free();
	}
}

/*
 * A mask chain built from constants and the input's shape folds away: pos
 * = Range(0, Shape(x)[2], 1) = [0, 1, 2, 3], w = Shape(x)[2] - 1 = 3, and
 * by hand
 *   Less(pos, w) = 1110, Not(Equal(pos, 2)) = 1101, And = 1100,
 *   Or(that, GreaterOrEqual(pos, 3) = 0001) = 1101,
 *   Xor(Greater(pos, 0) = 0111, LessOrEqual(pos, 1) = 1100) = 1011,
 *   And(1101, 1011) = 1001 = m;
 * Where(m, 0.5, -2) = [0.5, -2, -2, 0.5]; m through Cast float -> int64 ->
 * bool picks that or 3: [0.5, 3, 3, 0.5], Expand'ed to Shape(x) and added
 * to x. Only the input and one add of a constant remain.
 */
TEST(onnx_import__comparison_and_logic_chains_fold_away)
{
	static const int64_t xd[3] = { 1, 3, 4 }, one[1] = { 1 };
	static const int64_t k0 = 0, k1 = 1, k2 = 2, k3 = 3;
	static const float bias[4] = { 0.5f, 3, 3, 0.5f };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(12, -1, 1), *want = mem(12 * 4);

	init_i64(&g, "k0", 1, one, 1, &k0);
	init_i64(&g, "k1", 1, one, 1, &k1);
	init_i64(&g, "k2", 0, NULL, 1, &k2);
	init_i64(&g, "k3", 1, one, 1, &k3);
	const_node(&g, "half", 0.5f);
	const_node(&g, "minus2", -2.0f);
	const_node(&g, "three", 3.0f);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "Shape", "shape", NAMES("x"), NAMES("s"));
	node(&g, "Gather", "width", NAMES("s", "k2"), NAMES("w0"));
	node(&g, "Range", "positions", NAMES("k0", "w0", "k1"), NAMES("pos"));
	node(&g, "Sub", "wm1", NAMES("w0", "k1"), NAMES("w"));
	node(&g, "Less", "lt", NAMES("pos", "w"), NAMES("lt"));
	node(&g, "Equal", "eq", NAMES("pos", "k2"), NAMES("eq"));
	node(&g, "Not", "ne", NAMES("eq"), NAMES("ne"));
	node(&g, "And", "a1", NAMES("lt", "ne"), NAMES("a1"));
	node(&g, "GreaterOrEqual", "ge", NAMES("pos", "k3"), NAMES("ge"));
	node(&g, "Or", "o1", NAMES("a1", "ge"), NAMES("o1"));
	node(&g, "Greater", "gt", NAMES("pos", "k0"), NAMES("gt"));
	node(&g, "LessOrEqual", "le", NAMES("pos", "k1"), NAMES("le"));
	node(&g, "Xor", "xo", NAMES("gt", "le"), NAMES("xo"));
	node(&g, "And", "m", NAMES("o1", "xo"), NAMES("m"));
	node(&g, "Where", "sel", NAMES("m", "half", "minus2"), NAMES("sel"));
	attr_int(node(&g, "Cast", "cf", NAMES("m"), NAMES("mf")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
	attr_int(node(&g, "Cast", "ci", NAMES("mf"), NAMES("mi")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
	attr_int(node(&g, "Cast", "cb", NAMES("mi"), NAMES("mb")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__BOOL);
	node(&g, "Where", "bias", NAMES("mb", "sel", "three"), NAMES("b"));
	node(&g, "Expand", "expand", NAMES("b", "s"), NAMES("bx"));
	node(&g, "Add", "add", NAMES("x", "bx"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[1].op);
	EXPECT_TRUE(im.model->layers[1].binary.has_const);
	for (int i = 0; i < 12; i++)
		want[i] = x[i] + bias[i % 4];
	run_compare(_metadata, &im, x, want, 12);
	onnx_import_free(&im);
	arena_free();
}

/*
 * On run-time values: a Cast to float is an alias (a BERT mask's Cast of
 * its input), a comparison or a Cast to int64 is refused with the node,
 * opset and input shapes.
 */
TEST(onnx_import__run_time_casts_and_comparisons)
{
	static const int64_t xd[2] = { 1, 4 }, one[1] = { 1 };
	static const float zero = 0;
	static const struct {
		const char *op;
		int64_t to;
		const char *words;
	} refused[] = {
		{ "Greater", 0, "node 'n' (Greater, opset 13, inputs [1,4], [1] const)" },
		{ "Cast", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, "Cast of a run-time tensor" },
	};
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(4, -1, 1), *want = mem(4 * 4);

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	attr_int(node(&g, "Cast", "cast", NAMES("x"), NAMES("xf")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
	node(&g, "Relu", "relu", NAMES("xf"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	memcpy(want, x, 4 * sizeof(float));
	ref_act(want, 4, MODEL_ACT_RELU, 0, 0);
	run_compare(_metadata, &im, x, want, 4);
	onnx_import_free(&im);
	arena_free();
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct gb r = { 0 };
		Onnx__NodeProto *n;

		err = (struct coloc_err){ 0 };
		init_f(&r, "zero", 1, one, &zero);
		r.ins[r.nr_ins++] = vinfo("x", 2, xd, NULL);
		n = node(&r, refused[i].op, "n", refused[i].to ? NAMES("x") : NAMES("x", "zero"),
			 NAMES("y"));
		if (refused[i].to)
			attr_int(n, "to", refused[i].to);
		r.outs[r.nr_outs++] = vinfo("y", 2, xd, NULL);
		EXPECT_EQ(-EOPNOTSUPP, import(&r, &im, &err));
		EXPECT_NE(NULL, strstr(coloc_err_str(&err), refused[i].words))
		TH_LOG("%s", coloc_err_str(&err));
		arena_free();
	}
}

/*
 * Where with a constant condition (folded: cols <= rows, a lower-triangular
 * [3,4] causal mask) and one computed operand: a mul and an add of
 * constants. y = Where(mask, relu(x), -1e4), then Where(cols == 3, 0.5, y)
 * with the constant first; by hand, element (i, j): 0.5 if j = 3, else
 * relu(x) if j <= i, else -1e4. A Where whose condition is all true is an
 * alias, and one whose condition is computed is refused.
 */
TEST(onnx_import__where_of_a_constant_condition_is_mul_and_add)
{
	static const int64_t xd[3] = { 1, 3, 4 }, cd[2] = { 1, 4 }, rd[2] = { 3, 1 },
			     one[1] = { 1 };
	static const int64_t cols[4] = { 0, 1, 2, 3 }, rows[3] = { 0, 1, 2 }, k3 = 3, k9 = 9;
	static const float neg = -1e4f, half = 0.5f;
	struct gb g = { 0 }, r = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(12, -1, 1), *want = mem(12 * 4);

	init_i64(&g, "cols", 2, cd, 4, cols);
	init_i64(&g, "rows", 2, rd, 3, rows);
	init_i64(&g, "k3", 1, one, 1, &k3);
	init_i64(&g, "k9", 1, one, 1, &k9);
	init_f(&g, "neg", 0, NULL, &neg);
	init_f(&g, "half", 0, NULL, &half);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, NULL);
	node(&g, "Relu", "relu", NAMES("x"), NAMES("r"));
	node(&g, "LessOrEqual", "causal", NAMES("cols", "rows"), NAMES("mask"));
	node(&g, "Where", "masked", NAMES("mask", "r", "neg"), NAMES("y1"));
	node(&g, "Equal", "last", NAMES("cols", "k3"), NAMES("is_last"));
	node(&g, "Where", "pin", NAMES("is_last", "half", "y1"), NAMES("y2"));
	node(&g, "Less", "all", NAMES("cols", "k9"), NAMES("every"));
	node(&g, "Where", "keep", NAMES("every", "y2", "neg"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(6, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_ACT, im.model->layers[1].op);
	EXPECT_EQ(MODEL_OP_MUL, im.model->layers[2].op);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[3].op);
	EXPECT_EQ(MODEL_OP_MUL, im.model->layers[4].op);
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[5].op);
	EXPECT_EQ(5, im.outputs[0]);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			want[i * 4 + j] = j == 3 ? 0.5f : j <= i ? fmaxf(x[i * 4 + j], 0) : -1e4f;
	run_compare(_metadata, &im, x, want, 12);
	onnx_import_free(&im);

	r.ins[r.nr_ins++] = vinfo("x", 3, xd, NULL);
	init_f(&r, "neg", 0, NULL, &neg);
	node(&r, "Relu", "relu", NAMES("x"), NAMES("r"));
	node(&r, "Where", "w", NAMES("x", "r", "neg"), NAMES("y"));
	r.outs[r.nr_outs++] = vinfo("y", 3, xd, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&r, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'w' (Where, opset 13, inputs [1,3,4], "
						    "[1,3,4], [] const): Where needs a constant "
						    "condition"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/*
 * Clip at opset 13: (-1, 1) after a Conv is its act=clip; (0.5, +inf) with
 * the infinity an initializer (melspectrogram's) is a max with 0.5; only
 * an upper bound 2 (the min input left empty) is a min with 2.
 */
TEST(onnx_import__clip_bounds_become_clip_max_min)
{
	static const int64_t od[4] = { 1, 4, 8, 8 };
	static const float m1 = -1.0f, p1 = 1.0f, half = 0.5f, inf = INFINITY, two = 2.0f;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_shape os = { .ndims = 4, .dims = { 1, 4, 8, 8 } };
	struct model_shape ks = { .ndims = 1, .dims = { 1 } };
	float *w = rnd_fill(108, -1, 1), *x = rnd_fill(192, -2, 2), *a = mem(256 * 4);
	float *want = mem(256 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W", 4, W_DIMS, w);
	init_f(&g, "m1", 0, NULL, &m1);
	init_f(&g, "p1", 0, NULL, &p1);
	init_f(&g, "half", 0, NULL, &half);
	init_f(&g, "inf", 0, NULL, &inf);
	init_f(&g, "two", 0, NULL, &two);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "Conv", "c", NAMES("x", "W"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Clip", "unit", NAMES("c", "m1", "p1"), NAMES("u"));
	node(&g, "Clip", "floor", NAMES("u", "half", "inf"), NAMES("f"));
	node(&g, "Clip", "cap", NAMES("f", "", "two"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(4, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_ACT_CLIP, im.model->layers[1].act);
	EXPECT_EQ(-1.0f, im.model->layers[1].act_alpha);
	EXPECT_EQ(1.0f, im.model->layers[1].act_beta);
	EXPECT_EQ(MODEL_OP_MAX, im.model->layers[2].op);
	EXPECT_EQ(MODEL_OP_MIN, im.model->layers[3].op);
	ref_conv(x, X_DIMS, w, NULL, &CONV3, od, a);
	ref_act(a, 256, MODEL_ACT_CLIP, -1, 1);
	ref_binary(MODEL_OP_MAX, a, &os, &half, &ks, want);
	ref_binary(MODEL_OP_MIN, want, &os, &two, &ks, a);
	run_compare(_metadata, &im, x, a, 256);
	onnx_import_free(&im);
	arena_free();
}

/*
 * Split of the channels into 1, 2 and 3 (opset 13: sizes as input 1),
 * concatenated back in another order; ReduceMax over H, W kept, then
 * ReduceMean over the channels with keepdims 0 (a reduce and a reshape).
 */
TEST(onnx_import__split_and_reductions_match_reference)
{
	static const int64_t xd[4] = { 1, 6, 3, 4 }, sd[1] = { 3 }, sizes[3] = { 1, 2, 3 },
			     od[3] = { 1, 1, 1 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *x = rnd_fill(72, -2, 2), *cat = mem(72 * 4), *mx = mem(6 * 4), want[1];
	struct model_shape cs = { .ndims = 4, .dims = { 1, 6, 3, 4 } };
	struct model_shape ms = { .ndims = 4, .dims = { 1, 6, 1, 1 } };
	struct model_reduce hw = { .kind = MODEL_REDUCE_MAX, .axes = 0xc };
	/* the channels and the last axis (of size 1), as -1 names it */
	struct model_reduce ch = { .kind = MODEL_REDUCE_MEAN, .axes = 0xa };
	Onnx__NodeProto *n;

	init_i64(&g, "sizes", 1, sd, 3, sizes);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "Split", "split", NAMES("x", "sizes"), NAMES("a", "b", "c"));
	attr_int(n, "axis", 1);
	n = node(&g, "Concat", "cat", NAMES("c", "a", "b"), NAMES("k"));
	attr_int(n, "axis", 1);
	n = node(&g, "ReduceMax", "rmax", NAMES("k"), NAMES("m"));
	attr_ints(n, "axes", 2, (const int64_t[]){ 2, 3 });
	n = node(&g, "ReduceMean", "rmean", NAMES("m"), NAMES("y"));
	attr_ints(n, "axes", 2, (const int64_t[]){ 1, -1 });
	attr_int(n, "keepdims", 0);
	g.outs[g.nr_outs++] = vinfo("y", 3, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(8, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(3, count_ops(im.model, MODEL_OP_SLICE));
	EXPECT_EQ(2, count_ops(im.model, MODEL_OP_REDUCE));
	EXPECT_EQ(MODEL_OP_RESHAPE, im.model->layers[7].op);
	/* channels 3..5, then 0, then 1..2 */
	memcpy(cat, x + 36, 36 * sizeof(float));
	memcpy(cat + 36, x, 36 * sizeof(float));
	memcpy(cat + 48, x + 12, 24 * sizeof(float));
	ref_reduce(cat, &cs, &hw, mx);
	ref_reduce(mx, &ms, &ch, want);
	run_compare(_metadata, &im, x, want, 1);
	onnx_import_free(&im);
	arena_free();
}

/* Pad at opset 13: a border of 0.5 (pads and value as inputs) around a conv's H and W. */
TEST(onnx_import__pad_matches_reference)
{
	static const int64_t od[4] = { 1, 4, 9, 11 }, pd[1] = { 8 },
			     pads[8] = { 0, 0, 0, 1, 0, 0, 1, 2 };
	static const float half = 0.5f;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	struct model_shape cs = { .ndims = 4, .dims = { 1, 4, 8, 8 } };
	struct model_pad p = { .begin = { 0, 0, 0, 1 }, .end = { 0, 0, 1, 2 }, .value = 0.5f };
	float *w = rnd_fill(108, -1, 1), *x = rnd_fill(192, -1, 1), *cv = mem(256 * 4);
	float *want = mem(396 * 4);
	Onnx__NodeProto *n;

	init_f(&g, "W", 4, W_DIMS, w);
	init_i64(&g, "pads", 1, pd, 8, pads);
	init_f(&g, "half", 0, NULL, &half);
	g.ins[g.nr_ins++] = vinfo("x", 4, X_DIMS, NULL);
	n = node(&g, "Conv", "c", NAMES("x", "W"), NAMES("c"));
	attr_ints(n, "pads", 4, (const int64_t[]){ 1, 1, 1, 1 });
	node(&g, "Pad", "border", NAMES("c", "pads", "half"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, od, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(3, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(MODEL_OP_PAD, im.model->layers[2].op);
	ref_conv(x, X_DIMS, w, NULL, &CONV3, cs.dims, cv);
	ref_pad(cv, &cs, &p, want);
	run_compare(_metadata, &im, x, want, 396);
	onnx_import_free(&im);
	arena_free();
}

TEST_HARNESS_MAIN
