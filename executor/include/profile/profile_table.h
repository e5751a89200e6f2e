/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A model's latency profile (profile.h) as the policy's table (struct
 * policy_table, policy/table.h): core counts 1..N, one column per kernel
 * version (the most any layer has; a layer's missing versions are 0
 * cells, which policies never choose), one level column per stress level
 * with the model's slowdown there. The profile is looked up in the cache by the
 * model file's hash and this machine's identity.
 */
#ifndef COLOC_PROFILE_TABLE_H
#define COLOC_PROFILE_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include "profile.h"
#include "table.h"

struct model; /* model.h, the model library's: profile_table_build's callers have it */

/*
 * Fills t from p for model m (the same layers in the same order). The
 * level column k gets the whole model's slowdown at stress level k: the
 * sum over layers of the fastest version on all profiled cores at level k
 * over the same sum alone; t->name is the model's. Where that dips below
 * the column before (below 1.0 at the first stressed column: a measurement
 * artefact on a noisy machine), it is clamped to the running maximum and
 * t->note says so. The
 * latency cells and their confidence intervals stay as measured. 0, or
 * -errno with err filled.
 */
int profile_table_build(const struct profile *p, const struct model *m, struct policy_table *t,
			struct coloc_err *err);
/*
 * The same from a model's name (for messages), layer count and each
 * layer's MACs (the policy's layer_ops): what an executor's summary of
 * the model gives colocd, which parses no model.
 */
int profile_table_build_layers(const struct profile *p, const char *name, int nr_layers,
			       const uint64_t *layer_macs, struct policy_table *t,
			       struct coloc_err *err);

/*
 * The cache file of the model at model_path (already parsed as m) on this
 * machine (profile_machine_detect: oneDNN's ISA), in cache_dir (NULL:
 * profile_cache_dir(NULL)), loaded. NULL with
 * err filled; -ENOENT when there is none, with the exact coloc-profile
 * command that makes it.
 */
struct profile *profile_table_find(const char *model_path, const struct model *m,
				   const char *cache_dir, struct coloc_err *err);
/*
 * The same by the model's name and file hash, computed by the caller
 * (colocd hashes its sealed copy), on machine (colocd's from its
 * executor's ISA: profile_machine_detect_isa); shown names the model file
 * in the coloc-profile command a missing profile's message gives. No
 * oneDNN, no model parser: what colocd links.
 */
struct profile *profile_table_find_hashed(const char *model_name, uint64_t hash, const char *shown,
					  const char *cache_dir,
					  const struct profile_machine *machine,
					  struct coloc_err *err);

#endif /* COLOC_PROFILE_TABLE_H */
