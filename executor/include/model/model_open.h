/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The one way every entry point (coloc-run, coloc-profile, coloc-sim,
 * coloc-executor) opens a model file: a coloc .model as model_load() reads
 * it, or an ONNX file imported in memory (onnx_import.h). A file is ONNX
 * when its name ends in ".onnx" (coloc/model_format.h).
 *
 * An imported model's weights are the importer's COLOCWT1 buffer, put in a
 * sealed memfd so that the executor reads them through the same checked
 * file reader as any weights file (exec_weights_file.c), by the path
 * /proc/self/fd/N in weights_path.
 */
#ifndef COLOC_MODEL_OPEN_H
#define COLOC_MODEL_OPEN_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "coloc/model_format.h"
#include "error.h"
#include "model.h"
#include "onnx_import.h"
#include "profile_key.h"

struct model_source {
	struct model *model;
	bool onnx; /* imported from ONNX: the weights come from the file */
	int weights_fd; /* the memfd holding an imported model's weights; -1 if none */
	char weights_path[32]; /* "/proc/self/fd/N" for exec_options.weights_path, or "" */
};

/*
 * Opens the model at path into src (release with model_source_close()).
 * opts (NULL: batch 1, no dims) are the ONNX import options; a .model file
 * takes none, and is refused if any is given. 0 or a negative errno with
 * the loader's or the importer's message in err. The file is opened once
 * and only as a regular file, external data as model_file.h says.
 */
int model_open(const char *path, const struct onnx_import_opts *opts, struct model_source *src,
	       struct coloc_err *err);
void model_source_close(struct model_source *src);
/*
 * The same from a descriptor (colocd's executor: a sealed memfd colocd
 * handed over), named name for messages and for its format (".onnx"):
 * nothing is opened by path, an ONNX model's external data included
 * (opts->external names their descriptors; a model with external data and
 * no table is refused). The bytes are read once; fd stays open.
 */
int model_open_fd(const char *name, int fd, const struct onnx_import_opts *opts,
		  struct model_source *src, struct coloc_err *err);
/*
 * Closes the imported weights once exec_model_load() has read them (or when
 * only the model is wanted), keeping src->model for model_source_close().
 */
void model_source_drop_weights(struct model_source *src);

/* The most external data files a model may name for the tools (colocd takes fewer: protocol.h). */
#define MODEL_MAX_EXTERNAL_FILES 1024

/*
 * The profile key (profile_key.h) of the model at path with the weights
 * file weights (NULL: none; a coloc .model's only) and, for an ONNX file,
 * the external data files it names (found by onnx_scan.h's scan, as the
 * client finds what it sends colocd) and the import options, since the
 * batch and dims change every layer's shape. Nothing is parsed. 0 or
 * -errno with err filled.
 */
int model_open_key(const char *path, const char *weights, const struct onnx_import_opts *opts,
		   struct profile_key *key, struct coloc_err *err);

/*
 * model_open() and model_open_key() from one descriptor per file, for the
 * tools that cache what they measure under the key (coloc-profile): the
 * model file is opened once (model_file_open()), its bytes read once,
 * keyed into *key and parsed; an ONNX model's external data files are
 * opened once each below the directory the model was found in, through no
 * link (model_file.h), keyed and imported from those descriptors; a
 * .model's weights file is opened as the model is, copied into a sealed
 * memfd that is keyed and handed to the executor (src->weights_path). So
 * the key and the model describe the same bytes whatever is renamed over
 * a path meanwhile. weights and key may be NULL (model_open() is this
 * with neither). With opts->owner_rule each of those files must pass
 * trusted_path_check() (-EACCES).
 */
int model_open_keyed(const char *path, const char *weights, const struct onnx_import_opts *opts,
		     struct model_source *src, struct profile_key *key, struct coloc_err *err);

/* Whether opts asks for anything (a batch other than 1, or a dim). */
bool model_open_opts_given(const struct onnx_import_opts *opts);

#endif /* COLOC_MODEL_OPEN_H */
