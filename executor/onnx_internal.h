/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Shared by the ONNX importer's files: the graph being lowered (values by
 * name, each either a constant or the output of a coloc layer), the coloc
 * layers built so far with their parameters, and the helpers every op uses.
 *
 *   onnx_wire.c    the nesting limit, checked on the wire before unpacking
 *   onnx_graph.c   protobuf unpack, every value registered, graph inputs
 *   onnx_names.c   values and layers by name, a node's outputs bound
 *   onnx_attr.c    a node's attributes, type-checked
 *   onnx_check.c   checked size arithmetic, shape bounds, the refusal message
 *   onnx_tensor.c  a TensorProto (initializer, Constant) into doubles
 *   onnx_external.c  a tensor's bytes from an external data file
 *   onnx_fold.c    constant folding and Shape (shape subgraphs vanish)
 *   onnx_fold_layout.c  folds that move elements (Slice, Transpose, Concat, Gather)
 *   onnx_fold_elementwise.c  elementwise folds (arithmetic, Where, Expand)
 *   onnx_lower.c   one function per op into coloc layers, with the fusions
 *   onnx_pattern.c multi-node patterns (GELU) fused into one coloc activation
 *   onnx_emit.c    coloc model text and weights file out
 *   onnx_import.c  the driver: the node walk, parse back, shape check
 */
#ifndef COLOC_ONNX_INTERNAL_H
#define COLOC_ONNX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"

#define ONNX_MAX_CONST_ELEMS (1ll << 28) /* a folded constant (ConstantOfShape) */
/*
 * All the constants folding makes together: at most twice the elements of
 * the tensors the file holds, or this many when that is less. A Range or a
 * ConstantOfShape in a few bytes cannot make gigabytes.
 */
#define ONNX_MIN_FOLD_BUDGET (1ll << 20)
/* a layer's dims and elements: the bounds coloc's parser puts on them (model_shape.c) */
#define ONNX_MAX_DIM (1ll << 24)
#define ONNX_MAX_ELEMS (1ll << 32)
#define ONNX_MAX_NODES 200000
#define ONNX_MAX_VALUES 1000000
#define ONNX_MAX_RANK MODEL_MAX_DIMS
/*
 * Messages inside messages, the ModelProto being depth 0: a graph inside an
 * If inside a graph takes 3 levels more, so real files stay far below it.
 */
#define ONNX_MAX_NESTING 64

/* A named tensor of the graph. */
struct onnx_value {
	const char *name; /* owned by the unpacked protobuf, or by a node's output */
	struct model_shape shape; /* known for every value that exists */
	double *data; /* a constant's elements (row-major); NULL: a layer's output */
	bool is_int; /* a constant of an integer or bool type */
	int layer; /* the coloc layer computing it; -1 for constants */
	int uses; /* how many node inputs and graph outputs read it */
	bool defined; /* produced by an initializer, a graph input or an earlier node */
	int nr_readers; /* nodes reading it, their indices at ctx.readers[rd_off...] */
	int rd_off;
};

/* A coloc layer being built, with its parameters (logical layouts of WEIGHTS.md). */
struct onnx_layer {
	struct model_layer l; /* op, inputs, out shape, act and the op's fields */
	int uses; /* reads still to come of the values it computes (for fusion) */
	bool read; /* another layer reads its output: what it computes is fixed, no fusion */
	bool view_1d; /* a 1-D window's result [N, C, W] viewing its 2-D layer [N, C, 1, W] */
	char origin[128]; /* "OpType 'node'" of the ONNX node(s), for the text's comments */
	float *t[2]; /* weights/gamma/table, then bias/beta */
	int64_t nt[2];
};

struct onnx_ctx {
	const char *file;
	const struct onnx_import_opts *opts;
	struct coloc_err *err;
	Onnx__ModelProto *mp;
	Onnx__GraphProto *g;
	int64_t opset; /* of the default domain */
	const Onnx__NodeProto *node; /* the node being lowered, for messages */

	struct onnx_value *vals;
	int nr_vals, cap_vals;
	int *hash; /* open addressing over vals, -1 = empty */
	int hash_cap;
	int *readers; /* per value, the nodes reading it, in graph order */

	/* elements of the tensors read from the file, and of the constants folds made */
	int64_t decoded_elems, folded_elems;

	struct onnx_layer *layers;
	int nr_layers, cap_layers;
	uint64_t int_inputs; /* onnx_import's */
	uint64_t decoded_bytes; /* constants decoded so far (ONNX_MAX_DECODED_BYTES) */
	int *layer_hash; /* open addressing over layer names, -1 = empty */
};

#define ONNX_LAYER_HASH_CAP (2 * MODEL_MAX_LAYERS) /* entries of ctx.layer_hash */

/* A constant's element as an integer, clamped so that no cast overflows. */
static inline int64_t onnx_i64(double x)
{
	return x > 4e18 ? (int64_t)4e18 : x < -4e18 ? (int64_t)-4e18 : x != x ? 0 : (int64_t)x;
}

/* Whether a layer of op takes a fused act= (model_shape.c's fused_act). */
static inline bool onnx_takes_act(enum model_op op)
{
	return op == MODEL_OP_CONV || op == MODEL_OP_DECONV || op == MODEL_OP_FC ||
	       model_op_is_binary(op);
}

/* onnx_graph.c */
int onnx_graph_open(struct onnx_ctx *c, const void *buf, size_t len);
/* Frees the decoded constants once every node is lowered (the layers hold their own floats). */
void onnx_graph_drop_constants(struct onnx_ctx *c);
void onnx_graph_close(struct onnx_ctx *c);

/* onnx_names.c */
struct onnx_value *onnx_value_find(struct onnx_ctx *c, const char *name);
/* A new value; -EEXIST (SSA broken) or -ENOMEM through c->err. */
int onnx_value_add(struct onnx_ctx *c, const char *name, struct onnx_value **out);
/* Input i of the current node, or NULL if absent (an empty name or i out of range). */
struct onnx_value *onnx_input(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i);
/* A new layer; its name is made from the node's (unique, format-safe). */
int onnx_layer_add(struct onnx_ctx *c, enum model_op op, const char *name, struct onnx_layer **out);
/* Makes the node's output i a layer's output (adds its uses to the layer). */
int onnx_output_layer(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i, int layer);
/* Makes the node's output i a constant taking ownership of data (freed on error). */
int onnx_output_const(struct onnx_ctx *c, const Onnx__NodeProto *n, size_t i,
		      const struct model_shape *s, double *data, bool is_int);

/* onnx_tensor.c */
/*
 * How many values t declares by its dims, the product capped at cap (0 if
 * a dim is 0); -1 if a dim is negative. Reads no data.
 */
int64_t onnx_tensor_elems(const Onnx__TensorProto *t, int64_t cap);
/* A TensorProto into doubles (shape, is_int); every size checked. 0 or -errno. */
int onnx_tensor_decode(struct onnx_ctx *c, const Onnx__TensorProto *t, struct model_shape *s,
		       double **data, bool *is_int);

/*
 * onnx_external.c: the bytes of tensor t (named name) kept in an external
 * data file ("location", a path relative to the model file's directory,
 * "offset" and "length" in bytes), want bytes of them, into a new buffer
 * at *out. 0 or a negative errno with the tensor named.
 */
int onnx_external_bytes(struct onnx_ctx *c, const Onnx__TensorProto *t, const char *name,
			size_t want, uint8_t **out);

/* onnx_attr.c */
const Onnx__AttributeProto *onnx_attr(const Onnx__NodeProto *n, const char *name);
int onnx_attr_int(struct onnx_ctx *c, const Onnx__NodeProto *n, const char *name, int64_t def,
		  int64_t *v);
int onnx_attr_float(struct onnx_ctx *c, const Onnx__NodeProto *n, const char *name, float def,
		    float *v);
/* An ints attribute of at most max entries; *nr = -1 when absent. */
int onnx_attr_ints(struct onnx_ctx *c, const Onnx__NodeProto *n, const char *name, int64_t *v,
		   int max, int *nr);
/* The attribute's string, or def. */
const char *onnx_attr_str(const Onnx__NodeProto *n, const char *name, char *buf, size_t len,
			  const char *def);

/* onnx_check.c */
/*
 * Records "FILE: node 'N' (OpType, opset K, inputs [..], [..]): WHY" for the
 * current node and returns code.
 */
__attribute__((format(printf, 3, 4))) int onnx_refuse(struct onnx_ctx *c, int code, const char *fmt,
						      ...);
void onnx_shape_str(const struct model_shape *s, char *buf, size_t len);
/*
 * The checked arithmetic every size goes through. onnx_mul() multiplies
 * *acc by x unless x is negative or the product would pass limit (false
 * then, *acc unchanged). onnx_elems() is a shape's element count, or
 * INT64_MAX for a negative dim or a count past int64: every caller's bound
 * refuses that, so no product of dims ever overflows.
 */
bool onnx_mul(int64_t *acc, int64_t x, int64_t limit);
int64_t onnx_elems(const struct model_shape *s);
/*
 * Refuses (through onnx_refuse) a layer's shape with a dim outside
 * 1..ONNX_MAX_DIM or more than ONNX_MAX_ELEMS elements; what names the
 * tensor. The message gives the dim's position, never its value (it may
 * come from a constant's data).
 */
int onnx_shape_check(struct onnx_ctx *c, const struct model_shape *s, const char *what);

/*
 * onnx_wire.c: walks the wire format of a message of type desc in data
 * (len bytes) without decoding it: 0, -ELOOP when messages nest deeper
 * than max_depth (at most ONNX_MAX_NESTING), -EINVAL when it is not a
 * well-formed protobuf.
 */
int onnx_wire_check_nesting(const ProtobufCMessageDescriptor *desc, const void *data, size_t len,
			    int max_depth);

/* onnx_shape_rules.c */
/* ONNX Reshape's target (0 copies a dim unless allowzero, one -1 is inferred) of in. */
int onnx_reshape_resolve(struct onnx_ctx *c, const struct model_shape *in, const double *dims,
			 int64_t n, bool allowzero, struct model_shape *out);
/* Squeeze/Unsqueeze/Flatten output shapes (axes from the attribute or input 1). */
int onnx_squeeze_shape(struct onnx_ctx *c, const Onnx__NodeProto *n, const struct model_shape *in,
		       bool unsqueeze, struct model_shape *out);
int onnx_flatten_shape(struct onnx_ctx *c, const Onnx__NodeProto *n, const struct model_shape *in,
		       struct model_shape *out);
/* Slice's per-axis start and step (clamped as ONNX says), and the output shape. */
int onnx_slice_params(struct onnx_ctx *c, const Onnx__NodeProto *n, const struct model_shape *in,
		      int64_t *start, int64_t *step, struct model_shape *out);
/* Normalises axis (negative counts from the end) for rank; refuses out of range. */
int onnx_axis(struct onnx_ctx *c, int64_t axis, int rank, int *out);

/* onnx_fold.c, onnx_fold_layout.c, onnx_fold_elementwise.c */
/*
 * Where(cond, ., .) with constants cond and k (k taken where cond is
 * k_when_true) split over their broadcast shape s: m is 0 where k is taken
 * and 1 elsewhere, z is k where it is taken and 0 elsewhere, so that
 * Where = t * m + z for the other operand t. 0 or -errno; m and z malloc'd.
 */
int onnx_where_split(struct onnx_ctx *c, const struct onnx_value *cond, const struct onnx_value *k,
		     bool k_when_true, struct model_shape *s, double **m, double **z);
/* 1 if the node was folded into constants, 0 if not foldable, or -errno. */
int onnx_fold(struct onnx_ctx *c, const Onnx__NodeProto *n);
/* A folded result's shape refused if a dim or its element count is out of bounds. */
int onnx_fold_shape_check(struct onnx_ctx *c, struct model_shape *s);
/*
 * n doubles for a folded constant, within the fold budget; NULL with the
 * refusal recorded, which onnx_fold_alloc_failed() then returns.
 */
double *onnx_fold_alloc(struct onnx_ctx *c, int64_t n);
int onnx_fold_alloc_failed(const struct onnx_ctx *c);
/* Row-major strides of s. */
void onnx_fold_strides(const struct model_shape *s, int64_t *st);
/* The folds of onnx_fold_layout.c and onnx_fold_elementwise.c, by op; 0 or -errno. */
int onnx_fold_slice(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_fold_transpose(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_fold_concat(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_fold_gather(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_fold_binary(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_fold_where(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_fold_expand(struct onnx_ctx *c, const Onnx__NodeProto *n);
int onnx_fold_unary(struct onnx_ctx *c, const Onnx__NodeProto *n);

/* onnx_lower.c: lowers a node whose data input is a layer output; 0 or -errno. */
int onnx_lower(struct onnx_ctx *c, const Onnx__NodeProto *n);

/*
 * onnx_pattern.c: matches a multi-node pattern (GELU's erf form) starting at
 * node i; 1 if it was lowered (its later nodes are marked in skip), 0 if no
 * pattern starts there, or -errno.
 */
int onnx_pattern(struct onnx_ctx *c, size_t i, bool *skip);

/* onnx_emit.c */
int onnx_emit_text(struct onnx_ctx *c, char **text, size_t *len);
int onnx_emit_weights(struct onnx_ctx *c, unsigned char **buf, size_t *len);

#endif /* COLOC_ONNX_INTERNAL_H */
