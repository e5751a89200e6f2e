// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The interference model: how much slower a block runs than alone, given
 * the share of its LLC domains that other blocks occupy (its LLC pressure)
 * and the share of the other cores of its socket they occupy (its socket
 * pressure: the memory bandwidth every core of a socket shares). The
 * whole-model slowdowns at a full domain (full_slowdown) and at a full
 * socket (socket_slowdown) are the two parameters; sim/README.md says where
 * each value comes from (fitted from model pairs measured on our 2-core
 * machine, or VELTAIR's figure, an assumption, for many cores). Alone (both
 * pressures 0) it is exactly 1.0, so a machine running one block at a time
 * reproduces the table.
 */
#include "sim.h"

/*
 * Layer l at version v and count ci at level (1 + both pressures' parts),
 * pos and beyond its column position and the factor past the last column:
 * the version's own level cells, or its time alone times the level where
 * they were not measured.
 */
static double layer_loaded_ns(const struct policy_costs *m, int l, int v, int ci, double level,
			      double pos, double beyond)
{
	uint64_t a = policy_costs_cell(m, l, v, ci, 0), b;

	if (m->nr_levels < 2 || !m->level_slowdown)
		return (double)a * level;
	b = policy_costs_latency(m, l, v, ci, pos);
	return b ? (double)b * beyond : (double)a * level;
}

/* Beyond the last column (pairs slow a model more than coloc-stress did) cells scale up to the level. */
static double beyond_last(const struct policy_costs *m, double level, double pos)
{
	int last = m->nr_levels - 1;

	return pos >= last && level > m->level_slowdown[last] ? level / m->level_slowdown[last] :
								 1.0;
}

double sim_interference_layer_ns(const struct policy_costs *m, int layer, int version, int ci,
				 double level)
{
	double pos = policy_costs_level_pos(m, level);

	return layer_loaded_ns(m, layer, version, ci, level, pos,
			       m->nr_levels < 2 || !m->level_slowdown ? 1.0 :
									beyond_last(m, level, pos));
}

double sim_interference_slowdown(const struct sim_interference *im, const struct policy_costs *m,
				 int first, int last_layer, const uint8_t *versions, int ci,
				 double llc_pressure, double socket_pressure)
{
	double alone = 0, loaded = 0, beyond, level, pos;
	double socket_full = im->socket_slowdown > 1.0 ? im->socket_slowdown : 1.0;

	if (!(llc_pressure > 0))
		llc_pressure = 0;
	if (!(socket_pressure > 0) || socket_full == 1.0)
		socket_pressure = 0;
	if (!llc_pressure && !socket_pressure)
		return 1.0;
	if (llc_pressure > 1)
		llc_pressure = 1;
	if (socket_pressure > 1)
		socket_pressure = 1;
	level = 1.0 + (im->full_slowdown - 1.0) * llc_pressure +
		(socket_full - 1.0) * socket_pressure;
	if (m->nr_levels < 2 || !m->level_slowdown)
		return level;
	/*
	 * That level is VELTAIR's (the model's slowdown): read each layer's
	 * own version cells at the column where the model's measured slowdown
	 * under coloc-stress equals it, so versions differ as profiled.
	 */
	pos = policy_costs_level_pos(m, level);
	beyond = beyond_last(m, level, pos);
	for (int l = first; l < last_layer; l++) {
		alone += (double)policy_costs_cell(m, l, versions[l - first], ci, 0);
		loaded += layer_loaded_ns(m, l, versions[l - first], ci, level, pos, beyond);
	}
	return alone > 0 ? loaded / alone : 1.0;
}
