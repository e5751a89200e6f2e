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
#include "capacity_queued.h"
#include "run_internal.h"

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
	const struct policy_costs *m = s->tenants[d->tenant].costs;
	struct sim_slot *sl;
	uint64_t fixed_ns = 0;
	double stretch;
	int idx, c, x;

	if (!q)
		return coloc_err_set(err, -EPROTO, "simulator: a block of query %llu, not live",
				     (unsigned long long)d->query_id);
	/* as colocd: no executor of the tenant can take it now, the decision is refused */
	x = sim_execs_start(&s->execs, q);
	if (x < 0)
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
	sl->copy = s->p->lanes ? 0 : x;
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
	sl->table_ns = sl->left_ns;
	if (s->p->tenants[d->tenant].exec)
		stretch = sim_run_exec_stretch(s, sl, sl->left_ns, &fixed_ns);
	else
		stretch = sim_run_block_stretch(s, sl);
	if (s->p->tenants[d->tenant].parts) {
		const struct sim_parts *pt = s->p->tenants[d->tenant].parts;
		uint64_t ns = sim_parts_block_ns(pt, !d->first_layer, d->last_layer == m->nr_layers,
						 &s->parts_rng[d->tenant]);

		stretch *= sim_parts_compute_factor(pt, &s->parts_rng[d->tenant]);
		sl->dispatch_ns += ns;
		fixed_ns += ns;
	}
	sl->left_ns = sl->left_ns * stretch + (double)(s->p->block_cost_ns + fixed_ns);
	sl->alone_ns = sl->left_ns;
	sl->slowdown = 1.0;
	sl->stretch = 1.0;
	sl->gen = 0;
	sl->pos = s->nr_running;
	s->running[s->nr_running] = sl->d;
	s->running_slot[s->nr_running++] = idx;
	q->in_flight = true;
	if (!d->first_layer && counted(s, q->arrival_ns)) {
		s->r->tenant[d->tenant].started++;
		s->r->tenant[d->tenant].wait_ns += s->now - q->arrival_ns;
	}
	for (c = policy_cpuset_next(&d->cores, 0); c >= 0;
	     c = policy_cpuset_next(&d->cores, c + 1)) {
		s->core_slot[c] = idx;
		if (!s->core_nr[c]++) {
			s->dom_busy[s->cfg.llc[c]]++;
			s->sock_busy[s->cfg.socket[c]]++;
		}
		s->core_sig[c].busy = 1;
	}
	if (s->shared)
		return sim_run_rerate_all(s, err);
	policy_cpuset_andnot(&s->free, &d->cores);
	/* the block itself is among the neighbours: gen 0 makes it schedule its end */
	return sim_run_rerate_neighbours(s, &d->cores, err);
}

static int end_block(struct sim_state *s, int idx, struct coloc_err *err)
{
	struct sim_slot *sl = &s->slots[idx];
	const struct policy_costs *m = s->tenants[sl->d.tenant].costs;
	struct sim_block_record rec = { .d = &sl->d, .start_ns = sl->start_ns, .end_ns = s->now };
	struct policy_query *q = find_query(s, sl->d.query_id);
	int c, last;

	/* as colocd: the executor's own time, without the dispatch around it */
	policy_block_done(s->pol, &sl->d, s->now - sl->start_ns - sl->dispatch_ns);
	sim_level_block(&s->level, &sl->d, s->now - sl->start_ns - sl->dispatch_ns, sl->alone,
			s->now);
	s->last_block_end_ns[sl->d.tenant][sl->copy] = s->now;
	if (counted(s, sl->start_ns)) {
		struct sim_tenant_result *tr = &s->r->tenant[sl->d.tenant];

		tr->blocks++;
		tr->block_cores += (uint64_t)sl->d.nr_cores;
		tr->block_ns += s->now - sl->start_ns;
		tr->core_ns += (double)sl->d.nr_cores * (double)(s->now - sl->start_ns);
		sim_account_block(s, sl);
	}
	if (s->p->on_block)
		s->p->on_block(s->p->ctx, &rec);
	q->next_layer = sl->d.last_layer;
	q->in_flight = false;
	sim_execs_end(&s->execs, q, q->next_layer == m->nr_layers);
	if (q->next_layer == m->nr_layers) {
		const struct sim_parts *pt = s->p->tenants[q->tenant].parts;
		uint64_t end = s->now + sim_run_query_cost(s, q->tenant) +
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
		s->last_end_ns[q->tenant][sl->copy] = end;
		remove_query(s, q, end, false);
	}
	for (c = policy_cpuset_next(&sl->d.cores, 0); c >= 0;
	     c = policy_cpuset_next(&sl->d.cores, c + 1)) {
		if (--s->core_nr[c])
			continue;
		s->core_slot[c] = -1;
		s->dom_busy[s->cfg.llc[c]]--;
		s->sock_busy[s->cfg.socket[c]]--;
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
		return sim_run_rerate_all(s, err);
	return sim_run_rerate_neighbours(s, &sl->d.cores, err);
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
 * Policy rounds as colocd runs them (daemon/serving.c, sv_schedule):
 * slots filled, the policy shown the queries in flight or runnable, its
 * decisions started (one no executor can take is refused) and its drops
 * removed; again after progress, at most SIM_MAX_ROUNDS times an event.
 */
static int decide(struct sim_state *s, struct coloc_err *err)
{
	for (int t = 0; t < s->p->nr_tenants; t++)
		s->tenants[t].interval_ns = policy_arrivals_interval_ns(&s->arrivals[t], s->now);
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

int sim_run_push_next_arrival(struct sim_state *s, int tenant, struct coloc_err *err)
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
	int ret = sim_run_push_next_arrival(s, tenant, err);

	if (ret)
		return ret;
	if (counted(s, s->now))
		s->r->tenant[tenant].arrived++;
	policy_arrivals_note(&s->arrivals[tenant], s->now);
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
static void finish_results(struct sim_state *s)
{
	struct sim_result *r = s->r;

	sim_account_idle(s, s->p->duration_ns);
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
	for (int t = 0; t < r->nr_tenants; t++)
		r->busy_fraction += r->tenant[t].core_ns;
	if (s->p->duration_ns > s->p->warmup_ns)
		r->busy_fraction /= (double)s->p->machine.nr_cores *
				    (double)(s->p->duration_ns - s->p->warmup_ns);
}

int sim_run(const struct sim_params *p, struct sim_result *r, struct coloc_err *err)
{
	struct sim_state s = { 0 };
	struct sim_event ev;
	double t0 = seconds_now();
	int ret;

	if (p->servers) {
		ret = sim_servers_run(p, r, err);
		r->wall_s = seconds_now() - t0;
		return ret;
	}
	*r = (struct sim_result){ .nr_tenants = p->nr_tenants };
	ret = sim_run_check_params(p, err);
	if (ret)
		return ret;
	ret = sim_run_state_init(&s, p, r, err);
	while (!ret && sim_heap_pop(&s.heap, &ev)) {
		if (ev.kind == SIM_EV_DONE && ev.gen != s.slots[ev.arg].gen)
			continue; /* rescheduled since: a later event stands for it */
		sim_account_idle(&s, ev.time_ns);
		s.now = ev.time_ns;
		r->events++;
		ret = ev.kind == SIM_EV_DONE ? end_block(&s, ev.arg, err) : arrive(&s, ev.arg, err);
		if (!ret)
			ret = decide(&s, err);
	}
	if (!ret)
		finish_results(&s);
	sim_run_state_free(&s);
	r->wall_s = seconds_now() - t0;
	return ret;
}
