// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The operators with a single version: each one oneDNN primitive on the
 * canonical layouts (activation, log, pooling, resampling, lrn, softmax, the binary ops with
 * numpy broadcast of a layer or a constant, concat, layer norm), a reorder from a view of the input
 * (reshape, transpose, slice), or a plain-C step (the embedding lookup).
 */
#include <errno.h>
#include <string.h>
#include "exec_build.h"
#include "exec_ops.h"

/* An input layer: the query writes its output, nothing runs. */
int input_build(struct builder *b)
{
	set_impl(b, "input", NULL);
	return 0;
}

/* Adds a step for pd with the given (arg, md from pd query, buffer) triples. */
static int simple_step(struct builder *b, dnnl_primitive_desc_t pd, int nr, const int *args,
		       const dnnl_memory_desc_t *const *mds, const struct exec_buf *bufs,
		       void *const *fixed)
{
	struct exec_step *s = builder_plan_step(b);
	int ret;

	if (!s) {
		dnnl_primitive_desc_destroy(pd);
		return -E2BIG;
	}
	set_impl(b, exec_pd_impl(pd), NULL);
	ret = builder_step_prim(b, s, pd);
	for (int i = 0; i < nr && !ret; i++)
		ret = builder_step_arg(b, s, args[i], mds[i], bufs[i], fixed ? fixed[i] : NULL);
	dnnl_primitive_desc_destroy(pd);
	return ret;
}

/* act_of: the layer whose act= becomes post-ops, or NULL for none. */
static int op_pd(struct builder *b, const_dnnl_op_desc_t desc, const struct model_layer *act_of,
		 dnnl_primitive_desc_t *pd)
{
	dnnl_primitive_attr_t attr;
	int ret;

	if (exec_attr_new(&attr, act_of, 1.0f))
		return -ENOMEM;
	ret = builder_pd_create(b, desc, attr, NULL, pd);
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
	int ret = op_pd(b, desc, NULL, &pd);

	if (ret)
		return ret;
	mds[0] = src_md;
	mds[1] = &b->xl->out_md;
	return simple_step(b, pd, 2, args, mds, bufs, NULL);
}

/* Input 0 in NHWC (*src), reordered into it when it is not already: *at. */
static int nhwc_input(struct builder *b, dnnl_memory_desc_t *src, struct exec_buf *at)
{
	md_tag(src, 4, b->m->layers[b->l->inputs[0]].out.dims, dnnl_nhwc);
	return builder_adapt_input(b, 0, src, at);
}

/*
 * One eltwise step per stage of the activation: the first from src into
 * the output (in place where src is the output), the others in place on it.
 */
static int act_steps(struct builder *b, const struct exec_eltwise *e, int nr,
		     const dnnl_memory_desc_t *src_md, struct exec_buf src)
{
	dnnl_eltwise_desc_t d;
	int ret = 0;

	for (int i = 0; i < nr && !ret; i++) {
		const dnnl_memory_desc_t *md = i ? &b->xl->out_md : src_md;

		if (dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, e[i].alg, md,
						   e[i].alpha, e[i].beta))
			return builder_fail(b, -EINVAL, "oneDNN rejects this activation");
		ret = unary_step(b, &d, md, i ? out_buf(b) : src);
	}
	return ret;
}

int act_build(struct builder *b)
{
	struct exec_eltwise e[EXEC_ACT_MAX_STAGES];
	int nr = exec_act_eltwise(b->l, e);

	if (!nr) {
		/* identity: a linear eltwise keeps the copy semantics */
		e[0] = (struct exec_eltwise){ dnnl_eltwise_linear, 1.0f, 0.0f };
		nr = 1;
	}
	return act_steps(b, e, nr, in_md(b, 0), in_buf(b, 0));
}

int act_in_place_build(struct builder *b)
{
	struct exec_eltwise e[EXEC_ACT_MAX_STAGES];
	int nr = exec_act_eltwise(b->l, e);

	return act_steps(b, e, nr, &b->xl->out_md, out_buf(b));
}

/* oneDNN's eltwise log: log(0) is -inf and a negative input NaN, as ONNX's Log. */
int log_build(struct builder *b)
{
	dnnl_eltwise_desc_t d;

	if (dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, dnnl_eltwise_log,
					   in_md(b, 0), 0.0f, 0.0f))
		return builder_fail(b, -EINVAL, "oneDNN rejects this log");
	return unary_step(b, &d, in_md(b, 0), in_buf(b, 0));
}

int pool_build(struct builder *b)
{
	const struct model_pool *p = &b->l->pool;
	const struct model_shape *in = &b->m->layers[b->l->inputs[0]].out;
	dnnl_memory_desc_t src;
	dnnl_dims_t strides, kernel, dil = { 0, 0 }, pl, pr;
	dnnl_pooling_v2_desc_t d;
	dnnl_alg_kind_t alg;
	struct exec_buf at;
	int ret;

	ret = nhwc_input(b, &src, &at);
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
		return builder_fail(b, -EINVAL,
				    "oneDNN rejects this pooling (kernel/stride/pad vs shapes)");
	return unary_step(b, &d, &src, at);
}

/* oneDNN's reduction from the plain input to the plain output (1 on the reduced axes). */
int reduce_build(struct builder *b)
{
	static const dnnl_alg_kind_t algs[] = {
		[MODEL_REDUCE_MEAN] = dnnl_reduction_mean,
		[MODEL_REDUCE_MAX] = dnnl_reduction_max,
		[MODEL_REDUCE_MIN] = dnnl_reduction_min,
		[MODEL_REDUCE_SUM] = dnnl_reduction_sum,
	};
	const struct model_shape *in = &b->m->layers[b->l->inputs[0]].out;
	dnnl_memory_desc_t src;
	dnnl_reduction_desc_t d;
	struct exec_buf at;
	int ret = builder_plain_input(b, 0, &at);

	if (ret)
		return ret;
	md_plain(&src, in->ndims, in->dims);
	if (dnnl_reduction_desc_init(&d, algs[b->l->reduce.kind], &src, &b->xl->out_md, 0.0f, 0.0f))
		return builder_fail(b, -EINVAL, "oneDNN rejects this reduction");
	return unary_step(b, &d, &src, at);
}

/*
 * Two reorders: the value, read through all-zero strides, over the whole
 * output; then the input into the output's interior (a sub-memory view).
 */
int pad_build(struct builder *b)
{
	const struct model_pad *p = &b->l->pad;
	const dnnl_memory_desc_t *out = &b->xl->out_md;
	int64_t one[1] = { 1 };
	dnnl_dims_t zero = { 0 }, dims, offs;
	dnnl_memory_desc_t fill, vmd, view;
	dnnl_primitive_attr_t attr;
	dnnl_primitive_desc_t pd;
	void *value;
	int nd = out->ndims, ret;

	md_plain(&vmd, 1, one);
	md_strided(&fill, nd, out->dims, zero);
	ret = builder_weights_in(b, &p->value, &vmd, &vmd, &value);
	if (ret)
		return ret;
	/* a user scratchpad, as every primitive's: lanes run it from several threads */
	if (exec_attr_new(&attr, NULL, 1.0f))
		return builder_fail(b, -ENOMEM, "out of memory");
	ret = dnnl_reorder_primitive_desc_create(&pd, &fill, b->em->engine, out, b->em->engine,
						 attr);
	dnnl_primitive_attr_destroy(attr);
	if (ret)
		return builder_fail(b, -EINVAL, "oneDNN cannot fill the padded output");
	{
		int args[2] = { DNNL_ARG_FROM, DNNL_ARG_TO };
		const dnnl_memory_desc_t *mds[2] = { &fill, out };
		struct exec_buf bufs[2] = { { .kind = EXEC_BUF_FIXED }, out_buf(b) };
		void *fx[2] = { value, NULL };

		ret = simple_step(b, pd, 2, args, mds, bufs, fx);
	}
	if (ret)
		return ret;
	for (int i = 0; i < nd; i++) {
		dims[i] = in_md(b, 0)->dims[i];
		offs[i] = p->begin[i];
	}
	if (dnnl_memory_desc_init_submemory(&view, out, dims, offs))
		return builder_fail(b, -EINVAL, "oneDNN cannot view the padded interior");
	return builder_reorder_step(b, in_md(b, 0), in_buf(b, 0), &view, out_buf(b));
}

/* oneDNN's nearest and linear resampling are models/README.md's for these factors. */
int resize_build(struct builder *b)
{
	dnnl_memory_desc_t src;
	dnnl_resampling_desc_t d;
	struct exec_buf at;
	int ret;

	ret = nhwc_input(b, &src, &at);
	if (ret)
		return ret;
	if (dnnl_resampling_forward_desc_init(&d, dnnl_forward_inference,
					      b->l->resize.linear ? dnnl_resampling_linear :
								    dnnl_resampling_nearest,
					      NULL, &src, &b->xl->out_md))
		return builder_fail(b, -EINVAL, "oneDNN rejects this resampling");
	return unary_step(b, &d, &src, at);
}

int lrn_build(struct builder *b)
{
	const struct model_shape *in = &b->m->layers[b->l->inputs[0]].out;
	dnnl_memory_desc_t src;
	dnnl_lrn_desc_t d;
	struct exec_buf at;
	int ret;

	if (in->ndims != 4)
		return builder_fail(b, -EINVAL, "lrn needs a 4-D input");
	ret = nhwc_input(b, &src, &at);
	if (ret)
		return ret;
	if (dnnl_lrn_forward_desc_init(&d, dnnl_forward_inference, dnnl_lrn_across_channels, &src,
				       b->l->lrn.size, b->l->lrn.alpha, b->l->lrn.beta,
				       b->l->lrn.k))
		return builder_fail(b, -EINVAL, "oneDNN rejects this lrn");
	return unary_step(b, &d, &src, at);
}

int softmax_build(struct builder *b)
{
	int axis = b->l->axis < 0 ? b->l->axis + b->l->out.ndims : b->l->axis;
	dnnl_softmax_desc_t d;

	if (dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, in_md(b, 0), axis))
		return builder_fail(b, -EINVAL, "oneDNN rejects this softmax (axis %d)",
				    b->l->axis);
	return unary_step(b, &d, in_md(b, 0), in_buf(b, 0));
}

static const dnnl_alg_kind_t binary_algs[MODEL_OP_COUNT] = {
	[MODEL_OP_ADD] = dnnl_binary_add, [MODEL_OP_MUL] = dnnl_binary_mul,
	[MODEL_OP_SUB] = dnnl_binary_sub, [MODEL_OP_DIV] = dnnl_binary_div,
	[MODEL_OP_MAX] = dnnl_binary_max, [MODEL_OP_MIN] = dnnl_binary_min,
};

/*
 * numpy broadcast of the second operand (input 1, or the constant in the
 * layer's weights) to input 0's shape: same rank with leading 1s. const -
 * x is x - const times -1, the scale oneDNN applies before the act.
 */
int binary_build(struct builder *b)
{
	const struct model_binary *bn = &b->l->binary;
	const struct model_shape *s1 =
		bn->has_const ? &bn->cshape : &b->m->layers[b->l->inputs[1]].out;
	const dnnl_memory_desc_t *src0 = in_md(b, 0);
	dnnl_memory_desc_t src1;
	int64_t d1[MODEL_MAX_DIMS];
	struct exec_buf b1;
	dnnl_binary_desc_t d;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_attr_t attr;
	void *konst = NULL;
	const dnnl_memory_desc_t *mds[3];
	int args[3] = { DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST };
	int nd = src0->ndims, ret;

	/* no step: the conv before it computes the sum in this layer's buffer */
	if (b->xl->fused_into >= 0) {
		snprintf(b->plan->impl, sizeof(b->plan->impl), "fused into %s",
			 b->m->layers[b->xl->fused_into].name);
		return 0;
	}
	if (s1->ndims > nd)
		return builder_fail(b, -EINVAL, "second input has more dims than the first");
	for (int i = 0; i < nd; i++) {
		int j = i - (nd - s1->ndims);

		d1[i] = j >= 0 ? s1->dims[j] : 1;
	}
	if (bn->has_const) {
		dnnl_memory_desc_t logical;

		md_plain(&logical, s1->ndims, s1->dims);
		md_plain(&src1, nd, d1);
		if (b->lw->nr_w != (size_t)model_shape_elems(s1))
			return builder_fail(b, -EINVAL, "the constant operand has %zu values",
					    b->lw->nr_w);
		ret = builder_weights_in(b, b->lw->w, &logical, &logical, &konst);
		b1 = (struct exec_buf){ .kind = EXEC_BUF_FIXED };
	} else if (s1->ndims == nd && !memcmp(d1, src0->dims, sizeof(int64_t) * (size_t)nd)) {
		src1 = *src0;
		ret = builder_adapt_input(b, 1, &src1, &b1);
	} else {
		ret = builder_plain_input(b, 1, &b1);
		md_plain(&src1, nd, d1);
	}
	if (ret)
		return ret;
	if (dnnl_binary_desc_init(&d, binary_algs[b->l->op], src0, &src1, &b->xl->out_md))
		return builder_fail(b, -EINVAL, "oneDNN rejects this broadcast");
	if (exec_attr_new(&attr, b->l, bn->const_first ? -1.0f : 1.0f))
		return -ENOMEM;
	ret = builder_pd_create(b, &d, attr, NULL, &pd);
	dnnl_primitive_attr_destroy(attr);
	if (ret)
		return builder_fail(b, ret, "oneDNN cannot run this binary op");
	mds[0] = src0;
	mds[1] = &src1;
	mds[2] = &b->xl->out_md;
	{
		struct exec_buf bufs[3] = { in_buf(b, 0), b1, out_buf(b) };
		void *fx[3] = { NULL, konst, NULL };

		return simple_step(b, pd, 3, args, mds, bufs, fx);
	}
}

int concat_build(struct builder *b)
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
	if (exec_attr_new(&attr, NULL, 1.0f))
		return -ENOMEM;
	ret = dnnl_concat_primitive_desc_create(&pd, &b->xl->out_md, n, axis, srcs, attr,
						b->em->engine);
	dnnl_primitive_attr_destroy(attr);
	if (ret)
		return builder_fail(b, -EINVAL, "oneDNN rejects this concat (axis %d)", axis);
	return simple_step(b, pd, n + 1, args, mds, bufs, NULL);
}

int layer_norm_build(struct builder *b)
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
	ret = builder_plain_input(b, 0, &src);
	if (!ret)
		ret = builder_weights_in(b, b->lw->w, &sc, &sc, &gamma);
	if (!ret)
		ret = builder_weights_in(b, b->lw->bias, &sc, &sc, &beta);
	if (ret)
		return ret;
	if (dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &data, NULL,
						       b->l->eps, dnnl_use_scale | dnnl_use_shift))
		return builder_fail(b, -EINVAL, "oneDNN rejects this layer norm");
	ret = op_pd(b, &d, NULL, &pd);
	if (ret)
		return builder_fail(b, ret, "oneDNN cannot run this layer norm");
	{
		int args[4] = { DNNL_ARG_SRC, DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_DST };
		const dnnl_memory_desc_t *mds[4] = { &data, &sc, &sc, &b->xl->out_md };
		struct exec_buf bufs[4] = { src, fixed, fixed, out_buf(b) };
		void *fx[4] = { NULL, gamma, beta, NULL };

		return simple_step(b, pd, 4, args, mds, bufs, fx);
	}
}

/* Reshape is free (an alias) when the input is dense in logical order. */
int reshape_build(struct builder *b)
{
	dnnl_memory_desc_t p;

	/* no step then: the output is the input's own buffer */
	if (b->xl->alias_of >= 0)
		set_impl(b, "alias", NULL);
	if (md_is_plain(in_md(b, 0)))
		return 0;
	md_plain(&p, in_md(b, 0)->ndims, in_md(b, 0)->dims);
	return builder_reorder_step(b, in_md(b, 0), in_buf(b, 0), &p, out_buf(b));
}

/* A transpose is a reorder from the input viewed with permuted strides. */
int transpose_build(struct builder *b)
{
	dnnl_memory_desc_t view, plain;
	const dnnl_memory_desc_t *src = in_md(b, 0);
	struct exec_buf at = in_buf(b, 0);
	int nd = src->ndims, ret;
	int64_t dims[MODEL_MAX_DIMS], strides[MODEL_MAX_DIMS];

	if (!md_is_strided(src)) {
		md_plain(&plain, nd, src->dims);
		ret = builder_adapt_input(b, 0, &plain, &at);
		if (ret)
			return ret;
		src = &plain;
	}
	for (int i = 0; i < nd; i++) {
		int p = b->l->perm[i];

		if (p < 0 || p >= nd)
			return builder_fail(b, -EINVAL, "bad permutation");
		dims[i] = src->dims[p];
		strides[i] = src->format_desc.blocking.strides[p];
	}
	md_strided(&view, nd, dims, strides);
	return builder_reorder_step(b, &view, at, &b->xl->out_md, out_buf(b));
}

/* A slice is a reorder from a sub-memory view of the input. */
int slice_build(struct builder *b)
{
	const dnnl_memory_desc_t *src = in_md(b, 0);
	const struct model_slice *sl = &b->l->slice;
	int axis = sl->axis < 0 ? sl->axis + src->ndims : sl->axis;
	dnnl_dims_t dims, offs;
	dnnl_memory_desc_t view;

	if (axis < 0 || axis >= src->ndims || sl->start < 0 || sl->len < 1 ||
	    sl->start + sl->len > src->dims[axis])
		return builder_fail(b, -EINVAL, "slice out of range");
	for (int i = 0; i < src->ndims; i++) {
		dims[i] = src->dims[i];
		offs[i] = 0;
	}
	dims[axis] = sl->len;
	offs[axis] = sl->start;
	if (dnnl_memory_desc_init_submemory(&view, src, dims, offs))
		return builder_fail(b, -EINVAL, "oneDNN cannot view this slice");
	return builder_reorder_step(b, &view, in_buf(b, 0), &b->xl->out_md, out_buf(b));
}

int embed_build(struct builder *b)
{
	struct exec_step *s;
	struct exec_buf ids;
	dnnl_memory_desc_t tab;
	int64_t td[2] = { b->l->embed.vocab, b->l->embed.dim };
	void *table;
	int ret = builder_plain_input(b, 0, &ids);

	md_plain(&tab, 2, td);
	if (!ret)
		ret = builder_weights_in(b, b->lw->w, &tab, &tab, &table);
	if (ret)
		return ret;
	s = builder_plan_step(b);
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
