// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ONNX importer under truncations at every byte and random mutations
 * of real-looking files (a conv graph, a transformer block, 1-D windows):
 * it refuses or imports, and never crashes (run under SANITIZE=1).
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
 * For the fuzz loop: opset 17, token ids -> embedding -> LayerNormalization
 * -> a folded Shape/Gather/Unsqueeze/Concat/Reshape -> MatMul -> GELU with
 * a Constant node -> Slice -> Transpose -> Softmax.
 */
static void fuzz_graph(struct gb *g)
{
	static const int64_t idd[2] = { 1, 4 }, td[2] = { 6, 4 }, d4[1] = { 4 }, w44[2] = { 4, 4 },
			     one[1] = { 1 }, three[1] = { 3 };
	static const int64_t zero = 0, minus1 = -1, shp3[3] = { 1, 4, 4 }, s1 = 1, e3 = 3;
	static const float sqrt2 = 1.41421356f, half = 0.5f;
	float *t = rnd_fill(24, -1, 1), *gam = rnd_fill(4, 0.5f, 1), *w = rnd_fill(16, -1, 1);

	g->opset = 17;
	init_f(g, "table", 2, td, t);
	init_f(g, "gamma", 1, d4, gam);
	init_f(g, "W", 2, w44, w);
	init_f(g, "sqrt2", 0, NULL, &sqrt2);
	init_f(g, "half", 0, NULL, &half);
	init_i64(g, "zero", 0, NULL, 1, &zero);
	init_i64(g, "axes0", 1, one, 1, &zero);
	init_i64(g, "rest", 1, one, 1, &minus1);
	init_i64(g, "shp3", 1, three, 3, shp3);
	init_i64(g, "s1", 1, one, 1, &s1);
	init_i64(g, "e3", 1, one, 1, &e3);
	vinfo_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	g->ins[g->nr_ins++] = vinfo("ids", 2, idd, NULL);
	node(g, "Gather", "embed", NAMES("table", "ids"), NAMES("e"));
	node(g, "LayerNormalization", "ln", NAMES("e", "gamma"), NAMES("ln"));
	node(g, "Shape", "shape", NAMES("ln"), NAMES("sh"));
	node(g, "Gather", "n", NAMES("sh", "zero"), NAMES("n"));
	node(g, "Unsqueeze", "n1", NAMES("n", "axes0"), NAMES("n1"));
	attr_int(node(g, "Concat", "tgt", NAMES("n1", "rest"), NAMES("tgt")), "axis", 0);
	node(g, "Reshape", "flat", NAMES("ln", "tgt"), NAMES("f"));
	node(g, "Reshape", "back", NAMES("f", "shp3"), NAMES("b"));
	node(g, "MatMul", "mm", NAMES("b", "W"), NAMES("m"));
	node(g, "Div", "div", NAMES("m", "sqrt2"), NAMES("d"));
	node(g, "Erf", "erf", NAMES("d"), NAMES("er"));
	const_node(g, "one", 1.0f);
	node(g, "Add", "add", NAMES("er", "one"), NAMES("a"));
	node(g, "Mul", "mul", NAMES("m", "a"), NAMES("p"));
	node(g, "Mul", "mulh", NAMES("p", "half"), NAMES("gl"));
	node(g, "Slice", "sl", NAMES("gl", "s1", "e3", "s1"), NAMES("sl"));
	attr_ints(node(g, "Transpose", "tr", NAMES("sl"), NAMES("tr")), "perm", 3,
		  (const int64_t[]){ 0, 2, 1 });
	node(g, "Softmax", "sm", NAMES("tr"), NAMES("y"));
	g->outs[g->nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 4, 2 }, NULL);
}

/*
 * 1-D windows and a folded mask: x[1,2,9] -> Conv 1-D -> MaxPool 1-D ->
 * ConvTranspose 1-D, plus Range(0, Shape[2], 1) < 3 through Not, And, Cast,
 * Where and Expand to the result's shape, added to it ([1,2,8]).
 */
static void fuzz_graph_1d(struct gb *g)
{
	static const int64_t xd[3] = { 1, 2, 9 }, wd[3] = { 2, 2, 2 }, one[1] = { 1 };
	static const int64_t k0 = 0, k1 = 1, k2 = 2, k3 = 3;
	static const float lo = -1, hi = 2;
	Onnx__NodeProto *n;

	init_f(g, "W", 3, wd, rnd_fill(8, -1, 1));
	init_f(g, "W2", 3, wd, rnd_fill(8, -1, 1));
	init_i64(g, "k0", 0, NULL, 1, &k0);
	init_i64(g, "k1", 0, NULL, 1, &k1);
	init_i64(g, "k2", 0, NULL, 1, &k2);
	init_i64(g, "k3", 1, one, 1, &k3);
	init_f(g, "lo", 0, NULL, &lo);
	init_f(g, "hi", 0, NULL, &hi);
	g->ins[g->nr_ins++] = vinfo("x", 3, xd, NULL);
	n = node(g, "Conv", "c", NAMES("x", "W"), NAMES("c"));
	attr_ints(n, "pads", 2, (const int64_t[]){ 1, 0 });
	attr_ints(n, "dilations", 1, (const int64_t[]){ 2 });
	n = node(g, "MaxPool", "p", NAMES("c"), NAMES("p"));
	attr_ints(n, "kernel_shape", 1, (const int64_t[]){ 2 });
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	n = node(g, "ConvTranspose", "u", NAMES("p", "W2"), NAMES("u"));
	attr_ints(n, "strides", 1, (const int64_t[]){ 2 });
	node(g, "Shape", "s", NAMES("u"), NAMES("s"));
	node(g, "Gather", "w", NAMES("s", "k2"), NAMES("w"));
	node(g, "Range", "r", NAMES("k0", "w", "k1"), NAMES("r"));
	node(g, "Less", "lt", NAMES("r", "k3"), NAMES("lt"));
	node(g, "Not", "nt", NAMES("lt"), NAMES("nt"));
	node(g, "And", "an", NAMES("lt", "nt"), NAMES("an"));
	node(g, "Or", "or", NAMES("an", "lt"), NAMES("m"));
	attr_int(node(g, "Cast", "cb", NAMES("m"), NAMES("mb")), "to",
		 ONNX__TENSOR_PROTO__DATA_TYPE__BOOL);
	node(g, "Where", "wh", NAMES("mb", "lo", "hi"), NAMES("q"));
	node(g, "Expand", "ex", NAMES("q", "s"), NAMES("qx"));
	node(g, "Add", "add", NAMES("u", "qx"), NAMES("y"));
	g->outs[g->nr_outs++] = vinfo("y", 3, (const int64_t[]){ 1, 2, 8 }, NULL);
}

/* Imports buf cut at every byte and with `mutations` random byte changes; counts both outcomes. */
static void fuzz(struct __test_metadata *_metadata, const uint8_t *buf, size_t len, int mutations,
		 int *ok, int *refused)
{
	uint8_t *copy = malloc(len);
	struct onnx_import im;

	ASSERT_NE(NULL, copy);
	for (size_t cut = 0; cut < len + (size_t)mutations; cut++) {
		struct coloc_err err = { 0 };
		size_t n = cut < len ? cut : len;

		memcpy(copy, buf, n);
		if (cut >= len) {
			int flips = 1 + (int)((rnd() + 1) * 2);

			for (int k = 0; k < flips; k++)
				copy[(size_t)((rnd() + 1) * 0.5f * (float)(len - 1))] =
					(uint8_t)((rnd() + 1) * 127.9f);
		}
		if (onnx_import_buffer("fuzz.onnx", copy, n, NULL, &im, &err)) {
			EXPECT_NE(0, err.msg[0]);
			(*refused)++;
		} else {
			onnx_import_free(&im);
			(*ok)++;
		}
	}
	free(copy);
}

/*
 * Every truncation of three valid files, and random byte mutations, are
 * imported or refused with a message: never a crash (ASan/UBSan under
 * SANITIZE=1).
 */
TEST(onnx_import__fuzz_truncations_and_mutations)
{
	struct gb g = { 0 }, g2 = { 0 }, g3 = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w, *b, *bn;
	uint8_t *buf;
	size_t len;
	int ok = 0, refused = 0;

	conv_bn_relu(&g, &w, &b, &bn);
	buf = pack(&g, &len);
	fuzz(_metadata, buf, len, 3000, &ok, &refused);
	TH_LOG("conv+bn+relu, %zu bytes: %d imported, %d refused", len, ok, refused);
	EXPECT_GT(refused, 0);
	fuzz_graph(&g2);
	/* the unfuzzed graph imports: the loop starts from a valid file */
	ASSERT_EQ(0, import(&g2, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(MODEL_ACT_GELU, im.model->layers[im.model->nr_layers - 4].act)
	TH_LOG("%s", im.text);
	onnx_import_free(&im);
	buf = pack(&g2, &len);
	ok = refused = 0;
	fuzz(_metadata, buf, len, 3000, &ok, &refused);
	TH_LOG("attention-like, %zu bytes: %d imported, %d refused", len, ok, refused);
	EXPECT_GT(refused, 0);
	fuzz_graph_1d(&g3);
	ASSERT_EQ(0, import(&g3, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(MODEL_OP_ADD, im.model->layers[im.model->nr_layers - 1].op) TH_LOG("%s", im.text);
	onnx_import_free(&im);
	buf = pack(&g3, &len);
	ok = refused = 0;
	fuzz(_metadata, buf, len, 3000, &ok, &refused);
	TH_LOG("1-D windows and a mask, %zu bytes: %d imported, %d refused", len, ok, refused);
	EXPECT_GT(refused, 0);
	arena_free();
}

TEST_HARNESS_MAIN
