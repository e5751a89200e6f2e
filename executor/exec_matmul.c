// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The versions of fc and of the batched matmul, both on oneDNN's matmul.
 * For fc: the gemm-based matmul first, then oneDNN's own first choice,
 * output columns split per core, the matmul on weights oneDNN pre-packs,
 * and columns split two per core. On AVX-512 oneDNN 2.6 first picks its
 * brgemm matmul, which on plain weights ran BERT-base 1.45x slower than the
 * gemm-based one (230 vs 159 ms on one core; its 768 -> 3072 fc with GELU
 * 1.9x); on AVX2 both are the gemm kernel, kept once. For a batched matmul:
 * default, gemm, and batches (or rows) split one or two per core.
 */
#include <errno.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>
#include "exec_build.h"
#include "exec_ops.h"

/*
 * A matmul of src [.., M, K] by weights [.., K, N] into dst, mds given by
 * dims and strides (so column slices and transposed operands are views).
 */
struct mm_args {
	dnnl_memory_desc_t src, wei, bias, dst;
	bool has_bias;
	float alpha;
};

static int mm_pd(struct builder *b, const struct mm_args *a, const char *want,
		 dnnl_primitive_desc_t *pd)
{
	dnnl_matmul_desc_t md;
	dnnl_primitive_attr_t attr;
	int ret;

	if (dnnl_matmul_desc_init(&md, &a->src, &a->wei, a->has_bias ? &a->bias : NULL, &a->dst))
		return -EINVAL;
	if (exec_attr_new(&attr, b->l, a->alpha))
		return -ENOMEM;
	ret = builder_pd_create(b, &md, attr, want, pd);
	dnnl_primitive_attr_destroy(attr);
	return ret;
}

/* Binds one matmul step: src/wei/bias/dst buffers at the given places. */
static int mm_bind(struct builder *b, struct exec_step *s, const_dnnl_primitive_desc_t pd,
		   struct exec_buf src, struct exec_buf wei, void *wei_fixed, void *bias,
		   struct exec_buf dst)
{
	struct exec_buf fixed = { .kind = EXEC_BUF_FIXED };
	int ret;

	ret = builder_step_arg(b, s, DNNL_ARG_SRC,
			       dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), src, NULL);
	if (!ret)
		ret = builder_step_arg(b, s, DNNL_ARG_WEIGHTS,
				       dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
				       wei_fixed ? fixed : wei, wei_fixed);
	if (!ret && bias)
		ret = builder_step_arg(b, s, DNNL_ARG_BIAS,
				       dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1),
				       fixed, bias);
	if (!ret)
		ret = builder_step_arg(b, s, DNNL_ARG_DST,
				       dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), dst,
				       NULL);
	return ret;
}

/*
 * A short name of a layout that is not plain: the dims from outermost to
 * innermost stride, then the inner blocks, e.g. "ba" or "ab:16a64b".
 */
static void md_layout_name(const dnnl_memory_desc_t *md, char *buf, size_t len)
{
	const dnnl_blocking_desc_t *blk = &md->format_desc.blocking;
	int order[DNNL_MAX_NDIMS], n = md->ndims, at = 0;

	if (md->format_kind != dnnl_blocked || n > DNNL_MAX_NDIMS) {
		snprintf(buf, len, "%s", dnnl_fmt_kind2str(md->format_kind));
		return;
	}
	for (int i = 0; i < n; i++)
		order[i] = i;
	/* stable by decreasing stride: outermost first */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && blk->strides[order[j]] > blk->strides[order[j - 1]]; j--) {
			int t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (int i = 0; i < n && at + 1 < (int)len; i++)
		buf[at++] = (char)('a' + order[i]);
	buf[at] = 0;
	for (int i = 0; i < blk->inner_nblks && at + 1 < (int)len; i++)
		at += snprintf(buf + at, len - (size_t)at, "%s%lld%c", i ? "" : ":",
			       (long long)blk->inner_blks[i], (char)('a' + blk->inner_idxs[i]));
}

/*
 * fc: x[M, K] @ W[K, N] + b. The versions read the plain [K, N] weights
 * (so one copy serves them) except "matmul-packed" and the baseline, which
 * let oneDNN pre-pack them. The splits give each core (or, for "oc-tiles",
 * each half of a core's share) a column slice of W and of the output:
 * strided views, so no copy.
 */
int fc_build(struct builder *b)
{
	const struct model_shape *in = &b->m->layers[b->l->inputs[0]].out;
	int64_t k = in->dims[in->ndims - 1], n = b->l->fc.out_features;
	int64_t m = model_shape_elems(in) / k;
	int64_t sd[2] = { m, k }, wd[2] = { k, n }, bd[2] = { 1, n }, dd[2] = { m, n };
	dnnl_memory_desc_t wlog, blog;
	struct exec_buf src, none = { .kind = EXEC_BUF_FIXED };
	struct mm_args a = { .has_bias = b->lw->bias != NULL, .alpha = 1.0f };
	dnnl_primitive_desc_t pd;
	struct exec_step *s;
	void *w, *bias = NULL;
	int ret;

	md_plain(&a.src, 2, sd);
	md_plain(&wlog, 2, wd);
	md_plain(&blog, 2, bd);
	a.bias = blog;
	md_plain(&a.dst, 2, dd);
	ret = builder_plain_input(b, 0, &src);
	if (!ret && b->lw->bias)
		ret = builder_weights_in(b, b->lw->bias, &blog, &blog, &bias);
	if (ret)
		return ret;
	if (b->em->default_only || b->cand == FC_MATMUL || b->cand == FC_GEMM ||
	    b->cand == FC_PACKED) {
		const dnnl_memory_desc_t *wmd;

		a.wei = wlog;
		if (b->em->default_only || b->cand == FC_PACKED)
			md_tag(&a.wei, 2, wd, dnnl_format_tag_any);
		ret = mm_pd(b, &a, b->cand == FC_GEMM ? "gemm" : NULL, &pd);
		if (ret)
			return builder_fail(b, ret, "oneDNN cannot run this fc");
		wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
		set_impl(b, exec_pd_impl(pd), NULL);
		if (!md_is_plain(wmd)) {
			char layout[32], suffix[48];

			md_layout_name(wmd, layout, sizeof(layout));
			snprintf(suffix, sizeof(suffix), " weights:%s", layout);
			set_impl(b, exec_pd_impl(pd), suffix);
		}
		ret = builder_weights_in(b, b->lw->w, &wlog, wmd, &w);
		s = ret ? NULL : builder_plan_step(b);
		if (s)
			ret = builder_step_prim(b, s, pd);
		if (s && !ret)
			ret = mm_bind(b, s, pd, src, none, w, bias, out_buf(b));
		dnnl_primitive_desc_destroy(pd);
		return s || ret ? ret : -E2BIG;
	}
	if (n < 2)
		return -ENOENT;
	ret = builder_weights_in(b, b->lw->w, &wlog, &wlog, &w);
	if (ret)
		return ret;
	{
		int64_t parts = builder_split_parts(b) * (b->cand == FC_OC_TILES ? 2 : 1);
		int64_t nsl = n < parts ? n : parts;
		dnnl_primitive_desc_t sub_pd[2] = { NULL, NULL };
		dnnl_primitive_t sub_prim[2] = { NULL, NULL };

		s = builder_group_new(b, (int)nsl);
		if (!s)
			return -ENOMEM;
		omp_set_num_threads(1);
		for (int64_t sl = 0; sl < nsl && !ret; sl++) {
			int64_t n0 = sl * n / nsl, ns = (sl + 1) * n / nsl - n0;
			int kk = ns == n / nsl ? 0 : 1;
			struct exec_buf dst = out_buf(b);

			if (!sub_pd[kk]) {
				int64_t swd[2] = { k, ns }, sws[2] = { n, 1 };
				int64_t sdd[2] = { m, ns }, sbd[2] = { 1, ns };
				struct mm_args sa = a;

				md_strided(&sa.wei, 2, swd, sws);
				md_strided(&sa.dst, 2, sdd, sws);
				md_plain(&sa.bias, 2, sbd);
				ret = mm_pd(b, &sa, NULL, &sub_pd[kk]);
				if (!ret)
					ret = builder_prim_new(b, sub_pd[kk], &sub_prim[kk]);
				if (ret)
					break;
				builder_set_split_impl(b, exec_pd_impl(sub_pd[kk]), "oc-split",
						       nsl);
			}
			dst.offset = (size_t)n0 * sizeof(float);
			ret = builder_step_use(b, &s->items[sl], sub_prim[kk], sub_pd[kk]);
			if (!ret)
				ret = mm_bind(b, &s->items[sl], sub_pd[kk], src, none,
					      (float *)w + n0, bias ? (float *)bias + n0 : NULL,
					      dst);
		}
		omp_set_num_threads(b->nr_threads);
		for (int i = 0; i < 2; i++)
			if (sub_pd[i])
				dnnl_primitive_desc_destroy(sub_pd[i]);
	}
	return ret ? builder_fail(b, ret, "oneDNN cannot run this fc split") : 0;
}

/*
 * Batched a @ b (or a @ b^T) * alpha. Operands are activations, plain in
 * logical order; b^T is a stride swap. The split versions run batches (or,
 * with a single batch, row blocks of a) as single-thread matmuls, one per
 * core ("batch-split") or two per core ("batch-tiles").
 */
int matmul_build(struct builder *b)
{
	const struct model_shape *as = &b->m->layers[b->l->inputs[0]].out;
	const struct model_shape *bs = &b->m->layers[b->l->inputs[1]].out;
	const struct model_shape *os = &b->l->out;
	int nd = os->ndims;
	int64_t ad[MODEL_MAX_DIMS] = { 0 }, bdims[MODEL_MAX_DIMS] = { 0 };
	int64_t bstr[MODEL_MAX_DIMS] = { 0 }, stride = 1;
	int64_t M = os->dims[nd - 2], N = os->dims[nd - 1], K, B = 1, Bb = 1;
	struct mm_args a = { .alpha = b->l->matmul.alpha };
	struct exec_buf abuf, bbuf;
	dnnl_primitive_desc_t pd;
	struct exec_step *s;
	int ret;

	if (as->ndims > nd || bs->ndims > nd || as->ndims < 2 || bs->ndims < 2)
		return builder_fail(b, -EINVAL, "matmul operands must have 2..%d dims", nd);
	/* Missing leading dims broadcast, as numpy does. */
	for (int i = 0; i < nd; i++) {
		int ia = i - (nd - as->ndims), ib = i - (nd - bs->ndims);

		ad[i] = ia >= 0 ? as->dims[ia] : 1;
		bdims[i] = ib >= 0 ? bs->dims[ib] : 1;
	}
	K = ad[nd - 1];
	for (int i = nd - 1; i >= 0; i--) {
		bstr[i] = stride;
		stride *= bdims[i];
	}
	if (b->l->matmul.transpose_b) {
		int64_t t = bdims[nd - 1];

		bdims[nd - 1] = bdims[nd - 2];
		bdims[nd - 2] = t;
		t = bstr[nd - 1];
		bstr[nd - 1] = bstr[nd - 2];
		bstr[nd - 2] = t;
	}
	for (int i = 0; i < nd - 2; i++) {
		B *= os->dims[i];
		Bb *= bdims[i];
	}
	md_plain(&a.src, nd, ad);
	md_strided(&a.wei, nd, bdims, bstr);
	md_plain(&a.dst, nd, os->dims);
	ret = builder_plain_input(b, 0, &abuf);
	if (!ret)
		ret = builder_plain_input(b, 1, &bbuf);
	if (ret)
		return ret;
	if (!b->em->default_only && (b->cand == MM_SPLIT || b->cand == MM_TILES) &&
	    ((Bb != B && Bb != 1) || (B == 1 && M < 2)))
		return -ENOENT;
	if (b->em->default_only || b->cand == MM_MATMUL || b->cand == MM_GEMM) {
		ret = mm_pd(b, &a, b->cand == MM_GEMM && !b->em->default_only ? "gemm" : NULL, &pd);
		if (ret)
			return builder_fail(b, ret, "oneDNN cannot run this matmul");
		set_impl(b, exec_pd_impl(pd), NULL);
		s = builder_plan_step(b);
		ret = s ? builder_step_prim(b, s, pd) : -E2BIG;
		if (!ret)
			ret = mm_bind(b, s, pd, abuf, bbuf, NULL, NULL, out_buf(b));
		dnnl_primitive_desc_destroy(pd);
		return ret;
	}
	{
		/* Split over batches when there are several, else over rows of a. */
		bool by_batch = B > 1;
		int64_t units = by_batch ? B : M;
		int64_t parts = builder_split_parts(b) * (b->cand == MM_TILES ? 2 : 1);
		int64_t nsl = units < parts ? units : parts;
		dnnl_primitive_desc_t sub_pd[2] = { NULL, NULL };
		dnnl_primitive_t sub_prim[2] = { NULL, NULL };
		int64_t bst3[3] = { K * N, bstr[nd - 2], bstr[nd - 1] };

		s = builder_group_new(b, (int)nsl);
		if (!s)
			return -ENOMEM;
		omp_set_num_threads(1);
		for (int64_t sl = 0; sl < nsl && !ret; sl++) {
			int64_t u0 = sl * units / nsl, us = (sl + 1) * units / nsl - u0;
			int kk = us == units / nsl ? 0 : 1;
			struct exec_buf ia = abuf, ib = bbuf, od = out_buf(b);

			if (!sub_pd[kk]) {
				struct mm_args sa = a;
				int64_t sad[3] = { by_batch ? us : 1, by_batch ? M : us, K };
				int64_t sdd[3] = { sad[0], sad[1], N };
				int64_t sbd[3] = { by_batch && Bb > 1 ? us : 1, K, N };

				md_plain(&sa.src, 3, sad);
				md_strided(&sa.wei, 3, sbd, bst3);
				md_plain(&sa.dst, 3, sdd);
				ret = mm_pd(b, &sa, NULL, &sub_pd[kk]);
				if (!ret)
					ret = builder_prim_new(b, sub_pd[kk], &sub_prim[kk]);
				if (ret)
					break;
				builder_set_split_impl(b, exec_pd_impl(sub_pd[kk]),
						       by_batch ? "batch-split" : "row-split", nsl);
			}
			if (by_batch) {
				ia.offset += (size_t)(u0 * M * K) * sizeof(float);
				if (Bb > 1)
					ib.offset += (size_t)(u0 * K * N) * sizeof(float);
				od.offset += (size_t)(u0 * M * N) * sizeof(float);
			} else {
				ia.offset += (size_t)(u0 * K) * sizeof(float);
				od.offset += (size_t)(u0 * N) * sizeof(float);
			}
			ret = builder_step_use(b, &s->items[sl], sub_prim[kk], sub_pd[kk]);
			if (!ret)
				ret = mm_bind(b, &s->items[sl], sub_pd[kk], ia, ib, NULL, NULL, od);
		}
		omp_set_num_threads(b->nr_threads);
		for (int i = 0; i < 2; i++)
			if (sub_pd[i])
				dnnl_primitive_desc_destroy(sub_pd[i]);
	}
	return ret ? builder_fail(b, ret, "oneDNN cannot run this matmul split") : 0;
}
