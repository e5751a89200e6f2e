// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The second half of a deconv's "gemm-col2im" version (exec_deconv.c): the
 * GEMM has written every input pixel's contribution to each of its kh x kw
 * taps; each output pixel now gathers the taps that land on it and adds
 * them to its bias. A gather, not a scatter: the team splits the output
 * rows, so no two threads write the same element and nothing is atomic.
 * Built for AVX-512, AVX2 and the baseline, picked at load by the CPU.
 */
#include <string.h>
#include "exec_internal.h"

/* The input row or column a tap reads for output position o, or -1. */
static inline int64_t tap_src(int64_t o, int pad, int k, int dil, int stride, int64_t in)
{
	int64_t t = o + pad - (int64_t)k * dil;

	if (t < 0 || t % stride)
		return -1;
	t /= stride;
	return t < in ? t : -1;
}

/*
 * One output row: its bias, then tap by tap (ky, kx) the input row's
 * pixels in order, so each tap streams through cols at a constant stride.
 */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
col2im_row(const struct exec_col2im *c, const float *cols, float *out, int64_t row)
{
	int64_t img = row / c->oh, oy = row % c->oh, oc = c->g * c->ocg;
	int64_t plane = c->n * c->ih * c->iw, kk = (int64_t)c->kh * c->kw;
	float *restrict orow = out + row * c->ow * oc;

	for (int64_t ox = 0; ox < c->ow; ox++) {
		if (c->bias)
			memcpy(orow + ox * oc, c->bias, (size_t)oc * sizeof(float));
		else
			memset(orow + ox * oc, 0, (size_t)oc * sizeof(float));
	}
	for (int ky = 0; ky < c->kh; ky++) {
		int64_t iy = tap_src(oy, c->pt, ky, c->dh, c->sh, c->ih);

		if (iy < 0)
			continue;
		for (int kx = 0; kx < c->kw; kx++) {
			for (int64_t ix = 0; ix < c->iw; ix++) {
				int64_t ox = ix * c->sw - c->pl + (int64_t)kx * c->dw;
				int64_t pix = (img * c->ih + iy) * c->iw + ix;

				if (ox < 0 || ox >= c->ow)
					continue;
				for (int64_t gi = 0; gi < c->g; gi++) {
					const float *restrict s =
						cols + ((gi * plane + pix) * kk + ky * c->kw + kx) *
							       c->ocg;
					float *restrict d = orow + ox * oc + gi * c->ocg;

#pragma omp simd
					for (int64_t j = 0; j < c->ocg; j++)
						d[j] += s[j];
				}
			}
		}
	}
}

int exec_col2im_run(const struct exec_query *q, const struct exec_col2im *c, int nr_threads)
{
	const float *cols = exec_buf_ptr(q, 0, &c->cols);
	float *out = exec_buf_ptr(q, 0, &c->dst);
	int64_t rows = c->n * c->oh;

#pragma omp parallel for num_threads(nr_threads) schedule(static)
	for (int64_t r = 0; r < rows; r++)
		col2im_row(c, cols, out, r);
	return 0;
}
