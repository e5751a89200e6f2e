// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc: the scheduler issue's policy, VELTAIR's layer blocks and
 * interference-chosen versions with Abacus's prediction and headroom order,
 * and the engine its ablations and the model-wise and layer-wise baselines
 * share (struct coloc_flags says which parts are on; each entry is a flag
 * set, no copies). A round: the level, each layer's budget and core need,
 * the dynamic threshold, the next block of each query (cut at a pivot,
 * capped by the other tenants' slack), tenants by headroom, drops, cores by
 * LLC domain. This file is the round's loop and each query's turn in it;
 * the block's shape, the caps, the table cache, the prediction, the
 * round's view of the cores and the variants live beside it
 * (coloc_internal.h says which file has what). The algorithm step by
 * step, and why each rule is there:
 * docs/design/coloc-policy.md.
 */
#include <errno.h>
#include <math.h>
#include <sys/mman.h>
#include "coloc_internal.h"

/* serve()'s answer beside enum policy_served: q's block cannot end before another's latest start */
#define COLOC_GIVE_WAY (POLICY_OUT_FULL + 1)
/* serve()'s: q is late but delays no one on time (late.c): serve it now, demoted (its block cut) */
#define COLOC_IN_TURN (POLICY_OUT_FULL + 2)

double policy_coloc_threshold(int total_cores, double sum_avg, double avg)
{
	double spare = (double)total_cores - sum_avg;

	if (sum_avg <= 0 || spare <= 0)
		return 0;
	return spare * avg / sum_avg;
}

/* The sockets the online cores of cfg are on (0 when none is online). */
static int nr_sockets(const struct policy_config *cfg)
{
	int sockets = 0;

	for (int c = policy_cpuset_next(&cfg->online, 0); c >= 0;
	     c = policy_cpuset_next(&cfg->online, c + 1))
		if (cfg->socket[c] + 1 > sockets)
			sockets = cfg->socket[c] + 1;
	return sockets;
}

/* coloc_state.socket_per_core of the machine cfg, nr_online cores */
static double socket_per_core(const struct policy_config *cfg, int nr_online)
{
	int sockets = nr_sockets(cfg), per_socket = sockets ? nr_online / sockets : nr_online;

	if (!(cfg->socket_slowdown > 1.0) || per_socket < 2)
		return 0;
	return (cfg->socket_slowdown - 1.0) / (per_socket - 1);
}

int policy_coloc_engine_create(const struct coloc_flags *flags, const struct policy_config *cfg,
			       void **state, struct coloc_err *err)
{
	/*
	 * Mapped, not calloc'd: the caches are tens of MB that only the
	 * tenants' touched cells ever back, and fresh zero pages cost nothing
	 * until touched, where calloc may clear reused heap (glibc) or poison
	 * its shadow (ASan) in full at every create.
	 */
	struct coloc_state *st =
		mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (st == MAP_FAILED)
		return coloc_err_set(err, -ENOMEM, "out of memory for the policy's %zu MB of state",
				     sizeof(*st) >> 20);
	st->flags = *flags;
	st->nr_online = policy_cpuset_count(&cfg->online);
	st->socket_per_core = socket_per_core(cfg, st->nr_online);
	if (st->socket_per_core > 0 && nr_sockets(cfg) == 1)
		st->socket_full = cfg->socket_slowdown;
	*state = st;
	return 0;
}

void policy_coloc_engine_destroy(void *state)
{
	munmap(state, sizeof(struct coloc_state));
}

/* The error for a rest of model that a layer from first on cannot run on cores. */
static int no_version(struct coloc_err *err, const struct policy_query *q, int first, int cores)
{
	return coloc_err_set(err, -EINVAL,
			     "tenant %d: a layer from %d on has no version at %d cores", q->tenant,
			     first, cores);
}

/*
 * The rest of q's model, priced only to drop, demote or hold q (not when
 * late queries are served). Dropped for good only when its answer cannot
 * come by its deadline plus POLICY_OVERDUE_QOS x its QoS, overdue past its
 * deadline plus its QoS, each on the fastest evidence: the least of its
 * learnt prediction's optimistic end (/ margin) and the table at the level,
 * on the whole machine, cold only when every core is. Late
 * on the optimistic end (or past its deadline) but not that late, it is
 * served now, in its turn and not held for cores (COLOC_IN_TURN), when its
 * rest on the free cores (pessimistically, times margin) fits in the least
 * slack of the queries on time (policy_late_in_turn()); else demoted
 * (POLICY_DEMOTED): served after every query that can still meet its
 * deadline, on what they leave. Overdue (its answer after its deadline
 * plus its QoS on that evidence), it is served in its turn when its rest on
 * the free cores, pessimistically, leaves the queue on time
 * (policy_overdue_kept()), else demoted; in its turn as a demoted one
 * (demoted true) it is checked again and dropped if it still does not (a
 * demoted query not overdue is served). Late on the cores free now (up to count
 * index max_ci), pessimistically, but not on the whole machine, it waits
 * for cores, and less urgent queries may use the free ones meanwhile. The
 * rest is priced cold (times cold, 1 when hot) when the block would start
 * on the free cores gone cold. POLICY_SERVED when none of these (serve()
 * goes on), else the enum policy_served to return, or -EINVAL when a layer
 * has no version. The rule is every policy's (policy_lateness(), late.c);
 * docs/design/coloc-policy.md, "Late queries are demoted, not dropped".
 */
static int drop_or_hold(const struct coloc_state *st, const struct policy_config *cfg,
			const struct policy_input *in, struct round *r, struct coloc_tenant *ct,
			const struct policy_query *q, int max_ci, double pos, double cold,
			bool demoted, struct policy_output *out, struct coloc_err *err)
{
	const struct policy_costs *m = ct->costs;
	double corr = st->flags.predict ? coloc_aged_corr(ct, in->now_ns) : 1.0;
	double fixed = st->flags.predict ? coloc_aged_fixed(ct, in->now_ns) : 0;
	double margin = st->flags.predict ? coloc_aged_margin(ct, in->now_ns) : 1.0;
	int first = q->next_layer, all_ci = policy_costs_core_index(m, st->nr_online);
	uint64_t rest_ns = coloc_rest_at_best(st, ct, first, all_ci, pos, corr, fixed, in->now_ns);
	double all_cold = policy_costs_cold_scale_on(m, in, &cfg->online), sure;
	bool late = false, overdue = false;

	if (!rest_ns)
		return no_version(err, q, first, m->core_counts[all_ci]);
	/* dropped for good only if late even where every core is cold: a busy one ends hot */
	rest_ns = policy_scale_ns(rest_ns, all_cold);
	sure = fmin(
		(double)rest_ns / margin,
		(double)policy_scale_ns(coloc_table_rest(st, ct, first, all_ci, pos), all_cold));
	switch (policy_lateness(cfg, in, q, (double)rest_ns / margin, sure)) {
	case POLICY_GIVE_UP:
		return policy_append_drop(out, q, POLICY_DROP_CANNOT_MEET, rest_ns);
	case POLICY_OVERDUE:
		overdue = true;
		/* fall through */
	case POLICY_DEMOTE:
		late = true;
		break;
	case POLICY_ON_TIME:
		break;
	}
	if (demoted && !overdue)
		return POLICY_SERVED;
	if (max_ci < all_ci || late) {
		rest_ns = coloc_rest_at_best(st, ct, first, max_ci, pos, corr, fixed, in->now_ns);
		if (!rest_ns)
			return no_version(err, q, first, m->core_counts[max_ci]);
		rest_ns = policy_scale_ns(rest_ns, cold);
		if (overdue) {
			if (policy_overdue_kept(cfg, in, q, (double)rest_ns * margin,
						m->core_counts[max_ci]))
				return demoted ? POLICY_SERVED : COLOC_IN_TURN;
			return demoted ? policy_append_drop(out, q, POLICY_DROP_CANNOT_MEET, rest_ns) :
					 POLICY_DEMOTED;
		}
		if (late)
			return policy_late_in_turn(&r->late_room, cfg, in, q,
						   (double)rest_ns * margin) ?
				       COLOC_IN_TURN :
				       POLICY_DEMOTED;
		if ((double)in->now_ns + (double)rest_ns * margin > (double)q->deadline_ns)
			return POLICY_WAIT;
	}
	return POLICY_SERVED;
}

/*
 * Decides q's next block, or drops it, or waits, or demotes it; an enum
 * policy_served (POLICY_DEMOTED among them), COLOC_GIVE_WAY or
 * COLOC_IN_TURN. A demoted q (late) is neither dropped nor held here, and
 * its block is capped by every tenant's slack, its own included: a query
 * of its own tenant arriving waits for it.
 */
static int serve(struct coloc_state *st, const struct policy_config *cfg,
		 const struct policy_input *in, struct round *r, const struct policy_query *q,
		 bool demoted, struct policy_output *out, struct coloc_err *err)
{
	const struct policy_tenant *pt = &in->tenants[q->tenant];
	const struct policy_costs *m = pt->costs;
	struct coloc_tenant *ct = &st->t[q->tenant];
	double slowdown = st->flags.use_level ? r->slowdown : 1.0;
	double pos = policy_costs_level_pos(m, slowdown);
	double corr = st->flags.predict ? coloc_aged_corr(ct, in->now_ns) : 1.0;
	double fixed = st->flags.predict ? coloc_aged_fixed(ct, in->now_ns) : 0;
	double margin = st->flags.predict ? coloc_aged_margin(ct, in->now_ns) : 1.0;
	int max_count = r->nr_free;
	int max_ci = policy_costs_core_index(m, max_count);
	int first = q->next_layer, lead = coloc_first_with_work(m, first), last, ci;
	/* every free core cold: the block will start cold, so it is sized and judged at that price */
	double cold = policy_costs_cold_scale_on(m, in, &r->free);
	double tcap = demoted ? fmax(r->cap_late, r->cap_floor[q->tenant]) : r->cap[q->tenant];
	double budget, fit, scale, cap, bound;
	struct block_pred bp;
	int min_need, whole, ret;
	uint64_t raw_ns = 0;
	struct policy_decision *d;
	uint8_t *versions;

	if (policy_late_gone(cfg, in, q, max_ci >= 0 && !coloc_socket_closed(r, q)))
		return policy_append_drop(out, q, POLICY_DROP_DEADLINE_PASSED, 0);
	if (max_ci < 0 || coloc_socket_closed(r, q))
		return POLICY_WAIT;
	if (cfg->late == POLICY_LATE_DROP) {
		ret = drop_or_hold(st, cfg, in, r, ct, q, max_ci, pos, cold, demoted, out, err);
		if (ret != POLICY_SERVED)
			return ret;
	}
	if (r->alone[q->tenant]) {
		ret = coloc_alone_block(st, in, r, q, out, max_ci, pos, &ci, err);
		if (ret != POLICY_SERVED)
			return ret;
		last = m->nr_layers;
		versions = &out->versions[out->nr_versions];
		raw_ns = coloc_span_ns(st, ct, first, last, ci, pos, versions, 0);
		bp = coloc_class_pred(st, ct, first, last, ci, corr, fixed, in->now_ns);
		goto decided;
	}

	scale = coloc_budget_scale(st, in, r, ct, q);
	last = coloc_block_end(st, ct, m, first, scale, r->thres[q->tenant], pos, &min_need,
			       &budget);
	if (out->nr_decisions >= out->max_decisions ||
	    out->nr_versions + (last - first) > out->max_versions)
		return POLICY_OUT_FULL;
	/*
	 * The fewest cores whose block latency fits its budget, else the
	 * fastest that is free. Each try writes its versions into the pool and
	 * stops summing once past the budget, so the fitting try leaves them.
	 * Below every layer's own need each layer is over its budget, so the
	 * block is too: the search starts at the least need among its layers.
	 */
	versions = &out->versions[out->nr_versions];
	ci = -1;
	fit = budget / cold; /* policy_costs_start_cold() scales the block's prediction by cold */
	for (int c = min_need; c <= max_ci && fit > fixed * margin; c++) {
		bp = coloc_class_pred(st, ct, first, last, c, corr, fixed, in->now_ns);
		if (fit / margin <= bp.fixed)
			continue;
		raw_ns = coloc_span_ns(st, ct, first, last, c, pos, versions,
				       (fit / margin - bp.fixed) / bp.scale);
		if (raw_ns && coloc_predicted(bp, raw_ns) * margin <= fit) {
			ci = c;
			break;
		}
	}
	if (ci < 0) {
		last = coloc_fastest_block(st, ct, first, last, max_ci, pos, fixed, &ci);
		raw_ns = coloc_span_ns(st, ct, first, last, ci, pos, versions, 0);
	}
	/* spare cores (coloc_spare_index()), when they run the block faster */
	if (st->flags.use_spare) {
		int ci_spare = coloc_spare_index(st, in, r, ct, q, first, last, ci, pos, cold);

		if (ci_spare > ci) {
			uint64_t ns = coloc_span_ns(st, ct, first, last, ci_spare, pos, NULL, 0);

			if (ns && ns < raw_ns) {
				ci = ci_spare;
				raw_ns = coloc_span_ns(st, ct, first, last, ci, pos, versions, 0);
			}
		}
	}
	/* model-wise's choice, when it costs no more cores and keeps no one waiting */
	whole = coloc_whole_rest_index(st, in, r, out, ct, q, ci, pos, cold,
				       scale * coloc_rest_share(ct, m, first), tcap, corr, fixed,
				       margin);
	if (whole >= 0) {
		last = m->nr_layers;
		ci = whole;
		raw_ns = coloc_span_ns(st, ct, first, last, ci, pos, versions, 0);
		bp = coloc_class_pred(st, ct, first, last, ci, corr, fixed, in->now_ns);
		goto decided;
	}
	/*
	 * The cap bounds how long the block holds its cores (a block is not
	 * preempted, and another tenant's query may arrive behind it). It is
	 * checked on the block's predicted time, not its budget: headroom
	 * scaling makes the budget of a query with a distant deadline far
	 * larger than its time, and capping budgets cut such queries into
	 * blocks of one layer (SSD-MobileNet: 2.5 layers a block in colocd).
	 * The longest prefix within the cap stays, at least one layer with work.
	 */
	bound = coloc_wait_bound(in, r, q->tenant, r->nr_free - m->core_counts[ci]);
	cap = fmin(tcap, bound);
	bp = coloc_class_pred(st, ct, first, last, ci, corr, fixed, in->now_ns);
	if (last - lead > 1 && coloc_predicted(bp, raw_ns) * cold > cap) {
		int lo = lead + 1, hi = last - 1;

		while (lo < hi) {
			int mid = lo + (hi - lo + 1) / 2;

			if (coloc_predicted(coloc_class_pred(st, ct, first, mid, ci, corr, fixed,
							     in->now_ns),
					    coloc_span_ns(st, ct, first, mid, ci, pos, NULL, 0)) *
				    cold <=
			    cap)
				lo = mid;
			else
				hi = mid - 1;
		}
		last = lo;
		raw_ns = coloc_span_ns(st, ct, first, last, ci, pos, versions, 0);
		bp = coloc_class_pred(st, ct, first, last, ci, corr, fixed, in->now_ns);
	}
	/* even its first layer with work would end past another's latest start: that one first */
	if (coloc_predicted(bp, raw_ns) * cold > bound)
		return COLOC_GIVE_WAY;
decided:
	out->nr_versions += last - first;
	d = &out->decisions[out->nr_decisions++];
	*d = (struct policy_decision){
		.query_id = q->id,
		.tenant = q->tenant,
		.first_layer = first,
		.last_layer = last,
		.versions = versions,
		.nr_cores = m->core_counts[ci],
		.decided_ns = in->now_ns,
		.level = slowdown,
		.predicted_ns = (uint64_t)coloc_predicted(bp, raw_ns),
	};
	d->alone_ns = coloc_span_alone_ns(st, ct, first, last, ci, pos, versions);
	coloc_grant_cores(cfg, in, r, d->nr_cores, &d->cores);
	policy_costs_start_cold(m, in, d);
	return POLICY_SERVED;
}

/* Tenant t's head query is q (NULL: none left this round). */
static void set_head(struct coloc_state *st, const struct policy_input *in, struct round *r, int t,
		     const struct policy_query *q)
{
	r->head[t] = q;
	r->done[t] = !q;
	r->waiting[t] = q && st->flags.block_cap > 0;
	if (r->waiting[t])
		r->latest[t] = coloc_latest_start(st, in, r, q, &r->need[t]);
}

/*
 * Whether tenant t's held head can have the cores it needs by its latest
 * start: the free ones and those of the blocks running or decided this
 * round that are predicted to end by then. When not, it is late anyway,
 * and waiting for it would only leave the free cores idle.
 */
static bool cores_in_time(const struct policy_input *in, const struct round *r,
			  const struct policy_output *out, int t)
{
	int cores = r->nr_free;

	for (int i = 0; i < in->nr_running; i++)
		if ((double)(in->running[i].decided_ns + in->running[i].predicted_ns) <=
		    r->latest[t])
			cores += in->running[i].nr_cores;
	for (int i = 0; i < out->nr_decisions; i++)
		if ((double)(out->decisions[i].decided_ns + out->decisions[i].predicted_ns) <=
		    r->latest[t])
			cores += out->decisions[i].nr_cores;
	return cores >= r->need[t];
}

/* The tenants that gave way are tried again: whom they waited for was decided, or waits no more. */
static void undefer(const struct policy_input *in, struct round *r)
{
	for (int i = 0; i < in->nr_tenants; i++)
		if (r->deferred[i])
			r->done[i] = r->deferred[i] = false;
}

/*
 * The demoted queries (POLICY_DEMOTED), once every query that is not late
 * was decided, held or gave way: each tenant's earliest, by deadline, on
 * the cores left, where its tenant has an executor that no query of its
 * own still wants (its head decided, none left).
 */
static int serve_late(struct coloc_state *st, const struct policy_config *cfg,
		      const struct policy_input *in, struct round *r, struct policy_output *out,
		      struct coloc_err *err)
{
	for (;;) {
		int t = -1, ret;

		for (int i = 0; i < in->nr_tenants; i++)
			if (r->late[i] && !r->head[i] &&
			    r->in_flight[i] < policy_tenant_executors(&in->tenants[i]) &&
			    (t < 0 || coloc_before(st, r->late[i], r->late[t])))
				t = i;
		if (t < 0)
			return 0;
		ret = serve(st, cfg, in, r, r->late[t], true, out, err);
		if (ret < 0)
			return ret;
		if (ret == POLICY_OUT_FULL)
			return 0;
		if (ret == POLICY_SERVED)
			r->in_flight[t]++;
		r->late[t] = NULL;
	}
}

int policy_coloc_engine_decide(void *state, const struct policy_config *cfg,
			       const struct policy_input *in, struct policy_output *out,
			       struct coloc_err *err)
{
	struct coloc_state *st = state;
	struct round r = { .free = *in->free };
	double sum_avg = 0;

	coloc_round_init(st, cfg, in, &r);
	for (int t = 0; t < in->nr_tenants; t++) {
		r.done[t] = true;
		if (in->tenants[t].costs &&
		    r.in_flight[t] < policy_tenant_executors(&in->tenants[t]))
			set_head(st, in, &r, t, coloc_next_query(st, in, &r, t, NULL));
	}
	coloc_block_caps(st, in, &r);
	coloc_alone_round(st, in, &r);
	/* the others' fair share leaves out a tenant that does not share the socket */
	for (int t = 0; t < in->nr_tenants; t++)
		if (in->tenants[t].costs && (!r.done[t] || r.in_flight[t]) && !r.alone[t])
			sum_avg += coloc_tenant_state(st, in, t)->avg_need;
	for (int t = 0; t < in->nr_tenants; t++)
		if (!r.done[t])
			r.thres[t] = st->flags.dynamic_thres ?
					     policy_coloc_threshold(st->nr_online, sum_avg,
								    st->t[t].avg_need) :
					     st->flags.fixed_thres;
	for (;;) {
		const struct policy_query *alone = coloc_alone_head(st, in, &r);
		int t = alone ? alone->tenant : -1, ret;

		for (int i = 0; i < in->nr_tenants && !alone; i++)
			if (!r.done[i] && (t < 0 || coloc_before(st, r.head[i], r.head[t])))
				t = i;
		if (t < 0)
			return serve_late(st, cfg, in, &r, out, err);
		ret = serve(st, cfg, in, &r, r.head[t], false, out, err);
		/* late, but it delays no one on time: served now, as a demoted one */
		if (ret == COLOC_IN_TURN)
			ret = serve(st, cfg, in, &r, r.head[t], true, out, err);
		if (ret < 0)
			return ret;
		if (ret == POLICY_OUT_FULL)
			return 0;
		if (ret == COLOC_GIVE_WAY) {
			/* the others go first; t is tried again once one of them is decided */
			r.done[t] = r.deferred[t] = true;
			continue;
		}
		if (ret == POLICY_WAIT) {
			/* held for cores: still waiting for them, unless they come too late */
			r.done[t] = true;
			/* one that runs alone waits for the whole socket: no one else starts */
			r.socket_kept |= r.alone[t];
			if (r.waiting[t] && !cores_in_time(in, &r, out, t)) {
				r.waiting[t] = false;
				undefer(in, &r);
			}
			continue;
		}
		undefer(in, &r);
		if (ret == POLICY_DEMOTED) {
			/* late: its tenant's next query goes first, it after every one on time */
			if (!r.late[t])
				r.late[t] = r.head[t];
			set_head(st, in, &r, t, coloc_next_query(st, in, &r, t, r.head[t]));
			continue;
		}
		/* a tenant with an executor left serves its next query in turn */
		if (ret == POLICY_DROPPED ||
		    ++r.in_flight[t] < policy_tenant_executors(&in->tenants[t])) {
			set_head(st, in, &r, t, coloc_next_query(st, in, &r, t, r.head[t]));
		} else {
			r.done[t] = true;
			r.waiting[t] = false;
		}
	}
}
