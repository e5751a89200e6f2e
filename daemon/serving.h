/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's serving core: admitted tenants, each with one or more executor
 * processes (daemon/execproc.h) driven block by block; their queries, queued with a
 * deadline; and the policy (policy/policy.h) that decides which query's
 * layers run next on which cores. No socket and no event loop of its own:
 * the caller watches the fds this module names and calls back in.
 *
 * Driving it:
 *  - serving_create(), then serving_admit() per tenant: its answer comes
 *    through spec->admitted once the executor has described the model.
 *  - Every executor brings two fds (its doorbell pipe and its pidfd). The
 *    config's watch callback is told when one appears (add = true) and
 *    before it is closed (add = false); serving_fds() lists the current ones
 *    for a caller that polls them itself. When one is readable, call
 *    serving_handle_fd(fd). An executor leaving its tenant (removed, failed)
 *    is never waited for: asked to exit or killed, its pidfd stays watched
 *    until it is reaped (SIGKILL SV_STOP_MS after an exit it ignores).
 *  - A tenant being admitted brings one more while its profile is read
 *    and parsed by a thread (the load's eventfd), watched the same way.
 *  - Call serving_tick() at least every serving_next_timeout_ms(): it finds
 *    hung blocks and executors that never got ready, and reaps an executor
 *    left whose pidfd the watch callback refused (the timeout is then a
 *    tenth of a second at most, until it is gone).
 *  - serving_submit() queues a query; its callback runs exactly once, from
 *    serving_handle_fd/tick/submit/remove/destroy, with the output (ok), or
 *    dropped/failed with the reason. A submit refused at once returns an
 *    error and never calls back.
 *
 * Tenant states: starting (being admitted, then executor loading) -> ready -> draining (removed:
 * no new queries, the accepted ones still served) -> removed (gone); or failed (the
 * executor crashed, hung or was killed: reason kept, its queries failed,
 * its cores free) -> starting again by serving_restart().
 *
 * An executor runs one command at a time (a block, or a query alone's plan
 * of blocks that an event stops at a boundary: serving_config.no_plan_ahead)
 * and holds COLOC_SHM_NR_SLOTS queries
 * in flight: a queued query waits for a free slot before the policy sees it
 * (slots and executors assigned by policy/assign.h, which coloc-sim runs too).
 * A tenant admitted with E executors (serving_tenant_spec.executors) runs
 * up to E blocks at once, each of another query (policy_tenant.executors):
 * a query stays on the executor it started on, whose memory holds its
 * activations. With serving_config.executor_lanes the E executors are the
 * lanes of one process holding one copy of the model (execproc_spawn_lanes,
 * docs/design/lanes.md), each watched and driven as an executor. A tenant
 * fails as a whole when any of its executors does.
 */
#ifndef COLOC_DAEMON_SERVING_H
#define COLOC_DAEMON_SERVING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "coloc/limits.h"
#include "coloc/protocol.h"
#include "error.h"
#include "profile_key.h"
#include "serving_stats.h"

#define SERVING_NAME_LEN 64
#define SERVING_DEFAULT_POLICY "coloc" /* the scheduler issue's policy */
#define SERVING_DEFAULT_QUEUE 256 /* queued queries per tenant */
#define SERVING_DEFAULT_QUEUE_TOTAL 4096 /* over all tenants */
/* A block is hung past HANG_FACTOR x max(its prediction, its alone latency) + HANG_SLACK. */
/*
 * Generous on purpose: killing a tenant's executor loses its queries, and a
 * shared or loaded machine (or ASan) can slow a block tenfold; a real hang
 * is still found within seconds.
 */
#define SERVING_HANG_FACTOR 50
#define SERVING_HANG_SLACK_NS 2000000000ull
#define SERVING_START_TIMEOUT_NS 300000000000ull /* loading a model may take minutes */
/* Its import, in the executor's sandbox, must describe the model within this (admission). */
#define SERVING_DESCRIBE_TIMEOUT_NS 120000000000ull
#define SERVING_MAX_QOS_NS 3600000000000ull /* a QoS target of an hour at most, as submit takes */
/* The part of serving_config.max_submit_bytes kept for root's submits: a quarter of it. */
#define SERVING_SUBMIT_ROOT_SHARE(max) ((max) / 4)
/*
 * The part of the tenant places (SV_MAX_TENANTS) and of the queries queued
 * over all tenants (max_queue_total) kept for root's: members together are
 * refused past the rest, root only past the whole, as for submitted files.
 */
#define SERVING_ROOT_SHARE(max) ((max) / 4)
/*
 * The most of the members' part (all but root's share) one member's
 * tenants may hold, whatever max_submit_bytes_per_uid says: a fifth, so
 * that four members holding all they may leave a fifth member its whole
 * quota (docs/security-submit.md, "One member's part").
 */
#define SERVING_SUBMIT_MEMBER_SHARE(members) ((members) / 5)
/*
 * Executor processes one tenant may have: each loads the model's weights
 * and primitives (its own memory), and lets one more of its queries run at
 * once.
 */
#define SERVING_MAX_EXECUTORS COLOC_MAX_EXECUTORS

struct serving;
struct profile_machine;

enum serving_tenant_state {
	SERVING_TENANT_STARTING,
	SERVING_TENANT_READY,
	SERVING_TENANT_DRAINING,
	SERVING_TENANT_FAILED,
	SERVING_TENANT_REMOVED, /* only told to tenant_changed: the tenant is gone after it */
};

const char *serving_state_name(enum serving_tenant_state s);

enum serving_status {
	SERVING_QUERY_OK,
	SERVING_QUERY_DROPPED, /* the policy gave up on it (deadline) */
	SERVING_QUERY_FAILED, /* its executor failed, or the block did */
};

const char *serving_status_name(enum serving_status s);

struct serving_completion {
	uint64_t query_id;
	const char *tenant;
	enum serving_status status;
	const char *reason; /* "" when ok */
	uint64_t latency_ns; /* from submit to this completion */
	uint64_t exec_ns; /* of which its blocks ran inside the executor */
	struct serving_breakdown parts; /* the latency part by part (serving_stats.h) */
	/* SERVING_QUERY_OK: the outputs (shm.h's layout), valid during the callback only */
	const void *output;
	size_t output_bytes;
};

typedef void (*serving_done_fn)(void *ctx, const struct serving_completion *c);

/*
 * One finished block, as the policy decided it and as the executor ran it:
 * what a prediction error can be traced back to.
 */
struct serving_block_record {
	const char *tenant;
	uint64_t query;
	int first, last, nr_cores; /* layers [first, last) on nr_cores cores */
	int corunners; /* other tenants' blocks in flight when it started */
	double level; /* the slowdown the policy assumed */
	/*
	 * The estimated level on its cores as it ended, before it counts:
	 * their highest, whatever the policy reads (sv_core_level())
	 */
	double core_level;
	const uint8_t *versions; /* [last - first]: each layer's version, valid during the call */
	uint64_t alone_ns; /* the profile's latency of the block alone */
	uint64_t predicted_ns;
	uint64_t measured_ns; /* the executor's own timing of the layers; 0 if it failed */
	uint64_t round_trip_ns; /* from submit until colocd noticed the completion */
	uint64_t switch_ns; /* the executor's re-pinning to the block's cores */
	bool ok;
	bool clamped; /* the executor's times were out of bounds (execproc_result) */
};

struct serving_config {
	const char *executor; /* bin/coloc-executor; NULL: next to /proc/self/exe */
	const char *cache_dir; /* profile cache; NULL: $COLOC_CACHE_DIR or the default */
	/*
	 * This machine as the profile cache names it (profile.h); NULL:
	 * serving_create asks the executor binary for the ISA
	 * (daemon/isa_probe.h), as colocd links no oneDNN.
	 */
	const struct profile_machine *machine;
	const char *policy; /* a policy_find() name; NULL: "coloc" */
	/*
	 * A query that cannot meet its deadline: dropped (false, the default)
	 * or served late (true); policy_config.late.
	 */
	bool late_serve;
	/*
	 * Plan ahead off (true): one block per command, a round trip through
	 * colocd between any two blocks (docs/design/serving-path.md); by
	 * default a query alone runs its policy's following blocks in one
	 * command, until an event (an arrival, a tenant's change) yields it.
	 */
	bool no_plan_ahead;
	/*
	 * A tenant's executors as the lanes of one process with one copy of
	 * the model (true: execproc_spawn_lanes, docs/design/lanes.md); by
	 * default a process each, each loading the model.
	 */
	bool executor_lanes;
	const char *cores; /* CPUs served, e.g. "0-3"; NULL: every CPU this process may use */
	int max_queue; /* per tenant; 0: SERVING_DEFAULT_QUEUE */
	int max_queue_total; /* 0: SERVING_DEFAULT_QUEUE_TOTAL */
	/*
	 * Per-owner quotas (serving_tenant_spec.owner); 0: none. Root's
	 * tenants (owner 0) are held to the global limits only. A tenant's
	 * queries count against its owner, whoever sent them.
	 */
	int max_tenants_per_uid; /* tenants admitted */
	int max_executors_per_uid; /* executors over its tenants, as admitted */
	int max_queued_per_uid; /* queries queued or running over its tenants */
	/*
	 * Bytes of queued inputs colocd holds for them (copies of the bytes
	 * that followed an infer's line, not yet in a slot); a query's input
	 * in a memfd held is the client's memory and is not counted, one
	 * read at once (serving_submit_fd) is.
	 */
	size_t max_input_bytes_per_uid;
	/*
	 * Bytes of submitted files (model, weights, external data: each
	 * sealed copy's size) its tenants hold for their life, in memory and
	 * in --state's directory; submits being copied are checked against it
	 * before their copy and again at admission. With max_submit_bytes, a
	 * member's quota is at most SERVING_SUBMIT_MEMBER_SHARE of its members'
	 * part.
	 */
	uint64_t max_submit_bytes_per_uid;
	/*
	 * The same over every uid's tenants, root's included: members' submits
	 * are refused past all but SERVING_SUBMIT_ROOT_SHARE of it, root's past
	 * it all, so root always has that share. 0: no bound.
	 */
	uint64_t max_submit_bytes;
	/*
	 * An executor fd, or a tenant's profile load's, appears (add) or is
	 * about to be closed; may be NULL. A negative errno on add fails the
	 * tenant's start (its admission) with it.
	 */
	int (*watch)(void *ctx, int fd, bool add);
	/*
	 * A tenant changed state; may be NULL. pids are its executors' tgids
	 * (nr_pids of them): the new ones on starting (for the attribution to
	 * add), the ones that ran on failed, the last ones on removed (none if
	 * none ran).
	 */
	void (*tenant_changed)(void *ctx, const char *name, enum serving_tenant_state state,
			       const pid_t *pids, int nr_pids);
	/*
	 * A core was given to a block (name: its tenant; query, layers
	 * [first, last)) or freed (name NULL); may be NULL. For what shows
	 * who holds a core (colocd's core_owner BPF map). Never called under a
	 * policy that shares cores (os): no block holds a core there.
	 */
	void (*core_changed)(void *ctx, int cpu, const char *name, uint64_t query, int first,
			     int last);
	/*
	 * The cores a tenant's blocks hold, those of the block about to start
	 * with those of its blocks in flight, told before the block starts
	 * (colocd narrows the tenant's cpuset to them); may be NULL. Told under
	 * every policy, the os policy's shared cores included.
	 */
	void (*tenant_cores)(void *ctx, const char *name, const int *cpus, int nr);
	/*
	 * The executors' uids and cgroups (daemon/sandbox.h), an entry per
	 * tenant while it is admitted; NULL: executors as execproc starts them
	 * by default (user 'coloc', no cgroup).
	 */
	struct sandbox *sandbox;
	/*
	 * On each of cpus[0..nr): the time tasks neither of tenant name (its
	 * executors) nor of its owner (unless root) ran, others[i], and the
	 * time its executors ran, own[i], as running totals (what they grew
	 * by between two calls is what ran in between): colocd's BPF sensor
	 * counts them. 0, or a negative errno where there are no such
	 * figures. NULL: none (serving without BPF); a late command's wait
	 * is then excused by the rule without them (serving_cpu_wait.c).
	 */
	int (*cpu_times)(void *ctx, const char *name, uid_t owner, const int *cpus, int nr,
			 uint64_t *others, uint64_t *own);
	/* A block finished (ran or failed); may be NULL. For colocd --block-log. */
	void (*block_done)(void *ctx, const struct serving_block_record *r);
	void *ctx;
};

int serving_create(const struct serving_config *cfg, struct serving **out, struct coloc_err *err);
/* Fails every live query (callbacks run), kills the executors, frees. NULL is fine. */
void serving_destroy(struct serving *s);

/* An ONNX external data file of a submitted model. */
struct serving_external {
	const char *location; /* as the model names it: a relative path, no ".." */
	int fd; /* a sealed memfd of its bytes */
};

struct serving_tenant_spec {
	const char *name; /* a tenant key (tenants_key.h): [UID:]NAME, NAME of [A-Za-z0-9_.-] */
	/*
	 * The model as the client handed it over: a memfd sealed by
	 * submit_file_seal() (the module refuses any other), and its name as
	 * submitted, for messages and its format (".onnx"). Nothing here is
	 * a path colocd opens. The module keeps its own duplicates of the fds.
	 */
	const char *model_name;
	int model_fd;
	int weights_fd; /* a sealed memfd; -1: weights from the model's seed */
	const struct serving_external *external; /* an ONNX model's external data files */
	int nr_external; /* at most COLOC_MAX_REQUEST_FDS */
	/*
	 * The profile key of the files above (profile_key.h: the model, the
	 * weights, the external data by location), when colocd computed it
	 * off the loop (submit_copy.h); else serving_admit computes it.
	 */
	bool model_keyed;
	struct profile_key model_key;
	uint64_t qos_ns;
	/*
	 * Executor processes, each running one block of another query at once;
	 * 0 counts as 1, above SERVING_MAX_EXECUTORS is refused.
	 */
	int executors;
	uid_t owner; /* who submitted it: serving_authorize() and the quotas go by it */
	/*
	 * The answer to an admission serving_admit did not refuse at once,
	 * called exactly once (from serving_handle_fd, _tick, _remove or
	 * _destroy): ret 0 when admitted (the tenant is then starting or
	 * ready), else -errno with err saying why, the tenant gone. May be
	 * NULL.
	 */
	void (*admitted)(void *ctx, const char *name, int ret, const struct coloc_err *err);
	void *admitted_ctx;
};

/*
 * The checks of serving_admit that read no file: the name (valid, not
 * taken), the executors (0 to SERVING_MAX_EXECUTORS), the QoS (above 0,
 * at most SERVING_MAX_QOS_NS), a free place among the tenants and the
 * owner's quotas (-EDQUOT). The model fields of spec are not looked at.
 * colocd runs it before it copies a client's files, so that a refused
 * submit costs nothing; serving_admit runs it again. 0, or -errno with err
 * filled.
 */
int serving_admit_check(const struct serving *s, const struct serving_tenant_spec *spec,
			struct coloc_err *err);
/*
 * A submit whose files are still being copied holds its place in its
 * owner's quotas (a tenant and its executors) from here until
 * serving_release: serving_admit_check, then the hold into *out; 0, or
 * -errno with err filled and nothing held. Release it before the
 * submit's serving_admit (which counts it otherwise).
 */
struct serving_hold;
/*
 * The bytes of submitted files owner may still bring: the least of its
 * quota (serving_config.max_submit_bytes_per_uid, at most
 * SERVING_SUBMIT_MEMBER_SHARE of the members' part; root: none) less what
 * its tenants hold and max_submit_bytes less what all tenants hold (less
 * root's share for a member); UINT64_MAX without either bound.
 * serving_admit refuses a tenant whose files go past it (-EDQUOT).
 */
uint64_t serving_submit_bytes_left(const struct serving *s, uid_t owner);
int serving_hold(struct serving *s, const struct serving_tenant_spec *spec,
		 struct serving_hold **out, struct coloc_err *err);
void serving_release(struct serving *s, struct serving_hold *h);
/*
 * Admits a tenant without parsing its model (docs/security-submit.md).
 * At once: serving_admit_check, the sealed files taken and
 * keyed (the profile cache key; unless spec->model_keyed), the executors
 * started; -errno with err
 * filled when any of that refuses (spec->admitted is then not called).
 * Otherwise 0, and admission goes on in the event loop: the first
 * executor imports the model in its sandbox and describes it (shm.h's
 * summary, checked by execproc); from the summary the profile is found (or
 * the message says which coloc-profile command makes it), the policy table
 * built, and a QoS below the model's solo latency on all served cores
 * refused (both numbers in the message). Once every executor has built
 * its kernels and got ready, each must report the kernel versions the
 * profile lists, by name and in order (else the profile's costs are
 * other kernels'; the message names the first layer that differs, both
 * names and the coloc-profile command to measure it again). Then
 * spec->admitted says 0 or why not: the importer's error ("NAME:LINE:
 * ..."), a summary or versions that failed a check, other versions than
 * the profile's, no description within SERVING_DESCRIBE_TIMEOUT_NS, or
 * not ready within SERVING_START_TIMEOUT_NS. A refused
 * tenant's executors are killed and its name is free again. While being
 * admitted the tenant is listed as starting and refuses queries.
 */
int serving_admit(struct serving *s, const struct serving_tenant_spec *spec, struct coloc_err *err);
/*
 * serving_admit, then the caller's own event loop until the admission is
 * answered (polls serving_fds, calls serving_handle_fd and serving_tick):
 * for tests and tools that drive the module alone, never for colocd. 0 or
 * the admission's -errno; -ETIMEDOUT after timeout_ms (the tenant removed).
 */
int serving_admit_wait(struct serving *s, const struct serving_tenant_spec *spec, int timeout_ms,
		       struct coloc_err *err);
/*
 * Stops accepting queries for name and drains the accepted ones; once none
 * is left the executor is stopped, its cores freed and the tenant gone
 * (tenant_changed says removed; serving_tenant_info then says -ENOENT). A
 * failed or starting tenant goes at once, its queries failed.
 */
int serving_remove(struct serving *s, const char *name, struct coloc_err *err);
/* A failed tenant starts a new executor; -EINVAL for another state. */
int serving_restart(struct serving *s, const char *name, struct coloc_err *err);
/*
 * Whether uid may act on tenant name (remove, restart, submit queries to
 * it, read its details): its owner and root may. 0; -ENOENT (no such
 * tenant); -EPERM with "tenant NAME belongs to another user", and nothing
 * more about it, in err. The caller asks right before it acts, in the
 * same turn of the event loop.
 */
int serving_authorize(const struct serving *s, const char *name, uid_t uid, struct coloc_err *err);
/*
 * How many tenants are called name by their owners (the name part of their
 * keys, tenants_key.h), the owners of the first max in owners: one pass
 * over the table, for root's bare names (daemon/control_names.c).
 */
int serving_tenants_named(const struct serving *s, const char *name, uid_t *owners, int max);

/*
 * Queues one query: len must be the model's input size (shm.h's layout).
 * -ENOENT (no such tenant), -EINVAL (size), -EAGAIN (a queue is full, its
 * owner's max_queued_per_uid included, or the tenant is draining or
 * failed: the reason in err, counted as rejected). On 0, *query_id (may be NULL) names it and done will be
 * called exactly once.
 */
int serving_submit(struct serving *s, const char *tenant, const void *input, size_t len,
		   serving_done_fn done, void *ctx, uint64_t *query_id, struct coloc_err *err);
/*
 * The same, taking the caller's malloc'd input instead of copying it: on 0,
 * *input is the query's (set to NULL), on an error still the caller's.
 */
int serving_submit_take(struct serving *s, const char *tenant, void **input, size_t len,
			serving_done_fn done, void *ctx, uint64_t *query_id, struct coloc_err *err);
/*
 * The same, the input the len bytes from offset on of a memfd that
 * input_memfd_check() passed: taken
 * on 0 (*input_fd set to -1), its bytes read straight into the query's
 * slot when it gets one; on an error still the caller's. A query holds its
 * memfd until then, the client's pages unchanged (protocol.h); past
 * SV_MAX_INPUT_FDS held in all, or SV_MAX_INPUT_FDS_PER_UID by the
 * tenant's owner's tenants, the bytes are read at once instead, only once
 * every refusal (its owner's input quota among them) has passed, and the
 * descriptor left to the caller.
 */
int serving_submit_fd(struct serving *s, const char *tenant, int *input_fd, size_t offset,
		      size_t len, serving_done_fn done, void *ctx, uint64_t *query_id,
		      struct coloc_err *err);

/*
 * Whether tenant's owner may have colocd hold `bytes` more of queued
 * inputs (serving_config.max_input_bytes_per_uid): 0, or -EAGAIN with
 * "owner uid U holds N MiB of queued inputs, limit M MiB" in err. Asked
 * before an infer's bytes are received, and again as its query is queued.
 * 0 for root's tenants and a tenant that does not exist (the submit says so).
 */
int serving_input_room(const struct serving *s, const char *tenant, size_t bytes,
		       struct coloc_err *err);

/* The fds to watch now (at most max stored); returns how many there are. */
int serving_fds(const struct serving *s, int *fds, int max);
/* One of them is readable: takes completions, notices deaths, runs the policy. */
void serving_handle_fd(struct serving *s, int fd);
/* Kills hung executors, fails the ones that never got ready, runs the policy. */
void serving_tick(struct serving *s);
/* How long the caller may wait before serving_tick, in ms (-1: no deadline pending). */
int serving_next_timeout_ms(const struct serving *s);

struct serving_tenant_info {
	char name[SERVING_NAME_LEN];
	enum serving_tenant_state state;
	uid_t owner;
	char reason[SERVING_REASON_LEN]; /* why failed; "" otherwise */
	char note[256]; /* admission note (a clamped profile); "" if none */
	pid_t pid; /* the first executor's tgid; 0 when none runs */
	int executors; /* as admitted */
	pid_t pids[SERVING_MAX_EXECUTORS]; /* every executor's tgid; 0 when none runs */
	/* queries moved to another, idle executor before their first block (their input copied) */
	uint64_t moved;
	/* queries whose input the executor read from the client's memfd itself (no copy by colocd) */
	uint64_t inputs_mapped;
	/* queries whose executor's doorbell rang as they came, before their round (shm.h's ready) */
	uint64_t early_rings;
	/* completions whose reported times colocd clamped to its own round trip */
	uint64_t clamped_times;
	/* commands that overran their bound and gave their cores back (serving_overrun.c) */
	uint64_t overruns;
	/* how its executors are kept apart (execproc_isolation, then its uid and cgroup); "" if none */
	char isolation[384];
	uint64_t qos_ns;
	/* profiled latency alone on all served cores, started cold (policy_costs_served_solo_ns) */
	uint64_t solo_ns;
	size_t in_bytes, out_bytes;
	int queued, in_flight;
	struct serving_stats_summary stats;
	char last_drop[SERVING_REASON_LEN], last_reject[SERVING_REASON_LEN],
		last_failure[SERVING_REASON_LEN];
};

int serving_tenant_info(const struct serving *s, const char *name,
			struct serving_tenant_info *info);
/* A tenant's model input size in bytes; 0 when there is no such tenant or it is not known yet. */
size_t serving_tenant_in_bytes(const struct serving *s, const char *name);
/* Names of the tenants, in admission order; returns the count (at most max stored). */
int serving_tenant_names(const struct serving *s, const char **names, int max);

struct serving_core_info {
	int cpu;
	bool busy;
	/*
	 * The interference level the policy sees on the core: recent blocks'
	 * latency over their profiled alone latency, aged towards 1.0 while
	 * none runs there, beyond its noise (policy/level_estimate.h, the
	 * estimator coloc-sim runs too); 0 before the first block.
	 */
	double slowdown;
	/*
	 * Under a policy that shares cores (os): nr_blocks blocks of as many
	 * tenants run on the core at once, the kernel sharing it; tenant and
	 * the fields below are then not set (no block holds the core).
	 */
	bool shared;
	int nr_blocks;
	const char *tenant; /* valid until the next call into the module */
	uint64_t query_id;
	int first_layer, last_layer;
	const uint8_t *versions; /* [last - first], valid as tenant */
};

/*
 * Rounds in which the policy failed or broke its contract
 * (policy_check_output), and the last reason ("" if none): such a round
 * decides nothing and the queries wait. Should stay 0; status shows it.
 */
uint64_t serving_policy_errors(const struct serving *s, const char **last);

/*
 * A core's signals measured by colocd's sensor (daemon/level_source.h):
 * the LLC and DRAM fields as live in sig, and, when sig is marked
 * POLICY_SIG_LEVEL_PMU, its level (policy_level_core_set), which the
 * estimate from blocks then leaves alone. 0 or -EINVAL for a CPU out of range.
 */
struct policy_signal;
int serving_set_core_signal(struct serving *s, int cpu, const struct policy_signal *sig);
/*
 * The pressure tenant `name` exerts, from colocd's per-tenant attribution:
 * the LLC and DRAM fields as live in sig (with a PMU). The coloc policy
 * grants other tenants' cores away from the heaviest. -ENOENT for a name
 * not served.
 */
int serving_set_tenant_signal(struct serving *s, const char *name, const struct policy_signal *sig);

/* Served cores in increasing CPU order; returns the count (at most max stored). */
int serving_cores(const struct serving *s, struct serving_core_info *cores, int max);

#endif /* COLOC_DAEMON_SERVING_H */
