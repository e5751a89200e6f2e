/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the tools have on top of the profile library (profile.h,
 * profile_table.h) because they link oneDNN and the model parser: this
 * machine as oneDNN names its ISA, and a model's profile found and turned
 * into the policy's table from the model file and its parsed layers.
 * colocd has none of it: it asks coloc-executor --print-isa for the ISA,
 * keys its sealed copies and takes the layers from the executor's summary.
 */
#ifndef COLOC_EXEC_PROFILE_HOST_H
#define COLOC_EXEC_PROFILE_HOST_H

#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "model.h"
#include "profile_table.h"

/* profile_machine_detect_isa with the ISA oneDNN gives this process (profile_isa.c). */
int profile_machine_detect(struct profile_machine *m);
/* The ISA oneDNN dispatches to in this process, e.g. "avx2", "avx512_core". */
void profile_isa_name(char *buf, size_t len);

/* profile_table_build_layers with m's name, layers and MACs (profile_of_model.c). */
int profile_table_build(const struct profile *p, const struct model *m, struct policy_table *t,
			struct coloc_err *err);
/*
 * profile_table_find_keyed for the model file at model_path (already
 * parsed as m; no weights file), keyed here (model_open_key), on this
 * machine (profile_machine_detect).
 */
struct profile *profile_table_find(const char *model_path, const struct model *m,
				   const char *cache_dir, struct coloc_err *err);

/*
 * How busy this machine is (profile_busy.c), for a profile's conditions:
 * the CPU time counters of /proc/stat's first line (all CPUs), the share
 * of it the hypervisor stole between two readings, and the 1-minute load
 * average. 0 or -errno.
 */
struct profile_cpu_ticks {
	uint64_t steal, total;
};
int profile_cpu_ticks_read(struct profile_cpu_ticks *t);
/* Stolen share of the CPU time from a to b, 0..1 (0 when no time passed). */
double profile_steal_share(const struct profile_cpu_ticks *a, const struct profile_cpu_ticks *b);
int profile_loadavg_read(double *load1);

#endif /* COLOC_EXEC_PROFILE_HOST_H */
