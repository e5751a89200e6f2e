// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The plan builder the operators' build functions share: memory
 * descriptors, oneDNN primitive descriptors picked by implementation name,
 * the steps of a plan (a primitive and its arguments, a parallel group of
 * single-thread primitives, a reorder) and the reorders that bring a layer's
 * inputs into the layout a primitive wants and its result into the layer's
 * canonical output layout. Everything created here is recorded in the
 * model's exec_owned, which exec_model_free() releases.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec_build.h"
#include "util.h"

static struct exec_owned *owned_of(struct exec_model *em)
{
	return &em->owned;
}

int builder_fail(struct builder *b, int ret, const char *fmt, ...)
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

void *exec_alloc_aligned(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, EXEC_ALIGN,
			   bytes ? (bytes + EXEC_ALIGN - 1) / EXEC_ALIGN * EXEC_ALIGN : EXEC_ALIGN))
		return NULL;
	return p;
}

/* ---- memory descriptors ----------------------------------------------------- */

void md_plain(dnnl_memory_desc_t *md, int ndims, const int64_t *dims)
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

void md_tag(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, dnnl_format_tag_t tag)
{
	dnnl_dims_t d;

	for (int i = 0; i < ndims; i++)
		d[i] = dims[i];
	dnnl_memory_desc_init_by_tag(md, ndims, d, dnnl_f32, tag);
}

void md_strided(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, const int64_t *strides)
{
	dnnl_dims_t d, s;

	for (int i = 0; i < ndims; i++) {
		d[i] = dims[i];
		s[i] = strides[i];
	}
	dnnl_memory_desc_init_by_strides(md, ndims, d, dnnl_f32, s);
}

bool md_is_plain(const dnnl_memory_desc_t *md)
{
	dnnl_memory_desc_t p;

	md_plain(&p, md->ndims, md->dims);
	return dnnl_memory_desc_equal(md, &p);
}

bool md_is_nhwc(const dnnl_memory_desc_t *md)
{
	dnnl_memory_desc_t t;

	if (md->ndims != 4)
		return false;
	md_tag(&t, 4, md->dims, dnnl_nhwc);
	return dnnl_memory_desc_equal(md, &t);
}

/* Strided: no inner blocks, so a dimension permutation is a stride permutation. */
bool md_is_strided(const dnnl_memory_desc_t *md)
{
	return md->format_kind == dnnl_blocked && md->format_desc.blocking.inner_nblks == 0 &&
	       md->offset0 == 0;
}

size_t md_bytes(const dnnl_memory_desc_t *md)
{
	return dnnl_memory_desc_get_size(md);
}

/* ---- primitives and steps ------------------------------------------------ */

/*
 * Each activation as a chain of oneDNN eltwise stages; leaky_relu's slope is
 * the layer's act_alpha, and hard_sigmoid (which oneDNN 2.6 lacks) is
 * linear(slope, offset) then a clip to [0, 1].
 */
static const struct {
	int nr;
	struct exec_eltwise e[EXEC_ACT_MAX_STAGES];
} act_eltwise[] = {
	[MODEL_ACT_NONE] = { 0 },
	[MODEL_ACT_RELU] = { 1, { { dnnl_eltwise_relu, 0.0f, 0.0f } } },
	[MODEL_ACT_RELU6] = { 1, { { dnnl_eltwise_clip_v2, 0.0f, 6.0f } } },
	[MODEL_ACT_LEAKY_RELU] = { 1, { { dnnl_eltwise_relu, 0.0f, 0.0f } } },
	[MODEL_ACT_SIGMOID] = { 1, { { dnnl_eltwise_logistic, 0.0f, 0.0f } } },
	[MODEL_ACT_SWISH] = { 1, { { dnnl_eltwise_swish, 1.0f, 0.0f } } },
	[MODEL_ACT_GELU] = { 1, { { dnnl_eltwise_gelu_erf, 0.0f, 0.0f } } },
	[MODEL_ACT_TANH] = { 1, { { dnnl_eltwise_tanh, 0.0f, 0.0f } } },
	[MODEL_ACT_HARD_SIGMOID] = { 2,
				     { { dnnl_eltwise_linear, 0.0f, 0.0f },
				       { dnnl_eltwise_clip_v2, 0.0f, 1.0f } } },
	[MODEL_ACT_HARD_SWISH] = { 1, { { dnnl_eltwise_hardswish, 0.0f, 0.0f } } },
	[MODEL_ACT_CLIP] = { 1, { { dnnl_eltwise_clip_v2, 0.0f, 0.0f } } },
};

int exec_act_eltwise(const struct model_layer *l, struct exec_eltwise *e)
{
	int nr;

	if ((unsigned int)l->act >= ARRAY_SIZE(act_eltwise))
		return 0;
	nr = act_eltwise[l->act].nr;
	memcpy(e, act_eltwise[l->act].e, sizeof(act_eltwise[l->act].e));
	if (l->act == MODEL_ACT_LEAKY_RELU)
		e[0].alpha = l->act_alpha;
	if (l->act == MODEL_ACT_HARD_SIGMOID || l->act == MODEL_ACT_CLIP) {
		e[0].alpha = l->act_alpha;
		e[0].beta = l->act_beta;
	}
	return nr;
}

static int append_act(dnnl_post_ops_t po, const struct model_layer *act_of)
{
	struct exec_eltwise e[EXEC_ACT_MAX_STAGES];
	int nr = act_of ? exec_act_eltwise(act_of, e) : 0;

	for (int i = 0; i < nr; i++)
		if (dnnl_post_ops_append_eltwise(po, 1.0f, e[i].alg, e[i].alpha, e[i].beta))
			return -EINVAL;
	return 0;
}

/* linear(scale), act_of's activation, then with sum_then: + dst, sum_then's activation */
static int attr_new(dnnl_primitive_attr_t *attr, const struct model_layer *act_of,
		    float linear_scale, const struct model_layer *sum_then)
{
	struct exec_eltwise e[EXEC_ACT_MAX_STAGES];
	dnnl_post_ops_t po = NULL;

	if (dnnl_primitive_attr_create(attr) ||
	    dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user))
		return -ENOMEM;
	if (!(act_of && exec_act_eltwise(act_of, e)) && linear_scale == 1.0f && !sum_then)
		return 0;
	if (dnnl_post_ops_create(&po))
		goto err;
	if (linear_scale != 1.0f &&
	    dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, linear_scale, 0.0f))
		goto err;
	if (append_act(po, act_of))
		goto err;
	if (sum_then && (dnnl_post_ops_append_sum(po, 1.0f) || append_act(po, sum_then)))
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

int exec_attr_new(dnnl_primitive_attr_t *attr, const struct model_layer *act_of, float linear_scale)
{
	return attr_new(attr, act_of, linear_scale, NULL);
}

int exec_attr_new_sum(dnnl_primitive_attr_t *attr, const struct model_layer *act_of,
		      const struct model_layer *sum_then)
{
	return attr_new(attr, act_of, 1.0f, sum_then);
}

const char *exec_pd_impl(const_dnnl_primitive_desc_t pd)
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
int builder_pd_create(struct builder *b, const_dnnl_op_desc_t desc,
		      const_dnnl_primitive_attr_t attr, const char *want, dnnl_primitive_desc_t *pd)
{
	dnnl_primitive_desc_iterator_t it;

	*pd = NULL;
	if (dnnl_primitive_desc_iterator_create(&it, desc, attr, b->em->engine, NULL))
		return -EINVAL;
	do {
		dnnl_primitive_desc_t cand = dnnl_primitive_desc_iterator_fetch(it);

		if (!cand)
			break;
		if ((!want || strstr(exec_pd_impl(cand), want)) &&
		    !(b->no_ref && !strncmp(exec_pd_impl(cand), "ref", 3))) {
			*pd = cand;
			break;
		}
		dnnl_primitive_desc_destroy(cand);
	} while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
	dnnl_primitive_desc_iterator_destroy(it);
	if (!*pd && (want || b->no_ref) && b->strict)
		return -ENOENT;
	if (!*pd && want)
		return builder_pd_create(b, desc, attr, NULL, pd);
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

int builder_step_arg(struct builder *b, struct exec_step *s, int arg, const dnnl_memory_desc_t *md,
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
	buf.mem = (int)o->nr_mems - 1;
	s->bufs[s->nr_args] = buf;
	s->nr_args++;
	return 0;
}

/* Makes prim (created from pd) the step's, with pd's scratchpad argument. */
int builder_step_use(struct builder *b, struct exec_step *s, dnnl_primitive_t prim,
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
	return builder_step_arg(b, s, DNNL_ARG_SCRATCHPAD, sp,
				(struct exec_buf){ .kind = EXEC_BUF_SCRATCHPAD }, NULL);
}

int builder_prim_new(struct builder *b, const_dnnl_primitive_desc_t pd, dnnl_primitive_t *prim)
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
int builder_step_prim(struct builder *b, struct exec_step *s, const_dnnl_primitive_desc_t pd)
{
	dnnl_primitive_t prim;
	int ret = builder_prim_new(b, pd, &prim);

	return ret ? ret : builder_step_use(b, s, prim, pd);
}

struct exec_step *builder_plan_step(struct builder *b)
{
	if (b->plan->nr_steps >= EXEC_MAX_STEPS)
		return NULL;
	return &b->plan->steps[b->plan->nr_steps++];
}

int builder_weighted_step(struct builder *b, const_dnnl_primitive_desc_t pd, const float *logical,
			  const dnnl_memory_desc_t *wlog, const dnnl_memory_desc_t *src_md,
			  struct exec_buf src, const dnnl_memory_desc_t *bias_md, void *bias,
			  const dnnl_memory_desc_t *dst_md, struct exec_buf dst)
{
	const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	struct exec_buf fixed = { .kind = EXEC_BUF_FIXED };
	struct exec_step *s = NULL;
	void *w;
	int ret = builder_weights_in(b, logical, wlog, wmd, &w);

	if (!ret && !(s = builder_plan_step(b)))
		ret = -E2BIG;
	if (!ret)
		ret = builder_step_prim(b, s, pd);
	if (!ret)
		ret = builder_step_arg(b, s, DNNL_ARG_SRC, src_md, src, NULL);
	if (!ret)
		ret = builder_step_arg(b, s, DNNL_ARG_WEIGHTS, wmd, fixed, w);
	if (!ret && bias)
		ret = builder_step_arg(b, s, DNNL_ARG_BIAS, bias_md, fixed, bias);
	if (!ret)
		ret = builder_step_arg(b, s, DNNL_ARG_DST, dst_md, dst, NULL);
	return ret;
}

struct exec_step *builder_group_new(struct builder *b, int nr_items)
{
	struct exec_owned *o = owned_of(b->em);
	struct exec_step *s = builder_plan_step(b), *items;

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

/* A col2im step running *c (copied; the model owns the copy). */
int builder_col2im_step(struct builder *b, const struct exec_col2im *c)
{
	struct exec_owned *o = owned_of(b->em);
	struct exec_step *s = builder_plan_step(b);
	struct exec_col2im *own;

	if (!s)
		return -E2BIG;
	if (grow((void **)&o->col2ims, &o->cap_col2ims, o->nr_col2ims + 1, sizeof(*o->col2ims)))
		return -ENOMEM;
	own = malloc(sizeof(*own));
	if (!own)
		return -ENOMEM;
	*own = *c;
	o->col2ims[o->nr_col2ims++] = own;
	memset(s, 0, sizeof(*s));
	s->col2im = own;
	return 0;
}

/* Swish in place over the layer's output, its first nr_elems floats (exec_swish.c). */
int builder_swish_step(struct builder *b, int64_t nr_elems)
{
	struct exec_step *s = builder_plan_step(b);

	if (!s)
		return -E2BIG;
	memset(s, 0, sizeof(*s));
	s->dst = out_buf(b);
	s->swish_elems = nr_elems;
	return 0;
}

int builder_reorder_step(struct builder *b, const dnnl_memory_desc_t *src_md, struct exec_buf src,
			 const dnnl_memory_desc_t *dst_md, struct exec_buf dst)
{
	dnnl_primitive_attr_t attr;
	dnnl_primitive_desc_t pd;
	struct exec_step *s = builder_plan_step(b);
	int ret;

	if (!s)
		return builder_fail(b, -E2BIG, "too many steps");
	if (exec_attr_new(&attr, NULL, 1.0f))
		return builder_fail(b, -ENOMEM, "out of memory");
	ret = dnnl_reorder_primitive_desc_create(&pd, src_md, b->em->engine, dst_md, b->em->engine,
						 attr);
	dnnl_primitive_attr_destroy(attr);
	if (ret)
		return builder_fail(b, -EINVAL, "oneDNN has no reorder between these layouts");
	ret = builder_step_prim(b, s, pd);
	dnnl_primitive_desc_destroy(pd);
	if (!ret)
		ret = builder_step_arg(b, s, DNNL_ARG_FROM, src_md, src, NULL);
	if (!ret)
		ret = builder_step_arg(b, s, DNNL_ARG_TO, dst_md, dst, NULL);
	return ret ? builder_fail(b, ret, "cannot create reorder") : 0;
}

/* Where input j is found in layout `want`: in place, or reordered into the arena. */
int builder_adapt_input(struct builder *b, int j, const dnnl_memory_desc_t *want,
			struct exec_buf *at)
{
	if (dnnl_memory_desc_equal(in_md(b, j), want)) {
		*at = in_buf(b, j);
		return 0;
	}
	*at = tmp_alloc(b->plan, md_bytes(want));
	return builder_reorder_step(b, in_md(b, j), in_buf(b, j), want, *at);
}

/* Input j dense in logical order (any view of its elements is then valid). */
int builder_plain_input(struct builder *b, int j, struct exec_buf *at)
{
	dnnl_memory_desc_t p;

	md_plain(&p, in_md(b, j)->ndims, in_md(b, j)->dims);
	return builder_adapt_input(b, j, &p, at);
}

/*
 * Adds the main primitive: src/weights... arguments are given by the caller;
 * this binds the destination, writing straight into the layer's output when
 * the primitive's layout is the canonical one, else through the arena and a
 * reorder.
 */
int builder_bind_dst(struct builder *b, struct exec_step *s, const dnnl_memory_desc_t *dst_md,
		     int arg, struct exec_buf *via)
{
	if (dnnl_memory_desc_equal(dst_md, &b->xl->out_md)) {
		*via = out_buf(b);
		return builder_step_arg(b, s, arg, dst_md, *via, NULL);
	}
	*via = tmp_alloc(b->plan, md_bytes(dst_md));
	return builder_step_arg(b, s, arg, dst_md, *via, NULL);
}

int builder_finish_dst(struct builder *b, const dnnl_memory_desc_t *dst_md, struct exec_buf via)
{
	if (via.kind == EXEC_BUF_OUT)
		return 0;
	return builder_reorder_step(b, dst_md, via, &b->xl->out_md, out_buf(b));
}

/* A split's impl: the kernel, how it is split, and into how many pieces. */
void builder_set_split_impl(struct builder *b, const char *impl, const char *how, int64_t pieces)
{
	snprintf(b->plan->impl, sizeof(b->plan->impl), "%s 1-thread %s x%lld", impl, how,
		 (long long)pieces);
}

/*
 * How many pieces a split version cuts a layer into: one per core, and two
 * on a single core, where a split still halves the working set of each step
 * (the locality end of VELTAIR's trade-off) instead of being the default
 * kernel under another name.
 */
int64_t builder_split_parts(const struct builder *b)
{
	return b->nr_threads == 1 ? 2 : b->nr_threads;
}
