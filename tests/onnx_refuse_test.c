// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the ONNX importer refuses, and in which words: an unsupported op
 * (named with its node, opset and inputs), batch norm in training mode,
 * symbolic dims without values, names that would inject statements,
 * duplicate names, overflowing folds, a file that is not ONNX, and the
 * inputs the libFuzzer targets found (huge Resize sizes, deep nesting,
 * unbounded folding, a Gather index, empty ints, a huge Reshape), and
 * initializers whose dims declare too many values.
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

TEST(onnx_import__unsupported_op_is_named)
{
	static const int64_t xd[2] = { 1, 4 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	const char *msg;

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g, "Erf", "/encoder/gelu/Erf", NAMES("x"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	msg = coloc_err_str(&err);
	TH_LOG("%s", msg);
	EXPECT_NE(NULL, strstr(msg, "node '/encoder/gelu/Erf' (Erf, opset 13, inputs [1,4])"));
	EXPECT_NE(NULL, strstr(msg, "unsupported op"));
	EXPECT_EQ(NULL, im.model);
	arena_free();
}

/* A BatchNormalization in training mode (batch statistics) is refused. */
TEST(onnx_import__batch_norm_in_training_mode_is_refused)
{
	static const int64_t xd[4] = { 1, 4, 2, 2 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *p = rnd_fill(16, 0.5f, 1);
	Onnx__NodeProto *n;

	init_f(&g, "gamma", 1, C4, p);
	init_f(&g, "beta", 1, C4, p + 4);
	init_f(&g, "mean", 1, C4, p + 8);
	init_f(&g, "var", 1, C4, p + 12);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "BatchNormalization", "bn", NAMES("x", "gamma", "beta", "mean", "var"),
		 NAMES("y"));
	attr_int(n, "training_mode", 1);
	g.outs[g.nr_outs++] = vinfo("y", 4, xd, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "node 'bn' (BatchNormalization, opset 13"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "training_mode=1"));
	arena_free();
}

/* x[batch, seq, 8]: the batch comes from --batch, seq must be given. */
TEST(onnx_import__symbolic_dims_need_values)
{
	static const int64_t xd[3] = { 0, 0, 8 }, wd[2] = { 8, 2 };
	static const char *const dn[3] = { "batch", "seq", NULL };
	struct onnx_import_opts o = { .batch = 3 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(16, -1, 1);
	uint8_t *buf;
	size_t len;

	init_f(&g, "W", 2, wd, w);
	g.ins[g.nr_ins++] = vinfo("x", 3, xd, dn);
	node(&g, "MatMul", "mm", NAMES("x", "W"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 3, xd, dn);
	buf = pack(&g, &len);
	EXPECT_EQ(-EINVAL, onnx_import_buffer("t.onnx", buf, len, &o, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "dim 1 is the symbol 'seq': give its value "
						    "with --dim seq=VALUE"))
	TH_LOG("%s", coloc_err_str(&err));
	coloc_err_clear(&err);
	EXPECT_EQ(-EINVAL, onnx_dim_parse(&o, "seq", &err));
	ASSERT_EQ(0, onnx_dim_parse(&o, "seq=7", &err));
	ASSERT_EQ(0, onnx_import_buffer("t.onnx", buf, len, &o, &im, &err))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(3, im.model->layers[0].out.dims[0]);
	EXPECT_EQ(7, im.model->layers[0].out.dims[1]);
	EXPECT_EQ(3u * 7 * 8 * 2, im.model->macs);
	onnx_import_free(&im);
	arena_free();
}

/* Node names go into comments: a newline in one must not inject a statement. */
TEST(onnx_import__names_cannot_inject_statements)
{
	static const int64_t xd[2] = { 1, 4 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g, "Sigmoid", "s\ninput evil shape=1x2\n", NAMES("x"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(2, im.model->nr_layers) TH_LOG("%s", im.text);
	EXPECT_EQ(NULL, strstr(im.text, "\ninput evil"));
	EXPECT_EQ(MODEL_OP_ACT, im.model->layers[1].op);
	onnx_import_free(&im);
	arena_free();
}

/* Nodes sharing one name get distinct layer names; a fold that overflows float is refused. */
TEST(onnx_import__same_names_and_overflowing_folds)
{
	static const int64_t xd[2] = { 1, 4 }, wd[2] = { 4, 4 };
	static const float tiny = 1e-40f;
	struct gb g = { 0 }, g2 = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	float *w = rnd_fill(16, 1, 2);

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g, "Sigmoid", "same", NAMES("x"), NAMES("a"));
	node(&g, "Tanh", "same", NAMES("a"), NAMES("b"));
	node(&g, "Sigmoid", "same", NAMES("b"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	ASSERT_EQ(0, import(&g, &im, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(4, im.model->nr_layers);
	EXPECT_STRNE(im.model->layers[1].name, im.model->layers[2].name);
	EXPECT_STRNE(im.model->layers[2].name, im.model->layers[3].name);
	EXPECT_STREQ("same", im.model->layers[1].name);
	onnx_import_free(&im);

	init_f(&g2, "W", 2, wd, w);
	init_f(&g2, "tiny", 0, NULL, &tiny);
	g2.ins[g2.nr_ins++] = vinfo("x", 2, xd, NULL);
	node(&g2, "MatMul", "mm", NAMES("x", "W"), NAMES("m"));
	node(&g2, "Div", "blowup", NAMES("m", "tiny"), NAMES("y"));
	g2.outs[g2.nr_outs++] = vinfo("y", 2, xd, NULL);
	EXPECT_EQ(-ERANGE, import(&g2, &im, &err));
	EXPECT_NE(NULL,
		  strstr(coloc_err_str(&err), "layer 'mm' (from MatMul 'mm' + Div): parameter 0 "
					      "is not finite after folding"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

TEST(onnx_import__not_onnx_is_refused)
{
	static const char junk[] = "model x\nend\n";
	struct onnx_import im;
	struct coloc_err err = { 0 };

	EXPECT_EQ(-EINVAL,
		  onnx_import_buffer("junk.onnx", junk, sizeof(junk) - 1, NULL, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "junk.onnx: not an ONNX model"))
	TH_LOG("%s", coloc_err_str(&err));
}

/* ---- inputs found by the libFuzzer targets (tests/fuzz/, docs/fuzzing.md) ---- */

/*
 * A Resize to sizes [1, 2, 2^40, 2^40]: its element count overflowed int64
 * in onnx_elems() while counting MACs (undefined behaviour), before the
 * parser's range checks. Now the layer's shape is checked when it is made,
 * and the message gives the dim's position, not the size read from the file.
 */
TEST(onnx_import__resize_to_huge_sizes_is_refused_before_counting)
{
	static const int64_t xd[4] = { 1, 2, 4, 4 }, szd[1] = { 4 };
	static const int64_t sizes[4] = { 1, 2, 1ll << 40, 1ll << 40 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	init_i64(&g, "sizes", 1, szd, 4, sizes);
	node(&g, "Resize", "up", NAMES("x", "", "", "sizes"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, xd, NULL);
	EXPECT_EQ(-EOPNOTSUPP, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err),
			       "node 'up' (Resize, opset 13, inputs [1,2,4,4], -, -, [4] const): "
			       "the result: dim 2 is outside the 1..16777216 coloc "
			       "allows"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(NULL, strstr(coloc_err_str(&err), "1099511627776"));
	arena_free();
}

/* Appends field's key (wire type 2) and the length of the len bytes at *pos, writing backwards. */
static void wrap_field(uint8_t *buf, size_t *pos, size_t cap, unsigned field)
{
	uint8_t tmp[16];
	size_t len = cap - *pos, n = 0;

	tmp[n++] = (uint8_t)(field << 3 | 2);
	do {
		tmp[n++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
		len >>= 7;
	} while (len);
	*pos -= n;
	memcpy(buf + *pos, tmp, n);
}

/*
 * A ModelProto whose graph holds a node whose attribute holds a graph...
 * reps times: 3 x reps + 1 messages deep, encoded by hand (protobuf-c's
 * packer would recurse as deep). Returns the file's start in buf.
 */
static const uint8_t *nested_model(uint8_t *buf, size_t cap, int reps, size_t *len)
{
	size_t pos = cap;

	for (int i = 0; i < reps; i++) {
		wrap_field(buf, &pos, cap, 6); /* AttributeProto.g */
		wrap_field(buf, &pos, cap, 5); /* NodeProto.attribute */
		wrap_field(buf, &pos, cap, 1); /* GraphProto.node */
	}
	wrap_field(buf, &pos, cap, 7); /* ModelProto.graph */
	*len = cap - pos;
	return buf + pos;
}

/*
 * protobuf-c has no nesting limit and recurses once per level: 3001 levels
 * in 16 KiB are refused before it decodes anything; 61 levels are not
 * (decoded, the graph is then refused for what it lacks: outputs).
 */
TEST(onnx_import__deep_nesting_is_refused_before_decoding)
{
	static uint8_t buf[64 << 10];
	struct onnx_import im;
	struct coloc_err err = { 0 };
	const uint8_t *m;
	size_t len;

	m = nested_model(buf, sizeof(buf), 1000, &len);
	ASSERT_GT(16 << 10, len);
	EXPECT_EQ(-ELOOP, onnx_import_buffer("deep.onnx", m, len, NULL, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "deep.onnx: messages nested more than 64 deep"))
	TH_LOG("%s", coloc_err_str(&err));

	coloc_err_clear(&err);
	m = nested_model(buf, sizeof(buf), 20, &len);
	EXPECT_EQ(-EINVAL, onnx_import_buffer("deep.onnx", m, len, NULL, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "deep.onnx: the graph has no outputs"))
	TH_LOG("%s", coloc_err_str(&err));
}

/*
 * A Range of 2^28 elements from three scalars: 2 GiB of doubles from a
 * few bytes, a 35 s input for the fuzzer. Folding now makes at most twice
 * the elements of the file's tensors, or 2^20 when that is less.
 */
TEST(onnx_import__folding_is_bounded_by_the_file)
{
	static const int64_t xd[2] = { 1, 4 }, zero = 0, big = 1ll << 28, one = 1;
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	init_i64(&g, "zero", 0, NULL, 1, &zero);
	init_i64(&g, "big", 0, NULL, 1, &big);
	init_i64(&g, "one", 0, NULL, 1, &one);
	node(&g, "Range", "r", NAMES("zero", "big", "one"), NAMES("ids"));
	node(&g, "Relu", "act", NAMES("x"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	EXPECT_EQ(-E2BIG, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err),
			       "node 'r' (Range, opset 13, inputs [] const, [] const, [] const): "
			       "folding would make constants of more than 1048576 elements"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/*
 * A security review found "index 1953460082 is out of range 0..0": the
 * error echoed a constant's data. Messages name the position instead.
 */
TEST(onnx_import__gather_index_error_names_the_position_not_the_value)
{
	static const int64_t xd[2] = { 1, 4 }, dd[1] = { 3 }, id[1] = { 2 };
	static const float data[3] = { 1, 2, 3 };
	static const int64_t idx[2] = { 1, 1953460082 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };

	g.ins[g.nr_ins++] = vinfo("x", 2, xd, NULL);
	init_f(&g, "data", 1, dd, data);
	init_i64(&g, "idx", 1, id, 2, idx);
	node(&g, "Gather", "pick", NAMES("data", "idx"), NAMES("k"));
	node(&g, "Relu", "act", NAMES("x"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 2, xd, NULL);
	EXPECT_EQ(-EINVAL, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err),
			       "node 'pick' (Gather, opset 13, inputs [3] const, [2] const): "
			       "indices element 1 is out of range for axis 0 of the data"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(NULL, strstr(coloc_err_str(&err), "1953460082"));
	arena_free();
}

/*
 * Values the fuzzer turned into undefined behaviour: an ints attribute
 * with no values (memcpy from NULL), and a Reshape target whose product
 * overflowed int64 before its bound was checked. Each is refused.
 */
TEST(onnx_import__empty_ints_and_huge_reshape_are_refused)
{
	static const int64_t xd[4] = { 1, 1, 4, 4 }, sd[1] = { 2 };
	static const int64_t target[2] = { 1ll << 32, 1ll << 32 };
	struct gb g = { 0 };
	struct onnx_import im;
	struct coloc_err err = { 0 };
	Onnx__NodeProto *n;

	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	n = node(&g, "MaxPool", "pool", NAMES("x"), NAMES("y"));
	attr_ints(n, "kernel_shape", 2, (const int64_t[]){ 2, 2 });
	attr(n, "pads", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	g.outs[g.nr_outs++] = vinfo("y", 4, xd, NULL);
	EXPECT_EQ(-EINVAL, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "pads has 0 values, expected 4"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();

	memset(&g, 0, sizeof(g));
	coloc_err_clear(&err);
	g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
	init_i64(&g, "target", 1, sd, 2, target);
	node(&g, "Reshape", "flat", NAMES("x", "target"), NAMES("y"));
	g.outs[g.nr_outs++] = vinfo("y", 4, xd, NULL);
	EXPECT_EQ(-EINVAL, import(&g, &im, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "the target shape is too large"))
	TH_LOG("%s", coloc_err_str(&err));
	arena_free();
}

/*
 * Initializers whose dims declare more than the importer takes, refused
 * by their dims before any value is read: a product past int64 (it must
 * not wrap to a small count), and one within the decoded bytes but over
 * the elements a tensor may hold.
 */
TEST(onnx_import__initializers_declaring_too_many_values_are_refused_by_their_dims)
{
	static const int64_t xd[4] = { 1, 1, 4, 4 }, one[1] = { 7 };
	static const int64_t wrap[3] = { 1ll << 31, 1ll << 31, 4 };
	static const int64_t many[2] = { 1ll << 20, 1ll << 9 };
	const struct {
		const int64_t *dims;
		const char *says;
	} cases[] = {
		{ wrap, "its initializers decode to more than 4096 MiB" },
		{ many, "has more than 268435456 elements" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gb g = { 0 };
		struct onnx_import im;
		struct coloc_err err = { 0 };

		g.ins[g.nr_ins++] = vinfo("x", 4, xd, NULL);
		init_i64(&g, "big", cases[i].dims == wrap ? 3 : 2, cases[i].dims, 1, one);
		node(&g, "Reshape", "flat", NAMES("x", "big"), NAMES("y"));
		g.outs[g.nr_outs++] = vinfo("y", 4, xd, NULL);
		EXPECT_GT(0, import(&g, &im, &err));
		EXPECT_NE(NULL, strstr(coloc_err_str(&err), cases[i].says))
		TH_LOG("case %zu: %s", i, coloc_err_str(&err));
		arena_free();
	}
}

TEST_HARNESS_MAIN
