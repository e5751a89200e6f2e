/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A model file's format by its name, the one rule colocd and the model
 * library share (model_open.h): ONNX when the name ends in ".onnx",
 * protobuf having no magic number to test, else a coloc .model. Inline and
 * here, so that colocd tells a submitted file's format without the model
 * library's headers.
 */
#ifndef COLOC_MODEL_FORMAT_H
#define COLOC_MODEL_FORMAT_H

#include <stdbool.h>
#include <string.h>

/* Whether path names an ONNX file (ends in ".onnx"). */
static inline bool model_path_is_onnx(const char *path)
{
	size_t n = strlen(path);

	return n > 5 && !strcmp(path + n - 5, ".onnx");
}

#endif /* COLOC_MODEL_FORMAT_H */
