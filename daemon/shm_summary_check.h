/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's check of an executor's model summary (struct coloc_shm_summary,
 * include/coloc/shm.h), the only description of a submitted model colocd
 * takes: it is untrusted (the executor parsed a user's bytes), so every
 * field is checked before anything is computed from it; so is the list
 * of kernel versions it reports at ready.
 */
#ifndef COLOC_DAEMON_SHM_SUMMARY_CHECK_H
#define COLOC_DAEMON_SHM_SUMMARY_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "coloc/shm.h"

/*
 * Whether s (colocd's own copy) is one colocd can use: the model name
 * NUL-terminated, 1 to COLOC_SHM_NAME_LEN - 1 of [A-Za-z0-9_.-] not
 * starting with '.' (it names a profile cache file); 1 to
 * COLOC_SHM_MAX_LAYERS layers; 1 to nr_layers inputs and outputs; one
 * query's input and output above 0 and within the slots (in_cap, out_cap);
 * the layers' MACs summing without overflow; reserved 0. false with why
 * saying which check failed, in words that quote no value of the summary.
 */
bool shm_summary_check(const struct coloc_shm_summary *s, uint64_t in_cap, uint64_t out_cap,
		       char *why, size_t len);

/* Whether a and b describe the same model (every field colocd uses). */
bool shm_summary_same(const struct coloc_shm_summary *a, const struct coloc_shm_summary *b);

/*
 * Whether v (colocd's own copy) lists the kernel versions of nr_layers
 * layers in shm.h's form: 1 to COLOC_SHM_MAX_VERSION_NAMES names, each
 * NUL-terminated, 1 to COLOC_SHM_VERSION_NAME_LEN - 1 of [A-Za-z0-9_.-]
 * not starting with '.'; each layer 1 to COLOC_SHM_MAX_LAYER_VERSIONS
 * indexes into them, then only 0; reserved 0. false with why, quoting no
 * value of v.
 */
bool shm_versions_check(const struct coloc_shm_versions *v, __u32 nr_layers, char *why,
			size_t len);

#endif /* COLOC_DAEMON_SHM_SUMMARY_CHECK_H */
