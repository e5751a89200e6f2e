// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The convolution's versions. oneDNN's first choice on NHWC (brgemm-based
 * on AVX-512, all cores on one primitive), a row split (each core a band of
 * output rows, all weights, single-thread primitives run as one parallel
 * group), Winograd's algorithm where oneDNN has it and the weights are
 * small, an output-channel split (each core a slice of the channels,
 * streaming 1/n of the weights), a row split with two bands per core
 * ("row-tiles"), the gemm-based algorithm on NHWC, and "onednn-any": the
 * layouts oneDNN picks around the shared weights. All share the one copy of
 * the weights oneDNN laid out for the first where they can.
 */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec_build.h"
#include "exec_ops.h"

struct conv_shape {
	int64_t n, ic, ih, iw, oc, oh, ow, g;
	dnnl_alg_kind_t alg;
	bool act_apart; /* the activation runs after the conv, not as its post-op */
	int ndims_w;
	int64_t wdims[5];
	dnnl_dims_t strides, dil, pad_l, pad_r;
};

static void conv_shape_of(struct builder *b, struct conv_shape *cs)
{
	const struct model_layer *l = b->l;
	const struct model_shape *in = &b->m->layers[l->inputs[0]].out;

	cs->n = in->dims[0];
	cs->ic = in->dims[1];
	cs->ih = in->dims[2];
	cs->iw = in->dims[3];
	cs->oc = l->out.dims[1];
	cs->oh = l->out.dims[2];
	cs->ow = l->out.dims[3];
	cs->g = l->conv.groups > 0 ? l->conv.groups : 1;
	cs->alg = dnnl_convolution_direct;
	cs->act_apart = false;
	if (cs->g == 1) {
		cs->ndims_w = 4;
		cs->wdims[0] = cs->oc;
		cs->wdims[1] = cs->ic;
		cs->wdims[2] = l->conv.kh;
		cs->wdims[3] = l->conv.kw;
	} else {
		cs->ndims_w = 5;
		cs->wdims[0] = cs->g;
		cs->wdims[1] = cs->oc / cs->g;
		cs->wdims[2] = cs->ic / cs->g;
		cs->wdims[3] = l->conv.kh;
		cs->wdims[4] = l->conv.kw;
	}
	cs->strides[0] = l->conv.stride_h;
	cs->strides[1] = l->conv.stride_w;
	cs->dil[0] = l->conv.dil_h > 0 ? l->conv.dil_h - 1 : 0;
	cs->dil[1] = l->conv.dil_w > 0 ? l->conv.dil_w - 1 : 0;
	cs->pad_l[0] = l->conv.pad_t;
	cs->pad_l[1] = l->conv.pad_l;
	cs->pad_r[0] = l->conv.pad_b;
	cs->pad_r[1] = l->conv.pad_r;
}

/*
 * Whether the layer's swish runs as a step of its own after the conv
 * (exec_swish.c) rather than as oneDNN 2.6's post-op, which is the slower
 * of the two (docs/measurements/executor.md). Not with a fused residual
 * add (the swish comes before the sum), nor for oneDNN's own default, nor
 * on an output that is not dense.
 */
static bool swish_after(const struct builder *b)
{
	return b->l->act == MODEL_ACT_SWISH && !b->xl->sum_then && !b->em->default_only &&
	       md_bytes(&b->xl->out_md) == (size_t)model_shape_elems(&b->l->out) * sizeof(float);
}

static int conv_pd(struct builder *b, const struct conv_shape *cs, int64_t n, int64_t oc,
		   dnnl_format_tag_t src_tag, dnnl_format_tag_t dst_tag,
		   const dnnl_memory_desc_t *wmd, const char *want, dnnl_primitive_desc_t *pd)
{
	int64_t sd[4] = { n, cs->ic, cs->ih, cs->iw }, dd[4] = { n, oc, cs->oh, cs->ow };
	int64_t bd[1] = { oc };
	dnnl_memory_desc_t src, dst, bias;
	dnnl_convolution_desc_t cd;
	dnnl_primitive_attr_t attr;
	bool has_bias = b->l->conv.bias || b->l->conv.batch_norm;
	int ret;

	md_tag(&src, 4, sd, src_tag);
	md_tag(&dst, 4, dd, dst_tag);
	md_plain(&bias, 1, bd);
	if (dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, cs->alg, &src,
						       wmd, has_bias ? &bias : NULL, &dst,
						       cs->strides, cs->dil, cs->pad_l, cs->pad_r))
		return -EINVAL;
	if (exec_attr_new_sum(&attr, swish_after(b) || cs->act_apart ? NULL : b->l,
			      b->xl->sum_then))
		return -ENOMEM;
	ret = builder_pd_create(b, &cd, attr, want, pd);
	dnnl_primitive_attr_destroy(attr);
	return ret;
}

static int conv_bind(struct builder *b, struct exec_step *s, const_dnnl_primitive_desc_t pd,
		     struct exec_buf src, void *w, void *bias, struct exec_buf *dst_via)
{
	const dnnl_memory_desc_t *sm = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
	const dnnl_memory_desc_t *wm = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	const dnnl_memory_desc_t *bm = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
	const dnnl_memory_desc_t *dm = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
	struct exec_buf fixed = { .kind = EXEC_BUF_FIXED };
	int ret = builder_step_arg(b, s, DNNL_ARG_SRC, sm, src, NULL);

	if (!ret)
		ret = builder_step_arg(b, s, DNNL_ARG_WEIGHTS, wm, fixed, w);
	if (!ret && bias)
		ret = builder_step_arg(b, s, DNNL_ARG_BIAS, bm, fixed, bias);
	if (!ret && dst_via)
		ret = builder_bind_dst(b, s, dm, DNNL_ARG_DST, dst_via);
	return ret;
}

/*
 * One full-size convolution primitive: src/dst layouts and weights layout
 * given, the implementation picked by name.
 */
static int conv_whole(struct builder *b, const struct conv_shape *cs,
		      const struct layer_weights *lw, dnnl_format_tag_t io_tag,
		      const dnnl_memory_desc_t *wmd, const char *want)
{
	dnnl_memory_desc_t wlog;
	dnnl_primitive_desc_t pd;
	dnnl_memory_desc_t sm, dm;
	struct exec_buf src, via;
	struct exec_step *s;
	void *w, *bias = NULL;
	int ret;

	md_plain(&wlog, cs->ndims_w, cs->wdims);
	ret = conv_pd(b, cs, cs->n, cs->oc, io_tag, io_tag, wmd, want, &pd);
	if (ret)
		return ret;
	sm = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
	dm = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
	/* a fused residual add sums into the output itself: no other layout */
	if (b->xl->sum_then && !dnnl_memory_desc_equal(&dm, &b->xl->out_md)) {
		dnnl_primitive_desc_destroy(pd);
		return -ENOENT;
	}
	set_impl(b, exec_pd_impl(pd), NULL);
	ret = builder_weights_in(b, lw->w, &wlog,
				 dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &w);
	if (!ret && lw->bias) {
		dnnl_memory_desc_t bmd;
		int64_t bd[1] = { cs->oc };

		md_plain(&bmd, 1, bd);
		ret = builder_weights_in(b, lw->bias, &bmd, &bmd, &bias);
	}
	if (!ret)
		ret = builder_adapt_input(b, 0, &sm, &src);
	if (ret) {
		dnnl_primitive_desc_destroy(pd);
		return ret;
	}
	s = builder_plan_step(b);
	if (!s) {
		dnnl_primitive_desc_destroy(pd);
		return -E2BIG;
	}
	ret = builder_step_prim(b, s, pd);
	if (!ret)
		ret = conv_bind(b, s, pd, src, w, bias, &via);
	dnnl_primitive_desc_destroy(pd);
	if (!ret)
		ret = builder_finish_dst(b, &dm, via);
	return ret;
}

static int conv_weights(struct builder *b, const struct conv_shape *cs,
			const struct layer_weights *lw, const dnnl_memory_desc_t *wmd, void **w,
			void **bias)
{
	dnnl_memory_desc_t wlog, bmd;
	int64_t bd[1] = { cs->oc };
	int ret;

	md_plain(&wlog, cs->ndims_w, cs->wdims);
	md_plain(&bmd, 1, bd);
	*bias = NULL;
	ret = builder_weights_in(b, lw->w, &wlog, wmd, w);
	if (!ret && lw->bias)
		ret = builder_weights_in(b, lw->bias, &bmd, &bmd, bias);
	return ret;
}

/* Single-thread sub-primitives of a split version, one per distinct shape. */
struct sub_prim {
	int64_t key[4];
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
};

static void subs_free(struct sub_prim *subs, int n)
{
	for (int i = 0; i < n; i++)
		if (subs[i].pd)
			dnnl_primitive_desc_destroy(subs[i].pd);
	free(subs);
}

/*
 * A conv sub-primitive for one thread whose weights must be laid out as
 * wmd, never the reference kernel. With `ask_any` oneDNN picks the layout
 * itself and the result is checked (handing a hand-made slice layout to
 * the brgemm kernels can make them fail); otherwise wmd is imposed.
 */
static int conv_sub(struct builder *b, const struct conv_shape *cs, int64_t oc,
		    const dnnl_memory_desc_t *wmd, bool ask_any, struct sub_prim *sp)
{
	dnnl_memory_desc_t any;
	int ret;

	md_tag(&any, wmd->ndims, wmd->dims, dnnl_format_tag_any);
	omp_set_num_threads(1);
	ret = conv_pd(b, cs, 1, oc, dnnl_nhwc, dnnl_nhwc, ask_any ? &any : wmd, NULL, &sp->pd);
	omp_set_num_threads(b->nr_threads);
	if (ret)
		return -ENOENT;
	if (!strncmp(exec_pd_impl(sp->pd), "ref", 3) ||
	    !dnnl_memory_desc_equal(wmd,
				    dnnl_primitive_desc_query_md(sp->pd, dnnl_query_weights_md, 0)))
		return -ENOENT;
	omp_set_num_threads(1);
	ret = builder_prim_new(b, sp->pd, &sp->prim);
	omp_set_num_threads(b->nr_threads);
	return ret;
}

/*
 * Row split: each core computes a band of output rows (all channels) with a
 * single-thread primitive, reading only its band of input rows plus halo
 * and all the weights. Bands of NHWC rows are contiguous, so no copy. With
 * several bands per core ("row tiles") each piece of work is smaller: more
 * cache-friendly, more per-primitive overhead.
 */
static int conv_row_split(struct builder *b, const struct conv_shape *cs,
			  const struct layer_weights *lw, const dnnl_memory_desc_t *wmd,
			  int bands_per_core)
{
	int64_t want = builder_split_parts(b) * bands_per_core;
	int64_t nb = cs->oh < want ? cs->oh : want, s = cs->strides[0];

	/* one band is the whole layer, and tiles no finer than the plain split are that split */
	if (nb < 2 || (bands_per_core > 1 && nb <= builder_split_parts(b)))
		return -ENOENT;
	int64_t ke = (int64_t)(b->l->conv.kh - 1) * (cs->dil[0] + 1) + 1;
	int64_t sd[4] = { cs->n, cs->ic, cs->ih, cs->iw };
	size_t src_row = (size_t)(cs->iw * cs->ic) * sizeof(float);
	size_t dst_row = (size_t)(cs->ow * cs->oc) * sizeof(float);
	struct sub_prim *subs = calloc((size_t)nb, sizeof(*subs));
	dnnl_memory_desc_t src_md;
	struct exec_buf src;
	struct exec_step *g;
	void *w, *bias;
	int nr_subs = 0, ret;

	if (!subs)
		return -ENOMEM;
	md_tag(&src_md, 4, sd, dnnl_nhwc);
	ret = conv_weights(b, cs, lw, wmd, &w, &bias);
	if (!ret)
		ret = builder_adapt_input(b, 0, &src_md, &src);
	g = ret ? NULL : builder_group_new(b, (int)(cs->n * nb));
	if (!ret && !g)
		ret = -ENOMEM;
	for (int64_t band = 0; band < nb && !ret; band++) {
		int64_t y0 = band * cs->oh / nb, y1 = (band + 1) * cs->oh / nb;
		int64_t top = y0 * s - cs->pad_l[0], bot = (y1 - 1) * s - cs->pad_l[0] + ke;
		int64_t in0 = top > 0 ? top : 0, in1 = bot < cs->ih ? bot : cs->ih;
		int64_t key[4] = { in1 - in0, in0 - top, bot - in1, y1 - y0 };
		struct conv_shape bcs = *cs;
		int k;

		if (key[0] < 1) {
			ret = -ENOENT;
			break;
		}
		for (k = 0; k < nr_subs; k++)
			if (!memcmp(subs[k].key, key, sizeof(key)))
				break;
		if (k == nr_subs) {
			bcs.ih = key[0];
			bcs.pad_l[0] = key[1];
			bcs.pad_r[0] = key[2];
			bcs.oh = key[3];
			memcpy(subs[k].key, key, sizeof(key));
			nr_subs++;
			ret = conv_sub(b, &bcs, cs->oc, wmd, false, &subs[k]);
			if (ret)
				break;
			builder_set_split_impl(b, exec_pd_impl(subs[k].pd), "row-split", nb);
		}
		for (int64_t img = 0; img < cs->n && !ret; img++) {
			struct exec_step *it = &g->items[img * nb + band];
			struct exec_buf isrc = src, idst = out_buf(b);

			isrc.offset += ((size_t)(img * cs->ih + in0)) * src_row;
			idst.offset += ((size_t)(img * cs->oh + y0)) * dst_row;
			ret = builder_step_use(b, it, subs[k].prim, subs[k].pd);
			if (!ret)
				ret = conv_bind(b, it, subs[k].pd, isrc, w, bias, NULL);
			if (!ret)
				ret = builder_step_arg(b, it, DNNL_ARG_DST,
						       dnnl_primitive_desc_query_md(
							       subs[k].pd, dnnl_query_dst_md, 0),
						       idst, NULL);
		}
	}
	subs_free(subs, nr_subs);
	return ret;
}

/*
 * Winograd's algorithm, where oneDNN has it (on AVX-512, for a 3x3
 * stride-1 conv: F(2x2, 3x3), 2.25x fewer multiplies than the direct conv,
 * or F(4x4, 3x3)), in oneDNN's blocked layouts (a reorder in and one out),
 * on a second copy of the weights, transformed: 16/9 or 4x their size. It
 * pays where the weights are small beside the work on them; on ResNet-50's
 * 2.4 and 9.4 MB 3x3s it gained little or lost in a whole query, their
 * weights streaming from memory (docs/measurements/executor.md), so it is
 * offered only up to CONV_WINOGRAD_MAX_WEIGHT_BYTES of direct weights,
 * which also bounds the copy's memory. Nor below CONV_WINOGRAD_MIN_IC
 * input channels, which oneDNN pads to 16: 3 of them ran 4-5x slower.
 */
#define CONV_WINOGRAD_MAX_WEIGHT_BYTES (2u << 20)
#define CONV_WINOGRAD_MIN_IC 16

static int conv_winograd(struct builder *b, const struct conv_shape *cs,
			 const struct layer_weights *lw)
{
	struct plan_draft saved = *b->plan;
	struct conv_shape wcs = *cs;
	dnnl_memory_desc_t any;
	int ret;

	if (lw->nr_w * sizeof(float) > CONV_WINOGRAD_MAX_WEIGHT_BYTES ||
	    cs->ic / cs->g < CONV_WINOGRAD_MIN_IC)
		return -ENOENT;
	md_tag(&any, cs->ndims_w, cs->wdims, dnnl_format_tag_any);
	wcs.alg = dnnl_convolution_winograd;
	ret = conv_whole(b, &wcs, lw, dnnl_format_tag_any, &any, NULL);
	/* oneDNN's Winograd fuses ReLU only (not Tiny-YOLOv2's leaky one): others come after */
	if (ret == -EINVAL && b->l->act != MODEL_ACT_NONE && !swish_after(b)) {
		*b->plan = saved;
		wcs.act_apart = true;
		ret = conv_whole(b, &wcs, lw, dnnl_format_tag_any, &any, NULL);
		if (!ret) {
			char impl[EXEC_IMPL_LEN];

			/* the conv's kernel names the version, not the eltwise's */
			memcpy(impl, b->plan->impl, sizeof(impl));
			ret = act_in_place_build(b);
			snprintf(b->plan->impl, sizeof(b->plan->impl), "%.*s +act",
				 (int)sizeof(impl) - 6, impl);
		}
	}
	return ret == -EINVAL ? -ENOENT : ret;
}

/* Block size if the weights are blocked only on the output channels, outermost. */
static bool o_outer_blocked(const dnnl_memory_desc_t *w, int64_t *blk)
{
	const dnnl_blocking_desc_t *bd = &w->format_desc.blocking;

	if (w->format_kind != dnnl_blocked || w->ndims != 4 || bd->inner_nblks != 1 ||
	    bd->inner_idxs[0] != 0)
		return false;
	for (int i = 1; i < 4; i++)
		if (bd->strides[i] > bd->strides[0])
			return false;
	*blk = bd->inner_blks[0];
	return true;
}

/*
 * Output-channel split: each core computes a slice of the output channels
 * with a single-thread primitive on its slice of the shared weights (a
 * contiguous run of output-channel blocks), so it streams 1/n of the
 * weights. Slices of NHWC channels are not dense, so each goes to its own
 * dense buffer and a second parallel group copies them into place.
 */
static int conv_oc_split(struct builder *b, const struct conv_shape *cs,
			 const struct layer_weights *lw, const dnnl_memory_desc_t *wmd)
{
	int64_t blk, nblocks, nsl, sd[4] = { cs->n, cs->ic, cs->ih, cs->iw };
	struct sub_prim subs[2], copies[2];
	size_t plane = (size_t)(cs->oh * cs->ow) * sizeof(float);
	dnnl_memory_desc_t src_md;
	struct exec_step *g, *gc;
	struct exec_buf src;
	void *w, *bias;
	int ret;

	memset(subs, 0, sizeof(subs));
	memset(copies, 0, sizeof(copies));
	/* its slices go through copies, which cannot add the residual */
	if (b->xl->sum_then || cs->g != 1 || !o_outer_blocked(wmd, &blk) || blk < 1 ||
	    cs->oc % blk || cs->oc / blk < 2)
		return -ENOENT;
	nblocks = cs->oc / blk;
	nsl = nblocks < builder_split_parts(b) ? nblocks : builder_split_parts(b);
	md_tag(&src_md, 4, sd, dnnl_nhwc);
	ret = conv_weights(b, cs, lw, wmd, &w, &bias);
	if (!ret)
		ret = builder_adapt_input(b, 0, &src_md, &src);
	if (ret)
		return ret;
	g = builder_group_new(b, (int)(cs->n * nsl));
	gc = g ? builder_group_new(b, (int)(cs->n * nsl)) : NULL;
	if (!gc)
		return -ENOMEM;
	for (int64_t sl = 0; sl < nsl && !ret; sl++) {
		int64_t b0 = sl * nblocks / nsl, b1 = (sl + 1) * nblocks / nsl;
		int64_t o0 = b0 * blk, ocs = (b1 - b0) * blk;
		int k = b1 - b0 == nblocks / nsl ? 0 : 1;
		struct exec_buf tmp = tmp_alloc(b->plan, (size_t)(cs->n * ocs) * plane);
		dnnl_memory_desc_t swmd = *wmd, tmd, omd;
		int64_t td[4] = { 1, ocs, cs->oh, cs->ow };
		int64_t ost[4] = { cs->oh * cs->ow * cs->oc, 1, cs->ow * cs->oc, cs->oc };

		if (!subs[k].prim) {
			dnnl_primitive_attr_t attr;
			dnnl_primitive_desc_t rpd;

			swmd.dims[0] = swmd.padded_dims[0] = ocs;
			ret = conv_sub(b, cs, ocs, &swmd, true, &subs[k]);
			if (ret)
				break;
			builder_set_split_impl(b, exec_pd_impl(subs[k].pd), "oc-split", nsl);
			md_tag(&tmd, 4, td, dnnl_nhwc);
			md_strided(&omd, 4, td, ost);
			ret = exec_attr_new(&attr, NULL, 1.0f);
			if (ret)
				break;
			omp_set_num_threads(1);
			ret = dnnl_reorder_primitive_desc_create(&rpd, &tmd, b->em->engine, &omd,
								 b->em->engine, attr) ?
				      -EINVAL :
				      0;
			omp_set_num_threads(b->nr_threads);
			dnnl_primitive_attr_destroy(attr);
			if (!ret) {
				copies[k].pd = rpd;
				ret = builder_prim_new(b, rpd, &copies[k].prim);
			}
			if (ret)
				break;
		}
		for (int64_t img = 0; img < cs->n && !ret; img++) {
			struct exec_step *it = &g->items[img * nsl + sl];
			struct exec_step *ct = &gc->items[img * nsl + sl];
			struct exec_buf isrc = src, itmp = tmp, iout = out_buf(b);
			const dnnl_memory_desc_t *dm =
				dnnl_primitive_desc_query_md(subs[k].pd, dnnl_query_dst_md, 0);

			isrc.offset += (size_t)(img * cs->ih * cs->iw * cs->ic) * sizeof(float);
			itmp.offset += (size_t)(img * ocs) * plane;
			iout.offset += (size_t)(img * cs->oc) * plane + (size_t)o0 * sizeof(float);
			ret = builder_step_use(b, it, subs[k].prim, subs[k].pd);
			if (!ret)
				ret = conv_bind(
					b, it, subs[k].pd, isrc,
					(float *)w +
						(o0 / blk) * wmd->format_desc.blocking.strides[0],
					bias ? (float *)bias + o0 : NULL, NULL);
			if (!ret)
				ret = builder_step_arg(b, it, DNNL_ARG_DST, dm, itmp, NULL);
			if (!ret)
				ret = builder_step_use(b, ct, copies[k].prim, copies[k].pd);
			if (!ret)
				ret = builder_step_arg(b, ct, DNNL_ARG_FROM,
						       dnnl_primitive_desc_query_md(
							       copies[k].pd, dnnl_query_src_md, 0),
						       itmp, NULL);
			if (!ret)
				ret = builder_step_arg(b, ct, DNNL_ARG_TO,
						       dnnl_primitive_desc_query_md(
							       copies[k].pd, dnnl_query_dst_md, 0),
						       iout, NULL);
		}
	}
	for (int k = 0; k < 2; k++) {
		if (subs[k].pd)
			dnnl_primitive_desc_destroy(subs[k].pd);
		if (copies[k].pd)
			dnnl_primitive_desc_destroy(copies[k].pd);
	}
	return ret;
}

/*
 * "onednn-any": the layouts oneDNN picks around the shared weights (a
 * blocked JIT kernel when one takes them), with a weights copy only as a
 * last resort. Also what a split candidate runs at a core count where its
 * split cannot be built (its impl string then says so).
 */
static int conv_any(struct builder *b, const struct conv_shape *cs, const struct layer_weights *lw,
		    const dnnl_memory_desc_t *shared, const dnnl_memory_desc_t *any)
{
	struct plan_draft saved = *b->plan;
	int ret;

	b->strict = true;
	ret = conv_whole(b, cs, lw, dnnl_format_tag_any, shared, "jit");
	if (ret == -ENOENT || ret == -EINVAL) {
		/* A failed attempt's steps own nothing: the model frees what they made. */
		*b->plan = saved;
		b->no_ref = true;
		ret = conv_whole(b, cs, lw, dnnl_format_tag_any, shared, NULL);
		b->no_ref = false;
	}
	b->strict = false;
	if (ret == -ENOENT || ret == -EINVAL) {
		*b->plan = saved;
		ret = conv_whole(b, cs, lw, dnnl_format_tag_any, any, NULL);
	}
	/* the kernel may be version 0's: what differs is the layout */
	if (!ret)
		strncat(b->plan->impl, " own-layouts",
			sizeof(b->plan->impl) - strlen(b->plan->impl) - 1);
	return ret;
}

/*
 * Version 0 beyond the first slot: oneDNN may lay weights out differently
 * for another thread count; keep the first slot's layout and kernel when
 * it can (its impl up to the first space: a fused add's note is ours).
 */
static int conv_nhwc_later(struct builder *b, const struct conv_shape *cs,
			   const struct layer_weights *lw, const dnnl_memory_desc_t *shared,
			   const dnnl_memory_desc_t *any)
{
	struct plan_draft saved = *b->plan;
	char impl[EXEC_IMPL_LEN];
	int ret;

	snprintf(impl, sizeof(impl), "%s", b->xl->plans[0][0].impl);
	impl[strcspn(impl, " ")] = 0;
	b->strict = true;
	ret = conv_whole(b, cs, lw, dnnl_nhwc, shared, impl);
	b->strict = false;
	if (ret != -ENOENT && ret != -EINVAL)
		return ret;
	*b->plan = saved;
	return conv_whole(b, cs, lw, dnnl_nhwc, any, NULL);
}

/*
 * What runs at a slot where a candidate offered at the first cannot be
 * built: "onednn-any", or for a conv with a fused add, whose output must
 * be NHWC, version 0's kernel where oneDNN's own layouts are not.
 */
static int conv_fallback(struct builder *b, const struct conv_shape *cs,
			 const struct layer_weights *lw, const dnnl_memory_desc_t *shared,
			 const dnnl_memory_desc_t *any)
{
	struct plan_draft saved = *b->plan;
	int ret = conv_any(b, cs, lw, shared, any);

	if (ret != -ENOENT || !b->xl->sum_then)
		return ret;
	*b->plan = saved;
	return conv_nhwc_later(b, cs, lw, shared, any);
}

static int conv_version(struct builder *b, const struct conv_shape *cs)
{
	const struct layer_weights *lw = b->lw;
	struct plan_draft saved = *b->plan;
	dnnl_memory_desc_t any, shared;
	int ret;

	md_tag(&any, cs->ndims_w, cs->wdims, dnnl_format_tag_any);
	if (b->em->default_only)
		return conv_whole(b, cs, lw, dnnl_format_tag_any, &any, NULL);
	if (b->xl->nr_weight_bufs)
		shared = b->xl->weight_mds[0];
	else
		memset(&shared, 0, sizeof(shared));
	switch (b->cand) {
	case CONV_NHWC:
		/*
		 * Depthwise: oneDNN 2.6 first offers brdgmm_dw on AVX-512, its
		 * older jit_dw ran EfficientNet-B0's with swish 2-18 % faster on
		 * one core (272 vs 313 us at 32 x 112 x 112) and up to 1.5x on two.
		 */
		if (b->slot == 0)
			return conv_whole(
				b, cs, lw, dnnl_nhwc, &any,
				cs->g > 1 && cs->g == cs->ic && cs->g == cs->oc ? "jit_dw" : NULL);
		return conv_nhwc_later(b, cs, lw, &shared, &any);
	case CONV_ROW_SPLIT:
		ret = conv_row_split(b, cs, lw, &shared, 1);
		break;
	case CONV_WINOGRAD:
		ret = conv_winograd(b, cs, lw);
		break;
	case CONV_OC_SPLIT:
		ret = conv_oc_split(b, cs, lw, &shared);
		break;
	case CONV_ROW_TILES:
		ret = conv_row_split(b, cs, lw, &shared, 2);
		break;
	case CONV_GEMM_NHWC:
		/* the gemm-based algorithm, for shapes too small to split */
		b->strict = true;
		ret = conv_whole(b, cs, lw, dnnl_nhwc, &any, "gemm");
		b->strict = false;
		if (ret == -EINVAL)
			ret = -ENOENT;
		break;
	default:
		ret = conv_any(b, cs, lw, &shared, &any);
		break;
	}
	if (ret != -ENOENT || b->slot == 0)
		return ret;
	*b->plan = saved;
	return conv_fallback(b, cs, lw, &shared, &any);
}

/*
 * Candidate 0 is oneDNN's own first choice on NHWC (brgemm-based on
 * AVX-512 for most shapes); its weights layout is shared by the others, so
 * a conv normally holds one copy of its weights. A candidate that cannot be
 * built at the first slot returns -ENOENT and is not offered; at a later
 * slot it runs "onednn-any" instead. oneDNN may choose another weights
 * layout at another thread count, which costs a second copy only where it
 * refuses the first slot's. A conv with a residual add fused into it
 * (exec_fuse.c) says so in its impl.
 */
int conv_build(struct builder *b)
{
	struct conv_shape cs;
	int ret;

	conv_shape_of(b, &cs);
	ret = conv_version(b, &cs);
	if (!ret && b->xl->sum_then)
		strncat(b->plan->impl, " +add", sizeof(b->plan->impl) - strlen(b->plan->impl) - 1);
	if (!ret && swish_after(b)) {
		ret = builder_swish_step(b, model_shape_elems(&b->l->out));
		strncat(b->plan->impl, " +swish",
			sizeof(b->plan->impl) - strlen(b->plan->impl) - 1);
	}
	return ret;
}
