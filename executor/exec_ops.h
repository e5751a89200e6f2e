/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The executor's operators: the candidate versions of the operators that
 * have several, and each operator's build function, which adds to b->plan
 * the steps of version `cand` of layer b->li at b->nr_threads cores.
 * A build function returns 0, -ENOENT when the version cannot be built for
 * this shape (it is then not offered), or another negative errno with the
 * reason recorded through builder_fail().
 */
#ifndef COLOC_EXEC_OPS_H
#define COLOC_EXEC_OPS_H

#include "exec_build.h"

/*
 * A layer's candidate versions, in order of preference. exec_layer_build
 * keeps the first EXEC_VERSIONS_KEPT that can be built and that run
 * differently from every version already kept on this CPU (see
 * plans_same()), so a candidate that resolves to the same kernel, split and
 * layouts as another here is never offered twice under two names.
 */
enum conv_cand {
	CONV_NHWC,
	CONV_ROW_SPLIT,
	CONV_OC_SPLIT,
	CONV_ROW_TILES,
	CONV_GEMM_NHWC,
	CONV_ANY,
	CONV_NR_CANDS
};

/* fc candidates, in order of preference (see enum conv_cand). */
enum fc_cand { FC_MATMUL, FC_GEMM, FC_OC_SPLIT, FC_PACKED, FC_OC_TILES, FC_NR_CANDS };

/* Batched matmul candidates, in order of preference. */
enum mm_cand { MM_MATMUL, MM_GEMM, MM_SPLIT, MM_TILES, MM_NR_CANDS };

/* exec_conv.c */
int conv_build(struct builder *b, int cand, const struct layer_weights *lw);
/* exec_matmul.c */
int fc_build(struct builder *b, int cand, const struct layer_weights *lw);
int matmul_build(struct builder *b, int cand);
/* exec_simple_ops.c */
int act_build(struct builder *b);
int pool_build(struct builder *b);
int lrn_build(struct builder *b);
int softmax_build(struct builder *b);
int binary_build(struct builder *b);
int concat_build(struct builder *b);
int layer_norm_build(struct builder *b, const struct layer_weights *lw);
int reshape_build(struct builder *b);
int transpose_build(struct builder *b);
int slice_build(struct builder *b);
int embed_build(struct builder *b, const struct layer_weights *lw);

#endif /* COLOC_EXEC_OPS_H */
