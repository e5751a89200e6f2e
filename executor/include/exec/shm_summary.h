/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The summary of an imported model that an executor hands colocd through
 * the shared memory (struct coloc_shm_summary in include/coloc/shm.h):
 * written by the executor after its sandboxed import, so that colocd can
 * admit the tenant without parsing the model (docs/security-submit.md),
 * and, once its kernels are built, the versions it built (struct
 * coloc_shm_versions), which colocd checks against the profile.
 */
#ifndef COLOC_SHM_SUMMARY_H
#define COLOC_SHM_SUMMARY_H

#include <stddef.h>
#include "coloc/shm.h"
#include "executor.h"
#include "model.h"

/*
 * m described into *out: its name, each layer's MACs, one query's input
 * (the input layers) and output (the layers no later layer reads) in
 * shm.h's layout. 0, or -E2BIG (too many layers, a name too long for the
 * summary, sizes that overflow) with why saying which.
 */
int shm_summary_fill(const struct model *m, struct coloc_shm_summary *out, char *why, size_t len);

/*
 * The summary filled into shm->summary is complete: sets header.described
 * (release order) and rings colocd's doorbell (done_fd); 0 or -errno.
 */
int shm_summary_publish(struct coloc_shm *shm, int done_fd);

/*
 * The kernel versions em built, each layer's by name in its order, into
 * *out (profile_versions.h's form), before header.state becomes READY.
 * 0, or -E2BIG with why (more layers or distinct names than it holds).
 */
int shm_versions_fill(const struct exec_model *em, struct coloc_shm_versions *out, char *why,
		      size_t len);

#endif /* COLOC_SHM_SUMMARY_H */
