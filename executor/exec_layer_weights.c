// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A layer's weights while it is built: read from the weights file or
 * generated from the model's seed, batch norm folded into the convolution,
 * and converted into each oneDNN layout a version asks for, once per
 * layout, so that the versions share one copy wherever they can.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "batch_norm.h"
#include "exec_deconv.h"

/* Room for one more weight buffer in the layer's lists. */
static int weight_bufs_grow(struct exec_layer *xl)
{
	int cap = xl->cap_weight_bufs ? 2 * xl->cap_weight_bufs : 4;
	void **bufs;
	size_t *bytes;
	dnnl_memory_desc_t *mds;
	const void **srcs;

	if (xl->nr_weight_bufs < xl->cap_weight_bufs)
		return 0;
	bufs = realloc(xl->weight_bufs, (size_t)cap * sizeof(*bufs));
	if (bufs)
		xl->weight_bufs = bufs;
	bytes = realloc(xl->weight_bytes, (size_t)cap * sizeof(*bytes));
	if (bytes)
		xl->weight_bytes = bytes;
	mds = realloc(xl->weight_mds, (size_t)cap * sizeof(*mds));
	if (mds)
		xl->weight_mds = mds;
	srcs = realloc(xl->weight_srcs, (size_t)cap * sizeof(*srcs));
	if (srcs)
		xl->weight_srcs = srcs;
	if (!bufs || !bytes || !mds || !srcs)
		return -ENOMEM;
	xl->cap_weight_bufs = cap;
	return 0;
}

/*
 * The layer's weights in layout `want`, converted from the logical layout
 * once and shared by every version and slot that asks for the same layout.
 */
int builder_weights_in(struct builder *b, const float *logical,
		       const dnnl_memory_desc_t *logical_md, const dnnl_memory_desc_t *want,
		       void **out)
{
	struct exec_layer *xl = b->xl;
	dnnl_memory_t src = NULL, dst = NULL;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_primitive_t r = NULL;
	dnnl_exec_arg_t args[2];
	size_t bytes = md_bytes(want);
	void *buf;
	int ret = -EINVAL;

	for (int i = 0; i < xl->nr_weight_bufs; i++) {
		if (xl->weight_srcs[i] == logical &&
		    dnnl_memory_desc_equal(&xl->weight_mds[i], want)) {
			*out = xl->weight_bufs[i];
			return 0;
		}
	}
	if (weight_bufs_grow(xl))
		return builder_fail(b, -ENOMEM, "out of memory for weights");
	buf = exec_alloc_aligned(bytes);
	if (!buf)
		return builder_fail(b, -ENOMEM, "out of memory for weights");
	memset(buf, 0, bytes);
	if (dnnl_memory_create(&src, logical_md, b->em->engine, (void *)logical) ||
	    dnnl_memory_create(&dst, want, b->em->engine, buf) ||
	    dnnl_reorder_primitive_desc_create(&pd, logical_md, b->em->engine, want, b->em->engine,
					       NULL) ||
	    dnnl_primitive_create(&r, pd))
		goto out;
	args[0] = (dnnl_exec_arg_t){ DNNL_ARG_FROM, src };
	args[1] = (dnnl_exec_arg_t){ DNNL_ARG_TO, dst };
	if (dnnl_primitive_execute(r, b->em->streams[0], 2, args) ||
	    dnnl_stream_wait(b->em->streams[0]))
		goto out;
	b->em->nr_primitives++;
	xl->weight_mds[xl->nr_weight_bufs] = *want;
	xl->weight_srcs[xl->nr_weight_bufs] = logical;
	xl->weight_bufs[xl->nr_weight_bufs] = buf;
	xl->weight_bytes[xl->nr_weight_bufs] = bytes;
	xl->nr_weight_bufs++;
	*out = buf;
	buf = NULL;
	ret = 0;
out:
	if (r)
		dnnl_primitive_destroy(r);
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (src)
		dnnl_memory_destroy(src);
	if (dst)
		dnnl_memory_destroy(dst);
	free(buf);
	return ret ? builder_fail(b, ret, "cannot lay out weights") : 0;
}

/*
 * A deconv's weights from the file's [IC][OC/g][kh][kw] into
 * [g][IC/g][kh][kw][OC/g]: every row is then a GEMM's [K][N] row, which
 * its GEMM versions read as a plain matrix (exec_deconv.c). Also the same
 * with the kernel turned by 180 degrees and its taps grouped by phase,
 * w_phases, of which each stride-1 sub-kernel of the phase-conv version is
 * a view (exec_deconv_phase.c).
 */
static int deconv_weights_permute(const struct model *m, const struct model_layer *l,
				  struct layer_weights *lw)
{
	const struct model_conv *cv = &l->conv;
	int64_t ic = m->layers[l->inputs[0]].out.dims[1], g = cv->groups > 0 ? cv->groups : 1;
	int64_t ocg = cv->out_channels / g, kk = (int64_t)cv->kh * cv->kw;
	bool fits = (size_t)(ic * ocg * kk) == lw->nr_w;
	float *t = fits ? malloc(lw->nr_w * sizeof(float)) : NULL;
	float *f = fits ? malloc(lw->nr_w * sizeof(float)) : NULL;

	if (!t || !f) {
		free(t);
		free(f);
		layer_weights_free(lw);
		memset(lw, 0, sizeof(*lw));
		return fits ? -ENOMEM : -EINVAL;
	}
	for (int64_t c = 0; c < ic; c++) /* c = gi * icg + ci: [g][IC/g] is [IC] */
		for (int64_t o = 0; o < ocg; o++)
			for (int64_t k = 0; k < kk; k++) {
				int y = deconv_phased_index(cv->kh - 1 - (int)(k / cv->kw), cv->kh,
							    cv->stride_h);
				int x = deconv_phased_index(cv->kw - 1 - (int)(k % cv->kw), cv->kw,
							    cv->stride_w);

				t[(c * kk + k) * ocg + o] = lw->w[(c * ocg + o) * kk + k];
				f[(c * kk + (int64_t)y * cv->kw + x) * ocg + o] =
					lw->w[(c * ocg + o) * kk + k];
			}
	free(lw->w);
	lw->w = t;
	lw->w_phases = f;
	return 0;
}

/* From the weights file when there is one, else generated from the model's seed. */
int layer_weights_make(const struct model *m, int li, struct exec_weights_file *wf,
		       struct layer_weights *lw, struct coloc_err *err)
{
	const struct model_layer *l = &m->layers[li];
	struct exec_layer_params p;
	int ret = wf ? exec_weights_read_layer(wf, li, &p, err) :
		       exec_layer_params_generate(m, li, &p);

	memset(lw, 0, sizeof(*lw));
	if (ret)
		return ret;
	lw->w = p.weights;
	lw->nr_w = p.nr_weights;
	lw->bias = p.bias;
	lw->nr_bias = p.nr_bias;
	p.weights = p.bias = NULL;
	if (l->op == MODEL_OP_CONV && l->conv.batch_norm) {
		size_t oc = (size_t)l->conv.out_channels, per = lw->nr_w / oc;

		if (!lw->bias) {
			lw->bias = calloc(oc, sizeof(float));
			lw->nr_bias = oc;
		}
		if (!lw->bias) {
			exec_layer_params_free(&p);
			free(lw->w);
			return -ENOMEM;
		}
		for (size_t o = 0; o < oc; o++) {
			double s = batch_norm_scale(p.bn_gamma[o], p.bn_var[o], p.bn_eps);

			for (size_t i = 0; i < per; i++)
				lw->w[o * per + i] = (float)(lw->w[o * per + i] * s);
			lw->bias[o] = batch_norm_bias(lw->bias[o], p.bn_mean[o], s, p.bn_beta[o]);
		}
	}
	exec_layer_params_free(&p);
	if (l->op == MODEL_OP_DECONV)
		return deconv_weights_permute(m, l, lw);
	return 0;
}

void layer_weights_free(struct layer_weights *lw)
{
	free(lw->w);
	free(lw->w_phases);
	free(lw->bias);
}
