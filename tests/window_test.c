// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of executor/window.c, the sliding-window arithmetic the model parser
 * and the ONNX importer share, against brute force: the output length is the
 * number of window positions counted one by one, and SAME's total padding
 * the least padding whose counted output is ceil(in / stride), ceil_mode's
 * length the fewest windows that cover the input, and a transposed
 * window's length the pixels its scattered windows cover, over every input
 * length, window span, stride and padding up to small bounds.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include "kselftest_harness.h"
#include "window.h"

/* Window starts 0, stride, 2 stride, ... whose last pixel is inside padded_in. */
static int64_t positions(int64_t padded_in, int64_t k_eff, int64_t stride)
{
	int64_t n = 0;

	for (int64_t start = 0; start + k_eff <= padded_in; start += stride)
		n++;
	return n;
}

TEST(window_out_len__counts_every_whole_window)
{
	for (int64_t in = 1; in <= 40; in++)
		for (int64_t k = 1; k <= in; k++)
			for (int64_t s = 1; s <= 6; s++) {
				ASSERT_EQ(positions(in, k, s), window_out_len(in, k, s))
				TH_LOG("in %lld k %lld s %lld", (long long)in, (long long)k,
				       (long long)s);
			}
}

TEST(window_same_pad_total__least_padding_for_ceil_in_over_stride)
{
	for (int64_t in = 1; in <= 40; in++)
		for (int64_t k = 1; k <= 12; k++)
			for (int64_t s = 1; s <= 6; s++) {
				int64_t want_out = (in + s - 1) / s, pad = 0;

				while (positions(in + pad, k, s) < want_out)
					pad++;
				ASSERT_EQ(pad, window_same_pad_total(in, k, s))
				TH_LOG("in %lld k %lld s %lld", (long long)in, (long long)k,
				       (long long)s);
				ASSERT_EQ(want_out, positions(in + pad, k, s));
			}
}

/* The fewest windows, starting 0, stride, 2 stride, ..., that cover all of padded_in. */
static int64_t windows_covering(int64_t padded_in, int64_t k_eff, int64_t stride)
{
	int64_t n = 1;

	while ((n - 1) * stride + k_eff < padded_in)
		n++;
	return n;
}

TEST(window_out_len_ceil__the_fewest_windows_covering_the_input)
{
	for (int64_t in = 1; in <= 40; in++)
		for (int64_t k = 1; k <= in; k++)
			for (int64_t s = 1; s <= 6; s++) {
				ASSERT_EQ(windows_covering(in, k, s), window_out_len_ceil(in, k, s))
				TH_LOG("in %lld k %lld s %lld", (long long)in, (long long)k,
				       (long long)s);
				ASSERT_LE(window_out_len(in, k, s), window_out_len_ceil(in, k, s));
			}
}

TEST(window_transposed_len__the_pixels_the_scattered_windows_cover)
{
	for (int64_t in = 1; in <= 20; in++)
		for (int64_t k = 1; k <= 8; k++)
			for (int64_t s = 1; s <= 5; s++)
				for (int64_t pad = 0; pad <= 6; pad++) {
					/* input pixel i writes output [i s, i s + k) */
					int64_t last = 0;

					for (int64_t i = 0; i < in; i++)
						if (i * s + k > last)
							last = i * s + k;
					ASSERT_EQ(last - pad, window_transposed_len(in, k, s, pad))
					TH_LOG("in %lld k %lld s %lld pad %lld", (long long)in,
					       (long long)k, (long long)s, (long long)pad);
				}
}

TEST_HARNESS_MAIN
