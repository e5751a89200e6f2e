// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The transposed convolution's versions (executor/exec_deconv.c): each one
 * the layer offers, on many shapes (stride 1, 2 and 3, kernels 1 to 5,
 * pads, dilations, groups, batches, 1-D as a height of 1, fused
 * activations), at 1 and 2 cores, against the plain-C reference
 * (tests/reference.c's ref_deconv, on the weights file's own layout) and
 * against oneDNN's deconvolution, the "onednn" version, in the same run.
 *
 * Tolerance as ops_test: max |got - ref| <= 1e-4 * (1 + max |ref|); the
 * dot products here have K <= IC * kh * kw <= 400 terms.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "reference.h"

#define TOL 1e-4f

struct deconv_case {
	int64_t n, ic, h, w, oc, groups;
	int kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
	bool bias;
	enum model_act act;
	int oph, opw; /* output_padding: rows and columns past the last input's taps */
	bool phase; /* phase-conv takes it (worked out by hand, phase by phase) */
};

static const struct deconv_case cases[] = {
	/* U-Net's 2x2 stride 2, bias and ReLU; a 1x1 stride 1 */
	{ 1, 16, 6, 7, 8, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, true, MODEL_ACT_RELU, 0, 0, false },
	{ 2, 8, 4, 5, 6, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, MODEL_ACT_NONE, 0, 0, false },
	/* 3x3 stride 3 and 3x2 stride 3x2 (stride == kernel), sigmoid; batch of 2 */
	{ 2, 5, 3, 4, 7, 1, 3, 3, 3, 3, 1, 1, 0, 0, 0, 0, true, MODEL_ACT_SIGMOID, 0, 0, false },
	{ 1, 9, 5, 3, 4, 1, 3, 2, 3, 2, 1, 1, 0, 0, 0, 0, false, MODEL_ACT_NONE, 0, 0, false },
	/* 3x3 stride 1 "same" padding; 4x4 stride 2 pad 1 (DCGAN), leaky ReLU */
	{ 1, 8, 6, 6, 8, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, MODEL_ACT_NONE, 0, 0, true },
	{ 2, 6, 5, 4, 5, 1, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, true, MODEL_ACT_LEAKY_RELU, 0, 0, true },
	/* grouped 3x3 stride 2, uneven pads; 5x5 stride 3 pad 2 */
	{ 2, 8, 5, 6, 12, 4, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1, false, MODEL_ACT_NONE, 0, 0, true },
	{ 1, 4, 4, 5, 3, 1, 5, 5, 3, 3, 1, 1, 2, 2, 2, 2, true, MODEL_ACT_SWISH, 0, 0, true },
	/* dilated 3x2 with stride 1x3; grouped 2x2 stride 2 (groups > 1: no shuffle) */
	{ 2, 8, 5, 6, 1, 1, 3, 2, 1, 3, 2, 1, 0, 0, 0, 0, true, MODEL_ACT_NONE, 0, 0, false },
	{ 1, 6, 4, 4, 6, 3, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, true, MODEL_ACT_RELU, 0, 0, true },
	/* depthwise 4x4 stride 2 pad 1; 1-D: kernel 4 stride 2 pad 1, and kernel 2 stride 2 */
	{ 1, 6, 5, 5, 6, 6, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, false, MODEL_ACT_NONE, 0, 0, true },
	{ 2, 4, 1, 9, 6, 1, 1, 4, 1, 2, 1, 1, 0, 1, 0, 1, true, MODEL_ACT_TANH, 0, 0, true },
	{ 1, 5, 1, 7, 3, 1, 1, 2, 1, 2, 1, 1, 0, 0, 0, 0, true, MODEL_ACT_NONE, 0, 0, false },
	/* stride 2 kernel 3 no padding (odd overlap), dilation 2 in both dims with pads */
	{ 1, 7, 4, 3, 5, 1, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, true, MODEL_ACT_NONE, 0, 0, true },
	{ 1, 4, 5, 5, 4, 2, 3, 3, 2, 2, 2, 2, 2, 1, 1, 2, false, MODEL_ACT_RELU6, 0, 0, false },
	/*
	 * output_padding: 4x4 stride 2 pad 1 grouped, plus 1; the 3x3 stride 2
	 * pad 1 plus 1 of "same" upsampling; kernel 4 stride 3 pad 1 plus 2.
	 * Pads as large as the stride: a phase would need a negative pad, so
	 * phase-conv is not offered.
	 */
	{ 1, 4, 5, 6, 6, 2, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, true, MODEL_ACT_RELU, 1, 1, true },
	{ 2, 6, 4, 5, 5, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, MODEL_ACT_NONE, 1, 1, true },
	{ 1, 5, 3, 4, 7, 1, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, true, MODEL_ACT_NONE, 2, 2, true },
	{ 1, 4, 5, 5, 4, 1, 3, 3, 2, 2, 1, 1, 2, 0, 1, 2, true, MODEL_ACT_NONE, 0, 0, false },
};

static uint32_t rnd_state = 4242;

static float rnd(void)
{
	rnd_state = rnd_state * 1664525u + 1013904223u;
	return (float)(rnd_state >> 8) / 16777216.0f * 2.0f - 1.0f;
}

static bool stride_is_kernel(const struct deconv_case *c)
{
	return c->groups == 1 && c->kh == c->sh && c->kw == c->sw && !c->pt && !c->pl && !c->pb &&
	       !c->pr && !c->oph && !c->opw && (c->kh == 1 || c->dh == 1) &&
	       (c->kw == 1 || c->dw == 1);
}

/* An input and the deconv of case c; the deconv is layer 1. */
static struct model *deconv_model(const struct deconv_case *c)
{
	struct model *m = ref_model_new("deconv", 31, 2);
	int64_t d[4] = { c->n, c->ic, c->h, c->w }, od[4] = { c->n, c->oc, 0, 0 };
	struct model_layer *l;
	int x = 0;

	if (!m)
		return NULL;
	ref_model_add(m, MODEL_OP_INPUT, "in", 0, NULL, 4, d);
	od[2] = (c->h - 1) * c->sh - c->pt - c->pb + c->dh * (c->kh - 1) + 1 + c->oph;
	od[3] = (c->w - 1) * c->sw - c->pl - c->pr + c->dw * (c->kw - 1) + 1 + c->opw;
	l = ref_model_add(m, MODEL_OP_DECONV, "up", 1, &x, 4, od);
	l->conv = (struct model_conv){
		.out_channels = c->oc,
		.kh = c->kh,
		.kw = c->kw,
		.stride_h = c->sh,
		.stride_w = c->sw,
		.pad_t = c->pt,
		.pad_l = c->pl,
		.pad_b = c->pb,
		.pad_r = c->pr,
		.dil_h = c->dh,
		.dil_w = c->dw,
		.groups = c->groups,
		.bias = c->bias,
	};
	l->act = c->act;
	l->act_alpha = c->act == MODEL_ACT_LEAKY_RELU ? 0.1f : 0.0f;
	return m;
}

FIXTURE(deconv)
{
	int nr_sets;
	struct exec_cpuset sets[2];
};

FIXTURE_SETUP(deconv)
{
	self->sets[0] = (struct exec_cpuset){ .nr = 1, .cpus = { 0 } };
	self->sets[1] = (struct exec_cpuset){ .nr = 2, .cpus = { 0, 1 } };
	self->nr_sets = sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 2 : 1;
}

FIXTURE_TEARDOWN(deconv)
{
}

static void set_input(struct exec_query *q, const float *in, int64_t n, float scale)
{
	float *x = exec_query_input(q, 0);

	for (int64_t i = 0; i < n; i++)
		x[i] = scale * in[i];
}

/*
 * Every version of case c at every core count against the reference and
 * against the "onednn" version's output. Returns the versions offered, as
 * a bit per name: 1 matmul-shuffle, 2 gemm-col2im, 4 onednn, 8 phase-conv.
 */
static unsigned int check_case(struct __test_metadata *_metadata, const struct exec_cpuset *sets,
			       int nr_sets, const struct deconv_case *c, int ci)
{
	static const char *const names[4] = { "matmul-shuffle", "gemm-col2im", "onednn",
					      "phase-conv" };
	struct exec_options opts = { .cpus = sets[nr_sets - 1] };
	struct model *m = deconv_model(c);
	struct coloc_err cerr = { 0 };
	int64_t ni, no;
	float *in, *ref, *got, *onednn;
	const float *ins[1];
	struct exec_model *em;
	struct exec_query *q;
	unsigned int offered = 0;
	int vd;

	if (!m)
		return 0;
	ni = model_shape_elems(&m->layers[0].out);
	no = model_shape_elems(&m->layers[1].out);
	in = malloc((size_t)ni * sizeof(float));
	ref = malloc((size_t)no * sizeof(float));
	got = malloc((size_t)no * sizeof(float));
	onednn = malloc((size_t)no * sizeof(float));
	if (!in || !ref || !got || !onednn)
		return 0;
	for (int64_t i = 0; i < ni; i++)
		in[i] = rnd();
	ins[0] = in;
	if (ref_layer(m, 1, ins, ref))
		return 0;
	em = exec_model_load(m, &opts, &cerr);
	if (!em) {
		TH_LOG("case %d: load: %s", ci, coloc_err_str(&cerr));
		return 0;
	}
	q = exec_query_new(em);
	if (!q)
		return 0;
	set_input(q, in, ni, 1.0f);
	vd = exec_layer_version_index(em, 1, "onednn");
	for (int s = 0; s < nr_sets; s++) {
		int versions[2] = { 0, vd };
		struct exec_block_stats st;

		EXPECT_LE(0, vd) TH_LOG("case %d: no onednn version", ci);
		if (vd < 0)
			break;
		EXPECT_EQ(0, exec_run_block(em, q, 0, 2, versions, &sets[s], &st));
		EXPECT_EQ(0, exec_query_read_output(q, 1, onednn, (size_t)no));
		for (int k = 0; k < 4; k++) {
			int v = exec_layer_version_index(em, 1, names[k]);
			float err, max_ref, err_dnn, max_dnn;

			if (v < 0)
				continue;
			offered |= 1u << k;
			/*
			 * The output buffer first holds oneDNN's result for the negated
			 * input: an element the version leaves unwritten is wrong.
			 */
			versions[1] = vd;
			set_input(q, in, ni, -1.0f);
			EXPECT_EQ(0, exec_run_block(em, q, 0, 2, versions, &sets[s], &st));
			set_input(q, in, ni, 1.0f);
			versions[1] = v;
			EXPECT_EQ(0, exec_run_block(em, q, 0, 2, versions, &sets[s], &st));
			EXPECT_EQ(0, exec_query_read_output(q, 1, got, (size_t)no));
			ref_compare(got, ref, no, &err, &max_ref);
			ref_compare(got, onednn, no, &err_dnn, &max_dnn);
			EXPECT_LE(err, TOL * (1.0f + max_ref))
			TH_LOG("case %d, %s (%s) on %d cores: max err %g, max |ref| %g", ci,
			       names[k], exec_layer_impl(em, 1, v, sets[s].nr), sets[s].nr, err,
			       max_ref);
			EXPECT_LE(err_dnn, TOL * (1.0f + max_dnn))
			TH_LOG("case %d, %s against onednn on %d cores: max diff %g", ci, names[k],
			       sets[s].nr, err_dnn);
		}
	}
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
	free(in);
	free(ref);
	free(got);
	free(onednn);
	return offered;
}

TEST_F(deconv, versions__match_reference_and_onednn_on_every_shape)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned int offered =
			check_case(_metadata, self->sets, self->nr_sets, &cases[i], (int)i);

		/* gemm-col2im takes every shape; onednn is always there */
		EXPECT_EQ(6u, offered & 6u) TH_LOG("case %zu: versions offered %#x", i, offered);
	}
}

/* The shuffle is offered exactly where each input pixel owns its own block of outputs. */
TEST_F(deconv, matmul_shuffle__offered_only_where_stride_is_kernel)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct exec_options opts = { .cpus = self->sets[0] };
		struct model *m = deconv_model(&cases[i]);
		struct coloc_err cerr = { 0 };
		struct exec_model *em;

		ASSERT_NE(NULL, m);
		em = exec_model_load(m, &opts, &cerr);
		ASSERT_NE(NULL, em) TH_LOG("case %zu: %s", i, coloc_err_str(&cerr));
		EXPECT_EQ(stride_is_kernel(&cases[i]),
			  exec_layer_version_index(em, 1, "matmul-shuffle") >= 0)
		TH_LOG("case %zu", i);
		/* where it is offered it is the first version: what --kernel 0 runs */
		if (stride_is_kernel(&cases[i]))
			EXPECT_EQ(0, exec_layer_version_index(em, 1, "matmul-shuffle"));
		exec_model_free(em);
		model_free(m);
	}
}

/*
 * phase-conv is offered exactly where every phase is a stride-1 conv with
 * pads >= 0 and the shuffle does not apply (the cases' `phase`), and there
 * it is the first version: what --kernel 0 and an unprofiled model run.
 */
TEST_F(deconv, phase_conv__offered_where_every_phase_is_a_padded_conv)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct exec_options opts = { .cpus = self->sets[0] };
		struct model *m = deconv_model(&cases[i]);
		struct coloc_err cerr = { 0 };
		struct exec_model *em;

		ASSERT_NE(NULL, m);
		em = exec_model_load(m, &opts, &cerr);
		ASSERT_NE(NULL, em) TH_LOG("case %zu: %s", i, coloc_err_str(&cerr));
		EXPECT_EQ(cases[i].phase, exec_layer_version_index(em, 1, "phase-conv") >= 0)
		TH_LOG("case %zu", i);
		if (cases[i].phase)
			EXPECT_EQ(0, exec_layer_version_index(em, 1, "phase-conv"));
		/* one convolution per phase: stride_h x stride_w of them */
		if (cases[i].phase) {
			char phases[16];

			snprintf(phases, sizeof(phases), " x%d ", cases[i].sh * cases[i].sw);
			EXPECT_NE(NULL, strstr(exec_layer_impl(em, 1, 0, 1), phases))
			TH_LOG("case %zu: %s", i, exec_layer_impl(em, 1, 0, 1));
		}
		exec_model_free(em);
		model_free(m);
	}
}

/* A model loaded for oneDNN's default keeps its deconvolution, and it matches the reference. */
TEST_F(deconv, load_default__runs_onednn_deconvolution)
{
	struct exec_options opts = { .cpus = self->sets[0] };
	struct model *m = deconv_model(&cases[6]);
	struct coloc_err cerr = { 0 };
	int64_t ni, no;
	float *in, *ref, *got, err, max_ref;
	const float *ins[1];
	struct exec_model *em;
	struct exec_query *q;
	struct exec_block_stats st;
	int versions[2] = { 0, 0 };

	ASSERT_NE(NULL, m);
	ni = model_shape_elems(&m->layers[0].out);
	no = model_shape_elems(&m->layers[1].out);
	in = malloc((size_t)ni * sizeof(float));
	ref = malloc((size_t)no * sizeof(float));
	got = malloc((size_t)no * sizeof(float));
	ASSERT_TRUE(in && ref && got);
	for (int64_t i = 0; i < ni; i++)
		in[i] = rnd();
	ins[0] = in;
	ASSERT_EQ(0, ref_layer(m, 1, ins, ref));
	em = exec_model_load_default(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	EXPECT_EQ(1, exec_layer_nr_versions(em, 1));
	EXPECT_EQ(NULL, strstr(exec_layer_impl(em, 1, 0, 1), "col2im"));
	q = exec_query_new(em);
	ASSERT_NE(NULL, q);
	memcpy(exec_query_input(q, 0), in, (size_t)ni * sizeof(float));
	ASSERT_EQ(0, exec_run_block(em, q, 0, 2, versions, &self->sets[0], &st));
	ASSERT_EQ(0, exec_query_read_output(q, 1, got, (size_t)no));
	ref_compare(got, ref, no, &err, &max_ref);
	EXPECT_LE(err, TOL * (1.0f + max_ref));
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
	free(in);
	free(ref);
	free(got);
}

TEST_HARNESS_MAIN
