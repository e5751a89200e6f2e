// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A policy's per-LLC-domain signals from its per-core ones: what colocd
 * gives the policy for each domain (VELTAIR's level per socket and per
 * core), so that a core without a signal of its own takes its domain's and
 * cores are granted in the least loaded domain. Each field is live in a
 * domain when it is live in one of its online cores at least: rates (LLC
 * misses per second, DRAM GB/s) add up over those cores, ratios and levels
 * (busy, slowdown, LLC miss ratio) are their mean.
 */
#include <string.h>
#include "policy.h"

/* How many cores of a domain had each averaged field live. */
struct domain_counts {
	int busy, slow, llc;
};

static void add_core(struct policy_signal *d, struct domain_counts *n,
		     const struct policy_signal *c)
{
	d->live |= c->live &
		   (POLICY_SIG_BUSY | POLICY_SIG_SLOWDOWN | POLICY_SIG_LLC | POLICY_SIG_DRAM);
	if (c->live & POLICY_SIG_BUSY) {
		d->busy += c->busy;
		n->busy++;
	}
	if (c->live & POLICY_SIG_SLOWDOWN) {
		d->slowdown += c->slowdown;
		n->slow++;
	}
	if (c->live & POLICY_SIG_LLC) {
		d->llc_miss_ratio += c->llc_miss_ratio;
		d->llc_misses_per_s += c->llc_misses_per_s;
		n->llc++;
	}
	if (c->live & POLICY_SIG_DRAM)
		d->dram_gbps += c->dram_gbps;
}

void policy_domain_signals(const struct policy_config *cfg, const struct policy_signal *cores,
			   struct policy_signal *domains)
{
	struct domain_counts n[POLICY_MAX_CPUS];

	for (int c = policy_cpuset_next(&cfg->online, 0); c >= 0;
	     c = policy_cpuset_next(&cfg->online, c + 1)) {
		memset(&domains[cfg->llc[c]], 0, sizeof(domains[0]));
		memset(&n[cfg->llc[c]], 0, sizeof(n[0]));
	}
	for (int c = policy_cpuset_next(&cfg->online, 0); c >= 0;
	     c = policy_cpuset_next(&cfg->online, c + 1))
		add_core(&domains[cfg->llc[c]], &n[cfg->llc[c]], &cores[c]);
	for (int c = policy_cpuset_next(&cfg->online, 0); c >= 0;
	     c = policy_cpuset_next(&cfg->online, c + 1)) {
		struct policy_signal *d = &domains[cfg->llc[c]];
		const struct domain_counts *k = &n[cfg->llc[c]];

		/* each domain once: its first core divides, the others find it done */
		if (k->busy < 0)
			continue;
		d->busy = k->busy ? d->busy / k->busy : 0;
		d->slowdown = k->slow ? d->slowdown / k->slow : 0;
		d->llc_miss_ratio = k->llc ? d->llc_miss_ratio / k->llc : 0;
		n[cfg->llc[c]].busy = -1;
	}
}
