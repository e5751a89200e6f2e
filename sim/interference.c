// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The provisional interference model: how much slower a block runs than
 * alone, given the share of its LLC domains that other blocks occupy. It is
 * NOT fitted from measured pairs yet (issue 9 asks for that); sim/README.md
 * says what it assumes. Alone (pressure 0) it is exactly 1.0, so a machine
 * running one block at a time reproduces the table.
 */
#include "sim.h"

double sim_interference_slowdown(const struct sim_interference *im, const struct policy_model *m,
				 int first, int last, const uint8_t *versions, int ci,
				 double pressure)
{
	double alone = 0, loaded = 0, pos;

	if (!(pressure > 0))
		return 1.0;
	if (pressure > 1)
		pressure = 1;
	if (m->nr_levels < 2)
		return 1.0 + (im->full_slowdown - 1.0) * pressure;
	/*
	 * The table's own cells under stress, per version: a full domain of
	 * co-runners is read as the highest stress level measured.
	 */
	pos = pressure * (m->nr_levels - 1);
	for (int l = first; l < last; l++) {
		uint64_t a = policy_model_cell(m, l, versions[l - first], ci, 0);
		uint64_t b = policy_model_latency(m, l, versions[l - first], ci, pos);

		alone += (double)a;
		/* a level not measured for this version: fall back to the model's mean slowdown */
		loaded += b ? (double)b :
			      (double)a * (1.0 +
					   (m->level_slowdown[m->nr_levels - 1] - 1.0) * pressure);
	}
	return alone > 0 ? loaded / alone : 1.0;
}
