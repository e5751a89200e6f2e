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

/*
 * Fills t from p for a model named name (for messages) of nr_layers
 * layers with each layer's MACs (the policy's layer_ops), the same layers
 * in the same order: what an executor's summary of the model gives colocd,
 * which parses no model (the tools pass a parsed model's with
 * profile_table_build, profile_host.h). The level column k gets the whole
 * model's slowdown at stress level k: the sum over layers of the fastest
 * version on all profiled cores at level k over the same sum alone;
 * t->name is the model's. Where that dips below the column before (below
 * 1.0 at the first stressed column: a measurement artefact on a noisy
 * machine), it is clamped to the running maximum and t->note says so. The
 * latency cells and their confidence intervals stay as measured; the
 * profile's cold ramp (none in a format-6 profile: every block hot) prices
 * blocks by their cores' idle time (policy_costs.cold). 0, or
 * -errno with err filled.
 */
int profile_table_build_layers(const struct profile *p, const char *name, int nr_layers,
			       const uint64_t *layer_macs, struct policy_table *t,
			       struct coloc_err *err);

/*
 * The cache file (in cache_dir; NULL: profile_cache_dir(NULL)) of the
 * model named model_name whose files have the profile key key
 * (profile_key.h), computed by the caller (colocd over its sealed copies),
 * on machine (colocd's from its executor's ISA:
 * profile_machine_detect_isa); shown names the model file (and weights,
 * "MODEL --weights FILE", when it has some) in the coloc-profile command
 * a missing profile's message gives, loaded. NULL with err filled;
 * -ENOENT when there is none, with the exact coloc-profile command that
 * makes it and how many profiles of the key before 2026-12-06 (the model
 * file's FNV-1a) are there unused; a file at the key's name whose header
 * holds another key or the old one is refused (-ESTALE), and one that is
 * not a regular file of root's (or this user's), writable by no group or
 * other, of one name, is not read (a link -ELOOP, else -EPERM; the
 * message quotes none of it: file_open_own_or_root). No oneDNN, no
 * model parser: what colocd links (the tools find a profile by the
 * model's path with profile_table_find, profile_host.h).
 */
struct profile *profile_table_find_keyed(const char *model_name, const struct profile_key *key,
					 const char *shown, const char *cache_dir,
					 const struct profile_machine *machine,
					 struct coloc_err *err);

#endif /* COLOC_PROFILE_TABLE_H */
