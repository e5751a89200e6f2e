// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * layer-wise: the scheduler issue's per-layer baseline. Each query, in
 * arrival order, runs one layer per block, each on the fewest profiled cores
 * whose alone latency meets the layer's share of the QoS (tenant QoS x
 * layer ops / model ops), in its fastest version alone; no interference
 * level, no learned correction. It is the coloc engine (coloc.c) with those
 * parts off.
 */
#include "policy_impl.h"

COLOC_ENTRY(policy_layer_wise, "layer-wise",
	    "each layer its own block on the fewest cores whose alone latency meets its share "
	    "of the QoS, first come first served",
	    .versions = true, .unit = COLOC_UNIT_LAYER);
