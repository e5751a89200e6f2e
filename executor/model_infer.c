// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One layer of a model file: its attributes are checked against what the op
 * accepts, its inputs are resolved by name to earlier layers, and its output
 * shape, MACs and learned parameters are computed. The executor trusts these
 * shapes, so everything a kernel would choke on (channels not divisible by
 * groups, a kernel larger than its padded input, shapes that cannot be
 * broadcast, sizes that overflow) is refused here with the file and line.
 *
 * Counting conventions (models/README.md): MACs are multiply-accumulates of
 * conv, fc and matmul only; parameters are learned ones, with batch norm as
 * 2 per channel (gamma, beta; the running mean and variance are statistics,
 * not parameters), as in torchvision's and Keras' trainable counts.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "util.h"
#include "window.h"

#define INFER_MAX_DIM (1 << 24)
#define INFER_MAX_ELEMS (1LL << 32)

struct infer_attr {
	const char *key;
	size_t key_len;
	const char *val; /* NULL for a flag */
	bool used;
};

struct infer_layer {
	struct model_ctx *c;
	struct model_layer *l;
	struct infer_attr *attrs; /* one per token after the name */
	int nr_attrs;
	const struct model_shape *in[MODEL_MAX_INPUTS];
};

struct infer_op {
	const char *name;
	int min_inputs, max_inputs;
	bool fused_act;
	int (*infer)(struct infer_layer *il);
};

static const char *const infer_act_names[] = {
	[MODEL_ACT_NONE] = "none",
	[MODEL_ACT_RELU] = "relu",
	[MODEL_ACT_RELU6] = "relu6",
	[MODEL_ACT_LEAKY_RELU] = "leaky_relu",
	[MODEL_ACT_SIGMOID] = "sigmoid",
	[MODEL_ACT_SWISH] = "swish",
	[MODEL_ACT_GELU] = "gelu",
	[MODEL_ACT_TANH] = "tanh",
	[MODEL_ACT_HARD_SIGMOID] = "hard_sigmoid",
	[MODEL_ACT_CLIP] = "clip",
	[MODEL_ACT_HARD_SWISH] = "hard_swish",
};

static int infer_fail(struct infer_layer *il, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int infer_fail(struct infer_layer *il, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return model_fail(il->c, "%s '%s': %s", model_op_name(il->l->op), il->l->name, msg);
}

int model_parse_int(const char *s, int64_t *v)
{
	long long x;
	char *end;

	if (!((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')))
		return -EINVAL;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*v = x;
	return 0;
}

static int infer_parse_float(const char *s, double *v)
{
	char *end;

	if (!*s || strspn(s, "0123456789.eE+-") != strlen(s))
		return -EINVAL;
	errno = 0;
	*v = strtod(s, &end);
	if (errno == ERANGE || !isfinite(*v))
		return -ERANGE;
	return *end ? -EINVAL : 0;
}

static void infer_format_shape(const struct model_shape *s, char *buf, size_t len)
{
	size_t n = 0;
	int i, k;

	buf[0] = '\0';
	for (i = 0; i < s->ndims && n < len; i++) {
		k = snprintf(buf + n, len - n, "%s%lld", i ? "," : "[", (long long)s->dims[i]);
		if (k < 0)
			return;
		n += (size_t)k;
	}
	if (n < len)
		snprintf(buf + n, len - n, "%s", s->ndims ? "]" : "[]");
}

/* Layer names: letters, digits, '_', '.', '-'; starting with a letter or '_'. */
int model_check_name(struct model_ctx *c, const char *name)
{
	size_t n = strlen(name);

	if (n >= MODEL_NAME_LEN)
		return model_fail(c, "name '%.40s...' is longer than %d characters", name,
				  MODEL_NAME_LEN - 1);
	if (!n ||
	    !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
	      name[0] == '_') ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n)
		return model_fail(c,
				  "bad name '%s': use letters, digits, '_', '.', '-', starting "
				  "with a letter or '_'",
				  name);
	return 0;
}

static uint32_t infer_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Returns the layer index of name, or -1. */
static int infer_lookup(const struct model_ctx *c, const char *name)
{
	uint32_t mask, i;

	if (!c->nr_slots)
		return -1;
	mask = (uint32_t)c->nr_slots - 1;
	for (i = infer_hash(name) & mask; c->name_slots[i]; i = (i + 1) & mask)
		if (!strcmp(c->m->layers[c->name_slots[i] - 1].name, name))
			return c->name_slots[i] - 1;
	return -1;
}

static int infer_insert(struct model_ctx *c, int idx)
{
	uint32_t mask, i;
	int k;

	if (2 * (c->m->nr_layers + 1) > c->nr_slots) {
		int nr = c->nr_slots ? 2 * c->nr_slots : 256;
		int *slots = calloc((size_t)nr, sizeof(int));

		if (!slots)
			return -ENOMEM;
		free(c->name_slots);
		c->name_slots = slots;
		c->nr_slots = nr;
		for (k = 0; k < idx; k++) {
			mask = (uint32_t)nr - 1;
			for (i = infer_hash(c->m->layers[k].name) & mask; slots[i];
			     i = (i + 1) & mask)
				;
			slots[i] = k + 1;
		}
	}
	mask = (uint32_t)c->nr_slots - 1;
	for (i = infer_hash(c->m->layers[idx].name) & mask; c->name_slots[i]; i = (i + 1) & mask)
		;
	c->name_slots[i] = idx + 1;
	return 0;
}

static struct infer_attr *infer_attr(struct infer_layer *il, const char *key)
{
	int i;

	for (i = 0; i < il->nr_attrs; i++) {
		if (strlen(key) == il->attrs[i].key_len &&
		    !memcmp(il->attrs[i].key, key, il->attrs[i].key_len)) {
			il->attrs[i].used = true;
			return &il->attrs[i];
		}
	}
	return NULL;
}

/* A valued attribute, or NULL when absent (an error when required). */
static const char *infer_value(struct infer_layer *il, const char *key, bool required, int *err)
{
	struct infer_attr *a = infer_attr(il, key);

	*err = 0;
	if (!a) {
		if (required)
			*err = infer_fail(il, "missing attribute '%s='", key);
		return NULL;
	}
	if (!a->val || !*a->val) {
		*err = infer_fail(il, "attribute '%s' needs a value ('%s=...')", key, key);
		return NULL;
	}
	return a->val;
}

static int infer_flag(struct infer_layer *il, const char *key, bool *on)
{
	struct infer_attr *a = infer_attr(il, key);

	*on = a != NULL;
	if (a && a->val)
		return infer_fail(il, "'%s' is a flag and takes no value", key);
	return 0;
}

static int infer_check_int(struct infer_layer *il, const char *key, const char *s, int64_t min,
			   int64_t max, int64_t *v)
{
	int r = model_parse_int(s, v);

	if (r == -ERANGE || (!r && (*v < min || *v > max)))
		return infer_fail(il, "%s=%s is out of range [%lld, %lld]", key, s, (long long)min,
				  (long long)max);
	if (r)
		return infer_fail(il, "%s=%s is not an integer", key, s);
	return 0;
}

static int infer_int(struct infer_layer *il, const char *key, bool required, int64_t min,
		     int64_t max, int64_t def, int64_t *v)
{
	int err;
	const char *s = infer_value(il, key, required, &err);

	*v = def;
	if (!s)
		return err;
	return infer_check_int(il, key, s, min, max, v);
}

static int infer_float(struct infer_layer *il, const char *key, bool required, double min,
		       double max, double def, float *v)
{
	int err;
	const char *s = infer_value(il, key, required, &err);
	double d;
	int r;

	*v = (float)def;
	if (!s)
		return err;
	r = infer_parse_float(s, &d);
	if (r == -ERANGE || (!r && (d < min || d > max)))
		return infer_fail(il, "%s=%s is out of range [%g, %g]", key, s, min, max);
	if (r)
		return infer_fail(il, "%s=%s is not a number", key, s);
	*v = (float)d;
	return 0;
}

/* "3" (both) or "1x7" (height x width). */
static int infer_pair(struct infer_layer *il, const char *key, bool required, int def, int *h,
		      int *w)
{
	char buf[32];
	int64_t a, b;
	const char *s;
	char *x;
	int err;

	*h = *w = def;
	s = infer_value(il, key, required, &err);
	if (!s)
		return err;
	if (strlen(s) >= sizeof(buf))
		return infer_fail(il, "%s=%.20s... is too long", key, s);
	strcpy(buf, s);
	x = strchr(buf, 'x');
	if (x)
		*x = '\0';
	if (infer_check_int(il, key, buf, 1, MODEL_MAX_WINDOW, &a) ||
	    infer_check_int(il, key, x ? x + 1 : buf, 1, MODEL_MAX_WINDOW, &b))
		return -EINVAL;
	*h = (int)a;
	*w = (int)b;
	return 0;
}

/* Comma-separated integers into v[]; returns the count or a negative errno. */
static int infer_int_list(struct infer_layer *il, const char *key, const char *s, char sep,
			  int64_t min, int64_t max, int64_t *v, int max_nr)
{
	char buf[64];
	char *tok, *next;
	int n = 0;

	if (strlen(s) >= sizeof(buf))
		return infer_fail(il, "%s=%.20s... is too long", key, s);
	strcpy(buf, s);
	for (tok = buf;; tok = next + 1) {
		next = strchr(tok, sep);
		if (next)
			*next = '\0';
		if (n == max_nr)
			return infer_fail(il, "%s=%s has more than %d values", key, s, max_nr);
		if (infer_check_int(il, key, tok, min, max, &v[n]))
			return -EINVAL;
		n++;
		if (!next)
			return n;
	}
}

/* "P", "PHxPW", "T,L,B,R" or "same" (the flag tells the caller to work it out). */
static int infer_pad(struct infer_layer *il, int pad[4], bool *same)
{
	int64_t v[4];
	const char *s;
	int err, n;

	memset(pad, 0, 4 * sizeof(int));
	*same = false;
	s = infer_value(il, "pad", false, &err);
	if (!s)
		return err;
	if (!strcmp(s, "same")) {
		*same = true;
		return 0;
	}
	if (strchr(s, ',')) {
		n = infer_int_list(il, "pad", s, ',', 0, MODEL_MAX_WINDOW, v, 4);
		if (n < 0)
			return n;
		if (n != 4)
			return infer_fail(il, "pad=%s: give 1 value, HxW, or 4 values T,L,B,R", s);
		pad[0] = (int)v[0];
		pad[1] = (int)v[1];
		pad[2] = (int)v[2];
		pad[3] = (int)v[3];
		return 0;
	}
	n = infer_int_list(il, "pad", s, 'x', 0, MODEL_MAX_WINDOW, v, 2);
	if (n < 0)
		return n;
	pad[0] = pad[2] = (int)v[0];
	pad[1] = pad[3] = (int)v[n - 1];
	return 0;
}

/* TensorFlow's SAME: output = ceil(in / stride), the odd pixel of padding at the end. */
static void infer_same_pad(int64_t in, int k_eff, int stride, int *before, int *after)
{
	int64_t total = window_same_pad_total(in, k_eff, stride);

	*before = (int)(total / 2);
	*after = (int)(total - total / 2);
}

static int infer_set_out(struct infer_layer *il, int ndims, const int64_t *dims)
{
	struct model_shape *s = &il->l->out;
	int64_t elems = 1;
	char buf[128];
	int i;

	s->ndims = ndims;
	for (i = 0; i < ndims; i++)
		s->dims[i] = dims[i];
	for (i = 0; i < ndims; i++) {
		if (dims[i] < 1 || dims[i] > INFER_MAX_DIM) {
			infer_format_shape(s, buf, sizeof(buf));
			return infer_fail(il, "output shape %s has a dimension outside [1, %d]",
					  buf, INFER_MAX_DIM);
		}
		elems *= dims[i];
		if (elems > INFER_MAX_ELEMS) {
			infer_format_shape(s, buf, sizeof(buf));
			return infer_fail(il, "output shape %s has more than %lld elements", buf,
					  (long long)INFER_MAX_ELEMS);
		}
	}
	return 0;
}

static int infer_need_ndims(struct infer_layer *il, int idx, int min, int max)
{
	char buf[128];

	if (il->in[idx]->ndims >= min && il->in[idx]->ndims <= max)
		return 0;
	infer_format_shape(il->in[idx], buf, sizeof(buf));
	if (min == max)
		return infer_fail(il, "input '%s' has shape %s; expected %d dimensions",
				  il->c->m->layers[il->l->inputs[idx]].name, buf, min);
	return infer_fail(il, "input '%s' has shape %s; expected %d to %d dimensions",
			  il->c->m->layers[il->l->inputs[idx]].name, buf, min, max);
}

/* macs/params as a product of factors, refusing overflow. */
static int infer_product(struct infer_layer *il, uint64_t *out, int nr, ...)
{
	uint64_t acc = 1;
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < nr; i++) {
		uint64_t f = va_arg(ap, uint64_t);

		if (__builtin_mul_overflow(acc, f, &acc)) {
			va_end(ap);
			return infer_fail(il,
					  "layer is too large (MAC or parameter count overflows)");
		}
	}
	va_end(ap);
	*out = acc;
	return 0;
}

static int infer_normalize_axis(struct infer_layer *il, const char *key, int64_t axis, int ndims,
				int *out)
{
	if (axis < -ndims || axis >= ndims)
		return infer_fail(il, "%s=%lld is out of range for %d dimensions", key,
				  (long long)axis, ndims);
	*out = (int)(axis < 0 ? axis + ndims : axis);
	return 0;
}

static int infer_input(struct infer_layer *il)
{
	int64_t dims[MODEL_MAX_DIMS];
	const char *s;
	int err, n;

	s = infer_value(il, "shape", true, &err);
	if (!s)
		return err;
	n = infer_int_list(il, "shape", s, 'x', 1, INFER_MAX_DIM, dims, MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	return infer_set_out(il, n, dims);
}

static int infer_conv(struct infer_layer *il)
{
	struct model_conv *cv = &il->l->conv;
	const struct model_shape *in = il->in[0];
	int64_t out_ch, groups, dims[4], oh, ow, cin;
	int pad[4], kh_eff, kw_eff;
	bool same, dw;

	if (infer_need_ndims(il, 0, 4, 4) || infer_flag(il, "dw", &dw) ||
	    infer_int(il, "out", !dw, 1, INFER_MAX_DIM, in->dims[1], &out_ch) ||
	    infer_int(il, "groups", false, 1, INFER_MAX_DIM, dw ? in->dims[1] : 1, &groups) ||
	    infer_pair(il, "k", true, 1, &cv->kh, &cv->kw) ||
	    infer_pair(il, "stride", false, 1, &cv->stride_h, &cv->stride_w) ||
	    infer_pair(il, "dil", false, 1, &cv->dil_h, &cv->dil_w) || infer_pad(il, pad, &same) ||
	    infer_flag(il, "bias", &cv->bias) || infer_flag(il, "bn", &cv->batch_norm))
		return -EINVAL;
	cin = in->dims[1];
	if (dw && groups != cin)
		return infer_fail(il, "'dw' means groups=%lld (the input channels); drop groups=",
				  (long long)cin);
	if (cin % groups)
		return infer_fail(il, "input channels %lld are not divisible by groups=%lld",
				  (long long)cin, (long long)groups);
	if (out_ch % groups)
		return infer_fail(il, "out=%lld is not divisible by groups=%lld", (long long)out_ch,
				  (long long)groups);
	kh_eff = cv->dil_h * (cv->kh - 1) + 1;
	kw_eff = cv->dil_w * (cv->kw - 1) + 1;
	if (same) {
		infer_same_pad(in->dims[2], kh_eff, cv->stride_h, &pad[0], &pad[2]);
		infer_same_pad(in->dims[3], kw_eff, cv->stride_w, &pad[1], &pad[3]);
	}
	cv->pad_t = pad[0];
	cv->pad_l = pad[1];
	cv->pad_b = pad[2];
	cv->pad_r = pad[3];
	cv->out_channels = out_ch;
	cv->groups = groups;
	if (in->dims[2] + pad[0] + pad[2] < kh_eff || in->dims[3] + pad[1] + pad[3] < kw_eff)
		return infer_fail(
			il, "kernel %dx%d (dilated) is larger than the padded input %lldx%lld",
			kh_eff, kw_eff, (long long)(in->dims[2] + pad[0] + pad[2]),
			(long long)(in->dims[3] + pad[1] + pad[3]));
	oh = window_out_len(in->dims[2] + pad[0] + pad[2], kh_eff, cv->stride_h);
	ow = window_out_len(in->dims[3] + pad[1] + pad[3], kw_eff, cv->stride_w);
	dims[0] = in->dims[0];
	dims[1] = out_ch;
	dims[2] = oh;
	dims[3] = ow;
	if (infer_set_out(il, 4, dims) ||
	    infer_product(il, &il->l->macs, 6, (uint64_t)dims[0], (uint64_t)(out_ch * oh * ow),
			  (uint64_t)(cin / groups), (uint64_t)cv->kh, (uint64_t)cv->kw,
			  (uint64_t)1) ||
	    infer_product(il, &il->l->params, 4, (uint64_t)out_ch, (uint64_t)(cin / groups),
			  (uint64_t)cv->kh, (uint64_t)cv->kw))
		return -EINVAL;
	il->l->params += (uint64_t)out_ch * ((cv->bias ? 1 : 0) + (cv->batch_norm ? 2 : 0));
	return 0;
}

/*
 * A transposed convolution: every input pixel scatters a kernel into the
 * output, [N, out, (H-1)s - pt - pb + dil(k-1) + 1, ...]. Counted as the
 * convolution it is the gradient of: N x IC x H x W x out/groups x kh x kw
 * MACs, IC x out/groups x kh x kw weights (+ out biases).
 */
static int infer_deconv(struct infer_layer *il)
{
	struct model_conv *cv = &il->l->conv;
	const struct model_shape *in = il->in[0];
	int64_t out_ch, groups, dims[4], cin;
	int pad[4];
	bool same;

	if (infer_need_ndims(il, 0, 4, 4) ||
	    infer_int(il, "out", true, 1, INFER_MAX_DIM, 0, &out_ch) ||
	    infer_int(il, "groups", false, 1, INFER_MAX_DIM, 1, &groups) ||
	    infer_pair(il, "k", true, 1, &cv->kh, &cv->kw) ||
	    infer_pair(il, "stride", false, 1, &cv->stride_h, &cv->stride_w) ||
	    infer_pair(il, "dil", false, 1, &cv->dil_h, &cv->dil_w) || infer_pad(il, pad, &same) ||
	    infer_flag(il, "bias", &cv->bias))
		return -EINVAL;
	cin = in->dims[1];
	if (same)
		return infer_fail(il, "pad=same is for conv; give deconv's padding");
	if (cin % groups || out_ch % groups)
		return infer_fail(il,
				  "input channels %lld and out=%lld are not divisible by "
				  "groups=%lld",
				  (long long)cin, (long long)out_ch, (long long)groups);
	cv->pad_t = pad[0];
	cv->pad_l = pad[1];
	cv->pad_b = pad[2];
	cv->pad_r = pad[3];
	cv->out_channels = out_ch;
	cv->groups = groups;
	dims[0] = in->dims[0];
	dims[1] = out_ch;
	dims[2] = (in->dims[2] - 1) * cv->stride_h - pad[0] - pad[2] + cv->dil_h * (cv->kh - 1) + 1;
	dims[3] = (in->dims[3] - 1) * cv->stride_w - pad[1] - pad[3] + cv->dil_w * (cv->kw - 1) + 1;
	if (infer_set_out(il, 4, dims) ||
	    infer_product(il, &il->l->macs, 6, (uint64_t)model_shape_elems(in),
			  (uint64_t)(out_ch / groups), (uint64_t)cv->kh, (uint64_t)cv->kw,
			  (uint64_t)1, (uint64_t)1) ||
	    infer_product(il, &il->l->params, 4, (uint64_t)cin, (uint64_t)(out_ch / groups),
			  (uint64_t)cv->kh, (uint64_t)cv->kw))
		return -EINVAL;
	il->l->params += cv->bias ? (uint64_t)out_ch : 0;
	return 0;
}

static int infer_fc(struct infer_layer *il)
{
	const struct model_shape *in = il->in[0];
	int64_t out, dims[MODEL_MAX_DIMS];
	int64_t k = in->dims[in->ndims - 1];
	int i;

	if (infer_need_ndims(il, 0, 2, MODEL_MAX_DIMS) ||
	    infer_int(il, "out", true, 1, INFER_MAX_DIM, 0, &out) ||
	    infer_flag(il, "bias", &il->l->fc.bias))
		return -EINVAL;
	il->l->fc.out_features = out;
	for (i = 0; i < in->ndims; i++)
		dims[i] = in->dims[i];
	dims[in->ndims - 1] = out;
	if (infer_set_out(il, in->ndims, dims) ||
	    infer_product(il, &il->l->macs, 2, (uint64_t)model_shape_elems(in), (uint64_t)out) ||
	    infer_product(il, &il->l->params, 2, (uint64_t)k, (uint64_t)out))
		return -EINVAL;
	il->l->params += il->l->fc.bias ? (uint64_t)out : 0;
	return 0;
}

static int infer_matmul(struct infer_layer *il)
{
	const struct model_shape *a = il->in[0], *b = il->in[1];
	struct model_matmul *mm = &il->l->matmul;
	int64_t dims[MODEL_MAX_DIMS], m, n, k, kb, batch = 1;
	char sa[128], sb[128];
	int nd = a->ndims, i;

	if (infer_need_ndims(il, 0, 2, MODEL_MAX_DIMS) ||
	    infer_need_ndims(il, 1, 2, MODEL_MAX_DIMS) ||
	    infer_flag(il, "transpose_b", &mm->transpose_b) ||
	    infer_float(il, "alpha", false, -1e6, 1e6, 1.0, &mm->alpha))
		return -EINVAL;
	infer_format_shape(a, sa, sizeof(sa));
	infer_format_shape(b, sb, sizeof(sb));
	if (b->ndims != nd)
		return infer_fail(il, "operands %s and %s differ in rank", sa, sb);
	for (i = 0; i < nd - 2; i++) {
		if (a->dims[i] != b->dims[i])
			return infer_fail(il, "batch dimensions of %s and %s differ", sa, sb);
		dims[i] = a->dims[i];
		batch *= a->dims[i];
	}
	m = a->dims[nd - 2];
	k = a->dims[nd - 1];
	kb = mm->transpose_b ? b->dims[nd - 1] : b->dims[nd - 2];
	n = mm->transpose_b ? b->dims[nd - 2] : b->dims[nd - 1];
	if (k != kb)
		return infer_fail(il, "cannot multiply %s by %s%s: inner dimensions %lld and %lld",
				  sa, sb, mm->transpose_b ? "^T" : "", (long long)k, (long long)kb);
	dims[nd - 2] = m;
	dims[nd - 1] = n;
	if (infer_set_out(il, nd, dims))
		return -EINVAL;
	return infer_product(il, &il->l->macs, 4, (uint64_t)batch, (uint64_t)m, (uint64_t)n,
			     (uint64_t)k);
}

static int infer_pool(struct infer_layer *il)
{
	struct model_pool *pl = &il->l->pool;
	const struct model_shape *in = il->in[0];
	int64_t dims[4], oh, ow;
	const char *kind;
	int pad[4], err, i;
	bool same, ceil_mode;

	if (infer_need_ndims(il, 0, 4, 4))
		return -EINVAL;
	kind = infer_value(il, "kind", true, &err);
	if (!kind)
		return err;
	dims[0] = in->dims[0];
	dims[1] = in->dims[1];
	if (!strcmp(kind, "global_avg")) {
		pl->kind = MODEL_POOL_GLOBAL_AVG;
		if (in->dims[2] > INT32_MAX || in->dims[3] > INT32_MAX)
			return infer_fail(il, "input too large");
		pl->kh = (int)in->dims[2];
		pl->kw = (int)in->dims[3];
		pl->stride_h = pl->stride_w = 1;
		dims[2] = dims[3] = 1;
		return infer_set_out(il, 4, dims);
	}
	if (!strcmp(kind, "max"))
		pl->kind = MODEL_POOL_MAX;
	else if (!strcmp(kind, "avg"))
		pl->kind = MODEL_POOL_AVG;
	else
		return infer_fail(il, "kind=%s: expected max, avg or global_avg", kind);
	if (infer_pair(il, "k", true, 1, &pl->kh, &pl->kw) ||
	    infer_pair(il, "stride", false, 1, &pl->stride_h, &pl->stride_w) ||
	    infer_pad(il, pad, &same) || infer_flag(il, "ceil", &ceil_mode))
		return -EINVAL;
	if (same) {
		infer_same_pad(in->dims[2], pl->kh, pl->stride_h, &pad[0], &pad[2]);
		infer_same_pad(in->dims[3], pl->kw, pl->stride_w, &pad[1], &pad[3]);
	}
	for (i = 0; i < 4; i++)
		if (pad[i] >= (i % 2 ? pl->kw : pl->kh))
			return infer_fail(il, "padding %d is not smaller than the window", pad[i]);
	if (in->dims[2] + pad[0] + pad[2] < pl->kh || in->dims[3] + pad[1] + pad[3] < pl->kw)
		return infer_fail(il, "window %dx%d is larger than the padded input", pl->kh,
				  pl->kw);
	oh = window_out_len(in->dims[2] + pad[0] + pad[2], pl->kh, pl->stride_h);
	ow = window_out_len(in->dims[3] + pad[1] + pad[3], pl->kw, pl->stride_w);
	if (ceil_mode) {
		/*
		 * Caffe's rounding up, as extra bottom/right padding so kernels
		 * only ever see floor arithmetic; like PyTorch, a last window
		 * starting in the padding is dropped.
		 */
		oh = (in->dims[2] + pad[0] + pad[2] - pl->kh + pl->stride_h - 1) / pl->stride_h + 1;
		ow = (in->dims[3] + pad[1] + pad[3] - pl->kw + pl->stride_w - 1) / pl->stride_w + 1;
		if ((oh - 1) * pl->stride_h >= in->dims[2] + pad[0])
			oh--;
		if ((ow - 1) * pl->stride_w >= in->dims[3] + pad[1])
			ow--;
		pad[2] = (int)((oh - 1) * pl->stride_h + pl->kh - in->dims[2] - pad[0]);
		pad[3] = (int)((ow - 1) * pl->stride_w + pl->kw - in->dims[3] - pad[1]);
		if (pad[2] < 0)
			pad[2] = 0;
		if (pad[3] < 0)
			pad[3] = 0;
	}
	pl->pad_t = pad[0];
	pl->pad_l = pad[1];
	pl->pad_b = pad[2];
	pl->pad_r = pad[3];
	dims[2] = oh;
	dims[3] = ow;
	return infer_set_out(il, 4, dims);
}

static int infer_same_shape(struct infer_layer *il)
{
	return infer_set_out(il, il->in[0]->ndims, il->in[0]->dims);
}

/* const=SHAPE: the constant second operand of a binary op with one input. */
static int infer_binary_const(struct infer_layer *il)
{
	struct model_binary *bn = &il->l->binary;
	const char *s;
	int err, n;

	s = infer_value(il, "const", false, &err);
	if (err || infer_flag(il, "const_first", &bn->const_first))
		return -EINVAL;
	bn->has_const = s != NULL;
	if (il->l->nr_inputs == 2) {
		if (bn->has_const || bn->const_first)
			return infer_fail(il, "const= and const_first take one input, not two");
		return 0;
	}
	if (!s)
		return infer_fail(il,
				  "with one input, give the constant operand's shape: const=SHAPE");
	if (bn->const_first && il->l->op != MODEL_OP_SUB)
		return infer_fail(il, "const_first is for sub only");
	n = infer_int_list(il, "const", s, 'x', 1, INFER_MAX_DIM, bn->cshape.dims, MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	bn->cshape.ndims = n;
	il->in[1] = &bn->cshape;
	il->l->params = (uint64_t)model_shape_elems(&bn->cshape);
	return 0;
}

static int infer_broadcast(struct infer_layer *il)
{
	const struct model_shape *a = il->in[0], *b;
	char sa[128], sb[128];
	int i;

	if (infer_binary_const(il))
		return -EINVAL;
	b = il->in[1];

	for (i = 1; i <= b->ndims; i++) {
		if (i > a->ndims || (b->dims[b->ndims - i] != 1 &&
				     b->dims[b->ndims - i] != a->dims[a->ndims - i])) {
			infer_format_shape(a, sa, sizeof(sa));
			infer_format_shape(b, sb, sizeof(sb));
			return infer_fail(
				il, "shape %s of '%s' cannot be broadcast to shape %s of '%s'", sb,
				il->l->binary.has_const ? "const" :
							  il->c->m->layers[il->l->inputs[1]].name,
				sa, il->c->m->layers[il->l->inputs[0]].name);
		}
	}
	return infer_same_shape(il);
}

static int infer_concat(struct infer_layer *il)
{
	const struct model_shape *a = il->in[0];
	int64_t axis, dims[MODEL_MAX_DIMS];
	char sa[128], sb[128];
	int i, d;

	if (infer_int(il, "axis", false, -MODEL_MAX_DIMS, MODEL_MAX_DIMS - 1, 1, &axis) ||
	    infer_normalize_axis(il, "axis", axis, a->ndims, &il->l->axis))
		return -EINVAL;
	memcpy(dims, a->dims, sizeof(dims));
	for (i = 1; i < il->l->nr_inputs; i++) {
		const struct model_shape *b = il->in[i];
		bool ok = b->ndims == a->ndims;

		for (d = 0; ok && d < a->ndims; d++)
			ok = d == il->l->axis || a->dims[d] == b->dims[d];
		if (!ok) {
			infer_format_shape(a, sa, sizeof(sa));
			infer_format_shape(b, sb, sizeof(sb));
			return infer_fail(il, "cannot concatenate %s and %s along axis %d", sa, sb,
					  il->l->axis);
		}
		dims[il->l->axis] += b->dims[il->l->axis];
	}
	return infer_set_out(il, a->ndims, dims);
}

static int infer_layer_norm(struct infer_layer *il)
{
	const struct model_shape *in = il->in[0];

	if (infer_float(il, "eps", false, 1e-30, 1.0, 1e-5, &il->l->eps))
		return -EINVAL;
	il->l->params = 2 * (uint64_t)in->dims[in->ndims - 1];
	return infer_same_shape(il);
}

static int infer_softmax(struct infer_layer *il)
{
	int64_t axis;

	if (infer_int(il, "axis", false, -MODEL_MAX_DIMS, MODEL_MAX_DIMS - 1, -1, &axis) ||
	    infer_normalize_axis(il, "axis", axis, il->in[0]->ndims, &il->l->axis))
		return -EINVAL;
	return infer_same_shape(il);
}

static int infer_lrn(struct infer_layer *il)
{
	struct model_lrn *lrn = &il->l->lrn;
	int64_t size;

	if (infer_need_ndims(il, 0, 4, 4) || infer_int(il, "size", true, 1, 255, 0, &size) ||
	    infer_float(il, "alpha", false, 0, 1e6, 1e-4, &lrn->alpha) ||
	    infer_float(il, "beta", false, 0, 1e6, 0.75, &lrn->beta) ||
	    infer_float(il, "k", false, 1e-9, 1e6, 1.0, &lrn->k))
		return -EINVAL;
	if (size % 2 == 0)
		return infer_fail(il, "size=%lld must be odd", (long long)size);
	lrn->size = (int)size;
	return infer_same_shape(il);
}

static int infer_reshape(struct infer_layer *il)
{
	struct model_shape *t = &il->l->reshape;
	int64_t dims[MODEL_MAX_DIMS], known = 1, in_elems = model_shape_elems(il->in[0]);
	int n, i, wild = -1;
	const char *s;
	char sa[128];
	int err;

	s = infer_value(il, "shape", true, &err);
	if (!s)
		return err;
	n = infer_int_list(il, "shape", s, 'x', -1, INFER_MAX_DIM, dims, MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (dims[i] == 0)
			return infer_fail(il, "shape=%s: dimensions must be >= 1 (or one -1)", s);
		if (dims[i] == -1) {
			if (wild >= 0)
				return infer_fail(il, "shape=%s: at most one -1", s);
			wild = i;
			continue;
		}
		known *= dims[i]; /* <= 2^32 * 2^24 before the check below: no overflow */
		if (known > INFER_MAX_ELEMS)
			return infer_fail(il, "shape=%s is too large", s);
	}
	if (wild >= 0) {
		if (in_elems % known)
			return infer_fail(il, "shape=%s does not divide %lld elements", s,
					  (long long)in_elems);
		dims[wild] = in_elems / known;
		known = in_elems;
	}
	if (known != in_elems) {
		infer_format_shape(il->in[0], sa, sizeof(sa));
		return infer_fail(il, "shape=%s holds %lld elements but the input %s holds %lld", s,
				  (long long)known, sa, (long long)in_elems);
	}
	if (infer_set_out(il, n, dims))
		return -EINVAL;
	*t = il->l->out;
	return 0;
}

static int infer_transpose(struct infer_layer *il)
{
	const struct model_shape *in = il->in[0];
	int64_t perm[MODEL_MAX_DIMS], dims[MODEL_MAX_DIMS];
	bool seen[MODEL_MAX_DIMS] = { false };
	const char *s;
	int n, i, err;

	s = infer_value(il, "perm", true, &err);
	if (!s)
		return err;
	n = infer_int_list(il, "perm", s, ',', 0, MODEL_MAX_DIMS - 1, perm, MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	if (n != in->ndims)
		return infer_fail(il, "perm=%s has %d entries but the input has %d dimensions", s,
				  n, in->ndims);
	for (i = 0; i < n; i++) {
		if (perm[i] >= n || seen[perm[i]])
			return infer_fail(il, "perm=%s is not a permutation of 0..%d", s, n - 1);
		seen[perm[i]] = true;
		il->l->perm[i] = (int)perm[i];
		dims[i] = in->dims[perm[i]];
	}
	return infer_set_out(il, n, dims);
}

static int infer_embed(struct infer_layer *il)
{
	struct model_embed *e = &il->l->embed;
	const struct model_shape *in = il->in[0];
	int64_t dims[3];

	if (infer_need_ndims(il, 0, 2, 2) ||
	    infer_int(il, "vocab", true, 1, INFER_MAX_DIM, 0, &e->vocab) ||
	    infer_int(il, "dim", true, 1, INFER_MAX_DIM, 0, &e->dim))
		return -EINVAL;
	dims[0] = in->dims[0];
	dims[1] = in->dims[1];
	dims[2] = e->dim;
	if (infer_set_out(il, 3, dims))
		return -EINVAL;
	return infer_product(il, &il->l->params, 2, (uint64_t)e->vocab, (uint64_t)e->dim);
}

static int infer_resize(struct infer_layer *il)
{
	const struct model_shape *in = il->in[0];
	int64_t dims[4], hw[2];
	const char *mode, *s;
	int err, n;

	if (infer_need_ndims(il, 0, 4, 4))
		return -EINVAL;
	mode = infer_value(il, "mode", true, &err);
	if (!mode)
		return err;
	if (strcmp(mode, "nearest") && strcmp(mode, "linear"))
		return infer_fail(il, "mode=%s: expected nearest or linear", mode);
	il->l->resize.linear = mode[0] == 'l';
	s = infer_value(il, "out", true, &err);
	if (!s)
		return err;
	n = infer_int_list(il, "out", s, 'x', 1, INFER_MAX_DIM, hw, 2);
	if (n < 0)
		return n;
	if (n != 2)
		return infer_fail(il, "out=%s: give the output's HxW", s);
	for (int i = 0; i < 2; i++)
		if (!il->l->resize.linear && hw[i] % in->dims[2 + i])
			return infer_fail(il,
					  "out=%s: nearest needs integer factors of the input's "
					  "%lldx%lld",
					  s, (long long)in->dims[2], (long long)in->dims[3]);
	dims[0] = in->dims[0];
	dims[1] = in->dims[1];
	dims[2] = hw[0];
	dims[3] = hw[1];
	return infer_set_out(il, 4, dims);
}

static const char *const infer_reduce_kinds[] = {
	[MODEL_REDUCE_MEAN] = "mean",
	[MODEL_REDUCE_MAX] = "max",
	[MODEL_REDUCE_MIN] = "min",
	[MODEL_REDUCE_SUM] = "sum",
};

static int infer_reduce(struct infer_layer *il)
{
	const struct model_shape *in = il->in[0];
	struct model_reduce *r = &il->l->reduce;
	int64_t axes[MODEL_MAX_DIMS], dims[MODEL_MAX_DIMS];
	const char *kind, *s;
	size_t k;
	int err, n, a = 0;

	kind = infer_value(il, "kind", true, &err);
	if (!kind)
		return err;
	for (k = 0; k < ARRAY_SIZE(infer_reduce_kinds); k++)
		if (!strcmp(kind, infer_reduce_kinds[k]))
			break;
	if (k == ARRAY_SIZE(infer_reduce_kinds))
		return infer_fail(il, "kind=%s: expected mean, max, min or sum", kind);
	r->kind = (enum model_reduce_kind)k;
	s = infer_value(il, "axes", true, &err);
	if (!s)
		return err;
	n = infer_int_list(il, "axes", s, ',', -MODEL_MAX_DIMS, MODEL_MAX_DIMS - 1, axes,
			   MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	memcpy(dims, in->dims, sizeof(dims));
	r->axes = 0;
	for (int i = 0; i < n; i++) {
		if (infer_normalize_axis(il, "axes", axes[i], in->ndims, &a))
			return -EINVAL;
		if (r->axes & (1u << a))
			return infer_fail(il, "axes=%s names axis %d twice", s, a);
		r->axes |= 1u << a;
		dims[a] = 1;
	}
	return infer_set_out(il, in->ndims, dims);
}

/* begin= and end=: one count per dim of the input, 'x'-separated. */
static int infer_pad_side(struct infer_layer *il, const char *key, int64_t *v)
{
	const char *s;
	int err, n;

	s = infer_value(il, key, true, &err);
	if (!s)
		return err;
	n = infer_int_list(il, key, s, 'x', 0, INFER_MAX_DIM, v, MODEL_MAX_DIMS);
	if (n < 0)
		return n;
	if (n != il->in[0]->ndims)
		return infer_fail(il, "%s=%s has %d counts for %d dimensions", key, s, n,
				  il->in[0]->ndims);
	return 0;
}

static int infer_pad_op(struct infer_layer *il)
{
	struct model_pad *p = &il->l->pad;
	int64_t dims[MODEL_MAX_DIMS];

	if (infer_pad_side(il, "begin", p->begin) || infer_pad_side(il, "end", p->end) ||
	    infer_float(il, "value", false, -1e30, 1e30, 0, &p->value))
		return -EINVAL;
	for (int i = 0; i < il->in[0]->ndims; i++)
		dims[i] = il->in[0]->dims[i] + p->begin[i] + p->end[i];
	return infer_set_out(il, il->in[0]->ndims, dims);
}

static int infer_slice(struct infer_layer *il)
{
	struct model_slice *sl = &il->l->slice;
	const struct model_shape *in = il->in[0];
	int64_t axis, dims[MODEL_MAX_DIMS];

	if (infer_int(il, "axis", true, -MODEL_MAX_DIMS, MODEL_MAX_DIMS - 1, 0, &axis) ||
	    infer_normalize_axis(il, "axis", axis, in->ndims, &sl->axis) ||
	    infer_int(il, "start", false, 0, INFER_MAX_DIM, 0, &sl->start) ||
	    infer_int(il, "len", true, 1, INFER_MAX_DIM, 0, &sl->len))
		return -EINVAL;
	if (sl->start + sl->len > in->dims[sl->axis])
		return infer_fail(il, "[%lld, %lld) is outside axis %d of size %lld",
				  (long long)sl->start, (long long)(sl->start + sl->len), sl->axis,
				  (long long)in->dims[sl->axis]);
	memcpy(dims, in->dims, sizeof(dims));
	dims[sl->axis] = sl->len;
	return infer_set_out(il, in->ndims, dims);
}

static int infer_act(struct infer_layer *il)
{
	if (il->l->act == MODEL_ACT_NONE)
		return infer_fail(il,
				  "missing attribute 'act=' (relu, relu6, leaky_relu, "
				  "sigmoid, swish, gelu, tanh, hard_sigmoid, hard_swish, clip)");
	return infer_same_shape(il);
}

static const struct infer_op infer_ops[MODEL_OP_COUNT] = {
	[MODEL_OP_INPUT] = { "input", 0, 0, false, infer_input },
	[MODEL_OP_CONV] = { "conv", 1, 1, true, infer_conv },
	[MODEL_OP_FC] = { "fc", 1, 1, true, infer_fc },
	[MODEL_OP_MATMUL] = { "matmul", 2, 2, false, infer_matmul },
	[MODEL_OP_POOL] = { "pool", 1, 1, false, infer_pool },
	[MODEL_OP_ACT] = { "act", 1, 1, true, infer_act },
	[MODEL_OP_ADD] = { "add", 1, 2, true, infer_broadcast },
	[MODEL_OP_MUL] = { "mul", 1, 2, true, infer_broadcast },
	[MODEL_OP_CONCAT] = { "concat", 2, MODEL_MAX_INPUTS, false, infer_concat },
	[MODEL_OP_LAYER_NORM] = { "layer_norm", 1, 1, false, infer_layer_norm },
	[MODEL_OP_SOFTMAX] = { "softmax", 1, 1, false, infer_softmax },
	[MODEL_OP_LRN] = { "lrn", 1, 1, false, infer_lrn },
	[MODEL_OP_RESHAPE] = { "reshape", 1, 1, false, infer_reshape },
	[MODEL_OP_TRANSPOSE] = { "transpose", 1, 1, false, infer_transpose },
	[MODEL_OP_EMBED] = { "embed", 1, 1, false, infer_embed },
	[MODEL_OP_SLICE] = { "slice", 1, 1, false, infer_slice },
	[MODEL_OP_SUB] = { "sub", 1, 2, true, infer_broadcast },
	[MODEL_OP_DIV] = { "div", 1, 2, true, infer_broadcast },
	[MODEL_OP_MAX] = { "max", 1, 2, true, infer_broadcast },
	[MODEL_OP_MIN] = { "min", 1, 2, true, infer_broadcast },
	[MODEL_OP_RESIZE] = { "resize", 1, 1, false, infer_resize },
	[MODEL_OP_DECONV] = { "deconv", 1, 1, true, infer_deconv },
	[MODEL_OP_REDUCE] = { "reduce", 1, 1, false, infer_reduce },
	[MODEL_OP_PAD] = { "pad", 1, 1, false, infer_pad_op },
	[MODEL_OP_LOG] = { "log", 1, 1, false, infer_same_shape },
};

const char *model_op_name(enum model_op op)
{
	if ((unsigned int)op >= MODEL_OP_COUNT)
		return "?";
	return infer_ops[op].name;
}

const char *model_act_name(enum model_act act)
{
	if ((unsigned int)act >= ARRAY_SIZE(infer_act_names))
		return "?";
	return infer_act_names[act];
}

int64_t model_shape_elems(const struct model_shape *s)
{
	int64_t n = 1;
	int i;

	for (i = 0; i < s->ndims; i++)
		n *= s->dims[i];
	return n;
}

static int infer_activation(struct infer_layer *il, bool allowed)
{
	struct model_layer *l = il->l;
	const char *s;
	size_t i;
	int err;

	s = infer_value(il, "act", false, &err);
	if (!s)
		return err;
	if (!allowed)
		return infer_fail(il, "takes no 'act=' (add a separate act layer)");
	for (i = 1; i < ARRAY_SIZE(infer_act_names); i++)
		if (!strcmp(s, infer_act_names[i]))
			break;
	if (i == ARRAY_SIZE(infer_act_names))
		return infer_fail(il,
				  "unknown activation '%s' (relu, relu6, leaky_relu, sigmoid, "
				  "swish, gelu, tanh, hard_sigmoid, hard_swish, clip)",
				  s);
	l->act = (enum model_act)i;
	if (l->act == MODEL_ACT_LEAKY_RELU)
		return infer_float(il, "slope", true, 0, 1, 0, &l->act_alpha);
	if (l->act == MODEL_ACT_HARD_SIGMOID)
		/* ONNX HardSigmoid's defaults */
		return infer_float(il, "slope", false, -1e6, 1e6, 0.2, &l->act_alpha) ?:
			       infer_float(il, "offset", false, -1e6, 1e6, 0.5, &l->act_beta);
	if (l->act == MODEL_ACT_CLIP) {
		if (infer_float(il, "min", true, -1e30, 1e30, 0, &l->act_alpha) ||
		    infer_float(il, "max", true, -1e30, 1e30, 0, &l->act_beta))
			return -EINVAL;
		if (l->act_alpha > l->act_beta)
			return infer_fail(il, "clip min=%g is above max=%g", l->act_alpha,
					  l->act_beta);
	}
	return 0;
}

/* in=a,b,...: names of earlier layers; absent: the previous layer. */
static int infer_inputs(struct infer_layer *il, const struct infer_op *op)
{
	struct model_ctx *c = il->c;
	struct model_layer *l = il->l;
	char buf[MODEL_PARSE_MAX_LINE + 1];
	char *name, *next;
	const char *s;
	int err, idx;

	s = infer_value(il, "in", false, &err);
	if (err)
		return err;
	if (!s) {
		if (op->min_inputs == 0)
			return 0;
		if (op->min_inputs > 1)
			return infer_fail(il, "needs in= with %d%s inputs", op->min_inputs,
					  op->max_inputs > op->min_inputs ? " or more" : "");
		if (c->m->nr_layers == 1)
			return infer_fail(il, "has no input: no layer comes before it");
		l->inputs[l->nr_inputs++] = c->m->nr_layers - 2;
		return 0;
	}
	if (op->max_inputs == 0)
		return infer_fail(il, "an input layer takes no 'in='");
	snprintf(buf, sizeof(buf), "%s", s);
	for (name = buf;; name = next + 1) {
		next = strchr(name, ',');
		if (next)
			*next = '\0';
		if (l->nr_inputs == op->max_inputs)
			return infer_fail(il, "takes at most %d input%s", op->max_inputs,
					  op->max_inputs > 1 ? "s" : "");
		if (!*name)
			return infer_fail(il, "empty name in in=%s", s);
		idx = infer_lookup(c, name);
		if (idx < 0) {
			int later = c->later_definition ? c->later_definition(c, name) : 0;

			if (later)
				return infer_fail(
					il,
					"input '%s' is defined later, at line %d (a layer "
					"may only read layers defined before it)",
					name, later);
			return infer_fail(il, "unknown input '%s'", name);
		}
		l->inputs[l->nr_inputs++] = idx;
		if (!next)
			break;
	}
	if (l->nr_inputs < op->min_inputs)
		return infer_fail(il, "needs %d%s inputs, got %d", op->min_inputs,
				  op->max_inputs > op->min_inputs ? " or more" : "", l->nr_inputs);
	return 0;
}

static int infer_layer_run(struct infer_layer *il, const struct infer_op *op, char **tok, int n)
{
	struct model_layer *l = il->l;
	int i, j, err;

	for (i = 2; i < n; i++) {
		struct infer_attr *a = &il->attrs[il->nr_attrs];
		const char *eq = strchr(tok[i], '=');

		a->key = tok[i];
		a->key_len = eq ? (size_t)(eq - tok[i]) : strlen(tok[i]);
		a->val = eq ? eq + 1 : NULL;
		a->used = false;
		if (!a->key_len)
			return infer_fail(il, "attribute '%s' has no name", tok[i]);
		for (j = 0; j < il->nr_attrs; j++)
			if (il->attrs[j].key_len == a->key_len &&
			    !memcmp(il->attrs[j].key, a->key, a->key_len))
				return infer_fail(il, "attribute '%.*s' given twice",
						  (int)a->key_len, a->key);
		il->nr_attrs++;
	}
	err = infer_inputs(il, op);
	if (err)
		return err;
	for (i = 0; i < l->nr_inputs; i++)
		il->in[i] = &il->c->m->layers[l->inputs[i]].out;
	err = infer_activation(il, op->fused_act);
	if (!err)
		err = op->infer(il);
	if (err)
		return err;
	for (i = 0; i < il->nr_attrs; i++) {
		if (!il->attrs[i].used)
			return infer_fail(il,
					  "unknown attribute '%.*s' (see models/README.md for "
					  "what %s accepts)",
					  (int)il->attrs[i].key_len, il->attrs[i].key, op->name);
	}
	return 0;
}

int model_add_layer(struct model_ctx *c, char **tok, int nr_toks)
{
	struct model *m = c->m;
	const struct infer_op *op = NULL;
	struct infer_layer il = { .c = c };
	struct model_layer *l;
	int i, err, prev;

	for (i = 0; i < MODEL_OP_COUNT; i++)
		if (!strcmp(tok[0], infer_ops[i].name))
			op = &infer_ops[i];
	if (!op)
		return model_fail(c,
				  "unknown op '%.64s' (input, conv, fc, matmul, pool, act, add, "
				  "mul, sub, div, max, min, concat, layer_norm, softmax, lrn, "
				  "reshape, transpose, embed, slice, resize, deconv, reduce, pad)",
				  tok[0]);
	if (nr_toks < 2)
		return model_fail(c, "'%s' needs a layer name: %s NAME [attributes]", tok[0],
				  tok[0]);
	if (model_check_name(c, tok[1]))
		return -EINVAL;
	prev = infer_lookup(c, tok[1]);
	if (prev >= 0)
		return model_fail(c, "duplicate layer name '%s' (first defined at line %d)", tok[1],
				  m->layers[prev].line);
	if (m->nr_layers == MODEL_MAX_LAYERS)
		return model_fail(c, "more than %d layers", MODEL_MAX_LAYERS);
	if (m->nr_layers == c->cap_layers) {
		int cap = c->cap_layers ? 2 * c->cap_layers : 64;
		struct model_layer *a = realloc(m->layers, (size_t)cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		m->layers = a;
		c->cap_layers = cap;
	}
	l = &m->layers[m->nr_layers++];
	memset(l, 0, sizeof(*l));
	strcpy(l->name, tok[1]);
	l->op = (enum model_op)(op - infer_ops);
	l->line = c->line;
	il.l = l;
	il.attrs = calloc((size_t)nr_toks, sizeof(*il.attrs));
	if (!il.attrs)
		return -ENOMEM;
	err = infer_layer_run(&il, op, tok, nr_toks);
	free(il.attrs);
	if (err)
		return err;
	return infer_insert(c, m->nr_layers - 1);
}

int model_finish(struct model_ctx *c)
{
	struct model *m = c->m;
	int i;

	m->macs = m->params = 0;
	for (i = 0; i < m->nr_layers; i++) {
		if (__builtin_add_overflow(m->macs, m->layers[i].macs, &m->macs) ||
		    __builtin_add_overflow(m->params, m->layers[i].params, &m->params)) {
			c->line = m->layers[i].line;
			return model_fail(c, "the model's MAC or parameter count overflows");
		}
	}
	return 0;
}

void model_ctx_release(struct model_ctx *c)
{
	free(c->name_slots);
	c->name_slots = NULL;
	c->nr_slots = 0;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	free(m->layers);
	free(m);
}
