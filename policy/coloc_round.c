// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A coloc round's view of the machine and the queue: the level of the free
 * cores, busy cores and the heaviest aggressor per LLC domain, cores granted
 * from the best domains first, and each tenant's queued queries in the
 * policy's order (sorted by tenant once a round).
 */
#include <math.h>
#include "coloc_internal.h"

/*
 * The level a round uses, in steps of this much slowdown: a measured level
 * carries a few % of noise, and a level that moves re-reads the tables (a
 * round then costs ~10x more, see the cache below).
 */
#define COLOC_LEVEL_STEP 0.02

/* The slowdown of a core: its own signal, else its domain's, else none (1.0). */
static double core_slowdown(const struct policy_config *cfg, const struct policy_input *in, int c)
{
	if (in->cores && (in->cores[c].live & POLICY_SIG_SLOWDOWN))
		return in->cores[c].slowdown;
	if (in->domains && (in->domains[cfg->llc[c]].live & POLICY_SIG_SLOWDOWN))
		return in->domains[cfg->llc[c]].slowdown;
	return 1.0;
}

/* The mean slowdown of r's free cores, at least 1.0, in CPU order; counts them in r->nr_free. */
static double free_slowdown(const struct policy_config *cfg, const struct policy_input *in,
			    struct round *r)
{
	double sum = 0;
	int n = 0;

	for (int w = 0; w < CPU_WORDS; w++)
		for (uint64_t bits = r->free.bits[w]; bits; bits &= bits - 1) {
			sum += core_slowdown(cfg, in, w * 64 + __builtin_ctzll(bits));
			n++;
		}
	r->nr_free = n;
	if (!n || sum / n <= 1.0)
		return 1.0;
	return 1.0 + round((sum / n - 1.0) / COLOC_LEVEL_STEP) * COLOC_LEVEL_STEP;
}

/*
 * How hard a tenant presses on what co-runners share, from its own
 * attributed signals: DRAM bandwidth where any running tenant has it live,
 * else LLC misses per second; < 0 when it has no such signal (no PMU).
 */
static double pressure(const struct policy_input *in, int t, bool by_dram)
{
	const struct policy_signal *sig = &in->tenants[t].sig;

	if (by_dram)
		return sig->live & POLICY_SIG_DRAM ? sig->dram_gbps : -1;
	return sig->live & POLICY_SIG_LLC ? sig->llc_misses_per_s : -1;
}

/*
 * The heaviest aggressor: of the tenants running a block, the one with the
 * highest pressure, counted per LLC domain by the cores it holds, so that
 * cores for others come from where it is not (VELTAIR's co-location by
 * interference, per-tenant attribution standing in for its profiling).
 */
static void find_aggressor(const struct policy_config *cfg, const struct policy_input *in,
			   struct round *r)
{
	bool by_dram = false;
	double most = 0;
	int aggressor = -1;

	for (int i = 0; i < in->nr_running; i++)
		by_dram |= in->tenants[in->running[i].tenant].sig.live & POLICY_SIG_DRAM;
	for (int i = 0; i < in->nr_running; i++) {
		double p = pressure(in, in->running[i].tenant, by_dram);

		if (p > most) {
			most = p;
			aggressor = in->running[i].tenant;
		}
	}
	for (int i = 0; i < in->nr_running && aggressor >= 0; i++) {
		const struct policy_cpuset *c = &in->running[i].cores;

		if (in->running[i].tenant != aggressor)
			continue;
		for (int w = 0; w < CPU_WORDS; w++)
			for (uint64_t bits = c->bits[w]; bits; bits &= bits - 1)
				r->agg[cfg->llc[w * 64 + __builtin_ctzll(bits)]]++;
	}
}

/* What a round starts from: busy cores per domain, the level, the tenants running, the queue sorted. */
void coloc_round_init(struct coloc_state *st, const struct policy_config *cfg,
		      const struct policy_input *in, struct round *r)
{
	int fill[POLICY_MAX_TENANTS];

	for (int w = 0; w < CPU_WORDS; w++)
		for (uint64_t bits = cfg->online.bits[w] & ~r->free.bits[w]; bits; bits &= bits - 1)
			r->busy[cfg->llc[w * 64 + __builtin_ctzll(bits)]]++;
	find_aggressor(cfg, in, r);
	r->slowdown = free_slowdown(cfg, in, r);
	r->nr_blocks = in->nr_running;
	for (int i = 0; i < in->nr_running; i++)
		r->in_flight[in->running[i].tenant]++;
	r->sorted = in->nr_queries <= COLOC_MAX_QUEUED;
	if (!r->sorted)
		return;
	for (int i = 0; i < in->nr_queries; i++)
		if (!in->queries[i].in_flight)
			r->nr[in->queries[i].tenant]++;
	for (int t = 0; t < in->nr_tenants; t++) {
		r->at[t] = t ? r->at[t - 1] + r->nr[t - 1] : 0;
		fill[t] = r->at[t];
	}
	for (int i = 0; i < in->nr_queries; i++)
		if (!in->queries[i].in_flight)
			st->queued[fill[in->queries[i].tenant]++] = &in->queries[i];
}

/*
 * Whether LLC domain d is a better place than best for new cores: fewer of
 * the aggressor's cores, then fewer busy cores, then the lower slowdown.
 * (The aggressor runs a block, so it is never the one asking: a tenant
 * runs one block at a time.)
 */
static bool domain_better(const struct round *r, int d, double slow, int best, double best_slow)
{
	if (best < 0)
		return true;
	if (r->agg[d] != r->agg[best])
		return r->agg[d] < r->agg[best];
	if (r->busy[d] != r->busy[best])
		return r->busy[d] < r->busy[best];
	return slow < best_slow;
}

/* Grants n cores from r->free, best LLC domains first (domain_better). */
void coloc_grant_cores(const struct policy_config *cfg, const struct policy_input *in,
		       struct round *r, int n, struct policy_cpuset *cores)
{
	policy_cpuset_zero(cores);
	while (n > 0) {
		int best = -1, prev = -1;
		double best_slow = 0;

		for (int w = 0; w < CPU_WORDS; w++)
			for (uint64_t bits = r->free.bits[w]; bits; bits &= bits - 1) {
				int d = cfg->llc[w * 64 + __builtin_ctzll(bits)];
				double slow;

				/* the next core of the domain just compared compares the same */
				if (d == prev)
					continue;
				prev = d;
				slow = in->domains && (in->domains[d].live & POLICY_SIG_SLOWDOWN) ?
					       in->domains[d].slowdown :
					       1.0;
				if (domain_better(r, d, slow, best, best_slow)) {
					best = d;
					best_slow = slow;
				}
			}
		for (int w = 0; w < CPU_WORDS && n > 0; w++)
			for (uint64_t bits = r->free.bits[w]; bits && n > 0; bits &= bits - 1) {
				int c = w * 64 + __builtin_ctzll(bits);

				if (cfg->llc[c] != best)
					continue;
				policy_cpuset_set(cores, c);
				policy_cpuset_clear(&r->free, c);
				r->nr_free--;
				r->busy[best]++;
				n--;
			}
	}
	r->nr_blocks++;
}

bool coloc_before(const struct coloc_state *st, const struct policy_query *a,
		  const struct policy_query *b)
{
	uint64_t ka = st->flags.headroom ? a->deadline_ns : a->arrival_ns;
	uint64_t kb = st->flags.headroom ? b->deadline_ns : b->arrival_ns;

	return ka < kb || (ka == kb && a->id < b->id);
}

/* Tenant t's first queued query in the policy's order after `after` (NULL: from the start). */
const struct policy_query *coloc_next_query(const struct coloc_state *st,
					    const struct policy_input *in, const struct round *r,
					    int t, const struct policy_query *after)
{
	const struct policy_query *best = NULL;
	int n = r->sorted ? r->nr[t] : in->nr_queries;

	for (int i = 0; i < n; i++) {
		const struct policy_query *q =
			r->sorted ? st->queued[r->at[t] + i] : &in->queries[i];

		if (q->tenant != t || q->in_flight || (after && !coloc_before(st, after, q)))
			continue;
		if (!best || coloc_before(st, q, best))
			best = q;
	}
	return best;
}
