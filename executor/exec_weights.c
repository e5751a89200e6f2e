// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Deterministic weights. Models carry no trained weights (latency, not
 * accuracy, is what coloc schedules), so every learned parameter comes from
 * a xorshift64* stream seeded by the model's seed and the layer index: the
 * same model file gives the same numbers in every process, which is what
 * lets tests recompute a layer with the plain-C reference. Scales keep
 * activations bounded through deep nets: He-uniform weights (variance 2 /
 * fan_in, right for ReLU nets) and batch-norm statistics near identity.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "executor.h"

struct rng {
	uint64_t state;
};

static void rng_seed(struct rng *r, uint32_t seed, int layer)
{
	/* splitmix64 spreads nearby (seed, layer) pairs over the state space. */
	uint64_t z = ((uint64_t)seed << 32) ^ (uint64_t)(uint32_t)layer ^ 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	r->state = z ? z : 1;
}

static float rng_uniform(struct rng *r, float lo, float hi)
{
	uint64_t x = r->state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->state = x;
	x *= 0x2545f4914f6cdd1dull;
	return lo + (hi - lo) * (float)((x >> 40) * (1.0 / 16777216.0));
}

static float *rng_fill(struct rng *r, size_t n, float lo, float hi)
{
	float *v = malloc((n ? n : 1) * sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = rng_uniform(r, lo, hi);
	return v;
}

void exec_layer_params_free(struct exec_layer_params *p)
{
	free(p->weights);
	free(p->bias);
	free(p->bn_gamma);
	free(p->bn_beta);
	free(p->bn_mean);
	free(p->bn_var);
	memset(p, 0, sizeof(*p));
}

static int gen_conv(const struct model *m, const struct model_layer *l, struct rng *r,
		    struct exec_layer_params *p)
{
	const struct model_shape *in = &m->layers[l->inputs[0]].out;
	int64_t oc = l->conv.out_channels, icg = in->dims[1] / l->conv.groups;
	float fan_in = (float)(icg * l->conv.kh * l->conv.kw), bound = sqrtf(6.0f / fan_in);

	p->nr_weights = (size_t)(oc * icg * l->conv.kh * l->conv.kw);
	p->weights = rng_fill(r, p->nr_weights, -bound, bound);
	if (l->conv.bias) {
		p->nr_bias = (size_t)oc;
		p->bias = rng_fill(r, p->nr_bias, -0.05f, 0.05f);
	}
	if (l->conv.batch_norm) {
		p->bn_gamma = rng_fill(r, (size_t)oc, 0.8f, 1.2f);
		p->bn_beta = rng_fill(r, (size_t)oc, -0.1f, 0.1f);
		p->bn_mean = rng_fill(r, (size_t)oc, -0.1f, 0.1f);
		p->bn_var = rng_fill(r, (size_t)oc, 0.5f, 1.5f);
		p->bn_eps = EXEC_BN_EPS;
		if (!p->bn_gamma || !p->bn_beta || !p->bn_mean || !p->bn_var)
			return -ENOMEM;
	}
	return p->weights && (p->bias || !l->conv.bias) ? 0 : -ENOMEM;
}

int exec_layer_params_generate(const struct model *m, int layer, struct exec_layer_params *p)
{
	const struct model_layer *l;
	struct rng r;
	int ret = 0;

	memset(p, 0, sizeof(*p));
	if (!m || layer < 0 || layer >= m->nr_layers)
		return -EINVAL;
	l = &m->layers[layer];
	rng_seed(&r, m->seed, layer);
	switch (l->op) {
	case MODEL_OP_CONV:
	case MODEL_OP_DECONV: /* as many weights as a conv's, drawn the same way */
		ret = gen_conv(m, l, &r, p);
		break;
	case MODEL_OP_FC: {
		const struct model_shape *in = &m->layers[l->inputs[0]].out;
		int64_t k = in->dims[in->ndims - 1], n = l->fc.out_features;
		float bound = sqrtf(6.0f / (float)k);

		p->nr_weights = (size_t)(k * n);
		p->weights = rng_fill(&r, p->nr_weights, -bound, bound);
		if (l->fc.bias) {
			p->nr_bias = (size_t)n;
			p->bias = rng_fill(&r, p->nr_bias, -0.05f, 0.05f);
		}
		ret = p->weights && (p->bias || !l->fc.bias) ? 0 : -ENOMEM;
		break;
	}
	case MODEL_OP_LAYER_NORM: {
		size_t d = (size_t)l->out.dims[l->out.ndims - 1];

		p->nr_weights = p->nr_bias = d;
		p->weights = rng_fill(&r, d, 0.8f, 1.2f);
		p->bias = rng_fill(&r, d, -0.1f, 0.1f);
		ret = p->weights && p->bias ? 0 : -ENOMEM;
		break;
	}
	case MODEL_OP_EMBED:
		p->nr_weights = (size_t)(l->embed.vocab * l->embed.dim);
		p->weights = rng_fill(&r, p->nr_weights, -1.0f, 1.0f);
		ret = p->weights ? 0 : -ENOMEM;
		break;
	default:
		if (!model_op_is_binary(l->op) || !l->binary.has_const)
			break;
		/* away from 0, so that a div by it stays finite */
		p->nr_weights = (size_t)model_shape_elems(&l->binary.cshape);
		p->weights = rng_fill(&r, p->nr_weights, 0.5f, 1.5f);
		ret = p->weights ? 0 : -ENOMEM;
		break;
	}
	if (ret)
		exec_layer_params_free(p);
	return ret;
}
