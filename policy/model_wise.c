// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * model-wise: the Planaria-like baseline of the scheduler issue. Each query,
 * in arrival order, gets its whole remaining model as one block on the
 * fewest profiled cores whose alone latency meets its QoS (the fastest
 * count when none does, at most what is free), each layer in its fastest
 * version alone; no interference level, no learned correction. It is the
 * coloc engine (coloc.c) with those parts off.
 */
#include "policy_impl.h"

COLOC_ENTRY(policy_model_wise, "model-wise",
	    "each query's whole model on the fewest cores whose alone latency meets its QoS, "
	    "first come first served (Planaria-like)",
	    .versions = true, .unit = COLOC_UNIT_MODEL);
