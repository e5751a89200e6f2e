// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Lowering of the ops that move data without arithmetic: Concat, Reshape
 * (Flatten, Squeeze, Unsqueeze), Transpose, Gather, Slice, Resize, Pad,
 * Split, and Identity and Cast, which alias their input.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_lower.h"

int onnx_lower_concat(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *ins[MODEL_MAX_INPUTS];
	struct model_shape out;
	struct onnx_layer *l;
	int64_t axis;
	int a = 0, ret;

	if (n->n_input < 2 || n->n_input > MODEL_MAX_INPUTS)
		return onnx_refuse(c, -EOPNOTSUPP, "%zu inputs; coloc's concat takes 2 to %d",
				   n->n_input, MODEL_MAX_INPUTS);
	for (size_t i = 0; i < n->n_input; i++) {
		ins[i] = onnx_data_input(c, n, i);
		if (!ins[i])
			return onnx_refuse(c, -EOPNOTSUPP,
					   "input %zu is a constant; coloc's concat "
					   "reads layers only",
					   i);
	}
	out = ins[0]->shape;
	ret = onnx_attr_int(c, n, "axis", 1, &axis);
	if (!ret)
		ret = onnx_axis(c, axis, out.ndims, &a);
	if (ret)
		return ret;
	out.dims[a] = 0;
	for (size_t i = 0; i < n->n_input; i++) {
		if (ins[i]->shape.ndims != out.ndims)
			return onnx_refuse(c, -EINVAL, "inputs differ in rank");
		for (int j = 0; j < out.ndims; j++)
			if (j != a && ins[i]->shape.dims[j] != out.dims[j])
				return onnx_refuse(c, -EINVAL, "inputs differ in dim %d", j);
		out.dims[a] += ins[i]->shape.dims[a];
	}
	return onnx_new_layer(c, n, MODEL_OP_CONCAT, ins, (int)n->n_input, &out, &l) ?:
		       (l->l.axis = a, 0);
}

int onnx_lower_reshape(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0), *sh;
	struct model_shape out;
	struct onnx_layer *l;
	int64_t allowzero;
	int ret;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	if (!strcmp(n->op_type, "Flatten")) {
		ret = onnx_flatten_shape(c, n, &x->shape, &out);
	} else if (!strcmp(n->op_type, "Reshape")) {
		sh = onnx_input(c, n, 1);
		if (!sh || !sh->data || sh->shape.ndims != 1)
			return onnx_refuse(c, -EOPNOTSUPP,
					   "the target shape is not a constant after "
					   "folding (a shape computed from run-time values)");
		ret = onnx_attr_int(c, n, "allowzero", 0, &allowzero);
		if (!ret)
			ret = onnx_reshape_resolve(c, &x->shape, sh->data, sh->shape.dims[0],
						   allowzero, &out);
	} else {
		ret = onnx_squeeze_shape(c, n, &x->shape, n->op_type[0] == 'U', &out);
	}
	if (ret)
		return ret;
	if (out.ndims == x->shape.ndims &&
	    !memcmp(out.dims, x->shape.dims, (size_t)out.ndims * sizeof(int64_t)))
		return onnx_alias(c, n, x);
	return onnx_new_layer(c, n, MODEL_OP_RESHAPE, &x, 1, &out, &l) ?: (l->l.reshape = out, 0);
}

int onnx_lower_transpose(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0);
	int64_t perm[ONNX_MAX_RANK];
	bool seen[ONNX_MAX_RANK] = { false };
	struct model_shape out;
	struct onnx_layer *l;
	int nr, ret;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	ret = onnx_attr_ints(c, n, "perm", perm, ONNX_MAX_RANK, &nr);
	if (ret)
		return ret;
	if (nr < 0)
		for (nr = 0; nr < x->shape.ndims; nr++)
			perm[nr] = x->shape.ndims - 1 - nr;
	if (nr != x->shape.ndims)
		return onnx_refuse(c, -EINVAL, "perm has %d entries for rank %d", nr,
				   x->shape.ndims);
	out.ndims = nr;
	for (int i = 0; i < nr; i++) {
		if (perm[i] < 0 || perm[i] >= nr || seen[perm[i]])
			return onnx_refuse(c, -EINVAL, "perm is not a permutation");
		seen[perm[i]] = true;
		out.dims[i] = x->shape.dims[perm[i]];
	}
	ret = onnx_new_layer(c, n, MODEL_OP_TRANSPOSE, &x, 1, &out, &l);
	for (int i = 0; !ret && i < nr; i++)
		l->l.perm[i] = (int)perm[i];
	return ret;
}

int onnx_lower_gather(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *t = onnx_const_input(c, n, 0), *ix = onnx_data_input(c, n, 1);
	struct model_shape out;
	struct onnx_layer *l;
	int64_t axis;
	int ret = onnx_attr_int(c, n, "axis", 0, &axis);

	if (ret)
		return ret;
	if (!t || !ix || t->shape.ndims != 2 || axis != 0 || ix->shape.ndims != 2)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Gather is supported as an embedding: a constant "
				   "[vocab, dim] table, axis 0, computed [N, S] indices");
	out = ix->shape;
	out.ndims = 3;
	out.dims[2] = t->shape.dims[1];
	ret = onnx_new_layer(c, n, MODEL_OP_EMBED, &ix, 1, &out, &l);
	if (ret)
		return ret;
	l->l.embed = (struct model_embed){ .vocab = t->shape.dims[0], .dim = t->shape.dims[1] };
	l->nt[0] = onnx_elems(&t->shape);
	l->t[0] = onnx_to_floats(c, t->data, l->nt[0], 1.0);
	return l->t[0] ? 0 : -ENOMEM;
}

int onnx_lower_slice(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0);
	int64_t start[ONNX_MAX_RANK], step[ONNX_MAX_RANK];
	struct model_shape out;
	struct onnx_layer *l;
	int axis = -1, ret;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	ret = onnx_slice_params(c, n, &x->shape, start, step, &out);
	if (ret)
		return ret;
	for (int i = 0; i < out.ndims; i++) {
		if (out.dims[i] == x->shape.dims[i] && step[i] == 1)
			continue;
		if (axis >= 0 || step[i] != 1 || out.dims[i] < 1)
			return onnx_refuse(c, -EOPNOTSUPP,
					   "coloc slices one axis with step 1 and a "
					   "non-empty result");
		axis = i;
	}
	if (axis < 0)
		return onnx_alias(c, n, x);
	ret = onnx_new_layer(c, n, MODEL_OP_SLICE, &x, 1, &out, &l);
	if (!ret)
		l->l.slice = (struct model_slice){ .axis = axis,
						   .start = start[axis],
						   .len = out.dims[axis] };
	return ret;
}

/*
 * Resize (opset 11 on) and Upsample of a 4-D tensor's H and W: nearest
 * where every ONNX rounding agrees with coloc's floor(o * IH / OH) (integer
 * factors, asymmetric + floor or half_pixel + round), linear with
 * half_pixel coordinates.
 */
int onnx_lower_resize(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0), *sc, *sz;
	bool up = !strcmp(n->op_type, "Upsample");
	char mb[16], cb[24], nb[24];
	const char *mode, *ctm, *nm;
	struct model_shape out;
	struct onnx_layer *l;
	bool linear, ok;
	int ret;

	if (!x || x->shape.ndims != 4)
		return onnx_refuse(c, -EOPNOTSUPP, "only the H and W of a computed 4-D tensor");
	if (!up && c->opset < 11)
		return onnx_refuse(c, -EOPNOTSUPP, "Resize before opset 11 (its rounding differs)");
	mode = onnx_attr_str(n, "mode", mb, sizeof(mb), "nearest");
	ctm = onnx_attr_str(n, "coordinate_transformation_mode", cb, sizeof(cb),
			    up ? "asymmetric" : "half_pixel");
	nm = onnx_attr_str(n, "nearest_mode", nb, sizeof(nb), up ? "floor" : "round_prefer_floor");
	sc = onnx_input(c, n, up ? 1 : 2);
	sz = up ? NULL : onnx_input(c, n, 3);
	out = x->shape;
	if (sz && onnx_elems(&sz->shape)) {
		if (!sz->data || onnx_elems(&sz->shape) != 4)
			return onnx_refuse(c, -EOPNOTSUPP, "sizes must be 4 constants");
		for (int i = 0; i < 4; i++)
			out.dims[i] = onnx_i64(sz->data[i]);
	} else if (sc && sc->data && onnx_elems(&sc->shape) == 4) {
		for (int i = 0; i < 4; i++) {
			if (!(sc->data[i] > 0 && sc->data[i] <= 1024))
				return onnx_refuse(c, -EOPNOTSUPP,
						   "scales element %d is outside (0, 1024]", i);
			out.dims[i] = (int64_t)floor((double)x->shape.dims[i] * sc->data[i]);
		}
	} else {
		return onnx_refuse(c, -EOPNOTSUPP, "scales must be 4 constants (or sizes given)");
	}
	if (out.dims[0] != x->shape.dims[0] || out.dims[1] != x->shape.dims[1] || out.dims[2] < 1 ||
	    out.dims[3] < 1)
		return onnx_refuse(c, -EOPNOTSUPP, "only H and W may be resized");
	linear = !strcmp(mode, "linear");
	if (linear)
		ok = !strcmp(ctm, "half_pixel") ||
		     (!strcmp(ctm, "pytorch_half_pixel") && out.dims[2] > 1 && out.dims[3] > 1);
	else
		ok = !strcmp(mode, "nearest") && out.dims[2] % x->shape.dims[2] == 0 &&
		     out.dims[3] % x->shape.dims[3] == 0 &&
		     ((!strcmp(ctm, "asymmetric") && !strcmp(nm, "floor")) ||
		      ((!strcmp(ctm, "half_pixel") || !strcmp(ctm, "pytorch_half_pixel")) &&
		       !strncmp(nm, "round_prefer_", 13)));
	if (!ok)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "mode '%s', coordinates '%s', nearest_mode '%s': coloc "
				   "resizes nearest by integer factors (asymmetric + floor, or "
				   "half_pixel) and linear with half_pixel",
				   mode, ctm, nm);
	ret = onnx_new_layer(c, n, MODEL_OP_RESIZE, &x, 1, &out, &l);
	if (!ret)
		l->l.resize.linear = linear;
	return ret;
}

/*
 * Pad, constant mode: pads from the attribute (before opset 11) or input
 * 1, the value from the attribute or input 2; every axis (no axes input).
 */
int onnx_lower_pad(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0), *pv = onnx_input(c, n, 1),
			  *vv = onnx_input(c, n, 2);
	int64_t pads[2 * ONNX_MAX_RANK];
	struct model_shape out;
	struct onnx_layer *l;
	char mb[16];
	float value = 0;
	int nr, r, ret;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	r = x->shape.ndims;
	if (strcmp(onnx_attr_str(n, "mode", mb, sizeof(mb), "constant"), "constant") ||
	    onnx_input(c, n, 3))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "only mode constant over every axis (no reflect, edge, "
				   "wrap or axes)");
	ret = onnx_attr_ints(c, n, "pads", pads, 2 * ONNX_MAX_RANK, &nr);
	if (!ret && c->opset < 11)
		ret = onnx_attr_float(c, n, "value", 0.0f, &value);
	if (ret)
		return ret;
	if (c->opset >= 11) {
		if (!pv || !pv->data || onnx_elems(&pv->shape) != 2 * r ||
		    (vv && (!vv->data || onnx_elems(&vv->shape) != 1)))
			return onnx_refuse(c, -EOPNOTSUPP,
					   "pads and the value must be constants (2 x rank "
					   "pads)");
		nr = 2 * r;
		for (int i = 0; i < nr; i++)
			pads[i] = onnx_i64(pv->data[i]);
		value = vv ? (float)vv->data[0] : 0.0f;
	}
	if (nr != 2 * r)
		return onnx_refuse(c, -EINVAL, "%d pads for rank %d", nr, r);
	if (!(fabsf(value) <= 1e30f))
		return onnx_refuse(c, -EINVAL, "the pad value is NaN or beyond +-1e30");
	out = x->shape;
	for (int i = 0; i < r; i++) {
		if (pads[i] < 0 || pads[r + i] < 0 || pads[i] > 65536 || pads[r + i] > 65536)
			return onnx_refuse(c, -EOPNOTSUPP,
					   "the pads of axis %d are outside 0..65536 (coloc "
					   "pads, it does not crop)",
					   i);
		out.dims[i] += pads[i] + pads[r + i];
	}
	ret = onnx_new_layer(c, n, MODEL_OP_PAD, &x, 1, &out, &l);
	if (ret)
		return ret;
	for (int i = 0; i < r; i++) {
		l->l.pad.begin[i] = pads[i];
		l->l.pad.end[i] = pads[r + i];
	}
	l->l.pad.value = value;
	return 0;
}

/* Split along an axis: one slice layer per output. */
int onnx_lower_split(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0), *sp = onnx_input(c, n, 1);
	int64_t axis, parts[64], start = 0;
	struct onnx_layer *l;
	int nr, a, ret;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	if (n->n_output < 1 || n->n_output > 64)
		return onnx_refuse(c, -EOPNOTSUPP, "%zu outputs (1 to 64)", n->n_output);
	ret = onnx_attr_int(c, n, "axis", 0, &axis);
	if (!ret)
		ret = onnx_axis(c, axis, x->shape.ndims, &a);
	if (!ret)
		ret = onnx_attr_ints(c, n, "split", parts, 64, &nr);
	if (ret)
		return ret;
	if (nr < 0 && sp) {
		if (!sp->data || onnx_elems(&sp->shape) > 64)
			return onnx_refuse(c, -EOPNOTSUPP, "the split sizes must be constant");
		nr = (int)onnx_elems(&sp->shape);
		for (int i = 0; i < nr; i++)
			parts[i] = onnx_i64(sp->data[i]);
	}
	if (nr < 0) {
		if (x->shape.dims[a] % (int64_t)n->n_output)
			return onnx_refuse(c, -EOPNOTSUPP, "axis %d of %lld does not split in %zu",
					   a, (long long)x->shape.dims[a], n->n_output);
		nr = (int)n->n_output;
		for (int i = 0; i < nr; i++)
			parts[i] = x->shape.dims[a] / nr;
	}
	if (nr != (int)n->n_output)
		return onnx_refuse(c, -EINVAL, "%d split sizes for %zu outputs", nr, n->n_output);
	for (int i = 0; i < nr; i++) {
		struct model_shape out = x->shape;

		if (parts[i] < 1 || start + parts[i] > x->shape.dims[a])
			return onnx_refuse(c, -EINVAL, "the split sizes do not fit axis %d", a);
		out.dims[a] = parts[i];
		ret = onnx_layer_add(c, MODEL_OP_SLICE, n->output[i], &l);
		if (ret)
			return ret;
		l->l.nr_inputs = 1;
		l->l.inputs[0] = x->layer;
		l->l.out = out;
		l->l.slice = (struct model_slice){ .axis = a, .start = start, .len = parts[i] };
		snprintf(l->origin, sizeof(l->origin), "Split '%.64s' output %d",
			 onnx_node_label(n), i);
		ret = onnx_output_layer(c, n, (size_t)i, c->nr_layers - 1);
		if (ret)
			return ret;
		start += parts[i];
	}
	if (start != x->shape.dims[a])
		return onnx_refuse(c, -EINVAL, "the split sizes do not add up to axis %d", a);
	return 0;
}

int onnx_lower_identity(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0);
	int ret = onnx_only_first_output(c, n);

	if (ret)
		return ret;
	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	return onnx_alias(c, n, x);
}

/*
 * Cast of a computed tensor: coloc's layers compute fp32 (and take token ids
 * as fp32), so a Cast to float or double is an onnx_alias; to an integer or
 * bool type it would round or threshold, which no layer does.
 */
int onnx_lower_cast(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0);
	int64_t to;
	int ret = onnx_attr_int(c, n, "to", 0, &to);

	if (ret)
		return ret;
	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	if (to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
	    to != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Cast of a run-time tensor to data type %lld (coloc computes "
				   "fp32: only a Cast to float or double is supported; casts "
				   "of constants and shapes are folded)",
				   (long long)to);
	return onnx_alias(c, n, x);
}
