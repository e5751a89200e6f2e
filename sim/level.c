// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The interference level a simulated round sees: by default colocd's own
 * estimate from finished blocks (policy/level_estimate.h, the same
 * functions colocd's serving core calls), fed with the simulated blocks'
 * times; or the interference model's slowdown itself, a perfect sensor
 * (SIM_LEVEL_MODEL, what the simulator gave the policy before it ran the
 * estimator). The simulator thus models the machine, and the daemon's code
 * decides what the policy is told.
 */
#include <errno.h>
#include <stdlib.h>
#include "sim.h"

int sim_level_init(struct sim_level *l, enum sim_level_source source, int nr_cores,
		   struct coloc_err *err)
{
	*l = (struct sim_level){ .source = source, .nr_cores = nr_cores };
	l->core = calloc((size_t)nr_cores, sizeof(*l->core));
	if (!l->core)
		return coloc_err_set(err, -ENOMEM, "simulator: out of memory for %d cores",
				     nr_cores);
	return 0;
}

void sim_level_free(struct sim_level *l)
{
	free(l->core);
	l->core = NULL;
}

void sim_level_block(struct sim_level *l, const struct policy_decision *d, uint64_t measured_ns,
		     bool alone, uint64_t now)
{
	struct policy_level_evidence ev;

	if (l->source != SIM_LEVEL_BLOCKS || d->tenant < 0 || d->tenant >= POLICY_MAX_TENANTS ||
	    !policy_level_tenant_block(&l->tenant[d->tenant], d->nr_cores, d->alone_ns, measured_ns,
				       alone, &ev))
		return;
	for (int c = policy_cpuset_next(&d->cores, 0); c >= 0 && c < l->nr_cores;
	     c = policy_cpuset_next(&d->cores, c + 1))
		policy_level_core_block(&l->core[c], &ev, now);
}

void sim_level_signals(const struct sim_level *l, const struct policy_config *cfg, uint64_t now,
		       struct policy_signal *core_sig, struct policy_signal *dom_sig)
{
	if (l->source != SIM_LEVEL_BLOCKS)
		return;
	for (int c = 0; c < l->nr_cores; c++)
		core_sig[c].slowdown = policy_level_core_level(&l->core[c], now);
	policy_domain_signals(cfg, core_sig, dom_sig);
}
