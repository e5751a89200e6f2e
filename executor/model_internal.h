/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Shared between the two halves of the model parser: model_parse.c (text,
 * statements, repeat blocks) and model_shape.c (one layer: attributes,
 * shape inference, MACs and parameters). Not for use outside them.
 */
#ifndef COLOC_MODEL_INTERNAL_H
#define COLOC_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "model.h"

#define MODEL_PARSE_MAX_LINE 1024

struct model_ctx {
	const char *file;
	int line;
	struct coloc_err *err; /* the caller's, may be NULL */
	bool failed;
	char context[128]; /* e.g. "in repeat i=3", appended to messages */
	struct model *m;
	int cap_layers;
	int *name_slots; /* open-addressing hash of layer names: index + 1, 0 = empty */
	int nr_slots;
	/* line of a later statement defining a layer of this name, or 0 */
	int (*later_definition)(const struct model_ctx *c, const char *name);
};

/* Reports "FILE:LINE: message" once (the first error wins); returns -EINVAL. */
int model_fail(struct model_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Strict decimal integer: the whole string, no overflow. */
int model_parse_int(const char *s, int64_t *v);
int model_check_name(struct model_ctx *c, const char *name);
/* Parses one layer statement: tok[0] is the op, tok[1] the name, then attributes. */
int model_add_layer(struct model_ctx *c, char **tok, int nr_toks);
/* Sums MACs and parameters once every layer is in. */
int model_finish(struct model_ctx *c);
void model_ctx_release(struct model_ctx *c);

#endif /* COLOC_MODEL_INTERNAL_H */
