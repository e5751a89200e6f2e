// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One simulation: the event loop that drives a policy exactly as colocd
 * does (policy/policy.h, "Who calls it, when"). On every event (an arrival,
 * a block's completion) it calls policy_decide() with the whole picture,
 * runs policy_check_output() on the round and refuses a policy that breaks
 * it, starts every decision at once on its cores, removes drops, and at a
 * block's simulated completion calls policy_block_done(), advances the
 * query and returns the cores.
 *
 * A block's latency is its table latency alone (its layers, versions and
 * core count) stretched by the interference model while other blocks share
 * its LLC domains. Progress is tracked as alone-time left: whenever a block
 * starts or ends, every block sharing a domain with it is re-rated and its
 * completion rescheduled (the stale completion event is skipped by its
 * generation). The level each round sees is colocd's own estimate from the
 * finished blocks' simulated times (level.c), or with SIM_LEVEL_MODEL the
 * interference model's slowdown of the block on each core.
 *
 * A policy whose entry has shares_cores (the `os` baseline: the kernel
 * time-shares the cores) may start blocks on cores that already run some:
 * every core is then processor-shared among the blocks on it, and a block
 * progresses at 1 / (its interference slowdown x the largest number of
 * blocks on any of its cores), re-rated at every start and end. A block is
 * as fast as its most crowded core lets it be: its threads meet at every
 * layer's end, so the slowest one sets the pace; the time-sharing penalty
 * applies while that number is above 1; a collapsed block keeps its own
 * pace. All cores stay free to such a policy, as colocd passes them.
 *
 * Serving costs (sim/README.md: fitted from colocd on this machine): each
 * block's alone-time grows by the block cost (the dispatch round trip, its
 * cores held meanwhile), and each finished query's latency by its tenant's
 * query cost (no core held, unseen by the policy). A tenant with an
 * executor model (sim_exec_timing, fitted on colocd's block logs) has its
 * blocks stretched by that instead: the measured factor, warm-up, spread and
 * dispatch, and on shared cores the measured collapse onto one core. With
 * the serving path's parts (parts.c), blocks and queries take those too.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "parts.h"

#define SIM_MAX_DROPS 1024
#define SIM_MAX_ROUNDS 16 /* decide calls an event, as colocd's SV_MAX_ROUNDS */

struct sim_slot {
	struct policy_decision d; /* d.versions points at versions below */
	uint8_t *versions;
	int ci; /* index of d.nr_cores in the model's core counts */
	int pos; /* index in the running array; -1 when the slot is free */
	uint64_t start_ns;
	uint64_t last_ns; /* when left_ns was last brought up to date */
	double left_ns; /* alone-time still to run */
	double slowdown; /* from the interference model */
	double stretch; /* slowdown x the most blocks sharing one of its cores */
	bool collapsed; /* shared cores: its threads on one core, not slowed by the others */
	uint64_t dispatch_ns; /* executor model: the part of its time outside the executor's */
	bool alone; /* no other tenant's block ran when it started (the level's evidence) */
	uint64_t gen;
	unsigned int stamp; /* for visiting each neighbour once */
};

struct sim_state {
	const struct sim_params *p;
	struct sim_result *r;
	struct policy_config cfg;
	struct policy *pol;
	const struct policy_entry *entry;
	struct sim_heap heap;
	struct policy_tenant tenants[POLICY_MAX_TENANTS];
	struct sim_poisson poisson[POLICY_MAX_TENANTS];
	struct coloc_rng cost_rng[POLICY_MAX_TENANTS]; /* query costs, apart from arrivals */
	struct coloc_rng parts_rng[POLICY_MAX_TENANTS]; /* the serving path's parts (parts.c) */
	struct sim_speed speed; /* the machine's slow spells (speed.c) */
	/* when each tenant's last query ended, for the warmth of its next (0: none yet) */
	uint64_t last_end_ns[POLICY_MAX_TENANTS];
	/* when each tenant's last block ended, for the executor model (0: none yet) */
	uint64_t last_block_end_ns[POLICY_MAX_TENANTS];
	struct sim_latencies lat[POLICY_MAX_TENANTS];
	int trace_next;
	uint64_t next_id;
	uint64_t now;

	/* the live queries in a slot (in flight or not); those waiting for one are in execs */
	struct policy_query *queries;
	int nr_queries, cap_queries;
	struct sim_execs execs; /* each tenant's executors and slots (executors.c) */
	struct policy_query *visible; /* [cap_queries]: a round's, those the policy sees */

	/* [nr_slots]: nr_cores, as a block holds a core of its own, unless cores are shared */
	struct sim_slot *slots;
	int nr_slots, max_layers;
	bool shared; /* the policy's blocks may share cores */
	int *free_slots, nr_free_slots;
	struct policy_decision *running;
	int *running_slot, nr_running;
	unsigned int stamp;
	uint64_t gen_seq; /* completion generations, unique over the run */

	struct policy_cpuset free;
	int *core_slot; /* [nr_cores]: the slot running there, or -1 (not kept when shared) */
	int *core_nr; /* [nr_cores]: blocks running there */
	int *dom_busy; /* [nr_domains]: busy cores */
	int *dom_own; /* [nr_domains]: scratch */
	int nr_domains;
	struct policy_signal *core_sig, *dom_sig; /* [POLICY_MAX_CPUS] */
	struct sim_level level; /* what the policy is told of them (level.c) */

	struct policy_output out;
	double *decide_us;
	int nr_decide, cap_decide;
};

static double seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool counted(const struct sim_state *s, uint64_t arrival_ns)
{
	return arrival_ns >= s->p->warmup_ns && arrival_ns < s->p->duration_ns;
}

static struct policy_query *find_query(struct sim_state *s, uint64_t id)
{
	for (int i = 0; i < s->nr_queries; i++)
		if (s->queries[i].id == id)
			return &s->queries[i];
	return NULL;
}

/* end_ns: when the client has the answer (or the drop), now or later by the query cost */
static void remove_query(struct sim_state *s, struct policy_query *q, uint64_t end_ns, bool dropped)
{
	struct sim_query_record rec = {
		.id = q->id,
		.tenant = q->tenant,
		.arrival_ns = q->arrival_ns,
		.end_ns = end_ns,
		.dropped = dropped,
	};

	if (s->p->on_query)
		s->p->on_query(s->p->ctx, &rec);
	*q = s->queries[--s->nr_queries];
}

/* ---- LLC domains: pressure, signals, re-rating ---------------------------- */

/* Share of the block's domains that other blocks occupy, averaged over its cores. */
static double slot_pressure(struct sim_state *s, const struct sim_slot *sl)
{
	const struct policy_cpuset *cs = &sl->d.cores;
	double sum = 0;
	int c;

	for (c = policy_cpuset_next(cs, 0); c >= 0; c = policy_cpuset_next(cs, c + 1))
		s->dom_own[s->cfg.llc[c]]++;
	for (c = policy_cpuset_next(cs, 0); c >= 0; c = policy_cpuset_next(cs, c + 1)) {
		int d = s->cfg.llc[c];

		sum += (double)(s->dom_busy[d] - s->dom_own[d]) / s->p->machine.llc_size;
	}
	for (c = policy_cpuset_next(cs, 0); c >= 0; c = policy_cpuset_next(cs, c + 1))
		s->dom_own[s->cfg.llc[c]] = 0;
	return sum / sl->d.nr_cores;
}

static void refresh_domain_signal(struct sim_state *s, int d)
{
	int size = s->p->machine.llc_size, first = d * size;
	double slow = 0;

	for (int c = first; c < first + size; c++)
		if (s->core_nr[c])
			slow += s->core_sig[c].slowdown;
	s->dom_sig[d].busy = (double)s->dom_busy[d] / size;
	s->dom_sig[d].slowdown = s->dom_busy[d] ? slow / s->dom_busy[d] : 1.0;
}

/* Brings the slot's progress up to now, applies its current slowdown, reschedules its end. */
static int rerate(struct sim_state *s, struct sim_slot *sl, struct coloc_err *err)
{
	const struct policy_costs *m = s->tenants[sl->d.tenant].model;
	double pressure = slot_pressure(s, sl);
	double slow = sim_interference_slowdown(&s->p->interference, m, sl->d.first_layer,
						sl->d.last_layer, sl->versions, sl->ci, pressure);
	double stretch;
	int c, share = 1;

	for (c = policy_cpuset_next(&sl->d.cores, 0); c >= 0;
	     c = policy_cpuset_next(&sl->d.cores, c + 1))
		if (s->core_nr[c] > share && !sl->collapsed)
			share = s->core_nr[c];
	stretch = slow * share;
	if (share > 1 && s->p->shared_penalty)
		stretch *= s->p->shared_penalty;
	if (stretch == sl->stretch && sl->gen)
		return 0;
	sl->left_ns -= (double)(s->now - sl->last_ns) / sl->stretch;
	if (sl->left_ns < 0)
		sl->left_ns = 0;
	sl->last_ns = s->now;
	sl->slowdown = slow;
	sl->stretch = stretch;
	sl->gen = ++s->gen_seq;
	if (!s->shared)
		for (c = policy_cpuset_next(&sl->d.cores, 0); c >= 0;
		     c = policy_cpuset_next(&sl->d.cores, c + 1))
			s->core_sig[c].slowdown = slow;
	return sim_heap_push(&s->heap, s->now + (uint64_t)llround(sl->left_ns * stretch),
			     SIM_EV_DONE, (int)(sl - s->slots), sl->gen, err);
}

/* Re-rates every running block sharing an LLC domain with cores, and refreshes their signals. */
static int rerate_neighbours(struct sim_state *s, const struct policy_cpuset *cores,
			     struct coloc_err *err)
{
	int size = s->p->machine.llc_size, last_dom = -1, ret;
	unsigned int stamp = ++s->stamp;

	for (int c = policy_cpuset_next(cores, 0); c >= 0; c = policy_cpuset_next(cores, c + 1)) {
		int d = s->cfg.llc[c];

		if (d == last_dom)
			continue;
		last_dom = d;
		for (int k = d * size; k < (d + 1) * size; k++) {
			struct sim_slot *sl;

			if (s->core_slot[k] < 0)
				continue;
			sl = &s->slots[s->core_slot[k]];
			if (sl->stamp == stamp)
				continue;
			sl->stamp = stamp;
			ret = rerate(s, sl, err);
			if (ret)
				return ret;
		}
	}
	last_dom = -1;
	for (int c = policy_cpuset_next(cores, 0); c >= 0; c = policy_cpuset_next(cores, c + 1)) {
		if (s->cfg.llc[c] != last_dom)
			refresh_domain_signal(s, s->cfg.llc[c]);
		last_dom = s->cfg.llc[c];
	}
	return 0;
}

/*
 * Shared cores: every running block is re-rated (a start or an end changes
 * the sharing on its cores and the pressure in its domains), then each
 * busy core's signal is the largest stretch among its blocks, which is
 * what colocd would measure there (latency / alone), and every domain's
 * signal is refreshed.
 */
static int rerate_all(struct sim_state *s, struct coloc_err *err)
{
	int n = s->p->machine.nr_cores, ret;

	for (int i = 0; i < s->nr_running; i++) {
		ret = rerate(s, &s->slots[s->running_slot[i]], err);
		if (ret)
			return ret;
	}
	for (int c = 0; c < n; c++)
		s->core_sig[c].slowdown = 1.0;
	for (int i = 0; i < s->nr_running; i++) {
		const struct sim_slot *sl = &s->slots[s->running_slot[i]];

		for (int c = policy_cpuset_next(&sl->d.cores, 0); c >= 0;
		     c = policy_cpuset_next(&sl->d.cores, c + 1))
			if (sl->stretch > s->core_sig[c].slowdown)
				s->core_sig[c].slowdown = sl->stretch;
	}
	for (int d = 0; d < s->nr_domains; d++)
		refresh_domain_signal(s, d);
	return 0;
}

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
static double exec_stretch(struct sim_state *s, struct sim_slot *sl, double table_ns,
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
			const uint64_t last = s->last_block_end_ns[sl->d.tenant];
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
static uint64_t query_cost(struct sim_state *s, int tenant)
{
	if (s->p->query_cost_in_blocks)
		return 0;
	return (uint64_t)llround(
		cost_spread(s, tenant, (double)s->p->tenants[tenant].query_cost_ns));
}

/*
 * What a block's layers take per ns of table: 1, or with the cost in the
 * blocks 1 + its share, times how cold the tenant's weights are: with a
 * warm-up time, 1 - exp(-idle / warm) for the idle time since its last
 * query ended (its caches refill only after a gap), else always cold.
 */
static double block_stretch(struct sim_state *s, int tenant)
{
	const struct sim_tenant *t = &s->p->tenants[tenant];
	uint64_t solo = policy_costs_solo_ns(t->model, policy_cpuset_count(&s->cfg.online));
	double cold = 1.0;

	if (!s->p->query_cost_in_blocks || !t->query_cost_ns || !solo)
		return 1.0;
	if (s->p->query_cost_warm_ns && s->last_end_ns[tenant])
		cold = 1.0 - exp(-(double)(s->now - s->last_end_ns[tenant]) /
				 (double)s->p->query_cost_warm_ns);
	return 1.0 + cold * cost_spread(s, tenant, (double)t->query_cost_ns / (double)solo);
}

/* ---- starting and ending blocks ---------------------------------------------- */

/* Shared cores: room for twice as many blocks at once. */
static int grow_slots(struct sim_state *s, struct coloc_err *err)
{
	int old = s->nr_slots, cap = 2 * old;
	struct sim_slot *slots = realloc(s->slots, (size_t)cap * sizeof(*slots));
	int *free_slots, *running_slot;
	struct policy_decision *running;

	if (slots)
		s->slots = slots;
	free_slots = realloc(s->free_slots, (size_t)cap * sizeof(int));
	if (free_slots)
		s->free_slots = free_slots;
	running = realloc(s->running, (size_t)cap * sizeof(*running));
	if (running)
		s->running = running;
	running_slot = realloc(s->running_slot, (size_t)cap * sizeof(int));
	if (running_slot)
		s->running_slot = running_slot;
	if (!slots || !free_slots || !running || !running_slot)
		return coloc_err_set(err, -ENOMEM, "simulator: out of memory for %d blocks", cap);
	for (int i = old; i < cap; i++) {
		s->slots[i] =
			(struct sim_slot){ .pos = -1, .versions = malloc((size_t)s->max_layers) };
		if (!s->slots[i].versions) {
			/* the slots allocated so far are freed with the state */
			s->nr_slots = i;
			return coloc_err_set(err, -ENOMEM, "simulator: out of memory");
		}
		s->nr_slots = i + 1;
	}
	for (int i = cap - 1; i >= old; i--)
		s->free_slots[s->nr_free_slots++] = i;
	return 0;
}

static int start_block(struct sim_state *s, const struct policy_decision *d, struct coloc_err *err)
{
	struct policy_query *q = find_query(s, d->query_id);
	const struct policy_costs *m = s->tenants[d->tenant].model;
	struct sim_slot *sl;
	uint64_t fixed_ns = 0;
	double stretch;
	int idx, c;

	if (!q)
		return coloc_err_set(err, -EPROTO, "simulator: a block of query %llu, not live",
				     (unsigned long long)d->query_id);
	/* as colocd: no executor of the tenant can take it now, the decision is refused */
	if (sim_execs_start(&s->execs, q) < 0)
		return 1;
	if (!s->nr_free_slots) {
		int ret = s->shared ? grow_slots(s, err) :
				      coloc_err_set(err, -EPROTO,
						    "simulator: no room for a block of query "
						    "%llu: a core runs two blocks",
						    (unsigned long long)d->query_id);

		if (ret)
			return ret;
	}
	idx = s->free_slots[--s->nr_free_slots];
	sl = &s->slots[idx];
	sl->alone = true;
	for (int i = 0; i < s->nr_running; i++)
		sl->alone &= s->running[i].tenant == d->tenant;
	memcpy(sl->versions, d->versions, (size_t)(d->last_layer - d->first_layer));
	sl->d = *d;
	sl->d.versions = sl->versions;
	sl->ci = policy_costs_core_index(m, d->nr_cores);
	sl->start_ns = sl->last_ns = s->now;
	sl->collapsed = false;
	sl->dispatch_ns = 0;
	sl->left_ns = 0;
	for (int l = d->first_layer; l < d->last_layer; l++)
		sl->left_ns += (double)policy_costs_cell(m, l, sl->versions[l - d->first_layer],
							 sl->ci, 0);
	if (s->p->tenants[d->tenant].exec)
		stretch = exec_stretch(s, sl, sl->left_ns, &fixed_ns);
	else
		stretch = block_stretch(s, d->tenant);
	if (s->p->tenants[d->tenant].parts) {
		const struct sim_parts *pt = s->p->tenants[d->tenant].parts;
		uint64_t ns = sim_parts_block_ns(pt, !d->first_layer, d->last_layer == m->nr_layers,
						 &s->parts_rng[d->tenant]);

		stretch *= sim_parts_compute_factor(pt, &s->parts_rng[d->tenant]);
		sl->dispatch_ns += ns;
		fixed_ns += ns;
	}
	sl->left_ns = sl->left_ns * stretch + (double)(s->p->block_cost_ns + fixed_ns);
	sl->slowdown = 1.0;
	sl->stretch = 1.0;
	sl->gen = 0;
	sl->pos = s->nr_running;
	s->running[s->nr_running] = sl->d;
	s->running_slot[s->nr_running++] = idx;
	q->in_flight = true;
	for (c = policy_cpuset_next(&d->cores, 0); c >= 0;
	     c = policy_cpuset_next(&d->cores, c + 1)) {
		s->core_slot[c] = idx;
		if (!s->core_nr[c]++)
			s->dom_busy[s->cfg.llc[c]]++;
		s->core_sig[c].busy = 1;
	}
	if (s->shared)
		return rerate_all(s, err);
	policy_cpuset_andnot(&s->free, &d->cores);
	/* the block itself is among the neighbours: gen 0 makes it schedule its end */
	return rerate_neighbours(s, &d->cores, err);
}

static int end_block(struct sim_state *s, int idx, struct coloc_err *err)
{
	struct sim_slot *sl = &s->slots[idx];
	const struct policy_costs *m = s->tenants[sl->d.tenant].model;
	struct sim_block_record rec = { .d = &sl->d, .start_ns = sl->start_ns, .end_ns = s->now };
	struct policy_query *q = find_query(s, sl->d.query_id);
	int c, last;

	/* as colocd: the executor's own time, without the dispatch around it */
	policy_block_done(s->pol, &sl->d, s->now - sl->start_ns - sl->dispatch_ns);
	sim_level_block(&s->level, &sl->d, s->now - sl->start_ns - sl->dispatch_ns, sl->alone,
			s->now);
	s->last_block_end_ns[sl->d.tenant] = s->now;
	if (s->p->on_block)
		s->p->on_block(s->p->ctx, &rec);
	q->next_layer = sl->d.last_layer;
	q->in_flight = false;
	sim_execs_end(&s->execs, q, q->next_layer == m->nr_layers);
	if (q->next_layer == m->nr_layers) {
		const struct sim_parts *pt = s->p->tenants[q->tenant].parts;
		uint64_t end = s->now + query_cost(s, q->tenant) +
			       (pt ? sim_parts_query_ns(pt, &s->parts_rng[q->tenant]) : 0);
		uint64_t lat = end - q->arrival_ns;

		if (counted(s, q->arrival_ns)) {
			struct sim_tenant_result *tr = &s->r->tenant[q->tenant];
			int ret = sim_latencies_add(&s->lat[q->tenant], lat, err);

			if (ret)
				return ret;
			tr->completed++;
			tr->within += lat <= s->tenants[q->tenant].qos_ns;
		}
		s->last_end_ns[q->tenant] = end;
		remove_query(s, q, end, false);
	}
	for (c = policy_cpuset_next(&sl->d.cores, 0); c >= 0;
	     c = policy_cpuset_next(&sl->d.cores, c + 1)) {
		if (--s->core_nr[c])
			continue;
		s->core_slot[c] = -1;
		s->dom_busy[s->cfg.llc[c]]--;
		s->core_sig[c].busy = 0;
		s->core_sig[c].slowdown = 1.0;
	}
	if (!s->shared)
		policy_cpuset_or(&s->free, &sl->d.cores);
	last = --s->nr_running;
	if (sl->pos != last) {
		s->running[sl->pos] = s->running[last];
		s->running_slot[sl->pos] = s->running_slot[last];
		s->slots[s->running_slot[sl->pos]].pos = sl->pos;
	}
	sl->pos = -1;
	s->free_slots[s->nr_free_slots++] = idx;
	if (s->shared)
		return rerate_all(s, err);
	return rerate_neighbours(s, &sl->d.cores, err);
}

/* ---- the policy's rounds --------------------------------------------------- */

static int record_decide_cost(struct sim_state *s, double us, struct coloc_err *err)
{
	if (s->nr_decide == s->cap_decide) {
		int cap = s->cap_decide ? s->cap_decide * 2 : 4096;
		double *v = realloc(s->decide_us, (size_t)cap * sizeof(*v));

		if (!v)
			return coloc_err_set(err, -ENOMEM, "simulator: out of memory");
		s->decide_us = v;
		s->cap_decide = cap;
	}
	s->decide_us[s->nr_decide++] = us;
	return 0;
}

/* Queries waiting for a slot take those free, as colocd's round starts; the round's visible ones. */
static int take_free_slots(struct sim_state *s, struct coloc_err *err)
{
	struct policy_query q;

	for (int t = 0; t < s->p->nr_tenants; t++)
		while (sim_execs_take(&s->execs, t, &q)) {
			if (s->nr_queries == s->cap_queries) {
				int cap = s->cap_queries * 2;
				struct policy_query *a =
					realloc(s->queries, (size_t)cap * sizeof(*a));
				struct policy_query *v =
					a ? realloc(s->visible, (size_t)cap * sizeof(*v)) : NULL;

				if (a)
					s->queries = a;
				if (v)
					s->visible = v;
				if (!a || !v)
					return coloc_err_set(
						err, -ENOMEM,
						"simulator: out of memory for queries");
				s->cap_queries = cap;
			}
			s->queries[s->nr_queries++] = q;
		}
	return 0;
}

/*
 * Policy rounds as colocd runs them (daemon/serving_round.c, sv_schedule):
 * slots filled, the policy shown the queries in flight or runnable, its
 * decisions started (one no executor can take is refused) and its drops
 * removed; again after progress, at most SIM_MAX_ROUNDS times an event.
 */
static int decide(struct sim_state *s, struct coloc_err *err)
{
	for (int rounds = 0;; rounds++) {
		struct policy_input in = {
			.now_ns = s->now,
			.tenants = s->tenants,
			.nr_tenants = s->p->nr_tenants,
			.queries = s->visible,
			.running = s->running,
			.nr_running = s->nr_running,
			.free = &s->free,
			.cores = s->core_sig,
			.domains = s->dom_sig,
		};
		bool refused = false, progress = false;
		double t0;
		int ret = take_free_slots(s, err);

		if (ret)
			return ret;
		for (int i = 0; i < s->nr_queries; i++)
			if (sim_execs_visible(&s->execs, &s->queries[i]))
				s->visible[in.nr_queries++] = s->queries[i];
		/* no query to show, nothing a policy could decide or drop: skip the call */
		if (!in.nr_queries)
			return 0;
		sim_level_signals(&s->level, &s->cfg, s->now, s->core_sig, s->dom_sig);
		policy_output_reset(&s->out);
		t0 = seconds_now();
		ret = policy_decide(s->pol, &in, &s->out, err);
		ret = ret ?: record_decide_cost(s, (seconds_now() - t0) * 1e6, err);
		if (ret)
			return ret;
		s->r->decide_calls++;
		ret = policy_check_output(s->entry, &in, &s->out, err);
		if (ret)
			return coloc_err_prefix(err, "policy %s broke its contract at %.6f s",
						s->entry->name, (double)s->now * 1e-9);
		for (int i = 0; i < s->out.nr_decisions; i++) {
			ret = start_block(s, &s->out.decisions[i], err);
			if (ret < 0)
				return ret;
			refused |= ret > 0;
			progress |= !ret;
		}
		for (int i = 0; i < s->out.nr_drops; i++) {
			struct policy_query *q = find_query(s, s->out.drops[i].query_id);

			if (counted(s, q->arrival_ns))
				s->r->tenant[q->tenant].dropped++;
			sim_execs_leave(&s->execs, q);
			remove_query(s, q, s->now, true);
			progress = true;
		}
		/*
		 * again, as colocd: a full output array ended the call early, a
		 * refused decision (the next round sees which executors the
		 * others took), drops (their slots free for waiting queries)
		 */
		if (!progress || rounds + 1 >= SIM_MAX_ROUNDS ||
		    !(refused || s->out.nr_drops || s->out.nr_decisions == s->out.max_decisions))
			return 0;
	}
}

/* ---- arrivals ---------------------------------------------------------------------- */

static int push_next_arrival(struct sim_state *s, int tenant, struct coloc_err *err)
{
	uint64_t t;

	if (s->p->trace) {
		if (s->trace_next >= s->p->trace->nr)
			return 0;
		t = s->p->trace->time_ns[s->trace_next];
		tenant = s->p->trace->tenant[s->trace_next++];
	} else {
		t = sim_poisson_next(&s->poisson[tenant]);
	}
	if (t >= s->p->duration_ns)
		return 0;
	return sim_heap_push(&s->heap, t, SIM_EV_ARRIVAL, tenant, 0, err);
}

static int arrive(struct sim_state *s, int tenant, struct coloc_err *err)
{
	int ret = push_next_arrival(s, tenant, err);

	if (ret)
		return ret;
	if (counted(s, s->now))
		s->r->tenant[tenant].arrived++;
	if (s->nr_queries + s->execs.nr_waiting >= s->p->max_queued) {
		if (counted(s, s->now))
			s->r->tenant[tenant].dropped++;
		return 0;
	}
	return sim_execs_wait(&s->execs,
			      &(struct policy_query){
				      .id = s->next_id++,
				      .tenant = tenant,
				      .arrival_ns = s->now,
				      .deadline_ns = s->now + s->tenants[tenant].qos_ns,
			      },
			      err);
}

/* ---- setup, the loop, results -------------------------------------------------- */

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

static int check_params(const struct sim_params *p, struct coloc_err *err)
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
	for (int t = 0; t < p->nr_tenants; t++) {
		const struct sim_tenant *st = &p->tenants[t];
		int ret;

		if (!st->model || !st->qos_ns || !(st->share > 0))
			return coloc_err_set(err, -EINVAL,
					     "simulator: tenant %d needs a model, a QoS and a rate "
					     "share > 0",
					     t);
		ret = policy_costs_check(st->model, err);
		ret = ret ?: check_exec(st->exec, p, err);
		if (ret)
			return coloc_err_prefix(err, "tenant %d (%s)", t,
						st->name ? st->name : "?");
	}
	return 0;
}

static int state_init(struct sim_state *s, const struct sim_params *p, struct sim_result *r,
		      struct coloc_err *err)
{
	int n = p->machine.nr_cores, max_layers = 0, ret;
	double total_share = 0;

	s->p = p;
	s->r = r;
	ret = sim_machine_config(&p->machine, p->late, &s->cfg, err);
	if (ret)
		return ret;
	s->entry = p->policy;
	s->shared = p->policy->shares_cores;
	s->pol = policy_create(p->policy, &s->cfg, err);
	if (!s->pol)
		return err ? err->code : -EINVAL;
	for (int t = 0; t < p->nr_tenants; t++) {
		s->tenants[t] = (struct policy_tenant){
			.model = p->tenants[t].model,
			.uid = (uint64_t)t + 1,
			.qos_ns = p->tenants[t].qos_ns,
			.executors = p->executors,
		};
		if (p->tenants[t].model->nr_layers > max_layers)
			max_layers = p->tenants[t].model->nr_layers;
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
	    !s->core_sig || !s->dom_sig || !s->out.decisions || !s->out.versions || !s->out.drops)
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
		coloc_rng_seed(&s->parts_rng[t], p->seed ^ (uint64_t)(t + 1) * 0xbf58476d1ce4e5b9ULL);
	}
	if (p->trace)
		return push_next_arrival(s, 0, err);
	for (int t = 0; t < p->nr_tenants; t++) {
		sim_poisson_init(&s->poisson[t], p->seed, t,
				 p->qps * p->tenants[t].share / total_share);
		ret = push_next_arrival(s, t, err);
		if (ret)
			return ret;
	}
	return 0;
}

static void state_free(struct sim_state *s)
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
	free(s->dom_own);
	free(s->core_sig);
	free(s->dom_sig);
	free(s->out.decisions);
	free(s->out.versions);
	free(s->out.drops);
	free(s->decide_us);
	sim_level_free(&s->level);
}

static void finish_results(struct sim_state *s)
{
	struct sim_result *r = s->r;

	for (int i = 0; i < s->nr_queries; i++)
		if (counted(s, s->queries[i].arrival_ns))
			r->tenant[s->queries[i].tenant].unserved++;
	for (int t = 0; t < s->p->nr_tenants; t++)
		for (int i = 0; sim_execs_waiting(&s->execs, t, i); i++)
			if (counted(s, sim_execs_waiting(&s->execs, t, i)->arrival_ns))
				r->tenant[t].unserved++;
	for (int t = 0; t < r->nr_tenants; t++)
		sim_tenant_result_finish(&r->tenant[t], &s->lat[t]);
	r->decide_p50_us = sim_percentile_double(s->decide_us, s->nr_decide, 50);
	r->decide_p99_us = sim_percentile_double(s->decide_us, s->nr_decide, 99);
	r->end_ns = s->now;
}

int sim_run(const struct sim_params *p, struct sim_result *r, struct coloc_err *err)
{
	struct sim_state s = { 0 };
	struct sim_event ev;
	double t0 = seconds_now();
	int ret;

	*r = (struct sim_result){ .nr_tenants = p->nr_tenants };
	ret = check_params(p, err);
	if (ret)
		return ret;
	ret = state_init(&s, p, r, err);
	while (!ret && sim_heap_pop(&s.heap, &ev)) {
		if (ev.kind == SIM_EV_DONE && ev.gen != s.slots[ev.arg].gen)
			continue; /* rescheduled since: a later event stands for it */
		s.now = ev.time_ns;
		r->events++;
		ret = ev.kind == SIM_EV_DONE ? end_block(&s, ev.arg, err) : arrive(&s, ev.arg, err);
		if (!ret)
			ret = decide(&s, err);
	}
	if (!ret)
		finish_results(&s);
	state_free(&s);
	r->wall_s = seconds_now() - t0;
	return ret;
}
