// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Swish (x * sigmoid(x)) in place over a layer's output, the step after a
 * conv whose swish is not a oneDNN post-op (exec_conv.c says when; the
 * measurements are in docs/measurements/executor.md). exp(-|x|) as 2^n
 * times a polynomial of the fraction, one division, no table: a loop the
 * compiler vectorizes, built for AVX-512, AVX2 and the baseline and picked
 * at load by the CPU. The team splits the elements in equal runs, where
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

/*
 * sigmoid(|x|) = 1 / (1 + e) with e = exp(-|x|) (in (0, 1], no overflow),
 * and sigmoid(-|x|) = e / (1 + e): relative errors of 1e-6 and up to 3e-6
 * at |x| = 87 (the sixth-degree Taylor polynomial of 2^f on [-1/2, 1/2],
 * and the rounding of |x| log2(e), which grows with |x|). Past 87, where
 * e would leave the normal floats, e is 0: x for x > 0, -0 below (NaN for
 * -inf, as x * sigmoid(x) is in IEEE arithmetic); NaN stays NaN.
 */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
swish_run(float *restrict x, int64_t n)
{
#pragma omp simd
	for (int64_t i = 0; i < n; i++) {
		float v = x[i], a = fabsf(v);
		bool far = !(a < 87.0f);
		float t, k, f, p, e, r;
		union {
			int32_t i;
			float f;
		} scale;

		a = far ? 87.0f : a;
		t = a * -1.44269504f; /* -|x| log2(e), in [-125.6, 0] */
		k = (t + 12582912.0f) - 12582912.0f; /* rounded to an integer */
		f = t - k;
		p = 1.5353362e-4f;
		p = p * f + 1.3398874e-3f;
		p = p * f + 9.6183969e-3f;
		p = p * f + 5.5503261e-2f;
		p = p * f + 2.4022652e-1f;
		p = p * f + 6.9314718e-1f;
		p = p * f + 1.0f;
		scale.i = ((int32_t)k + 127) << 23;
		e = far ? 0.0f : p * scale.f;
		r = 1.0f / (1.0f + e);
		x[i] = v * (v >= 0.0f ? r : e * r);
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
