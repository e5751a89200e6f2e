/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The executor's operators: one entry per operator in exec_ops.c's table
 * (its candidate versions and their names, whether it takes learned
 * weights, the layout of its output, its build function), and the build
 * functions, defined in the file of their kind. exec_ops.c says how to add
 * an operator.
 */
#ifndef COLOC_EXEC_OPS_H
#define COLOC_EXEC_OPS_H

#include "exec_build.h"

/* Candidate versions an operator may list; a layer keeps EXEC_VERSIONS_KEPT at most. */
#define EXEC_OP_MAX_CANDS 8

/* The canonical layout of an operator's output (see exec_layer.c). */
enum exec_out_layout {
	EXEC_OUT_PLAIN, /* dense in logical order */
	EXEC_OUT_NHWC, /* NHWC when 4-D, else plain */
	EXEC_OUT_AS_INPUT, /* input 0's layout when it is strided and of the same dims, else plain */
	EXEC_OUT_NHWC_AS_INPUT, /* NHWC when input 0 is NHWC, else plain */
	EXEC_OUT_ALIAS, /* plain, and input 0's very buffer when that is plain (a free reshape) */
};

struct exec_op {
	/*
	 * Candidate versions in order of preference, by the names profiles and
	 * --kernel use; the index of one is b->cand when it is built. A
	 * single-version operator lists one name.
	 */
	const char *versions[EXEC_OP_MAX_CANDS];
	/* Takes learned weights: layer_weights_make() fills b->lw for the build. */
	bool weights;
	enum exec_out_layout out;
	/*
	 * Adds to b->plan the steps of candidate b->cand of layer b->li at
	 * b->nr_threads cores. Returns 0; -ENOENT when the candidate cannot be
	 * built for this shape (it is then not offered); or another negative
	 * errno, with the reason recorded through builder_fail().
	 */
	int (*build)(struct builder *b);
};

/* The operator's entry; NULL for a value that is no operator. */
const struct exec_op *exec_op_of(enum model_op op);
/* How many candidate versions the operator lists. */
int exec_op_nr_cands(const struct exec_op *op);

/*
 * The candidates of the operators that have several, as indices into
 * their versions[]. The build functions switch on them.
 */
enum conv_cand {
	CONV_NHWC,
	CONV_ROW_SPLIT,
	CONV_WINOGRAD,
	CONV_OC_SPLIT,
	CONV_ROW_TILES,
	CONV_GEMM_NHWC,
	CONV_ANY,
	CONV_NR_CANDS
};

enum fc_cand { FC_GEMM, FC_MATMUL, FC_OC_SPLIT, FC_PACKED, FC_OC_TILES, FC_NR_CANDS };

enum mm_cand { MM_MATMUL, MM_GEMM, MM_SPLIT, MM_TILES, MM_NR_CANDS };

enum deconv_cand {
	DECONV_MATMUL_SHUFFLE,
	DECONV_PHASE_CONV,
	DECONV_GEMM_COL2IM,
	DECONV_ONEDNN,
	DECONV_NR_CANDS
};

/* exec_conv.c */
int conv_build(struct builder *b);
/* exec_deconv.c */
int deconv_build(struct builder *b);
/* exec_matmul.c: fc and the batched matmul */
int fc_build(struct builder *b);
int matmul_build(struct builder *b);
/* exec_simple_ops.c: the single-version operators */
int input_build(struct builder *b);
int act_build(struct builder *b);
/* The layer's own activation as steps in place on its output, for a kernel that cannot fuse it. */
int act_in_place_build(struct builder *b);
int log_build(struct builder *b);
int pool_build(struct builder *b);
int lrn_build(struct builder *b);
int softmax_build(struct builder *b);
int binary_build(struct builder *b);
int concat_build(struct builder *b);
int layer_norm_build(struct builder *b);
int reshape_build(struct builder *b);
int transpose_build(struct builder *b);
int slice_build(struct builder *b);
int embed_build(struct builder *b);
int resize_build(struct builder *b);
int reduce_build(struct builder *b);
int pad_build(struct builder *b);

#endif /* COLOC_EXEC_OPS_H */
