// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What sim/run.c's parts share: a run's state (its slots, cores, LLC
 * domains, queries and the policy it drives) and the functions each part
 * gives the event loop. run.c: the loop, blocks starting and ending, the
 * policy's rounds, arrivals; run_rate.c: LLC pressure and re-rating;
 * run_cost.c: what a block and a query cost beyond the table; run_setup.c:
 * the parameters checked, the state built and freed.
 */
#ifndef COLOC_SIM_RUN_INTERNAL_H
#define COLOC_SIM_RUN_INTERNAL_H

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
	double table_ns, alone_ns; /* its table time alone; with the costs added (run_account.c) */
	double slowdown; /* from the interference model */
	double stretch; /* slowdown x the most blocks sharing one of its cores */
	bool collapsed; /* shared cores: its threads on one core, not slowed by the others */
	uint64_t dispatch_ns; /* executor model: the part of its time outside the executor's */
	bool alone; /* no other tenant's block ran when it started (the level's evidence) */
	/* the copy of the tenant's weights it runs on: its executor's, or 0 for lanes */
	int copy;
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
	struct policy_arrivals arrivals[POLICY_MAX_TENANTS]; /* for tenants[].interval_ns */
	struct coloc_rng cost_rng[POLICY_MAX_TENANTS]; /* query costs, apart from arrivals */
	struct coloc_rng parts_rng[POLICY_MAX_TENANTS]; /* the serving path's parts (parts.c) */
	struct sim_speed speed; /* the machine's slow spells (speed.c) */
	/*
	 * Per copy of a tenant's weights (sim_slot.copy): when its last query
	 * ended, for the warmth of its next, and when its last block ended, for
	 * the executor model (0: none yet)
	 */
	uint64_t last_end_ns[POLICY_MAX_TENANTS][SIM_MAX_EXECUTORS];
	uint64_t last_block_end_ns[POLICY_MAX_TENANTS][SIM_MAX_EXECUTORS];
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
	int *sock_busy; /* [nr_sockets]: busy cores */
	int *sock_own; /* [nr_sockets]: scratch */
	unsigned int *sock_stamp; /* [nr_sockets]: touched by the start or end re-rated now */
	int nr_sockets, per_socket;
	struct policy_signal *core_sig, *dom_sig; /* [POLICY_MAX_CPUS] */
	struct sim_level level; /* what the policy is told of them (level.c) */

	uint64_t accounted_ns; /* the idle cores' time counted up to here (run_account.c) */
	struct policy_output out;
	double *decide_us;
	int nr_decide, cap_decide;
};

/*
 * run_rate.c: re-rates the running blocks sharing an LLC domain with cores,
 * or a socket when the interference model has a socket-wide part (all of
 * them when cores are shared).
 */
int sim_run_rerate_neighbours(struct sim_state *s, const struct policy_cpuset *cores,
			      struct coloc_err *err);
int sim_run_rerate_all(struct sim_state *s, struct coloc_err *err);

/* run_cost.c: a block's stretch over its table time, and a query's cost after its last block. */
double sim_run_exec_stretch(struct sim_state *s, struct sim_slot *sl, double table_ns,
			    uint64_t *fixed_ns);
uint64_t sim_run_query_cost(struct sim_state *s, int tenant);
double sim_run_block_stretch(struct sim_state *s, const struct sim_slot *sl);

/* run_setup.c: the parameters checked, the state built (first arrivals pushed) and freed. */
int sim_run_check_params(const struct sim_params *p, struct coloc_err *err);
int sim_run_state_init(struct sim_state *s, const struct sim_params *p, struct sim_result *r,
		       struct coloc_err *err);
void sim_run_state_free(struct sim_state *s);

/*
 * run_account.c: the idle cores from the last event to now (before now's
 * event changes them), and a block's cores x time at its end.
 */
void sim_account_idle(struct sim_state *s, uint64_t now);
void sim_account_block(struct sim_state *s, const struct sim_slot *sl);

/* run.c: pushes tenant's next arrival (a trace's next, whatever its tenant). */
int sim_run_push_next_arrival(struct sim_state *s, int tenant, struct coloc_err *err);

#endif
