// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A sliding window's output length and SAME padding (window.h). */
#include "window.h"

int64_t window_out_len(int64_t padded_in, int64_t k_eff, int64_t stride)
{
	return (padded_in - k_eff) / stride + 1;
}

int64_t window_out_len_ceil(int64_t padded_in, int64_t k_eff, int64_t stride)
{
	return (padded_in - k_eff + stride - 1) / stride + 1;
}

int64_t window_transposed_len(int64_t in, int64_t k_eff, int64_t stride, int64_t pad_total)
{
	return (in - 1) * stride - pad_total + k_eff;
}

int64_t window_same_pad_total(int64_t in, int64_t k_eff, int64_t stride)
{
	int64_t out = (in + stride - 1) / stride;
	int64_t total = (out - 1) * stride + k_eff - in;

	return total < 0 ? 0 : total;
}
