// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The dense operators against the plain-C reference (tests/ops_fixture.h):
 * fc (2-D with bias, 3-D with gelu), matmul (batched, transposed b with
 * alpha, a single batch's rows split, b broadcast) and embed.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "reference.h"
#include "ops_fixture.h"

static void check_fc(struct __test_metadata *_metadata, int ndims, const int64_t *in_dims,
		     int64_t out, bool bias, enum model_act act)
{
	struct model *m = ref_model_new("fc", 11, 4);
	int in = add_input(m, ndims, in_dims);
	int64_t od[MODEL_MAX_DIMS];
	struct model_layer *l;

	memcpy(od, in_dims, sizeof(int64_t) * (size_t)ndims);
	od[ndims - 1] = out;
	l = ref_model_add(m, MODEL_OP_FC, "fc", 1, &in, ndims, od);
	l->fc.out_features = out;
	l->fc.bias = bias;
	l->act = act;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, fc__2d_with_bias_matches_reference)
{
	int64_t d[2] = { 3, 64 };

	check_fc(_metadata, 2, d, 40, true, MODEL_ACT_NONE);
}

TEST_F(ops, fc__3d_gelu_matches_reference)
{
	int64_t d[3] = { 1, 5, 48 };

	check_fc(_metadata, 3, d, 96, true, MODEL_ACT_GELU);
}

static void check_matmul(struct __test_metadata *_metadata, int nd, const int64_t *a,
			 const int64_t *b, const int64_t *o, bool tb, float alpha)
{
	struct model *m = ref_model_new("matmul", 3, 4);
	int ins[2];
	struct model_layer *l;

	ins[0] = add_input(m, nd, a);
	ins[1] = add_input(m, nd, b);
	l = ref_model_add(m, MODEL_OP_MATMUL, "mm", 2, ins, nd, o);
	l->matmul.transpose_b = tb;
	l->matmul.alpha = alpha;
	check_model(_metadata, m);
	model_free(m);
}

TEST_F(ops, matmul__batched_matches_reference)
{
	int64_t a[4] = { 2, 3, 5, 8 }, b[4] = { 2, 3, 8, 6 }, o[4] = { 2, 3, 5, 6 };

	check_matmul(_metadata, 4, a, b, o, false, 1.0f);
}

TEST_F(ops, matmul__transpose_b_alpha_matches_reference)
{
	int64_t a[4] = { 1, 4, 7, 16 }, b[4] = { 1, 4, 9, 16 }, o[4] = { 1, 4, 7, 9 };

	check_matmul(_metadata, 4, a, b, o, true, 0.125f);
}

TEST_F(ops, matmul__single_batch_row_split_matches_reference)
{
	int64_t a[3] = { 1, 7, 8 }, b[3] = { 1, 8, 5 }, o[3] = { 1, 7, 5 };

	check_matmul(_metadata, 3, a, b, o, false, 2.0f);
}

TEST_F(ops, matmul__broadcast_b_matches_reference)
{
	int64_t a[3] = { 3, 4, 8 }, b[3] = { 1, 8, 5 }, o[3] = { 3, 4, 5 };

	check_matmul(_metadata, 3, a, b, o, false, 1.0f);
}

TEST_F(ops, embed__looks_up_rows)
{
	struct model *m = ref_model_new("embed", 37, 4);
	int64_t d[2] = { 1, 7 }, od[3] = { 1, 7, 16 };
	int in = add_input(m, 2, d);
	struct model_layer *l = ref_model_add(m, MODEL_OP_EMBED, "emb", 1, &in, 3, od);
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct exec_layer_params p;
	struct exec_model *em;
	struct exec_query *q;
	float got[7 * 16], *ids;
	struct coloc_err cerr = { 0 };

	l->embed = (struct model_embed){ .vocab = 50, .dim = 16 };
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	q = exec_query_new(em);
	ids = exec_query_input(q, in);
	for (int i = 0; i < 7; i++)
		ids[i] = (float)((i * 13 + 5) % 50);
	ASSERT_EQ(0, exec_run_block(em, q, 0, 2, NULL, &opts.cpus, NULL));
	ASSERT_EQ(0, exec_query_read_output(q, 1, got, 7 * 16));
	ASSERT_EQ(0, exec_layer_params_generate(m, 1, &p));
	for (int i = 0; i < 7; i++)
		for (int j = 0; j < 16; j++)
			ASSERT_EQ(p.weights[((i * 13 + 5) % 50) * 16 + j], got[i * 16 + j]);
	/* An id outside the vocabulary is an error, not a wild read. */
	ids[3] = 50.0f;
	ASSERT_EQ(-ERANGE, exec_run_block(em, q, 0, 2, NULL, &opts.cpus, NULL));
	exec_layer_params_free(&p);
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
}

TEST_HARNESS_MAIN
