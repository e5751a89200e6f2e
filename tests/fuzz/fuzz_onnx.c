// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target: an ONNX file through the whole importer
 * (onnx_import_buffer: protobuf unpack, folding, lowering, the emitted text
 * parsed back). Every input is either imported or refused with a reason;
 * a crash, a sanitizer report or a silent refusal is a finding. The file
 * names a directory that does not exist, so external data never reads a
 * real file.
 */
#include <stdint.h>
#include <stdlib.h>
#include "fuzz.h"
#include "onnx_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct onnx_import_opts opts = { .batch = 1 };
	struct coloc_err err = { 0 };
	struct onnx_import im;
	int ret;

	ret = onnx_import_buffer("/nonexistent/fuzz.onnx", data, size, &opts, &im, &err);
	if (ret) {
		fuzz_check_refusal("onnx", ret, &err);
		return 0;
	}
	if (!im.model || !im.text || !im.weights)
		abort();
	onnx_import_free(&im);
	return 0;
}
