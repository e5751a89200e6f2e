// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ONNX shape rules that constant folding (onnx_fold.c) and lowering
 * (onnx_lower_shape.c) share: an axis counted from the end, Reshape's
 * target (0 copies a dim, one -1 is inferred), Squeeze/Unsqueeze/Flatten's
 * output shapes, and Slice's starts, steps and output shape, clamped as
 * ONNX says.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

int onnx_axis(struct onnx_ctx *c, int64_t axis, int rank, int *out)
{
	if (axis < -rank || axis >= rank)
		return onnx_refuse(c, -EINVAL, "an axis is out of range for rank %d", rank);
	*out = (int)(axis < 0 ? axis + rank : axis);
	return 0;
}

int onnx_reshape_resolve(struct onnx_ctx *c, const struct model_shape *in, const double *dims,
			 int64_t n, bool allowzero, struct model_shape *out)
{
	int64_t known = 1, total = onnx_elems(in);
	int infer = -1;

	if (n < 0 || n > ONNX_MAX_RANK)
		return onnx_refuse(c, -EOPNOTSUPP, "target rank %lld (at most %d)", (long long)n,
				   ONNX_MAX_RANK);
	out->ndims = (int)n;
	for (int i = 0; i < n; i++) {
		int64_t d = onnx_i64(dims[i]);

		if (d == 0 && !allowzero) {
			if (i >= in->ndims)
				return onnx_refuse(c, -EINVAL,
						   "dim %d is 0 (copy) beyond the input's "
						   "rank",
						   i);
			d = in->dims[i];
		}
		if (d == -1) {
			if (infer >= 0)
				return onnx_refuse(c, -EINVAL, "two dims are -1");
			infer = i;
			d = 1;
		} else if (d < 0 || d > (1ll << 32)) {
			return onnx_refuse(c, -EINVAL, "target dim %d is below -1 or over 2^32", i);
		}
		out->dims[i] = d;
		if (!onnx_mul(&known, d, 1ll << 40))
			return onnx_refuse(c, -EINVAL, "the target shape is too large");
	}
	if (infer >= 0) {
		if (!known || total % known)
			return onnx_refuse(c, -EINVAL,
					   "the input's elements cannot fill the target shape");
		out->dims[infer] = total / known;
		known = total;
	}
	if (known != total)
		return onnx_refuse(c, -EINVAL,
				   "the target shape holds another number of elements than the "
				   "input");
	return 0;
}

/* axes from the attribute (before opset 13) or the constant input 1. */
static int axes_of(struct onnx_ctx *c, const Onnx__NodeProto *n, int64_t *axes, int *nr)
{
	struct onnx_value *a;
	int ret = onnx_attr_ints(c, n, "axes", axes, 2 * ONNX_MAX_RANK, nr);

	if (ret || *nr >= 0)
		return ret;
	a = onnx_input(c, n, 1);
	if (!a)
		return 0;
	if (!a->data)
		return onnx_refuse(c, -EOPNOTSUPP, "axes are computed at run time, not constant");
	if (onnx_elems(&a->shape) > 2 * ONNX_MAX_RANK)
		return onnx_refuse(c, -EINVAL, "too many axes");
	*nr = (int)onnx_elems(&a->shape);
	for (int i = 0; i < *nr; i++)
		axes[i] = onnx_i64(a->data[i]);
	return 0;
}

int onnx_squeeze_shape(struct onnx_ctx *c, const Onnx__NodeProto *n, const struct model_shape *in,
		       bool unsqueeze, struct model_shape *out)
{
	int64_t axes[2 * ONNX_MAX_RANK];
	bool mark[2 * ONNX_MAX_RANK] = { false };
	int nr, ret = axes_of(c, n, axes, &nr), rank, k = 0;

	if (ret)
		return ret;
	if (unsqueeze && nr < 1)
		return onnx_refuse(c, -EINVAL, "Unsqueeze without axes");
	rank = unsqueeze ? in->ndims + nr : in->ndims;
	if (rank > ONNX_MAX_RANK)
		return onnx_refuse(c, -EOPNOTSUPP, "the result would have rank %d (at most %d)",
				   rank, ONNX_MAX_RANK);
	for (int i = 0; i < nr; i++) {
		int a = 0;

		ret = onnx_axis(c, axes[i], rank, &a);
		if (ret)
			return ret;
		if (mark[a])
			return onnx_refuse(c, -EINVAL, "axis %d is given twice", a);
		mark[a] = true;
		if (!unsqueeze && in->dims[a] != 1)
			return onnx_refuse(c, -EINVAL, "dim %d is %lld, not 1", a,
					   (long long)in->dims[a]);
	}
	out->ndims = 0;
	for (int i = 0; i < rank; i++) {
		if (unsqueeze) {
			out->dims[out->ndims++] = mark[i] ? 1 : in->dims[k++];
		} else if (!(nr < 0 ? in->dims[i] == 1 : mark[i])) {
			out->dims[out->ndims++] = in->dims[i];
		}
	}
	return 0;
}

int onnx_flatten_shape(struct onnx_ctx *c, const Onnx__NodeProto *n, const struct model_shape *in,
		       struct model_shape *out)
{
	int64_t axis;
	int a = 0, ret = onnx_attr_int(c, n, "axis", 1, &axis);

	if (!ret && axis == in->ndims)
		a = in->ndims;
	else if (!ret)
		ret = onnx_axis(c, axis, in->ndims, &a);
	if (ret)
		return ret;
	out->ndims = 2;
	out->dims[0] = out->dims[1] = 1;
	for (int i = 0; i < in->ndims; i++)
		out->dims[i >= a] *= in->dims[i];
	return 0;
}

/* Up to rank values from the attribute (opset < 10) or constant input k. */
static int slice_list(struct onnx_ctx *c, const Onnx__NodeProto *n, const char *attr, size_t k,
		      int64_t *v, int *nr)
{
	struct onnx_value *a;

	if (c->opset < 10)
		return onnx_attr_ints(c, n, attr, v, ONNX_MAX_RANK, nr);
	*nr = -1;
	a = onnx_input(c, n, k);
	if (!a)
		return 0;
	if (!a->data)
		return onnx_refuse(c, -EOPNOTSUPP, "Slice %s are computed at run time", attr);
	if (onnx_elems(&a->shape) > ONNX_MAX_RANK)
		return onnx_refuse(c, -EINVAL, "Slice has more than %d %s", ONNX_MAX_RANK, attr);
	*nr = (int)onnx_elems(&a->shape);
	for (int i = 0; i < *nr; i++)
		v[i] = a->data[i] > 9e18  ? INT64_MAX :
		       a->data[i] < -9e18 ? INT64_MIN :
					    onnx_i64(a->data[i]);
	return 0;
}

int onnx_slice_params(struct onnx_ctx *c, const Onnx__NodeProto *n, const struct model_shape *in,
		      int64_t *start, int64_t *step, struct model_shape *out)
{
	int64_t starts[ONNX_MAX_RANK], ends[ONNX_MAX_RANK], axes[ONNX_MAX_RANK],
		steps[ONNX_MAX_RANK];
	int ns, ne, na, nst, ret;

	ret = slice_list(c, n, "starts", 1, starts, &ns);
	if (!ret)
		ret = slice_list(c, n, "ends", 2, ends, &ne);
	if (!ret)
		ret = slice_list(c, n, "axes", 3, axes, &na);
	if (!ret && c->opset >= 10)
		ret = slice_list(c, n, "steps", 4, steps, &nst);
	else
		nst = -1;
	if (ret)
		return ret;
	if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
		return onnx_refuse(c, -EINVAL, "starts, ends, axes and steps differ in length");
	*out = *in;
	for (int i = 0; i < in->ndims; i++) {
		start[i] = 0;
		step[i] = 1;
	}
	for (int i = 0; i < ns; i++) {
		int64_t d, s, e, st = nst >= 0 ? steps[i] : 1;
		int a = 0;

		ret = onnx_axis(c, na >= 0 ? axes[i] : i, in->ndims, &a);
		if (ret)
			return ret;
		d = in->dims[a];
		if (st == 0)
			return onnx_refuse(c, -EINVAL, "step 0");
		s = starts[i] < 0 ? (starts[i] < -d ? 0 : starts[i] + d) : starts[i];
		e = ends[i] < 0 ? (ends[i] < -d ? -1 : ends[i] + d) : ends[i];
		if (st > 0) {
			s = s > d ? d : s;
			e = e > d ? d : (e < 0 ? 0 : e);
			out->dims[a] = e > s ? (e - s + st - 1) / st : 0;
		} else {
			s = s > d - 1 ? d - 1 : s;
			e = e > d - 1 ? d - 1 : e;
			out->dims[a] = s > e ? (s - e - st - 1) / -st : 0;
		}
		start[a] = s;
		step[a] = st;
	}
	return 0;
}
