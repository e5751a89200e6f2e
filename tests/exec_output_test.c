// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A query's outputs read out in logical order (executor/exec_output.c)
 * equal, bit for bit, an element-by-element walk of the layer's own
 * layout (its strides, written here): two NHWC outputs of a batch of two
 * whose channels (37 and 5) and spatial size (19 x 21) are no multiple of
 * the transpose's tile.
 */
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "exec_internal.h"
#include "reference.h"

/* The layer's output as its strides place it, in logical order. */
static void walk_output(const struct exec_query *q, int layer, float *dst, int64_t nr_elems)
{
	const dnnl_memory_desc_t *md = &q->em->layers[layer].out_md;
	const float *src = exec_buf_ptr(q, 0, &(struct exec_buf){ .kind = EXEC_BUF_OUT,
								  .index = layer });
	int64_t idx[DNNL_MAX_NDIMS] = { 0 };

	for (int64_t i = 0; i < nr_elems; i++) {
		int64_t off = 0;

		for (int d = 0; d < md->ndims; d++)
			off += idx[d] * md->format_desc.blocking.strides[d];
		dst[i] = src[off];
		for (int d = md->ndims - 1; d >= 0; d--) {
			if (++idx[d] < md->dims[d])
				break;
			idx[d] = 0;
		}
	}
}

TEST(read_output__nhwc_outputs_bit_for_bit_as_their_strides_say)
{
	struct model *m = ref_model_new("outputs", 11, 3);
	int64_t d[4] = { 2, 16, 19, 21 };
	struct exec_options opts = { .cpus = { .nr = 1, .cpus = { 0 } } };
	struct coloc_err cerr = { 0 };
	struct exec_query *q;
	struct exec_model *em;
	int outs[2];

	ref_model_add(m, MODEL_OP_INPUT, "in", 0, NULL, 4, d);
	outs[0] = ref_model_add_conv1x1(m, 0, 37, MODEL_ACT_NONE);
	outs[1] = ref_model_add_conv1x1(m, 0, 5, MODEL_ACT_NONE);
	em = exec_model_load(m, &opts, &cerr);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&cerr));
	q = exec_query_new_live(em, NULL);
	ASSERT_NE(NULL, q);
	exec_query_fill_inputs(q, m, 3);
	ASSERT_EQ(0, exec_run_block(em, q, 0, m->nr_layers, NULL, &opts.cpus, NULL));
	for (int i = 0; i < 2; i++) {
		const dnnl_memory_desc_t *md = &em->layers[outs[i]].out_md;
		int64_t n = model_shape_elems(&m->layers[outs[i]].out);
		float *got = malloc((size_t)n * sizeof(float));
		float *want = malloc((size_t)n * sizeof(float));

		ASSERT_TRUE(got && want);
		/* channels innermost: the read is a transpose, not a copy */
		EXPECT_EQ(1, md->format_desc.blocking.strides[1]);
		walk_output(q, outs[i], want, n);
		memset(got, 0xff, (size_t)n * sizeof(float));
		ASSERT_EQ(0, exec_query_read_output(q, outs[i], got, (size_t)n));
		EXPECT_EQ(0, memcmp(got, want, (size_t)n * sizeof(float)))
		TH_LOG("output %d (%lld floats) differs from its strides' walk", i, (long long)n);
		free(got);
		free(want);
	}
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
}

TEST_HARNESS_MAIN
