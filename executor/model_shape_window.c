// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The shape rules of the model format's sliding-window ops (shape_ops[] in
 * model_shape_ops.c): conv, deconv and pool, their kernel, stride,
 * dilation, padding and groups checked against the input, their output
 * size (window.h), MACs and weights.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_shape.h"
#include "util.h"
#include "window.h"

int shape_conv(struct shape_layer *il)
{
	struct model_conv *cv = &il->l->conv;
	const struct model_shape *in = il->in[0];
	int64_t out_ch, groups, dims[4], oh, ow, cin;
	int pad[4], kh_eff, kw_eff;
	bool same, dw;

	if (shape_need_ndims(il, 0, 4, 4) || shape_flag(il, "dw", &dw) ||
	    shape_int(il, "out", !dw, 1, SHAPE_MAX_DIM, in->dims[1], &out_ch) ||
	    shape_int(il, "groups", false, 1, SHAPE_MAX_DIM, dw ? in->dims[1] : 1, &groups) ||
	    shape_pair(il, "k", true, 1, &cv->kh, &cv->kw) ||
	    shape_pair(il, "stride", false, 1, &cv->stride_h, &cv->stride_w) ||
	    shape_pair(il, "dil", false, 1, &cv->dil_h, &cv->dil_w) || shape_pad(il, pad, &same) ||
	    shape_flag(il, "bias", &cv->bias) || shape_flag(il, "bn", &cv->batch_norm))
		return -EINVAL;
	cin = in->dims[1];
	if (dw && groups != cin)
		return shape_fail(il, "'dw' means groups=%lld (the input channels); drop groups=",
				  (long long)cin);
	if (cin % groups)
		return shape_fail(il, "input channels %lld are not divisible by groups=%lld",
				  (long long)cin, (long long)groups);
	if (out_ch % groups)
		return shape_fail(il, "out=%lld is not divisible by groups=%lld", (long long)out_ch,
				  (long long)groups);
	kh_eff = cv->dil_h * (cv->kh - 1) + 1;
	kw_eff = cv->dil_w * (cv->kw - 1) + 1;
	if (same) {
		shape_same_pad(in->dims[2], kh_eff, cv->stride_h, &pad[0], &pad[2]);
		shape_same_pad(in->dims[3], kw_eff, cv->stride_w, &pad[1], &pad[3]);
	}
	cv->pad_t = pad[0];
	cv->pad_l = pad[1];
	cv->pad_b = pad[2];
	cv->pad_r = pad[3];
	cv->out_channels = out_ch;
	cv->groups = groups;
	if (in->dims[2] + pad[0] + pad[2] < kh_eff || in->dims[3] + pad[1] + pad[3] < kw_eff)
		return shape_fail(
			il, "kernel %dx%d (dilated) is larger than the padded input %lldx%lld",
			kh_eff, kw_eff, (long long)(in->dims[2] + pad[0] + pad[2]),
			(long long)(in->dims[3] + pad[1] + pad[3]));
	oh = window_out_len(in->dims[2] + pad[0] + pad[2], kh_eff, cv->stride_h);
	ow = window_out_len(in->dims[3] + pad[1] + pad[3], kw_eff, cv->stride_w);
	dims[0] = in->dims[0];
	dims[1] = out_ch;
	dims[2] = oh;
	dims[3] = ow;
	if (shape_set_out(il, 4, dims) ||
	    shape_product(il, &il->l->macs, 6, (uint64_t)dims[0], (uint64_t)(out_ch * oh * ow),
			  (uint64_t)(cin / groups), (uint64_t)cv->kh, (uint64_t)cv->kw,
			  (uint64_t)1) ||
	    shape_product(il, &il->l->params, 4, (uint64_t)out_ch, (uint64_t)(cin / groups),
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
int shape_deconv(struct shape_layer *il)
{
	struct model_conv *cv = &il->l->conv;
	const struct model_shape *in = il->in[0];
	int64_t out_ch, groups, dims[4], cin;
	int pad[4];
	bool same;

	if (shape_need_ndims(il, 0, 4, 4) ||
	    shape_int(il, "out", true, 1, SHAPE_MAX_DIM, 0, &out_ch) ||
	    shape_int(il, "groups", false, 1, SHAPE_MAX_DIM, 1, &groups) ||
	    shape_pair(il, "k", true, 1, &cv->kh, &cv->kw) ||
	    shape_pair(il, "stride", false, 1, &cv->stride_h, &cv->stride_w) ||
	    shape_pair(il, "dil", false, 1, &cv->dil_h, &cv->dil_w) || shape_pad(il, pad, &same) ||
	    shape_flag(il, "bias", &cv->bias))
		return -EINVAL;
	cin = in->dims[1];
	if (same)
		return shape_fail(il, "pad=same is for conv; give deconv's padding");
	if (cin % groups || out_ch % groups)
		return shape_fail(il,
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
	dims[2] = window_transposed_len(in->dims[2], (int64_t)cv->dil_h * (cv->kh - 1) + 1,
					cv->stride_h, pad[0] + pad[2]);
	dims[3] = window_transposed_len(in->dims[3], (int64_t)cv->dil_w * (cv->kw - 1) + 1,
					cv->stride_w, pad[1] + pad[3]);
	if (shape_set_out(il, 4, dims) ||
	    shape_product(il, &il->l->macs, 6, (uint64_t)model_shape_elems(in),
			  (uint64_t)(out_ch / groups), (uint64_t)cv->kh, (uint64_t)cv->kw,
			  (uint64_t)1, (uint64_t)1) ||
	    shape_product(il, &il->l->params, 4, (uint64_t)cin, (uint64_t)(out_ch / groups),
			  (uint64_t)cv->kh, (uint64_t)cv->kw))
		return -EINVAL;
	il->l->params += cv->bias ? (uint64_t)out_ch : 0;
	return 0;
}

int shape_pool(struct shape_layer *il)
{
	struct model_pool *pl = &il->l->pool;
	const struct model_shape *in = il->in[0];
	int64_t dims[4], oh, ow;
	const char *kind;
	int pad[4], err, i;
	bool same, ceil_mode;

	if (shape_need_ndims(il, 0, 4, 4))
		return -EINVAL;
	kind = shape_value(il, "kind", true, &err);
	if (!kind)
		return err;
	dims[0] = in->dims[0];
	dims[1] = in->dims[1];
	if (!strcmp(kind, "global_avg")) {
		pl->kind = MODEL_POOL_GLOBAL_AVG;
		if (in->dims[2] > INT32_MAX || in->dims[3] > INT32_MAX)
			return shape_fail(il, "input too large");
		pl->kh = (int)in->dims[2];
		pl->kw = (int)in->dims[3];
		pl->stride_h = pl->stride_w = 1;
		dims[2] = dims[3] = 1;
		return shape_set_out(il, 4, dims);
	}
	if (!strcmp(kind, "max"))
		pl->kind = MODEL_POOL_MAX;
	else if (!strcmp(kind, "avg"))
		pl->kind = MODEL_POOL_AVG;
	else
		return shape_fail(il, "kind=%s: expected max, avg or global_avg", kind);
	if (shape_pair(il, "k", true, 1, &pl->kh, &pl->kw) ||
	    shape_pair(il, "stride", false, 1, &pl->stride_h, &pl->stride_w) ||
	    shape_pad(il, pad, &same) || shape_flag(il, "ceil", &ceil_mode))
		return -EINVAL;
	if (same) {
		shape_same_pad(in->dims[2], pl->kh, pl->stride_h, &pad[0], &pad[2]);
		shape_same_pad(in->dims[3], pl->kw, pl->stride_w, &pad[1], &pad[3]);
	}
	for (i = 0; i < 4; i++)
		if (pad[i] >= (i % 2 ? pl->kw : pl->kh))
			return shape_fail(il, "padding %d is not smaller than the window", pad[i]);
	if (in->dims[2] + pad[0] + pad[2] < pl->kh || in->dims[3] + pad[1] + pad[3] < pl->kw)
		return shape_fail(il, "window %dx%d is larger than the padded input", pl->kh,
				  pl->kw);
	oh = window_out_len(in->dims[2] + pad[0] + pad[2], pl->kh, pl->stride_h);
	ow = window_out_len(in->dims[3] + pad[1] + pad[3], pl->kw, pl->stride_w);
	if (ceil_mode) {
		/*
		 * Caffe's rounding up, as extra bottom/right padding so kernels
		 * only ever see floor arithmetic; like PyTorch, a last window
		 * starting in the padding is dropped.
		 */
		oh = window_out_len_ceil(in->dims[2] + pad[0] + pad[2], pl->kh, pl->stride_h);
		ow = window_out_len_ceil(in->dims[3] + pad[1] + pad[3], pl->kw, pl->stride_w);
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
	return shape_set_out(il, 4, dims);
}
