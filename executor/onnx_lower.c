// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Lowering of ONNX nodes into coloc layers, one function per op, looked up
 * in a table (lower_ops[] here; the ops' functions in onnx_lower_*.c), and
 * the helpers every op's lowering uses: a node's data and constant inputs,
 * a new layer bound to the node's output, an alias of a value. Whatever has
 * no exact coloc equivalent is refused with onnx_refuse(), which names the
 * node, its op, the opset and its inputs.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "huge_alloc.h"
#include "onnx_lower.h"

struct onnx_value *onnx_data_input(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i)
{
	struct onnx_value *v = onnx_input(c, n, i);

	if (!v || v->layer < 0)
		return NULL;
	return v;
}

struct onnx_value *onnx_const_input(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i)
{
	struct onnx_value *v = onnx_input(c, n, i);

	return v && v->data ? v : NULL;
}

/* The layer computing v: for a 1-D window's view, the 2-D layer it aliases. */
struct onnx_layer *onnx_layer_of(struct onnx_ctx *c, const struct onnx_value *v)
{
	struct onnx_layer *l = &c->layers[v->layer];

	return l->view_1d ? &c->layers[l->l.inputs[0]] : l;
}

/*
 * Whether v's layer can take a fusion: this node is the only reader left of
 * v's layer (a view's 2-D layer has the view as its only reader).
 */
bool onnx_fusible(struct onnx_ctx *c, const struct onnx_value *v)
{
	return v->layer >= 0 && c->layers[v->layer].uses == 1 && !c->layers[v->layer].read &&
	       onnx_layer_of(c, v)->l.op != MODEL_OP_INPUT;
}

const char *onnx_node_label(const Onnx__NodeProto *n)
{
	if (n->name && n->name[0])
		return n->name;
	return n->n_output && n->output[0][0] ? n->output[0] : n->op_type;
}

/*
 * Node output 0's value, bound to layer idx, keeps the rank of shape s: a
 * rank-0 result (a reduction over every axis without keepdims, or Cast,
 * Clip, elementwise ops of one) runs as a layer of one element [1], while
 * its value stays rank 0 so that Shape, Unsqueeze and broadcasting see the
 * ONNX shapes.
 */
int onnx_bind_output(struct onnx_ctx *c, const Onnx__NodeProto *n, int idx,
		     const struct model_shape *s)
{
	struct onnx_value *v;
	int ret = onnx_output_layer(c, n, 0, idx);

	v = ret || !n->n_output || !n->output[0][0] ? NULL : onnx_value_find(c, n->output[0]);
	if (v && !s->ndims)
		v->shape = *s;
	return ret;
}

/* A new layer reading the layers of ins, output shape out; node output 0 is it. */
int onnx_new_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, enum model_op op,
		   struct onnx_value **ins, int nr, const struct model_shape *out,
		   struct onnx_layer **lp)
{
	struct onnx_layer *l;
	int ret;

	if (out->ndims < 0 || out->ndims > MODEL_MAX_DIMS)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "the result has rank %d; coloc tensors have 1 to %d "
				   "dims",
				   out->ndims, MODEL_MAX_DIMS);
	ret = onnx_shape_check(c, out, "the result");
	if (ret)
		return ret;
	ret = onnx_layer_add(c, op, onnx_node_label(n), &l);
	if (ret)
		return ret;
	l->l.nr_inputs = nr;
	for (int i = 0; i < nr; i++)
		l->l.inputs[i] = ins[i]->layer;
	l->l.out = *out;
	if (!out->ndims)
		l->l.out = (struct model_shape){ .ndims = 1, .dims = { 1 } };
	*lp = l;
	return onnx_bind_output(c, n, c->nr_layers - 1, out);
}

int onnx_alias(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *v)
{
	return onnx_bind_output(c, n, v->layer, &v->shape);
}

/* Extra outputs (a Dropout mask, MaxPool indices, LayerNorm mean) must be unread. */
int onnx_only_first_output(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	for (size_t i = 1; i < n->n_output; i++) {
		struct onnx_value *v = n->output[i][0] ? onnx_value_find(c, n->output[i]) : NULL;

		if (v && v->uses)
			return onnx_refuse(c, -EOPNOTSUPP,
					   "output %zu ('%.64s') is read; only the "
					   "first output is supported",
					   i, n->output[i]);
	}
	return 0;
}

float *onnx_to_floats(struct onnx_ctx *c, const double *d, int64_t n, double scale)
{
	float *f = huge_alloc((size_t)n * sizeof(float));

	if (!f) {
		coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++)
		f[i] = (float)(d[i] * scale);
	return f;
}

struct lower_op {
	const char *type;
	int (*lower)(struct onnx_ctx *c, const Onnx__NodeProto *n);
	/* takes a computed rank-0 input (elementwise, or a reshape of one element) */
	bool scalars;
};

static const struct lower_op lower_ops[] = {
	{ "Conv", onnx_lower_conv, false },
	{ "ConvTranspose", onnx_lower_conv_transpose, false },
	{ "BatchNormalization", onnx_lower_batch_norm, false },
	{ "Relu", onnx_lower_act, true },
	{ "LeakyRelu", onnx_lower_act, true },
	{ "Sigmoid", onnx_lower_act, true },
	{ "Tanh", onnx_lower_act, true },
	{ "HardSigmoid", onnx_lower_act, true },
	{ "HardSwish", onnx_lower_act, true },
	{ "Clip", onnx_lower_act, true },
	{ "Pow", onnx_lower_pow, true },
	{ "Log", onnx_lower_log, true },
	{ "Add", onnx_lower_binary, true },
	{ "Mul", onnx_lower_binary, true },
	{ "Sub", onnx_lower_binary, true },
	{ "Div", onnx_lower_binary, true },
	{ "Max", onnx_lower_binary, true },
	{ "Min", onnx_lower_binary, true },
	{ "MatMul", onnx_lower_matmul, false },
	{ "Gemm", onnx_lower_gemm, false },
	{ "MaxPool", onnx_lower_pool, false },
	{ "AveragePool", onnx_lower_pool, false },
	{ "GlobalAveragePool", onnx_lower_global_pool, false },
	{ "Concat", onnx_lower_concat, false },
	{ "Softmax", onnx_lower_softmax, false },
	{ "LayerNormalization", onnx_lower_layer_norm, false },
	{ "LRN", onnx_lower_lrn, false },
	{ "Reshape", onnx_lower_reshape, true },
	{ "Flatten", onnx_lower_reshape, false },
	{ "Squeeze", onnx_lower_reshape, true },
	{ "Unsqueeze", onnx_lower_reshape, true },
	{ "Transpose", onnx_lower_transpose, false },
	{ "Gather", onnx_lower_gather, false },
	{ "Slice", onnx_lower_slice, false },
	{ "ReduceMean", onnx_lower_reduce, false },
	{ "ReduceMax", onnx_lower_reduce, false },
	{ "ReduceMin", onnx_lower_reduce, false },
	{ "ReduceSum", onnx_lower_reduce, false },
	{ "Split", onnx_lower_split, false },
	{ "Pad", onnx_lower_pad, false },
	{ "Resize", onnx_lower_resize, false },
	{ "Upsample", onnx_lower_resize, false },
	{ "Identity", onnx_lower_identity, true },
	{ "Dropout", onnx_lower_identity, true },
	{ "Cast", onnx_lower_cast, true },
	{ "Equal", onnx_lower_logic, false },
	{ "Greater", onnx_lower_logic, false },
	{ "GreaterOrEqual", onnx_lower_logic, false },
	{ "Less", onnx_lower_logic, false },
	{ "LessOrEqual", onnx_lower_logic, false },
	{ "Not", onnx_lower_logic, false },
	{ "And", onnx_lower_logic, false },
	{ "Or", onnx_lower_logic, false },
	{ "Xor", onnx_lower_logic, false },
	{ "Where", onnx_lower_where, false },
};

int onnx_lower(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	for (size_t i = 0; i < sizeof(lower_ops) / sizeof(lower_ops[0]); i++) {
		if (strcmp(lower_ops[i].type, n->op_type))
			continue;
		for (size_t k = 0; k < n->n_input && !lower_ops[i].scalars; k++) {
			struct onnx_value *v = onnx_input(c, n, k);

			if (v && v->layer >= 0 && !v->shape.ndims)
				return onnx_refuse(
					c, -EOPNOTSUPP,
					"input %zu is a computed scalar (rank 0); "
					"coloc takes one in elementwise ops and reshapes only",
					k);
		}
		return lower_ops[i].lower(c, n);
	}
	return onnx_refuse(c, -EOPNOTSUPP,
			   "unsupported op: coloc's model format has no "
			   "equivalent (supported ops are listed in models/ONNX.md)");
}
