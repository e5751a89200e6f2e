// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Constant folding for the ONNX importer: a node whose inputs are all
 * constants (initializers, Constant nodes, earlier folds) is computed here
 * and its outputs become constants; Shape needs only its input's shape,
 * which is always known. So shape subgraphs (Shape -> Gather -> Concat ->
 * Reshape) and weight preprocessing (Transpose, Cast, Unsqueeze of
 * initializers) disappear before lowering. The shape rules the lowering
 * shares (Reshape, Squeeze, Unsqueeze, Flatten, Slice) are in
 * onnx_shape_rules.c.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

static int shape_check(struct onnx_ctx *c, struct model_shape *s)
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

/* What alloc_elems() recorded: too many elements, or out of memory. */
static int alloc_failed(const struct onnx_ctx *c)
{
	return c->err && c->err->code ? c->err->code : -ENOMEM;
}

static double *alloc_elems(struct onnx_ctx *c, int64_t n)
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
	double *d = alloc_elems(c, e);

	if (!d)
		return alloc_failed(c);
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
		d = alloc_elems(c, 1);
		if (!d)
			return alloc_failed(c);
		is_int = a->has_i;
		d[0] = is_int ? (double)a->i : a->f;
		return onnx_output_const(c, n, 0, &s, d, is_int);
	}
	if ((a = onnx_attr(n, "value_floats")) || (a = onnx_attr(n, "value_ints"))) {
		is_int = a->n_ints > 0;
		s.ndims = 1;
		s.dims[0] = (int64_t)(is_int ? a->n_ints : a->n_floats);
		d = alloc_elems(c, s.dims[0]);
		if (!d)
			return alloc_failed(c);
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
	d = alloc_elems(c, s.dims[0]);
	if (!d)
		return alloc_failed(c);
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
	d = alloc_elems(c, e);
	if (!d)
		return alloc_failed(c);
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

/* Row-major strides of s. */
static void strides_of(const struct model_shape *s, int64_t *st)
{
	int64_t acc = 1;

	for (int i = s->ndims - 1; i >= 0; i--) {
		st[i] = acc;
		acc *= s->dims[i];
	}
}

/* Walks every index of out; src offset = sum(idx[i] * sst[i]) + base. */
static void gather_strided(const double *src, int64_t base, const int64_t *sst,
			   const struct model_shape *out, double *dst)
{
	int64_t idx[ONNX_MAX_RANK] = { 0 }, e = onnx_elems(out);

	for (int64_t k = 0; k < e; k++) {
		int64_t off = base;

		for (int i = 0; i < out->ndims; i++)
			off += idx[i] * sst[i];
		dst[k] = src[off];
		for (int i = out->ndims - 1; i >= 0; i--) {
			if (++idx[i] < out->dims[i])
				break;
			idx[i] = 0;
		}
	}
}

static int fold_slice(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *in = onnx_input(c, n, 0);
	int64_t start[ONNX_MAX_RANK], step[ONNX_MAX_RANK], st[ONNX_MAX_RANK], sst[ONNX_MAX_RANK];
	int64_t base = 0;
	struct model_shape s;
	double *d;
	int ret = onnx_slice_params(c, n, &in->shape, start, step, &s);

	if (ret)
		return ret;
	strides_of(&in->shape, st);
	for (int i = 0; i < s.ndims; i++) {
		base += start[i] * st[i];
		sst[i] = step[i] * st[i];
	}
	d = alloc_elems(c, onnx_elems(&s));
	if (!d)
		return alloc_failed(c);
	if (onnx_elems(&s))
		gather_strided(in->data, base, sst, &s, d);
	return onnx_output_const(c, n, 0, &s, d, in->is_int);
}

static int fold_transpose(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *in = onnx_input(c, n, 0);
	int64_t perm[ONNX_MAX_RANK], st[ONNX_MAX_RANK], sst[ONNX_MAX_RANK];
	struct model_shape s = { .ndims = in->shape.ndims };
	bool seen[ONNX_MAX_RANK] = { false };
	double *d;
	int nr, ret = onnx_attr_ints(c, n, "perm", perm, ONNX_MAX_RANK, &nr);

	if (ret)
		return ret;
	if (nr < 0)
		for (nr = 0; nr < s.ndims; nr++)
			perm[nr] = s.ndims - 1 - nr;
	if (nr != s.ndims)
		return onnx_refuse(c, -EINVAL, "perm has %d entries for rank %d", nr, s.ndims);
	strides_of(&in->shape, st);
	for (int i = 0; i < nr; i++) {
		if (perm[i] < 0 || perm[i] >= nr || seen[perm[i]])
			return onnx_refuse(c, -EINVAL, "perm is not a permutation");
		seen[perm[i]] = true;
		s.dims[i] = in->shape.dims[perm[i]];
		sst[i] = st[perm[i]];
	}
	d = alloc_elems(c, onnx_elems(&s));
	if (!d)
		return alloc_failed(c);
	if (onnx_elems(&s))
		gather_strided(in->data, 0, sst, &s, d);
	return onnx_output_const(c, n, 0, &s, d, in->is_int);
}

static int fold_concat(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *first = onnx_input(c, n, 0);
	int64_t axis, outer = 1, o = 0;
	struct model_shape s;
	double *d;
	int a = 0, ret;

	if (!first)
		return onnx_refuse(c, -EINVAL, "Concat without inputs");
	s = first->shape;
	ret = onnx_attr_int(c, n, "axis", 0, &axis);
	if (!ret)
		ret = onnx_axis(c, axis, s.ndims, &a);
	if (ret)
		return ret;
	s.dims[a] = 0;
	for (size_t k = 0; k < n->n_input; k++) {
		struct onnx_value *v = onnx_input(c, n, k);

		if (!v || v->shape.ndims != s.ndims)
			return onnx_refuse(c, -EINVAL, "inputs differ in rank");
		for (int i = 0; i < s.ndims; i++)
			if (i != a && v->shape.dims[i] != s.dims[i])
				return onnx_refuse(c, -EINVAL, "inputs differ in dim %d", i);
		s.dims[a] += v->shape.dims[a];
	}
	ret = shape_check(c, &s);
	if (ret)
		return ret;
	for (int i = 0; i < a; i++)
		outer *= s.dims[i];
	d = alloc_elems(c, onnx_elems(&s));
	if (!d)
		return alloc_failed(c);
	for (int64_t r = 0; r < outer; r++)
		for (size_t k = 0; k < n->n_input; k++) {
			struct onnx_value *v = onnx_input(c, n, k);
			int64_t chunk = outer ? onnx_elems(&v->shape) / outer : 0;

			memcpy(d + o, v->data + r * chunk, (size_t)chunk * sizeof(double));
			o += chunk;
		}
	return onnx_output_const(c, n, 0, &s, d, first->is_int);
}

static int fold_gather(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *in = onnx_input(c, n, 0), *ix = onnx_input(c, n, 1);
	int64_t axis, outer = 1, inner = 1, ni, d_ax, e;
	struct model_shape s = { 0 };
	double *d;
	int a = 0, ret;

	if (!ix)
		return onnx_refuse(c, -EINVAL, "Gather without indices");
	ret = onnx_attr_int(c, n, "axis", 0, &axis);
	if (!ret)
		ret = onnx_axis(c, axis, in->shape.ndims, &a);
	if (ret)
		return ret;
	if (in->shape.ndims - 1 + ix->shape.ndims > ONNX_MAX_RANK)
		return onnx_refuse(c, -EOPNOTSUPP, "the result would have rank over %d",
				   ONNX_MAX_RANK);
	for (int i = 0; i < a; i++) {
		s.dims[s.ndims++] = in->shape.dims[i];
		outer *= in->shape.dims[i];
	}
	for (int i = 0; i < ix->shape.ndims; i++)
		s.dims[s.ndims++] = ix->shape.dims[i];
	for (int i = a + 1; i < in->shape.ndims; i++) {
		s.dims[s.ndims++] = in->shape.dims[i];
		inner *= in->shape.dims[i];
	}
	ret = shape_check(c, &s);
	if (ret)
		return ret;
	ni = onnx_elems(&ix->shape);
	d_ax = in->shape.dims[a];
	e = onnx_elems(&s);
	d = alloc_elems(c, e);
	if (!d)
		return alloc_failed(c);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < ni; j++) {
			int64_t k = onnx_i64(ix->data[j]);

			if (k < 0)
				k += d_ax;
			if (k < 0 || k >= d_ax) {
				free(d);
				return onnx_refuse(c, -EINVAL,
						   "indices element %lld is out of range for axis "
						   "%d of the data",
						   (long long)j, a);
			}
			memcpy(d + (o * ni + j) * inner, in->data + (o * d_ax + k) * inner,
			       (size_t)inner * sizeof(double));
		}
	return onnx_output_const(c, n, 0, &s, d, in->is_int);
}

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
	return shape_check(c, out);
}

/* Broadcast strides of a (right-aligned to out, 0 along size-1 dims). */
static void bstrides(const struct model_shape *a, const struct model_shape *out, int64_t *bst)
{
	int64_t st[ONNX_MAX_RANK];

	strides_of(a, st);
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

static int fold_binary(struct onnx_ctx *c, const Onnx__NodeProto *n)
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
	d = alloc_elems(c, e);
	if (!d)
		return alloc_failed(c);
	for (int64_t k = 0; k < e; k++) {
		d[k] = fn(a->data[offset_of(&s, idx, sa)], b->data[offset_of(&s, idx, sb)]);
		if (!is_int && !op->to_bool)
			d[k] = (float)d[k];
		next_index(&s, idx);
	}
	return onnx_output_const(c, n, 0, &s, d, is_int || op->to_bool);
}

/* Where(cond, x, y): x where cond is nonzero, else y, all three broadcast. */
static int fold_where(struct onnx_ctx *c, const Onnx__NodeProto *n)
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
	d = alloc_elems(c, e);
	if (!d)
		return alloc_failed(c);
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
	*m = alloc_elems(c, e);
	*z = *m ? alloc_elems(c, e) : NULL;
	if (!*z) {
		free(*m);
		return alloc_failed(c);
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
static int fold_expand(struct onnx_ctx *c, const Onnx__NodeProto *n)
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
	ret = shape_check(c, &want);
	if (!ret)
		ret = broadcast(c, &x->shape, &want, &s);
	if (ret)
		return ret;
	bstrides(&x->shape, &s, st);
	e = onnx_elems(&s);
	d = alloc_elems(c, e);
	if (!d)
		return alloc_failed(c);
	for (int64_t k = 0; k < e; k++) {
		d[k] = x->data[offset_of(&s, idx, st)];
		next_index(&s, idx);
	}
	return onnx_output_const(c, n, 0, &s, d, x->is_int);
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
	ret = shape_check(c, &s);
	if (ret)
		return ret;
	d = alloc_elems(c, s.dims[0]);
	if (!d)
		return alloc_failed(c);
	for (int64_t i = 0; i < s.dims[0]; i++) {
		d[i] = v[0]->data[0] + (double)i * v[2]->data[0];
		if (!is_int)
			d[i] = (float)d[i];
	}
	return onnx_output_const(c, n, 0, &s, d, is_int);
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

static int fold_unary(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *in = onnx_input(c, n, 0);
	int64_t e = onnx_elems(&in->shape);
	const struct fold_unop *op = NULL;
	double *d;

	for (size_t i = 0; i < sizeof(fold_unops) / sizeof(fold_unops[0]); i++)
		if (!strcmp(fold_unops[i].type, n->op_type))
			op = &fold_unops[i];
	d = alloc_elems(c, e);
	if (!d)
		return alloc_failed(c);
	for (int64_t i = 0; i < e; i++)
		d[i] = op->fn(in->data[i]);
	return onnx_output_const(c, n, 0, &in->shape, d, op->keeps_int && in->is_int);
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
	ret = shape_check(c, &s);
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
	d = alloc_elems(c, onnx_elems(&s));
	if (!d)
		return alloc_failed(c);
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
	{ "Slice", fold_slice, false },
	{ "Transpose", fold_transpose, false },
	{ "Concat", fold_concat, false },
	{ "Gather", fold_gather, false },
	{ "Add", fold_binary, false },
	{ "Sub", fold_binary, false },
	{ "Mul", fold_binary, false },
	{ "Div", fold_binary, false },
	{ "Pow", fold_binary, false },
	{ "Equal", fold_binary, false },
	{ "Greater", fold_binary, false },
	{ "GreaterOrEqual", fold_binary, false },
	{ "Less", fold_binary, false },
	{ "LessOrEqual", fold_binary, false },
	{ "And", fold_binary, false },
	{ "Or", fold_binary, false },
	{ "Xor", fold_binary, false },
	{ "Where", fold_where, false },
	{ "Expand", fold_expand, false },
	{ "Range", fold_range, false },
	{ "Sqrt", fold_unary, false },
	{ "Neg", fold_unary, false },
	{ "Not", fold_unary, false },
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
