// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What a block and a query cost beyond the table's time: the executor
 * model's factor, warm-up, spread, dispatch and collapse (exec_fit.c fits
 * it), or the query cost spent in the blocks; the query's cost after its
 * last block. Every draw from the tenant's own stream.
 */
#include <math.h>
#include "run_internal.h"

/* median x exp(sigma x Z), Z standard normal from the tenant's own stream. */
static double lognormal(struct sim_state *s, int tenant, double median, double sigma)
{
	if (!sigma || !median)
		return median;
	return median * exp(sigma * sim_normal(&s->cost_rng[tenant]));
}

/* median spread lognormally by query_cost_sigma. */
static double cost_spread(struct sim_state *s, int tenant, double median)
{
	return lognormal(s, tenant, median, s->p->query_cost_sigma);
}

/* The executor model's row for k cores: the largest fitted count <= k, else the smallest. */
static int exec_cores(const struct sim_exec_timing *em, int k)
{
	int c = k < SIM_EXEC_MAX_CORES ? k : SIM_EXEC_MAX_CORES;

	for (; c >= 1; c--)
		if (em->factor[c] > 0)
			return c;
	for (c = k + 1; c <= SIM_EXEC_MAX_CORES; c++)
		if (em->factor[c] > 0)
			return c;
	return 0;
}

/*
 * A block's standard normal draw: its tenant's own, with rho of its
 * variance the machine's slow spell now (speed.c).
 */
static double block_z(struct sim_state *s, int tenant)
{
	if (s->speed.rho > 0)
		return sqrt(s->speed.rho) * sim_speed_z(&s->speed, s->now) +
		       sqrt(1 - s->speed.rho) * sim_normal(&s->cost_rng[tenant]);
	return sim_normal(&s->cost_rng[tenant]);
}

/*
 * With the executor model: the block's stretch over its table time
 * (table_ns) and its fixed costs (sim_exec_timing); on shared cores it may
 * collapse.
 */
double sim_run_exec_stretch(struct sim_state *s, struct sim_slot *sl, double table_ns,
			    uint64_t *fixed_ns)
{
	const struct sim_exec_timing *em = s->p->tenants[sl->d.tenant].exec;
	int k = exec_cores(em, sl->d.nr_cores);
	bool small;
	double f;

	if (!k) {
		*fixed_ns = 0;
		return 1.0;
	}
	small = table_ns < SIM_EXEC_MIN_ALONE_US * 1e3;
	if (small && em->small_n[k] > 0 && table_ns > 0) {
		/*
		 * the extra's quantile at the same (spell-correlated) Z as a long
		 * block's; measured on such blocks, it holds their spread and
		 * their coldness: no lognormal, no cold term
		 */
		double z = block_z(s, sl->d.tenant);
		double e = sim_exec_small_extra(em->small_extra_ns[k], 0.5 * erfc(-z / sqrt(2.0)));

		f = fmax(em->factor[k] + e / table_ns, em->small_floor[k]);
	} else {
		/* the same lognormal per block; rho of its log variance shared by the machine now */
		f = em->sigma[k] ? em->factor[k] * exp(em->sigma[k] * block_z(s, sl->d.tenant)) :
				   em->factor[k];
		if (em->cold[k] > 0) {
			const uint64_t last = s->last_block_end_ns[sl->d.tenant][sl->copy];
			double cold = 1.0;

			if (last && em->warm_ns)
				cold = 1.0 - exp(-(double)(s->now - last) / (double)em->warm_ns);
			f *= 1.0 + em->cold[k] * cold;
		}
	}
	sl->dispatch_ns = small ? em->small_dispatch_ns[k] : em->dispatch_ns[k];
	*fixed_ns = sl->dispatch_ns;
	if (s->shared && em->collapse_p > 0 &&
	    coloc_rng_uniform(&s->cost_rng[sl->d.tenant]) <= em->collapse_p) {
		sl->collapsed = true;
		f *= em->collapse_x;
	}
	return f;
}

/* The tenant's cost of one query after its last block (none when it is spent in the blocks). */
uint64_t sim_run_query_cost(struct sim_state *s, int tenant)
{
	if (s->p->query_cost_in_blocks)
		return 0;
	return (uint64_t)llround(
		cost_spread(s, tenant, (double)s->p->tenants[tenant].query_cost_ns));
}

/*
 * What a block's layers take per ns of table: 1, or with the cost in the
 * blocks 1 + its share, times how cold the block's copy of the tenant's
 * weights is: with a warm-up time, 1 - exp(-idle / warm) for the idle time
 * since the last query on that copy ended (its caches refill only after a
 * gap), else always cold.
 */
double sim_run_block_stretch(struct sim_state *s, const struct sim_slot *sl)
{
	int tenant = sl->d.tenant;
	const uint64_t last = s->last_end_ns[tenant][sl->copy];
	const struct sim_tenant *t = &s->p->tenants[tenant];
	uint64_t solo = policy_costs_solo_ns(t->costs, policy_cpuset_count(&s->cfg.online));
	double cold = 1.0;

	if (!s->p->query_cost_in_blocks || !t->query_cost_ns || !solo)
		return 1.0;
	if (s->p->query_cost_warm_ns && last)
		cold = 1.0 - exp(-(double)(s->now - last) / (double)s->p->query_cost_warm_ns);
	return 1.0 + cold * cost_spread(s, tenant, (double)t->query_cost_ns / (double)solo);
}
