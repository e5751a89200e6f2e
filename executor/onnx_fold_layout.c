// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Constant folds that move a constant's elements without computing new
 * ones (onnx_fold.c dispatches): Slice, Transpose, Concat and Gather, each
 * a strided walk over its input.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

void onnx_fold_strides(const struct model_shape *s, int64_t *st)
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

int onnx_fold_slice(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *in = onnx_input(c, n, 0);
	int64_t start[ONNX_MAX_RANK], step[ONNX_MAX_RANK], st[ONNX_MAX_RANK], sst[ONNX_MAX_RANK];
	int64_t base = 0;
	struct model_shape s;
	double *d;
	int ret = onnx_slice_params(c, n, &in->shape, start, step, &s);

	if (ret)
		return ret;
	onnx_fold_strides(&in->shape, st);
	for (int i = 0; i < s.ndims; i++) {
		base += start[i] * st[i];
		sst[i] = step[i] * st[i];
	}
	d = onnx_fold_alloc(c, onnx_elems(&s));
	if (!d)
		return onnx_fold_alloc_failed(c);
	if (onnx_elems(&s))
		gather_strided(in->data, base, sst, &s, d);
	return onnx_output_const(c, n, 0, &s, d, in->is_int);
}

int onnx_fold_transpose(struct onnx_ctx *c, const Onnx__NodeProto *n)
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
	onnx_fold_strides(&in->shape, st);
	for (int i = 0; i < nr; i++) {
		if (perm[i] < 0 || perm[i] >= nr || seen[perm[i]])
			return onnx_refuse(c, -EINVAL, "perm is not a permutation");
		seen[perm[i]] = true;
		s.dims[i] = in->shape.dims[perm[i]];
		sst[i] = st[perm[i]];
	}
	d = onnx_fold_alloc(c, onnx_elems(&s));
	if (!d)
		return onnx_fold_alloc_failed(c);
	if (onnx_elems(&s))
		gather_strided(in->data, 0, sst, &s, d);
	return onnx_output_const(c, n, 0, &s, d, in->is_int);
}

int onnx_fold_concat(struct onnx_ctx *c, const Onnx__NodeProto *n)
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
	ret = onnx_fold_shape_check(c, &s);
	if (ret)
		return ret;
	for (int i = 0; i < a; i++)
		outer *= s.dims[i];
	d = onnx_fold_alloc(c, onnx_elems(&s));
	if (!d)
		return onnx_fold_alloc_failed(c);
	for (int64_t r = 0; r < outer; r++)
		for (size_t k = 0; k < n->n_input; k++) {
			struct onnx_value *v = onnx_input(c, n, k);
			int64_t chunk = outer ? onnx_elems(&v->shape) / outer : 0;

			memcpy(d + o, v->data + r * chunk, (size_t)chunk * sizeof(double));
			o += chunk;
		}
	return onnx_output_const(c, n, 0, &s, d, first->is_int);
}

int onnx_fold_gather(struct onnx_ctx *c, const Onnx__NodeProto *n)
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
	ret = onnx_fold_shape_check(c, &s);
	if (ret)
		return ret;
	ni = onnx_elems(&ix->shape);
	d_ax = in->shape.dims[a];
	e = onnx_elems(&s);
	d = onnx_fold_alloc(c, e);
	if (!d)
		return onnx_fold_alloc_failed(c);
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
