// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Elementwise constant folds (onnx_fold.c dispatches): the binary ops and
 * comparisons of fold_binops[] with numpy broadcasting, Where (and the
 * split of a Where the lowering uses), Expand, and the unary ops of
 * fold_unops[].
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* numpy broadcasting of two shapes. */
static int broadcast(struct onnx_ctx *c, const struct model_shape *a, const struct model_shape *b,
		     struct model_shape *out)
{
	out->ndims = a->ndims > b->ndims ? a->ndims : b->ndims;
	for (int i = 0; i < out->ndims; i++) {
		int ia = i - (out->ndims - a->ndims), ib = i - (out->ndims - b->ndims);
		int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;

		if (da != db && da != 1 && db != 1)
			return onnx_refuse(c, -EINVAL,
					   "shapes do not broadcast (dim %d: %lld vs %lld)", i,
					   (long long)da, (long long)db);
		out->dims[i] = da == 1 ? db : da;
	}
	return onnx_fold_shape_check(c, out);
}

/* Broadcast strides of a (right-aligned to out, 0 along size-1 dims). */
static void bstrides(const struct model_shape *a, const struct model_shape *out, int64_t *bst)
{
	int64_t st[ONNX_MAX_RANK];

	onnx_fold_strides(a, st);
	for (int i = 0; i < out->ndims; i++) {
		int ia = i - (out->ndims - a->ndims);

		bst[i] = ia >= 0 && a->dims[ia] != 1 ? st[ia] : 0;
	}
}

static double op_add(double x, double y)
{
	return x + y;
}

static double op_sub(double x, double y)
{
	return x - y;
}

static double op_mul(double x, double y)
{
	return x * y;
}

static double op_div(double x, double y)
{
	return x / y;
}

/* ONNX's integer Div truncates; a zero divisor (undefined there) gives 0, not a trap. */
static double op_div_int(double x, double y)
{
	return y ? trunc(x / y) : 0;
}

static double op_pow(double x, double y)
{
	return pow(x, y);
}

static double op_equal(double x, double y)
{
	return x == y;
}

static double op_greater(double x, double y)
{
	return x > y;
}

static double op_greater_equal(double x, double y)
{
	return x >= y;
}

static double op_less(double x, double y)
{
	return x < y;
}

static double op_less_equal(double x, double y)
{
	return x <= y;
}

static double op_and(double x, double y)
{
	return x != 0 && y != 0;
}

static double op_or(double x, double y)
{
	return x != 0 || y != 0;
}

static double op_xor(double x, double y)
{
	return (x != 0) != (y != 0);
}

/* Elementwise ops of two constants; a comparison or logic op gives bools (0 or 1). */
static const struct fold_binop {
	const char *type;
	double (*fn)(double x, double y);
	double (*int_fn)(double x, double y); /* of two integer tensors, if not fn */
	bool to_bool;
} fold_binops[] = {
	{ "Add", op_add, NULL, false },	       { "Sub", op_sub, NULL, false },
	{ "Mul", op_mul, NULL, false },	       { "Div", op_div, op_div_int, false },
	{ "Pow", op_pow, NULL, false },	       { "Equal", op_equal, NULL, true },
	{ "Greater", op_greater, NULL, true }, { "GreaterOrEqual", op_greater_equal, NULL, true },
	{ "Less", op_less, NULL, true },       { "LessOrEqual", op_less_equal, NULL, true },
	{ "And", op_and, NULL, true },	       { "Or", op_or, NULL, true },
	{ "Xor", op_xor, NULL, true },
};

/* The next index of a row-major walk over s (the last dim fastest). */
static void next_index(const struct model_shape *s, int64_t *idx)
{
	for (int i = s->ndims - 1; i >= 0; i--) {
		if (++idx[i] < s->dims[i])
			break;
		idx[i] = 0;
	}
}

static int64_t offset_of(const struct model_shape *s, const int64_t *idx, const int64_t *bst)
{
	int64_t o = 0;

	for (int i = 0; i < s->ndims; i++)
		o += idx[i] * bst[i];
	return o;
}

int onnx_fold_binary(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *a = onnx_input(c, n, 0), *b = onnx_input(c, n, 1);
	int64_t sa[ONNX_MAX_RANK], sb[ONNX_MAX_RANK], idx[ONNX_MAX_RANK] = { 0 }, e;
	const struct fold_binop *op = NULL;
	double (*fn)(double x, double y);
	bool is_int;
	struct model_shape s;
	double *d;
	int ret;

	for (size_t i = 0; i < sizeof(fold_binops) / sizeof(fold_binops[0]); i++)
		if (!strcmp(fold_binops[i].type, n->op_type))
			op = &fold_binops[i];
	if (!b)
		return onnx_refuse(c, -EINVAL, "a binary op with one input");
	is_int = a->is_int && b->is_int;
	fn = is_int && op->int_fn ? op->int_fn : op->fn;
	ret = broadcast(c, &a->shape, &b->shape, &s);
	if (ret)
		return ret;
	bstrides(&a->shape, &s, sa);
	bstrides(&b->shape, &s, sb);
	e = onnx_elems(&s);
	d = onnx_fold_alloc(c, e);
	if (!d)
		return onnx_fold_alloc_failed(c);
	for (int64_t k = 0; k < e; k++) {
		d[k] = fn(a->data[offset_of(&s, idx, sa)], b->data[offset_of(&s, idx, sb)]);
		if (!is_int && !op->to_bool)
			d[k] = (float)d[k];
		next_index(&s, idx);
	}
	return onnx_output_const(c, n, 0, &s, d, is_int || op->to_bool);
}

/* Where(cond, x, y): x where cond is nonzero, else y, all three broadcast. */
int onnx_fold_where(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *v[3];
	int64_t st[3][ONNX_MAX_RANK], idx[ONNX_MAX_RANK] = { 0 }, e;
	struct model_shape s, xy;
	double *d;
	int ret;

	for (int i = 0; i < 3; i++) {
		v[i] = onnx_input(c, n, (size_t)i);
		if (!v[i])
			return onnx_refuse(c, -EINVAL, "Where needs three inputs");
	}
	ret = broadcast(c, &v[1]->shape, &v[2]->shape, &xy);
	if (!ret)
		ret = broadcast(c, &v[0]->shape, &xy, &s);
	if (ret)
		return ret;
	for (int i = 0; i < 3; i++)
		bstrides(&v[i]->shape, &s, st[i]);
	e = onnx_elems(&s);
	d = onnx_fold_alloc(c, e);
	if (!d)
		return onnx_fold_alloc_failed(c);
	for (int64_t k = 0; k < e; k++) {
		int w = v[0]->data[offset_of(&s, idx, st[0])] != 0 ? 1 : 2;

		d[k] = v[w]->data[offset_of(&s, idx, st[w])];
		next_index(&s, idx);
	}
	return onnx_output_const(c, n, 0, &s, d, v[1]->is_int && v[2]->is_int);
}

int onnx_where_split(struct onnx_ctx *c, const struct onnx_value *cond, const struct onnx_value *k,
		     bool k_when_true, struct model_shape *s, double **m, double **z)
{
	int64_t sc[ONNX_MAX_RANK], sk[ONNX_MAX_RANK], idx[ONNX_MAX_RANK] = { 0 }, e;
	int ret = broadcast(c, &cond->shape, &k->shape, s);

	if (ret)
		return ret;
	bstrides(&cond->shape, s, sc);
	bstrides(&k->shape, s, sk);
	e = onnx_elems(s);
	*m = onnx_fold_alloc(c, e);
	*z = *m ? onnx_fold_alloc(c, e) : NULL;
	if (!*z) {
		free(*m);
		return onnx_fold_alloc_failed(c);
	}
	for (int64_t i = 0; i < e; i++) {
		bool takes_k = (cond->data[offset_of(s, idx, sc)] != 0) == k_when_true;

		(*m)[i] = takes_k ? 0 : 1;
		(*z)[i] = takes_k ? k->data[offset_of(s, idx, sk)] : 0;
		next_index(s, idx);
	}
	return 0;
}

/* Expand(x, shape): x broadcast with shape both ways (numpy), as ONNX says. */
int onnx_fold_expand(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_input(c, n, 0), *sh = onnx_input(c, n, 1);
	int64_t st[ONNX_MAX_RANK], idx[ONNX_MAX_RANK] = { 0 }, e;
	struct model_shape want = { 0 }, s;
	double *d;
	int ret;

	if (!sh || sh->shape.ndims != 1 || sh->shape.dims[0] > ONNX_MAX_RANK)
		return onnx_refuse(c, -EOPNOTSUPP, "the shape input is not 1-D of rank <= %d",
				   ONNX_MAX_RANK);
	want.ndims = (int)sh->shape.dims[0];
	for (int i = 0; i < want.ndims; i++)
		want.dims[i] = onnx_i64(sh->data[i]);
	ret = onnx_fold_shape_check(c, &want);
	if (!ret)
		ret = broadcast(c, &x->shape, &want, &s);
	if (ret)
		return ret;
	bstrides(&x->shape, &s, st);
	e = onnx_elems(&s);
	d = onnx_fold_alloc(c, e);
	if (!d)
		return onnx_fold_alloc_failed(c);
	for (int64_t k = 0; k < e; k++) {
		d[k] = x->data[offset_of(&s, idx, st)];
		next_index(&s, idx);
	}
	return onnx_output_const(c, n, 0, &s, d, x->is_int);
}

static double op_sqrt(double x)
{
	return (float)sqrt(x);
}

static double op_neg(double x)
{
	return -x;
}

static double op_not(double x)
{
	return x == 0;
}

/* Elementwise ops of one constant; keeps_int: an integer input gives integers. */
static const struct fold_unop {
	const char *type;
	double (*fn)(double x);
	bool keeps_int;
} fold_unops[] = {
	{ "Sqrt", op_sqrt, false },
	{ "Neg", op_neg, true },
	{ "Not", op_not, true },
};

int onnx_fold_unary(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *in = onnx_input(c, n, 0);
	int64_t e = onnx_elems(&in->shape);
	const struct fold_unop *op = NULL;
	double *d;

	for (size_t i = 0; i < sizeof(fold_unops) / sizeof(fold_unops[0]); i++)
		if (!strcmp(fold_unops[i].type, n->op_type))
			op = &fold_unops[i];
	d = onnx_fold_alloc(c, e);
	if (!d)
		return onnx_fold_alloc_failed(c);
	for (int64_t i = 0; i < e; i++)
		d[i] = op->fn(in->data[i]);
	return onnx_output_const(c, n, 0, &in->shape, d, op->keeps_int && in->is_int);
}
