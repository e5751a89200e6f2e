/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the checking of a model file's layers shares between its files:
 * the layer being checked (struct shape_layer), its attributes read and
 * range-checked (model_shape_attr.c), and the table of ops with the shape
 * rule of each (model_shape_ops.c; the sliding-window ops' in
 * model_shape_window.c), which model_shape.c drives for every layer. Each
 * function returns 0 or a negative errno, with model_fail()'s message
 * naming the file, line, op and layer.
 */
#ifndef COLOC_EXECUTOR_MODEL_SHAPE_H
#define COLOC_EXECUTOR_MODEL_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "model_internal.h"

/* The largest dimension and element count a layer's output may have. */
#define SHAPE_MAX_DIM (1 << 24)
#define SHAPE_MAX_ELEMS (1LL << 32)

struct shape_attr {
	const char *key;
	size_t key_len;
	const char *val; /* NULL for a flag */
	bool used;
};

struct shape_layer {
	struct model_ctx *c;
	struct model_layer *l;
	struct shape_attr *attrs; /* one per token after the name */
	int nr_attrs;
	const struct model_shape *in[MODEL_MAX_INPUTS];
};

struct shape_op {
	const char *name;
	int min_inputs, max_inputs;
	bool fused_act;
	int (*rule)(struct shape_layer *il); /* checks the attributes and inputs, sets the output */
};

/* model_shape_ops.c: one entry per op, indexed by enum model_op. */
extern const struct shape_op shape_ops[MODEL_OP_COUNT];
/* model_shape_window.c: the rules of the sliding-window ops in shape_ops[]. */
int shape_conv(struct shape_layer *il);
int shape_deconv(struct shape_layer *il);
int shape_pool(struct shape_layer *il);

/* model_shape_attr.c */
/* Fails the layer with "OP 'NAME': message". */
int shape_fail(struct shape_layer *il, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The attribute key, marked used, or NULL. */
struct shape_attr *shape_attr(struct shape_layer *il, const char *key);
/* A valued attribute, or NULL when absent (an error when required). */
const char *shape_value(struct shape_layer *il, const char *key, bool required, int *err);
/* Whether flag key is there (an error if it has a value). */
int shape_flag(struct shape_layer *il, const char *key, bool *on);
/* An integer or a float in [min, max], def when absent and not required. */
int shape_int(struct shape_layer *il, const char *key, bool required, int64_t min, int64_t max,
	      int64_t def, int64_t *v);
int shape_float(struct shape_layer *il, const char *key, bool required, double min, double max,
		double def, float *v);
/* "3" (both) or "1x7" (height x width). */
int shape_pair(struct shape_layer *il, const char *key, bool required, int def, int *h, int *w);
/* Comma-separated integers into v[]; returns the count or a negative errno. */
int shape_int_list(struct shape_layer *il, const char *key, const char *s, char sep, int64_t min,
		   int64_t max, int64_t *v, int max_nr);
/* "P", "PHxPW", "T,L,B,R" or "same" (the flag tells the caller to work it out). */
int shape_pad(struct shape_layer *il, int pad[4], bool *same);
/* TensorFlow's SAME: output = ceil(in / stride), the odd pixel of padding at the end. */
void shape_same_pad(int64_t in, int k_eff, int stride, int *before, int *after);
/* Sets the layer's output shape, refusing a dim or a size over the limits above. */
int shape_set_out(struct shape_layer *il, int ndims, const int64_t *dims);
/* Input idx must have min..max dimensions. */
int shape_need_ndims(struct shape_layer *il, int idx, int min, int max);
/* macs/params as a product of factors, refusing overflow. */
int shape_product(struct shape_layer *il, uint64_t *out, int nr, ...);
/* Normalises axis (negative counts from the end) for ndims; refuses out of range. */
int shape_normalize_axis(struct shape_layer *il, const char *key, int64_t axis, int ndims,
			 int *out);
/* "[1,3,224,224]" */
void shape_format_shape(const struct model_shape *s, char *buf, size_t len);

#endif /* COLOC_EXECUTOR_MODEL_SHAPE_H */
