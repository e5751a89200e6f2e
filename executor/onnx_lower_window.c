// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Lowering of the ops over a sliding window: Conv, ConvTranspose, MaxPool,
 * AveragePool, GlobalAveragePool (1-D ones as views of 2-D layers), and
 * BatchNormalization, which folds into the Conv or ConvTranspose before it
 * (weights scaled, bias shifted, in double precision) when that layer's
 * value has no other reader, and is a layer of its own otherwise.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_lower.h"
#include "batch_norm.h"
#include "window.h"

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
 * The strides and dilations (1 when absent) of a window of kernel k over
 * in_hw, and its padding as [t, l, b, r] (explicit or auto_pad): what Conv
 * and the pools read alike.
 */
static int window_geometry(struct onnx_ctx *c, const Onnx__NodeProto *n, int nd,
			   const int64_t *in_hw, const int *k, int *s, int *d, int *pads)
{
	int ret = window_attr(c, n, "strides", nd, 1, s);

	if (!ret)
		ret = window_attr(c, n, "dilations", nd, 1, d);
	if (!ret)
		ret = window_pads(c, n, nd, in_hw, k, s, d, pads);
	return ret;
}

/*
 * A 1-D window (Conv, ConvTranspose, the pools on [N, C, W]) runs as the
 * 2-D one on [N, C, 1, W]: a reshape layer (an onnx_alias, no copy) views the
 * input as 4-D, and spatial_1d_out() views the result back as 3-D.
 */
static int view_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, int in,
		      const struct model_shape *s, const char *what, int *idx)
{
	char name[512];
	struct onnx_layer *l;
	int ret;

	/* the suffix is kept: onnx_layer_add() cuts long names at the front */
	snprintf(name, sizeof(name), "%.400s_as%s", onnx_node_label(n), what);
	ret = onnx_layer_add(c, MODEL_OP_RESHAPE, name, &l);
	if (ret)
		return ret;
	l->l.nr_inputs = 1;
	l->l.inputs[0] = in;
	l->l.out = *s;
	l->l.reshape = *s;
	snprintf(l->origin, sizeof(l->origin), "%.40s '%.64s' (viewed as %s)", n->op_type,
		 onnx_node_label(n), what);
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
	int ret = onnx_new_layer(c, n, op, &x, 1, out, &l);

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
	l->t[0] = onnx_to_floats(c, w->data, l->nt[0], 1.0);
	if (!l->t[0])
		return -ENOMEM;
	if (b) {
		l->nt[1] = out->dims[1];
		l->t[1] = onnx_to_floats(c, b->data, l->nt[1], 1.0);
		if (!l->t[1])
			return -ENOMEM;
	}
	return 0;
}

int onnx_lower_conv(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0), *w = onnx_const_input(c, n, 1),
			  *b = onnx_const_input(c, n, 2);
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
		ret = window_geometry(c, n, nd, &x->shape.dims[2], k, s, d, pads);
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
int onnx_lower_conv_transpose(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0), *w = onnx_const_input(c, n, 1),
			  *b = onnx_const_input(c, n, 2);
	int k[2], s[2], d[2], pads[4], nd, nr, ret;
	struct onnx_value x4, w4;
	struct model_shape out;
	int64_t g, os[2];
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
	if ((nr >= 0 && nr != nd) || onnx_attr(n, "output_shape") ||
	    strcmp(onnx_attr_str(n, "auto_pad", buf, sizeof(buf), "NOTSET"), "NOTSET"))
		return onnx_refuse(c, -EOPNOTSUPP,
				   "output_shape and auto_pad (coloc's deconv takes explicit pads; "
				   "output_padding one value a spatial dim)");
	ret = explicit_pads(c, n, nd, pads);
	if (ret)
		return ret;
	/*
	 * output_padding adds rows (columns) at the end, where no input reaches
	 * but the bias: the same output as that much less end pad.
	 */
	for (int i = 0; i < nr; i++) {
		int j = nd == 2 ? i : 1, *end = &pads[2 + j];

		if (os[i] < 0 || os[i] >= s[j] || os[i] > *end)
			return onnx_refuse(c, -EOPNOTSUPP,
					   "output_padding %lld with stride %d and end pad %d "
					   "(coloc's deconv folds output_padding into the end "
					   "pad: 0 <= output_padding < stride, <= the end pad)",
					   (long long)os[i], s[j], *end);
		*end -= (int)os[i];
	}
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
		out.dims[2 + i] =
			window_transposed_len(x->shape.dims[2 + i], (int64_t)d[i] * (k[i] - 1) + 1,
					      s[i], (int64_t)pads[i] + pads[i + 2]);
		if (out.dims[2 + i] < 1)
			return onnx_refuse(c, -EINVAL, "the padding is larger than the output");
	}
	ret = conv_layer(c, n, MODEL_OP_DECONV, x, &out, w, b, k, s, d, pads, g);
	return ret || nd == 2 ? ret : spatial_1d_out(c, n);
}

/*
 * A batch norm that follows no conv: y = x * scale + shift per channel
 * (dim 1), scale and shift = beta - mean * scale as batch_norm.h computes
 * them, as a mul and an add of constants [C, 1, ...].
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
	ret = onnx_layer_add(c, MODEL_OP_MUL, onnx_node_label(n), &l);
	if (ret)
		return ret;
	l->l.nr_inputs = 1;
	l->l.inputs[0] = x->layer;
	l->l.out = x->shape;
	l->l.binary = (struct model_binary){ .has_const = true, .cshape = cs };
	l->uses = 1; /* the add below */
	snprintf(l->origin, sizeof(l->origin), "BatchNormalization '%.64s' (scale)",
		 onnx_node_label(n));
	mid.layer = c->nr_layers - 1;
	l->nt[0] = ch;
	l->t[0] = malloc((size_t)ch * sizeof(float));
	if (!l->t[0])
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	for (int64_t o = 0; o < ch; o++)
		l->t[0][o] = (float)batch_norm_scale(p[0]->data[o], p[3]->data[o], eps);
	{
		struct onnx_value *in = &mid;

		ret = onnx_new_layer(c, n, MODEL_OP_ADD, &in, 1, &x->shape, &l);
	}
	if (ret)
		return ret;
	l->l.binary = (struct model_binary){ .has_const = true, .cshape = cs };
	l->nt[0] = ch;
	l->t[0] = malloc((size_t)ch * sizeof(float));
	if (!l->t[0])
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	for (int64_t o = 0; o < ch; o++)
		l->t[0][o] = batch_norm_bias(0, p[2]->data[o],
					     batch_norm_scale(p[0]->data[o], p[3]->data[o], eps),
					     p[1]->data[o]);
	return 0;
}

/*
 * y = (x - mean) * scale / sqrt(var + eps) + beta, folded into the weights
 * and bias of the conv or deconv before it when nothing else reads that,
 * else a standalone scale and shift.
 */
int onnx_lower_batch_norm(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0), *p[4];
	struct onnx_layer *l;
	int64_t oc, per, training;
	float eps;
	int ret = onnx_attr_float(c, n, "epsilon", 1e-5f, &eps);

	if (!ret)
		ret = onnx_attr_int(c, n, "training_mode", 0, &training);
	if (!ret)
		ret = onnx_only_first_output(c, n);
	if (ret)
		return ret;
	if (training)
		return onnx_refuse(c, -EOPNOTSUPP, "training_mode=1");
	if (!x || x->shape.ndims < 2)
		return onnx_refuse(c, -EOPNOTSUPP,
				   "BatchNormalization of a computed tensor with channels in "
				   "dim 1");
	for (int i = 0; i < 4; i++) {
		p[i] = onnx_const_input(c, n, (size_t)i + 1);
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
	l = onnx_layer_of(c, x);
	if (!onnx_fusible(c, x) || (l->l.op != MODEL_OP_CONV && l->l.op != MODEL_OP_DECONV) ||
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
		l->t[0][i] =
			(float)(l->t[0][i] * batch_norm_scale(p[0]->data[o], p[3]->data[o], eps));
	}
	for (int64_t o = 0; o < oc; o++)
		l->t[1][o] = batch_norm_bias(l->t[1][o], p[2]->data[o],
					     batch_norm_scale(p[0]->data[o], p[3]->data[o], eps),
					     p[1]->data[o]);
	snprintf(l->origin + strlen(l->origin), sizeof(l->origin) - strlen(l->origin),
		 " + BatchNormalization");
	return onnx_alias(c, n, x);
}

int onnx_lower_pool(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0);
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
		ret = window_geometry(c, n, nd, &x->shape.dims[2], k, s, d, pads);
	if (!ret)
		ret = onnx_attr_int(c, n, "ceil_mode", 0, &ceil_mode);
	if (!ret)
		ret = onnx_attr_int(c, n, "count_include_pad", 0, &cip);
	if (!ret)
		ret = onnx_attr_int(c, n, "storage_order", 0, &order);
	if (!ret)
		ret = onnx_only_first_output(c, n);
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
		int64_t padded = x->shape.dims[2 + i] + pads[i] + pads[i + 2];

		if (padded < k[i])
			return onnx_refuse(c, -EINVAL,
					   "the window is larger than the padded input");
		out.dims[2 + i] = ceil_mode ? window_out_len_ceil(padded, k[i], s[i]) :
					      window_out_len(padded, k[i], s[i]);
	}
	ret = onnx_new_layer(c, n, MODEL_OP_POOL, &x, 1, &out, &l);
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

int onnx_lower_global_pool(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	struct onnx_value *x = onnx_data_input(c, n, 0), x4;
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
	ret = onnx_new_layer(c, n, MODEL_OP_POOL, &x, 1, &out, &l);
	if (ret)
		return ret;
	l->l.pool.kind = MODEL_POOL_GLOBAL_AVG;
	return nd == 2 ? 0 : spatial_1d_out(c, n);
}
