/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Folding an inference batch norm, y = (x - mean) * gamma / sqrt(var + eps)
 * + beta, into the convolution before it: its weights times the channel's
 * scale, its bias (b - mean) * scale + beta. One arithmetic for the ONNX
 * importer (onnx_lower_window.c, whose constants are doubles) and the
 * executor loading a .model's batch-norm parameters (exec_layer_weights.c,
 * floats): both compute in double and round each weight and bias to float
 * once, so the two paths give the same bits for the same parameters.
 */
#ifndef COLOC_EXECUTOR_BATCH_NORM_H
#define COLOC_EXECUTOR_BATCH_NORM_H

#include <math.h>

/* The channel's scale, gamma / sqrt(var + eps); the caller has checked var + eps > 0. */
static inline double batch_norm_scale(double gamma, double var, double eps)
{
	return gamma / sqrt(var + eps);
}

/* A bias b with the batch norm folded in: (b - mean) * scale + beta. */
static inline float batch_norm_bias(double b, double mean, double scale, double beta)
{
	return (float)((b - mean) * scale + beta);
}

#endif /* COLOC_EXECUTOR_BATCH_NORM_H */
