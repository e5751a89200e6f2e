// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Lowering of ONNX nodes into coloc layers, one function per op, looked up
 * in a table. The fusions happen here, as a node meets the layer computing
 * its input: BatchNormalization folds into the Conv or ConvTranspose before
 * it (weights scaled, bias shifted, in double precision); an activation
 * becomes the fused act= of a conv, deconv, fc or binary op; a constant Add
 * after MatMul/Gemm or a conv becomes its bias. A fusion is done only when
 * that layer's value has no other reader, node or layer. A constant operand
 * that fuses nowhere becomes the constant of a binary layer. Whatever has no
 * exact coloc equivalent is refused with onnx_refuse(), which names the
 * node, its op, the opset and its inputs.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"
#include "window.h"

static struct onnx_value *data_input(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i)
{
	struct onnx_value *v = onnx_input(c, n, i);

	if (!v || v->layer < 0)
		return NULL;
	return v;
}

static struct onnx_value *const_input(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i)
{
	struct onnx_value *v = onnx_input(c, n, i);

	return v && v->data ? v : NULL;
}

/* The layer computing v: for a 1-D window's view, the 2-D layer it aliases. */
static struct onnx_layer *layer_of(struct onnx_ctx *c, const struct onnx_value *v)
{
	struct onnx_layer *l = &c->layers[v->layer];

	return l->view_1d ? &c->layers[l->l.inputs[0]] : l;
}

/*
 * Whether v's layer can take a fusion: this node is the only reader left of
 * v's layer (a view's 2-D layer has the view as its only reader).
 */
static bool fusible(struct onnx_ctx *c, const struct onnx_value *v)
{
	return v->layer >= 0 && c->layers[v->layer].uses == 1 && !c->layers[v->layer].read &&
	       layer_of(c, v)->l.op != MODEL_OP_INPUT;
}

static const char *node_label(const Onnx__NodeProto *n)
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
static int bind_output(struct onnx_ctx *c, const Onnx__NodeProto *n, int idx,
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
static int new_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, enum model_op op,
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
	ret = onnx_layer_add(c, op, node_label(n), &l);
	if (ret)
		return ret;
	l->l.nr_inputs = nr;
	for (int i = 0; i < nr; i++)
		l->l.inputs[i] = ins[i]->layer;
	l->l.out = *out;
	if (!out->ndims)
		l->l.out = (struct model_shape){ .ndims = 1, .dims = { 1 } };
	*lp = l;
	return bind_output(c, n, c->nr_layers - 1, out);
}

static int alias(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *v)
{
	return bind_output(c, n, v->layer, &v->shape);
}

/* Extra outputs (a Dropout mask, MaxPool indices, LayerNorm mean) must be unread. */
static int only_first_output(struct onnx_ctx *c, const Onnx__NodeProto *n)
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

static float *to_floats(struct onnx_ctx *c, const double *d, int64_t n, double scale)
{
	float *f = malloc((size_t)(n ? n : 1) * sizeof(float));

	if (!f) {
		coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++)
		f[i] = (float)(d[i] * scale);
	return f;
}

/*
 * The explicit pads of a window of nd (1 or 2) spatial dims, as [t, l, b, r]:
 * ONNX orders them [h_begin, w_begin, h_end, w_end], or [w_begin, w_end] in
 * 1-D, which runs with H = 1 and no padding along it.
 */
static int explicit_pads(struct onnx_ctx *c, const Onnx__NodeProto *n, int nd, int *pads)
{
	int64_t p[4];
	int nr, ret = onnx_attr_ints(c, n, "pads", p, 4, &nr);

	if (ret)
		return ret;
	if (nr >= 0 && nr != 2 * nd)
		return onnx_refuse(c, -EINVAL, "pads has %d values, expected %d", nr, 2 * nd);
	memset(pads, 0, 4 * sizeof(int));
	for (int i = 0; i < 2 * nd && nr >= 0; i++) {
		if (p[i] < 0 || p[i] > MODEL_MAX_WINDOW)
			return onnx_refuse(c, -EOPNOTSUPP, "pad %lld (0..%d)", (long long)p[i],
					   MODEL_MAX_WINDOW);
		pads[nd == 2 ? i : 1 + 2 * i] = (int)p[i];
	}
	return 0;
}

/*
 * The auto_pad rules of Conv and the pools, into explicit [t, l, b, r]; in_hw,
 * k, s and d are 2-D (a 1-D window has H = 1, kernel, stride and dilation 1).
 */
static int window_pads(struct onnx_ctx *c, const Onnx__NodeProto *n, int nd, const int64_t *in_hw,
		       const int *k, const int *s, const int *d, int *pads)
{
	char buf[16];
	const char *ap = onnx_attr_str(n, "auto_pad", buf, sizeof(buf), "NOTSET");

	if (!strcmp(ap, "NOTSET"))
		return explicit_pads(c, n, nd, pads);
	if (!strcmp(ap, "VALID")) {
		memset(pads, 0, 4 * sizeof(int));
		return 0;
	}
	if (strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER"))
		return onnx_refuse(c, -EINVAL, "auto_pad '%s'", ap);
	for (int i = 0; i < 2; i++) {
		int64_t total =
			window_same_pad_total(in_hw[i], (int64_t)(k[i] - 1) * d[i] + 1, s[i]);

		if (total > 2 * MODEL_MAX_WINDOW)
			return onnx_refuse(c, -EOPNOTSUPP, "padding %lld", (long long)total);
		pads[i] = (int)(ap[5] == 'U' ? total / 2 : total - total / 2);
		pads[i + 2] = (int)total - pads[i];
	}
	return 0;
}

/*
 * A window attribute of nd (1 or 2) values, each in 1..MODEL_MAX_WINDOW, as 2 values
 * [h, w]: a 1-D window's h is 1 when the attribute is given, def when absent.
 */
static int window_attr(struct onnx_ctx *c, const Onnx__NodeProto *n, const char *name, int nd,
		       int def, int *v)
{
	int64_t a[2];
	int nr, ret = onnx_attr_ints(c, n, name, a, 2, &nr);

	if (ret)
		return ret;
	if (nr >= 0 && nr != nd)
		return onnx_refuse(c, -EOPNOTSUPP, "%s has %d values for a %d-D window", name, nr,
				   nd);
	for (int i = 0; i < nd; i++)
		if (nr >= 0 && (a[i] < 1 || a[i] > MODEL_MAX_WINDOW))
			return onnx_refuse(c, -EOPNOTSUPP, "%s %lld (1..%d)", name, (long long)a[i],
					   MODEL_MAX_WINDOW);
	v[0] = nr < 0 ? def : nd == 1 ? 1 : (int)a[0];
	v[1] = nr < 0 ? def : (int)a[nd - 1];
	return 0;
}

/*
 * A 1-D window (Conv, ConvTranspose, the pools on [N, C, W]) runs as the
 * 2-D one on [N, C, 1, W]: a reshape layer (an alias, no copy) views the
 * input as 4-D, and spatial_1d_out() views the result back as 3-D.
 */
static int view_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, int in,
		      const struct model_shape *s, const char *what, int *idx)
{
	char name[512];
	struct onnx_layer *l;
	int ret;

	/* the suffix is kept: onnx_layer_add() cuts long names at the front */
	snprintf(name, sizeof(name), "%.400s_as%s", node_label(n), what);
	ret = onnx_layer_add(c, MODEL_OP_RESHAPE, name, &l);
	if (ret)
		return ret;
	l->l.nr_inputs = 1;
	l->l.inputs[0] = in;
	l->l.out = *s;
	l->l.reshape = *s;
	snprintf(l->origin, sizeof(l->origin), "%.40s '%.64s' (viewed as %s)", n->op_type,
		 node_label(n), what);
	*idx = c->nr_layers - 1;
	return 0;
}

/* x4: x [N, C, W] viewed as [N, C, 1, W] by a new reshape layer. */
static int spatial_1d_in(struct onnx_ctx *c, const Onnx__NodeProto *n, const struct onnx_value *x,
			 struct onnx_value *x4)
{
	int in = x->layer;

	*x4 = *x;
	x4->shape.ndims = 4;
	x4->shape.dims[3] = x4->shape.dims[2];
	x4->shape.dims[2] = 1;
	return view_layer(c, n, in, &x4->shape, "2d", &x4->layer);
}

/*
 * The node's output, bound to the 2-D layer [N, C, 1, W] just made, rebound
 * to a view of it as [N, C, W]; the 2-D layer's only reader is the view.
 */
static int spatial_1d_out(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *v =
		n->n_output && n->output[0][0] ? onnx_value_find(c, n->output[0]) : NULL;
	struct model_shape s;
	int inner, ret;

	if (!v || v->layer < 0)
		return 0;
	inner = v->layer;
	s = v->shape;
	s.ndims = 3;
	s.dims[2] = s.dims[3];
	ret = view_layer(c, n, inner, &s, "1d", &v->layer);
	if (ret)
		return ret;
	c->layers[v->layer].uses = v->uses;
	c->layers[v->layer].view_1d = true;
	c->layers[inner].uses = 0;
	v->shape = s;
	return 0;
}

/*
 * *nd, the spatial rank of a window op: 2 for a 4-D x (and w), 1 for a 3-D
 * one, whose x and w are then replaced by their 4-D views x4 and w4.
 */
static int window_rank(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value **x,
		       struct onnx_value *x4, struct onnx_value **w, struct onnx_value *w4, int *nd)
{
	int r = (*x)->shape.ndims;

	if ((r != 3 && r != 4) || (w && (*w)->shape.ndims != r))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "only 1-D and 2-D windows (a 3-D or 4-D input%s)",
				   w ? " and weights of its rank" : "");
	*nd = r - 2;
	if (r == 4)
		return 0;
	if (w) {
		*w4 = **w;
		w4->shape.ndims = 4;
		w4->shape.dims[3] = w4->shape.dims[2];
		w4->shape.dims[2] = 1;
		*w = w4;
	}
	*x4 = **x;
	*x = x4;
	return spatial_1d_in(c, n, x4, x4);
}

/* A conv or deconv layer with its window, and the weights and bias of w and b. */
static int conv_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, enum model_op op,
		      struct onnx_value *x, const struct model_shape *out, struct onnx_value *w,
		      struct onnx_value *b, const int *k, const int *s, const int *d,
		      const int *pads, int64_t g)
{
	struct onnx_layer *l;
	int ret = new_layer(c, n, op, &x, 1, out, &l);

	if (ret)
		return ret;
	l->l.conv = (struct model_conv){ .out_channels = out->dims[1],
					 .kh = k[0],
					 .kw = k[1],
					 .stride_h = s[0],
					 .stride_w = s[1],
					 .pad_t = pads[0],
					 .pad_l = pads[1],
					 .pad_b = pads[2],
					 .pad_r = pads[3],
					 .dil_h = d[0],
					 .dil_w = d[1],
					 .groups = g,
					 .bias = b != NULL };
	l->nt[0] = onnx_elems(&w->shape);
	l->t[0] = to_floats(c, w->data, l->nt[0], 1.0);
	if (!l->t[0])
		return -ENOMEM;
	if (b) {
		l->nt[1] = out->dims[1];
		l->t[1] = to_floats(c, b->data, l->nt[1], 1.0);
		if (!l->t[1])
			return -ENOMEM;
	}
	return 0;
}

static int lower_conv(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0), *w = const_input(c, n, 1),
			  *b = const_input(c, n, 2);
	int k[2], s[2], d[2], pads[4], ks[2] = { 0, 0 }, nd, ret;
	struct onnx_value x4, w4;
	struct model_shape out;
	int64_t g;

	if (!x || !w || (onnx_input(c, n, 2) && !b))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Conv needs a computed input and constant weights "
				   "(and bias)");
	ret = window_rank(c, n, &x, &x4, &w, &w4, &nd);
	if (!ret)
		ret = onnx_attr_int(c, n, "group", 1, &g);
	if (ret)
		return ret;
	if (g < 1 || x->shape.dims[1] % g || w->shape.dims[0] % g ||
	    w->shape.dims[1] * g != x->shape.dims[1])
		return onnx_refuse(c, -EINVAL,
				   "weights [OC, IC/group, kh, kw] do not fit %lld input "
				   "channels and group %lld",
				   (long long)x->shape.dims[1], (long long)g);
	if (b && onnx_elems(&b->shape) != w->shape.dims[0])
		return onnx_refuse(c, -EINVAL,
				   "the bias does not have one value per output channel");
	if (w->shape.dims[2] > MODEL_MAX_WINDOW || w->shape.dims[3] > MODEL_MAX_WINDOW ||
	    w->shape.dims[2] < 1 || w->shape.dims[3] < 1)
		return onnx_refuse(c, -EOPNOTSUPP, "kernel larger than %d", MODEL_MAX_WINDOW);
	k[0] = (int)w->shape.dims[2];
	k[1] = (int)w->shape.dims[3];
	ret = window_attr(c, n, "kernel_shape", nd, 0, ks);
	if (!ret && ks[0] && (ks[0] != k[0] || ks[1] != k[1]))
		return onnx_refuse(c, -EINVAL, "kernel_shape differs from the weights' shape");
	if (!ret)
		ret = window_attr(c, n, "strides", nd, 1, s);
	if (!ret)
		ret = window_attr(c, n, "dilations", nd, 1, d);
	if (!ret)
		ret = window_pads(c, n, nd, &x->shape.dims[2], k, s, d, pads);
	if (ret)
		return ret;
	out.ndims = 4;
	out.dims[0] = x->shape.dims[0];
	out.dims[1] = w->shape.dims[0];
	for (int i = 0; i < 2; i++) {
		int64_t padded = x->shape.dims[2 + i] + pads[i] + pads[i + 2];
		int64_t k_eff = (int64_t)d[i] * (k[i] - 1) + 1;

		if (padded < k_eff)
			return onnx_refuse(c, -EINVAL,
					   "the kernel is larger than the padded input");
		out.dims[2 + i] = window_out_len(padded, k_eff, s[i]);
	}
	ret = conv_layer(c, n, MODEL_OP_CONV, x, &out, w, b, k, s, d, pads, g);
	return ret || nd == 2 ? ret : spatial_1d_out(c, n);
}

/* ConvTranspose: 1-D or 2-D, constant W [IC, OC/group, (kh,) kw] and B, explicit pads only. */
static int lower_conv_transpose(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0), *w = const_input(c, n, 1),
			  *b = const_input(c, n, 2);
	int k[2], s[2], d[2], pads[4], nd, nr, ret;
	struct onnx_value x4, w4;
	struct model_shape out;
	int64_t g, os[2];
	bool op = false;
	char buf[16];

	if (!x || !w || (onnx_input(c, n, 2) && !b))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "ConvTranspose needs a computed input and constant "
				   "weights (and bias)");
	ret = window_rank(c, n, &x, &x4, &w, &w4, &nd);
	if (!ret)
		ret = onnx_attr_int(c, n, "group", 1, &g);
	if (!ret)
		ret = window_attr(c, n, "strides", nd, 1, s);
	if (!ret)
		ret = window_attr(c, n, "dilations", nd, 1, d);
	if (!ret)
		ret = onnx_attr_ints(c, n, "output_padding", os, 2, &nr);
	if (ret)
		return ret;
	for (int i = 0; i < nr; i++)
		op = op || os[i];
	if (op || onnx_attr(n, "output_shape") ||
	    strcmp(onnx_attr_str(n, "auto_pad", buf, sizeof(buf), "NOTSET"), "NOTSET"))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "output_padding, output_shape and auto_pad (coloc's deconv "
				   "takes explicit pads)");
	ret = explicit_pads(c, n, nd, pads);
	if (ret)
		return ret;
	if (g < 1 || x->shape.dims[1] != w->shape.dims[0] || x->shape.dims[1] % g)
		return onnx_refuse(c, -EINVAL,
				   "weights [IC, OC/group, kh, kw] do not fit %lld input "
				   "channels and group %lld",
				   (long long)x->shape.dims[1], (long long)g);
	if (w->shape.dims[2] < 1 || w->shape.dims[2] > MODEL_MAX_WINDOW || w->shape.dims[3] < 1 ||
	    w->shape.dims[3] > MODEL_MAX_WINDOW)
		return onnx_refuse(c, -EOPNOTSUPP, "kernel larger than %d", MODEL_MAX_WINDOW);
	k[0] = (int)w->shape.dims[2];
	k[1] = (int)w->shape.dims[3];
	out.ndims = 4;
	out.dims[0] = x->shape.dims[0];
	out.dims[1] = w->shape.dims[1] * g;
	if (b && onnx_elems(&b->shape) != out.dims[1])
		return onnx_refuse(c, -EINVAL,
				   "the bias does not have one value per output channel");
	for (int i = 0; i < 2; i++) {
		out.dims[2 + i] = (x->shape.dims[2 + i] - 1) * s[i] - pads[i] - pads[i + 2] +
				  (int64_t)d[i] * (k[i] - 1) + 1;
		if (out.dims[2 + i] < 1)
			return onnx_refuse(c, -EINVAL, "the padding is larger than the output");
	}
	ret = conv_layer(c, n, MODEL_OP_DECONV, x, &out, w, b, k, s, d, pads, g);
	return ret || nd == 2 ? ret : spatial_1d_out(c, n);
}

/*
 * A batch norm that follows no conv: y = x * scale + shift per channel
 * (dim 1), scale = gamma / sqrt(var + eps), shift = beta - mean * scale in
 * double, as a mul and an add of constants [C, 1, ...].
 */
static int standalone_batch_norm(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *x,
				 struct onnx_value **p, float eps)
{
	int64_t ch = x->shape.dims[1];
	struct model_shape cs = { .ndims = x->shape.ndims - 1 };
	struct onnx_value mid = { .shape = x->shape };
	struct onnx_layer *l;
	int ret;

	cs.dims[0] = ch;
	for (int i = 1; i < cs.ndims; i++)
		cs.dims[i] = 1;
	ret = onnx_layer_add(c, MODEL_OP_MUL, node_label(n), &l);
	if (ret)
		return ret;
	l->l.nr_inputs = 1;
	l->l.inputs[0] = x->layer;
	l->l.out = x->shape;
	l->l.binary = (struct model_binary){ .has_const = true, .cshape = cs };
	l->uses = 1; /* the add below */
	snprintf(l->origin, sizeof(l->origin), "BatchNormalization '%.64s' (scale)", node_label(n));
	mid.layer = c->nr_layers - 1;
	l->nt[0] = ch;
	l->t[0] = malloc((size_t)ch * sizeof(float));
	if (!l->t[0])
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	for (int64_t o = 0; o < ch; o++)
		l->t[0][o] = (float)(p[0]->data[o] / sqrt(p[3]->data[o] + eps));
	{
		struct onnx_value *in = &mid;

		ret = new_layer(c, n, MODEL_OP_ADD, &in, 1, &x->shape, &l);
	}
	if (ret)
		return ret;
	l->l.binary = (struct model_binary){ .has_const = true, .cshape = cs };
	l->nt[0] = ch;
	l->t[0] = malloc((size_t)ch * sizeof(float));
	if (!l->t[0])
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	for (int64_t o = 0; o < ch; o++)
		l->t[0][o] = (float)(p[1]->data[o] -
				     p[2]->data[o] * (p[0]->data[o] / sqrt(p[3]->data[o] + eps)));
	return 0;
}

/*
 * y = (x - mean) * scale / sqrt(var + eps) + beta, folded into the weights
 * and bias of the conv or deconv before it when nothing else reads that,
 * else a standalone scale and shift.
 */
static int lower_batch_norm(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0), *p[4];
	struct onnx_layer *l;
	int64_t oc, per, training;
	float eps;
	int ret = onnx_attr_float(c, n, "epsilon", 1e-5f, &eps);

	if (!ret)
		ret = onnx_attr_int(c, n, "training_mode", 0, &training);
	if (!ret)
		ret = only_first_output(c, n);
	if (ret)
		return ret;
	if (training)
		return onnx_refuse(c, -EOPNOTSUPP, "training_mode=1");
	if (!x || x->shape.ndims < 2)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "BatchNormalization of a computed tensor with channels in "
				   "dim 1");
	for (int i = 0; i < 4; i++) {
		p[i] = const_input(c, n, (size_t)i + 1);
		if (!p[i] || onnx_elems(&p[i]->shape) != x->shape.dims[1])
			return onnx_refuse(c, -EINVAL,
					   "scale, B, mean and var must be constants of %lld "
					   "values",
					   (long long)x->shape.dims[1]);
	}
	for (int64_t o = 0; o < x->shape.dims[1]; o++)
		if (!(p[3]->data[o] + eps > 0))
			return onnx_refuse(c, -EINVAL,
					   "variance + epsilon of channel %lld is not "
					   "positive",
					   (long long)o);
	l = layer_of(c, x);
	if (!fusible(c, x) || (l->l.op != MODEL_OP_CONV && l->l.op != MODEL_OP_DECONV) ||
	    l->l.act != MODEL_ACT_NONE)
		return standalone_batch_norm(c, n, x, p, eps);
	oc = l->l.conv.out_channels;
	if (!l->t[1]) {
		l->t[1] = calloc((size_t)oc, sizeof(float));
		if (!l->t[1])
			return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
		l->nt[1] = oc;
		l->l.conv.bias = true;
	}
	/* conv weights [OC][IC/g][kh][kw]; deconv [IC][OC/g][kh][kw] */
	per = l->nt[0] / oc;
	for (int64_t i = 0; i < l->nt[0]; i++) {
		int64_t o = i / per, ocg = oc / l->l.conv.groups;

		if (l->l.op == MODEL_OP_DECONV) {
			int64_t kk = (int64_t)l->l.conv.kh * l->l.conv.kw;
			int64_t icg = l->nt[0] / (ocg * kk) / l->l.conv.groups;

			o = i / (ocg * kk) / icg * ocg + i / kk % ocg;
		}
		l->t[0][i] = (float)(l->t[0][i] * (p[0]->data[o] / sqrt(p[3]->data[o] + eps)));
	}
	for (int64_t o = 0; o < oc; o++) {
		double sc = p[0]->data[o] / sqrt(p[3]->data[o] + eps);

		l->t[1][o] = (float)((l->t[1][o] - p[2]->data[o]) * sc + p[1]->data[o]);
	}
	snprintf(l->origin + strlen(l->origin), sizeof(l->origin) - strlen(l->origin),
		 " + BatchNormalization");
	return alias(c, n, x);
}

static int const_binary(struct onnx_ctx *c, const Onnx__NodeProto *n, enum model_op op,
			struct onnx_value *x, struct onnx_value *k, bool const_first);

static bool broadcasts_onto(const struct model_shape *b, const struct model_shape *a);

/*
 * Clip with a bound computed at run time (openWakeWord's melspectrogram
 * floors its dB at max - 80, the max a ReduceMax of the same input): a max
 * of x and the computed min, or a min of x and the computed max, when the
 * other bound is absent or the infinity on its side (a constant); the
 * bound, a scalar by ONNX's definition, broadcasts onto x.
 */
static int clip_by_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *x,
			 struct onnx_value *a, struct onnx_value *b)
{
	struct onnx_value *bound = a && a->layer >= 0 ? a : b, *other = bound == a ? b : a,
			  *ins[2] = { x, bound };
	struct onnx_layer *l;
	double open = bound == a ? INFINITY : -INFINITY;

	if (other && (!other->data || onnx_elems(&other->shape) != 1 || other->data[0] != open))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Clip with a computed bound and another bound (coloc lowers a "
				   "computed min or max alone to a max or min layer)");
	if (onnx_elems(&bound->shape) != 1 || !broadcasts_onto(&bound->shape, &x->shape))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "a computed Clip bound must be one value that broadcasts "
				   "onto the input");
	return new_layer(c, n, bound == a ? MODEL_OP_MAX : MODEL_OP_MIN, ins, 2, &x->shape, &l);
}

static int lower_act(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0);
	enum model_act act;
	float alpha = 0, beta = 0;
	struct onnx_layer *l;
	int ret = 0;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	if (!strcmp(n->op_type, "Relu")) {
		act = MODEL_ACT_RELU;
	} else if (!strcmp(n->op_type, "Sigmoid")) {
		act = MODEL_ACT_SIGMOID;
	} else if (!strcmp(n->op_type, "Tanh")) {
		act = MODEL_ACT_TANH;
	} else if (!strcmp(n->op_type, "HardSwish")) {
		act = MODEL_ACT_HARD_SWISH;
	} else if (!strcmp(n->op_type, "HardSigmoid")) {
		act = MODEL_ACT_HARD_SIGMOID;
		ret = onnx_attr_float(c, n, "alpha", 0.2f, &alpha);
		if (!ret)
			ret = onnx_attr_float(c, n, "beta", 0.5f, &beta);
	} else if (!strcmp(n->op_type, "LeakyRelu")) {
		act = MODEL_ACT_LEAKY_RELU;
		ret = onnx_attr_float(c, n, "alpha", 0.01f, &alpha);
		if (!ret && !(alpha > 0 && alpha <= 1))
			return onnx_refuse(c, -EOPNOTSUPP, "alpha %g (coloc's slope is in (0, 1])",
					   alpha);
	} else {
		float lo = -INFINITY, hi = INFINITY;
		struct onnx_value *a = onnx_input(c, n, 1), *b = onnx_input(c, n, 2);

		if (c->opset >= 11 && ((a && a->layer >= 0) || (b && b->layer >= 0)))
			return clip_by_layer(c, n, x, a, b);
		if (c->opset < 11) {
			ret = onnx_attr_float(c, n, "min", -INFINITY, &lo);
			if (!ret)
				ret = onnx_attr_float(c, n, "max", INFINITY, &hi);
		} else if ((a && (!a->data || onnx_elems(&a->shape) != 1)) ||
			   (b && (!b->data || onnx_elems(&b->shape) != 1))) {
			return onnx_refuse(c, -EOPNOTSUPP, "Clip bounds must be constant scalars");
		} else {
			lo = a ? (float)a->data[0] : lo;
			hi = b ? (float)b->data[0] : hi;
		}
		if (ret)
			return ret;
		if (lo == 0 && hi == 6) {
			act = MODEL_ACT_RELU6;
		} else if (lo == 0 && isinf(hi) && hi > 0) {
			act = MODEL_ACT_RELU;
		} else if (isinf(lo) || isinf(hi)) {
			/* one open bound: a max or min with the other (both open: nothing) */
			double bound = isinf(hi) ? lo : hi;
			struct onnx_value k = { .data = &bound };

			if (isinf(lo) && isinf(hi))
				return alias(c, n, x);
			return const_binary(c, n, isinf(hi) ? MODEL_OP_MAX : MODEL_OP_MIN, x, &k,
					    false);
		} else if (lo <= hi && fabsf(lo) <= 1e30f && fabsf(hi) <= 1e30f) {
			act = MODEL_ACT_CLIP;
			alpha = lo;
			beta = hi;
		} else {
			return onnx_refuse(c, -EOPNOTSUPP,
					   "Clip's min is above its max, or a bound is beyond "
					   "+-1e30");
		}
	}
	if (ret)
		return ret;
	l = layer_of(c, x);
	if (fusible(c, x) && l->l.act == MODEL_ACT_NONE && onnx_takes_act(l->l.op)) {
		l->l.act = act;
		l->l.act_alpha = alpha;
		l->l.act_beta = beta;
		snprintf(l->origin + strlen(l->origin), sizeof(l->origin) - strlen(l->origin),
			 " + %.16s", n->op_type);
		return alias(c, n, x);
	}
	ret = new_layer(c, n, MODEL_OP_ACT, &x, 1, &x->shape, &l);
	if (!ret) {
		l->l.act = act;
		l->l.act_alpha = alpha;
		l->l.act_beta = beta;
	}
	return ret;
}

/* Whether b broadcasts numpy-style onto exactly a's shape. */
static bool broadcasts_onto(const struct model_shape *b, const struct model_shape *a)
{
	if (b->ndims > a->ndims)
		return false;
	for (int i = 0; i < b->ndims; i++) {
		int64_t db = b->dims[b->ndims - 1 - i], da = a->dims[a->ndims - 1 - i];

		if (db != da && db != 1)
			return false;
	}
	return true;
}

/* The one dim of s that is not 1, counted from the end (0 = last); -1 if none or several. */
static int single_dim_from_end(const struct model_shape *s)
{
	int at = -1;

	for (int i = 0; i < s->ndims; i++)
		if (s->dims[i] != 1) {
			if (at >= 0)
				return -1;
			at = s->ndims - 1 - i;
		}
	return at;
}

/*
 * Add of a constant: the bias of the fc or conv before it, if it fits
 * exactly; 1 if it does not (the caller then makes a layer of it).
 */
static int fuse_bias(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *x,
		     struct onnx_value *k, double sign)
{
	struct onnx_layer *l = layer_of(c, x);
	int64_t nb = 0;
	int at = single_dim_from_end(&k->shape);

	if (fusible(c, x) && l->l.act == MODEL_ACT_NONE && k->shape.ndims <= x->shape.ndims) {
		if (l->l.op == MODEL_OP_FC && at == 0)
			nb = l->l.fc.out_features;
		else if ((l->l.op == MODEL_OP_CONV || l->l.op == MODEL_OP_DECONV) &&
			 at == x->shape.ndims - 2 && k->shape.ndims >= x->shape.ndims - 1)
			nb = l->l.conv.out_channels;
	}
	if (!nb || onnx_elems(&k->shape) != nb)
		return 1;
	if (!l->t[1]) {
		l->t[1] = calloc((size_t)nb, sizeof(float));
		if (!l->t[1])
			return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
		l->nt[1] = nb;
	}
	for (int64_t i = 0; i < nb; i++)
		l->t[1][i] = (float)(l->t[1][i] + sign * k->data[i]);
	if (l->l.op == MODEL_OP_FC)
		l->l.fc.bias = true;
	else
		l->l.conv.bias = true;
	snprintf(l->origin + strlen(l->origin), sizeof(l->origin) - strlen(l->origin), " + %.8s",
		 n->op_type);
	return alias(c, n, x);
}

/*
 * Mul or Div by a constant scalar, or by one constant per output channel:
 * folded into the weights and bias of the fc or conv before it (or into a
 * matmul's alpha for a scalar), where it is exact up to rounding; 1 if it
 * does not fit (the caller then makes a layer of it).
 */
static int fuse_scale(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *x,
		      struct onnx_value *k, bool divide)
{
	struct onnx_layer *l = layer_of(c, x);
	int64_t nk = onnx_elems(&k->shape), nout = 0, per;
	int at = single_dim_from_end(&k->shape);
	bool ok = fusible(c, x) && l->l.act == MODEL_ACT_NONE && k->shape.ndims <= x->shape.ndims;

	if (ok && l->l.op == MODEL_OP_FC && (nk == 1 || at == 0))
		nout = l->l.fc.out_features;
	else if (ok && l->l.op == MODEL_OP_CONV &&
		 (nk == 1 || (at == x->shape.ndims - 2 && k->shape.ndims >= x->shape.ndims - 1)))
		nout = l->l.conv.out_channels;
	else if (ok && l->l.op == MODEL_OP_MATMUL && nk == 1)
		nout = 1;
	if (!nout || (nk != 1 && nk != nout))
		return 1;
	for (int64_t i = 0; i < nk; i++)
		if (divide && k->data[i] == 0)
			return onnx_refuse(c, -EINVAL, "division by a constant 0");
	if (l->l.op == MODEL_OP_MATMUL) {
		l->l.matmul.alpha = (float)(divide ? l->l.matmul.alpha / k->data[0] :
						     l->l.matmul.alpha * k->data[0]);
	} else {
		/* fc weights are [K][N] (channel fastest), conv weights [OC][...] */
		per = l->nt[0] / nout;
		for (int64_t i = 0; i < l->nt[0]; i++) {
			int64_t ch = l->l.op == MODEL_OP_FC ? i % nout : i / per;
			double f = k->data[nk == 1 ? 0 : ch];

			l->t[0][i] = (float)(divide ? l->t[0][i] / f : l->t[0][i] * f);
		}
		for (int64_t i = 0; l->t[1] && i < nout; i++) {
			double f = k->data[nk == 1 ? 0 : i];

			l->t[1][i] = (float)(divide ? l->t[1][i] / f : l->t[1][i] * f);
		}
	}
	snprintf(l->origin + strlen(l->origin), sizeof(l->origin) - strlen(l->origin), " + %.8s",
		 n->op_type);
	return alias(c, n, x);
}

/* x op k with k constant (k op x when const_first): a binary layer holding k. */
static int const_binary(struct onnx_ctx *c, const Onnx__NodeProto *n, enum model_op op,
			struct onnx_value *x, struct onnx_value *k, bool const_first)
{
	struct onnx_layer *l;
	struct model_shape ks = k->shape;
	int ret;

	if (const_first && op == MODEL_OP_DIV)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Div of a constant by a computed tensor (coloc's div "
				   "divides a tensor by a constant or by another tensor)");
	if (!broadcasts_onto(&k->shape, &x->shape))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "the constant does not broadcast onto the computed "
				   "input's shape (coloc's result has the shape of its first "
				   "input)");
	if (!ks.ndims) {
		ks.ndims = 1;
		ks.dims[0] = 1;
	}
	ret = new_layer(c, n, op, &x, 1, &x->shape, &l);
	if (ret)
		return ret;
	l->l.binary = (struct model_binary){ .has_const = true,
					     .const_first = const_first,
					     .cshape = ks };
	l->nt[0] = onnx_elems(&ks);
	l->t[0] = to_floats(c, k->data, l->nt[0], 1.0);
	return l->t[0] ? 0 : -ENOMEM;
}

static const struct {
	const char *type;
	enum model_op op;
	bool commutes;
} binary_ops[] = {
	{ "Add", MODEL_OP_ADD, true },	{ "Mul", MODEL_OP_MUL, true },
	{ "Sub", MODEL_OP_SUB, false }, { "Div", MODEL_OP_DIV, false },
	{ "Max", MODEL_OP_MAX, true },	{ "Min", MODEL_OP_MIN, true },
};

/*
 * x - 0, x * 1 (either side) and x / 1 are x itself, bit for bit, when the
 * constant broadcasts onto x (so the shape stays x's): melspectrogram's
 * Sub of 0 makes no layer. x - (-0) and x + 0 are not (-0 + 0 is +0).
 */
static bool identity_const(const char *op, const struct onnx_value *x, const struct onnx_value *k,
			   bool k_second)
{
	int64_t nk = onnx_elems(&k->shape);
	double id;

	if (!strcmp(op, "Mul") || (!strcmp(op, "Div") && k_second))
		id = 1.0;
	else if (!strcmp(op, "Sub") && k_second)
		id = 0.0;
	else
		return false;
	if (!broadcasts_onto(&k->shape, &x->shape))
		return false;
	for (int64_t i = 0; i < nk; i++)
		if (k->data[i] != id || signbit(k->data[i]))
			return false;
	return true;
}

/*
 * Add, Mul, Sub, Div, Max, Min. A constant operand folds into the layer
 * before it where it can (a bias or a scale), else becomes the constant of
 * a binary layer; two computed operands make a binary layer, the one that
 * broadcasts second (swapped only for the ops that commute).
 */
static int lower_binary(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *a = onnx_input(c, n, 0), *b = onnx_input(c, n, 1), *ins[2];
	struct onnx_layer *l;
	size_t t = 0;
	int ret = 1;

	while (strcmp(binary_ops[t].type, n->op_type))
		t++;
	if (n->n_input == 1 && a && a->layer >= 0)
		return alias(c, n, a); /* Max or Min of one tensor */
	if (!a || !b || n->n_input != 2)
		return onnx_refuse(c, -EOPNOTSUPP, "two inputs expected");
	if (a->data && b->data)
		return onnx_refuse(c, -EOPNOTSUPP, "%s of two constants is not folded", n->op_type);
	if (a->data || b->data) {
		struct onnx_value *x = a->data ? b : a, *k = a->data ? a : b;

		if (identity_const(n->op_type, x, k, k == b))
			return alias(c, n, x);
		if (!strcmp(n->op_type, "Add") || (!strcmp(n->op_type, "Sub") && k == b))
			ret = fuse_bias(c, n, x, k, k == b && n->op_type[0] == 'S' ? -1.0 : 1.0);
		else if (!strcmp(n->op_type, "Mul") || (!strcmp(n->op_type, "Div") && k == b))
			ret = fuse_scale(c, n, x, k, n->op_type[0] == 'D');
		if (ret != 1)
			return ret;
		return const_binary(c, n, binary_ops[t].op, x, k,
				    k == a && !binary_ops[t].commutes);
	}
	ins[0] = a;
	ins[1] = b;
	if (!broadcasts_onto(&b->shape, &a->shape)) {
		if (!broadcasts_onto(&a->shape, &b->shape) || !binary_ops[t].commutes)
			return onnx_refuse(c, -EOPNOTSUPP,
					   "the second input does not broadcast onto the "
					   "first's shape (coloc broadcasts the second input only, "
					   "and swaps them only for Add, Mul, Max, Min)");
		ins[0] = b;
		ins[1] = a;
	}
	return new_layer(c, n, binary_ops[t].op, ins, 2, &ins[0]->shape, &l);
}

/* An fc from weights [K][N] (already transposed and scaled) and an optional bias. */
static int make_fc(struct onnx_ctx *c, const Onnx__NodeProto *n, struct onnx_value *x, float *w,
		   int64_t k, int64_t nn, float *bias)
{
	struct model_shape out = x->shape;
	struct onnx_layer *l;
	int ret;

	out.dims[out.ndims - 1] = nn;
	ret = new_layer(c, n, MODEL_OP_FC, &x, 1, &out, &l);
	if (ret) {
		free(w);
		free(bias);
		return ret;
	}
	l->l.fc.out_features = nn;
	l->l.fc.bias = bias != NULL;
	l->t[0] = w;
	l->nt[0] = k * nn;
	l->t[1] = bias;
	l->nt[1] = bias ? nn : 0;
	return 0;
}

static int lower_matmul(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *a = data_input(c, n, 0), *b = onnx_input(c, n, 1);
	struct model_shape out;
	struct onnx_layer *l;
	int r;

	if (!a || !b)
		return onnx_refuse(c, -EOPNOTSUPP, "the first input must be computed by a layer");
	r = a->shape.ndims;
	if (b->data) {
		float *w;

		if (b->shape.ndims != 2 || r < 2 || a->shape.dims[r - 1] != b->shape.dims[0])
			return onnx_refuse(c, -EOPNOTSUPP,
					   "a constant right operand must be [K, N] "
					   "with K the last dim of a left operand of rank >= 2");
		w = to_floats(c, b->data, onnx_elems(&b->shape), 1.0);
		return w ? make_fc(c, n, a, w, b->shape.dims[0], b->shape.dims[1], NULL) : -ENOMEM;
	}
	if (b->shape.ndims != r || r < 2 || a->shape.dims[r - 1] != b->shape.dims[r - 2] ||
	    memcmp(a->shape.dims, b->shape.dims, (size_t)(r - 2) * sizeof(int64_t)))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "coloc's matmul needs both operands of the same "
				   "rank >= 2, equal batch dims and matching K");
	out = a->shape;
	out.dims[r - 1] = b->shape.dims[r - 1];
	return new_layer(c, n, MODEL_OP_MATMUL, (struct onnx_value *[]){ a, b }, 2, &out, &l) ?:
		       (l->l.matmul.alpha = 1.0f, 0);
}

static int lower_gemm(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *a = data_input(c, n, 0), *b = const_input(c, n, 1),
			  *bc = const_input(c, n, 2);
	int64_t ta, tb, k, nn;
	float alpha, beta, *w, *bias = NULL;
	int ret = onnx_attr_int(c, n, "transA", 0, &ta);

	if (!ret)
		ret = onnx_attr_int(c, n, "transB", 0, &tb);
	if (!ret)
		ret = onnx_attr_float(c, n, "alpha", 1.0f, &alpha);
	if (!ret)
		ret = onnx_attr_float(c, n, "beta", 1.0f, &beta);
	if (ret)
		return ret;
	if (!a || !b || ta || a->shape.ndims != 2 || b->shape.ndims != 2 ||
	    (onnx_input(c, n, 2) && !bc))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Gemm is supported as x[M, K] @ constant B (transB "
				   "allowed, not transA) + constant C");
	k = b->shape.dims[tb ? 1 : 0];
	nn = b->shape.dims[tb ? 0 : 1];
	if (a->shape.dims[1] != k)
		return onnx_refuse(c, -EINVAL, "K of A and B differ");
	if (bc && (onnx_elems(&bc->shape) != nn || single_dim_from_end(&bc->shape) > 0))
		return onnx_refuse(c, -EOPNOTSUPP, "C must be [N] or [1, N]");
	w = malloc((size_t)(k * nn > 0 ? k * nn : 1) * sizeof(float));
	if (!w)
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	for (int64_t i = 0; i < k; i++)
		for (int64_t j = 0; j < nn; j++)
			w[i * nn + j] = (float)(alpha * b->data[tb ? j * k + i : i * nn + j]);
	if (bc) {
		bias = to_floats(c, bc->data, nn, beta);
		if (!bias) {
			free(w);
			return -ENOMEM;
		}
	}
	return make_fc(c, n, a, w, k, nn, bias);
}

static int lower_pool(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0);
	bool max = n->op_type[0] == 'M';
	int k[2], s[2], d[2], pads[4], nd;
	int64_t ceil_mode, cip, order;
	struct onnx_value x4;
	struct model_shape out;
	struct onnx_layer *l;
	int ret;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "pooling of an input not computed by a layer");
	ret = window_rank(c, n, &x, &x4, NULL, NULL, &nd);
	if (!ret)
		ret = window_attr(c, n, "kernel_shape", nd, 0, k);
	if (!ret && !k[0])
		return onnx_refuse(c, -EINVAL, "kernel_shape is missing");
	if (!ret)
		ret = window_attr(c, n, "strides", nd, 1, s);
	if (!ret)
		ret = window_attr(c, n, "dilations", nd, 1, d);
	if (!ret)
		ret = window_pads(c, n, nd, &x->shape.dims[2], k, s, d, pads);
	if (!ret)
		ret = onnx_attr_int(c, n, "ceil_mode", 0, &ceil_mode);
	if (!ret)
		ret = onnx_attr_int(c, n, "count_include_pad", 0, &cip);
	if (!ret)
		ret = onnx_attr_int(c, n, "storage_order", 0, &order);
	if (!ret)
		ret = only_first_output(c, n);
	if (ret)
		return ret;
	if (d[0] != 1 || d[1] != 1)
		return onnx_refuse(c, -EOPNOTSUPP, "dilated pooling");
	if (!max && cip && (pads[0] || pads[1] || pads[2] || pads[3] || ceil_mode))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "count_include_pad=1 with padding (coloc's average "
				   "excludes the padding)");
	out = x->shape;
	for (int i = 0; i < 2; i++) {
		int64_t span = x->shape.dims[2 + i] + pads[i] + pads[i + 2] - k[i];

		if (span < 0)
			return onnx_refuse(c, -EINVAL,
					   "the window is larger than the padded input");
		out.dims[2 + i] = (ceil_mode ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
	}
	ret = new_layer(c, n, MODEL_OP_POOL, &x, 1, &out, &l);
	if (ret)
		return ret;
	l->l.pool = (struct model_pool){ .kind = max ? MODEL_POOL_MAX : MODEL_POOL_AVG,
					 .kh = k[0],
					 .kw = k[1],
					 .stride_h = s[0],
					 .stride_w = s[1],
					 .pad_t = pads[0],
					 .pad_l = pads[1],
					 .pad_b = pads[2],
					 .pad_r = pads[3] };
	/* ceil_mode is carried by the shape: the emitter writes 'ceil' when it differs */
	return nd == 2 ? 0 : spatial_1d_out(c, n);
}

static int lower_global_pool(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0), x4;
	struct model_shape out;
	struct onnx_layer *l;
	int nd, ret;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "pooling of an input not computed by a layer");
	ret = window_rank(c, n, &x, &x4, NULL, NULL, &nd);
	if (ret)
		return ret;
	out = x->shape;
	out.dims[2] = out.dims[3] = 1;
	ret = new_layer(c, n, MODEL_OP_POOL, &x, 1, &out, &l);
	if (ret)
		return ret;
	l->l.pool.kind = MODEL_POOL_GLOBAL_AVG;
	return nd == 2 ? 0 : spatial_1d_out(c, n);
}

static int lower_concat(struct onnx_ctx *c, const Onnx__NodeProto *n)
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
		ins[i] = data_input(c, n, i);
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
	return new_layer(c, n, MODEL_OP_CONCAT, ins, (int)n->n_input, &out, &l) ?:
										  (l->l.axis = a, 0);
}

static int lower_softmax(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0);
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
	return new_layer(c, n, MODEL_OP_SOFTMAX, &x, 1, &x->shape, &l) ?: (l->l.axis = a, 0);
}

static int lower_layer_norm(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0), *g = const_input(c, n, 1),
			  *b = const_input(c, n, 2);
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
		ret = only_first_output(c, n);
	if (ret)
		return ret;
	if (a != x->shape.ndims - 1)
		return onnx_refuse(c, -EOPNOTSUPP, "normalisation over more than the last axis");
	if (onnx_elems(&g->shape) != dd || (b && onnx_elems(&b->shape) != dd))
		return onnx_refuse(c, -EINVAL, "scale and bias must have %lld values",
				   (long long)dd);
	if (!(eps >= 1e-30f && eps <= 1.0f))
		return onnx_refuse(c, -EOPNOTSUPP, "epsilon %g (coloc takes 1e-30..1)", eps);
	ret = new_layer(c, n, MODEL_OP_LAYER_NORM, &x, 1, &x->shape, &l);
	if (ret)
		return ret;
	l->l.eps = eps;
	l->nt[0] = l->nt[1] = dd;
	l->t[0] = to_floats(c, g->data, dd, 1.0);
	l->t[1] = b ? to_floats(c, b->data, dd, 1.0) : calloc((size_t)dd, sizeof(float));
	if (!l->t[0] || !l->t[1])
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	return 0;
}

static int lower_lrn(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0);
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
	ret = new_layer(c, n, MODEL_OP_LRN, &x, 1, &x->shape, &l);
	if (!ret)
		l->l.lrn = (struct model_lrn){
			.size = (int)size, .alpha = alpha, .beta = beta, .k = bias
		};
	return ret;
}

static int lower_reshape(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0), *sh;
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
		return alias(c, n, x);
	return new_layer(c, n, MODEL_OP_RESHAPE, &x, 1, &out, &l) ?: (l->l.reshape = out, 0);
}

static int lower_transpose(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0);
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
	ret = new_layer(c, n, MODEL_OP_TRANSPOSE, &x, 1, &out, &l);
	for (int i = 0; !ret && i < nr; i++)
		l->l.perm[i] = (int)perm[i];
	return ret;
}

static int lower_gather(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *t = const_input(c, n, 0), *ix = data_input(c, n, 1);
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
	ret = new_layer(c, n, MODEL_OP_EMBED, &ix, 1, &out, &l);
	if (ret)
		return ret;
	l->l.embed = (struct model_embed){ .vocab = t->shape.dims[0], .dim = t->shape.dims[1] };
	l->nt[0] = onnx_elems(&t->shape);
	l->t[0] = to_floats(c, t->data, l->nt[0], 1.0);
	return l->t[0] ? 0 : -ENOMEM;
}

static int lower_slice(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0);
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
		return alias(c, n, x);
	ret = new_layer(c, n, MODEL_OP_SLICE, &x, 1, &out, &l);
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
static int lower_resize(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0), *sc, *sz;
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
	ret = new_layer(c, n, MODEL_OP_RESIZE, &x, 1, &out, &l);
	if (!ret)
		l->l.resize.linear = linear;
	return ret;
}

/*
 * ReduceMean, ReduceMax, ReduceMin, ReduceSum over constant axes (the
 * attribute, or input 1 from opset 18 and ReduceSum's 13): a reduce layer,
 * then a reshape dropping the reduced dims when keepdims is 0 (to [1] for
 * the rank-0 result of reducing every axis, see bind_output()).
 */
static int lower_reduce(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	static const struct {
		const char *type;
		enum model_reduce_kind kind;
	} kinds[] = { { "ReduceMean", MODEL_REDUCE_MEAN },
		      { "ReduceMax", MODEL_REDUCE_MAX },
		      { "ReduceMin", MODEL_REDUCE_MIN },
		      { "ReduceSum", MODEL_REDUCE_SUM } };
	struct onnx_value *x = data_input(c, n, 0), *ax = onnx_input(c, n, 1);
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
		return alias(c, n, x);
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
		ret = new_layer(c, n, MODEL_OP_REDUCE, &x, 1, &out, &l);
		if (!ret)
			l->l.reduce = (struct model_reduce){ .kind = kinds[t].kind, .axes = mask };
		return ret;
	}
	ret = onnx_layer_add(c, MODEL_OP_REDUCE, node_label(n), &l);
	if (ret)
		return ret;
	l->l.nr_inputs = 1;
	l->l.inputs[0] = x->layer;
	l->l.out = out;
	l->l.reduce = (struct model_reduce){ .kind = kinds[t].kind, .axes = mask };
	l->uses = 1; /* the reshape below */
	snprintf(l->origin, sizeof(l->origin), "%.16s '%.64s'", n->op_type, node_label(n));
	{
		struct onnx_value mid = { .shape = out, .layer = c->nr_layers - 1 }, *in = &mid;

		ret = new_layer(c, n, MODEL_OP_RESHAPE, &in, 1, &flat, &l);
	}
	if (!ret)
		l->l.reshape = l->l.out; /* flat, or [1] for a scalar */
	return ret;
}

/*
 * Pad, constant mode: pads from the attribute (before opset 11) or input
 * 1, the value from the attribute or input 2; every axis (no axes input).
 */
static int lower_pad(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0), *pv = onnx_input(c, n, 1),
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
	ret = new_layer(c, n, MODEL_OP_PAD, &x, 1, &out, &l);
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
static int lower_split(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0), *sp = onnx_input(c, n, 1);
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
		snprintf(l->origin, sizeof(l->origin), "Split '%.64s' output %d", node_label(n), i);
		ret = onnx_output_layer(c, n, (size_t)i, c->nr_layers - 1);
		if (ret)
			return ret;
		start += parts[i];
	}
	if (start != x->shape.dims[a])
		return onnx_refuse(c, -EINVAL, "the split sizes do not add up to axis %d", a);
	return 0;
}

/*
 * Pow of a computed tensor by a constant scalar exponent: 2 (a power
 * spectrum's |X|^2, a variance) is the mul of x by itself, 1 is x. Other
 * exponents have no coloc layer (Pow 2 inside a decomposed LayerNorm is
 * matched as that pattern before it gets here).
 */
static int lower_pow(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0), *e = const_input(c, n, 1), *ins[2] = { x, x };
	struct onnx_layer *l;

	if (!x || !e || onnx_elems(&e->shape) != 1 || e->shape.ndims > x->shape.ndims)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Pow needs a computed base and a constant scalar exponent "
				   "of at most its rank");
	if (e->data[0] == 1)
		return alias(c, n, x);
	if (e->data[0] != 2)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "the exponent is neither 1 nor 2 (coloc lowers Pow by 2, a "
				   "mul of x by itself, and by 1)");
	return new_layer(c, n, MODEL_OP_MUL, ins, 2, &x->shape, &l);
}

static int lower_log(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0);
	struct onnx_layer *l;

	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	return new_layer(c, n, MODEL_OP_LOG, &x, 1, &x->shape, &l);
}

static int lower_identity(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0);
	int ret = only_first_output(c, n);

	if (ret)
		return ret;
	if (!x)
		return onnx_refuse(c, -EOPNOTSUPP, "the input is not computed by a layer");
	return alias(c, n, x);
}

/*
 * Cast of a computed tensor: coloc's layers compute fp32 (and take token ids
 * as fp32), so a Cast to float or double is an alias; to an integer or
 * bool type it would round or threshold, which no layer does.
 */
static int lower_cast(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = data_input(c, n, 0);
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
	return alias(c, n, x);
}

/* A binary layer of layer in (shape s) and the constant k [ks]; last: the node's output. */
static int where_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, enum model_op op, int in,
		       const struct model_shape *s, const double *k, const struct model_shape *ks,
		       bool last)
{
	struct onnx_layer *l;
	int ret = onnx_layer_add(c, op, node_label(n), &l);

	if (ret)
		return ret;
	l->l.nr_inputs = 1;
	l->l.inputs[0] = in;
	l->l.out = *s;
	l->l.binary = (struct model_binary){ .has_const = true, .cshape = *ks };
	l->uses = !last;
	l->nt[0] = onnx_elems(ks);
	l->t[0] = to_floats(c, k, l->nt[0], 1.0);
	if (!l->t[0])
		return -ENOMEM;
	return last ? onnx_output_layer(c, n, 0, c->nr_layers - 1) : 0;
}

/*
 * Where(cond, a, b) with a constant cond, one of a and b computed (t) and
 * the other a constant k: t * m + z with the constants m (1 where t is
 * taken, else 0) and z (k where it is taken, else 0): a mul and an add of
 * constants, each left out when it changes nothing. Exact for finite t (an
 * infinite or NaN t times 0 is NaN); the result has t's shape, so m and z
 * must broadcast onto it.
 */
static int lower_where(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *cond = const_input(c, n, 0), *a = onnx_input(c, n, 1),
			  *b = onnx_input(c, n, 2), *t, *k;
	struct model_shape ms;
	bool mul = false, add = false;
	double *m, *z;
	int ret, in;

	if (!cond || !a || !b || (a->layer >= 0) == (b->layer >= 0))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "Where needs a constant condition (folded from constants "
				   "or shapes), one computed operand and one constant");
	t = a->layer >= 0 ? a : b;
	k = a->layer >= 0 ? b : a;
	ret = onnx_where_split(c, cond, k, k == a, &ms, &m, &z);
	if (ret)
		return ret;
	if (!broadcasts_onto(&ms, &t->shape)) {
		free(m);
		free(z);
		return onnx_refuse(c, -EOPNOTSUPP,
				   "the condition and constant do not broadcast onto the "
				   "computed operand's shape (coloc's result has its shape)");
	}
	for (int64_t i = 0; i < onnx_elems(&ms); i++) {
		mul = mul || m[i] != 1;
		add = add || z[i] != 0;
	}
	if (!ms.ndims) {
		ms.ndims = 1;
		ms.dims[0] = 1;
	}
	in = t->layer;
	ret = 0;
	if (mul) {
		ret = where_layer(c, n, MODEL_OP_MUL, in, &t->shape, m, &ms, !add);
		in = c->nr_layers - 1;
	}
	if (!ret && add)
		ret = where_layer(c, n, MODEL_OP_ADD, in, &t->shape, z, &ms, true);
	free(m);
	free(z);
	if (ret || mul || add)
		return ret;
	return alias(c, n, t);
}

/* Comparisons and logic: folded at load when every input is constant. */
static int lower_logic(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	(void)n;
	return onnx_refuse(c, -EOPNOTSUPP,
			   "a comparison or logic op of run-time values (coloc folds these "
			   "only when every input is a constant or derived from shapes, "
			   "e.g. a mask built from the input's shape)");
}

struct lower_op {
	const char *type;
	int (*lower)(struct onnx_ctx *c, const Onnx__NodeProto *n);
	/* takes a computed rank-0 input (elementwise, or a reshape of one element) */
	bool scalars;
};

static const struct lower_op lower_ops[] = {
	{ "Conv", lower_conv, false },
	{ "ConvTranspose", lower_conv_transpose, false },
	{ "BatchNormalization", lower_batch_norm, false },
	{ "Relu", lower_act, true },
	{ "LeakyRelu", lower_act, true },
	{ "Sigmoid", lower_act, true },
	{ "Tanh", lower_act, true },
	{ "HardSigmoid", lower_act, true },
	{ "HardSwish", lower_act, true },
	{ "Clip", lower_act, true },
	{ "Pow", lower_pow, true },
	{ "Log", lower_log, true },
	{ "Add", lower_binary, true },
	{ "Mul", lower_binary, true },
	{ "Sub", lower_binary, true },
	{ "Div", lower_binary, true },
	{ "Max", lower_binary, true },
	{ "Min", lower_binary, true },
	{ "MatMul", lower_matmul, false },
	{ "Gemm", lower_gemm, false },
	{ "MaxPool", lower_pool, false },
	{ "AveragePool", lower_pool, false },
	{ "GlobalAveragePool", lower_global_pool, false },
	{ "Concat", lower_concat, false },
	{ "Softmax", lower_softmax, false },
	{ "LayerNormalization", lower_layer_norm, false },
	{ "LRN", lower_lrn, false },
	{ "Reshape", lower_reshape, true },
	{ "Flatten", lower_reshape, false },
	{ "Squeeze", lower_reshape, true },
	{ "Unsqueeze", lower_reshape, true },
	{ "Transpose", lower_transpose, false },
	{ "Gather", lower_gather, false },
	{ "Slice", lower_slice, false },
	{ "ReduceMean", lower_reduce, false },
	{ "ReduceMax", lower_reduce, false },
	{ "ReduceMin", lower_reduce, false },
	{ "ReduceSum", lower_reduce, false },
	{ "Split", lower_split, false },
	{ "Pad", lower_pad, false },
	{ "Resize", lower_resize, false },
	{ "Upsample", lower_resize, false },
	{ "Identity", lower_identity, true },
	{ "Dropout", lower_identity, true },
	{ "Cast", lower_cast, true },
	{ "Equal", lower_logic, false },
	{ "Greater", lower_logic, false },
	{ "GreaterOrEqual", lower_logic, false },
	{ "Less", lower_logic, false },
	{ "LessOrEqual", lower_logic, false },
	{ "Not", lower_logic, false },
	{ "And", lower_logic, false },
	{ "Or", lower_logic, false },
	{ "Xor", lower_logic, false },
	{ "Where", lower_where, false },
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
