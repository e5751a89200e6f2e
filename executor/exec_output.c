// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A query's outputs read out in dense logical order (exec_query_read_output),
 * as a served answer carries them. A layer's canonical layout is plain or
 * NHWC (exec_layer.c): plain is one memcpy; NHWC a transpose of each
 * image's [spatial][channels] into [channels][spatial], tile by tile, on
 * the calling thread: on the block's team it was faster at the median and
 * far slower at the tail on a loaded machine (docs/measurements/
 * serving-latency.md, 2026-12-06 15:11-16:02, the output copy).
 */
#include <errno.h>
#include <string.h>
#include "exec_build.h"

/* A transpose tile: 32 x 32 floats, 4 KiB read and 4 KiB written, stay in L1. */
#define OUTPUT_TILE 32

/* dst[c][p] = src[p][c] for an image of nr_spatial x nr_channels. */
static void transpose_image(const float *restrict src, float *restrict dst, int64_t nr_spatial,
			    int64_t nr_channels)
{
	for (int64_t c0 = 0; c0 < nr_channels; c0 += OUTPUT_TILE) {
		int64_t c_end = c0 + OUTPUT_TILE < nr_channels ? c0 + OUTPUT_TILE : nr_channels;

		for (int64_t p0 = 0; p0 < nr_spatial; p0 += OUTPUT_TILE) {
			int64_t p_end = p0 + OUTPUT_TILE < nr_spatial ? p0 + OUTPUT_TILE : nr_spatial;

			for (int64_t c = c0; c < c_end; c++)
				for (int64_t p = p0; p < p_end; p++)
					dst[c * nr_spatial + p] = src[p * nr_channels + c];
		}
	}
}

static void read_nhwc(const float *src, const dnnl_memory_desc_t *md, float *dst)
{
	int64_t nr_spatial = md->dims[2] * md->dims[3], image = md->dims[1] * nr_spatial;

	for (int64_t n = 0; n < md->dims[0]; n++)
		transpose_image(src + n * image, dst + n * image, nr_spatial, md->dims[1]);
}

int exec_query_read_output(const struct exec_query *q, int layer, float *dst, size_t nr_elems)
{
	const dnnl_memory_desc_t *md;
	const float *src;

	if (!q || !dst || layer < 0 || layer >= q->em->graph->nr_layers)
		return -EINVAL;
	/* a live query's other buffers hold later layers' outputs by now */
	if (q->live && !q->em->live_kept[layer])
		return -ENODATA;
	md = &q->em->layers[layer].out_md;
	if ((int64_t)nr_elems != model_shape_elems(&q->em->graph->layers[layer].out))
		return -EINVAL;
	src = exec_buf_ptr(q, 0, &(struct exec_buf){ .kind = EXEC_BUF_OUT, .index = layer });
	if (md_is_plain(md))
		memcpy(dst, src, nr_elems * sizeof(float));
	else if (md_is_nhwc(md))
		read_nhwc(src, md, dst);
	else
		return -EPROTO;
	return 0;
}
