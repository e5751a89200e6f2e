// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target: a latency profile cache file (profile_parse, as
 * profile_load() reads one), then the checks and a lookup of every layer
 * that a parsed profile must survive.
 */
#include <stdint.h>
#include <stdlib.h>
#include "fuzz.h"
#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct coloc_err err = { 0 };
	struct profile_check chk;
	struct profile *p = profile_parse("fuzz.profile", (const char *)data, size, &err);

	if (!p) {
		fuzz_check_refusal("profile", err.code, &err);
		return 0;
	}
	profile_check(p, &chk);
	profile_nr_missing(p);
	for (int l = 0; l < p->nr_layers; l++)
		for (int v = 0; v < p->layers[l].nr_versions; v++)
			for (int c = 1; c <= p->nr_cores; c++) {
				uint64_t ns;

				profile_lookup(p, l, v, c, 0, &ns);
				profile_lookup(p, l, v, c, 55.5, &ns);
				profile_lookup(p, l, v, c, 100, &ns);
			}
	profile_free(p);
	return 0;
}
