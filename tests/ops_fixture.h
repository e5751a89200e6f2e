/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the ops_*_test.c files share: tiny models built around one operator
 * (inputs, sometimes a conv first so that the operator's input arrives in
 * the executor's NHWC layout), run at 1 core and (when the machine has two)
 * 2 cores against the plain-C reference (tests/reference.c) on small random
 * tensors, and the fixture ops. Include it after kselftest_harness.h.
 *
 * Tolerance: max |got - ref| <= 1e-4 * (1 + max |ref|). The executor
 * accumulates in fp32 in an order of its choosing; for the dot products here
 * (K <= 600) the rounding error is below K * 2^-24 * max|terms| ~ 4e-5 of
 * the magnitude, and oneDNN's polynomial approximations of exp/erf/tanh are
 * good to ~1e-6 relative. A wrong index, layout or missing bias is off by
 * O(1) instead.
 */
#ifndef COLOC_TESTS_OPS_FIXTURE_H
#define COLOC_TESTS_OPS_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "executor.h"
#include "reference.h"

#define TOL 1e-4f

static uint32_t rnd_state = 12345;
/* Inputs are uniform in [-input_scale, input_scale). */
static float input_scale = 1.0f;

static inline float rnd(void)
{
	rnd_state = rnd_state * 1664525u + 1013904223u;
	return input_scale * ((float)(rnd_state >> 8) / 16777216.0f * 2.0f - 1.0f);
}

/* Runs every version of every layer at 1 and 2 cores; checks the last layer. */
static inline void check_model(struct __test_metadata *_metadata, struct model *m)
{
	struct exec_cpuset sets[2] = { { .nr = 1, .cpus = { 0 } }, { .nr = 2, .cpus = { 0, 1 } } };
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	int nr_sets = 1, last = m->nr_layers - 1, max_versions = 1;
	float **ref = calloc((size_t)m->nr_layers, sizeof(float *));
	int64_t n = model_shape_elems(&m->layers[last].out);
	float *got = malloc((size_t)n * sizeof(float));
	struct exec_model *em;
	struct exec_query *q;
	struct coloc_err cerr = { 0 };

	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
		opts.cpus = sets[1];
		nr_sets = 2;
	}
	ASSERT_NE(NULL, ref);
	ASSERT_NE(NULL, got);
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("load: %s", coloc_err_str(&cerr));
	q = exec_query_new(em);
	ASSERT_NE(NULL, q);
	for (int li = 0; li < m->nr_layers; li++) {
		const float *ins[MODEL_MAX_INPUTS];
		int64_t e = model_shape_elems(&m->layers[li].out);

		ref[li] = malloc((size_t)e * sizeof(float));
		ASSERT_NE(NULL, ref[li]);
		if (m->layers[li].op == MODEL_OP_INPUT) {
			float *in = exec_query_input(q, li);

			ASSERT_NE(NULL, in);
			for (int64_t i = 0; i < e; i++)
				in[i] = ref[li][i] = rnd();
			continue;
		}
		for (int j = 0; j < m->layers[li].nr_inputs; j++)
			ins[j] = ref[m->layers[li].inputs[j]];
		ASSERT_EQ(0, ref_layer(m, li, ins, ref[li]));
		if (exec_layer_nr_versions(em, li) > max_versions)
			max_versions = exec_layer_nr_versions(em, li);
	}
	for (int v = 0; v < max_versions; v++) {
		int *versions = calloc((size_t)m->nr_layers, sizeof(int));

		ASSERT_NE(NULL, versions);
		for (int li = 0; li < m->nr_layers; li++)
			versions[li] = v < exec_layer_nr_versions(em, li) ? v : 0;
		for (int s = 0; s < nr_sets; s++) {
			struct exec_block_stats st;
			float max_err, max_ref;

			ASSERT_EQ(0,
				  exec_run_block(em, q, 0, m->nr_layers, versions, &sets[s], &st));
			ASSERT_EQ(0, exec_query_read_output(q, last, got, (size_t)n));
			ref_compare(got, ref[last], n, &max_err, &max_ref);
			EXPECT_LE(max_err, TOL * (1.0f + max_ref))
			TH_LOG("%s: version %d (%s: %s) on %d cores: max err %g, max |ref| %g",
			       m->layers[last].name, v,
			       exec_layer_version_name(em, last, versions[last]),
			       exec_layer_impl(em, last, versions[last], sets[s].nr), sets[s].nr,
			       max_err, max_ref);
		}
		free(versions);
	}
	for (int li = 0; li < m->nr_layers; li++)
		free(ref[li]);
	free(ref);
	free(got);
	exec_query_free(q);
	exec_model_free(em);
}

static inline int add_input(struct model *m, int ndims, const int64_t *dims)
{
	ref_model_add(m, MODEL_OP_INPUT, "in", 0, NULL, ndims, dims);
	return m->nr_layers - 1;
}

struct conv_case {
	int64_t n, ic, h, w, oc, groups;
	int k, stride, dil, pad_t, pad_l, pad_b, pad_r;
	bool bias, bn;
	enum model_act act;
	float alpha;
};

static inline int64_t conv_out(int64_t in, int k, int stride, int dil, int pa, int pb)
{
	return (in + pa + pb - (int64_t)dil * (k - 1) - 1) / stride + 1;
}

static inline int add_conv(struct model *m, int in, const struct conv_case *c)
{
	const struct model_shape *is = &m->layers[in].out;
	int64_t od[4] = { is->dims[0], c->oc,
			  conv_out(is->dims[2], c->k, c->stride, c->dil, c->pad_t, c->pad_b),
			  conv_out(is->dims[3], c->k, c->stride, c->dil, c->pad_l, c->pad_r) };
	struct model_layer *l = ref_model_add(m, MODEL_OP_CONV, "conv", 1, &in, 4, od);

	l->conv = (struct model_conv){
		.out_channels = c->oc,
		.kh = c->k,
		.kw = c->k,
		.stride_h = c->stride,
		.stride_w = c->stride,
		.pad_t = c->pad_t,
		.pad_l = c->pad_l,
		.pad_b = c->pad_b,
		.pad_r = c->pad_r,
		.dil_h = c->dil,
		.dil_w = c->dil,
		.groups = c->groups,
		.bias = c->bias,
		.batch_norm = c->bn,
	};
	l->act = c->act;
	l->act_alpha = c->alpha;
	l->act_beta = 0.5f; /* hard_sigmoid's offset; the other activations ignore it */
	return m->nr_layers - 1;
}

static inline void check_conv(struct __test_metadata *_metadata, const struct conv_case *c)
{
	struct model *m = ref_model_new("conv", 7, 4);
	int64_t d[4] = { c->n, c->ic, c->h, c->w };

	add_conv(m, add_input(m, 4, d), c);
	check_model(_metadata, m);
	model_free(m);
}

FIXTURE(ops)
{
	int unused;
};

FIXTURE_SETUP(ops)
{
	self->unused = 0;
}

FIXTURE_TEARDOWN(ops)
{
}

#endif /* COLOC_TESTS_OPS_FIXTURE_H */
