// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc and its ablations, each a set of the engine's flags (struct
 * coloc_flags, policy_impl.h): one entry a variant, no copies of the
 * engine. What each switch does and what it was measured to gain:
 * docs/design/coloc-policy.md and docs/measurements/.
 */
#include "policy_impl.h"

COLOC_ENTRY(policy_coloc, "coloc",
	    "VELTAIR's layer blocks and versions by interference level, Abacus's prediction "
	    "and headroom order",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .alone = true);
COLOC_ENTRY(policy_coloc_shared, "coloc-shared",
	    "coloc without tenants that run alone on the socket: every tenant shares it",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true);
COLOC_ENTRY(policy_coloc_whole, "coloc-whole",
	    "coloc with model-wise's choice as a candidate: the rest of a query whole on the "
	    "fewest cores that fit its budget, when no more cores than the block and no one waits",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .whole_candidate = true);
COLOC_ENTRY(policy_coloc_noversions, "coloc-noversions",
	    "coloc with one fixed version per layer (its fastest alone)", .use_level = true,
	    .headroom_budget = true, .use_spare = true, .spare_to_knee = true,
	    .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true, .headroom = true,
	    .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_noblocks, "coloc-noblocks",
	    "coloc with the whole remaining model as one block (model-wise inside coloc)",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .unit = COLOC_UNIT_MODEL, .predict = true, .headroom = true);
COLOC_ENTRY(policy_coloc_fixedthres, "coloc-fixedthres",
	    "coloc with a fixed pivot threshold of 0 instead of the dynamic one", .use_level = true,
	    .versions = true, .headroom_budget = true, .use_spare = true, .spare_to_knee = true,
	    .unit = COLOC_UNIT_BLOCK, .fixed_thres = 0, .predict = true, .headroom = true,
	    .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_noprediction, "coloc-noprediction",
	    "coloc without the online correction of predicted latencies", .use_level = true,
	    .versions = true, .headroom_budget = true, .use_spare = true, .spare_to_knee = true,
	    .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .headroom = true, .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_nocap, "coloc-nocap",
	    "coloc without the cap on a block's length (half the other tenants' least slack)",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true,
	    .headroom = true);
COLOC_ENTRY(policy_coloc_fcfs, "coloc-fcfs", "coloc in arrival order instead of headroom order",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true,
	    .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_ewma, "coloc-ewma",
	    "coloc predicting every block from the EWMAs alone, never from its own median",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .ewma_only = true);
COLOC_ENTRY(policy_coloc_nospare, "coloc-nospare",
	    "coloc without spare cores: each block on the fewest cores that fit its budget",
	    .use_level = true, .versions = true, .headroom_budget = true, .block_cap = 0.5,
	    .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true, .headroom = true);
COLOC_ENTRY(policy_coloc_timeshares, "coloc-timeshares",
	    "coloc sharing each query's QoS over its layers by their alone latency on the "
	    "fewest cores where the model fits, instead of by their ops (VELTAIR's rule)",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .time_shares = true);
COLOC_ENTRY(policy_coloc_wide, "coloc-wide",
	    "coloc-timeshares whose blocks also take every free core that keeps 80 % of their "
	    "per-core speed on the cores they need",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .time_shares = true,
	    .spare_efficient = true);
COLOC_ENTRY(policy_coloc_noknee, "coloc-noknee",
	    "coloc with spare cores up to avg_C + thres, past the knee of the block's scaling "
	    "curve (coloc before 2026-12-05)",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true,
	    .headroom = true);
COLOC_ENTRY(policy_coloc_layercounts, "coloc-layercounts",
	    "coloc whose blocks with no count that fits their budget end where their layers' "
	    "own fastest counts part, each run on its own",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .alone = true,
	    .layer_counts = true);
COLOC_ENTRY(policy_coloc_priced, "coloc-priced",
	    "coloc whose blocks, where the socket-wide slowdown is known, may take every free "
	    "core that pays, the socket's price picking the count in place of the knee",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .spare_to_knee = true, .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .alone = true,
	    .spare_priced = true);
