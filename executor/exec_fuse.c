// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Residual adds fused into the conv before them, decided once at load.
 *
 * A ResNet block ends in add(conv(x), r) then relu. Run as its own step
 * the add reads two tensors and writes a third: 4.2 of 59.9 ms of
 * ResNet-50 on one AVX-512 core, where ONNX Runtime folds it into the conv.
 * oneDNN 2.6's binary post-op would do the same, but its brgemm convs do
 * not take one (the older jit kernel runs, slower); its sum post-op they
 * do take: dst = act(conv(x) + dst). So the conv writes in place into the
 * buffer that holds r, and the add becomes an alias of that buffer, with
 * no step. The graph is unchanged: the scheduler still sees both layers,
 * and a block may end between them.
 *
 * In place is safe only where nothing reads r after the conv: layers run
 * in index order, so every other reader of r's buffer (r itself, or a
 * layer aliasing it) must come before the conv, and r must not be a model
 * input (which a query sets once and may run again). The conv's versions
 * must write the canonical NHWC output directly (exec_conv.c refuses the
 * others for such a layer).
 */
#include "exec_build.h"

/* The layer whose buffer li's output lives in (aliases made before a fusion may chain). */
static int buffer_of(const struct exec_model *em, int li)
{
	while (em->layers[li].alias_of >= 0)
		li = em->layers[li].alias_of;
	return li;
}

static bool same_md(const struct exec_model *em, int a, int b)
{
	return dnnl_memory_desc_equal(&em->layers[a].out_md, &em->layers[b].out_md);
}

/* Every reader of buffer `buf`, other than `add`, comes before `conv`. */
static bool readers_done_before(const struct exec_model *em, int buf, int add, int conv)
{
	const struct model *m = em->graph;

	for (int li = 0; li < m->nr_layers; li++) {
		const struct model_layer *l = &m->layers[li];

		if (li == add)
			continue;
		for (int j = 0; j < l->nr_inputs; j++)
			if (buffer_of(em, l->inputs[j]) == buf && li >= conv)
				return false;
	}
	return true;
}

static int nr_readers(const struct model *m, int li)
{
	int n = 0;

	for (int i = 0; i < m->nr_layers; i++)
		for (int j = 0; j < m->layers[i].nr_inputs; j++)
			n += m->layers[i].inputs[j] == li;
	return n;
}

/* The conv an add can be fused into, or -1. */
static int fusable_conv(const struct exec_model *em, int add)
{
	const struct model *m = em->graph;
	const struct model_layer *l = &m->layers[add];
	int conv, res, buf;

	if (l->op != MODEL_OP_ADD || l->binary.has_const || l->nr_inputs != 2 || l->out.ndims != 4)
		return -1;
	conv = l->inputs[0] > l->inputs[1] ? l->inputs[0] : l->inputs[1];
	res = l->inputs[0] > l->inputs[1] ? l->inputs[1] : l->inputs[0];
	buf = buffer_of(em, res);
	if (m->layers[conv].op != MODEL_OP_CONV || em->layers[conv].alias_of >= 0 ||
	    nr_readers(m, conv) != 1 || m->layers[buf].op == MODEL_OP_INPUT)
		return -1;
	/* the same shape and layout (NHWC) for all three: no broadcast */
	if (!same_md(em, conv, add) || !same_md(em, res, add) || !same_md(em, buf, add))
		return -1;
	return readers_done_before(em, buf, add, conv) ? conv : -1;
}

void exec_fuse_residual_adds(struct exec_model *em)
{
	const struct model *m = em->graph;

	if (em->default_only)
		return;
	for (int li = 0; li < m->nr_layers; li++) {
		const struct model_layer *l = &m->layers[li];
		int conv = fusable_conv(em, li), buf;

		if (conv < 0)
			continue;
		buf = buffer_of(em, l->inputs[0] == conv ? l->inputs[1] : l->inputs[0]);
		em->layers[conv].alias_of = buf;
		em->layers[conv].sum_then = l;
		em->layers[li].alias_of = buf;
		em->layers[li].fused_into = conv;
	}
}
