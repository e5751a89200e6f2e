// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Lowering of the normalisations and reductions: Softmax,
 * LayerNormalization, LRN and ReduceMean/Max/Min/Sum.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_lower.h"

int onnx_lower_softmax(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0);
	struct onnx_layer *l;
	int64_t axis;
	int a = 0, ret;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	ret = onnx_attr_int(c, n, "axis", c->opset >= 13 ? -1 : 1, &axis);
	if (!ret)
		ret = onnx_axis(c, axis, x->shape.ndims, &a);
	if (ret)
		return ret;
	/* before opset 13 Softmax flattens [axis..] into one: the same only on the last axis */
	if (c->opset < 13 && a != x->shape.ndims - 1)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Softmax before opset 13 on axis %d, not the last", a);
	return onnx_new_layer(c, n, MODEL_OP_SOFTMAX, &x, 1, &x->shape, &l) ?: (l->l.axis = a, 0);
}

int onnx_lower_layer_norm(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0), *g = onnx_const_input(c, n, 1),
			  *b = onnx_const_input(c, n, 2);
	struct onnx_layer *l;
	int64_t axis, dd;
	float eps;
	int a = 0, ret;

	if (!x || !g || (onnx_input(c, n, 2) && !b))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "needs a computed input and constant scale and bias");
	dd = x->shape.dims[x->shape.ndims - 1];
	ret = onnx_attr_int(c, n, "axis", -1, &axis);
	if (!ret)
		ret = onnx_axis(c, axis, x->shape.ndims, &a);
	if (!ret)
		ret = onnx_attr_float(c, n, "epsilon", 1e-5f, &eps);
	if (!ret)
		ret = onnx_only_first_output(c, n);
	if (ret)
		return ret;
	if (a != x->shape.ndims - 1)
		return onnx_refuse(c, -EOPNOTSUPP, "normalisation over more than the last axis");
	if (onnx_elems(&g->shape) != dd || (b && onnx_elems(&b->shape) != dd))
		return onnx_refuse(c, -EINVAL, "scale and bias must have %lld values",
				   (long long)dd);
	if (!(eps >= 1e-30f && eps <= 1.0f))
		return onnx_refuse(c, -EOPNOTSUPP, "epsilon %g (coloc takes 1e-30..1)", eps);
	ret = onnx_new_layer(c, n, MODEL_OP_LAYER_NORM, &x, 1, &x->shape, &l);
	if (ret)
		return ret;
	l->l.eps = eps;
	l->nt[0] = l->nt[1] = dd;
	l->t[0] = onnx_to_floats(c, g->data, dd, 1.0);
	l->t[1] = b ? onnx_to_floats(c, b->data, dd, 1.0) : calloc((size_t)dd, sizeof(float));
	if (!l->t[0] || !l->t[1])
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	return 0;
}

int onnx_lower_lrn(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0);
	struct onnx_layer *l;
	int64_t size;
	float alpha, beta, bias;
	int ret = onnx_attr_int(c, n, "size", 0, &size);

	if (!ret)
		ret = onnx_attr_float(c, n, "alpha", 1e-4f, &alpha);
	if (!ret)
		ret = onnx_attr_float(c, n, "beta", 0.75f, &beta);
	if (!ret)
		ret = onnx_attr_float(c, n, "bias", 1.0f, &bias);
	if (ret)
		return ret;
	if (!x || x->shape.ndims != 4 || size < 1 || size > 255 || !(size & 1))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "LRN of a computed 4-D input with an odd size "
				   "1..255");
	ret = onnx_new_layer(c, n, MODEL_OP_LRN, &x, 1, &x->shape, &l);
	if (!ret)
		l->l.lrn = (struct model_lrn){
			.size = (int)size, .alpha = alpha, .beta = beta, .k = bias
		};
	return ret;
}

/*
 * ReduceMean, ReduceMax, ReduceMin, ReduceSum over constant axes (the
 * attribute, or input 1 from opset 18 and ReduceSum's 13): a reduce layer,
 * then a reshape dropping the reduced dims when keepdims is 0 (to [1] for
 * the rank-0 result of reducing every axis, see onnx_bind_output()).
 */
int onnx_lower_reduce(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	static const struct {
		const char *type;
		enum model_reduce_kind kind;
	} kinds[] = { { "ReduceMean", MODEL_REDUCE_MEAN },
		      { "ReduceMax", MODEL_REDUCE_MAX },
		      { "ReduceMin", MODEL_REDUCE_MIN },
		      { "ReduceSum", MODEL_REDUCE_SUM } };
	struct onnx_value *x = onnx_data_input(c, n, 0), *ax = onnx_input(c, n, 1);
	int64_t axes[ONNX_MAX_RANK], keep, noop;
	struct model_shape out, flat = { 0 };
	struct onnx_layer *l;
	unsigned int mask = 0;
	size_t t = 0;
	int nr, a, ret;

	while (strcmp(kinds[t].type, n->op_type))
		t++;
	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	ret = onnx_attr_int(c, n, "keepdims", 1, &keep);
	if (!ret)
		ret = onnx_attr_int(c, n, "noop_with_empty_axes", 0, &noop);
	if (!ret)
		ret = onnx_attr_ints(c, n, "axes", axes, ONNX_MAX_RANK, &nr);
	if (ret)
		return ret;
	if (nr < 0 && ax) {
		if (!ax->data || onnx_elems(&ax->shape) > ONNX_MAX_RANK)
			return onnx_refuse(c, -EOPNOTSUPP, "the axes must be constant");
		nr = (int)onnx_elems(&ax->shape);
		for (int i = 0; i < nr; i++)
			axes[i] = onnx_i64(ax->data[i]);
	}
	if (nr <= 0 && noop)
		return onnx_alias(c, n, x);
	out = x->shape;
	for (int i = 0; i < (nr <= 0 ? x->shape.ndims : nr); i++) {
		if (nr <= 0) {
			a = i;
		} else {
			ret = onnx_axis(c, axes[i], x->shape.ndims, &a);
			if (ret)
				return ret;
		}
		mask |= 1u << a;
		out.dims[a] = 1;
	}
	for (int i = 0; i < out.ndims; i++)
		if (!(mask & (1u << i)))
			flat.dims[flat.ndims++] = out.dims[i];
	if (keep) {
		ret = onnx_new_layer(c, n, MODEL_OP_REDUCE, &x, 1, &out, &l);
		if (!ret)
			l->l.reduce = (struct model_reduce){ .kind = kinds[t].kind, .axes = mask };
		return ret;
	}
	ret = onnx_layer_add(c, MODEL_OP_REDUCE, onnx_node_label(n), &l);
	if (ret)
		return ret;
	l->l.nr_inputs = 1;
	l->l.inputs[0] = x->layer;
	l->l.out = out;
	l->l.reduce = (struct model_reduce){ .kind = kinds[t].kind, .axes = mask };
	l->uses = 1; /* the reshape below */
	snprintf(l->origin, sizeof(l->origin), "%.16s '%.64s'", n->op_type, onnx_node_label(n));
	{
		struct onnx_value mid = { .shape = out, .layer = c->nr_layers - 1 }, *in = &mid;

		ret = onnx_new_layer(c, n, MODEL_OP_RESHAPE, &in, 1, &flat, &l);
	}
	if (!ret)
		l->l.reshape = l->l.out; /* flat, or [1] for a scalar */
	return ret;
}
