// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Releasing a latency table's cells (table.h): the one free for the tables
 * of profiles and of the simulator alike.
 */
#include <stdlib.h>
#include "table.h"

void policy_table_free(struct policy_table *t)
{
	free(t->core_counts);
	free(t->level_slowdown);
	free(t->latency_ns);
	free(t->latency_lo_ns);
	free(t->latency_hi_ns);
	free(t->layer_ops);
	*t = (struct policy_table){ 0 };
}
