/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The arithmetic of a sliding window (convolution, pooling) along one axis,
 * in one place for the model parser (model_shape.c) and the ONNX importer
 * (onnx_lower.c). k_eff is the window's span in input pixels: with
 * dilation d, d * (k - 1) + 1.
 */
#ifndef COLOC_EXECUTOR_WINDOW_H
#define COLOC_EXECUTOR_WINDOW_H

#include <stdint.h>

/*
 * Output length of a window of k_eff pixels sliding by stride over padded_in
 * pixels (input plus padding on both sides), whole windows only. The caller
 * has checked padded_in >= k_eff and stride >= 1.
 */
int64_t window_out_len(int64_t padded_in, int64_t k_eff, int64_t stride);

/*
 * The same rounded up (ceil_mode in Caffe and ONNX): the fewest windows,
 * stride apart from 0, that cover all of padded_in; the last may run past
 * its end (the .model parser then drops one starting in the padding).
 */
int64_t window_out_len_ceil(int64_t padded_in, int64_t k_eff, int64_t stride);

/*
 * Output length of a transposed window (deconvolution) over in pixels: the
 * input spread stride apart, each pixel a window of k_eff, less the
 * padding on both sides (pad_total). Below 1 when the padding eats the
 * output; the caller refuses that.
 */
int64_t window_transposed_len(int64_t in, int64_t k_eff, int64_t stride, int64_t pad_total);

/*
 * SAME padding along the axis (TensorFlow's, ONNX's SAME_*): the total that
 * makes the output ceil(in / stride) long, 0 when none is needed. Split it
 * as the format says (the odd pixel at the end for SAME_UPPER).
 */
int64_t window_same_pad_total(int64_t in, int64_t k_eff, int64_t stride);

#endif /* COLOC_EXECUTOR_WINDOW_H */
