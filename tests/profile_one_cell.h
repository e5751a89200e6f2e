/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The smallest whole profile for the profile tests: one layer, one version,
 * one core, measured alone (1 us, interval 0.9-1.1 us), on a "Test CPU";
 * each test adds the conditions it checks. NULL when out of memory.
 */
#ifndef COLOC_TESTS_PROFILE_ONE_CELL_H
#define COLOC_TESTS_PROFILE_ONE_CELL_H

#include <stdio.h>
#include "profile.h"

static inline struct profile *profile_one_cell(void)
{
	static const int levels[] = { 0 }, versions[] = { 1 };
	struct profile *p = profile_new(1, versions, 1, 1, levels, NULL);
	uint64_t *lo, *hi;

	if (!p)
		return NULL;
	snprintf(p->model_name, sizeof(p->model_name), "one");
	snprintf(p->machine.cpu_model, sizeof(p->machine.cpu_model), "Test CPU");
	snprintf(p->machine.isa, sizeof(p->machine.isa), "avx2");
	snprintf(p->onednn_version, sizeof(p->onednn_version), "2.6.3");
	snprintf(p->date, sizeof(p->date), "2026-12-05T06:00:00Z");
	snprintf(p->layers[0].name, sizeof(p->layers[0].name), "l0");
	snprintf(p->layers[0].version_names[0], PROFILE_VERSION_NAME_LEN, "v0");
	p->machine.nr_cores = 1;
	*profile_latency_cell(p, 0, 0, 1, 0) = 1000;
	profile_ci_cells(p, 0, 0, 1, 0, &lo, &hi);
	*lo = 900;
	*hi = 1100;
	return p;
}

#endif /* COLOC_TESTS_PROFILE_ONE_CELL_H */
