// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Building one layer: its canonical output layout, its weights, and the
 * plans of its kernel versions at every core-count slot.
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
 * oneDNN's matmul and its gemm-based matmul are one kernel).
 */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec_build.h"
#include "exec_ops.h"

void exec_layer_out_md(struct exec_model *em, int li)
{
	const struct model_layer *l = &em->graph->layers[li];
	const struct exec_op *op = exec_op_of(l->op);
	struct exec_layer *xl = &em->layers[li];
	const dnnl_memory_desc_t *in0 = l->nr_inputs > 0 ? &em->layers[l->inputs[0]].out_md : NULL;
	bool same_dims = in0 && in0->ndims == l->out.ndims &&
			 !memcmp(in0->dims, l->out.dims, sizeof(int64_t) * (size_t)l->out.ndims);

	xl->alias_of = -1;
	xl->sum_then = NULL;
	xl->fused_into = -1;
	switch (op ? op->out : EXEC_OUT_PLAIN) {
	case EXEC_OUT_NHWC:
		if (l->out.ndims == 4) {
			md_tag(&xl->out_md, 4, l->out.dims, dnnl_nhwc);
			return;
		}
		break;
	case EXEC_OUT_AS_INPUT:
		if (same_dims && md_is_strided(in0)) {
			xl->out_md = *in0;
			return;
		}
		break;
	case EXEC_OUT_NHWC_AS_INPUT:
		if (in0 && md_is_nhwc(in0)) {
			md_tag(&xl->out_md, 4, l->out.dims, dnnl_nhwc);
			return;
		}
		break;
	case EXEC_OUT_ALIAS:
		if (in0 && md_is_plain(in0)) {
			int a = l->inputs[0];

			xl->alias_of = em->layers[a].alias_of >= 0 ? em->layers[a].alias_of : a;
		}
		break;
	case EXEC_OUT_PLAIN:
		break;
	}
	md_plain(&xl->out_md, l->out.ndims, l->out.dims);
}

/*
 * The candidate versions of a layer, by name: its operator's, or only
 * oneDNN's default where a model loaded for the baseline has an operator
 * with several.
 */
static int layer_candidates(const struct exec_model *em, const struct exec_op *op,
			    const char *const **names)
{
	static const char *const baseline[1] = { "onednn-default" };
	int n = exec_op_nr_cands(op);

	if (em->default_only && n > 1) {
		*names = baseline;
		return 1;
	}
	*names = op->versions;
	return n;
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
	while (o->nr_col2ims > mark->nr_col2ims)
		free(o->col2ims[--o->nr_col2ims]);
}

static const char *prim_impl(const_dnnl_primitive_t prim)
{
	const_dnnl_primitive_desc_t pd;

	if (dnnl_primitive_get_primitive_desc(prim, &pd))
		return "?";
	return exec_pd_impl(pd);
}

/* Same kernels, same layouts, same split: one execution under two names. */
static bool steps_same(const struct exec_step *a, const struct exec_step *b)
{
	if (!a->prim != !b->prim || a->embed != b->embed || !a->col2im != !b->col2im ||
	    a->swish_elems != b->swish_elems || a->nr_args != b->nr_args ||
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

int exec_layer_build(struct exec_model *em, int li, struct exec_weights_file *wf,
		     struct coloc_err *err)
{
	struct plan_draft *draft;
	struct builder b = {
		.em = em,
		.m = em->graph,
		.li = li,
		.l = &em->graph->layers[li],
		.xl = &em->layers[li],
		.err = err,
	};
	struct layer_weights lw = { 0 };
	const struct exec_op *op = exec_op_of(b.l->op);
	const char *const *names;
	int ret = 0, nr_cands;

	if (!op)
		return builder_fail(&b, -EINVAL, "unknown operator");
	draft = malloc(sizeof(*draft));
	if (!draft)
		return builder_fail(&b, -ENOMEM, "out of memory");
	if (op->weights) {
		ret = layer_weights_make(em->graph, li, wf, &lw, err);
		if (ret) {
			free(draft);
			if (wf && err->code)
				return ret;
			return builder_fail(&b, ret, "cannot generate weights");
		}
	}
	b.lw = &lw;
	nr_cands = layer_candidates(em, op, &names);
	for (int c = 0; c < nr_cands && b.xl->nr_versions < EXEC_VERSIONS_KEPT && !ret; c++) {
		struct exec_owned mark = em->owned;
		int v = b.xl->nr_versions;

		b.xl->plans[v] = calloc((size_t)em->nr_slots, sizeof(struct exec_plan));
		if (!b.xl->plans[v]) {
			ret = -ENOMEM;
			break;
		}
		b.cand = c;
		for (int s = 0; s < em->nr_slots && !ret; s++) {
			memset(draft, 0, sizeof(*draft));
			b.plan = draft;
			b.slot = s;
			b.nr_threads = em->slot_cores[s];
			omp_set_num_threads(b.nr_threads);
			ret = op->build(&b);
			if (ret == -ENOENT && s == 0 && nr_cands > 1)
				break;
			if (ret && !err->code)
				builder_fail(&b, ret, "cannot build version %s for %d cores",
					     names[c], b.nr_threads);
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
	free(b.xl->weight_mds);
	free(b.xl->weight_srcs);
	b.xl->weight_mds = NULL;
	b.xl->weight_srcs = NULL;
	free(draft);
	return ret;
}
