/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the checking of a model file's layers shares between its three
 * files: the layer being checked (struct infer_layer), its attributes read
 * and range-checked (model_infer_attr.c), and the table of ops with the
 * shape rule of each (model_infer_ops.c), which model_infer.c drives for
 * every layer. Each function returns 0 or a negative errno, with
 * model_fail()'s message naming the file, line, op and layer.
 */
#ifndef COLOC_EXECUTOR_MODEL_INFER_H
#define COLOC_EXECUTOR_MODEL_INFER_H

#include <stdbool.h>
#include <stdint.h>

#include "model_internal.h"

/* The largest dimension and element count a layer's output may have. */
#define INFER_MAX_DIM (1 << 24)
#define INFER_MAX_ELEMS (1LL << 32)

struct infer_attr {
	const char *key;
	size_t key_len;
	const char *val; /* NULL for a flag */
	bool used;
};

struct infer_layer {
	struct model_ctx *c;
	struct model_layer *l;
	struct infer_attr *attrs; /* one per token after the name */
	int nr_attrs;
	const struct model_shape *in[MODEL_MAX_INPUTS];
};

struct infer_op {
	const char *name;
	int min_inputs, max_inputs;
	bool fused_act;
	int (*infer)(struct infer_layer *il);
};

/* model_infer_ops.c: one entry per op, indexed by enum model_op. */
extern const struct infer_op infer_ops[MODEL_OP_COUNT];

/* model_infer_attr.c */
/* Fails the layer with "OP 'NAME': message". */
int infer_fail(struct infer_layer *il, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The attribute key, marked used, or NULL. */
struct infer_attr *infer_attr(struct infer_layer *il, const char *key);
/* A valued attribute, or NULL when absent (an error when required). */
const char *infer_value(struct infer_layer *il, const char *key, bool required, int *err);
/* Whether flag key is there (an error if it has a value). */
int infer_flag(struct infer_layer *il, const char *key, bool *on);
/* An integer or a float in [min, max], def when absent and not required. */
int infer_int(struct infer_layer *il, const char *key, bool required, int64_t min, int64_t max,
	      int64_t def, int64_t *v);
int infer_float(struct infer_layer *il, const char *key, bool required, double min, double max,
		double def, float *v);
/* "3" (both) or "1x7" (height x width). */
int infer_pair(struct infer_layer *il, const char *key, bool required, int def, int *h, int *w);
/* Comma-separated integers into v[]; returns the count or a negative errno. */
int infer_int_list(struct infer_layer *il, const char *key, const char *s, char sep, int64_t min,
		   int64_t max, int64_t *v, int max_nr);
/* "P", "PHxPW", "T,L,B,R" or "same" (the flag tells the caller to work it out). */
int infer_pad(struct infer_layer *il, int pad[4], bool *same);
/* TensorFlow's SAME: output = ceil(in / stride), the odd pixel of padding at the end. */
void infer_same_pad(int64_t in, int k_eff, int stride, int *before, int *after);
/* Sets the layer's output shape, refusing a dim or a size over the limits above. */
int infer_set_out(struct infer_layer *il, int ndims, const int64_t *dims);
/* Input idx must have min..max dimensions. */
int infer_need_ndims(struct infer_layer *il, int idx, int min, int max);
/* macs/params as a product of factors, refusing overflow. */
int infer_product(struct infer_layer *il, uint64_t *out, int nr, ...);
/* Normalises axis (negative counts from the end) for ndims; refuses out of range. */
int infer_normalize_axis(struct infer_layer *il, const char *key, int64_t axis, int ndims,
			 int *out);
/* "[1,3,224,224]" */
void infer_format_shape(const struct model_shape *s, char *buf, size_t len);

#endif /* COLOC_EXECUTOR_MODEL_INFER_H */
