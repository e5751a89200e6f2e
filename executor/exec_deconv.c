// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The transposed convolution's versions. oneDNN 2.6's deconvolution runs
 * some shapes at a few GFLOP/s, so two versions run the layer as GEMMs:
 *
 * "matmul-shuffle", for stride == kernel without padding or dilation (the
 * 2x2 stride-2 upsampling of U-Nets and text detectors): every input pixel
 * owns its own kh x kw block of output pixels, so the layer is one oneDNN
 * matmul, batched over (input row, ky, kx), of [W, IC] by [IC, OC], its
 * result written through strides straight into the NHWC output (the pixel
 * shuffle costs nothing), bias and activation fused.
 *
 * "gemm-col2im", any shape: one matmul per group of [N*H*W, IC/g] by
 * [IC/g, kh*kw*OC/g] into the query's arena, then col2im (exec_col2im.c)
 * gathers each output pixel's taps and adds the bias; the activation runs
 * after it as oneDNN eltwise in place.
 *
 * "phase-conv", for the overlapping shapes (kernel > stride: the 4x4
 * stride-2 pad-1 upsampling of GANs and segmentation heads): stride x
 * stride stride-1 convolutions, one per output phase (exec_deconv_phase.c).
 *
 * "onednn": oneDNN's deconvolution. All read the weights as
 * layer_weights_make() laid them out, [g][IC/g][kh][kw][OC/g], so each
 * version's GEMM operand is a plain view of them.
 */
#include <errno.h>
#include <string.h>
#include "exec_deconv.h"
#include "exec_ops.h"

static void deconv_shape_of(const struct builder *b, struct deconv_shape *ds)
{
	const struct model_conv *cv = &b->l->conv;
	const struct model_shape *in = &b->m->layers[b->l->inputs[0]].out;

	*ds = (struct deconv_shape){
		.n = in->dims[0],
		.ic = in->dims[1],
		.ih = in->dims[2],
		.iw = in->dims[3],
		.oc = b->l->out.dims[1],
		.oh = b->l->out.dims[2],
		.ow = b->l->out.dims[3],
		.g = cv->groups > 0 ? cv->groups : 1,
		.kh = cv->kh,
		.kw = cv->kw,
		.sh = cv->stride_h,
		.sw = cv->stride_w,
		.dh = cv->dil_h > 0 ? cv->dil_h : 1,
		.dw = cv->dil_w > 0 ? cv->dil_w : 1,
		.pt = cv->pad_t,
		.pl = cv->pad_l,
		.pb = cv->pad_b,
		.pr = cv->pad_r,
		.bias = cv->bias && b->lw->bias,
	};
	ds->icg = ds->ic / ds->g;
	ds->ocg = ds->oc / ds->g;
}

bool deconv_is_shuffle(const struct deconv_shape *ds)
{
	return ds->g == 1 && ds->kh == ds->sh && ds->kw == ds->sw && ds->oh == ds->ih * ds->kh &&
	       ds->ow == ds->iw * ds->kw && (ds->kh == 1 || ds->dh == 1) &&
	       (ds->kw == 1 || ds->dw == 1) && !ds->pt && !ds->pl && !ds->pb && !ds->pr;
}

int deconv_input(struct builder *b, const struct deconv_shape *ds, struct exec_buf *at)
{
	int64_t d[4] = { ds->n, ds->ic, ds->ih, ds->iw };
	dnnl_memory_desc_t src;

	md_tag(&src, 4, d, dnnl_nhwc);
	return builder_adapt_input(b, 0, &src, at);
}

int deconv_bias(struct builder *b, const struct deconv_shape *ds, void **bias)
{
	int64_t bd[1] = { ds->oc };
	dnnl_memory_desc_t bmd;

	*bias = NULL;
	if (!ds->bias)
		return 0;
	md_plain(&bmd, 1, bd);
	return builder_weights_in(b, b->lw->bias, &bmd, &bmd, bias);
}

/*
 * A matmul step: src and dst as given (views of buffers), weights from the
 * logical view wlog of the layer's weights laid out as oneDNN prefers, an
 * optional bias of dims bias_md, act_of's activation fused.
 */
static int deconv_matmul(struct builder *b, const dnnl_memory_desc_t *src, struct exec_buf at,
			 const dnnl_memory_desc_t *wlog, const dnnl_memory_desc_t *bias_md,
			 void *bias, const dnnl_memory_desc_t *dst, struct exec_buf to,
			 const struct model_layer *act_of, dnnl_primitive_desc_t *pd_out)
{
	dnnl_memory_desc_t wany;
	dnnl_primitive_attr_t attr;
	dnnl_primitive_desc_t pd;
	dnnl_matmul_desc_t d;
	int ret;

	md_tag(&wany, wlog->ndims, wlog->dims, dnnl_format_tag_any);
	if (dnnl_matmul_desc_init(&d, src, &wany, bias ? bias_md : NULL, dst))
		return -EINVAL;
	if (exec_attr_new(&attr, act_of, 1.0f))
		return -ENOMEM;
	ret = builder_pd_create(b, &d, attr, NULL, &pd);
	dnnl_primitive_attr_destroy(attr);
	if (ret)
		return ret;
	ret = builder_weighted_step(b, pd, b->lw->w, wlog, src, at, bias_md, bias, dst, to);
	if (ret || !pd_out)
		dnnl_primitive_desc_destroy(pd);
	else
		*pd_out = pd;
	return ret;
}

/*
 * Stride == kernel: out[n][iy*kh + ky][ix*kw + kx][o] = bias[o] +
 * sum_c in[n][iy][ix][c] * w[c][ky][kx][o], a matmul batched over
 * (n*ih + iy, ky, kx) with M = iw, K = ic, N = oc; the destination is a
 * view of the NHWC output. Where oneDNN has only its reference kernel for
 * that view, the matmul writes a dense block and a reorder shuffles it.
 */
static int deconv_shuffle(struct builder *b, const struct deconv_shape *ds)
{
	int64_t rows = ds->n * ds->ih, kk = (int64_t)ds->kh * ds->kw;
	int64_t sd[5] = { rows, 1, 1, ds->iw, ds->ic };
	int64_t wd[5] = { 1, ds->kh, ds->kw, ds->ic, ds->oc };
	int64_t ws[5] = { kk * ds->ic * ds->oc, ds->kw * ds->oc, ds->oc, kk * ds->oc, 1 };
	int64_t dd[5] = { rows, ds->kh, ds->kw, ds->iw, ds->oc };
	int64_t dst_st[5] = { ds->kh * ds->ow * ds->oc, ds->ow * ds->oc, ds->oc, ds->kw * ds->oc,
			      1 };
	int64_t bd[5] = { 1, 1, 1, 1, ds->oc };
	dnnl_memory_desc_t src, wlog, bias_md, dst, dense;
	struct plan_draft saved;
	dnnl_primitive_desc_t pd;
	struct exec_buf at, tmp;
	void *bias;
	int ret;

	if (!deconv_is_shuffle(ds))
		return -ENOENT;
	md_plain(&src, 5, sd);
	md_strided(&wlog, 5, wd, ws);
	md_plain(&bias_md, 5, bd);
	md_strided(&dst, 5, dd, dst_st);
	ret = deconv_bias(b, ds, &bias);
	if (!ret)
		ret = deconv_input(b, ds, &at);
	if (ret)
		return ret;
	saved = *b->plan;
	b->no_ref = true;
	ret = deconv_matmul(b, &src, at, &wlog, &bias_md, bias, &dst, out_buf(b), b->l, &pd);
	b->no_ref = false;
	if (!ret) {
		set_impl(b, exec_pd_impl(pd), " strided-dst");
		dnnl_primitive_desc_destroy(pd);
		return 0;
	}
	if (ret != -EINVAL)
		return ret;
	/* A failed attempt's steps own nothing: the model frees what they made. */
	*b->plan = saved;
	md_plain(&dense, 5, dd);
	tmp = tmp_alloc(b->plan, md_bytes(&dense));
	ret = deconv_matmul(b, &src, at, &wlog, &bias_md, bias, &dense, tmp, b->l, &pd);
	if (ret)
		return ret;
	set_impl(b, exec_pd_impl(pd), " +shuffle");
	dnnl_primitive_desc_destroy(pd);
	return builder_reorder_step(b, &dense, tmp, &dst, out_buf(b));
}

/* The layer's activation as oneDNN eltwise steps in place on its output. */
static int deconv_act_in_place(struct builder *b)
{
	struct exec_eltwise e[EXEC_ACT_MAX_STAGES];
	int nr = exec_act_eltwise(b->l, e), ret = 0;

	for (int i = 0; i < nr && !ret; i++) {
		const dnnl_memory_desc_t *md = &b->xl->out_md;
		dnnl_primitive_attr_t attr;
		dnnl_primitive_desc_t pd;
		dnnl_eltwise_desc_t d;
		struct exec_step *s;

		if (dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, e[i].alg, md,
						   e[i].alpha, e[i].beta))
			return builder_fail(b, -EINVAL, "oneDNN rejects this activation");
		if (exec_attr_new(&attr, NULL, 1.0f))
			return -ENOMEM;
		ret = builder_pd_create(b, &d, attr, NULL, &pd);
		dnnl_primitive_attr_destroy(attr);
		if (ret)
			return ret;
		s = builder_plan_step(b);
		ret = s ? builder_step_prim(b, s, pd) : -E2BIG;
		if (!ret)
			ret = builder_step_arg(b, s, DNNL_ARG_SRC, md, out_buf(b), NULL);
		if (!ret)
			ret = builder_step_arg(b, s, DNNL_ARG_DST, md, out_buf(b), NULL);
		dnnl_primitive_desc_destroy(pd);
	}
	return ret;
}

/*
 * Any shape: cols[gi][n*ih*iw][kh][kw][ocg] = in (as [g][n*ih*iw][icg],
 * a view of NHWC) times w[gi][icg][kh*kw*ocg], then col2im into the
 * output, then the activation.
 */
static int deconv_gemm_col2im(struct builder *b, const struct deconv_shape *ds)
{
	int64_t m = ds->n * ds->ih * ds->iw, kk = (int64_t)ds->kh * ds->kw;
	int64_t sd[3] = { ds->g, m, ds->icg }, ss[3] = { ds->icg, ds->ic, 1 };
	int64_t wd[3] = { ds->g, ds->icg, kk * ds->ocg }, cd[3] = { ds->g, m, kk * ds->ocg };
	int nd = ds->g > 1 ? 3 : 2, off = 3 - nd;
	dnnl_memory_desc_t src, wlog, cols_md;
	struct exec_col2im c;
	dnnl_primitive_desc_t pd;
	struct exec_buf at, cols;
	void *bias;
	int ret;

	md_strided(&src, nd, sd + off, ss + off);
	md_plain(&wlog, nd, wd + off);
	md_plain(&cols_md, nd, cd + off);
	ret = deconv_bias(b, ds, &bias);
	if (!ret)
		ret = deconv_input(b, ds, &at);
	if (ret)
		return ret;
	cols = tmp_alloc(b->plan, md_bytes(&cols_md));
	ret = deconv_matmul(b, &src, at, &wlog, NULL, NULL, &cols_md, cols, NULL, &pd);
	if (ret)
		return ret;
	set_impl(b, exec_pd_impl(pd), " +col2im");
	dnnl_primitive_desc_destroy(pd);
	c = (struct exec_col2im){
		.cols = cols,
		.dst = out_buf(b),
		.bias = bias,
		.n = ds->n,
		.ih = ds->ih,
		.iw = ds->iw,
		.oh = ds->oh,
		.ow = ds->ow,
		.g = ds->g,
		.ocg = ds->ocg,
		.kh = ds->kh,
		.kw = ds->kw,
		.sh = ds->sh,
		.sw = ds->sw,
		.dh = ds->dh,
		.dw = ds->dw,
		.pt = ds->pt,
		.pl = ds->pl,
	};
	ret = builder_col2im_step(b, &c);
	return ret ? ret : deconv_act_in_place(b);
}

/*
 * oneDNN's deconvolution on NHWC, choosing its weights layout; the
 * weights [g][IC/g][kh][kw][OC/g] are read through strides as oneDNN's
 * logical [g][OC/g][IC/g][kh][kw] (or [OC][IC][kh][kw]).
 */
static int deconv_onednn(struct builder *b, const struct deconv_shape *ds)
{
	int64_t kk = (int64_t)ds->kh * ds->kw, bd[1] = { ds->oc };
	const int64_t wd5[5] = { ds->g, ds->ocg, ds->icg, ds->kh, ds->kw };
	const int64_t ws5[5] = { ds->icg * kk * ds->ocg, 1, kk * ds->ocg, ds->kw * ds->ocg,
				 ds->ocg };
	dnnl_dims_t wd, ws;
	dnnl_dims_t strides = { ds->sh, ds->sw }, dil = { ds->dh - 1, ds->dw - 1 };
	dnnl_dims_t pl = { ds->pt, ds->pl }, pr = { ds->pb, ds->pr };
	int nw = ds->g > 1 ? 5 : 4, ret;
	dnnl_memory_desc_t wany, wlog, bias;
	dnnl_deconvolution_desc_t d;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_attr_t attr;
	struct exec_buf at;
	void *bv;
	int64_t sd[4] = { ds->n, ds->ic, ds->ih, ds->iw };
	dnnl_memory_desc_t src;

	for (int i = 0; i < nw; i++) {
		wd[i] = wd5[i + 5 - nw];
		ws[i] = ws5[i + 5 - nw];
	}
	md_strided(&wlog, nw, wd, ws);
	md_tag(&wany, nw, wd, dnnl_format_tag_any);
	md_plain(&bias, 1, bd);
	md_tag(&src, 4, sd, dnnl_nhwc);
	ret = deconv_bias(b, ds, &bv);
	if (!ret)
		ret = deconv_input(b, ds, &at);
	if (ret)
		return ret;
	if (dnnl_dilated_deconvolution_forward_desc_init(
		    &d, dnnl_forward_inference, dnnl_deconvolution_direct, &src, &wany,
		    bv ? &bias : NULL, &b->xl->out_md, strides, dil, pl, pr))
		return builder_fail(b, -EINVAL, "oneDNN rejects this deconvolution");
	if (exec_attr_new(&attr, b->l, 1.0f))
		return -ENOMEM;
	ret = builder_pd_create(b, &d, attr, NULL, &pd);
	dnnl_primitive_attr_destroy(attr);
	if (ret)
		return builder_fail(b, ret, "oneDNN cannot run this deconvolution");
	set_impl(b, exec_pd_impl(pd), NULL);
	ret = builder_weighted_step(b, pd, b->lw->w, &wlog, &src, at, &bias, bv, &b->xl->out_md,
				    out_buf(b));
	dnnl_primitive_desc_destroy(pd);
	return ret;
}

/*
 * matmul-shuffle or phase-conv first where the shape allows it (never
 * both: phase-conv leaves the shuffle's shapes to it), then gemm-col2im,
 * which takes any shape; "onednn" is always there (so at most three, as a
 * layer keeps), and is the one a model loaded for oneDNN's default runs.
 */
int deconv_build(struct builder *b)
{
	struct deconv_shape ds;
	int ret;

	deconv_shape_of(b, &ds);
	if (b->em->default_only)
		return deconv_onednn(b, &ds);
	switch (b->cand) {
	case DECONV_MATMUL_SHUFFLE:
		ret = deconv_shuffle(b, &ds);
		break;
	case DECONV_PHASE_CONV:
		ret = deconv_phase_conv(b, &ds);
		break;
	case DECONV_GEMM_COL2IM:
		ret = deconv_gemm_col2im(b, &ds);
		break;
	default:
		return deconv_onednn(b, &ds);
	}
	/* a GEMM oneDNN will not build for this shape: the version is not offered */
	return ret == -EINVAL ? -ENOENT : ret;
}
