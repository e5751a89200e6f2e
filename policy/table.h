/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A latency table that owns its cells: the policy's view (struct
 * policy_costs, in policy.h) and the arrays it points into, with the
 * model's name and a note for the operator. One type for every table
 * coloc builds: a profile's (executor/profile_table.c, as colocd and
 * coloc-sim read it), VELTAIR's and the scaled ones (sim/table_*.c).
 * Whoever fills it allocates the arrays with malloc; policy_table_free()
 * releases them all.
 */
#ifndef COLOC_POLICY_TABLE_H
#define COLOC_POLICY_TABLE_H

#include <stdint.h>
#include "policy.h"

struct policy_table {
	char name[64]; /* the model's, for messages */
	struct policy_costs costs; /* points into the arrays below */
	int *core_counts;
	double *level_slowdown; /* NULL for one level column (VELTAIR's tables) */
	uint64_t *latency_ns;
	uint64_t *latency_lo_ns, *latency_hi_ns; /* the cells' 95 % CIs; NULL: none */
	uint64_t *layer_ops;
	/* empty, or what was adjusted to make the table valid (for the operator) */
	char note[256];
};

/* Frees the arrays and zeroes t; a zeroed table is freed as nothing. */
void policy_table_free(struct policy_table *t);

#endif /* COLOC_POLICY_TABLE_H */
