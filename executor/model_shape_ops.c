// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The shape rule of every op of the model format, in one table
 * (shape_ops[]): its attributes, the shapes of its inputs checked against
 * each other, its output shape, its MACs and learned parameters.
 * Everything a kernel would choke on (channels not divisible by groups, a
 * kernel larger than its padded input, shapes that cannot be broadcast,
 * sizes that overflow) is refused here; conv, deconv and pool's rules are
 * in model_shape_window.c.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_shape.h"
#include "util.h"
#include "window.h"

static int shape_input(struct shape_layer *il)
{
	int64_t dims[MODEL_MAX_DIMS];
	const char *s;
	int err, n;

	s = shape_value(il, "shape", true, &err);
	if (!s)
		return err;
	n = shape_int_list(il, "shape", s, 'x', 1, SHAPE_MAX_DIM, dims, MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	return shape_set_out(il, n, dims);
}

static int shape_fc(struct shape_layer *il)
{
	const struct model_shape *in = il->in[0];
	int64_t out, dims[MODEL_MAX_DIMS];
	int64_t k = in->dims[in->ndims - 1];
	int i;

	if (shape_need_ndims(il, 0, 2, MODEL_MAX_DIMS) ||
	    shape_int(il, "out", true, 1, SHAPE_MAX_DIM, 0, &out) ||
	    shape_flag(il, "bias", &il->l->fc.bias))
		return -EINVAL;
	il->l->fc.out_features = out;
	for (i = 0; i < in->ndims; i++)
		dims[i] = in->dims[i];
	dims[in->ndims - 1] = out;
	if (shape_set_out(il, in->ndims, dims) ||
	    shape_product(il, &il->l->macs, 2, (uint64_t)model_shape_elems(in), (uint64_t)out) ||
	    shape_product(il, &il->l->params, 2, (uint64_t)k, (uint64_t)out))
		return -EINVAL;
	il->l->params += il->l->fc.bias ? (uint64_t)out : 0;
	return 0;
}

static int shape_matmul(struct shape_layer *il)
{
	const struct model_shape *a = il->in[0], *b = il->in[1];
	struct model_matmul *mm = &il->l->matmul;
	int64_t dims[MODEL_MAX_DIMS], m, n, k, kb, batch = 1;
	char sa[128], sb[128];
	int nd = a->ndims, i;

	if (shape_need_ndims(il, 0, 2, MODEL_MAX_DIMS) ||
	    shape_need_ndims(il, 1, 2, MODEL_MAX_DIMS) ||
	    shape_flag(il, "transpose_b", &mm->transpose_b) ||
	    shape_float(il, "alpha", false, -1e6, 1e6, 1.0, &mm->alpha))
		return -EINVAL;
	shape_format_shape(a, sa, sizeof(sa));
	shape_format_shape(b, sb, sizeof(sb));
	if (b->ndims != nd)
		return shape_fail(il, "operands %s and %s differ in rank", sa, sb);
	for (i = 0; i < nd - 2; i++) {
		if (a->dims[i] != b->dims[i])
			return shape_fail(il, "batch dimensions of %s and %s differ", sa, sb);
		dims[i] = a->dims[i];
		batch *= a->dims[i];
	}
	m = a->dims[nd - 2];
	k = a->dims[nd - 1];
	kb = mm->transpose_b ? b->dims[nd - 1] : b->dims[nd - 2];
	n = mm->transpose_b ? b->dims[nd - 2] : b->dims[nd - 1];
	if (k != kb)
		return shape_fail(il, "cannot multiply %s by %s%s: inner dimensions %lld and %lld",
				  sa, sb, mm->transpose_b ? "^T" : "", (long long)k, (long long)kb);
	dims[nd - 2] = m;
	dims[nd - 1] = n;
	if (shape_set_out(il, nd, dims))
		return -EINVAL;
	return shape_product(il, &il->l->macs, 4, (uint64_t)batch, (uint64_t)m, (uint64_t)n,
			     (uint64_t)k);
}

static int shape_same_shape(struct shape_layer *il)
{
	return shape_set_out(il, il->in[0]->ndims, il->in[0]->dims);
}

/* const=SHAPE: the constant second operand of a binary op with one input. */
static int shape_binary_const(struct shape_layer *il)
{
	struct model_binary *bn = &il->l->binary;
	const char *s;
	int err, n;

	s = shape_value(il, "const", false, &err);
	if (err || shape_flag(il, "const_first", &bn->const_first))
		return -EINVAL;
	bn->has_const = s != NULL;
	if (il->l->nr_inputs == 2) {
		if (bn->has_const || bn->const_first)
			return shape_fail(il, "const= and const_first take one input, not two");
		return 0;
	}
	if (!s)
		return shape_fail(il,
				  "with one input, give the constant operand's shape: const=SHAPE");
	if (bn->const_first && il->l->op != MODEL_OP_SUB)
		return shape_fail(il, "const_first is for sub only");
	n = shape_int_list(il, "const", s, 'x', 1, SHAPE_MAX_DIM, bn->cshape.dims, MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	bn->cshape.ndims = n;
	il->in[1] = &bn->cshape;
	il->l->params = (uint64_t)model_shape_elems(&bn->cshape);
	return 0;
}

static int shape_broadcast(struct shape_layer *il)
{
	const struct model_shape *a = il->in[0], *b;
	char sa[128], sb[128];
	int i;

	if (shape_binary_const(il))
		return -EINVAL;
	b = il->in[1];

	for (i = 1; i <= b->ndims; i++) {
		if (i > a->ndims || (b->dims[b->ndims - i] != 1 &&
				     b->dims[b->ndims - i] != a->dims[a->ndims - i])) {
			shape_format_shape(a, sa, sizeof(sa));
			shape_format_shape(b, sb, sizeof(sb));
			return shape_fail(
				il, "shape %s of '%s' cannot be broadcast to shape %s of '%s'", sb,
				il->l->binary.has_const ? "const" :
							  il->c->m->layers[il->l->inputs[1]].name,
				sa, il->c->m->layers[il->l->inputs[0]].name);
		}
	}
	return shape_same_shape(il);
}

static int shape_concat(struct shape_layer *il)
{
	const struct model_shape *a = il->in[0];
	int64_t axis, dims[MODEL_MAX_DIMS];
	char sa[128], sb[128];
	int i, d;

	if (shape_int(il, "axis", false, -MODEL_MAX_DIMS, MODEL_MAX_DIMS - 1, 1, &axis) ||
	    shape_normalize_axis(il, "axis", axis, a->ndims, &il->l->axis))
		return -EINVAL;
	memcpy(dims, a->dims, sizeof(dims));
	for (i = 1; i < il->l->nr_inputs; i++) {
		const struct model_shape *b = il->in[i];
		bool ok = b->ndims == a->ndims;

		for (d = 0; ok && d < a->ndims; d++)
			ok = d == il->l->axis || a->dims[d] == b->dims[d];
		if (!ok) {
			shape_format_shape(a, sa, sizeof(sa));
			shape_format_shape(b, sb, sizeof(sb));
			return shape_fail(il, "cannot concatenate %s and %s along axis %d", sa, sb,
					  il->l->axis);
		}
		dims[il->l->axis] += b->dims[il->l->axis];
	}
	return shape_set_out(il, a->ndims, dims);
}

static int shape_layer_norm(struct shape_layer *il)
{
	const struct model_shape *in = il->in[0];

	if (shape_float(il, "eps", false, 1e-30, 1.0, 1e-5, &il->l->eps))
		return -EINVAL;
	il->l->params = 2 * (uint64_t)in->dims[in->ndims - 1];
	return shape_same_shape(il);
}

static int shape_softmax(struct shape_layer *il)
{
	int64_t axis;

	if (shape_int(il, "axis", false, -MODEL_MAX_DIMS, MODEL_MAX_DIMS - 1, -1, &axis) ||
	    shape_normalize_axis(il, "axis", axis, il->in[0]->ndims, &il->l->axis))
		return -EINVAL;
	return shape_same_shape(il);
}

static int shape_lrn(struct shape_layer *il)
{
	struct model_lrn *lrn = &il->l->lrn;
	int64_t size;

	if (shape_need_ndims(il, 0, 4, 4) || shape_int(il, "size", true, 1, 255, 0, &size) ||
	    shape_float(il, "alpha", false, 0, 1e6, 1e-4, &lrn->alpha) ||
	    shape_float(il, "beta", false, 0, 1e6, 0.75, &lrn->beta) ||
	    shape_float(il, "k", false, 1e-9, 1e6, 1.0, &lrn->k))
		return -EINVAL;
	if (size % 2 == 0)
		return shape_fail(il, "size=%lld must be odd", (long long)size);
	lrn->size = (int)size;
	return shape_same_shape(il);
}

static int shape_reshape(struct shape_layer *il)
{
	struct model_shape *t = &il->l->reshape;
	int64_t dims[MODEL_MAX_DIMS], known = 1, in_elems = model_shape_elems(il->in[0]);
	int n, i, wild = -1;
	const char *s;
	char sa[128];
	int err;

	s = shape_value(il, "shape", true, &err);
	if (!s)
		return err;
	n = shape_int_list(il, "shape", s, 'x', -1, SHAPE_MAX_DIM, dims, MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (dims[i] == 0)
			return shape_fail(il, "shape=%s: dimensions must be >= 1 (or one -1)", s);
		if (dims[i] == -1) {
			if (wild >= 0)
				return shape_fail(il, "shape=%s: at most one -1", s);
			wild = i;
			continue;
		}
		known *= dims[i]; /* <= 2^32 * 2^24 before the check below: no overflow */
		if (known > SHAPE_MAX_ELEMS)
			return shape_fail(il, "shape=%s is too large", s);
	}
	if (wild >= 0) {
		if (in_elems % known)
			return shape_fail(il, "shape=%s does not divide %lld elements", s,
					  (long long)in_elems);
		dims[wild] = in_elems / known;
		known = in_elems;
	}
	if (known != in_elems) {
		shape_format_shape(il->in[0], sa, sizeof(sa));
		return shape_fail(il, "shape=%s holds %lld elements but the input %s holds %lld", s,
				  (long long)known, sa, (long long)in_elems);
	}
	if (shape_set_out(il, n, dims))
		return -EINVAL;
	*t = il->l->out;
	return 0;
}

static int shape_transpose(struct shape_layer *il)
{
	const struct model_shape *in = il->in[0];
	int64_t perm[MODEL_MAX_DIMS], dims[MODEL_MAX_DIMS];
	bool seen[MODEL_MAX_DIMS] = { false };
	const char *s;
	int n, i, err;

	s = shape_value(il, "perm", true, &err);
	if (!s)
		return err;
	n = shape_int_list(il, "perm", s, ',', 0, MODEL_MAX_DIMS - 1, perm, MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	if (n != in->ndims)
		return shape_fail(il, "perm=%s has %d entries but the input has %d dimensions", s,
				  n, in->ndims);
	for (i = 0; i < n; i++) {
		if (perm[i] >= n || seen[perm[i]])
			return shape_fail(il, "perm=%s is not a permutation of 0..%d", s, n - 1);
		seen[perm[i]] = true;
		il->l->perm[i] = (int)perm[i];
		dims[i] = in->dims[perm[i]];
	}
	return shape_set_out(il, n, dims);
}

static int shape_embed(struct shape_layer *il)
{
	struct model_embed *e = &il->l->embed;
	const struct model_shape *in = il->in[0];
	int64_t dims[3];

	if (shape_need_ndims(il, 0, 2, 2) ||
	    shape_int(il, "vocab", true, 1, SHAPE_MAX_DIM, 0, &e->vocab) ||
	    shape_int(il, "dim", true, 1, SHAPE_MAX_DIM, 0, &e->dim))
		return -EINVAL;
	dims[0] = in->dims[0];
	dims[1] = in->dims[1];
	dims[2] = e->dim;
	if (shape_set_out(il, 3, dims))
		return -EINVAL;
	return shape_product(il, &il->l->params, 2, (uint64_t)e->vocab, (uint64_t)e->dim);
}

static int shape_resize(struct shape_layer *il)
{
	const struct model_shape *in = il->in[0];
	int64_t dims[4], hw[2];
	const char *mode, *s;
	int err, n;

	if (shape_need_ndims(il, 0, 4, 4))
		return -EINVAL;
	mode = shape_value(il, "mode", true, &err);
	if (!mode)
		return err;
	if (strcmp(mode, "nearest") && strcmp(mode, "linear"))
		return shape_fail(il, "mode=%s: expected nearest or linear", mode);
	il->l->resize.linear = mode[0] == 'l';
	s = shape_value(il, "out", true, &err);
	if (!s)
		return err;
	n = shape_int_list(il, "out", s, 'x', 1, SHAPE_MAX_DIM, hw, 2);
	if (n < 0)
		return n;
	if (n != 2)
		return shape_fail(il, "out=%s: give the output's HxW", s);
	for (int i = 0; i < 2; i++)
		if (!il->l->resize.linear && hw[i] % in->dims[2 + i])
			return shape_fail(il,
					  "out=%s: nearest needs integer factors of the input's "
					  "%lldx%lld",
					  s, (long long)in->dims[2], (long long)in->dims[3]);
	dims[0] = in->dims[0];
	dims[1] = in->dims[1];
	dims[2] = hw[0];
	dims[3] = hw[1];
	return shape_set_out(il, 4, dims);
}

static const char *const shape_reduce_kinds[] = {
	[MODEL_REDUCE_MEAN] = "mean",
	[MODEL_REDUCE_MAX] = "max",
	[MODEL_REDUCE_MIN] = "min",
	[MODEL_REDUCE_SUM] = "sum",
};

static int shape_reduce(struct shape_layer *il)
{
	const struct model_shape *in = il->in[0];
	struct model_reduce *r = &il->l->reduce;
	int64_t axes[MODEL_MAX_DIMS], dims[MODEL_MAX_DIMS];
	const char *kind, *s;
	size_t k;
	int err, n, a = 0;

	kind = shape_value(il, "kind", true, &err);
	if (!kind)
		return err;
	for (k = 0; k < ARRAY_SIZE(shape_reduce_kinds); k++)
		if (!strcmp(kind, shape_reduce_kinds[k]))
			break;
	if (k == ARRAY_SIZE(shape_reduce_kinds))
		return shape_fail(il, "kind=%s: expected mean, max, min or sum", kind);
	r->kind = (enum model_reduce_kind)k;
	s = shape_value(il, "axes", true, &err);
	if (!s)
		return err;
	n = shape_int_list(il, "axes", s, ',', -MODEL_MAX_DIMS, MODEL_MAX_DIMS - 1, axes,
			   MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	memcpy(dims, in->dims, sizeof(dims));
	r->axes = 0;
	for (int i = 0; i < n; i++) {
		if (shape_normalize_axis(il, "axes", axes[i], in->ndims, &a))
			return -EINVAL;
		if (r->axes & (1u << a))
			return shape_fail(il, "axes=%s names axis %d twice", s, a);
		r->axes |= 1u << a;
		dims[a] = 1;
	}
	return shape_set_out(il, in->ndims, dims);
}

/* begin= and end=: one count per dim of the input, 'x'-separated. */
static int shape_pad_side(struct shape_layer *il, const char *key, int64_t *v)
{
	const char *s;
	int err, n;

	s = shape_value(il, key, true, &err);
	if (!s)
		return err;
	n = shape_int_list(il, key, s, 'x', 0, SHAPE_MAX_DIM, v, MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	if (n != il->in[0]->ndims)
		return shape_fail(il, "%s=%s has %d counts for %d dimensions", key, s, n,
				  il->in[0]->ndims);
	return 0;
}

static int shape_pad_op(struct shape_layer *il)
{
	struct model_pad *p = &il->l->pad;
	int64_t dims[MODEL_MAX_DIMS];

	if (shape_pad_side(il, "begin", p->begin) || shape_pad_side(il, "end", p->end) ||
	    shape_float(il, "value", false, -1e30, 1e30, 0, &p->value))
		return -EINVAL;
	for (int i = 0; i < il->in[0]->ndims; i++)
		dims[i] = il->in[0]->dims[i] + p->begin[i] + p->end[i];
	return shape_set_out(il, il->in[0]->ndims, dims);
}

static int shape_slice(struct shape_layer *il)
{
	struct model_slice *sl = &il->l->slice;
	const struct model_shape *in = il->in[0];
	int64_t axis, dims[MODEL_MAX_DIMS];

	if (shape_int(il, "axis", true, -MODEL_MAX_DIMS, MODEL_MAX_DIMS - 1, 0, &axis) ||
	    shape_normalize_axis(il, "axis", axis, in->ndims, &sl->axis) ||
	    shape_int(il, "start", false, 0, SHAPE_MAX_DIM, 0, &sl->start) ||
	    shape_int(il, "len", true, 1, SHAPE_MAX_DIM, 0, &sl->len))
		return -EINVAL;
	if (sl->start + sl->len > in->dims[sl->axis])
		return shape_fail(il, "[%lld, %lld) is outside axis %d of size %lld",
				  (long long)sl->start, (long long)(sl->start + sl->len), sl->axis,
				  (long long)in->dims[sl->axis]);
	memcpy(dims, in->dims, sizeof(dims));
	dims[sl->axis] = sl->len;
	return shape_set_out(il, in->ndims, dims);
}

static int shape_act(struct shape_layer *il)
{
	if (il->l->act == MODEL_ACT_NONE)
		return shape_fail(il,
				  "missing attribute 'act=' (relu, relu6, leaky_relu, "
				  "sigmoid, swish, gelu, tanh, hard_sigmoid, hard_swish, clip)");
	return shape_same_shape(il);
}

const struct shape_op shape_ops[MODEL_OP_COUNT] = {
	[MODEL_OP_INPUT] = { "input", 0, 0, false, shape_input },
	[MODEL_OP_CONV] = { "conv", 1, 1, true, shape_conv },
	[MODEL_OP_FC] = { "fc", 1, 1, true, shape_fc },
	[MODEL_OP_MATMUL] = { "matmul", 2, 2, false, shape_matmul },
	[MODEL_OP_POOL] = { "pool", 1, 1, false, shape_pool },
	[MODEL_OP_ACT] = { "act", 1, 1, true, shape_act },
	[MODEL_OP_ADD] = { "add", 1, 2, true, shape_broadcast },
	[MODEL_OP_MUL] = { "mul", 1, 2, true, shape_broadcast },
	[MODEL_OP_CONCAT] = { "concat", 2, MODEL_MAX_INPUTS, false, shape_concat },
	[MODEL_OP_LAYER_NORM] = { "layer_norm", 1, 1, false, shape_layer_norm },
	[MODEL_OP_SOFTMAX] = { "softmax", 1, 1, false, shape_softmax },
	[MODEL_OP_LRN] = { "lrn", 1, 1, false, shape_lrn },
	[MODEL_OP_RESHAPE] = { "reshape", 1, 1, false, shape_reshape },
	[MODEL_OP_TRANSPOSE] = { "transpose", 1, 1, false, shape_transpose },
	[MODEL_OP_EMBED] = { "embed", 1, 1, false, shape_embed },
	[MODEL_OP_SLICE] = { "slice", 1, 1, false, shape_slice },
	[MODEL_OP_SUB] = { "sub", 1, 2, true, shape_broadcast },
	[MODEL_OP_DIV] = { "div", 1, 2, true, shape_broadcast },
	[MODEL_OP_MAX] = { "max", 1, 2, true, shape_broadcast },
	[MODEL_OP_MIN] = { "min", 1, 2, true, shape_broadcast },
	[MODEL_OP_RESIZE] = { "resize", 1, 1, false, shape_resize },
	[MODEL_OP_DECONV] = { "deconv", 1, 1, true, shape_deconv },
	[MODEL_OP_REDUCE] = { "reduce", 1, 1, false, shape_reduce },
	[MODEL_OP_PAD] = { "pad", 1, 1, false, shape_pad_op },
	[MODEL_OP_LOG] = { "log", 1, 1, false, shape_same_shape },
};
