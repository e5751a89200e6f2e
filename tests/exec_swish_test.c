// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Swish as a step of its own after a conv (executor/exec_swish.c): the
 * loop against x / (1 + exp(-x)) in double, to a relative error, over the
 * whole float range and on a team of two; and which convs take the step
 * (one with swish) and which keep oneDNN's post-op (a swish before a
 * fused residual add). The outputs of every conv version with swish
 * against the reference are ops_conv_test's and executor_test's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "exec_internal.h"
#include "reference.h"

static double swish_ref(float x)
{
	return (double)x / (1.0 + exp(-(double)x));
}

/*
 * Every 1/64 from -100 to 100, and values near 0: relative error under
 * 1e-6 up to |x| = 87, whether the clone the CPU picks fuses multiply-adds
 * or not (sigmoid(-|x|) as 1 - 1/(1+e) would fail far out on the negative
 * side: x = -20 gives 0, not -4e-8), and past -87 no more than the true
 * value's 1e-36.
 */
TEST(swish__relative_error_over_the_range)
{
	int n = 200 * 64 + 1 + 4;
	float *x = malloc((size_t)n * sizeof(float)), *in = malloc((size_t)n * sizeof(float));
	double worst = 0; /* the error over its bound at x */
	float worst_at = 0;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, in);
	for (int i = 0; i < n - 4; i++)
		in[i] = -100.0f + (float)i / 64.0f;
	in[n - 4] = 1e-30f;
	in[n - 3] = -1e-30f;
	in[n - 2] = 0.0f;
	in[n - 1] = -0.0f;
	memcpy(x, in, (size_t)n * sizeof(float));
	exec_swish(x, n, 1);
	for (int i = 0; i < n; i++) {
		double want = swish_ref(in[i]), err;

		if (in[i] <= -87.0f) {
			EXPECT_LE(fabsf(x[i]), 1e-36f) TH_LOG("swish(%g) = %g", in[i], x[i]);
			continue;
		}
		if (want == 0)
			err = fabs(x[i]);
		else
			err = fabs(x[i] - want) / fabs(want);
		err /= 1e-6;
		if (err > worst) {
			worst = err;
			worst_at = in[i];
		}
	}
	EXPECT_LT(worst, 1.0) TH_LOG("relative error %g of its bound at x = %g", worst, worst_at);
	EXPECT_EQ(0.0f, x[n - 2]);
	free(x);
	free(in);
}

/* swish(-1e30) is -0, not -1e30 times the smallest normal float */
TEST(swish__nan_stays_nan_inf_stays_inf_far_negatives_are_zero)
{
	float x[3] = { NAN, INFINITY, -1e30f };

	exec_swish(x, 3, 1);
	EXPECT_TRUE(isnan(x[0]));
	EXPECT_EQ(INFINITY, x[1]);
	EXPECT_EQ(0.0f, x[2]);
}

/* A length that is no multiple of the team's runs: each element once, as on one thread. */
TEST(swish__two_threads_give_one_threads_result)
{
	int64_t n = 100003;
	float *a = malloc((size_t)n * sizeof(float)), *b = malloc((size_t)n * sizeof(float));

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	for (int64_t i = 0; i < n; i++)
		a[i] = b[i] = (float)((i * 7919) % 2001 - 1000) / 50.0f;
	exec_swish(a, n, 1);
	exec_swish(b, n, 2);
	EXPECT_EQ(0, memcmp(a, b, (size_t)n * sizeof(float)));
	free(a);
	free(b);
}

/*
 * in -> a -> b -> c (swish) -> add(c, a): c's swish precedes the sum fused
 * into it, so it stays oneDNN's post-op; b's (also swish) runs as the step
 * after it, at every version and core count.
 */
TEST(swish__a_step_after_the_conv_unless_an_add_is_fused)
{
	struct model *m = ref_model_new("swish", 7, 6);
	int64_t d[4] = { 1, 32, 8, 8 };
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct coloc_err cerr = { 0 };
	struct exec_model *em;
	int a, b, c, add, in = 0, sum[2];

	ref_model_add(m, MODEL_OP_INPUT, "in", 0, NULL, 4, d);
	a = ref_model_add_conv1x1(m, in, 32, MODEL_ACT_NONE);
	b = ref_model_add_conv1x1(m, a, 32, MODEL_ACT_SWISH);
	c = ref_model_add_conv1x1(m, b, 32, MODEL_ACT_SWISH);
	sum[0] = c;
	sum[1] = a;
	add = m->nr_layers;
	ref_model_add(m, MODEL_OP_ADD, "add", 2, sum, 4, d);
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	for (int v = 0; v < exec_layer_nr_versions(em, b); v++) {
		EXPECT_NE(NULL, strstr(exec_layer_impl(em, b, v, 1), " +swish"))
		TH_LOG("version %d of the swish conv runs %s", v, exec_layer_impl(em, b, v, 1));
	}
	ASSERT_NE(NULL, strstr(exec_layer_impl(em, c, 0, 1), " +add"))
	TH_LOG("the add was not fused: %s", exec_layer_impl(em, add, 0, 1));
	for (int v = 0; v < exec_layer_nr_versions(em, c); v++) {
		EXPECT_EQ(NULL, strstr(exec_layer_impl(em, c, v, 1), " +swish"))
		TH_LOG("version %d of the conv with the add runs %s", v,
		       exec_layer_impl(em, c, v, 1));
	}
	exec_model_free(em);
	model_free(m);
}

TEST_HARNESS_MAIN
