// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Swish (x * sigmoid(x)) in place over a layer's output, the step after a
 * conv whose swish is not a oneDNN post-op (exec_conv.c says when; the
 * measurements are in docs/measurements/executor.md). exp(-|x|) as 2^-k
 * times a polynomial, one division, no table: a loop the compiler
 * vectorizes, built for AVX-512, AVX2 and the baseline and picked at load
 * by the CPU. The team splits the elements in equal runs, where
 * there are enough of them.
 */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include "exec_internal.h"

/* Floats a thread's run is a multiple of: whole cache lines. */
#define SWISH_GRAIN 16
/*
 * Below this many floats (a few microseconds of one thread's work) the
 * caller does it all: no parallel region, whose fork and join can cost
 * more (squeeze-excite's 1x1 outputs have tens of elements).
 */
#define SWISH_TEAM_MIN 16384

/* A float and its bits, for selects by masks (which vectorize on every ISA) */
union swish_bits {
	float f;
	int32_t i;
};

/*
 * sigmoid(|x|) = 1 / (1 + e) with e = exp(-|x|) (in (0, 1], no overflow),
 * and sigmoid(-|x|) = e / (1 + e). exp(-|x|) = 2^-k exp(-r) with k the
 * integer nearest |x| log2(e) and r = |x| - k ln2 (ln2 in two parts, so r
 * is exact to a float's precision, |r| <= ln2 / 2), exp(-r) by its Taylor
 * polynomial of degree 6: relative error under 4e-7 over the range, with
 * or without fused multiply-adds. Past 87, where e would leave the normal
 * floats, e is 0: x for x > 0, -0 below (NaN for -inf, as x * sigmoid(x)
 * is in IEEE arithmetic); NaN stays NaN. The selects are bit masks, not
 * branches or conditional arithmetic, so that each clone vectorizes
 * (docs/measurements/executor.md).
 */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
swish_run(float *restrict x, int64_t n)
{
	const int32_t cap = 0x42ae0000; /* 87.0f */

#pragma omp simd
	for (int64_t i = 0; i < n; i++) {
		union swish_bits v = { .f = x[i] }, a, scale, e, one = { .f = 1.0f }, f;
		int32_t abits = v.i & 0x7fffffff;
		int32_t far = -(abits >= cap); /* all ones past 87, for inf and for NaN */
		int32_t neg = v.i >> 31; /* all ones below 0 (and for -0) */
		float k, r, p, s;

		a.i = (abits & ~far) | (cap & far); /* min(|x|, 87) */
		k = (a.f * 1.44269504f + 12582912.0f) - 12582912.0f; /* round(|x| log2(e)) */
		r = k * 0.693145751953125f - a.f + k * 1.42860677e-6f; /* -(|x| - k ln2) */
		p = 1.0f / 720;
		p = p * r + 1.0f / 120;
		p = p * r + 1.0f / 24;
		p = p * r + 1.0f / 6;
		p = p * r + 0.5f;
		p = p * r + 1.0f;
		p = p * r + 1.0f;
		scale.i = (127 - (int32_t)k) << 23;
		e.f = p * scale.f;
		e.i &= ~far;
		s = 1.0f / (1.0f + e.f);
		f.i = (one.i & ~neg) | (e.i & neg); /* 1 above 0, e below */
		x[i] = v.f * (s * f.f);
	}
}

void exec_swish(float *x, int64_t n, int nr_threads)
{
	int64_t grains = (n + SWISH_GRAIN - 1) / SWISH_GRAIN;

	if (nr_threads <= 1 || n < SWISH_TEAM_MIN) {
		swish_run(x, n);
		return;
	}
#pragma omp parallel num_threads(nr_threads)
	{
		int t = omp_get_thread_num(), nt = omp_get_num_threads();
		int64_t g0 = grains * t / nt, g1 = grains * (t + 1) / nt;
		int64_t i0 = g0 * SWISH_GRAIN, i1 = g1 * SWISH_GRAIN < n ? g1 * SWISH_GRAIN : n;

		if (i1 > i0)
			swish_run(x + i0, i1 - i0);
	}
}

int exec_swish_run(const struct exec_query *q, const struct exec_step *s, int nr_threads)
{
	exec_swish(exec_buf_ptr(q, 0, &s->dst), s->swish_elems, nr_threads);
	return 0;
}
