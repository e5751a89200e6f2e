/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A model as the executor and scheduler see it: an ordered list of layers,
 * each producing one tensor from the outputs of earlier layers. Produced by
 * the parser (model_parse.c) from the text format in models/README.md,
 * with every output shape inferred and checked at load. Holds no weights and
 * no oneDNN state: executors build those from it.
 *
 * Shapes are logical and dense: convolution nets use [N, C, H, W], sequence
 * models [N, S, D] (or [N, heads, S, Dh] around attention). Layer i may only
 * read layers j < i, so file order is a valid execution order and a layer
 * block is a contiguous index range [first, last).
 */
#ifndef COLOC_MODEL_H
#define COLOC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define MODEL_MAX_DIMS 5
#define MODEL_MAX_INPUTS 8
#define MODEL_NAME_LEN 64
#define MODEL_MAX_LAYERS 65536 /* the parser refuses larger models */
/* how far, in % of the computed value, a file's declared macs and params may be */
#define MODEL_DECLARED_TOLERANCE_PCT 2
/*
 * The largest kernel, stride, padding and dilation a window (conv, deconv,
 * pool) takes. An STFT written as a 1-D conv has a kernel of n_fft samples
 * and a stride of the hop (openWakeWord's melspectrogram: 512 and 160;
 * librosa's default n_fft is 2048), so 256 was too small; a bound stays so
 * that a dilated extent (k - 1) * dil + 1 fits an int with room to spare
 * and a corrupt file cannot ask for a window no input could hold.
 */
#define MODEL_MAX_WINDOW 4096

enum model_op {
	MODEL_OP_INPUT,
	MODEL_OP_CONV, /* grouped/depthwise/strided/dilated, optional folded BN, bias, fused act */
	MODEL_OP_FC, /* x[..., K] @ W[K, out] + b, on the last dim, fused act */
	MODEL_OP_MATMUL, /* batched a @ b (or a @ b^T), both activations, times alpha */
	MODEL_OP_POOL, /* max/avg, or global average */
	MODEL_OP_ACT, /* standalone activation */
	MODEL_OP_ADD, /* elementwise, numpy broadcast of inputs[1] (or a constant) to inputs[0] */
	MODEL_OP_MUL,
	MODEL_OP_CONCAT,
	MODEL_OP_LAYER_NORM, /* over the last dim, learned gamma/beta */
	MODEL_OP_SOFTMAX,
	MODEL_OP_LRN, /* cross-channel local response normalisation */
	MODEL_OP_RESHAPE,
	MODEL_OP_TRANSPOSE,
	MODEL_OP_EMBED, /* token embedding lookup: [N, S] ids -> [N, S, D] */
	MODEL_OP_SLICE, /* [start, start + len) along one axis, e.g. BERT's [CLS] token for the pooler */
	MODEL_OP_SUB, /* elementwise like add: inputs[0] - inputs[1] (or the constant) */
	MODEL_OP_DIV,
	MODEL_OP_MAX,
	MODEL_OP_MIN,
	MODEL_OP_RESIZE, /* 2-D upsampling of [N, C, H, W]: nearest (integer factors) or bilinear */
	MODEL_OP_DECONV, /* 2-D transposed convolution (conv's fields), weights [IC][OC/g][kh][kw] */
	MODEL_OP_REDUCE, /* mean, max, min or sum over some axes, kept as dims of 1 */
	MODEL_OP_PAD, /* a border of a constant value before and after each dim */
	MODEL_OP_LOG, /* elementwise natural logarithm (a log-mel spectrogram's dB) */
	MODEL_OP_COUNT,
};

enum model_act {
	MODEL_ACT_NONE,
	MODEL_ACT_RELU,
	MODEL_ACT_RELU6,
	MODEL_ACT_LEAKY_RELU, /* alpha = slope */
	MODEL_ACT_SIGMOID,
	MODEL_ACT_SWISH, /* x * sigmoid(x) */
	MODEL_ACT_GELU, /* erf form */
	MODEL_ACT_TANH,
	MODEL_ACT_HARD_SIGMOID, /* max(0, min(1, alpha * x + beta)): slope alpha, offset beta */
	MODEL_ACT_HARD_SWISH, /* x * relu6(x + 3) / 6 */
	MODEL_ACT_CLIP, /* min(max(x, alpha), beta), both finite */
};

enum model_pool_kind {
	MODEL_POOL_MAX,
	MODEL_POOL_AVG, /* padding excluded from the divisor */
	MODEL_POOL_GLOBAL_AVG,
};

struct model_shape {
	int ndims;
	int64_t dims[MODEL_MAX_DIMS];
};

struct model_conv {
	int64_t out_channels;
	int kh, kw;
	int stride_h, stride_w;
	int pad_t, pad_l, pad_b, pad_r;
	int dil_h, dil_w; /* 1 = dense */
	int64_t groups; /* in_channels for depthwise */
	bool bias;
	bool batch_norm; /* scale/shift/mean/var folded into weights and bias at load */
};

struct model_fc {
	int64_t out_features;
	bool bias;
};

struct model_matmul {
	bool transpose_b;
	float alpha;
};

struct model_pool {
	enum model_pool_kind kind;
	int kh, kw;
	int stride_h, stride_w;
	int pad_t, pad_l, pad_b, pad_r;
};

struct model_lrn {
	int size;
	float alpha, beta, k;
};

struct model_embed {
	int64_t vocab;
	int64_t dim;
};

/*
 * The second operand of add, mul, sub, div, max, min: inputs[1], or with
 * one input a constant tensor of shape cshape (the layer's weights) that
 * broadcasts onto inputs[0]. const_first (sub only) computes const - x.
 */
struct model_binary {
	bool has_const;
	bool const_first;
	struct model_shape cshape;
};

/*
 * resize: nearest reads input row floor(o * IH / OH) (ONNX's asymmetric
 * floor; only integer upscaling factors); linear interpolates at
 * (o + 0.5) * IH / OH - 0.5, clamped to the input (ONNX's half_pixel).
 */
struct model_resize {
	bool linear;
};

enum model_reduce_kind {
	MODEL_REDUCE_MEAN,
	MODEL_REDUCE_MAX,
	MODEL_REDUCE_MIN,
	MODEL_REDUCE_SUM,
};

struct model_reduce {
	enum model_reduce_kind kind;
	unsigned int axes; /* bit i: axis i is reduced */
};

struct model_pad {
	int64_t begin[MODEL_MAX_DIMS], end[MODEL_MAX_DIMS];
	float value;
};

struct model_slice {
	int axis;
	int64_t start, len;
};

struct model_layer {
	char name[MODEL_NAME_LEN];
	enum model_op op;
	int nr_inputs;
	int inputs[MODEL_MAX_INPUTS]; /* indices of earlier layers */
	struct model_shape out;
	enum model_act act; /* fused after the op (conv, fc, add, mul) or the op itself (act) */
	float act_alpha; /* leaky_relu's and hard_sigmoid's slope, clip's lower bound */
	float act_beta; /* hard_sigmoid's offset, clip's upper bound */
	union {
		struct model_conv conv;
		struct model_fc fc;
		struct model_matmul matmul;
		struct model_pool pool;
		struct model_lrn lrn;
		struct model_embed embed;
		struct model_slice slice;
		struct model_binary binary;
		struct model_resize resize;
		struct model_reduce reduce;
		struct model_pad pad;
		int axis; /* concat, softmax */
		float eps; /* layer_norm */
		struct model_shape reshape; /* target shape */
		int perm[MODEL_MAX_DIMS]; /* transpose */
	};
	int line; /* line in the model file, for messages */
	uint64_t macs; /* multiply-accumulates of this layer */
	uint64_t params; /* learned parameters (BN counted before folding) */
};

struct model {
	char name[MODEL_NAME_LEN];
	int nr_layers;
	struct model_layer *layers;
	uint64_t macs, params; /* computed from the layers */
	uint64_t declared_macs, declared_params; /* as published, from the file */
	uint32_t seed; /* for the deterministic weights */
};

/*
 * Parses a model file. On error returns NULL and records in err (which may be
 * NULL) a negative errno and "FILE:LINE: what is wrong" (never crashes on bad
 * input: the parser is fuzzed). A file that is cut anywhere, or whose
 * declared MACs or parameters are more than MODEL_DECLARED_TOLERANCE_PCT
 * away from the computed ones, is refused.
 */
struct model *model_load(const char *path, struct coloc_err *err);
/* The same from memory; name is used in messages. */
struct model *model_parse(const char *name, const char *text, size_t len, struct coloc_err *err);
void model_free(struct model *m);

int64_t model_shape_elems(const struct model_shape *s);
/* add, mul, sub, div, max, min: the ops with a model_binary and an optional constant. */
static inline bool model_op_is_binary(enum model_op op)
{
	return op == MODEL_OP_ADD || op == MODEL_OP_MUL || op == MODEL_OP_SUB ||
	       op == MODEL_OP_DIV || op == MODEL_OP_MAX || op == MODEL_OP_MIN;
}
/* One tensor of a query's input or output: a layer's output, dense fp32. */
struct model_io_tensor {
	int layer;
	uint64_t offset; /* bytes from the start of the query's input (or output) */
	uint64_t bytes;
};

/*
 * How one query's input and output are laid out wherever they cross a
 * boundary (the shared memory's slots, colocd's summary, coloc-run's
 * --input and --output, a client's request): the input layers in layer
 * order, and the outputs, the layers no later layer reads (the model's
 * results, e.g. SSD's box and class heads), in layer order; each dense
 * fp32, packed one after the other.
 */
struct model_io_layout {
	int nr_inputs, nr_outputs;
	struct model_io_tensor *inputs, *outputs; /* [nr_inputs], [nr_outputs] */
	uint64_t in_bytes, out_bytes; /* one query's, all tensors */
};

/*
 * m's layout into *io (freed with model_io_layout_free). 0, -ENOMEM, or
 * -E2BIG when the bytes overflow 64 bits, with err saying which.
 */
int model_io_layout(const struct model *m, struct model_io_layout *io, struct coloc_err *err);
void model_io_layout_free(struct model_io_layout *io);

const char *model_op_name(enum model_op op);
const char *model_act_name(enum model_act act);

#endif /* COLOC_MODEL_H */
