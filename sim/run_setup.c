// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A run's parameters checked (an executor model's too), its state
 * built from them (the policy created, slots, cores, LLC domains, the
 * tenants' streams, the first arrivals) and freed.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "run_internal.h"

/* An executor model replaces the query cost spent in blocks; its numbers must make sense. */
static int check_exec(const struct sim_exec_timing *em, const struct sim_params *p,
		      struct coloc_err *err)
{
	bool any = false;

	if (!em)
		return 0;
	if (p->query_cost_in_blocks)
		return coloc_err_set(err, -EINVAL,
				     "the executor model and a query cost spent in the blocks "
				     "both stretch the blocks: give one");
	for (int k = 1; k <= SIM_EXEC_MAX_CORES; k++) {
		if (!(em->factor[k] >= 0) || !(em->sigma[k] >= 0 && em->sigma[k] <= 10) ||
		    !(em->cold[k] >= 0))
			return coloc_err_set(
				err, -EINVAL,
				"executor model: factor %g, cold extra %g, spread %g at "
				"%d cores",
				em->factor[k], em->cold[k], em->sigma[k], k);
		any |= em->factor[k] > 0;
		if (em->small_n[k] && !(em->small_floor[k] >= 0))
			return coloc_err_set(
				err, -EINVAL,
				"executor model: the small blocks' floor at %d cores is %g", k,
				em->small_floor[k]);
		for (int q = 0; q < SIM_EXEC_SMALL_Q && em->small_n[k]; q++) {
			const double *e = em->small_extra_ns[k];

			if (!isfinite(e[q]) || (q && !(e[q] >= e[q - 1])))
				return coloc_err_set(err, -EINVAL,
						     "executor model: the small blocks' extra at "
						     "%d cores is not a quantile function (%g at "
						     "p %g)",
						     k, e[q], sim_exec_small_p[q]);
		}
	}
	if (!any || !(em->collapse_p >= 0 && em->collapse_p <= 1) || !(em->collapse_x >= 1))
		return coloc_err_set(err, -EINVAL,
				     "executor model: no factor, or a collapse of p %g, x %g (give "
				     "0..1 and >= 1)",
				     em->collapse_p, em->collapse_x);
	return 0;
}

int sim_run_check_params(const struct sim_params *p, struct coloc_err *err)
{
	if (!p->policy)
		return coloc_err_set(err, -EINVAL, "simulator: no policy");
	if (p->nr_tenants < 1 || p->nr_tenants > POLICY_MAX_TENANTS)
		return coloc_err_set(err, -EINVAL, "simulator: %d tenants; give 1 to %d",
				     p->nr_tenants, POLICY_MAX_TENANTS);
	if (!p->trace && !(p->qps > 0))
		return coloc_err_set(err, -EINVAL,
				     "simulator: a load (QPS > 0) or a trace is needed");
	if (p->shared_penalty && !(p->shared_penalty >= 0.5 && p->shared_penalty <= 100))
		return coloc_err_set(err, -EINVAL,
				     "simulator: a time-sharing penalty of %g; give 0 (ideal "
				     "processor sharing) or 0.5 to 100",
				     p->shared_penalty);
	if (!(p->query_cost_sigma >= 0 && p->query_cost_sigma <= 10))
		return coloc_err_set(err, -EINVAL,
				     "simulator: a query cost spread (sigma) of %g; give 0 to 10",
				     p->query_cost_sigma);
	if (p->max_queued < 1)
		return coloc_err_set(err, -EINVAL, "simulator: max_queued must be at least 1");
	if (!(p->interference.full_slowdown >= 1.0))
		return coloc_err_set(err, -EINVAL,
				     "simulator: a full-domain slowdown of %.3f; it is at least 1",
				     p->interference.full_slowdown);
	if (p->interference.socket_slowdown && !(p->interference.socket_slowdown >= 1.0))
		return coloc_err_set(err, -EINVAL,
				     "simulator: a full-socket slowdown of %.3f; it is at least 1 "
				     "(or 0: none)",
				     p->interference.socket_slowdown);
	for (int t = 0; t < p->nr_tenants; t++) {
		const struct sim_tenant *st = &p->tenants[t];
		int ret;

		if (!st->costs || !st->qos_ns || !(st->share > 0))
			return coloc_err_set(err, -EINVAL,
					     "simulator: tenant %d needs a model, a QoS and a rate "
					     "share > 0",
					     t);
		ret = policy_costs_check(st->costs, err);
		ret = ret ?: check_exec(st->exec, p, err);
		if (ret)
			return coloc_err_prefix(err, "tenant %d (%s)", t,
						st->name ? st->name : "?");
	}
	return 0;
}

int sim_run_state_init(struct sim_state *s, const struct sim_params *p, struct sim_result *r,
		       struct coloc_err *err)
{
	int n = p->machine.nr_cores, max_layers = 0, ret;
	double total_share = 0;

	s->p = p;
	s->r = r;
	ret = sim_machine_config(&p->machine, p->late, &s->cfg, err);
	if (ret)
		return ret;
	s->cfg.socket_slowdown = p->interference.socket_slowdown;
	s->entry = p->policy;
	s->shared = p->policy->shares_cores;
	s->pol = policy_create(p->policy, &s->cfg, err);
	if (!s->pol)
		return err ? err->code : -EINVAL;
	for (int t = 0; t < p->nr_tenants; t++) {
		s->tenants[t] = (struct policy_tenant){
			.costs = p->tenants[t].costs,
			.uid = (uint64_t)t + 1,
			.qos_ns = p->tenants[t].qos_ns,
			.executors = p->executors,
		};
		if (p->tenants[t].costs->nr_layers > max_layers)
			max_layers = p->tenants[t].costs->nr_layers;
		total_share += p->tenants[t].share;
	}
	s->nr_domains = n / p->machine.llc_size;
	s->nr_slots = n;
	s->max_layers = max_layers;
	s->cap_queries = 1024;
	s->queries = malloc((size_t)s->cap_queries * sizeof(*s->queries));
	s->visible = malloc((size_t)s->cap_queries * sizeof(*s->visible));
	s->slots = calloc((size_t)n, sizeof(*s->slots));
	s->free_slots = calloc((size_t)n, sizeof(int));
	s->running = calloc((size_t)n, sizeof(*s->running));
	s->running_slot = calloc((size_t)n, sizeof(int));
	s->core_slot = calloc((size_t)n, sizeof(int));
	s->core_nr = calloc((size_t)n, sizeof(int));
	s->dom_busy = calloc((size_t)s->nr_domains, sizeof(int));
	s->dom_own = calloc((size_t)s->nr_domains, sizeof(int));
	s->nr_sockets = p->machine.nr_sockets;
	s->per_socket = n / p->machine.nr_sockets;
	s->sock_busy = calloc((size_t)s->nr_sockets, sizeof(int));
	s->sock_own = calloc((size_t)s->nr_sockets, sizeof(int));
	s->sock_stamp = calloc((size_t)s->nr_sockets, sizeof(unsigned int));
	s->core_sig = calloc(POLICY_MAX_CPUS, sizeof(*s->core_sig));
	s->dom_sig = calloc(POLICY_MAX_CPUS, sizeof(*s->dom_sig));
	s->out.max_decisions = n;
	s->out.decisions = calloc((size_t)n, sizeof(*s->out.decisions));
	s->out.max_versions = n * max_layers;
	s->out.versions = calloc((size_t)n * max_layers, 1);
	s->out.max_drops = SIM_MAX_DROPS;
	s->out.drops = calloc(SIM_MAX_DROPS, sizeof(*s->out.drops));
	if (!s->queries || !s->visible || !s->slots || !s->free_slots || !s->running ||
	    !s->running_slot || !s->core_slot || !s->core_nr || !s->dom_busy || !s->dom_own ||
	    !s->sock_busy || !s->sock_own || !s->sock_stamp || !s->core_sig || !s->dom_sig ||
	    !s->out.decisions || !s->out.versions || !s->out.drops)
		return coloc_err_set(err, -ENOMEM, "simulator: out of memory for %d cores", n);
	for (int i = 0; i < n; i++) {
		s->slots[i].versions = malloc((size_t)max_layers);
		if (!s->slots[i].versions)
			return coloc_err_set(err, -ENOMEM, "simulator: out of memory");
		s->slots[i].pos = -1;
		/* the lowest slot first, for a reproducible order */
		s->free_slots[s->nr_free_slots++] = n - 1 - i;
		s->core_slot[i] = -1;
	}
	for (int c = 0; c < POLICY_MAX_CPUS; c++) {
		s->core_sig[c] =
			(struct policy_signal){ .live = POLICY_SIG_BUSY | POLICY_SIG_SLOWDOWN,
						.slowdown = 1.0 };
		s->dom_sig[c] = s->core_sig[c];
	}
	s->free = s->cfg.online;
	ret = sim_level_init(&s->level, p->level_source, n, err) ?:
		      sim_execs_init(&s->execs, p->nr_tenants, p->executors, err);
	if (ret)
		return ret;
	sim_speed_init(&s->speed, p->seed, p->speed_rho, p->speed_tau_ns);
	ret = sim_heap_init(&s->heap, 4 * n + p->nr_tenants, err);
	if (ret)
		return ret;
	/* every tenant's own stream, a trace's too (unseeded, all drew the same) */
	for (int t = 0; t < p->nr_tenants; t++) {
		coloc_rng_seed(&s->cost_rng[t],
			       ~p->seed + (uint64_t)(t + 1) * 0x9e3779b97f4a7c15ULL);
		coloc_rng_seed(&s->parts_rng[t],
			       p->seed ^ (uint64_t)(t + 1) * 0xbf58476d1ce4e5b9ULL);
	}
	if (p->trace)
		return sim_run_push_next_arrival(s, 0, err);
	for (int t = 0; t < p->nr_tenants; t++) {
		sim_poisson_init(&s->poisson[t], p->seed, t,
				 p->qps * p->tenants[t].share / total_share, p->even_arrivals);
		ret = sim_run_push_next_arrival(s, t, err);
		if (ret)
			return ret;
	}
	return 0;
}

void sim_run_state_free(struct sim_state *s)
{
	if (s->slots)
		for (int i = 0; i < s->nr_slots; i++)
			free(s->slots[i].versions);
	for (int t = 0; t < POLICY_MAX_TENANTS; t++)
		sim_latencies_free(&s->lat[t]);
	policy_destroy(s->pol);
	sim_heap_free(&s->heap);
	free(s->queries);
	free(s->visible);
	sim_execs_free(&s->execs);
	free(s->slots);
	free(s->free_slots);
	free(s->running);
	free(s->running_slot);
	free(s->core_slot);
	free(s->core_nr);
	free(s->dom_busy);
	free(s->sock_busy);
	free(s->sock_own);
	free(s->sock_stamp);
	free(s->dom_own);
	free(s->core_sig);
	free(s->dom_sig);
	free(s->out.decisions);
	free(s->out.versions);
	free(s->out.drops);
	free(s->decide_us);
	sim_level_free(&s->level);
}
