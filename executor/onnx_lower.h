/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the files lowering ONNX nodes into coloc layers share: the helpers
 * of onnx_lower.c every op's lowering uses, and one function per op, each
 * taking node n (its inputs already known values of c) and adding its
 * layers or aliasing its output; 0 or a negative errno, with onnx_refuse()'s
 * message for what coloc cannot run exactly. onnx_lower() looks them up.
 */
#ifndef COLOC_EXECUTOR_ONNX_LOWER_H
#define COLOC_EXECUTOR_ONNX_LOWER_H

#include "onnx_internal.h"

/* Input i of n if a layer computes it (NULL if absent or a constant). */
struct onnx_value *onnx_data_input(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i);
/* Input i of n if it is a constant (NULL otherwise). */
struct onnx_value *onnx_const_input(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i);
/* The layer computing v: for a 1-D window's view, the 2-D layer it aliases. */
struct onnx_layer *onnx_layer_of(struct onnx_ctx *c, const struct onnx_value *v);
/* Whether v's layer can take a fusion: this node is the only reader left of it. */
bool onnx_fusible(struct onnx_ctx *c, const struct onnx_value *v);
/* A node's name for messages and layer names: its first output, or its op. */
const char *onnx_node_label(const Onnx__NodeProto *n);
/* Node output 0's value, bound to layer idx, keeping the rank of shape s. */
int onnx_bind_output(struct onnx_ctx *c, const Onnx__NodeProto *n, int idx,
		     const struct model_shape *s);
/* A new layer reading the layers of ins, output shape out; node output 0 is it. */
int onnx_new_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, enum model_op op,
		   struct onnx_value **ins, int nr, const struct model_shape *out,
		   struct onnx_layer **lp);
/* Node output 0 is v (no layer). */
int onnx_alias(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *v);
/* Extra outputs (a Dropout mask, MaxPool indices, LayerNorm mean) must be unread. */
int onnx_only_first_output(struct onnx_ctx *c, const Onnx__NodeProto *n);
/* n doubles as floats, times scale, allocated; NULL (and a message) when out of memory. */
float *onnx_to_floats(struct onnx_ctx *c, const double *d, int64_t n, double scale);

/* onnx_lower_window.c: convolutions, pooling, batch normalisation */
int onnx_lower_conv(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_conv_transpose(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_batch_norm(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_pool(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_global_pool(struct onnx_ctx *c, const Onnx__NodeProto *n);

/* onnx_lower_arith.c: activations, binaries, MatMul/Gemm, Pow, Log, Where, comparisons */
int onnx_lower_act(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_binary(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_matmul(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_gemm(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_pow(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_log(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_where(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_logic(struct onnx_ctx *c, const Onnx__NodeProto *n);

/* onnx_lower_shape.c: data movement */
int onnx_lower_concat(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_reshape(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_transpose(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_gather(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_slice(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_resize(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_pad(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_split(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_identity(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_cast(struct onnx_ctx *c, const Onnx__NodeProto *n);

/* onnx_lower_norm.c: normalisations and reductions */
int onnx_lower_softmax(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_layer_norm(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_lrn(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_lower_reduce(struct onnx_ctx *c, const Onnx__NodeProto *n);

#endif /* COLOC_EXECUTOR_ONNX_LOWER_H */
