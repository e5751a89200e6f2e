/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the policy library: the entries of the policy table and the pieces
 * the simple policies share (finding the earliest queued query, serving a
 * query's whole remaining model on a set of cores).
 */
#ifndef COLOC_POLICY_IMPL_H
#define COLOC_POLICY_IMPL_H

#include "policy.h"

extern const struct policy_entry policy_fcfs;
extern const struct policy_entry policy_os;
extern const struct policy_entry policy_static;
extern const struct policy_entry policy_temporal;

/* Creates a policy without state (its decide is a function of cfg and input). */
int policy_stateless_create(const struct policy_config *cfg, void **state, struct coloc_err *err);
void policy_stateless_destroy(void *state);

/*
 * The queued (not in flight) query of tenant (-1: any) that comes first by
 * (arrival, id) after `after` (NULL: from the start); NULL when none.
 */
const struct policy_query *policy_earliest_queued(const struct policy_input *in, int tenant,
						  const struct policy_query *after);

/* The blocks of tenant in flight (in->running). */
int policy_tenant_running(const struct policy_input *in, int tenant);
/* Records q's drop in out: POLICY_DROPPED, or POLICY_OUT_FULL when out has no room. */
int policy_append_drop(struct policy_output *out, const struct policy_query *q,
		       enum policy_drop_reason reason, uint64_t predicted_ns);

/*
 * What the rule for late queries (late.c) makes of a query, for every
 * policy: served in the policy's order; demoted, served after every query
 * on time; or given up, dropped.
 */
enum policy_lateness {
	POLICY_ON_TIME,
	POLICY_DEMOTE, /* past its deadline, or its rest ends past it */
	POLICY_OVERDUE, /* its answer would come after its deadline plus its QoS (load < 1) */
	POLICY_GIVE_UP, /* ... plus policy_overdue_cutoff_qos() x its QoS, or load >= 1 */
};

/*
 * An overdue query is given up whatever once its answer would come this
 * many QoS past its deadline, at a load of 1 or unknown (none measured).
 */
#define POLICY_OVERDUE_QOS 2.0

/*
 * How many QoS past its deadline an overdue query's answer may come before
 * it is given up whatever, at the load rho the tenants' measured arrivals
 * ask (late.c): POLICY_OVERDUE_QOS / rho^2, POLICY_OVERDUE_QOS at rho 0
 * (none measured) or from 1 on. At rho 0.3 about 22 QoS: a short-QoS
 * query stuck behind another tenant's whole-model block is answered.
 */
double policy_overdue_cutoff_qos(double rho);
/* The most queued queries on time the overdue check weighs: a longer queue leaves no room. */
#define POLICY_OVERDUE_QUEUE 256

/*
 * q's lateness, its rest predicted to take rest_ns from now and at least
 * least_ns (the least of the policy's prediction and the table): given up
 * when now + least_ns is at or past its deadline plus
 * policy_overdue_cutoff_qos(rho) x its tenant's QoS, rho the load the
 * tenants' measured arrivals ask; overdue when at or past its deadline
 * plus its QoS while rho < 1 (given up otherwise, as then no delay
 * drains); demoted when now is at
 * or past its deadline or now + rest_ns past it,
 * else on time; always on time when cfg->late says serve. rest_ns =
 * least_ns = 0 asks whether q's time has run out whatever it costs.
 */
enum policy_lateness policy_lateness(const struct policy_config *cfg, const struct policy_input *in,
				     const struct policy_query *q, double rest_ns, double least_ns);

/*
 * Whether q is given up before it is priced: its time has run out whatever
 * it costs (policy_lateness() with no rest: past its deadline plus
 * policy_overdue_cutoff_qos() QoS, or overdue while the machine does not keep up),
 * or it is overdue and cannot start now (can_start false): an overdue
 * query is served now or given up, not held for cores.
 */
bool policy_late_gone(const struct policy_config *cfg, const struct policy_input *in,
		      const struct policy_query *q, bool can_start);

/*
 * How long the live queries on time can wait, worked out at most once a
 * round (reset it at the round's start): each one's slack is its deadline
 * less now less its whole model served alone on every online core
 * (policy_costs_served_solo_ns(), an upper bound on its rest); the least
 * and second least of those not negative (a query late itself gives no
 * room), and whose the least is.
 */
struct policy_late_room {
	bool known;
	double least_ns, second_ns;
	uint64_t least_id;
};

static inline void policy_late_room_reset(struct policy_late_room *room)
{
	room->known = false;
}

/*
 * Whether q, demoted by policy_lateness(), is served in its turn all the
 * same: turn_ns (its rest on the cores it would get now, at the policy's
 * pessimistic price) fits in the least slack of the other live queries on
 * time, so serving it first makes none of them late.
 */
bool policy_late_in_turn(struct policy_late_room *room, const struct policy_config *cfg,
			 const struct policy_input *in, const struct policy_query *q,
			 double turn_ns);

/*
 * Whether an overdue query (POLICY_OVERDUE) is served now rather than
 * demoted (and given up when it still is not once its turn as a demoted
 * one comes, nothing on time or late left before it): turn_ns (its rest on the cores it would get now, at the
 * policy's pessimistic price) leaves every queued query on time still on
 * time and every late one short of overdue, and the arrivals expected
 * meanwhile room too, taken in the order of those bounds after it, each
 * one's rest served alone on every online core (the table). The arrivals
 * expected: over turn_ns / (1 - the load the tenants' intervals ask for),
 * the time the block's delay takes to drain, each tenant's share of it
 * over its interval, times its whole model, bound by the deadline of one
 * arriving now; a load of 1 or more leaves no room.
 */
bool policy_overdue_kept(const struct policy_config *cfg, const struct policy_input *in,
			 const struct policy_query *q, double turn_ns, int nr_cores);

enum policy_served {
	POLICY_SERVED, /* a decision was appended, its cores taken from free */
	POLICY_DROPPED, /* a drop was appended */
	POLICY_WAIT, /* too few free cores for the model's smallest core count */
	POLICY_DEMOTED, /* late (POLICY_DEMOTE): its turn comes after every query on time */
	POLICY_OUT_FULL, /* an output array is full */
};

/*
 * Serves q's whole remaining model as one block on the largest profiled
 * core count <= nr_cores that fits in free (the lowest-numbered cores of
 * free), each layer in its fastest version alone at that count, unless
 * policy_lateness() on that alone latency (prediction and table alike)
 * gives it up (dropped: DEADLINE_PASSED when its time has run out whatever
 * it costs, else CANNOT_MEET) or, when not demoted already, demotes it
 * (POLICY_DEMOTED, nothing appended). Returns an enum policy_served, or
 * -EINVAL with err filled when a layer has no version measured at that
 * core count.
 */
/*
 * One round's alone prices of whole rests, one a tenant, keyed by (next
 * layer, core index): every queued query of a tenant at the same layer has
 * the same rest, so a walk over a queue of N queries of L layers prices L
 * layers, not N x L. layers_priced counts the layers looked up (tests).
 */
struct policy_whole_prices {
	struct policy_whole_price {
		bool known;
		int next_layer, ci;
		uint64_t ns;
	} at[POLICY_MAX_TENANTS];
	long layers_priced;
	struct policy_late_room room;
};

void policy_whole_prices_init(struct policy_whole_prices *prices);

int policy_serve_whole_model(const struct policy_config *cfg, const struct policy_input *in,
			     const struct policy_query *q, int nr_cores, bool demoted,
			     struct policy_whole_prices *prices, struct policy_cpuset *free,
			     struct policy_output *out, struct coloc_err *err);

/*
 * The core count a policy gives q's whole rest, at most (NULL: every free
 * core), with the policy's state.
 */
typedef int (*policy_whole_cores_fn)(void *state, const struct policy_input *in,
				     const struct policy_query *q);

/*
 * First come first served within tenant (-1: any tenant), late queries
 * after the rest: the queued queries not yet decided or dropped in out, by
 * arrival, each served whole on up to cores_of()'s count of free (given
 * up ones dropped, late ones passed over) until one is served or must
 * wait; when none on time is left, the earliest late one, demoted. Returns
 * that one's enum policy_served (POLICY_DROPPED when nothing was left to
 * serve), or -EINVAL as policy_serve_whole_model. Called again in the same
 * round (another executor of the tenant), it serves the next. One pass
 * over the queue a call, each rest priced once a round (prices).
 */
int policy_serve_earliest_whole(const struct policy_config *cfg, const struct policy_input *in,
				int tenant, policy_whole_cores_fn cores_of, void *state,
				struct policy_whole_prices *prices, struct policy_cpuset *free,
				struct policy_output *out, struct coloc_err *err);

/*
 * Up to tenant's idle executors' worth of its queries served whole, one
 * policy_serve_earliest_whole() each (no core cap) on cores: each on the
 * whole of cores when shared (the kernel shares them between the tenant's
 * queries and everyone's: os), else on what the ones before left of it
 * (static). Returns 0, POLICY_OUT_FULL, or -EINVAL as
 * policy_serve_whole_model.
 */
int policy_serve_tenant_whole(const struct policy_config *cfg, const struct policy_input *in,
			      int tenant, const struct policy_cpuset *cores, bool shared,
			      struct policy_whole_prices *prices, struct policy_output *out,
			      struct coloc_err *err);

/*
 * The coloc engine (coloc.c), shared by coloc, its ablations and the
 * model-wise and layer-wise baselines: each entry is a set of flags.
 */
enum coloc_unit {
	COLOC_UNIT_MODEL, /* the whole remaining model is one block */
	COLOC_UNIT_BLOCK, /* VELTAIR's layer blocks, cut at pivot layers */
	COLOC_UNIT_LAYER, /* one layer per block */
};

struct coloc_flags {
	bool use_level; /* price blocks at the free cores' interference level (else alone) */
	bool versions; /* each layer's fastest version at the level (else version 0) */
	enum coloc_unit unit;
	bool dynamic_thres; /* VELTAIR's load-following threshold (else fixed_thres) */
	double fixed_thres; /* cores above avg_C that make a pivot, when not dynamic */
	bool predict; /* correct predictions online from measured blocks */
	bool ewma_only; /* with predict: never a block's own median (COLOC_CLASS_SAMPLES) */
	bool headroom; /* most urgent (earliest deadline) first (else arrival order) */
	bool headroom_budget; /* budgets from the queue's headroom (else from the tenant's QoS) */
	bool use_spare; /* a block may take up to avg_C + thres cores when faster (else its need) */
	bool spare_to_knee; /* with use_spare: no further than the knee of the block's scaling curve */
	/* with use_spare: every free core, past avg_C + thres, where the block keeps its per-core speed */
	bool spare_efficient;
	/* spare_efficient only where the socket-wide slowdown is known: its price then picks the count */
	bool spare_priced;
	/* layers share the QoS by alone latency where the model fits (else by ops, VELTAIR's) */
	bool time_shares;
	/*
	 * A block's budget stops growing at this share of the smallest QoS of
	 * the other active tenants (0: no cap): a block is not preempted, so a
	 * query arriving behind it waits for it.
	 */
	double block_cap;
	/*
	 * Model-wise's choice is one of the candidates: the rest of the query
	 * whole on the fewest cores that fit its budget, taken when that is no
	 * more cores than the block and keeps no other tenant waiting.
	 */
	bool whole_candidate;
	/*
	 * Where the machine's socket-wide slowdown is known: a tenant whose
	 * query costs its socket less time alone at its fastest count than
	 * beside others at any count runs alone (policy/coloc_alone.c).
	 */
	bool alone;
	/*
	 * A block with no count that fits its budget ends where its layers'
	 * own fastest counts part, so each runs on its own
	 * (coloc_fastest_block()).
	 */
	bool layer_counts;
};

/*
 * VELTAIR's dynamic threshold of a model whose average core need is avg,
 * among active models needing sum_avg together on total_cores:
 * (total_cores - sum_avg) x avg / sum_avg, 0 when nothing is spare.
 */
double policy_coloc_threshold(int total_cores, double sum_avg, double avg);

int policy_coloc_engine_create(const struct coloc_flags *flags, const struct policy_config *cfg,
			       void **state, struct coloc_err *err);
int policy_coloc_engine_decide(void *state, const struct policy_config *cfg,
			       const struct policy_input *in, struct policy_output *out,
			       struct coloc_err *err);
void policy_coloc_engine_block_done(void *state, const struct policy_decision *d,
				    uint64_t measured_ns);
void policy_coloc_engine_destroy(void *state);

/* Defines the entry ident named nm on the coloc engine with the flags given as initializers. */
#define COLOC_ENTRY(ident, nm, desc, ...)                                        \
	static int ident##_create(const struct policy_config *cfg, void **state, \
				  struct coloc_err *err)                         \
	{                                                                        \
		static const struct coloc_flags flags = { __VA_ARGS__ };         \
		return policy_coloc_engine_create(&flags, cfg, state, err);      \
	}                                                                        \
	const struct policy_entry ident = {                                      \
		.name = nm,                                                      \
		.description = desc,                                             \
		.create = ident##_create,                                        \
		.decide = policy_coloc_engine_decide,                            \
		.block_done = policy_coloc_engine_block_done,                    \
		.destroy = policy_coloc_engine_destroy,                          \
	}

extern const struct policy_entry policy_coloc;
extern const struct policy_entry policy_coloc_noversions;
extern const struct policy_entry policy_coloc_whole;
extern const struct policy_entry policy_coloc_noblocks;
extern const struct policy_entry policy_coloc_fixedthres;
extern const struct policy_entry policy_coloc_noprediction;
extern const struct policy_entry policy_coloc_nocap;
extern const struct policy_entry policy_coloc_noknee;
extern const struct policy_entry policy_coloc_fcfs;
extern const struct policy_entry policy_coloc_ewma;
extern const struct policy_entry policy_coloc_nospare;
extern const struct policy_entry policy_coloc_timeshares;
extern const struct policy_entry policy_coloc_wide;
extern const struct policy_entry policy_coloc_shared;
extern const struct policy_entry policy_coloc_layercounts;
extern const struct policy_entry policy_coloc_priced;
extern const struct policy_entry policy_model_wise;
extern const struct policy_entry policy_layer_wise;

#endif /* COLOC_POLICY_IMPL_H */
