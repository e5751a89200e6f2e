// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Writes the lowered layers out: coloc model text (models/README.md), one
 * line per layer with every attribute explicit and a comment naming the
 * ONNX node(s) it came from, the header's macs and params computed here by
 * the counting conventions of models/README.md; and the weights file
 * (models/WEIGHTS.md) from the layers' parameters.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "huge_alloc.h"
#include "onnx_internal.h"

struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

__attribute__((format(printf, 2, 3))) static void put(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? 2 * b->cap : 4096) + (size_t)n;
		char *p = realloc(b->p, cap);

		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

/*
 * A comment's text: names come from the file, and a newline or control byte
 * in one would end the comment and inject a statement. Printable ASCII only.
 */
static void put_comment(struct sbuf *b, const char *s)
{
	put(b, "# ");
	for (; *s; s++)
		put(b, "%c", *s >= 0x20 && *s < 0x7f ? *s : '?');
	put(b, "\n");
}

static void put_dims(struct sbuf *b, const char *key, const struct model_shape *s)
{
	put(b, " %s=", key);
	for (int i = 0; i < s->ndims; i++)
		put(b, "%s%lld", i ? "x" : "", (long long)s->dims[i]);
}

static const char *const op_words[MODEL_OP_COUNT] = {
	[MODEL_OP_INPUT] = "input",	[MODEL_OP_CONV] = "conv",
	[MODEL_OP_FC] = "fc",		[MODEL_OP_MATMUL] = "matmul",
	[MODEL_OP_POOL] = "pool",	[MODEL_OP_ACT] = "act",
	[MODEL_OP_ADD] = "add",		[MODEL_OP_MUL] = "mul",
	[MODEL_OP_CONCAT] = "concat",	[MODEL_OP_LAYER_NORM] = "layer_norm",
	[MODEL_OP_SOFTMAX] = "softmax", [MODEL_OP_LRN] = "lrn",
	[MODEL_OP_RESHAPE] = "reshape", [MODEL_OP_TRANSPOSE] = "transpose",
	[MODEL_OP_EMBED] = "embed",	[MODEL_OP_SLICE] = "slice",
	[MODEL_OP_SUB] = "sub",		[MODEL_OP_DIV] = "div",
	[MODEL_OP_MAX] = "max",		[MODEL_OP_MIN] = "min",
	[MODEL_OP_RESIZE] = "resize",	[MODEL_OP_DECONV] = "deconv",
	[MODEL_OP_REDUCE] = "reduce",	[MODEL_OP_PAD] = "pad",
	[MODEL_OP_LOG] = "log",
};

/* The product of n factors, or false when one is negative or it passes int64. */
static bool product(int64_t *out, int n, const int64_t *f)
{
	*out = 1;
	for (int i = 0; i < n; i++)
		if (!onnx_mul(out, f[i], INT64_MAX))
			return false;
	return true;
}

/*
 * MACs and parameters by the conventions of models/README.md; false when a
 * count passes int64 (every product checked: shapes come from the file).
 */
static bool count(const struct onnx_ctx *c, const struct model_layer *l, int64_t *macs,
		  int64_t *params)
{
	const struct model_shape *in = l->nr_inputs ? &c->layers[l->inputs[0]].l.out : NULL;
	int64_t out = onnx_elems(&l->out), w, bias;

	*macs = *params = 0;
	switch (l->op) {
	case MODEL_OP_CONV:
	case MODEL_OP_DECONV: {
		int64_t per, g = l->conv.groups;

		if (g <= 0 || !product(&per, 3, (int64_t[]){ in->dims[1] / g, l->conv.kh, l->conv.kw }))
			return false;
		/* a deconv scatters each input through out/groups x kh x kw weights */
		bias = l->conv.bias ? l->conv.out_channels : 0;
		return (l->op == MODEL_OP_CONV ?
				product(macs, 2, (int64_t[]){ out, per }) :
				product(macs, 4,
					(int64_t[]){ onnx_elems(in), l->conv.out_channels / g,
						     l->conv.kh, l->conv.kw })) &&
		       product(&w, 2, (int64_t[]){ l->conv.out_channels, per }) &&
		       !__builtin_add_overflow(w, bias, params);
	}
	case MODEL_OP_FC: {
		int64_t k = in->dims[in->ndims - 1];

		bias = l->fc.bias ? l->fc.out_features : 0;
		return product(macs, 2, (int64_t[]){ out, k }) &&
		       product(&w, 2, (int64_t[]){ k, l->fc.out_features }) &&
		       !__builtin_add_overflow(w, bias, params);
	}
	case MODEL_OP_MATMUL:
		return product(macs, 2, (int64_t[]){ out, in->dims[in->ndims - 1] });
	case MODEL_OP_LAYER_NORM:
		return product(params, 2, (int64_t[]){ 2, in->dims[in->ndims - 1] });
	case MODEL_OP_EMBED:
		return product(params, 2, (int64_t[]){ l->embed.vocab, l->embed.dim });
	default:
		if (model_op_is_binary(l->op) && l->binary.has_const)
			*params = onnx_elems(&l->binary.cshape);
		return *params != INT64_MAX;
	}
}

static void put_window(struct sbuf *b, int kh, int kw, int sh, int sw, const int *pads)
{
	put(b, " k=%dx%d stride=%dx%d pad=%d,%d,%d,%d", kh, kw, sh, sw, pads[0], pads[1], pads[2],
	    pads[3]);
}

static void put_layer(struct sbuf *b, const struct onnx_ctx *c, const struct onnx_layer *ol)
{
	const struct model_layer *l = &ol->l;

	put_comment(b, ol->origin);
	put(b, "%s %s", op_words[l->op], l->name);
	if (l->nr_inputs) {
		put(b, " in=");
		for (int i = 0; i < l->nr_inputs; i++)
			put(b, "%s%s", i ? "," : "", c->layers[l->inputs[i]].l.name);
	}
	switch (l->op) {
	case MODEL_OP_INPUT:
		put_dims(b, "shape", &l->out);
		break;
	case MODEL_OP_CONV:
	case MODEL_OP_DECONV: {
		int pads[4] = { l->conv.pad_t, l->conv.pad_l, l->conv.pad_b, l->conv.pad_r };

		put(b, " out=%lld", (long long)l->conv.out_channels);
		put_window(b, l->conv.kh, l->conv.kw, l->conv.stride_h, l->conv.stride_w, pads);
		put(b, " dil=%dx%d groups=%lld%s", l->conv.dil_h, l->conv.dil_w,
		    (long long)l->conv.groups, l->conv.bias ? " bias" : "");
		break;
	}
	case MODEL_OP_FC:
		put(b, " out=%lld%s", (long long)l->fc.out_features, l->fc.bias ? " bias" : "");
		break;
	case MODEL_OP_POOL: {
		const struct model_pool *p = &l->pool;
		int pads[4] = { p->pad_t, p->pad_l, p->pad_b, p->pad_r };
		const struct model_shape *in = &c->layers[l->inputs[0]].l.out;
		bool ceil_mode = false;

		if (p->kind == MODEL_POOL_GLOBAL_AVG) {
			put(b, " kind=global_avg");
			break;
		}
		put(b, " kind=%s", p->kind == MODEL_POOL_MAX ? "max" : "avg");
		put_window(b, p->kh, p->kw, p->stride_h, p->stride_w, pads);
		/* the shape says whether ONNX's ceil_mode rounded up */
		ceil_mode = (in->dims[2] + pads[0] + pads[2] - p->kh) / p->stride_h + 1 !=
				    l->out.dims[2] ||
			    (in->dims[3] + pads[1] + pads[3] - p->kw) / p->stride_w + 1 !=
				    l->out.dims[3];
		if (ceil_mode)
			put(b, " ceil");
		break;
	}
	case MODEL_OP_MATMUL:
		put(b, "%s alpha=%.9g", l->matmul.transpose_b ? " transpose_b" : "",
		    l->matmul.alpha);
		break;
	case MODEL_OP_CONCAT:
	case MODEL_OP_SOFTMAX:
		put(b, " axis=%d", l->axis);
		break;
	case MODEL_OP_LAYER_NORM:
		put(b, " eps=%.9g", l->eps);
		break;
	case MODEL_OP_LRN:
		put(b, " size=%d alpha=%.9g beta=%.9g k=%.9g", l->lrn.size, l->lrn.alpha,
		    l->lrn.beta, l->lrn.k);
		break;
	case MODEL_OP_RESHAPE:
		put_dims(b, "shape", &l->reshape);
		break;
	case MODEL_OP_TRANSPOSE:
		put(b, " perm=");
		for (int i = 0; i < l->out.ndims; i++)
			put(b, "%s%d", i ? "," : "", l->perm[i]);
		break;
	case MODEL_OP_EMBED:
		put(b, " vocab=%lld dim=%lld", (long long)l->embed.vocab, (long long)l->embed.dim);
		break;
	case MODEL_OP_SLICE:
		put(b, " axis=%d start=%lld len=%lld", l->slice.axis, (long long)l->slice.start,
		    (long long)l->slice.len);
		break;
	case MODEL_OP_REDUCE: {
		static const char *const kinds[] = { "mean", "max", "min", "sum" };
		const char *sep = "";

		put(b, " kind=%s axes=", kinds[l->reduce.kind]);
		for (int a = 0; a < l->out.ndims; a++)
			if (l->reduce.axes & (1u << a)) {
				put(b, "%s%d", sep, a);
				sep = ",";
			}
		break;
	}
	case MODEL_OP_PAD: {
		struct model_shape s = { .ndims = l->out.ndims };

		memcpy(s.dims, l->pad.begin, sizeof(s.dims));
		put_dims(b, "begin", &s);
		memcpy(s.dims, l->pad.end, sizeof(s.dims));
		put_dims(b, "end", &s);
		put(b, " value=%.9g", l->pad.value);
		break;
	}
	case MODEL_OP_RESIZE:
		put(b, " mode=%s out=%lldx%lld", l->resize.linear ? "linear" : "nearest",
		    (long long)l->out.dims[2], (long long)l->out.dims[3]);
		break;
	default:
		if (model_op_is_binary(l->op) && l->binary.has_const)
			put_dims(b, "const", &l->binary.cshape);
		if (model_op_is_binary(l->op) && l->binary.const_first)
			put(b, " const_first");
		break;
	}
	if (l->act != MODEL_ACT_NONE) {
		put(b, " act=%s", model_act_name(l->act));
		if (l->act == MODEL_ACT_LEAKY_RELU)
			put(b, " slope=%.9g", l->act_alpha);
		if (l->act == MODEL_ACT_HARD_SIGMOID)
			put(b, " slope=%.9g offset=%.9g", l->act_alpha, l->act_beta);
		if (l->act == MODEL_ACT_CLIP)
			put(b, " min=%.9g max=%.9g", l->act_alpha, l->act_beta);
	}
	put(b, "\n");
}

int onnx_emit_text(struct onnx_ctx *c, char **text, size_t *len)
{
	struct sbuf b = { 0 };
	int64_t macs = 0, params = 0;
	const char *gname = c->g->name && c->g->name[0] ? c->g->name : "onnx";
	char name[MODEL_NAME_LEN], head[512];
	size_t o = 0;

	for (int i = 0; i < c->nr_layers; i++) {
		int64_t m, p;

		if (!count(c, &c->layers[i].l, &m, &p) || __builtin_add_overflow(macs, m, &macs) ||
		    __builtin_add_overflow(params, p, &params))
			return coloc_err_set(c->err, -EOPNOTSUPP,
					     "%s: layer '%s' (from %s): the model's MACs or parameters "
					     "pass 2^63",
					     c->file, c->layers[i].l.name, c->layers[i].origin);
	}
	/* the model's name follows the layer-name rules */
	for (const char *s = gname; *s && o < sizeof(name) - 2; s++) {
		bool ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			  (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-';

		if (!o && !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
			name[o++] = '_';
		name[o++] = ok ? *s : '_';
	}
	name[o] = 0;
	snprintf(head, sizeof(head),
		 "imported from %s by coloc-import (opset %lld, producer '%.64s')", c->file,
		 (long long)c->opset, c->mp->producer_name ? c->mp->producer_name : "");
	put_comment(&b, head);
	put(&b, "# macs and params are computed from the layers; weights come from the "
		"initializers\n");
	put(&b, "model %s\nseed 0\nmacs %llu\nparams %llu\n", name, (unsigned long long)macs,
	    (unsigned long long)params);
	for (int i = 0; i < c->nr_layers; i++)
		put_layer(&b, c, &c->layers[i]);
	put(&b, "end\n");
	if (b.err) {
		free(b.p);
		return coloc_err_set(c->err, b.err, "%s: writing the model text failed", c->file);
	}
	*text = b.p;
	*len = b.len;
	return 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

int onnx_emit_weights(struct onnx_ctx *c, unsigned char **buf, size_t *len)
{
	size_t size = 12, o = 12;
	uint32_t nr = 0;
	unsigned char *p;

	for (int i = 0; i < c->nr_layers; i++) {
		const struct onnx_layer *l = &c->layers[i];

		if (!l->t[0])
			continue;
		/* folds (a division by a tiny constant, say) can overflow float */
		for (int t = 0; t < 2 && l->t[t]; t++)
			for (int64_t k = 0; k < l->nt[t]; k++)
				if (!isfinite(l->t[t][k]))
					return coloc_err_set(c->err, -ERANGE,
							     "%s: layer '%s' (from %s): parameter "
							     "%lld is not finite after folding",
							     c->file, l->l.name, l->origin,
							     (long long)k);
		nr++;
		size += 8 + 8 + (size_t)l->nt[0] * 4 + (l->t[1] ? 8 + (size_t)l->nt[1] * 4 : 0);
	}
	p = huge_alloc(size);
	if (!p)
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	memcpy(p, "COLOCWT1", 8);
	put_u32(p + 8, nr);
	for (int i = 0; i < c->nr_layers; i++) {
		const struct onnx_layer *l = &c->layers[i];

		if (!l->t[0])
			continue;
		put_u32(p + o, (uint32_t)i);
		put_u32(p + o + 4, l->t[1] ? 2 : 1);
		o += 8;
		for (int t = 0; t < 2 && l->t[t]; t++) {
			put_u64(p + o, (uint64_t)l->nt[t]);
			o += 8;
			/* little-endian fp32, as on every target coloc builds for */
			memcpy(p + o, l->t[t], (size_t)l->nt[t] * 4);
			o += (size_t)l->nt[t] * 4;
		}
	}
	*buf = p;
	*len = size;
	return 0;
}
