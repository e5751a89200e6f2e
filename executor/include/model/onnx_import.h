/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * ONNX import: reads an .onnx file (the onnx.proto of Debian's libonnx-dev,
 * compiled with protobuf-c), folds its constant and shape subgraphs, fuses
 * Conv+BatchNormalization, Conv/Gemm/MatMul + bias + activation, and lowers
 * the rest into coloc's own model format: the text of models/README.md plus
 * a weights file as in models/WEIGHTS.md, made from the initializers. The
 * text is then parsed with model_parse() like any model file, and every
 * layer's shape is checked against the one inferred from the ONNX graph.
 *
 * Anything that cannot be lowered exactly is refused with an error naming
 * the op type, the node, the opset and the input shapes. See models/ONNX.md.
 */
#ifndef COLOC_ONNX_IMPORT_H
#define COLOC_ONNX_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "model.h"

#define ONNX_MAX_FILE_BYTES (1ull << 31) /* larger models need external data: refused */
#define ONNX_MAX_DIM_VALUES 16
#define ONNX_DIM_NAME_LEN 64
#define ONNX_MAX_OUTPUTS 64
/*
 * All of a model's constants decoded (as doubles, 8 bytes an element): a
 * file of a few MiB can name tensors of 2^28 elements each over one sparse
 * external file; past this the import is refused before it allocates.
 */
#define ONNX_MAX_DECODED_BYTES (4ull << 30)

/* An external data file handed over as a descriptor: its ONNX "location" and the fd. */
struct onnx_external_fd {
	const char *location;
	int fd;
};

/* A symbolic dimension's value, from --dim NAME=VALUE. */
struct onnx_dim_value {
	char name[ONNX_DIM_NAME_LEN];
	int64_t value;
};

struct onnx_import_opts {
	int64_t batch; /* the first dim of every graph input when symbolic; 0 means 1 */
	int nr_dims;
	struct onnx_dim_value dims[ONNX_MAX_DIM_VALUES];
	/*
	 * Where external data comes from. NULL: files below the model's
	 * directory, opened by path (the command-line tools). Otherwise only
	 * these descriptors, found by location, and no path is ever opened
	 * (colocd's executor, given what the client opened).
	 */
	const struct onnx_external_fd *external;
	int nr_external;
	/*
	 * With external NULL: the model's directory as model_file_open()
	 * opened it, below which each external data file is opened
	 * (model_external_open(): no link followed, no FIFO waited on);
	 * has_dir_fd false: the directory of the name, opened then.
	 */
	bool has_dir_fd;
	int dir_fd;
	/*
	 * Every file opened by path (the model, a .model's weights, each
	 * external data file) must pass trusted_path_check() (common/
	 * trusted_path.h) or is refused, -EACCES, before a byte is read;
	 * checked where it is opened. Root's tools set it unless
	 * --allow-foreign-owner.
	 */
	bool owner_rule;
};

struct onnx_import {
	char *text; /* the model in coloc's text format, NUL-terminated */
	size_t text_len;
	unsigned char *weights; /* a COLOCWT1 weights file for it */
	size_t weights_len;
	struct model *model; /* text, parsed */
	int nr_outputs; /* the graph's outputs, as layer indices of model */
	int outputs[ONNX_MAX_OUTPUTS];
	/*
	 * Bit l set: layer l (< 64) is a graph input of int64 or int32 (token
	 * ids, an attention mask), which coloc takes as fp32 integer values.
	 */
	uint64_t int_inputs;
};

/*
 * Imports the ONNX model in buf (len bytes; name, the file's path, for
 * messages and for its tensors in external data files, whose locations are
 * relative to name's directory: the working directory when name has no
 * '/'). Returns 0
 * and fills out (free with onnx_import_free()), or a negative errno with the
 * reason in err. Never crashes on malformed input (fuzzed: tests/fuzz/fuzz_onnx.c,
 * docs/fuzzing.md); messages name nodes, shapes and positions, never a value
 * of a tensor's data. Messages nested over 64 deep (ONNX_MAX_NESTING) are refused
 * (-ELOOP) before decoding.
 */
int onnx_import_buffer(const char *name, const void *buf, size_t len,
		       const struct onnx_import_opts *opts, struct onnx_import *out,
		       struct coloc_err *err);
/* The same from a file of at most ONNX_MAX_FILE_BYTES (larger models keep their tensors in external data files). */
int onnx_import_file(const char *path, const struct onnx_import_opts *opts, struct onnx_import *out,
		     struct coloc_err *err);
void onnx_import_free(struct onnx_import *out);

/* Parses "NAME=VALUE" into opts (VALUE 1..2^24); 0 or -EINVAL with a message. */
int onnx_dim_parse(struct onnx_import_opts *opts, const char *arg, struct coloc_err *err);

#endif /* COLOC_ONNX_IMPORT_H */
