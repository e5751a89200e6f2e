/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the files that build a loaded model share: the builder of one plan
 * (one version of one layer at one core-count slot) and its helpers
 * (exec_build.c), a layer's weights while it is built
 * (exec_layer_weights.c), and building a whole layer (exec_layer.c), which
 * exec_load.c calls for each layer of the model. The operators' build
 * functions are declared in exec_ops.h.
 */
#ifndef COLOC_EXEC_BUILD_H
#define COLOC_EXEC_BUILD_H

#include <stdio.h>
#include "exec_internal.h"

/* Alignment of weight buffers, scratchpads and every buffer in an arena. */
#define EXEC_ALIGN 64

/* A plan while it is built: room for the most steps any plan needs. */
struct plan_draft {
	int nr_steps;
	struct exec_step steps[EXEC_MAX_STEPS];
	size_t tmp_bytes;
	char impl[EXEC_IMPL_LEN];
};

/* Folded parameters of the layer being built, in logical layouts. */
struct layer_weights {
	/*
	 * conv [OC][IC/g][kh][kw] with BN folded in; deconv [g][IC/g][kh][kw][OC/g]
	 * (permuted from the file's [IC][OC/g][kh][kw]); fc [K][N]; ln gamma; embed
	 */
	float *w;
	/*
	 * deconv: w turned by 180 degrees, each kernel axis then grouped by
	 * tap % stride (deconv_phased_index()): phase-conv's sub-kernels view it
	 */
	float *w_phases;
	float *bias; /* conv/fc bias (BN shift folded in), ln beta; NULL if none */
	size_t nr_w, nr_bias;
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
	int cand; /* the candidate version built: an index into exec_op.versions */
	const struct layer_weights *lw; /* the layer's (empty unless its operator takes weights) */
	bool strict; /* builder_pd_create: no implementation matching the name is an error */
	bool no_ref; /* builder_pd_create: never the reference kernels */
	struct coloc_err *err;
};

/* Records the error, prefixed with the layer, its operator and line; returns ret. */
int builder_fail(struct builder *b, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void *exec_alloc_aligned(size_t bytes);

/* ---- memory descriptors --------------------------------------------------- */

void md_plain(dnnl_memory_desc_t *md, int ndims, const int64_t *dims);
void md_tag(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, dnnl_format_tag_t tag);
void md_strided(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, const int64_t *strides);
bool md_is_plain(const dnnl_memory_desc_t *md);
bool md_is_nhwc(const dnnl_memory_desc_t *md);
bool md_is_strided(const dnnl_memory_desc_t *md);
size_t md_bytes(const dnnl_memory_desc_t *md);

static inline const dnnl_memory_desc_t *in_md(struct builder *b, int j)
{
	return &b->em->layers[b->l->inputs[j]].out_md;
}

static inline struct exec_buf in_buf(struct builder *b, int j)
{
	return (struct exec_buf){ .kind = EXEC_BUF_OUT, .index = b->l->inputs[j] };
}

static inline struct exec_buf out_buf(struct builder *b)
{
	return (struct exec_buf){ .kind = EXEC_BUF_OUT, .index = b->li };
}

static inline struct exec_buf tmp_alloc(struct plan_draft *p, size_t bytes)
{
	struct exec_buf t = { .kind = EXEC_BUF_TMP };

	t.offset = (p->tmp_bytes + EXEC_ALIGN - 1) / EXEC_ALIGN * EXEC_ALIGN;
	p->tmp_bytes = t.offset + bytes;
	return t;
}

/* ---- primitives and steps ------------------------------------------------- */

/* One oneDNN eltwise stage of an activation. */
struct exec_eltwise {
	dnnl_alg_kind_t alg;
	float alpha, beta;
};

#define EXEC_ACT_MAX_STAGES 2

/* The layer's act= as eltwise stages applied in order into e[]; returns how many (0: none). */
int exec_act_eltwise(const struct model_layer *l, struct exec_eltwise *e);
/*
 * A user-scratchpad attr with post-ops: times linear_scale (if not 1), then
 * the act= of act_of (NULL: none).
 */
int exec_attr_new(dnnl_primitive_attr_t *attr, const struct model_layer *act_of,
		  float linear_scale);
/* The act= of act_of, then + dst (oneDNN's sum), then the act= of sum_then: a fused residual add. */
int exec_attr_new_sum(dnnl_primitive_attr_t *attr, const struct model_layer *act_of,
		      const struct model_layer *sum_then);
const char *exec_pd_impl(const_dnnl_primitive_desc_t pd);
int builder_pd_create(struct builder *b, const_dnnl_op_desc_t desc,
		      const_dnnl_primitive_attr_t attr, const char *want,
		      dnnl_primitive_desc_t *pd);
int builder_prim_new(struct builder *b, const_dnnl_primitive_desc_t pd, dnnl_primitive_t *prim);
int builder_step_arg(struct builder *b, struct exec_step *s, int arg, const dnnl_memory_desc_t *md,
		     struct exec_buf buf, void *fixed);
int builder_step_use(struct builder *b, struct exec_step *s, dnnl_primitive_t prim,
		     const_dnnl_primitive_desc_t pd);
int builder_step_prim(struct builder *b, struct exec_step *s, const_dnnl_primitive_desc_t pd);
struct exec_step *builder_plan_step(struct builder *b);
/*
 * One plan step running a new primitive of pd: the weights (logical, laid
 * out as wlog) reordered into pd's layout once, then src, the bias (when
 * not NULL, of bias_md) and dst bound. 0, -E2BIG (no step left) or -errno.
 */
int builder_weighted_step(struct builder *b, const_dnnl_primitive_desc_t pd, const float *logical,
			  const dnnl_memory_desc_t *wlog, const dnnl_memory_desc_t *src_md,
			  struct exec_buf src, const dnnl_memory_desc_t *bias_md, void *bias,
			  const dnnl_memory_desc_t *dst_md, struct exec_buf dst);
struct exec_step *builder_group_new(struct builder *b, int nr_items);
int builder_col2im_step(struct builder *b, const struct exec_col2im *c);
int builder_swish_step(struct builder *b, int64_t nr_elems);
int builder_reorder_step(struct builder *b, const dnnl_memory_desc_t *src_md, struct exec_buf src,
			 const dnnl_memory_desc_t *dst_md, struct exec_buf dst);
int builder_adapt_input(struct builder *b, int j, const dnnl_memory_desc_t *want,
			struct exec_buf *at);
int builder_plain_input(struct builder *b, int j, struct exec_buf *at);
int builder_bind_dst(struct builder *b, struct exec_step *s, const dnnl_memory_desc_t *dst_md,
		     int arg, struct exec_buf *via);
int builder_finish_dst(struct builder *b, const dnnl_memory_desc_t *dst_md, struct exec_buf via);

static inline void set_impl(struct builder *b, const char *impl, const char *suffix)
{
	snprintf(b->plan->impl, sizeof(b->plan->impl), "%s%s", impl, suffix ? suffix : "");
}

void builder_set_split_impl(struct builder *b, const char *impl, const char *how, int64_t pieces);
int64_t builder_split_parts(const struct builder *b);

/* ---- weights -------------------------------------------------------------- */

int builder_weights_in(struct builder *b, const float *logical,
		       const dnnl_memory_desc_t *logical_md, const dnnl_memory_desc_t *want,
		       void **out);
int layer_weights_make(const struct model *m, int li, struct exec_weights_file *wf,
		       struct layer_weights *lw, struct coloc_err *err);
void layer_weights_free(struct layer_weights *lw);

/* ---- a whole layer -------------------------------------------------------- */

void exec_layer_out_md(struct exec_model *em, int li);
/* exec_fuse.c: after every out_md, before any layer is built */
void exec_fuse_residual_adds(struct exec_model *em);
int exec_layer_build(struct exec_model *em, int li, struct exec_weights_file *wf,
		     struct coloc_err *err);

#endif /* COLOC_EXEC_BUILD_H */
