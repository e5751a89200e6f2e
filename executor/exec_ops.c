// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the executor knows of each operator, one entry per operator: its
 * candidate versions and their names, whether it takes learned weights, the
 * canonical layout of its output, and the function that builds a version's
 * plan. exec_layer.c drives every layer through its entry and switches on
 * no operator.
 *
 * A layer keeps the first EXEC_VERSIONS_KEPT candidates that can be built
 * for its shape and that run differently on this CPU from those already
 * kept, so the order of versions[] is the order of preference, and a
 * candidate that resolves to another's kernel, split and layouts is never
 * offered twice under two names. A model loaded by
 * exec_model_load_default() offers oneDNN's default alone ("onednn-default")
 * for an operator with several candidates.
 *
 * Adding an operator, after its MODEL_OP_ value and its entry in
 * model_shape_ops.c's shape_ops[] (its name in the model format, how many
 * inputs it takes, and the rule that checks its attributes and computes its
 * output shape):
 *   1. one entry below: its versions (a single "onednn" for one oneDNN
 *      primitive), .weights if it takes learned weights (their shapes are
 *      then also a case in exec_weights.c, which generates them, and in
 *      exec_weights_file.c, which reads them), .out, and .build;
 *   2. its build function, in the file of its kind (exec_simple_ops.c for a
 *      single-version operator), declared in exec_ops.h. For several
 *      versions, an enum of them in exec_ops.h indexes versions[] here and
 *      the build function's switch on b->cand.
 * The ops_*_test files then get a test of every version against tests/reference.c.
 */
#include "exec_ops.h"

static const struct exec_op exec_ops[MODEL_OP_COUNT] = {
	[MODEL_OP_INPUT] = { .versions = { "input" }, .build = input_build },
	[MODEL_OP_CONV] = {
		.versions = {
			[CONV_NHWC] = "onednn-nhwc",
			[CONV_ROW_SPLIT] = "row-split",
			[CONV_WINOGRAD] = "winograd",
			[CONV_OC_SPLIT] = "oc-split",
			[CONV_ROW_TILES] = "row-tiles",
			[CONV_GEMM_NHWC] = "gemm-nhwc",
			[CONV_ANY] = "onednn-any",
		},
		.weights = true,
		.out = EXEC_OUT_NHWC,
		.build = conv_build,
	},
	[MODEL_OP_FC] = {
		.versions = {
			[FC_GEMM] = "gemm",
			[FC_MATMUL] = "matmul",
			[FC_OC_SPLIT] = "oc-split",
			[FC_PACKED] = "matmul-packed",
			[FC_OC_TILES] = "oc-tiles",
		},
		.weights = true,
		.build = fc_build,
	},
	[MODEL_OP_MATMUL] = {
		.versions = {
			[MM_MATMUL] = "matmul",
			[MM_GEMM] = "gemm",
			[MM_SPLIT] = "batch-split",
			[MM_TILES] = "batch-tiles",
		},
		.build = matmul_build,
	},
	[MODEL_OP_POOL] = { .versions = { "onednn" }, .out = EXEC_OUT_NHWC, .build = pool_build },
	[MODEL_OP_ACT] = { .versions = { "onednn" }, .out = EXEC_OUT_AS_INPUT, .build = act_build },
#define BINARY_OP                                                                    \
	{                                                                            \
		.versions = { "onednn" }, .weights = true, .out = EXEC_OUT_AS_INPUT, \
		.build = binary_build                                                \
	}
	/* .weights: the constant operand, when the layer has one */
	[MODEL_OP_ADD] = BINARY_OP,
	[MODEL_OP_MUL] = BINARY_OP,
	[MODEL_OP_SUB] = BINARY_OP,
	[MODEL_OP_DIV] = BINARY_OP,
	[MODEL_OP_MAX] = BINARY_OP,
	[MODEL_OP_MIN] = BINARY_OP,
	[MODEL_OP_RESIZE] = { .versions = { "onednn" }, .out = EXEC_OUT_NHWC, .build = resize_build },
	[MODEL_OP_REDUCE] = { .versions = { "onednn" }, .build = reduce_build },
	[MODEL_OP_PAD] = { .versions = { "onednn" }, .build = pad_build },
	[MODEL_OP_DECONV] = {
		.versions = {
			[DECONV_MATMUL_SHUFFLE] = "matmul-shuffle",
			[DECONV_PHASE_CONV] = "phase-conv",
			[DECONV_GEMM_COL2IM] = "gemm-col2im",
			[DECONV_ONEDNN] = "onednn",
		},
		.weights = true,
		.out = EXEC_OUT_NHWC,
		.build = deconv_build,
	},
	[MODEL_OP_CONCAT] = {
		.versions = { "onednn" },
		.out = EXEC_OUT_NHWC_AS_INPUT,
		.build = concat_build,
	},
	[MODEL_OP_LAYER_NORM] = { .versions = { "onednn" }, .weights = true, .build = layer_norm_build },
	[MODEL_OP_SOFTMAX] = {
		.versions = { "onednn" },
		.out = EXEC_OUT_AS_INPUT,
		.build = softmax_build,
	},
	[MODEL_OP_LRN] = { .versions = { "onednn" }, .out = EXEC_OUT_NHWC, .build = lrn_build },
	[MODEL_OP_RESHAPE] = { .versions = { "onednn" }, .out = EXEC_OUT_ALIAS, .build = reshape_build },
	[MODEL_OP_TRANSPOSE] = { .versions = { "onednn" }, .build = transpose_build },
	[MODEL_OP_EMBED] = { .versions = { "c-lookup" }, .weights = true, .build = embed_build },
	[MODEL_OP_SLICE] = { .versions = { "onednn" }, .build = slice_build },
	[MODEL_OP_LOG] = { .versions = { "onednn" }, .out = EXEC_OUT_AS_INPUT, .build = log_build },
};

const struct exec_op *exec_op_of(enum model_op op)
{
	if ((unsigned int)op >= MODEL_OP_COUNT || !exec_ops[op].build)
		return NULL;
	return &exec_ops[op];
}

int exec_op_nr_cands(const struct exec_op *op)
{
	int n = 0;

	while (n < EXEC_OP_MAX_CANDS && op->versions[n])
		n++;
	return n;
}
