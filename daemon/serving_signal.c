// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Signals measured outside the serving core, put into its per-core and
 * per-tenant policy signals: colocd's sensor records give a core's (and,
 * attributed, a tenant's) LLC and DRAM signals and,
 * with the PMU level model, its level (daemon/level_source.h). A core whose
 * level came from the model is marked POLICY_SIG_LEVEL_PMU; the
 * estimate from blocks (serving.c) then leaves its level alone, and it
 * ages towards 1.0 like any other when no window reports it.
 */
#include <errno.h>
#include "serving_internal.h"
#include "mono_clock.h"

#define SV_EXTERNAL_SIGS (POLICY_SIG_LLC | POLICY_SIG_DRAM)

int serving_set_tenant_signal(struct serving *s, const char *name, const struct policy_signal *sig)
{
	struct sv_tenant *t = sv_find_tenant(s, name);

	if (!t)
		return -ENOENT;
	t->sig.live = sig->live & SV_EXTERNAL_SIGS;
	t->sig.llc_miss_ratio = sig->llc_miss_ratio;
	t->sig.llc_misses_per_s = sig->llc_misses_per_s;
	t->sig.dram_gbps = sig->dram_gbps;
	return 0;
}

int serving_set_core_signal(struct serving *s, int cpu, const struct policy_signal *sig)
{
	struct policy_signal *cs;

	if (cpu < 0 || cpu >= POLICY_MAX_CPUS)
		return -EINVAL;
	cs = &s->core_sig[cpu];
	cs->live = (cs->live & ~SV_EXTERNAL_SIGS) | (sig->live & SV_EXTERNAL_SIGS);
	cs->llc_miss_ratio = sig->llc_miss_ratio;
	cs->llc_misses_per_s = sig->llc_misses_per_s;
	cs->dram_gbps = sig->dram_gbps;
	if (sig->live & POLICY_SIG_LEVEL_PMU) {
		policy_level_core_set(&s->core_level[cpu], sig->slowdown, coloc_now_ns());
		cs->live |= POLICY_SIG_SLOWDOWN | POLICY_SIG_LEVEL_PMU;
	}
	return 0;
}
