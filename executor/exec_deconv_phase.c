// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The transposed convolution's "phase-conv" version: a stride-s deconv is
 * s_h x s_w independent phases. The outputs (oy, ox) with oy % s_h == py and
 * ox % s_w == px read only the kernel taps ky = (py + pad_t) mod s_h + j s_h
 * (likewise kx), each from input row q + c - j, so the phase is a stride-1
 * convolution of the whole input with that sub-kernel turned by 180 degrees
 * (a view of the layer's w_phases), padded so that its output q is
 * output row q s_h + py. One oneDNN convolution per phase (brgconv on
 * AVX-512, bias and activation fused), each written through a strided view
 * of the NHWC output where oneDNN has a kernel for that, else into a dense
 * buffer that a reorder interleaves into the output.
 *
 * Offered where every phase has a tap (kernel >= stride), without dilation,
 * with every phase's padding >= 0 (pads below the kernel), and not on the
 * matmul-shuffle's shapes (kernel == stride, no pads), which are already a
 * single GEMM. docs/measurements/executor.md has its speed beside the
 * convs of the same model.
 */
#include <errno.h>
#include <string.h>
#include "exec_deconv.h"

int deconv_phased_index(int f, int k, int s)
{
	int at = f / s;

	/* the groups of the residues below f's: ceil((k - r) / s) taps each (none past k) */
	for (int r = 0; r < f % s; r++)
		at += (k - r + s - 1) / s;
	return at;
}

/* One spatial dimension of one phase. */
struct phase_dim {
	int64_t q; /* the phase's outputs: ph, ph + s, ... below the layer's output length */
	int taps; /* of its sub-kernel */
	int first; /* its first tap in the kernel turned by 180 degrees; the next are + s */
	int64_t pad_l, pad_r; /* of its stride-1 convolution */
};

static void phase_dim_of(int64_t in, int64_t out, int k, int s, int pad, int ph,
			 struct phase_dim *d)
{
	int r = (ph + pad) % s, c = (ph + pad) / s;

	d->taps = r < k ? (k - r + s - 1) / s : 0;
	d->q = out > ph ? (out - ph + s - 1) / s : 0;
	d->first = k - 1 - r - (d->taps - 1) * s;
	d->pad_l = d->taps - 1 - c;
	d->pad_r = d->q - in - d->pad_l + d->taps - 1;
}

/* Whether every phase of the layer is a stride-1 convolution oneDNN takes. */
static bool phases_fit(const struct deconv_shape *ds)
{
	if (ds->kh < ds->sh || ds->kw < ds->sw || (ds->kh > 1 && ds->dh != 1) ||
	    (ds->kw > 1 && ds->dw != 1) || deconv_is_shuffle(ds))
		return false;
	for (int p = 0; p < ds->sh + ds->sw; p++) {
		struct phase_dim d;

		if (p < ds->sh)
			phase_dim_of(ds->ih, ds->oh, ds->kh, ds->sh, ds->pt, p, &d);
		else
			phase_dim_of(ds->iw, ds->ow, ds->kw, ds->sw, ds->pl, p - ds->sh, &d);
		if (d.taps < 1 || d.pad_l < 0 || d.pad_r < 0)
			return false;
	}
	return true;
}

/*
 * The sub-kernel of phase (y, x) as oneDNN's logical conv weights
 * [g][OC/g][IC/g][taps_y][taps_x] (or [OC][IC][..] for one group): a view
 * of w_phases [g][IC/g][kh][kw][OC/g] from *first, whose taps are
 * consecutive along each kernel axis.
 */
static void phase_weights(const struct deconv_shape *ds, const struct phase_dim *y,
			  const struct phase_dim *x, dnnl_memory_desc_t *wlog,
			  dnnl_memory_desc_t *wany, int64_t *first)
{
	int64_t kk = (int64_t)ds->kh * ds->kw;
	const int64_t wd5[5] = { ds->g, ds->ocg, ds->icg, y->taps, x->taps };
	const int64_t ws5[5] = { ds->icg * kk * ds->ocg, 1, kk * ds->ocg, ds->kw * ds->ocg,
				 ds->ocg };
	int nw = ds->g > 1 ? 5 : 4;

	md_strided(wlog, nw, wd5 + 5 - nw, ws5 + 5 - nw);
	md_tag(wany, nw, wd5 + 5 - nw, dnnl_format_tag_any);
	*first = ((int64_t)deconv_phased_index(y->first, ds->kh, ds->sh) * ds->kw +
		  deconv_phased_index(x->first, ds->kw, ds->sw)) *
		 ds->ocg;
}

/* The convolution step of one phase: in (NHWC at `at`) to dst at `to`. */
static int phase_step(struct builder *b, const struct deconv_shape *ds, const struct phase_dim *y,
		      const struct phase_dim *x, struct exec_buf at, void *bias,
		      const dnnl_memory_desc_t *dst, struct exec_buf to)
{
	int64_t sd[4] = { ds->n, ds->ic, ds->ih, ds->iw }, bd[1] = { ds->oc }, first;
	dnnl_dims_t one = { 1, 1 }, no_dil = { 0, 0 };
	dnnl_dims_t pl = { y->pad_l, x->pad_l }, pr = { y->pad_r, x->pad_r };
	dnnl_memory_desc_t src, wlog, wany, bmd;
	dnnl_convolution_desc_t cd;
	dnnl_primitive_attr_t attr;
	dnnl_primitive_desc_t pd;
	int ret;

	md_tag(&src, 4, sd, dnnl_nhwc);
	md_plain(&bmd, 1, bd);
	phase_weights(ds, y, x, &wlog, &wany, &first);
	if (dnnl_dilated_convolution_forward_desc_init(
		    &cd, dnnl_forward_inference, dnnl_convolution_direct, &src, &wany,
		    bias ? &bmd : NULL, dst, one, no_dil, pl, pr))
		return -EINVAL;
	ret = exec_attr_new(&attr, b->l, 1.0f); /* -EINVAL: a post-op oneDNN refuses */
	if (ret)
		return ret;
	ret = builder_pd_create(b, &cd, attr, NULL, &pd);
	dnnl_primitive_attr_destroy(attr);
	if (ret)
		return ret;
	set_impl(b, exec_pd_impl(pd), NULL);
	ret = builder_weighted_step(b, pd, b->lw->w_phases + first, &wlog, &src, at, &bmd, bias,
				    dst, to);
	dnnl_primitive_desc_destroy(pd);
	return ret;
}

/*
 * Phase (y, x), whose outputs start at output pixel (py, px): straight
 * into its strided view of the output where oneDNN has a kernel other than
 * the reference for that, else into the dense buffer `dense_at` and
 * interleaved by a reorder.
 */
static int phase_conv(struct builder *b, const struct deconv_shape *ds, const struct phase_dim *y,
		      const struct phase_dim *x, int py, int px, struct exec_buf at, void *bias,
		      struct exec_buf dense_at, const char **impl)
{
	int64_t dd[4] = { ds->n, ds->oc, y->q, x->q };
	int64_t st[4] = { ds->oh * ds->ow * ds->oc, 1, ds->sh * ds->ow * ds->oc, ds->sw * ds->oc };
	struct exec_buf to = out_buf(b);
	dnnl_memory_desc_t view, dense;
	struct plan_draft saved = *b->plan;
	int ret;

	md_strided(&view, 4, dd, st);
	to.offset = (size_t)((py * ds->ow + px) * ds->oc) * sizeof(float);
	b->no_ref = true;
	ret = phase_step(b, ds, y, x, at, bias, &view, to);
	b->no_ref = false;
	if (ret != -EINVAL) {
		*impl = " strided-dst";
		return ret;
	}
	/* A failed attempt's steps own nothing: the model frees what they made. */
	*b->plan = saved;
	md_tag(&dense, 4, dd, dnnl_nhwc);
	ret = phase_step(b, ds, y, x, at, bias, &dense, dense_at);
	*impl = " +interleave";
	return ret ? ret : builder_reorder_step(b, &dense, dense_at, &view, to);
}

int deconv_phase_conv(struct builder *b, const struct deconv_shape *ds)
{
	/* phase (0, 0) has the most outputs; the phases run in turn, so one buffer serves all */
	size_t biggest = (size_t)(ds->n * ds->oc * ((ds->oh + ds->sh - 1) / ds->sh) *
				  ((ds->ow + ds->sw - 1) / ds->sw));
	struct exec_buf at, dense_at;
	char first_impl[EXEC_IMPL_LEN] = "";
	const char *how = "";
	void *bias;
	int ret;

	/* a conv and an interleave per phase, and the input's reorder */
	if (!phases_fit(ds) || !b->lw->w_phases || 2 * ds->sh * ds->sw + 1 > EXEC_MAX_STEPS)
		return -ENOENT;
	ret = deconv_bias(b, ds, &bias);
	if (!ret)
		ret = deconv_input(b, ds, &at);
	if (ret)
		return ret;
	dense_at = tmp_alloc(b->plan, biggest * sizeof(float));
	for (int py = 0; py < ds->sh && !ret; py++) {
		struct phase_dim y;

		phase_dim_of(ds->ih, ds->oh, ds->kh, ds->sh, ds->pt, py, &y);
		for (int px = 0; px < ds->sw && !ret; px++) {
			struct phase_dim x;

			phase_dim_of(ds->iw, ds->ow, ds->kw, ds->sw, ds->pl, px, &x);
			ret = phase_conv(b, ds, &y, &x, py, px, at, bias, dense_at, &how);
			if (!first_impl[0])
				snprintf(first_impl, sizeof(first_impl), "%s", b->plan->impl);
		}
	}
	if (!ret)
		snprintf(b->plan->impl, sizeof(b->plan->impl), "%.64s x%d%s", first_impl,
			 ds->sh * ds->sw, how);
	return ret;
}
