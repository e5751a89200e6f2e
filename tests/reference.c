// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Plain-C reference operators: the executor's results are checked against
 * these. Each is the textbook definition as nested loops over dense tensors
 * in logical order, accumulated in double so the reference is the more
 * accurate side of every comparison. Nothing here shares code with the
 * executor except the parameter generator (exec_layer_params_generate),
 * which only produces numbers.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "executor.h"
#include "reference.h"

static float act_one(float x, enum model_act act, float alpha, float beta)
{
	double r;

	switch (act) {
	case MODEL_ACT_RELU:
		return x > 0.0f ? x : 0.0f;
	case MODEL_ACT_RELU6:
		return x < 0.0f ? 0.0f : x > 6.0f ? 6.0f : x;
	case MODEL_ACT_LEAKY_RELU:
		return x > 0.0f ? x : alpha * x;
	case MODEL_ACT_SIGMOID:
		return (float)(1.0 / (1.0 + exp(-(double)x)));
	case MODEL_ACT_SWISH:
		return (float)((double)x / (1.0 + exp(-(double)x)));
	case MODEL_ACT_GELU:
		return (float)(0.5 * x * (1.0 + erf((double)x / sqrt(2.0))));
	case MODEL_ACT_TANH:
		return (float)tanh((double)x);
	case MODEL_ACT_HARD_SIGMOID:
		r = (double)alpha * x + beta;
		return (float)(r < 0 ? 0 : r > 1 ? 1 : r);
	case MODEL_ACT_CLIP:
		return x < alpha ? alpha : x > beta ? beta : x;
	case MODEL_ACT_HARD_SWISH:
		r = (double)x + 3;
		return (float)(x * (r < 0 ? 0 : r > 6 ? 6 : r) / 6);
	default:
		return x;
	}
}

void ref_act(float *x, int64_t n, enum model_act act, float alpha, float beta)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = act_one(x[i], act, alpha, beta);
}

void ref_conv(const float *in, const int64_t in_dims[4], const float *w, const float *bias,
	      const struct model_conv *c, const int64_t out_dims[4], float *out)
{
	int64_t n = in_dims[0], ic = in_dims[1], ih = in_dims[2], iw = in_dims[3];
	int64_t oc = out_dims[1], oh = out_dims[2], ow = out_dims[3];
	int64_t g = c->groups > 0 ? c->groups : 1, icg = ic / g, ocg = oc / g;
	int dh = c->dil_h > 0 ? c->dil_h : 1, dw = c->dil_w > 0 ? c->dil_w : 1;

	for (int64_t b = 0; b < n; b++)
		for (int64_t o = 0; o < oc; o++)
			for (int64_t y = 0; y < oh; y++)
				for (int64_t x = 0; x < ow; x++) {
					int64_t grp = o / ocg;
					double acc = bias ? bias[o] : 0.0;

					for (int64_t i = 0; i < icg; i++)
						for (int ky = 0; ky < c->kh; ky++)
							for (int kx = 0; kx < c->kw; kx++) {
								int64_t sy = y * c->stride_h -
									     c->pad_t + ky * dh;
								int64_t sx = x * c->stride_w -
									     c->pad_l + kx * dw;
								int64_t ci = grp * icg + i;

								if (sy < 0 || sy >= ih || sx < 0 ||
								    sx >= iw)
									continue;
								acc += (double)in[((b * ic + ci) *
											   ih +
										   sy) * iw +
										  sx] *
								       w[((o * icg + i) * c->kh +
									  ky) * c->kw +
									 kx];
							}
					out[((b * oc + o) * oh + y) * ow + x] = (float)acc;
				}
}

void ref_batch_norm(float *x, int64_t n, int64_t c, int64_t hw, const float *gamma,
		    const float *beta, const float *mean, const float *var, float eps)
{
	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t i = 0; i < hw; i++) {
				float *v = &x[(b * c + ch) * hw + i];

				*v = (float)(gamma[ch] * (*v - mean[ch]) /
						     sqrt((double)var[ch] + eps) +
					     beta[ch]);
			}
}

void ref_fc(const float *x, const float *w, const float *bias, int64_t m, int64_t k, int64_t n,
	    float *out)
{
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double acc = bias ? bias[j] : 0.0;

			for (int64_t p = 0; p < k; p++)
				acc += (double)x[i * k + p] * w[p * n + j];
			out[i * n + j] = (float)acc;
		}
}

void ref_matmul(const float *a, const float *b, int64_t batch, int64_t b_batch, int64_t m,
		int64_t k, int64_t n, int transpose_b, float alpha, float *out)
{
	for (int64_t bt = 0; bt < batch; bt++) {
		const float *ab = a + bt * m * k, *bb = b + (b_batch > 1 ? bt : 0) * k * n;

		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double acc = 0.0;

				for (int64_t p = 0; p < k; p++)
					acc += (double)ab[i * k + p] *
					       (transpose_b ? bb[j * k + p] : bb[p * n + j]);
				out[(bt * m + i) * n + j] = (float)(acc * alpha);
			}
	}
}

void ref_pool(const float *in, const int64_t in_dims[4], const struct model_pool *p,
	      const int64_t out_dims[4], float *out)
{
	int64_t n = in_dims[0], c = in_dims[1], ih = in_dims[2], iw = in_dims[3];
	int64_t oh = out_dims[2], ow = out_dims[3];
	bool global = p->kind == MODEL_POOL_GLOBAL_AVG;
	int kh = global ? (int)ih : p->kh, kw = global ? (int)iw : p->kw;
	int sh = global ? 1 : p->stride_h, sw = global ? 1 : p->stride_w;
	int pt = global ? 0 : p->pad_t, pl = global ? 0 : p->pad_l;

	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t y = 0; y < oh; y++)
				for (int64_t x = 0; x < ow; x++) {
					double acc = p->kind == MODEL_POOL_MAX ? -INFINITY : 0.0;
					int64_t cnt = 0;

					for (int ky = 0; ky < kh; ky++)
						for (int kx = 0; kx < kw; kx++) {
							int64_t sy = y * sh - pt + ky,
								sx = x * sw - pl + kx;
							float v;

							if (sy < 0 || sy >= ih || sx < 0 ||
							    sx >= iw)
								continue;
							v = in[((b * c + ch) * ih + sy) * iw + sx];
							if (p->kind == MODEL_POOL_MAX)
								acc = v > acc ? v : acc;
							else
								acc += v;
							cnt++;
						}
					if (p->kind != MODEL_POOL_MAX)
						acc = cnt ? acc / (double)cnt : 0.0;
					out[((b * c + ch) * oh + y) * ow + x] = (float)acc;
				}
}

static float binary_one(enum model_op op, float a, float b)
{
	switch (op) {
	case MODEL_OP_MUL:
		return a * b;
	case MODEL_OP_SUB:
		return a - b;
	case MODEL_OP_DIV:
		return a / b;
	case MODEL_OP_MAX:
		return a > b ? a : b;
	case MODEL_OP_MIN:
		return a < b ? a : b;
	default:
		return a + b;
	}
}

void ref_binary(enum model_op op, const float *a, const struct model_shape *as, const float *b,
		const struct model_shape *bs, float *out)
{
	int64_t n = model_shape_elems(as), bd[MODEL_MAX_DIMS], idx[MODEL_MAX_DIMS];
	int nd = as->ndims;

	for (int i = 0; i < nd; i++) {
		int j = i - (nd - bs->ndims);

		bd[i] = j >= 0 ? bs->dims[j] : 1;
	}
	for (int64_t e = 0; e < n; e++) {
		int64_t rest = e, boff = 0;

		for (int i = nd - 1; i >= 0; i--) {
			idx[i] = rest % as->dims[i];
			rest /= as->dims[i];
		}
		for (int i = 0; i < nd; i++)
			boff = boff * bd[i] + (bd[i] == 1 ? 0 : idx[i]);
		out[e] = binary_one(op, a[e], b[boff]);
	}
}

void ref_concat(const float *const *ins, const struct model_shape *const *shapes, int nr, int axis,
		float *out)
{
	int64_t outer = 1, total_axis = 0, inner = 1, pos = 0;

	for (int i = 0; i < axis; i++)
		outer *= shapes[0]->dims[i];
	for (int i = axis + 1; i < shapes[0]->ndims; i++)
		inner *= shapes[0]->dims[i];
	for (int j = 0; j < nr; j++)
		total_axis += shapes[j]->dims[axis];
	for (int j = 0; j < nr; j++) {
		int64_t len = shapes[j]->dims[axis] * inner;

		for (int64_t o = 0; o < outer; o++)
			memcpy(out + o * total_axis * inner + pos, ins[j] + o * len,
			       (size_t)len * sizeof(float));
		pos += len;
	}
}

void ref_layer_norm(const float *x, int64_t rows, int64_t d, const float *gamma, const float *beta,
		    float eps, float *out)
{
	for (int64_t r = 0; r < rows; r++) {
		double mean = 0.0, var = 0.0;

		for (int64_t i = 0; i < d; i++)
			mean += x[r * d + i];
		mean /= (double)d;
		for (int64_t i = 0; i < d; i++)
			var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
		var /= (double)d;
		for (int64_t i = 0; i < d; i++)
			out[r * d + i] =
				(float)(gamma[i] * (x[r * d + i] - mean) / sqrt(var + eps) +
					beta[i]);
	}
}

void ref_softmax(const float *x, const struct model_shape *s, int axis, float *out)
{
	int64_t outer = 1, len = s->dims[axis], inner = 1;

	for (int i = 0; i < axis; i++)
		outer *= s->dims[i];
	for (int i = axis + 1; i < s->ndims; i++)
		inner *= s->dims[i];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t in = 0; in < inner; in++) {
			const float *px = x + o * len * inner + in;
			float *po = out + o * len * inner + in;
			double mx = -INFINITY, sum = 0.0;

			for (int64_t i = 0; i < len; i++)
				mx = px[i * inner] > mx ? px[i * inner] : mx;
			for (int64_t i = 0; i < len; i++)
				sum += exp(px[i * inner] - mx);
			for (int64_t i = 0; i < len; i++)
				po[i * inner] = (float)(exp(px[i * inner] - mx) / sum);
		}
}

void ref_lrn(const float *x, const int64_t dims[4], int size, float alpha, float beta, float k,
	     float *out)
{
	int64_t n = dims[0], c = dims[1], hw = dims[2] * dims[3];
	int64_t lo = (size - 1) / 2, hi = size - 1 - lo;

	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t i = 0; i < hw; i++) {
				double sum = 0.0;

				for (int64_t cc = ch - lo; cc <= ch + hi; cc++) {
					double v;

					if (cc < 0 || cc >= c)
						continue;
					v = x[(b * c + cc) * hw + i];
					sum += v * v;
				}
				out[(b * c + ch) * hw + i] =
					(float)(x[(b * c + ch) * hw + i] /
						pow(k + alpha / size * sum, beta));
			}
}

void ref_transpose(const float *x, const struct model_shape *s, const int *perm, float *out)
{
	int nd = s->ndims;
	int64_t n = model_shape_elems(s), od[MODEL_MAX_DIMS], idx[MODEL_MAX_DIMS],
		st[MODEL_MAX_DIMS];

	st[nd - 1] = 1;
	for (int i = nd - 2; i >= 0; i--)
		st[i] = st[i + 1] * s->dims[i + 1];
	for (int i = 0; i < nd; i++)
		od[i] = s->dims[perm[i]];
	for (int64_t e = 0; e < n; e++) {
		int64_t rest = e, src = 0;

		for (int i = nd - 1; i >= 0; i--) {
			idx[i] = rest % od[i];
			rest /= od[i];
		}
		for (int i = 0; i < nd; i++)
			src += idx[i] * st[perm[i]];
		out[e] = x[src];
	}
}

void ref_slice(const float *x, const struct model_shape *s, int axis, int64_t start, int64_t len,
	       float *out)
{
	int64_t outer = 1, inner = 1;

	for (int i = 0; i < axis; i++)
		outer *= s->dims[i];
	for (int i = axis + 1; i < s->ndims; i++)
		inner *= s->dims[i];
	for (int64_t o = 0; o < outer; o++)
		memcpy(out + o * len * inner, x + (o * s->dims[axis] + start) * inner,
		       (size_t)(len * inner) * sizeof(float));
}

void ref_deconv(const float *in, const int64_t in_dims[4], const float *w, const float *bias,
		const struct model_conv *c, const int64_t out_dims[4], float *out)
{
	int64_t ic = in_dims[1], ih = in_dims[2], iw = in_dims[3];
	int64_t oc = out_dims[1], oh = out_dims[2], ow = out_dims[3];
	int64_t g = c->groups, icg = ic / g, ocg = oc / g;
	int64_t on = out_dims[0] * oc * oh * ow;
	double *acc = calloc((size_t)on, sizeof(double));

	for (int64_t b = 0; b < in_dims[0]; b++)
		for (int64_t i = 0; i < ic; i++)
			for (int64_t y = 0; y < ih; y++)
				for (int64_t x = 0; x < iw; x++) {
					double v = in[((b * ic + i) * ih + y) * iw + x];
					int64_t grp = i / icg;

					for (int64_t o = 0; o < ocg; o++)
						for (int ky = 0; ky < c->kh; ky++)
							for (int kx = 0; kx < c->kw; kx++) {
								int64_t py = y * c->stride_h -
									     c->pad_t +
									     (int64_t)ky * c->dil_h;
								int64_t px = x * c->stride_w -
									     c->pad_l +
									     (int64_t)kx * c->dil_w;
								int64_t oo = grp * ocg + o;

								if (py < 0 || py >= oh || px < 0 ||
								    px >= ow)
									continue;
								acc[((b * oc + oo) * oh + py) * ow +
								    px] +=
									v *
									w[((i * ocg + o) * c->kh +
									   ky) * c->kw +
									  kx];
							}
				}
	for (int64_t e = 0; e < on; e++)
		out[e] = (float)(acc[e] + (bias ? bias[e / (oh * ow) % oc] : 0.0));
	free(acc);
}

void ref_reduce(const float *x, const struct model_shape *s, const struct model_reduce *r,
		float *out)
{
	int64_t n = model_shape_elems(s), on = 1, cnt, od[MODEL_MAX_DIMS];
	double *acc;

	for (int i = 0; i < s->ndims; i++) {
		od[i] = r->axes & (1u << i) ? 1 : s->dims[i];
		on *= od[i];
	}
	cnt = n / on;
	acc = malloc((size_t)on * sizeof(double));
	for (int64_t o = 0; o < on; o++)
		acc[o] = r->kind == MODEL_REDUCE_MAX ? -INFINITY :
			 r->kind == MODEL_REDUCE_MIN ? INFINITY :
						       0.0;
	for (int64_t e = 0; e < n; e++) {
		int64_t rest = e, o = 0, idx[MODEL_MAX_DIMS];
		double v = x[e];

		for (int i = s->ndims - 1; i >= 0; i--) {
			idx[i] = rest % s->dims[i];
			rest /= s->dims[i];
		}
		for (int i = 0; i < s->ndims; i++)
			o = o * od[i] + (od[i] == 1 ? 0 : idx[i]);
		if (r->kind == MODEL_REDUCE_MAX)
			acc[o] = v > acc[o] ? v : acc[o];
		else if (r->kind == MODEL_REDUCE_MIN)
			acc[o] = v < acc[o] ? v : acc[o];
		else
			acc[o] += v;
	}
	for (int64_t o = 0; o < on; o++)
		out[o] = (float)(r->kind == MODEL_REDUCE_MEAN ? acc[o] / (double)cnt : acc[o]);
	free(acc);
}

void ref_pad(const float *x, const struct model_shape *s, const struct model_pad *p, float *out)
{
	int64_t od[MODEL_MAX_DIMS], on = 1, idx[MODEL_MAX_DIMS];

	for (int i = 0; i < s->ndims; i++) {
		od[i] = s->dims[i] + p->begin[i] + p->end[i];
		on *= od[i];
	}
	for (int64_t e = 0; e < on; e++) {
		int64_t rest = e, src = 0;
		bool inside = true;

		for (int i = s->ndims - 1; i >= 0; i--) {
			idx[i] = rest % od[i] - p->begin[i];
			rest /= od[i];
			inside = inside && idx[i] >= 0 && idx[i] < s->dims[i];
		}
		for (int i = 0; inside && i < s->ndims; i++)
			src = src * s->dims[i] + idx[i];
		out[e] = inside ? x[src] : p->value;
	}
}

void ref_resize(const float *x, const int64_t in[4], bool linear, const int64_t out[4], float *y)
{
	for (int64_t nc = 0; nc < in[0] * in[1]; nc++)
		for (int64_t oh = 0; oh < out[2]; oh++)
			for (int64_t ow = 0; ow < out[3]; ow++) {
				const float *p = x + nc * in[2] * in[3];
				double v;

				if (!linear) {
					v = p[oh * in[2] / out[2] * in[3] + ow * in[3] / out[3]];
				} else {
					double fh = ((double)oh + 0.5) * (double)in[2] /
							    (double)out[2] -
						    0.5;
					double fw = ((double)ow + 0.5) * (double)in[3] /
							    (double)out[3] -
						    0.5;
					int64_t h0, w0, h1, w1;

					fh = fh < 0		      ? 0 :
					     fh > (double)(in[2] - 1) ? (double)(in[2] - 1) :
									fh;
					fw = fw < 0		      ? 0 :
					     fw > (double)(in[3] - 1) ? (double)(in[3] - 1) :
									fw;
					h0 = (int64_t)fh;
					w0 = (int64_t)fw;
					h1 = h0 + 1 < in[2] ? h0 + 1 : h0;
					w1 = w0 + 1 < in[3] ? w0 + 1 : w0;
					fh -= (double)h0;
					fw -= (double)w0;
					v = (1 - fh) * ((1 - fw) * p[h0 * in[3] + w0] +
							fw * p[h0 * in[3] + w1]) +
					    fh * ((1 - fw) * p[h1 * in[3] + w0] +
						  fw * p[h1 * in[3] + w1]);
				}
				y[(nc * out[2] + oh) * out[3] + ow] = (float)v;
			}
}

void ref_embed(const float *ids, int64_t n, const float *table, int64_t dim, float *out)
{
	for (int64_t i = 0; i < n; i++)
		memcpy(out + i * dim, table + (int64_t)ids[i] * dim, (size_t)dim * sizeof(float));
}

static int ref_conv_layer(const struct model *m, const struct model_layer *l, const float *in,
			  float *out)
{
	const struct model_shape *is = &m->layers[l->inputs[0]].out;
	struct exec_layer_params p;
	int ret = exec_layer_params_generate(m, (int)(l - m->layers), &p);

	if (ret)
		return ret;
	ref_conv(in, is->dims, p.weights, p.bias, &l->conv, l->out.dims, out);
	if (l->conv.batch_norm)
		ref_batch_norm(out, l->out.dims[0], l->out.dims[1], l->out.dims[2] * l->out.dims[3],
			       p.bn_gamma, p.bn_beta, p.bn_mean, p.bn_var, p.bn_eps);
	ref_act(out, model_shape_elems(&l->out), l->act, l->act_alpha, l->act_beta);
	exec_layer_params_free(&p);
	return 0;
}

/* add .. min: by the second input, or by the constant (const - x with const_first) */
static int ref_binary_layer(const struct model *m, int li, const float *const *ins, float *out)
{
	const struct model_layer *l = &m->layers[li];
	const struct model_shape *s0 = &m->layers[l->inputs[0]].out;
	int64_t n = model_shape_elems(&l->out);
	struct exec_layer_params p;
	int ret;

	if (!l->binary.has_const) {
		ref_binary(l->op, ins[0], s0, ins[1], &m->layers[l->inputs[1]].out, out);
	} else {
		ret = exec_layer_params_generate(m, li, &p);
		if (ret)
			return ret;
		ref_binary(l->op, ins[0], s0, p.weights, &l->binary.cshape, out);
		for (int64_t i = 0; l->binary.const_first && i < n; i++)
			out[i] = -out[i];
		exec_layer_params_free(&p);
	}
	ref_act(out, n, l->act, l->act_alpha, l->act_beta);
	return 0;
}

int ref_layer(const struct model *m, int li, const float *const *ins, float *out)
{
	const struct model_layer *l = &m->layers[li];
	const struct model_shape *s0 = l->nr_inputs ? &m->layers[l->inputs[0]].out : NULL;
	int64_t n = model_shape_elems(&l->out);
	struct exec_layer_params p = { 0 };
	int ret = 0;

	switch (l->op) {
	case MODEL_OP_INPUT:
		return 0;
	case MODEL_OP_CONV:
		return ref_conv_layer(m, l, ins[0], out);
	case MODEL_OP_FC: {
		int64_t k = s0->dims[s0->ndims - 1];

		ret = exec_layer_params_generate(m, li, &p);
		if (ret)
			return ret;
		ref_fc(ins[0], p.weights, p.bias, model_shape_elems(s0) / k, k, l->fc.out_features,
		       out);
		ref_act(out, n, l->act, l->act_alpha, l->act_beta);
		break;
	}
	case MODEL_OP_MATMUL: {
		const struct model_shape *s1 = &m->layers[l->inputs[1]].out;
		int nd = l->out.ndims;
		int64_t mm = l->out.dims[nd - 2], nn = l->out.dims[nd - 1];
		int64_t k = s0->dims[s0->ndims - 1];

		ref_matmul(ins[0], ins[1], n / (mm * nn), model_shape_elems(s1) / (k * nn), mm, k,
			   nn, l->matmul.transpose_b, l->matmul.alpha, out);
		break;
	}
	case MODEL_OP_POOL:
		ref_pool(ins[0], s0->dims, &l->pool, l->out.dims, out);
		break;
	case MODEL_OP_ACT:
		memcpy(out, ins[0], (size_t)n * sizeof(float));
		ref_act(out, n, l->act, l->act_alpha, l->act_beta);
		break;
	case MODEL_OP_CONCAT: {
		const struct model_shape *shapes[MODEL_MAX_INPUTS];

		for (int j = 0; j < l->nr_inputs; j++)
			shapes[j] = &m->layers[l->inputs[j]].out;
		ref_concat(ins, shapes, l->nr_inputs,
			   l->axis < 0 ? l->axis + l->out.ndims : l->axis, out);
		break;
	}
	case MODEL_OP_LAYER_NORM: {
		int64_t d = l->out.dims[l->out.ndims - 1];

		ret = exec_layer_params_generate(m, li, &p);
		if (ret)
			return ret;
		ref_layer_norm(ins[0], n / d, d, p.weights, p.bias, l->eps, out);
		break;
	}
	case MODEL_OP_SOFTMAX:
		ref_softmax(ins[0], &l->out, l->axis < 0 ? l->axis + l->out.ndims : l->axis, out);
		break;
	case MODEL_OP_LRN:
		ref_lrn(ins[0], s0->dims, l->lrn.size, l->lrn.alpha, l->lrn.beta, l->lrn.k, out);
		break;
	case MODEL_OP_RESHAPE:
		memcpy(out, ins[0], (size_t)n * sizeof(float));
		break;
	case MODEL_OP_TRANSPOSE:
		ref_transpose(ins[0], s0, l->perm, out);
		break;
	case MODEL_OP_SLICE: {
		int axis = l->slice.axis < 0 ? l->slice.axis + s0->ndims : l->slice.axis;

		ref_slice(ins[0], s0, axis, l->slice.start, l->slice.len, out);
		break;
	}
	case MODEL_OP_DECONV:
		ret = exec_layer_params_generate(m, li, &p);
		if (ret)
			return ret;
		ref_deconv(ins[0], s0->dims, p.weights, p.bias, &l->conv, l->out.dims, out);
		ref_act(out, n, l->act, l->act_alpha, l->act_beta);
		break;
	case MODEL_OP_PAD:
		ref_pad(ins[0], s0, &l->pad, out);
		break;
	case MODEL_OP_LOG:
		for (int64_t j = 0; j < n; j++)
			out[j] = logf(ins[0][j]);
		break;
	case MODEL_OP_REDUCE:
		ref_reduce(ins[0], s0, &l->reduce, out);
		break;
	case MODEL_OP_RESIZE:
		ref_resize(ins[0], s0->dims, l->resize.linear, l->out.dims, out);
		break;
	case MODEL_OP_EMBED:
		ret = exec_layer_params_generate(m, li, &p);
		if (ret)
			return ret;
		ref_embed(ins[0], model_shape_elems(s0), p.weights, l->embed.dim, out);
		break;
	default:
		return model_op_is_binary(l->op) ? ref_binary_layer(m, li, ins, out) : -EINVAL;
	}
	exec_layer_params_free(&p);
	return 0;
}

struct model *ref_model_new(const char *name, uint32_t seed, int max_layers)
{
	struct model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->layers = calloc((size_t)max_layers, sizeof(*m->layers));
	if (!m->layers) {
		free(m);
		return NULL;
	}
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->seed = seed;
	return m;
}

struct model_layer *ref_model_add(struct model *m, enum model_op op, const char *name, int nr_in,
				  const int *inputs, int ndims, const int64_t *dims)
{
	struct model_layer *l = &m->layers[m->nr_layers];

	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->op = op;
	l->nr_inputs = nr_in;
	for (int j = 0; j < nr_in; j++)
		l->inputs[j] = inputs[j];
	l->out.ndims = ndims;
	for (int i = 0; i < ndims; i++)
		l->out.dims[i] = dims[i];
	l->line = m->nr_layers + 1;
	m->nr_layers++;
	return l;
}

struct model_conv ref_conv1x1(int64_t oc, bool bias)
{
	return (struct model_conv){ .out_channels = oc,
				    .kh = 1,
				    .kw = 1,
				    .stride_h = 1,
				    .stride_w = 1,
				    .dil_h = 1,
				    .dil_w = 1,
				    .groups = 1,
				    .bias = bias };
}

static int64_t conv_out(int64_t in, int k, int stride, int pad)
{
	return (in + 2 * pad - k) / stride + 1;
}

int ref_model_add_conv(struct model *m, int in, int64_t oc, int k, int stride, int pad, bool bn,
		       enum model_act act)
{
	const struct model_shape *is = &m->layers[in].out;
	int64_t od[4] = { is->dims[0], oc, conv_out(is->dims[2], k, stride, pad),
			  conv_out(is->dims[3], k, stride, pad) };
	struct model_layer *l = ref_model_add(m, MODEL_OP_CONV, "conv", 1, &in, 4, od);

	l->conv = ref_conv1x1(oc, !bn);
	l->conv.kh = l->conv.kw = k;
	l->conv.stride_h = l->conv.stride_w = stride;
	l->conv.pad_t = l->conv.pad_l = l->conv.pad_b = l->conv.pad_r = pad;
	l->conv.batch_norm = bn;
	l->act = act;
	return m->nr_layers - 1;
}

int ref_model_add_conv1x1(struct model *m, int in, int64_t oc, enum model_act act)
{
	return ref_model_add_conv(m, in, oc, 1, 1, 0, false, act);
}

void ref_compare(const float *got, const float *want, int64_t n, float *max_err, float *max_ref)
{
	*max_err = 0.0f;
	*max_ref = 0.0f;
	for (int64_t i = 0; i < n; i++) {
		float e = fabsf(got[i] - want[i]);

		if (e > *max_err || isnan(e))
			*max_err = isnan(e) ? INFINITY : e;
		if (fabsf(want[i]) > *max_ref)
			*max_ref = fabsf(want[i]);
	}
}
