/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the transposed convolution's versions share: the layer's shape,
 * its input as NHWC and its bias (exec_deconv.c), and the phase-conv
 * version (exec_deconv_phase.c), which deconv_build() calls.
 */
#ifndef COLOC_EXEC_DECONV_H
#define COLOC_EXEC_DECONV_H

#include "exec_build.h"

struct deconv_shape {
	int64_t n, ic, ih, iw, oc, oh, ow, g, icg, ocg;
	int kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
	bool bias;
};

/*
 * Stride == kernel, no padding (nor output padding), no dilation, one
 * group: the matmul-shuffle version's shapes.
 */
bool deconv_is_shuffle(const struct deconv_shape *ds);
/* Input 0 as NHWC, reordered into the arena when it is not already: *at. */
int deconv_input(struct builder *b, const struct deconv_shape *ds, struct exec_buf *at);
/* The bias [OC] in its one dense copy, or NULL without one. */
int deconv_bias(struct builder *b, const struct deconv_shape *ds, void **bias);
/*
 * Where tap f (0..k-1) of a kernel axis turned by 180 degrees sits in
 * layer_weights.w_phases for stride s: the taps grouped by f % s, each
 * group in order, so that a phase's taps f, f + s, ... are consecutive.
 */
int deconv_phased_index(int f, int k, int s);
/* The phase-conv version; -ENOENT where it does not apply (exec_deconv_phase.c). */
int deconv_phase_conv(struct builder *b, const struct deconv_shape *ds);

#endif /* COLOC_EXEC_DECONV_H */
