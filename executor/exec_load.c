// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Loading a model into the executor: weights (generated, batch norm folded
 * into the convolution), kernel versions, and every oneDNN primitive each
 * version needs at each core-count slot, so that nothing is created when a
 * query runs. oneDNN 2.6 fixes a convolution's thread count when the
 * primitive is created, so each slot's primitives are created after
 * omp_set_num_threads(count) in the loading thread, which is also the
 * thread that later drives blocks. Its brgemm matmul does the same, so
 * every primitive of every layer is made per slot.
 *
 * Activation layout: every layer output has one canonical layout, fixed at
 * load and independent of the version that produced it, so blocks may
 * switch versions freely. 4-D image tensors made by conv, pool and lrn are
 * NHWC: oneDNN's AVX-512 convolution, pooling, eltwise, binary and concat
 * kernels all run natively on it, so a conv net needs no reorders between
 * layers in the default version. Everything else is dense in logical order
 * (what matmul, layer norm and the reshape/transpose views want). Versions
 * that want another layout (blocked nChw16c) reorder in and out themselves,
 * and the reorder is part of that version's cost.
 *
 * Versions trade locality against parallelism. Each operator has a list of
 * candidate versions in order of preference; a layer keeps the first
 * EXEC_VERSIONS_KEPT that can be built for its shape and that run
 * differently on this CPU from those already kept (another kernel, layout
 * or split), so the same kernel is never offered under two names (on AVX2
 * oneDNN's matmul and its gemm-based matmul are one kernel). For a
 * convolution: oneDNN's first choice on NHWC (brgemm-based on AVX-512, all
 * cores on one primitive), a row split (each core a band of output rows,
 * all weights, single-thread primitives run as one parallel group), an
 * output-channel split (each core a slice of the channels, streaming 1/n of
 * the weights), a row split with two bands per core ("row-tiles"), the
 * gemm-based algorithm on NHWC, and "onednn-any": the layouts oneDNN picks
 * around the shared weights. All share the one copy of the weights oneDNN
 * laid out for the first where they can. For fc: oneDNN's matmul, the
 * gemm-based matmul, output columns split per core, the matmul on weights
 * oneDNN pre-packs, and columns split two per core. For a batched matmul:
 * default, gemm, and batches (or rows) split one or two per core.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <math.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec_internal.h"

#define ALIGN 64

/* A plan while it is built: room for the most steps any plan needs. */
struct plan_draft {
	int nr_steps;
	struct exec_step steps[EXEC_MAX_STEPS];
	size_t tmp_bytes;
	char impl[EXEC_IMPL_LEN];
};

struct builder {
	struct exec_model *em;
	const struct model *m;
	int li;
	const struct model_layer *l;
	struct exec_layer *xl;
	struct plan_draft *plan;
	int slot;
	int nr_threads;
	bool strict; /* pd_create: no implementation matching the name is an error */
	bool no_ref; /* pd_create: never the reference kernels */
	struct coloc_err *err;
};

static struct exec_owned *owned_of(struct exec_model *em)
{
	return &em->owned;
}

static int fail(struct builder *b, int ret, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return coloc_err_set(b->err, ret, "layer %d '%s' (%s, line %d): %s", b->li, b->l->name,
			     model_op_name(b->l->op), b->l->line, msg);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*arr, ncap * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

static void *alloc_aligned(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, ALIGN, bytes ? (bytes + ALIGN - 1) / ALIGN * ALIGN : ALIGN))
		return NULL;
	return p;
}

/* ---- memory descriptors ----------------------------------------------------- */

static void md_plain(dnnl_memory_desc_t *md, int ndims, const int64_t *dims)
{
	dnnl_dims_t d, s;
	int64_t stride = 1;

	for (int i = ndims - 1; i >= 0; i--) {
		d[i] = dims[i];
		s[i] = stride;
		stride *= dims[i];
	}
	dnnl_memory_desc_init_by_strides(md, ndims, d, dnnl_f32, s);
}

static void md_tag(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, dnnl_format_tag_t tag)
{
	dnnl_dims_t d;

	for (int i = 0; i < ndims; i++)
		d[i] = dims[i];
	dnnl_memory_desc_init_by_tag(md, ndims, d, dnnl_f32, tag);
}

static void md_strided(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
		       const int64_t *strides)
{
	dnnl_dims_t d, s;

	for (int i = 0; i < ndims; i++) {
		d[i] = dims[i];
		s[i] = strides[i];
	}
	dnnl_memory_desc_init_by_strides(md, ndims, d, dnnl_f32, s);
}

static bool md_is_plain(const dnnl_memory_desc_t *md)
{
	dnnl_memory_desc_t p;

	md_plain(&p, md->ndims, md->dims);
	return dnnl_memory_desc_equal(md, &p);
}

/* Strided: no inner blocks, so a dimension permutation is a stride permutation. */
static bool md_is_strided(const dnnl_memory_desc_t *md)
{
	return md->format_kind == dnnl_blocked && md->format_desc.blocking.inner_nblks == 0 &&
	       md->offset0 == 0;
}

static size_t md_bytes(const dnnl_memory_desc_t *md)
{
	return dnnl_memory_desc_get_size(md);
}

static const dnnl_memory_desc_t *in_md(struct builder *b, int j)
{
	return &b->em->layers[b->l->inputs[j]].out_md;
}

static struct exec_buf in_buf(struct builder *b, int j)
{
	return (struct exec_buf){ .kind = EXEC_BUF_OUT, .index = b->l->inputs[j] };
}

static struct exec_buf out_buf(struct builder *b)
{
	return (struct exec_buf){ .kind = EXEC_BUF_OUT, .index = b->li };
}

static struct exec_buf tmp_alloc(struct plan_draft *p, size_t bytes)
{
	struct exec_buf t = { .kind = EXEC_BUF_TMP };

	t.offset = (p->tmp_bytes + ALIGN - 1) / ALIGN * ALIGN;
	p->tmp_bytes = t.offset + bytes;
	return t;
}

/* ---- primitives and steps ------------------------------------------------ */

static int attr_new(dnnl_primitive_attr_t *attr, enum model_act act, float act_alpha,
		    float linear_scale)
{
	dnnl_post_ops_t po = NULL;
	dnnl_alg_kind_t alg = dnnl_alg_kind_undef;
	float a = 0.0f, be = 0.0f;

	if (dnnl_primitive_attr_create(attr) ||
	    dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user))
		return -ENOMEM;
	switch (act) {
	case MODEL_ACT_NONE:
		break;
	case MODEL_ACT_RELU:
		alg = dnnl_eltwise_relu;
		break;
	case MODEL_ACT_RELU6:
		alg = dnnl_eltwise_clip_v2;
		be = 6.0f;
		break;
	case MODEL_ACT_LEAKY_RELU:
		alg = dnnl_eltwise_relu;
		a = act_alpha;
		break;
	case MODEL_ACT_SIGMOID:
		alg = dnnl_eltwise_logistic;
		break;
	case MODEL_ACT_SWISH:
		alg = dnnl_eltwise_swish;
		a = 1.0f;
		break;
	case MODEL_ACT_GELU:
		alg = dnnl_eltwise_gelu_erf;
		break;
	case MODEL_ACT_TANH:
		alg = dnnl_eltwise_tanh;
		break;
	}
	if (alg == dnnl_alg_kind_undef && linear_scale == 1.0f)
		return 0;
	if (dnnl_post_ops_create(&po))
		goto err;
	if (linear_scale != 1.0f &&
	    dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, linear_scale, 0.0f))
		goto err;
	if (alg != dnnl_alg_kind_undef && dnnl_post_ops_append_eltwise(po, 1.0f, alg, a, be))
		goto err;
	if (dnnl_primitive_attr_set_post_ops(*attr, po))
		goto err;
	dnnl_post_ops_destroy(po);
	return 0;
err:
	if (po)
		dnnl_post_ops_destroy(po);
	dnnl_primitive_attr_destroy(*attr);
	*attr = NULL;
	return -EINVAL;
}

static const char *pd_impl(const_dnnl_primitive_desc_t pd)
{
	const char *s = "?";

	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s);
	return s;
}

/*
 * The first implementation whose name contains `want` (NULL: the first
 * one, oneDNN's default). Falls back to the default when none matches so a
 * version always runs; its impl string then says what actually runs.
 */
static int pd_create(struct builder *b, const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr,
		     const char *want, dnnl_primitive_desc_t *pd)
{
	dnnl_primitive_desc_iterator_t it;

	*pd = NULL;
	if (dnnl_primitive_desc_iterator_create(&it, desc, attr, b->em->engine, NULL))
		return -EINVAL;
	do {
		dnnl_primitive_desc_t cand = dnnl_primitive_desc_iterator_fetch(it);

		if (!cand)
			break;
		if ((!want || strstr(pd_impl(cand), want)) &&
		    !(b->no_ref && !strncmp(pd_impl(cand), "ref", 3))) {
			*pd = cand;
			break;
		}
		dnnl_primitive_desc_destroy(cand);
	} while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
	dnnl_primitive_desc_iterator_destroy(it);
	if (!*pd && (want || b->no_ref) && b->strict)
		return -ENOENT;
	if (!*pd && want)
		return pd_create(b, desc, attr, NULL, pd);
	return *pd ? 0 : -EINVAL;
}

static int own_prim(struct exec_model *em, dnnl_primitive_t p)
{
	struct exec_owned *o = owned_of(em);

	if (grow((void **)&o->prims, &o->cap_prims, o->nr_prims + 1, sizeof(*o->prims)))
		return -ENOMEM;
	o->prims[o->nr_prims++] = p;
	em->nr_primitives++;
	return 0;
}

static int step_arg(struct builder *b, struct exec_step *s, int arg, const dnnl_memory_desc_t *md,
		    struct exec_buf buf, void *fixed)
{
	struct exec_owned *o = owned_of(b->em);
	dnnl_memory_t mem;

	if (s->nr_args >= EXEC_MAX_ARGS)
		return -E2BIG;
	if (grow((void **)&o->mems, &o->cap_mems, o->nr_mems + 1, sizeof(*o->mems)))
		return -ENOMEM;
	if (dnnl_memory_create(&mem, md, b->em->engine, fixed ? fixed : DNNL_MEMORY_NONE))
		return -EINVAL;
	o->mems[o->nr_mems++] = mem;
	s->args[s->nr_args] = (dnnl_exec_arg_t){ .arg = arg, .memory = mem };
	s->bufs[s->nr_args] = buf;
	s->nr_args++;
	return 0;
}

/* Makes prim (created from pd) the step's, with pd's scratchpad argument. */
static int step_use(struct builder *b, struct exec_step *s, dnnl_primitive_t prim,
		    const_dnnl_primitive_desc_t pd)
{
	const dnnl_memory_desc_t *sp =
		dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);

	memset(s, 0, sizeof(*s));
	s->prim = prim;
	if (!sp || !md_bytes(sp))
		return 0;
	if (md_bytes(sp) > b->em->scratchpad_bytes)
		b->em->scratchpad_bytes = md_bytes(sp);
	return step_arg(b, s, DNNL_ARG_SCRATCHPAD, sp,
			(struct exec_buf){ .kind = EXEC_BUF_SCRATCHPAD }, NULL);
}

static int prim_new(struct builder *b, const_dnnl_primitive_desc_t pd, dnnl_primitive_t *prim)
{
	if (dnnl_primitive_create(prim, pd))
		return -EINVAL;
	if (own_prim(b->em, *prim)) {
		dnnl_primitive_destroy(*prim);
		return -ENOMEM;
	}
	return 0;
}

/* A step running a new primitive made from pd (pd stays the caller's). */
static int step_prim(struct builder *b, struct exec_step *s, const_dnnl_primitive_desc_t pd)
{
	dnnl_primitive_t prim;
	int ret = prim_new(b, pd, &prim);

	return ret ? ret : step_use(b, s, prim, pd);
}

static struct exec_step *plan_step(struct builder *b)
{
	if (b->plan->nr_steps >= EXEC_MAX_STEPS)
		return NULL;
	return &b->plan->steps[b->plan->nr_steps++];
}

static struct exec_step *group_new(struct builder *b, int nr_items)
{
	struct exec_owned *o = owned_of(b->em);
	struct exec_step *s = plan_step(b), *items;

	if (!s || grow((void **)&o->item_arrays, &o->cap_item_arrays, o->nr_item_arrays + 1,
		       sizeof(*o->item_arrays)))
		return NULL;
	items = calloc((size_t)nr_items, sizeof(*items));
	if (!items)
		return NULL;
	o->item_arrays[o->nr_item_arrays++] = items;
	memset(s, 0, sizeof(*s));
	s->items = items;
	s->nr_items = nr_items;
	return s;
}

static int reorder_step(struct builder *b, const dnnl_memory_desc_t *src_md, struct exec_buf src,
			const dnnl_memory_desc_t *dst_md, struct exec_buf dst)
{
	dnnl_primitive_attr_t attr;
	dnnl_primitive_desc_t pd;
	struct exec_step *s = plan_step(b);
	int ret;

	if (!s)
		return fail(b, -E2BIG, "too many steps");
	if (attr_new(&attr, MODEL_ACT_NONE, 0.0f, 1.0f))
		return fail(b, -ENOMEM, "out of memory");
	ret = dnnl_reorder_primitive_desc_create(&pd, src_md, b->em->engine, dst_md, b->em->engine,
						 attr);
	dnnl_primitive_attr_destroy(attr);
	if (ret)
		return fail(b, -EINVAL, "oneDNN has no reorder between these layouts");
	ret = step_prim(b, s, pd);
	dnnl_primitive_desc_destroy(pd);
	if (!ret)
		ret = step_arg(b, s, DNNL_ARG_FROM, src_md, src, NULL);
	if (!ret)
		ret = step_arg(b, s, DNNL_ARG_TO, dst_md, dst, NULL);
	return ret ? fail(b, ret, "cannot create reorder") : 0;
}

/* Where input j is found in layout `want`: in place, or reordered into the arena. */
static int adapt_input(struct builder *b, int j, const dnnl_memory_desc_t *want,
		       struct exec_buf *at)
{
	if (dnnl_memory_desc_equal(in_md(b, j), want)) {
		*at = in_buf(b, j);
		return 0;
	}
	*at = tmp_alloc(b->plan, md_bytes(want));
	return reorder_step(b, in_md(b, j), in_buf(b, j), want, *at);
}

/* Input j dense in logical order (any view of its elements is then valid). */
static int plain_input(struct builder *b, int j, struct exec_buf *at)
{
	dnnl_memory_desc_t p;

	md_plain(&p, in_md(b, j)->ndims, in_md(b, j)->dims);
	return adapt_input(b, j, &p, at);
}

/*
 * Adds the main primitive: src/weights... arguments are given by the caller;
 * this binds the destination, writing straight into the layer's output when
 * the primitive's layout is the canonical one, else through the arena and a
 * reorder.
 */
static int bind_dst(struct builder *b, struct exec_step *s, const dnnl_memory_desc_t *dst_md,
		    int arg, struct exec_buf *via)
{
	if (dnnl_memory_desc_equal(dst_md, &b->xl->out_md)) {
		*via = out_buf(b);
		return step_arg(b, s, arg, dst_md, *via, NULL);
	}
	*via = tmp_alloc(b->plan, md_bytes(dst_md));
	return step_arg(b, s, arg, dst_md, *via, NULL);
}

static int finish_dst(struct builder *b, const dnnl_memory_desc_t *dst_md, struct exec_buf via)
{
	if (via.kind == EXEC_BUF_OUT)
		return 0;
	return reorder_step(b, dst_md, via, &b->xl->out_md, out_buf(b));
}

static void set_impl(struct builder *b, const char *impl, const char *suffix)
{
	snprintf(b->plan->impl, sizeof(b->plan->impl), "%s%s", impl, suffix ? suffix : "");
}

/* A split's impl: the kernel, how it is split, and into how many pieces. */
static void set_split_impl(struct builder *b, const char *impl, const char *how, int64_t pieces)
{
	snprintf(b->plan->impl, sizeof(b->plan->impl), "%s 1-thread %s x%lld", impl, how,
		 (long long)pieces);
}

/* ---- weights ------------------------------------------------------------- */

/*
 * The layer's weights in layout `want`, converted from the logical layout
 * once and shared by every version and slot that asks for the same layout.
 */
static int weights_in(struct builder *b, const float *logical, const dnnl_memory_desc_t *logical_md,
		      const dnnl_memory_desc_t *want, void **out)
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
	if (xl->nr_weight_bufs >= EXEC_MAX_WEIGHT_BUFS)
		return fail(b, -E2BIG, "too many weight layouts");
	buf = alloc_aligned(bytes);
	if (!buf)
		return fail(b, -ENOMEM, "out of memory for weights");
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
	return ret ? fail(b, ret, "cannot lay out weights") : 0;
}

/* Folded parameters of the layer being built, in logical layouts. */
struct layer_weights {
	float *w; /* conv [OC][IC/g][kh][kw] with BN folded in; fc [K][N]; ln gamma; embed */
	float *bias; /* conv/fc bias (BN shift folded in), ln beta; NULL if none */
	size_t nr_w, nr_bias;
};

/* From the weights file when there is one, else generated from the model's seed. */
static int layer_weights_make(const struct model *m, int li, struct exec_weights_file *wf,
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
			float s = p.bn_gamma[o] / sqrtf(p.bn_var[o] + p.bn_eps);

			for (size_t i = 0; i < per; i++)
				lw->w[o * per + i] *= s;
			lw->bias[o] = (lw->bias[o] - p.bn_mean[o]) * s + p.bn_beta[o];
		}
	}
	exec_layer_params_free(&p);
	return 0;
}

static void layer_weights_free(struct layer_weights *lw)
{
	free(lw->w);
	free(lw->bias);
}

/* ---- convolution --------------------------------------------------------- */

struct conv_shape {
	int64_t n, ic, ih, iw, oc, oh, ow, g;
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
	if (dnnl_dilated_convolution_forward_desc_init(
		    &cd, dnnl_forward_inference, dnnl_convolution_direct, &src, wmd,
		    has_bias ? &bias : NULL, &dst, cs->strides, cs->dil, cs->pad_l, cs->pad_r))
		return -EINVAL;
	if (attr_new(&attr, b->l->act, b->l->act_alpha, 1.0f))
		return -ENOMEM;
	ret = pd_create(b, &cd, attr, want, pd);
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
	int ret = step_arg(b, s, DNNL_ARG_SRC, sm, src, NULL);

	if (!ret)
		ret = step_arg(b, s, DNNL_ARG_WEIGHTS, wm, fixed, w);
	if (!ret && bias)
		ret = step_arg(b, s, DNNL_ARG_BIAS, bm, fixed, bias);
	if (!ret && dst_via)
		ret = bind_dst(b, s, dm, DNNL_ARG_DST, dst_via);
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
	set_impl(b, pd_impl(pd), NULL);
	ret = weights_in(b, lw->w, &wlog,
			 dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &w);
	if (!ret && lw->bias) {
		dnnl_memory_desc_t bmd;
		int64_t bd[1] = { cs->oc };

		md_plain(&bmd, 1, bd);
		ret = weights_in(b, lw->bias, &bmd, &bmd, &bias);
	}
	if (!ret)
		ret = adapt_input(b, 0, &sm, &src);
	if (ret) {
		dnnl_primitive_desc_destroy(pd);
		return ret;
	}
	s = plan_step(b);
	if (!s) {
		dnnl_primitive_desc_destroy(pd);
		return -E2BIG;
	}
	ret = step_prim(b, s, pd);
	if (!ret)
		ret = conv_bind(b, s, pd, src, w, bias, &via);
	dnnl_primitive_desc_destroy(pd);
	if (!ret)
		ret = finish_dst(b, &dm, via);
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
	ret = weights_in(b, lw->w, &wlog, wmd, w);
	if (!ret && lw->bias)
		ret = weights_in(b, lw->bias, &bmd, &bmd, bias);
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
	if (!strncmp(pd_impl(sp->pd), "ref", 3) ||
	    !dnnl_memory_desc_equal(wmd,
				    dnnl_primitive_desc_query_md(sp->pd, dnnl_query_weights_md, 0)))
		return -ENOENT;
	omp_set_num_threads(1);
	ret = prim_new(b, sp->pd, &sp->prim);
	omp_set_num_threads(b->nr_threads);
	return ret;
}

/*
 * How many pieces a split version cuts a layer into: one per core, and two
 * on a single core, where a split still halves the working set of each step
 * (the locality end of VELTAIR's trade-off) instead of being the default
 * kernel under another name.
 */
static int64_t split_parts(const struct builder *b)
{
	return b->nr_threads == 1 ? 2 : b->nr_threads;
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
	int64_t want = split_parts(b) * bands_per_core;
	int64_t nb = cs->oh < want ? cs->oh : want, s = cs->strides[0];

	/* one band is the whole layer, and tiles no finer than the plain split are that split */
	if (nb < 2 || (bands_per_core > 1 && nb <= split_parts(b)))
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
		ret = adapt_input(b, 0, &src_md, &src);
	g = ret ? NULL : group_new(b, (int)(cs->n * nb));
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
			set_split_impl(b, pd_impl(subs[k].pd), "row-split", nb);
		}
		for (int64_t img = 0; img < cs->n && !ret; img++) {
			struct exec_step *it = &g->items[img * nb + band];
			struct exec_buf isrc = src, idst = out_buf(b);

			isrc.offset += ((size_t)(img * cs->ih + in0)) * src_row;
			idst.offset += ((size_t)(img * cs->oh + y0)) * dst_row;
			ret = step_use(b, it, subs[k].prim, subs[k].pd);
			if (!ret)
				ret = conv_bind(b, it, subs[k].pd, isrc, w, bias, NULL);
			if (!ret)
				ret = step_arg(b, it, DNNL_ARG_DST,
					       dnnl_primitive_desc_query_md(subs[k].pd,
									    dnnl_query_dst_md, 0),
					       idst, NULL);
		}
	}
	subs_free(subs, nr_subs);
	return ret;
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
	if (cs->g != 1 || !o_outer_blocked(wmd, &blk) || blk < 1 || cs->oc % blk ||
	    cs->oc / blk < 2)
		return -ENOENT;
	nblocks = cs->oc / blk;
	nsl = nblocks < split_parts(b) ? nblocks : split_parts(b);
	md_tag(&src_md, 4, sd, dnnl_nhwc);
	ret = conv_weights(b, cs, lw, wmd, &w, &bias);
	if (!ret)
		ret = adapt_input(b, 0, &src_md, &src);
	if (ret)
		return ret;
	g = group_new(b, (int)(cs->n * nsl));
	gc = g ? group_new(b, (int)(cs->n * nsl)) : NULL;
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
			set_split_impl(b, pd_impl(subs[k].pd), "oc-split", nsl);
			md_tag(&tmd, 4, td, dnnl_nhwc);
			md_strided(&omd, 4, td, ost);
			ret = attr_new(&attr, MODEL_ACT_NONE, 0.0f, 1.0f);
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
				ret = prim_new(b, rpd, &copies[k].prim);
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
			ret = step_use(b, it, subs[k].prim, subs[k].pd);
			if (!ret)
				ret = conv_bind(
					b, it, subs[k].pd, isrc,
					(float *)w +
						(o0 / blk) * wmd->format_desc.blocking.strides[0],
					bias ? (float *)bias + o0 : NULL, NULL);
			if (!ret)
				ret = step_arg(b, it, DNNL_ARG_DST, dm, itmp, NULL);
			if (!ret)
				ret = step_use(b, ct, copies[k].prim, copies[k].pd);
			if (!ret)
				ret = step_arg(b, ct, DNNL_ARG_FROM,
					       dnnl_primitive_desc_query_md(copies[k].pd,
									    dnnl_query_src_md, 0),
					       itmp, NULL);
			if (!ret)
				ret = step_arg(b, ct, DNNL_ARG_TO,
					       dnnl_primitive_desc_query_md(copies[k].pd,
									    dnnl_query_dst_md, 0),
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
 * A layer's candidate versions, in order of preference. build_layer keeps
 * the first EXEC_VERSIONS_KEPT that can be built and that run differently
 * from every version already kept on this CPU (see plans_same()), so a
 * candidate that resolves to the same kernel, split and layouts as another
 * here is never offered twice under two names.
 */
enum conv_cand {
	CONV_NHWC,
	CONV_ROW_SPLIT,
	CONV_OC_SPLIT,
	CONV_ROW_TILES,
	CONV_GEMM_NHWC,
	CONV_ANY,
	CONV_NR_CANDS
};

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
 * Candidate 0 is oneDNN's own first choice on NHWC (brgemm-based on
 * AVX-512 for most shapes); its weights layout is shared by the others, so
 * a conv normally holds one copy of its weights. A candidate that cannot be
 * built at the first slot returns -ENOENT and is not offered; at a later
 * slot it runs "onednn-any" instead. oneDNN may choose another weights
 * layout at another thread count, which costs a second copy only where it
 * refuses the first slot's.
 */
static int build_conv(struct builder *b, int cand, const struct layer_weights *lw)
{
	struct plan_draft saved = *b->plan;
	struct conv_shape cs;
	dnnl_memory_desc_t any, shared;
	int ret;

	conv_shape_of(b, &cs);
	md_tag(&any, cs.ndims_w, cs.wdims, dnnl_format_tag_any);
	if (b->em->default_only)
		return conv_whole(b, &cs, lw, dnnl_format_tag_any, &any, NULL);
	shared = b->xl->weight_mds[0];
	switch (cand) {
	case CONV_NHWC: {
		char impl[EXEC_IMPL_LEN];

		if (b->slot == 0)
			return conv_whole(b, &cs, lw, dnnl_nhwc, &any, NULL);
		/*
		 * oneDNN may lay weights out differently for another thread
		 * count; keep the first slot's layout and kernel when it can.
		 */
		snprintf(impl, sizeof(impl), "%s", b->xl->plans[0][0].impl);
		b->strict = true;
		ret = conv_whole(b, &cs, lw, dnnl_nhwc, &shared, impl);
		b->strict = false;
		if (ret != -ENOENT && ret != -EINVAL)
			return ret;
		*b->plan = saved;
		return conv_whole(b, &cs, lw, dnnl_nhwc, &any, NULL);
	}
	case CONV_ROW_SPLIT:
		ret = conv_row_split(b, &cs, lw, &shared, 1);
		break;
	case CONV_OC_SPLIT:
		ret = conv_oc_split(b, &cs, lw, &shared);
		break;
	case CONV_ROW_TILES:
		ret = conv_row_split(b, &cs, lw, &shared, 2);
		break;
	case CONV_GEMM_NHWC:
		/* the gemm-based algorithm, for shapes too small to split */
		b->strict = true;
		ret = conv_whole(b, &cs, lw, dnnl_nhwc, &any, "gemm");
		b->strict = false;
		if (ret == -EINVAL)
			ret = -ENOENT;
		break;
	default:
		return conv_any(b, &cs, lw, &shared, &any);
	}
	if (ret != -ENOENT || b->slot == 0)
		return ret;
	*b->plan = saved;
	return conv_any(b, &cs, lw, &shared, &any);
}

/* ---- fc and batched matmul ----------------------------------------------- */

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
	if (attr_new(&attr, b->l->act, b->l->act_alpha, a->alpha))
		return -ENOMEM;
	ret = pd_create(b, &md, attr, want, pd);
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

	ret = step_arg(b, s, DNNL_ARG_SRC, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
		       src, NULL);
	if (!ret)
		ret = step_arg(b, s, DNNL_ARG_WEIGHTS,
			       dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
			       wei_fixed ? fixed : wei, wei_fixed);
	if (!ret && bias)
		ret = step_arg(b, s, DNNL_ARG_BIAS,
			       dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1), fixed,
			       bias);
	if (!ret)
		ret = step_arg(b, s, DNNL_ARG_DST,
			       dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), dst, NULL);
	return ret;
}

/* fc candidates, in order of preference (see enum conv_cand). */
enum fc_cand { FC_MATMUL, FC_GEMM, FC_OC_SPLIT, FC_PACKED, FC_OC_TILES, FC_NR_CANDS };

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
static int build_fc(struct builder *b, int cand, const struct layer_weights *lw)
{
	const struct model_shape *in = &b->m->layers[b->l->inputs[0]].out;
	int64_t k = in->dims[in->ndims - 1], n = b->l->fc.out_features;
	int64_t m = model_shape_elems(in) / k;
	int64_t sd[2] = { m, k }, wd[2] = { k, n }, bd[2] = { 1, n }, dd[2] = { m, n };
	dnnl_memory_desc_t wlog, blog;
	struct exec_buf src, none = { .kind = EXEC_BUF_FIXED };
	struct mm_args a = { .has_bias = lw->bias != NULL, .alpha = 1.0f };
	dnnl_primitive_desc_t pd;
	struct exec_step *s;
	void *w, *bias = NULL;
	int ret;

	md_plain(&a.src, 2, sd);
	md_plain(&wlog, 2, wd);
	md_plain(&blog, 2, bd);
	a.bias = blog;
	md_plain(&a.dst, 2, dd);
	ret = plain_input(b, 0, &src);
	if (!ret && lw->bias)
		ret = weights_in(b, lw->bias, &blog, &blog, &bias);
	if (ret)
		return ret;
	if (b->em->default_only || cand == FC_MATMUL || cand == FC_GEMM || cand == FC_PACKED) {
		const dnnl_memory_desc_t *wmd;

		a.wei = wlog;
		if (b->em->default_only || cand == FC_PACKED)
			md_tag(&a.wei, 2, wd, dnnl_format_tag_any);
		ret = mm_pd(b, &a, cand == FC_GEMM ? "gemm" : NULL, &pd);
		if (ret)
			return fail(b, ret, "oneDNN cannot run this fc");
		wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
		set_impl(b, pd_impl(pd), NULL);
		if (!md_is_plain(wmd)) {
			char layout[32], suffix[48];

			md_layout_name(wmd, layout, sizeof(layout));
			snprintf(suffix, sizeof(suffix), " weights:%s", layout);
			set_impl(b, pd_impl(pd), suffix);
		}
		ret = weights_in(b, lw->w, &wlog, wmd, &w);
		s = ret ? NULL : plan_step(b);
		if (s)
			ret = step_prim(b, s, pd);
		if (s && !ret)
			ret = mm_bind(b, s, pd, src, none, w, bias, out_buf(b));
		dnnl_primitive_desc_destroy(pd);
		return s || ret ? ret : -E2BIG;
	}
	if (n < 2)
		return -ENOENT;
	ret = weights_in(b, lw->w, &wlog, &wlog, &w);
	if (ret)
		return ret;
	{
		int64_t parts = split_parts(b) * (cand == FC_OC_TILES ? 2 : 1);
		int64_t nsl = n < parts ? n : parts;
		dnnl_primitive_desc_t sub_pd[2] = { NULL, NULL };
		dnnl_primitive_t sub_prim[2] = { NULL, NULL };

		s = group_new(b, (int)nsl);
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
					ret = prim_new(b, sub_pd[kk], &sub_prim[kk]);
				if (ret)
					break;
				set_split_impl(b, pd_impl(sub_pd[kk]), "oc-split", nsl);
			}
			dst.offset = (size_t)n0 * sizeof(float);
			ret = step_use(b, &s->items[sl], sub_prim[kk], sub_pd[kk]);
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
	return ret ? fail(b, ret, "oneDNN cannot run this fc split") : 0;
}

/* Batched matmul candidates, in order of preference. */
enum mm_cand { MM_MATMUL, MM_GEMM, MM_SPLIT, MM_TILES, MM_NR_CANDS };

/*
 * Batched a @ b (or a @ b^T) * alpha. Operands are activations, plain in
 * logical order; b^T is a stride swap. The split versions run batches (or,
 * with a single batch, row blocks of a) as single-thread matmuls, one per
 * core ("batch-split") or two per core ("batch-tiles").
 */
static int build_matmul(struct builder *b, int cand)
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
		return fail(b, -EINVAL, "matmul operands must have 2..%d dims", nd);
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
	ret = plain_input(b, 0, &abuf);
	if (!ret)
		ret = plain_input(b, 1, &bbuf);
	if (ret)
		return ret;
	if (!b->em->default_only && (cand == MM_SPLIT || cand == MM_TILES) &&
	    ((Bb != B && Bb != 1) || (B == 1 && M < 2)))
		return -ENOENT;
	if (b->em->default_only || cand == MM_MATMUL || cand == MM_GEMM) {
		ret = mm_pd(b, &a, cand == MM_GEMM && !b->em->default_only ? "gemm" : NULL, &pd);
		if (ret)
			return fail(b, ret, "oneDNN cannot run this matmul");
		set_impl(b, pd_impl(pd), NULL);
		s = plan_step(b);
		ret = s ? step_prim(b, s, pd) : -E2BIG;
		if (!ret)
			ret = mm_bind(b, s, pd, abuf, bbuf, NULL, NULL, out_buf(b));
		dnnl_primitive_desc_destroy(pd);
		return ret;
	}
	{
		/* Split over batches when there are several, else over rows of a. */
		bool by_batch = B > 1;
		int64_t units = by_batch ? B : M;
		int64_t parts = split_parts(b) * (cand == MM_TILES ? 2 : 1);
		int64_t nsl = units < parts ? units : parts;
		dnnl_primitive_desc_t sub_pd[2] = { NULL, NULL };
		dnnl_primitive_t sub_prim[2] = { NULL, NULL };
		int64_t bst3[3] = { K * N, bstr[nd - 2], bstr[nd - 1] };

		s = group_new(b, (int)nsl);
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
					ret = prim_new(b, sub_pd[kk], &sub_prim[kk]);
				if (ret)
					break;
				set_split_impl(b, pd_impl(sub_pd[kk]),
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
			ret = step_use(b, &s->items[sl], sub_prim[kk], sub_pd[kk]);
			if (!ret)
				ret = mm_bind(b, &s->items[sl], sub_pd[kk], ia, ib, NULL, NULL, od);
		}
		omp_set_num_threads(b->nr_threads);
		for (int i = 0; i < 2; i++)
			if (sub_pd[i])
				dnnl_primitive_desc_destroy(sub_pd[i]);
	}
	return ret ? fail(b, ret, "oneDNN cannot run this matmul split") : 0;
}

/* ---- single-version operators --------------------------------------------- */

/* Adds a step for pd with the given (arg, md from pd query, buffer) triples. */
static int simple_step(struct builder *b, dnnl_primitive_desc_t pd, int nr, const int *args,
		       const dnnl_memory_desc_t *const *mds, const struct exec_buf *bufs,
		       void *const *fixed)
{
	struct exec_step *s = plan_step(b);
	int ret;

	if (!s) {
		dnnl_primitive_desc_destroy(pd);
		return -E2BIG;
	}
	set_impl(b, pd_impl(pd), NULL);
	ret = step_prim(b, s, pd);
	for (int i = 0; i < nr && !ret; i++)
		ret = step_arg(b, s, args[i], mds[i], bufs[i], fixed ? fixed[i] : NULL);
	dnnl_primitive_desc_destroy(pd);
	return ret;
}

static int op_pd(struct builder *b, const_dnnl_op_desc_t desc, enum model_act act,
		 dnnl_primitive_desc_t *pd)
{
	dnnl_primitive_attr_t attr;
	int ret;

	if (attr_new(&attr, act, b->l->act_alpha, 1.0f))
		return -ENOMEM;
	ret = pd_create(b, desc, attr, NULL, pd);
	dnnl_primitive_attr_destroy(attr);
	return ret;
}

/* An op with one source and a destination in the canonical output layout. */
static int unary_step(struct builder *b, const_dnnl_op_desc_t desc,
		      const dnnl_memory_desc_t *src_md, struct exec_buf src)
{
	dnnl_primitive_desc_t pd;
	const dnnl_memory_desc_t *mds[2];
	struct exec_buf bufs[2] = { src, out_buf(b) };
	int args[2] = { DNNL_ARG_SRC, DNNL_ARG_DST };
	int ret = op_pd(b, desc, MODEL_ACT_NONE, &pd);

	if (ret)
		return ret;
	mds[0] = src_md;
	mds[1] = &b->xl->out_md;
	return simple_step(b, pd, 2, args, mds, bufs, NULL);
}

static int act_alg(enum model_act act, float slope, dnnl_alg_kind_t *alg, float *a, float *be)
{
	*a = 0.0f;
	*be = 0.0f;
	switch (act) {
	case MODEL_ACT_RELU:
		*alg = dnnl_eltwise_relu;
		return 0;
	case MODEL_ACT_RELU6:
		*alg = dnnl_eltwise_clip_v2;
		*be = 6.0f;
		return 0;
	case MODEL_ACT_LEAKY_RELU:
		*alg = dnnl_eltwise_relu;
		*a = slope;
		return 0;
	case MODEL_ACT_SIGMOID:
		*alg = dnnl_eltwise_logistic;
		return 0;
	case MODEL_ACT_SWISH:
		*alg = dnnl_eltwise_swish;
		*a = 1.0f;
		return 0;
	case MODEL_ACT_GELU:
		*alg = dnnl_eltwise_gelu_erf;
		return 0;
	case MODEL_ACT_TANH:
		*alg = dnnl_eltwise_tanh;
		return 0;
	default:
		/* identity: a linear eltwise keeps the copy semantics */
		*alg = dnnl_eltwise_linear;
		*a = 1.0f;
		return 0;
	}
}

static int build_act(struct builder *b)
{
	dnnl_eltwise_desc_t d;
	dnnl_alg_kind_t alg;
	float a, be;

	act_alg(b->l->act, b->l->act_alpha, &alg, &a, &be);
	if (dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, in_md(b, 0), a, be))
		return fail(b, -EINVAL, "oneDNN rejects this activation");
	return unary_step(b, &d, in_md(b, 0), in_buf(b, 0));
}

static int build_pool(struct builder *b)
{
	const struct model_pool *p = &b->l->pool;
	const struct model_shape *in = &b->m->layers[b->l->inputs[0]].out;
	dnnl_memory_desc_t src;
	dnnl_dims_t strides, kernel, dil = { 0, 0 }, pl, pr;
	dnnl_pooling_v2_desc_t d;
	dnnl_alg_kind_t alg;
	struct exec_buf at;
	int ret;

	md_tag(&src, 4, in->dims, dnnl_nhwc);
	ret = adapt_input(b, 0, &src, &at);
	if (ret)
		return ret;
	if (p->kind == MODEL_POOL_GLOBAL_AVG) {
		alg = dnnl_pooling_avg_exclude_padding;
		kernel[0] = in->dims[2];
		kernel[1] = in->dims[3];
		strides[0] = strides[1] = 1;
		pl[0] = pl[1] = pr[0] = pr[1] = 0;
	} else {
		alg = p->kind == MODEL_POOL_MAX ? dnnl_pooling_max :
						  dnnl_pooling_avg_exclude_padding;
		kernel[0] = p->kh;
		kernel[1] = p->kw;
		strides[0] = p->stride_h;
		strides[1] = p->stride_w;
		pl[0] = p->pad_t;
		pl[1] = p->pad_l;
		pr[0] = p->pad_b;
		pr[1] = p->pad_r;
	}
	if (dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &src, &b->xl->out_md,
					      strides, kernel, dil, pl, pr))
		return fail(b, -EINVAL,
			    "oneDNN rejects this pooling (kernel/stride/pad vs shapes)");
	return unary_step(b, &d, &src, at);
}

static int build_lrn(struct builder *b)
{
	const struct model_shape *in = &b->m->layers[b->l->inputs[0]].out;
	dnnl_memory_desc_t src;
	dnnl_lrn_desc_t d;
	struct exec_buf at;
	int ret;

	if (in->ndims != 4)
		return fail(b, -EINVAL, "lrn needs a 4-D input");
	md_tag(&src, 4, in->dims, dnnl_nhwc);
	ret = adapt_input(b, 0, &src, &at);
	if (ret)
		return ret;
	if (dnnl_lrn_forward_desc_init(&d, dnnl_forward_inference, dnnl_lrn_across_channels, &src,
				       b->l->lrn.size, b->l->lrn.alpha, b->l->lrn.beta,
				       b->l->lrn.k))
		return fail(b, -EINVAL, "oneDNN rejects this lrn");
	return unary_step(b, &d, &src, at);
}

static int build_softmax(struct builder *b)
{
	int axis = b->l->axis < 0 ? b->l->axis + b->l->out.ndims : b->l->axis;
	dnnl_softmax_desc_t d;

	if (dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, in_md(b, 0), axis))
		return fail(b, -EINVAL, "oneDNN rejects this softmax (axis %d)", b->l->axis);
	return unary_step(b, &d, in_md(b, 0), in_buf(b, 0));
}

/* numpy broadcast of input 1 to input 0's shape: same rank with leading 1s. */
static int build_binary(struct builder *b)
{
	const struct model_shape *s1 = &b->m->layers[b->l->inputs[1]].out;
	const dnnl_memory_desc_t *src0 = in_md(b, 0);
	dnnl_memory_desc_t src1;
	int64_t d1[MODEL_MAX_DIMS];
	struct exec_buf b1;
	dnnl_binary_desc_t d;
	dnnl_primitive_desc_t pd;
	const dnnl_memory_desc_t *mds[3];
	int args[3] = { DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST };
	int nd = src0->ndims, ret;

	if (s1->ndims > nd)
		return fail(b, -EINVAL, "second input has more dims than the first");
	for (int i = 0; i < nd; i++) {
		int j = i - (nd - s1->ndims);

		d1[i] = j >= 0 ? s1->dims[j] : 1;
	}
	if (s1->ndims == nd && !memcmp(d1, src0->dims, sizeof(int64_t) * (size_t)nd)) {
		src1 = *src0;
		ret = adapt_input(b, 1, &src1, &b1);
	} else {
		ret = plain_input(b, 1, &b1);
		md_plain(&src1, nd, d1);
	}
	if (ret)
		return ret;
	if (dnnl_binary_desc_init(&d, b->l->op == MODEL_OP_ADD ? dnnl_binary_add : dnnl_binary_mul,
				  src0, &src1, &b->xl->out_md))
		return fail(b, -EINVAL, "oneDNN rejects this broadcast");
	ret = op_pd(b, &d, b->l->act, &pd);
	if (ret)
		return fail(b, ret, "oneDNN cannot run this binary op");
	mds[0] = src0;
	mds[1] = &src1;
	mds[2] = &b->xl->out_md;
	{
		struct exec_buf bufs[3] = { in_buf(b, 0), b1, out_buf(b) };

		return simple_step(b, pd, 3, args, mds, bufs, NULL);
	}
}

static int build_concat(struct builder *b)
{
	dnnl_memory_desc_t srcs[MODEL_MAX_INPUTS];
	const dnnl_memory_desc_t *mds[MODEL_MAX_INPUTS + 1];
	struct exec_buf bufs[MODEL_MAX_INPUTS + 1];
	int args[MODEL_MAX_INPUTS + 1];
	int n = b->l->nr_inputs, axis = b->l->axis < 0 ? b->l->axis + b->l->out.ndims : b->l->axis;
	dnnl_primitive_attr_t attr;
	dnnl_primitive_desc_t pd;
	int ret;

	for (int j = 0; j < n; j++) {
		srcs[j] = *in_md(b, j);
		mds[j] = &srcs[j];
		bufs[j] = in_buf(b, j);
		args[j] = DNNL_ARG_MULTIPLE_SRC + j;
	}
	mds[n] = &b->xl->out_md;
	bufs[n] = out_buf(b);
	args[n] = DNNL_ARG_DST;
	if (attr_new(&attr, MODEL_ACT_NONE, 0.0f, 1.0f))
		return -ENOMEM;
	ret = dnnl_concat_primitive_desc_create(&pd, &b->xl->out_md, n, axis, srcs, attr,
						b->em->engine);
	dnnl_primitive_attr_destroy(attr);
	if (ret)
		return fail(b, -EINVAL, "oneDNN rejects this concat (axis %d)", axis);
	return simple_step(b, pd, n + 1, args, mds, bufs, NULL);
}

static int build_layer_norm(struct builder *b, const struct layer_weights *lw)
{
	const struct model_shape *os = &b->l->out;
	int64_t d1[1] = { os->dims[os->ndims - 1] };
	dnnl_memory_desc_t data, sc;
	dnnl_layer_normalization_desc_t d;
	dnnl_primitive_desc_t pd;
	struct exec_buf src, fixed = { .kind = EXEC_BUF_FIXED };
	void *gamma, *beta;
	int ret;

	md_plain(&data, os->ndims, os->dims);
	md_plain(&sc, 1, d1);
	ret = plain_input(b, 0, &src);
	if (!ret)
		ret = weights_in(b, lw->w, &sc, &sc, &gamma);
	if (!ret)
		ret = weights_in(b, lw->bias, &sc, &sc, &beta);
	if (ret)
		return ret;
	if (dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &data, NULL,
						       b->l->eps, dnnl_use_scale | dnnl_use_shift))
		return fail(b, -EINVAL, "oneDNN rejects this layer norm");
	ret = op_pd(b, &d, MODEL_ACT_NONE, &pd);
	if (ret)
		return fail(b, ret, "oneDNN cannot run this layer norm");
	{
		int args[4] = { DNNL_ARG_SRC, DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_DST };
		const dnnl_memory_desc_t *mds[4] = { &data, &sc, &sc, &b->xl->out_md };
		struct exec_buf bufs[4] = { src, fixed, fixed, out_buf(b) };
		void *fx[4] = { NULL, gamma, beta, NULL };

		return simple_step(b, pd, 4, args, mds, bufs, fx);
	}
}

/* Reshape is free (an alias) when the input is dense in logical order. */
static int build_reshape(struct builder *b)
{
	dnnl_memory_desc_t p;

	if (md_is_plain(in_md(b, 0)))
		return 0;
	md_plain(&p, in_md(b, 0)->ndims, in_md(b, 0)->dims);
	return reorder_step(b, in_md(b, 0), in_buf(b, 0), &p, out_buf(b));
}

/* A transpose is a reorder from the input viewed with permuted strides. */
static int build_transpose(struct builder *b)
{
	dnnl_memory_desc_t view, plain;
	const dnnl_memory_desc_t *src = in_md(b, 0);
	struct exec_buf at = in_buf(b, 0);
	int nd = src->ndims, ret;
	int64_t dims[MODEL_MAX_DIMS], strides[MODEL_MAX_DIMS];

	if (!md_is_strided(src)) {
		md_plain(&plain, nd, src->dims);
		ret = adapt_input(b, 0, &plain, &at);
		if (ret)
			return ret;
		src = &plain;
	}
	for (int i = 0; i < nd; i++) {
		int p = b->l->perm[i];

		if (p < 0 || p >= nd)
			return fail(b, -EINVAL, "bad permutation");
		dims[i] = src->dims[p];
		strides[i] = src->format_desc.blocking.strides[p];
	}
	md_strided(&view, nd, dims, strides);
	return reorder_step(b, &view, at, &b->xl->out_md, out_buf(b));
}

/* A slice is a reorder from a sub-memory view of the input. */
static int build_slice(struct builder *b)
{
	const dnnl_memory_desc_t *src = in_md(b, 0);
	const struct model_slice *sl = &b->l->slice;
	int axis = sl->axis < 0 ? sl->axis + src->ndims : sl->axis;
	dnnl_dims_t dims, offs;
	dnnl_memory_desc_t view;

	if (axis < 0 || axis >= src->ndims || sl->start < 0 || sl->len < 1 ||
	    sl->start + sl->len > src->dims[axis])
		return fail(b, -EINVAL, "slice out of range");
	for (int i = 0; i < src->ndims; i++) {
		dims[i] = src->dims[i];
		offs[i] = 0;
	}
	dims[axis] = sl->len;
	offs[axis] = sl->start;
	if (dnnl_memory_desc_init_submemory(&view, src, dims, offs))
		return fail(b, -EINVAL, "oneDNN cannot view this slice");
	return reorder_step(b, &view, in_buf(b, 0), &b->xl->out_md, out_buf(b));
}

static int build_embed(struct builder *b, const struct layer_weights *lw)
{
	struct exec_step *s;
	struct exec_buf ids;
	dnnl_memory_desc_t tab;
	int64_t td[2] = { b->l->embed.vocab, b->l->embed.dim };
	void *table;
	int ret = plain_input(b, 0, &ids);

	md_plain(&tab, 2, td);
	if (!ret)
		ret = weights_in(b, lw->w, &tab, &tab, &table);
	if (ret)
		return ret;
	s = plan_step(b);
	if (!s)
		return -E2BIG;
	memset(s, 0, sizeof(*s));
	s->embed = true;
	s->ids = ids;
	s->dst = out_buf(b);
	s->table = table;
	s->nr_ids = model_shape_elems(&b->m->layers[b->l->inputs[0]].out);
	s->vocab = b->l->embed.vocab;
	s->dim = b->l->embed.dim;
	set_impl(b, "c:embedding-lookup", NULL);
	return 0;
}

/* ---- the model ------------------------------------------------------------ */

static bool md_is_nhwc(const dnnl_memory_desc_t *md)
{
	dnnl_memory_desc_t t;

	if (md->ndims != 4)
		return false;
	md_tag(&t, 4, md->dims, dnnl_nhwc);
	return dnnl_memory_desc_equal(md, &t);
}

static void layer_out_md(struct exec_model *em, int li)
{
	const struct model_layer *l = &em->graph->layers[li];
	struct exec_layer *xl = &em->layers[li];
	const dnnl_memory_desc_t *in0 = l->nr_inputs > 0 ? &em->layers[l->inputs[0]].out_md : NULL;
	bool same_dims = in0 && in0->ndims == l->out.ndims &&
			 !memcmp(in0->dims, l->out.dims, sizeof(int64_t) * (size_t)l->out.ndims);

	xl->alias_of = -1;
	switch (l->op) {
	case MODEL_OP_CONV:
	case MODEL_OP_POOL:
	case MODEL_OP_LRN:
		if (l->out.ndims == 4) {
			md_tag(&xl->out_md, 4, l->out.dims, dnnl_nhwc);
			return;
		}
		break;
	case MODEL_OP_ACT:
	case MODEL_OP_ADD:
	case MODEL_OP_MUL:
	case MODEL_OP_SOFTMAX:
		if (same_dims && md_is_strided(in0)) {
			xl->out_md = *in0;
			return;
		}
		break;
	case MODEL_OP_CONCAT:
		if (in0 && md_is_nhwc(in0)) {
			md_tag(&xl->out_md, 4, l->out.dims, dnnl_nhwc);
			return;
		}
		break;
	case MODEL_OP_RESHAPE:
		if (in0 && md_is_plain(in0)) {
			int a = l->inputs[0];

			xl->alias_of = em->layers[a].alias_of >= 0 ? em->layers[a].alias_of : a;
		}
		break;
	default:
		break;
	}
	md_plain(&xl->out_md, l->out.ndims, l->out.dims);
}

/* The candidate versions of a layer's operator, by name (see enum conv_cand). */
static int layer_candidates(const struct exec_model *em, const struct model_layer *l,
			    const char *const **names)
{
	static const char *const conv[CONV_NR_CANDS] = {
		[CONV_NHWC] = "onednn-nhwc",	[CONV_ROW_SPLIT] = "row-split",
		[CONV_OC_SPLIT] = "oc-split",	[CONV_ROW_TILES] = "row-tiles",
		[CONV_GEMM_NHWC] = "gemm-nhwc", [CONV_ANY] = "onednn-any",
	};
	static const char *const fc[FC_NR_CANDS] = {
		[FC_MATMUL] = "matmul",	    [FC_GEMM] = "gemm",
		[FC_OC_SPLIT] = "oc-split", [FC_PACKED] = "matmul-packed",
		[FC_OC_TILES] = "oc-tiles",
	};
	static const char *const mm[MM_NR_CANDS] = {
		[MM_MATMUL] = "matmul",
		[MM_GEMM] = "gemm",
		[MM_SPLIT] = "batch-split",
		[MM_TILES] = "batch-tiles",
	};
	static const char *const single[MODEL_OP_COUNT] = {
		[MODEL_OP_INPUT] = "input",
		[MODEL_OP_EMBED] = "c-lookup",
	};
	static const char *const baseline[1] = { "onednn-default" };
	static const char *const onednn[1] = { "onednn" };

	bool versioned = l->op == MODEL_OP_CONV || l->op == MODEL_OP_FC || l->op == MODEL_OP_MATMUL;

	if (em->default_only && versioned) {
		*names = baseline;
		return 1;
	}
	switch (l->op) {
	case MODEL_OP_CONV:
		*names = conv;
		return CONV_NR_CANDS;
	case MODEL_OP_FC:
		*names = fc;
		return FC_NR_CANDS;
	case MODEL_OP_MATMUL:
		*names = mm;
		return MM_NR_CANDS;
	default:
		*names = (int)l->op < MODEL_OP_COUNT && single[l->op] ? &single[l->op] : onednn;
		return 1;
	}
}

static int build_plan(struct builder *b, int v, const struct layer_weights *lw)
{
	switch (b->l->op) {
	case MODEL_OP_INPUT:
		set_impl(b, "input", NULL);
		return 0;
	case MODEL_OP_CONV:
		return build_conv(b, v, lw);
	case MODEL_OP_FC:
		return build_fc(b, v, lw);
	case MODEL_OP_MATMUL:
		return build_matmul(b, v);
	case MODEL_OP_POOL:
		return build_pool(b);
	case MODEL_OP_ACT:
		return build_act(b);
	case MODEL_OP_ADD:
	case MODEL_OP_MUL:
		return build_binary(b);
	case MODEL_OP_CONCAT:
		return build_concat(b);
	case MODEL_OP_LAYER_NORM:
		return build_layer_norm(b, lw);
	case MODEL_OP_SOFTMAX:
		return build_softmax(b);
	case MODEL_OP_LRN:
		return build_lrn(b);
	case MODEL_OP_RESHAPE:
		if (!b->plan->nr_steps && b->xl->alias_of >= 0)
			set_impl(b, "alias", NULL);
		return build_reshape(b);
	case MODEL_OP_TRANSPOSE:
		return build_transpose(b);
	case MODEL_OP_EMBED:
		return build_embed(b, lw);
	case MODEL_OP_SLICE:
		return build_slice(b);
	default:
		return fail(b, -EINVAL, "unknown operator");
	}
}

static int plan_commit(struct exec_plan *p, const struct plan_draft *d)
{
	p->steps = calloc((size_t)(d->nr_steps ? d->nr_steps : 1), sizeof(*p->steps));
	if (!p->steps)
		return -ENOMEM;
	memcpy(p->steps, d->steps, (size_t)d->nr_steps * sizeof(*p->steps));
	p->nr_steps = d->nr_steps;
	p->tmp_bytes = d->tmp_bytes;
	memcpy(p->impl, d->impl, sizeof(p->impl));
	return 0;
}

static void plans_free(struct exec_plan *plans, int nr_slots)
{
	for (int s = 0; s < nr_slots; s++)
		free(plans[s].steps);
	free(plans);
}

/*
 * Drops a candidate that is not kept: its plans, and the primitives, memory
 * objects and split item arrays made since `mark` (only its plans used
 * them; weight buffers stay, other versions may share them).
 */
static void candidate_drop(struct exec_model *em, struct exec_plan *plans,
			   const struct exec_owned *mark)
{
	struct exec_owned *o = &em->owned;

	plans_free(plans, em->nr_slots);
	while (o->nr_prims > mark->nr_prims)
		dnnl_primitive_destroy(o->prims[--o->nr_prims]);
	while (o->nr_mems > mark->nr_mems)
		dnnl_memory_destroy(o->mems[--o->nr_mems]);
	while (o->nr_item_arrays > mark->nr_item_arrays)
		free(o->item_arrays[--o->nr_item_arrays]);
}

static const char *prim_impl(const_dnnl_primitive_t prim)
{
	const_dnnl_primitive_desc_t pd;

	if (dnnl_primitive_get_primitive_desc(prim, &pd))
		return "?";
	return pd_impl(pd);
}

/* Same kernels, same layouts, same split: one execution under two names. */
static bool steps_same(const struct exec_step *a, const struct exec_step *b)
{
	if (!a->prim != !b->prim || a->embed != b->embed || a->nr_args != b->nr_args ||
	    a->nr_items != b->nr_items)
		return false;
	if (a->prim && strcmp(prim_impl(a->prim), prim_impl(b->prim)))
		return false;
	for (int i = 0; i < a->nr_args; i++) {
		const dnnl_memory_desc_t *ma, *mb;

		if (a->args[i].arg != b->args[i].arg ||
		    dnnl_memory_get_memory_desc(a->args[i].memory, &ma) ||
		    dnnl_memory_get_memory_desc(b->args[i].memory, &mb) ||
		    !dnnl_memory_desc_equal(ma, mb))
			return false;
	}
	for (int i = 0; i < a->nr_items; i++)
		if (!steps_same(&a->items[i], &b->items[i]))
			return false;
	return true;
}

static bool plans_same(const struct exec_plan *a, const struct exec_plan *b)
{
	if (!strcmp(a->impl, b->impl))
		return true;
	if (a->nr_steps != b->nr_steps)
		return false;
	for (int i = 0; i < a->nr_steps; i++)
		if (!steps_same(&a->steps[i], &b->steps[i]))
			return false;
	return true;
}

/*
 * Whether version v runs as an earlier version of the layer does at some
 * core count (same impl string, or the same kernels on the same layouts and
 * split): then it is not a version of its own on this CPU.
 */
static bool version_repeats(const struct exec_model *em, const struct exec_layer *xl, int v)
{
	for (int w = 0; w < v; w++)
		for (int s = 0; s < em->nr_slots; s++)
			if (plans_same(&xl->plans[v][s], &xl->plans[w][s]))
				return true;
	return false;
}

static int build_layer(struct exec_model *em, int li, struct exec_weights_file *wf,
		       struct coloc_err *err)
{
	struct plan_draft *draft = malloc(sizeof(*draft));
	struct builder b = {
		.em = em,
		.m = em->graph,
		.li = li,
		.l = &em->graph->layers[li],
		.xl = &em->layers[li],
		.err = err,
	};
	struct layer_weights lw = { 0 };
	enum model_op op = b.l->op;
	const char *const *names;
	int ret = 0, nr_cands;

	if (!draft)
		return fail(&b, -ENOMEM, "out of memory");
	if (op == MODEL_OP_CONV || op == MODEL_OP_FC || op == MODEL_OP_LAYER_NORM ||
	    op == MODEL_OP_EMBED) {
		ret = layer_weights_make(em->graph, li, wf, &lw, err);
		if (ret) {
			free(draft);
			if (wf && err->code)
				return ret;
			return fail(&b, ret, "cannot generate weights");
		}
	}
	nr_cands = layer_candidates(em, b.l, &names);
	for (int c = 0; c < nr_cands && b.xl->nr_versions < EXEC_VERSIONS_KEPT && !ret; c++) {
		struct exec_owned mark = em->owned;
		int v = b.xl->nr_versions;

		b.xl->plans[v] = calloc((size_t)em->nr_slots, sizeof(struct exec_plan));
		if (!b.xl->plans[v]) {
			ret = -ENOMEM;
			break;
		}
		for (int s = 0; s < em->nr_slots && !ret; s++) {
			memset(draft, 0, sizeof(*draft));
			b.plan = draft;
			b.slot = s;
			b.nr_threads = em->slot_cores[s];
			omp_set_num_threads(b.nr_threads);
			ret = build_plan(&b, c, &lw);
			if (ret == -ENOENT && s == 0 && nr_cands > 1)
				break;
			if (ret && !err->code)
				fail(&b, ret, "cannot build version %s for %d cores", names[c],
				     b.nr_threads);
			if (!ret)
				ret = plan_commit(&b.xl->plans[v][s], draft);
			if (draft->tmp_bytes > em->tmp_bytes)
				em->tmp_bytes = draft->tmp_bytes;
		}
		/* not buildable for this shape, or the same execution as a kept version */
		if ((ret == -ENOENT && !err->code) || (!ret && version_repeats(em, b.xl, v))) {
			ret = 0;
			candidate_drop(em, b.xl->plans[v], &mark);
			b.xl->plans[v] = NULL;
			continue;
		}
		snprintf(b.xl->version_names[v], EXEC_VERSION_NAME_LEN, "%s", names[c]);
		b.xl->nr_versions++;
	}
	layer_weights_free(&lw);
	memset(b.xl->weight_srcs, 0, sizeof(b.xl->weight_srcs));
	free(draft);
	return ret;
}

static int cpus_resolve(const struct exec_options *opts, struct exec_cpuset *out,
			struct coloc_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!opts || opts->cpus.nr == 0) {
		cpu_set_t allowed;

		/* the online CPUs this process may use (taskset, cpuset cgroups) */
		if (sched_getaffinity(0, sizeof(allowed), &allowed))
			return coloc_err_set(err, -errno, "cannot read this process's CPU mask: %s",
					     strerror(errno));
		for (int c = 0; c < EXEC_MAX_CPUS && c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed) && exec_cpu_online(c))
				out->cpus[out->nr++] = c;
		return out->nr ? 0 :
				 coloc_err_set(err, -ENODEV,
					       "none of the CPUs this process may use is online");
	}
	if (opts->cpus.nr < 0 || opts->cpus.nr > EXEC_MAX_CPUS) {
		coloc_err_set(err, -EINVAL, "bad number of cpus %d (1..%d)", opts->cpus.nr,
			      EXEC_MAX_CPUS);
		return -EINVAL;
	}
	for (int i = 0; i < opts->cpus.nr; i++) {
		int c = opts->cpus.cpus[i];

		if (!exec_cpu_online(c)) {
			coloc_err_set(err, -ENODEV, "cpu %d is not online", c);
			return -ENODEV;
		}
		for (int j = 0; j < i; j++) {
			if (opts->cpus.cpus[j] == c) {
				coloc_err_set(err, -EINVAL, "cpu %d listed twice", c);
				return -EINVAL;
			}
		}
		out->cpus[out->nr++] = c;
	}
	return 0;
}

/*
 * Core counts that get primitives: every count up to 8, then powers of two,
 * then all cores. At 64 cores that is 1..8, 16, 32, 64: 11 slots instead
 * of 64, and a block on n cores runs the largest slot <= n (on its first
 * cores), losing at most a factor 2 in parallelism above 8 cores.
 */
static void slots_make(struct exec_model *em)
{
	int n = em->cpus.nr;

	em->nr_slots = 0;
	for (int c = 1; c <= n && c <= 8; c++)
		em->slot_cores[em->nr_slots++] = c;
	for (int c = 16; c < n && em->nr_slots < EXEC_MAX_SLOTS - 1; c *= 2)
		em->slot_cores[em->nr_slots++] = c;
	if (n > 8)
		em->slot_cores[em->nr_slots++] = n;
	em->max_threads = n;
}

static struct exec_model *load(const struct model *m, const struct exec_options *opts,
			       bool default_only, struct coloc_err *err)
{
	struct exec_weights_file *wf = NULL;
	struct coloc_err unwanted;
	struct exec_model *em;
	size_t off = 0;
	int ret;

	/* building layers asks whether an error was recorded: it needs a place */
	if (!err)
		err = &unwanted;
	coloc_err_clear(err);
	if (!m || m->nr_layers <= 0 || !m->layers) {
		coloc_err_set(err, -EINVAL, "empty model");
		return NULL;
	}
	/* Checked whole before oneDNN builds anything, so a bad file fails fast. */
	if (opts && opts->weights_path) {
		wf = exec_weights_open(m, opts->weights_path, err);
		if (!wf)
			return NULL;
	}
	em = calloc(1, sizeof(*em));
	if (!em) {
		exec_weights_close(wf);
		coloc_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	em->graph = m;
	em->default_only = default_only;
	/*
	 * libgomp reads these at start-up and then places team threads itself,
	 * which breaks pinning team thread i to the block's i-th core.
	 */
	if (getenv("OMP_PLACES") || getenv("OMP_PROC_BIND") || getenv("GOMP_CPU_AFFINITY")) {
		coloc_err_set(err, -EINVAL,
			      "unset OMP_PLACES, OMP_PROC_BIND and GOMP_CPU_AFFINITY: "
			      "the executor pins its threads to each block's cores itself");
		goto fail;
	}
	ret = cpus_resolve(opts, &em->cpus, err);
	if (ret)
		goto fail;
	slots_make(em);
	if (dnnl_engine_create(&em->engine, dnnl_cpu, 0)) {
		coloc_err_set(err, -ENODEV, "cannot create the oneDNN CPU engine");
		goto fail;
	}
	em->streams = calloc((size_t)em->max_threads, sizeof(*em->streams));
	em->scratchpads = calloc((size_t)em->max_threads, sizeof(*em->scratchpads));
	em->layers = calloc((size_t)m->nr_layers, sizeof(*em->layers));
	em->out_offsets = calloc((size_t)m->nr_layers, sizeof(*em->out_offsets));
	if (!em->streams || !em->scratchpads || !em->layers || !em->out_offsets)
		goto oom;
	for (int t = 0; t < em->max_threads; t++)
		if (dnnl_stream_create(&em->streams[t], em->engine, dnnl_stream_default_flags))
			goto oom;
	/*
	 * Start the OpenMP team at its largest size now: libgomp keeps its
	 * threads, so later blocks (of any size up to this) create none.
	 */
	omp_set_dynamic(0);
#pragma omp parallel num_threads(em->max_threads)
	{
		(void)omp_get_thread_num();
	}
	for (int li = 0; li < m->nr_layers; li++) {
		const struct model_layer *l = &m->layers[li];

		for (int j = 0; j < l->nr_inputs; j++) {
			if (l->inputs[j] < 0 || l->inputs[j] >= li) {
				coloc_err_set(err, -EINVAL,
					      "layer %d '%s': input %d is not an earlier layer", li,
					      l->name, l->inputs[j]);
				goto fail;
			}
		}
		if (l->out.ndims < 1 || l->out.ndims > MODEL_MAX_DIMS ||
		    model_shape_elems(&l->out) <= 0) {
			coloc_err_set(err, -EINVAL, "layer %d '%s': bad output shape", li, l->name);
			goto fail;
		}
		layer_out_md(em, li);
	}
	for (int li = 0; li < m->nr_layers; li++) {
		ret = build_layer(em, li, wf, err);
		if (ret)
			goto fail;
	}
	exec_weights_close(wf);
	wf = NULL;
	omp_set_num_threads(em->max_threads);
	for (int li = 0; li < m->nr_layers; li++) {
		int a = em->layers[li].alias_of;

		if (a >= 0) {
			em->out_offsets[li] = em->out_offsets[a];
			continue;
		}
		em->out_offsets[li] = off;
		off += (md_bytes(&em->layers[li].out_md) + ALIGN - 1) / ALIGN * ALIGN;
	}
	em->out_bytes = off;
	for (int t = 0; t < em->max_threads; t++) {
		em->scratchpads[t] = alloc_aligned(em->scratchpad_bytes);
		if (!em->scratchpads[t])
			goto oom;
	}
	em->resident_bytes = sizeof(*em) + (size_t)em->max_threads * em->scratchpad_bytes;
	for (int li = 0; li < m->nr_layers; li++) {
		struct exec_layer *xl = &em->layers[li];

		for (int i = 0; i < xl->nr_weight_bufs; i++)
			em->resident_bytes += xl->weight_bytes[i];
		em->resident_bytes += sizeof(*xl);
		for (int v = 0; v < xl->nr_versions; v++)
			for (int s = 0; s < em->nr_slots; s++)
				em->resident_bytes +=
					sizeof(struct exec_plan) +
					(size_t)xl->plans[v][s].nr_steps * sizeof(struct exec_step);
	}
	/*
	 * A oneDNN memory object costs ~1 KiB (measured); a primitive handle
	 * a few hundred bytes. oneDNN's JIT code is not visible from here:
	 * coloc-bench-executor compares this estimate with the RSS delta.
	 */
	em->resident_bytes += em->owned.nr_mems * 1024 + em->owned.nr_prims * 256;
	return em;
oom:
	coloc_err_set(err, -ENOMEM, "out of memory");
fail:
	coloc_err_set(err, -EINVAL, "cannot load the model");
	exec_weights_close(wf);
	exec_model_free(em);
	return NULL;
}

struct exec_model *exec_model_load(const struct model *m, const struct exec_options *opts,
				   struct coloc_err *err)
{
	return load(m, opts, false, err);
}

struct exec_model *exec_model_load_default(const struct model *m, const struct exec_options *opts,
					   struct coloc_err *err)
{
	return load(m, opts, true, err);
}

void exec_model_free(struct exec_model *em)
{
	struct exec_owned *o;

	if (!em)
		return;
	o = &em->owned;
	for (size_t i = 0; i < o->nr_prims; i++)
		dnnl_primitive_destroy(o->prims[i]);
	for (size_t i = 0; i < o->nr_mems; i++)
		dnnl_memory_destroy(o->mems[i]);
	for (size_t i = 0; i < o->nr_item_arrays; i++)
		free(o->item_arrays[i]);
	free(o->prims);
	free(o->mems);
	free(o->item_arrays);
	if (em->layers) {
		for (int li = 0; li < em->graph->nr_layers; li++) {
			struct exec_layer *xl = &em->layers[li];

			for (int v = 0; v < EXEC_MAX_VERSIONS; v++) {
				for (int s = 0; xl->plans[v] && s < em->nr_slots; s++)
					free(xl->plans[v][s].steps);
				free(xl->plans[v]);
			}
			for (int i = 0; i < xl->nr_weight_bufs; i++)
				free(xl->weight_bufs[i]);
		}
	}
	if (em->scratchpads)
		for (int t = 0; t < em->max_threads; t++)
			free(em->scratchpads[t]);
	if (em->streams)
		for (int t = 0; t < em->max_threads; t++)
			if (em->streams[t])
				dnnl_stream_destroy(em->streams[t]);
	if (em->engine)
		dnnl_engine_destroy(em->engine);
	free(em->scratchpads);
	free(em->streams);
	free(em->layers);
	free(em->out_offsets);
	free(em);
}
