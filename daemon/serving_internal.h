/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The serving core's own state, shared by its files (serving.c: the
 * policy rounds; serving_queries.c: queries queued and completed;
 * serving_slots.c: queries in executor slots; serving_decision.c: the
 * policy's decisions applied; serving_tenant.c: a tenant's executor
 * processes; serving_events.c: executor events and deadlines;
 * serving_admit.c: admission; serving_plan.c: plan ahead; serving_view.c:
 * what status shows; serving_create.c: create and destroy). Nothing
 * outside daemon/serving*.c includes it.
 */
#ifndef COLOC_DAEMON_SERVING_INTERNAL_H
#define COLOC_DAEMON_SERVING_INTERNAL_H

#include "assign.h"
#include "execproc.h"
#include "policy.h"
#include "profile_table.h"
#include "serving.h"

#define SV_MAX_TENANTS POLICY_MAX_TENANTS
#define SV_MAX_ROUNDS 16 /* decide calls per round before leaving the rest to the next event */
/*
 * memfds held by queued queries at most, in all and by one uid's tenants
 * (so that one uid cannot take them all: docs/design/infer-memfd.md,
 * "Bounds"); past either, a memfd is read at once
 */
#define SV_MAX_INPUT_FDS 256
#define SV_MAX_INPUT_FDS_PER_UID (SV_MAX_INPUT_FDS / 4)
#define SV_STOP_MS 100 /* an idle executor answers EXIT in microseconds; then SIGKILL */
#define SV_REAP_POLL_MS 100 /* how often a retired executor whose pidfd is not watched is looked at */

struct sv_query {
	uint64_t id;
	uint64_t arrival_ns, deadline_ns;
	int next_layer;
	uint64_t exec_ns; /* sum of its blocks' times inside the executor */
	struct serving_breakdown parts; /* where its time went so far */
	uint64_t mark_ns; /* arrival, then when its last block's completion was noticed */
	int exec; /* the executor whose slot holds it; -1 while it waits for one */
	int slot; /* its slot there; -1 while it waits for one */
	bool in_flight;
	void *input; /* our copy until it is in a slot */
	size_t input_held; /* its bytes while we hold it (sv_tenant.inputs_held) */
	int input_fd; /* or the client's checked memfd (input_memfd.h), read into the slot; -1 */
	size_t input_offset; /* where in it the input starts */
	/* input_fd is frozen (input_memfd_frozen): it goes to the executor with the first block */
	bool input_frozen;
	serving_done_fn done;
	void *ctx;
	struct sv_query *next;
};

/* One of the policy's blocks in a command's plan: what differs from the plan's first. */
struct sv_plan_block {
	int first, last;
	int nr_cores; /* the first nr_cores of the plan's cores (x->blk.cores) */
	double level;
	uint64_t alone_ns, predicted_ns;
	bool cold; /* priced as starting cold (policy_decision's) */
	double cold_scale; /* and at what scale */
};

/* Cores of a command whose others' time is read one by one (proc_schedstat_sum.allowed's bits). */
#define SV_WAIT_MAX_CORES 63

/* One executor process of a tenant and the command it runs. */
struct sv_exec {
	struct execproc *ep;
	struct sv_query *slots[COLOC_SHM_NR_SLOTS];
	bool busy; /* a block in flight */
	struct sv_query *blk_query;
	/* the command's first block, but with the cores its whole plan holds */
	struct policy_decision blk;
	uint8_t *blk_versions; /* [nr_layers]: layer blk.first_layer + i's at [i], all the plan's */
	/* [COLOC_SHM_MAX_PLAN_BLOCKS]: the command's blocks, blk's first (serving_plan.c) */
	struct sv_plan_block *plan;
	int plan_nr;
	bool plan_yielded; /* asked to stop at its next boundary */
	uint64_t blk_submit_ns;
	int blk_corunners; /* other tenants' blocks in flight when it started */
	/*
	 * Overran (serving_overrun.c): its cores were taken back and may run
	 * another's blocks; it is no block of the policy's, and its end frees nothing.
	 */
	bool late;
	/*
	 * Past its bound (serving_cpu_wait.c): since when, the wait excused
	 * since, the last look and what was read then (its tenant's PSI total,
	 * unless by_threads; its threads' run delay, time run and which
	 * threads), when the overrun check judges it again, and how far that
	 * wait has moved its hang deadline; over_since 0: not looked at past
	 * it yet. excused: a wait kept it from a verdict (it then forgives no
	 * strike).
	 */
	uint64_t over_since_ns, over_waited_ns, over_look_ns, over_next_ns, hang_waited_ns;
	uint64_t over_wait0_ns, over_delay0_ns, over_run0_ns, over_threads_sig;
	int over_threads_nr;
	bool over_by_threads, over_excused;
	/*
	 * Where the sensor counts its executor (by_others): at the last look,
	 * others' time and its tenant's on each of its cores (past
	 * SV_WAIT_MAX_CORES of them, on all in [0]) and which of them counted
	 * over the interval before (its runnable threads allowed there, or,
	 * not walked, its tenant ran there). walks: its threads' /proc files
	 * are read at each look (no sensor or no PSI).
	 */
	uint64_t over_others0_ns[SV_WAIT_MAX_CORES], over_own0_ns[SV_WAIT_MAX_CORES];
	uint64_t over_allowed0;
	bool over_by_others, over_walks;
};

/* An executor process that left its tenant and is not reaped yet. */
struct sv_retired {
	struct execproc *ep;
	uint64_t kill_at_ns; /* SIGKILL then, if still there; 0: sent already */
	bool unwatched; /* its pidfd could not be watched: serving_tick looks for its end */
	struct sv_retired *next;
};

struct sv_tenant {
	bool used;
	bool removing;
	enum serving_tenant_state state;
	char name[SERVING_NAME_LEN];
	char reason[SERVING_REASON_LEN];
	/* the model as submitted: its name, and colocd's own duplicates of the sealed memfds */
	char *model_name;
	int model_fd, weights_fd; /* weights_fd -1: none */
	struct execproc_file external[COLOC_MAX_REQUEST_FDS]; /* locations malloc'd */
	int nr_external;
	uint64_t qos_ns, solo_ns, uid, started_ns;
	uid_t owner; /* serving_tenant_spec.owner */
	/* of the sealed model, weights and external data: the profile cache key (profile_key.h) */
	struct profile_key model_key;
	/*
	 * Admitted: its first executor described the model (summary, a
	 * checked copy; later executors must describe the same), the table
	 * was built from its profile, and every executor got ready with the
	 * profile's kernel versions (versions: the profile's, in the form
	 * executors report theirs). Until then it takes no query, and
	 * admitted (if set) is owed its answer.
	 */
	bool described;
	struct sv_profile_load *profile_load; /* its profile being read: no summary yet */
	struct coloc_shm_summary *summary;
	struct coloc_shm_versions *versions;
	void (*admitted)(void *ctx, const char *name, int ret, const struct coloc_err *err);
	void *admitted_ctx;
	int nr_layers; /* the summary's */
	struct policy_table table;
	size_t in_bytes, out_bytes;
	int nr_exec; /* executors as admitted; each has a process while it serves */
	struct sv_exec ex[SERVING_MAX_EXECUTORS];
	void *scratch; /* in_bytes, for swapping two queued inputs between executors */
	uint64_t moved; /* queries moved to another executor before their first block */
	uint64_t inputs_mapped; /* queries whose frozen memfd went to the executor */
	uint64_t early_rings; /* queries whose doorbell rang before their round (ring_early) */
	uint64_t clamped_times; /* completions whose reported times were out of bounds */
	uint64_t overruns; /* commands whose cores were taken back (serving_overrun.c) */
	int strikes; /* recent overruns (at most SV_OVERRUN_MAX_STRIKES), each halving its bound */
	int good_commands; /* commands within the bound since the last strike was forgiven */
	struct sv_query *head, *tail; /* queued and in flight, by arrival */
	struct policy_arrivals arrivals; /* its queries' arrivals, for the policy's interval_ns */
	int nr_queries;
	size_t inputs_held; /* bytes of its queries' inputs copied into colocd, not yet in a slot */
	int input_fds; /* its queries' memfds held (serving.nr_input_fds) */
	uint64_t submit_bytes; /* its sealed files' sizes (max_submit_bytes_per_uid) */
	struct serving_stats stats;
	struct policy_level_tenant level; /* its blocks' norm and noise (level_estimate.h) */
	struct policy_signal
		sig; /* its attributed LLC / DRAM pressure (serving_set_tenant_signal) */
	unsigned int order; /* admission order, for listing */
	bool sandboxed; /* holds an entry in s->sandbox */
	bool holds_cores; /* a block in flight, late or not (serving_idle.c) */
	bool told_busy; /* its cgroup's cpu.idle as last told: 0 (busy) or 1 */
	bool told_late; /* busy at the lowest weight: only late blocks out (serving_idle.c) */
	bool told_no_others; /* the log said its commands' wait is judged without others' time */
	bool told_walk; /* the log said its commands' wait is read from its threads' /proc files */
};

/* A submit's place in its owner's quotas while its files are copied (serving_hold). */
struct serving_hold {
	uid_t owner;
	int executors;
	struct serving_hold *prev, *next;
};

struct serving {
	char *executor, *cache_dir;
	struct serving_hold *holds; /* counted by sv_owner_usage */
	struct profile_machine machine; /* this machine as the profile cache names it */
	int max_queue, max_queue_total;
	int max_tenants_per_uid, max_executors_per_uid, max_queued_per_uid; /* 0: none */
	size_t max_input_bytes_per_uid; /* 0: none */
	uint64_t max_submit_bytes_per_uid; /* 0: none */
	uint64_t max_submit_bytes; /* over all uids (SERVING_SUBMIT_ROOT_SHARE root's); 0: none */
	int (*watch)(void *ctx, int fd, bool add);
	void (*core_changed)(void *ctx, int cpu, const char *name, uint64_t query, int first,
			     int last);
	void (*block_done)(void *ctx, const struct serving_block_record *r);
	void (*tenant_cores)(void *ctx, const char *name, const int *cpus, int nr);
	int (*cpu_times)(void *ctx, const char *name, uid_t owner, const int *cpus, int nr,
			 uint64_t *others, uint64_t *own);
	struct sandbox *sandbox;
	void (*tenant_changed)(void *ctx, const char *name, enum serving_tenant_state state,
			       const pid_t *pids, int nr_pids);
	void *ctx;

	const struct policy_entry *entry;
	struct policy *policy;
	struct policy_config pcfg;
	struct policy_cpuset free;
	int cpus[POLICY_MAX_CPUS], nr_cpus;
	char cores[8192]; /* cpus as a CPU list, for the executors */
	int owner[POLICY_MAX_CPUS]; /* tenant whose block holds the CPU, or -1 */
	/* when the last block on the CPU ended (0: none yet): whether the next starts cold */
	uint64_t core_idle_since[POLICY_MAX_CPUS];
	struct policy_signal *core_sig; /* [POLICY_MAX_CPUS], as last measured */
	/* [POLICY_MAX_CPUS]: each core's level estimated from blocks, or set by the PMU model */
	struct policy_level_core *core_level;
	struct policy_signal *core_sig_now; /* [POLICY_MAX_CPUS]: aged to a round's now */
	struct policy_signal *dom_sig_now; /* [POLICY_MAX_CPUS] by LLC domain, from core_sig_now */

	struct sv_tenant tenants[SV_MAX_TENANTS];
	struct sv_retired *retired; /* stopping or killed, their pidfds still watched */
	uint64_t next_uid, next_query_id;
	unsigned int next_order;
	int nr_live; /* queries accepted and not completed, all tenants */
	int nr_input_fds; /* memfds queries hold until their inputs go to slots */

	/* one round's scratch */
	struct policy_tenant ptenants[SV_MAX_TENANTS];
	struct policy_query *pqueries; /* [max_queue_total] */
	struct policy_decision running[SV_MAX_TENANTS * SERVING_MAX_EXECUTORS];
	struct policy_decision decisions[SV_MAX_TENANTS * SERVING_MAX_EXECUTORS];
	struct policy_drop drops[SV_MAX_TENANTS * SERVING_MAX_EXECUTORS * COLOC_SHM_NR_SLOTS];
	uint8_t *versions;
	int max_versions;
	bool plan_ahead; /* serving_config.no_plan_ahead unset */
	bool executor_lanes; /* serving_config's */
	uint8_t *plan_versions; /* [max_plan_versions]: a plan's look-ahead rounds' output */
	int max_plan_versions;
	int plan_tenants; /* tenants serving when the plan in flight was made */
	bool scheduling, again;
	uint64_t policy_errors;
	char policy_error[COLOC_ERR_MSG_MAX];
	bool idle_warned; /* a tenant's cpu.idle write failed (said once) */
};

/* t's executors with a block in flight. */
int sv_tenant_busy(const struct sv_tenant *t);
/* Frees a query's input where it still has one: its copy, or closes its memfd. */
void sv_query_drop_input(struct serving *s, struct sv_tenant *t, struct sv_query *q);
struct sv_tenant *sv_find_tenant(const struct serving *s, const char *name);
/* Takes q off every list, counts it, calls back, frees it. */
void sv_complete_query(struct serving *s, struct sv_tenant *t, struct sv_query *q,
		       enum serving_status status, const char *reason);
/* Every query of t fails with why (prefixed with the tenant's name unless it has it). */
void sv_fail_all_queries(struct serving *s, struct sv_tenant *t, const char *why);
/* What owner's tenants hold: how many, their executors and their queries. */
void sv_owner_usage(const struct serving *s, uid_t owner, int *tenants, int *executors,
		    int *queued);
/* All of t's executors started (t starting), or none of them (the ones started are killed). */
int sv_start_executors(struct serving *s, struct sv_tenant *t, struct coloc_err *err);
/* t's executors retired: asked to exit (graceful) or killed, reaped through the loop. */
void sv_close_executors(struct serving *s, struct sv_tenant *t, bool graceful);
/* t's executors killed, its files closed, its place freed. */
void sv_free_tenant(struct serving *s, struct sv_tenant *t);
/* Whether t has its executor processes (starting, serving or draining). */
bool sv_tenant_running(const struct sv_tenant *t);
/* tenant_changed told of t's state, with the pids of the executors t runs now. */
void sv_notify_running(struct serving *s, struct sv_tenant *t, enum serving_tenant_state state);
/* A retired executor reaped: its last fds unwatched, its handle freed, *pp unlinked. */
void sv_free_retired(struct serving *s, struct sv_retired **pp);
/* x's block over: the cores it held back to the free set, x idle. */
void sv_release_block_cores(struct serving *s, struct sv_tenant *t, struct sv_exec *x);
/*
 * An executor is gone or given up on: t's cores back at once, its other
 * executors killed, every query failed with why; a tenant being removed
 * goes, one being admitted is refused.
 */
void sv_fail_tenant(struct serving *s, struct sv_tenant *t, const char *why);
/*
 * t's admission, while none of its executors has described the model:
 * takes the first summary and starts its profile's load off the loop
 * (sv_profile_load_start). false when t was refused (and is gone).
 */
bool sv_admit_poll(struct serving *s, struct sv_tenant *t);
/*
 * t's profile load ended (its fd was readable): from the profile, the
 * table built and the QoS checked. false when t was refused (and is gone)
 * or the load is not done.
 */
bool sv_admit_profile_loaded(struct serving *s, struct sv_tenant *t);

/*
 * serving_profile.c: the profile of a described tenant found and parsed by
 * one of SV_PROFILE_PARSERS threads of colocd's, at this nice, in turns by
 * the tenants' owners (uid_turns.h), each uid's in the order its tenants
 * were described; it tells the loop through an eventfd that
 * the serving core watches (serving_config.watch, serving_fds).
 */
#define SV_PROFILE_LOAD_NICE 19
#define SV_PROFILE_PARSERS 2
struct sv_profile_load;
/*
 * Starts the lookup of sum's profile by t's key into t->profile_load
 * (shown: the model's files in the coloc-profile command a missing
 * profile's message gives). 0, or -errno with err filled.
 */
int sv_profile_load_start(struct serving *s, struct sv_tenant *t,
			  const struct coloc_shm_summary *sum, const char *shown,
			  struct coloc_err *err);
int sv_profile_load_fd(const struct sv_profile_load *l);
/*
 * Whether l's thread is done; then *p its profile, the caller's to free
 * (NULL with err filled: none to load), and *sum the summary it was found
 * by (valid until sv_profile_load_end).
 */
bool sv_profile_load_take(struct sv_profile_load *l, struct profile **p,
			  const struct coloc_shm_summary **sum, struct coloc_err *err);
/* t lets go of its load (none: nothing): unwatched, freed once its thread ends too. */
void sv_profile_load_end(struct serving *s, struct sv_tenant *t);
/*
 * t described and all its executors ready (first, or after a restart):
 * ready, and admitted (answered) if it was not, when each built the kernel
 * versions its profile lists, in its order; else refused (a restarted
 * tenant: failed), naming
 * the first layer that differs, both names, and the coloc-profile command
 * that measures the profile again. false when t was refused or failed.
 */
bool sv_admit_ready(struct serving *s, struct sv_tenant *t);
/* t's admission refused (ret, why): its executors killed, t gone, the answer sent. */
void sv_admit_refuse(struct serving *s, struct sv_tenant *t, int ret, const char *why);
/* t goes at once: cores back, executors killed, queries failed, removed told, freed. */
void sv_drop_tenant(struct serving *s, struct sv_tenant *t);
/* Drained: the executor stops, the tenant goes. */
void sv_finish_removal(struct serving *s, struct sv_tenant *t);
/*
 * A policy round: queued queries into free slots, policy_decide,
 * policy_check_output, decisions started, drops completed. Re-entered from
 * a completion callback, it only asks the running round to go again.
 */
void sv_schedule(struct serving *s);
/*
 * Core c's level as the policy sees it: the PMU model's where it gives one,
 * aged, else the block estimate's beyond its noise (policy_level_core_level).
 */
double sv_core_level(const struct serving *s, int c, uint64_t now);
/* Blocks in flight over all tenants. */
int sv_blocks_in_flight(const struct serving *s);
/* Whether t takes queries: ready or draining, its executors started. */
bool sv_tenant_serving(const struct sv_tenant *t);
/* t's executors as the assignment sees them (policy/assign.h). */
struct sv_exec_views {
	struct policy_slot_view slot[SERVING_MAX_EXECUTORS][COLOC_SHM_NR_SLOTS];
	struct policy_exec_view ex[SERVING_MAX_EXECUTORS];
};
void sv_view_executors(const struct sv_tenant *t, struct sv_exec_views *v);
/* Queued queries of a serving tenant take free slots (policy_assign_slot), in arrival order. */
void sv_fill_slots(struct serving *s, struct sv_tenant *t);
/* q's memfd read into slot of executor x: 0 or a negative errno. */
int sv_read_memfd_into_slot(struct sv_tenant *t, const struct sv_query *q, int x, int slot);
/*
 * The executor q's next block runs on (policy_assign_executor), q moved
 * there if need be; -1: none, err set if it is because q could not move.
 */
int sv_executor_for(struct sv_tenant *t, struct sv_query *q, struct coloc_err *err);
/*
 * Starts d's block (and the plan ahead of it); false when it could not be:
 * the query failed, or none of its tenant's executors can take it now
 * (*refused set). in and nr_decisions: the round that decided it.
 */
bool sv_apply_decision(struct serving *s, const struct policy_input *in, int nr_decisions,
		       const struct policy_decision *d, bool *refused);
/* The policy's drop of a query completed, with why in words. */
void sv_apply_drop(struct serving *s, const struct policy_drop *d);

/*
 * Plan ahead (serving_plan.c). x's command starts with decision d (x->blk,
 * x->blk_versions filled from it), of a round that saw in and decided
 * nr_decisions: while d's query is the only one colocd holds, the policy's
 * following blocks for it under the same state (each asked with the query
 * advanced past the one before) join the plan as long as they keep d's
 * cores: each on the first of them (in CPU order), the plan holding the
 * union. Fills x->plan and the versions (x->blk.cores then the union);
 * returns the plan's blocks, >= 1.
 */
int sv_plan_make(struct serving *s, const struct policy_input *in, int nr_decisions,
		 struct sv_exec *x);
/* Block i of x's plan as the policy decided it (versions into x->blk_versions). */
struct policy_decision sv_plan_decision(const struct sv_exec *x, int i);
/*
 * A round's check on the plans in flight: one whose premise no longer
 * holds (another query, a tenant come or gone) is asked to yield at its
 * next boundary.
 */
void sv_plan_yield(struct serving *s);
/*
 * Overruns (serving_overrun.c): a command far past its table latency
 * (SV_OVERRUN_FACTOR x + SV_OVERRUN_SLACK_NS, the factor halved by each of
 * its tenant's strikes) gives its cores back at once while it goes on in
 * the background; the tenant pays for it (strikes: a tighter bound, one
 * block at a time) until it has run SV_OVERRUN_FORGIVE commands within it.
 */
#define SV_OVERRUN_FACTOR 8
#define SV_OVERRUN_MIN_FACTOR 2
#define SV_OVERRUN_MAX_STRIKES 2
#define SV_OVERRUN_SLACK_NS 10000000ull
#define SV_OVERRUN_FORGIVE 16
/*
 * Past its bound, a command whose tenant's threads wait for a CPU is
 * judged on the time they do not wait: late once they have run (not
 * waited) SV_OVERRUN_RUN_FACTOR x its table + SV_OVERRUN_SLACK_NS since,
 * and at SV_OVERRUN_WAIT_CAP x its bound whatever they waited.
 */
#define SV_OVERRUN_RUN_FACTOR 2
#define SV_OVERRUN_WAIT_CAP 4
/*
 * When x's command is hung (serving_events.c): SERVING_HANG_FACTOR x its
 * plan's predicted (or table, if more) time, times sharing (the blocks in
 * flight under a policy that shares cores, else 0), + SERVING_HANG_SLACK_NS,
 * doubled once late, + the wait for a CPU credited to it (hang_waited_ns);
 * UINT64_MAX where that does not fit.
 */
uint64_t sv_hang_deadline(const struct sv_exec *x, int sharing);
/*
 * Past its hang deadline, a command's deadline moves by the time its
 * threads waited for a CPU since it passed its overrun bound, up to
 * SV_HANG_WAIT_CAP x its limit in all (docs/security-executor.md says why 4).
 */
#define SV_HANG_WAIT_CAP 4
/* An executor of more threads than this has no wait excused (they are not all read). */
#define SV_WAIT_MAX_THREADS 256
/*
 * The wait for a CPU that other tasks on x's cores caused its threads
 * since it passed its overrun bound, at now, the baseline taken now on
 * the first look (serving_cpu_wait.c); false where there is no way to tell.
 */
bool sv_cpu_waited(struct serving *s, struct sv_tenant *t, struct sv_exec *x, uint64_t now,
		   uint64_t *waited);
/*
 * Whether t has a block in flight (submitting: one is being sent): its
 * cgroup turns busy at once if it was idle, late (the lowest weight) at
 * once if its only blocks out are late, busy again when one is not; idle
 * is left to sv_tenant_idle_flush (serving_idle.c).
 */
void sv_tenant_hold(struct serving *s, struct sv_tenant *t, bool submitting);
/* End of a round: the tenants told busy that hold no core now turn idle. */
void sv_tenant_idle_flush(struct serving *s);
/* When x's command (busy, not late) overruns. */
uint64_t sv_overrun_deadline(const struct sv_tenant *t, const struct sv_exec *x);
/* Takes the cores back from each of t's commands past its overrun deadline. */
void sv_overrun_check(struct serving *s, struct sv_tenant *t, uint64_t now);
/* x's command ended (before its cores are released): strikes forgiven or kept. */
void sv_overrun_ended(struct sv_tenant *t, const struct sv_exec *x);
/* t's executors with a late command. */
int sv_tenant_late(const struct sv_tenant *t);
/*
 * Whether the policy may start t's blocks now: not while a tenant with
 * strikes has a late command out (one block at a time, the late counted).
 */
bool sv_overrun_may_start(const struct sv_tenant *t);

/*
 * t's block d took ns: the evidence of t's level estimate
 * (policy_level_tenant_block) moves the estimate of each of d's cores the
 * PMU model does not measure. alone: no other tenant's block was in flight
 * when it started.
 */
void sv_update_slowdown(struct serving *s, struct sv_tenant *t, const struct policy_decision *d,
			uint64_t ns, bool alone);

#endif /* COLOC_DAEMON_SERVING_INTERNAL_H */
