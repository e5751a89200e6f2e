// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Constant folding for the ONNX importer: a node whose inputs are all
 * constants (initializers, Constant nodes, earlier folds) is computed here
 * and its outputs become constants; Shape needs only its input's shape,
 * which is always known. So shape subgraphs (Shape -> Gather -> Concat ->
 * Reshape) and weight preprocessing (Transpose, Cast, Unsqueeze of
 * initializers) disappear before lowering. Here: the dispatch by op, the
 * fold budget, and the folds that make a constant or reshape one; those
 * that move elements are in onnx_fold_layout.c, the elementwise ones in
 * onnx_fold_elementwise.c. The shape rules the lowering shares (Reshape,
 * Squeeze, Unsqueeze, Flatten, Slice) are in onnx_shape_rules.c.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

int onnx_fold_shape_check(struct onnx_ctx *c, struct model_shape *s)
{
	int64_t n = 1;

	for (int i = 0; i < s->ndims; i++) {
		if (s->dims[i] < 0 || s->dims[i] > (1ll << 32))
			return onnx_refuse(c, -EINVAL,
					   "result dim %d would be negative or over 2^32", i);
		n *= s->dims[i];
		if (n > ONNX_MAX_CONST_ELEMS)
			return onnx_refuse(c, -E2BIG, "a result would have more than %lld elements",
					   ONNX_MAX_CONST_ELEMS);
	}
	return 0;
}

/* ---- folds --------------------------------------------------------------- */

/* What onnx_fold_alloc() recorded: too many elements, or out of memory. */
int onnx_fold_alloc_failed(const struct onnx_ctx *c)
{
	return c->err && c->err->code ? c->err->code : -ENOMEM;
}

double *onnx_fold_alloc(struct onnx_ctx *c, int64_t n)
{
	int64_t budget = c->decoded_elems > ONNX_MIN_FOLD_BUDGET / 2 ? 2 * c->decoded_elems :
								       ONNX_MIN_FOLD_BUDGET;
	double *d;

	if (n < 0 || n > ONNX_MAX_CONST_ELEMS) {
		onnx_refuse(c, -E2BIG, "a folded constant of more than %lld elements",
			    ONNX_MAX_CONST_ELEMS);
		return NULL;
	}
	if (n > budget - c->folded_elems) {
		onnx_refuse(c, -E2BIG,
			    "folding would make constants of more than %lld elements in all "
			    "(twice the elements of the file's tensors, at least %lld)",
			    (long long)budget, ONNX_MIN_FOLD_BUDGET);
		return NULL;
	}
	c->folded_elems += n;
	d = malloc((size_t)(n ? n : 1) * sizeof(double));
	if (!d)
		coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	return d;
}

static int out_copy(struct onnx_ctx *c, const Onnx__NodeProto *n, const struct onnx_value *v,
		    const struct model_shape *s)
{
	int64_t e = onnx_elems(s);
	double *d = onnx_fold_alloc(c, e);

	if (!d)
		return onnx_fold_alloc_failed(c);
	memcpy(d, v->data, (size_t)e * sizeof(double));
	return onnx_output_const(c, n, 0, s, d, v->is_int);
}

static int fold_constant(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	const Onnx__AttributeProto *a = onnx_attr(n, "value");
	struct model_shape s = { 0 };
	bool is_int = false;
	double *d;
	int ret;

	if (a && a->t) {
		ret = onnx_tensor_decode(c, a->t, &s, &d, &is_int);
		return ret ? ret : onnx_output_const(c, n, 0, &s, d, is_int);
	}
	if ((a = onnx_attr(n, "value_float")) || (a = onnx_attr(n, "value_int"))) {
		d = onnx_fold_alloc(c, 1);
		if (!d)
			return onnx_fold_alloc_failed(c);
		is_int = a->has_i;
		d[0] = is_int ? (double)a->i : a->f;
		return onnx_output_const(c, n, 0, &s, d, is_int);
	}
	if ((a = onnx_attr(n, "value_floats")) || (a = onnx_attr(n, "value_ints"))) {
		is_int = a->n_ints > 0;
		s.ndims = 1;
		s.dims[0] = (int64_t)(is_int ? a->n_ints : a->n_floats);
		d = onnx_fold_alloc(c, s.dims[0]);
		if (!d)
			return onnx_fold_alloc_failed(c);
		for (int64_t i = 0; i < s.dims[0]; i++)
			d[i] = is_int ? (double)a->ints[i] : a->floats[i];
		return onnx_output_const(c, n, 0, &s, d, is_int);
	}
	return onnx_refuse(c, -EOPNOTSUPP, "a Constant without a tensor, float(s) or int(s) value");
}

static int fold_shape(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *in = onnx_input(c, n, 0);
	int64_t start, end;
	struct model_shape s = { .ndims = 1 };
	double *d;
	int r = in->shape.ndims, ret;

	ret = onnx_attr_int(c, n, "start", 0, &start);
	if (!ret)
		ret = onnx_attr_int(c, n, "end", r, &end);
	if (ret)
		return ret;
	start = start < 0 ? (start + r < 0 ? 0 : start + r) : (start > r ? r : start);
	end = end < 0 ? (end + r < 0 ? 0 : end + r) : (end > r ? r : end);
	s.dims[0] = end > start ? end - start : 0;
	d = onnx_fold_alloc(c, s.dims[0]);
	if (!d)
		return onnx_fold_alloc_failed(c);
	for (int64_t i = 0; i < s.dims[0]; i++)
		d[i] = (double)in->shape.dims[start + i];
	return onnx_output_const(c, n, 0, &s, d, true);
}

static int fold_identity(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *in = onnx_input(c, n, 0);

	return out_copy(c, n, in, &in->shape);
}

static int fold_cast(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *in = onnx_input(c, n, 0);
	int64_t to, e = onnx_elems(&in->shape);
	bool is_int;
	double *d;
	int ret = onnx_attr_int(c, n, "to", 0, &to);

	if (ret)
		return ret;
	if (to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
	    to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
		is_int = false;
	else if (to == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
		 to == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
		 to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL)
		is_int = true;
	else
		return onnx_refuse(c, -EOPNOTSUPP, "Cast to data type %lld", (long long)to);
	d = onnx_fold_alloc(c, e);
	if (!d)
		return onnx_fold_alloc_failed(c);
	for (int64_t i = 0; i < e; i++) {
		double x = in->data[i];

		if (to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL)
			x = x != 0;
		else if (is_int)
			x = trunc(x);
		else if (to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
			x = (float)x;
		d[i] = x;
	}
	return onnx_output_const(c, n, 0, &in->shape, d, is_int);
}

static int fold_reshape_like(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *in = onnx_input(c, n, 0), *sh;
	struct model_shape s;
	int64_t allowzero;
	int ret;

	if (!strcmp(n->op_type, "Squeeze") || !strcmp(n->op_type, "Unsqueeze")) {
		ret = onnx_squeeze_shape(c, n, &in->shape, n->op_type[0] == 'U', &s);
	} else if (!strcmp(n->op_type, "Flatten")) {
		ret = onnx_flatten_shape(c, n, &in->shape, &s);
	} else {
		sh = onnx_input(c, n, 1);
		if (!sh || sh->shape.ndims != 1)
			return onnx_refuse(c, -EINVAL, "Reshape needs a 1-D shape input");
		ret = onnx_attr_int(c, n, "allowzero", 0, &allowzero);
		if (!ret)
			ret = onnx_reshape_resolve(c, &in->shape, sh->data, sh->shape.dims[0],
						   allowzero, &s);
	}
	return ret ? ret : out_copy(c, n, in, &s);
}

/* Range(start, limit, delta): max(ceil((limit - start) / delta), 0) values. */
static int fold_range(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *v[3];
	struct model_shape s = { .ndims = 1 };
	bool is_int = true;
	double cnt, *d;
	int ret;

	for (int i = 0; i < 3; i++) {
		v[i] = onnx_input(c, n, (size_t)i);
		if (!v[i] || onnx_elems(&v[i]->shape) != 1)
			return onnx_refuse(c, -EINVAL, "Range needs three scalar inputs");
		is_int = is_int && v[i]->is_int;
	}
	if (v[2]->data[0] == 0)
		return onnx_refuse(c, -EINVAL, "Range with delta 0");
	cnt = ceil((v[1]->data[0] - v[0]->data[0]) / v[2]->data[0]);
	s.dims[0] = cnt > 0 ? (cnt > 4e18 ? (int64_t)4e18 : (int64_t)cnt) : 0;
	ret = onnx_fold_shape_check(c, &s);
	if (ret)
		return ret;
	d = onnx_fold_alloc(c, s.dims[0]);
	if (!d)
		return onnx_fold_alloc_failed(c);
	for (int64_t i = 0; i < s.dims[0]; i++) {
		d[i] = v[0]->data[0] + (double)i * v[2]->data[0];
		if (!is_int)
			d[i] = (float)d[i];
	}
	return onnx_output_const(c, n, 0, &s, d, is_int);
}

static int fold_constant_of_shape(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	const Onnx__AttributeProto *a = onnx_attr(n, "value");
	struct onnx_value *in = onnx_input(c, n, 0);
	struct model_shape s = { 0 }, vs;
	double fill = 0, *d, *v = NULL;
	bool is_int = false;
	int ret;

	if (in->shape.ndims != 1 || in->shape.dims[0] > ONNX_MAX_RANK)
		return onnx_refuse(c, -EOPNOTSUPP, "the shape input is not 1-D of rank <= %d",
				   ONNX_MAX_RANK);
	s.ndims = (int)in->shape.dims[0];
	for (int i = 0; i < s.ndims; i++)
		s.dims[i] = onnx_i64(in->data[i]);
	ret = onnx_fold_shape_check(c, &s);
	if (ret)
		return ret;
	if (a && a->t) {
		ret = onnx_tensor_decode(c, a->t, &vs, &v, &is_int);
		if (ret)
			return ret;
		if (onnx_elems(&vs) != 1) {
			free(v);
			return onnx_refuse(c, -EINVAL, "value is not one element");
		}
		fill = v[0];
		free(v);
	}
	d = onnx_fold_alloc(c, onnx_elems(&s));
	if (!d)
		return onnx_fold_alloc_failed(c);
	for (int64_t i = 0; i < onnx_elems(&s); i++)
		d[i] = fill;
	return onnx_output_const(c, n, 0, &s, d, is_int);
}

struct fold_op {
	const char *type;
	int (*fold)(struct onnx_ctx *c, const Onnx__NodeProto *n);
	bool shape_only; /* needs only input 0's shape, not its values */
};

static const struct fold_op fold_ops[] = {
	{ "Constant", fold_constant, true },
	{ "Shape", fold_shape, true },
	{ "Identity", fold_identity, false },
	{ "Cast", fold_cast, false },
	{ "Reshape", fold_reshape_like, false },
	{ "Squeeze", fold_reshape_like, false },
	{ "Unsqueeze", fold_reshape_like, false },
	{ "Flatten", fold_reshape_like, false },
	{ "Slice", onnx_fold_slice, false },
	{ "Transpose", onnx_fold_transpose, false },
	{ "Concat", onnx_fold_concat, false },
	{ "Gather", onnx_fold_gather, false },
	{ "Add", onnx_fold_binary, false },
	{ "Sub", onnx_fold_binary, false },
	{ "Mul", onnx_fold_binary, false },
	{ "Div", onnx_fold_binary, false },
	{ "Pow", onnx_fold_binary, false },
	{ "Equal", onnx_fold_binary, false },
	{ "Greater", onnx_fold_binary, false },
	{ "GreaterOrEqual", onnx_fold_binary, false },
	{ "Less", onnx_fold_binary, false },
	{ "LessOrEqual", onnx_fold_binary, false },
	{ "And", onnx_fold_binary, false },
	{ "Or", onnx_fold_binary, false },
	{ "Xor", onnx_fold_binary, false },
	{ "Where", onnx_fold_where, false },
	{ "Expand", onnx_fold_expand, false },
	{ "Range", fold_range, false },
	{ "Sqrt", onnx_fold_unary, false },
	{ "Neg", onnx_fold_unary, false },
	{ "Not", onnx_fold_unary, false },
	{ "ConstantOfShape", fold_constant_of_shape, false },
};

int onnx_fold(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	const struct fold_op *op = NULL;
	int ret;

	for (size_t i = 0; i < sizeof(fold_ops) / sizeof(fold_ops[0]); i++)
		if (!strcmp(fold_ops[i].type, n->op_type))
			op = &fold_ops[i];
	if (!op)
		return 0;
	if (op->shape_only) {
		if (strcmp(op->type, "Constant") && !onnx_input(c, n, 0))
			return onnx_refuse(c, -EINVAL, "Shape without an input");
	} else {
		if (!onnx_input(c, n, 0))
			return 0;
		for (size_t k = 0; k < n->n_input; k++) {
			struct onnx_value *v = onnx_input(c, n, k);

			if (v && !v->data)
				return 0;
		}
	}
	ret = op->fold(c, n);
	return ret ? ret : 1;
}
