// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target: the coloc .model text format (model_parse, as
 * model_load() and colocd's submit path read it). Every input is either a
 * model or refused with a reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include "fuzz.h"
#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct coloc_err err = { 0 };
	struct model *m = model_parse("fuzz.model", (const char *)data, size, &err);

	if (!m) {
		fuzz_check_refusal("model", err.code, &err);
		return 0;
	}
	if (m->nr_layers <= 0)
		abort();
	model_free(m);
	return 0;
}
