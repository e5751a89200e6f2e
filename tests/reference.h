/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Plain-C reference operators for the executor tests: simple loops over
 * dense tensors in logical order ([N, C, H, W], row-major), written for
 * reading, not speed. ref_layer() runs one layer of a struct model with the
 * parameters exec_layer_params_generate() gives (batch norm applied as its
 * own step, not folded), so a whole model can be checked end to end.
 *
 * Also a small builder for hand-made models: the tests fill each layer's
 * output shape themselves.
 */
#ifndef COLOC_TESTS_REFERENCE_H
#define COLOC_TESTS_REFERENCE_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

/* alpha: leaky_relu's and hard_sigmoid's slope; beta: hard_sigmoid's offset */
void ref_act(float *x, int64_t n, enum model_act act, float alpha, float beta);
/* in [N][C][H][W], w [OC][C/g][kh][kw], bias [OC] or NULL; out [N][OC][OH][OW]. */
void ref_conv(const float *in, const int64_t in_dims[4], const float *w, const float *bias,
	      const struct model_conv *c, const int64_t out_dims[4], float *out);
/* y = gamma * (x - mean) / sqrt(var + eps) + beta per channel of [N][C][HW]. */
void ref_batch_norm(float *x, int64_t n, int64_t c, int64_t hw, const float *gamma,
		    const float *beta, const float *mean, const float *var, float eps);
/* x [M][K] @ w [K][N] (+ bias [N]). */
void ref_fc(const float *x, const float *w, const float *bias, int64_t m, int64_t k, int64_t n,
	    float *out);
/* a [B][M][K] @ b [Bb][K][N] (or [Bb][N][K] with transpose_b) * alpha, Bb = B or 1. */
void ref_matmul(const float *a, const float *b, int64_t batch, int64_t b_batch, int64_t m,
		int64_t k, int64_t n, int transpose_b, float alpha, float *out);
void ref_pool(const float *in, const int64_t in_dims[4], const struct model_pool *p,
	      const int64_t out_dims[4], float *out);
/* out = a op broadcast(b): b's shape right-aligned to a's, size-1 dims repeat. */
void ref_binary(enum model_op op, const float *a, const struct model_shape *as, const float *b,
		const struct model_shape *bs, float *out);
void ref_concat(const float *const *ins, const struct model_shape *const *shapes, int nr, int axis,
		float *out);
void ref_layer_norm(const float *x, int64_t rows, int64_t d, const float *gamma, const float *beta,
		    float eps, float *out);
void ref_softmax(const float *x, const struct model_shape *s, int axis, float *out);
/* ONNX LRN across channels: x / (k + alpha / size * sum of squares)^beta. */
void ref_lrn(const float *x, const int64_t dims[4], int size, float alpha, float beta, float k,
	     float *out);
void ref_transpose(const float *x, const struct model_shape *s, const int *perm, float *out);
void ref_slice(const float *x, const struct model_shape *s, int axis, int64_t start, int64_t len,
	       float *out);
/* Transposed convolution, weights [IC][OC/groups][kh][kw] (ONNX's ConvTranspose). */
void ref_deconv(const float *in, const int64_t in_dims[4], const float *w, const float *bias,
		const struct model_conv *c, const int64_t out_dims[4], float *out);
/* Mean, max, min or sum of x over r's axes (kept as dims of 1). */
void ref_reduce(const float *x, const struct model_shape *s, const struct model_reduce *r,
		float *out);
/* x with p's border of p->value before and after each dim. */
void ref_pad(const float *x, const struct model_shape *s, const struct model_pad *p, float *out);
/* models/README.md's resize of [N, C, H, W] to out's H x W. */
void ref_resize(const float *x, const int64_t in[4], bool linear, const int64_t out[4], float *y);
/* out[i] = table[ids[i]] rows of dim floats. */
void ref_embed(const float *ids, int64_t n, const float *table, int64_t dim, float *out);

/* Layer li of m from its inputs' outputs (dense logical); returns 0 or -errno. */
int ref_layer(const struct model *m, int li, const float *const *ins, float *out);

/* Builder: a model with room for max_layers, freed with model_free(). */
struct model *ref_model_new(const char *name, uint32_t seed, int max_layers);
/* Appends a layer with the given inputs and output dims; returns it to fill the rest. */
struct model_layer *ref_model_add(struct model *m, enum model_op op, const char *name, int nr_in,
				  const int *inputs, int ndims, const int64_t *dims);
/* A 1x1 conv to oc channels, stride 1, no padding, with a bias or not. */
struct model_conv ref_conv1x1(int64_t oc, bool bias);
/*
 * Appends a k x k conv of in to oc channels (stride and pad on every side
 * the same), with a batch norm (bn) or else a bias, and act; returns its index.
 */
int ref_model_add_conv(struct model *m, int in, int64_t oc, int k, int stride, int pad, bool bn,
		       enum model_act act);
/* Appends a 1x1 conv of in to oc channels, stride 1, with a bias and act; returns its index. */
int ref_model_add_conv1x1(struct model *m, int in, int64_t oc, enum model_act act);

/* max |a - b| and max |b| over n elements. */
void ref_compare(const float *got, const float *want, int64_t n, float *max_err, float *max_ref);

#endif /* COLOC_TESTS_REFERENCE_H */
