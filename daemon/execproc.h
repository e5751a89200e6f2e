/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's side of one tenant's executor process: start bin/coloc-executor
 * on a sealed shared-memory region (include/coloc/shm.h), hand it blocks,
 * learn when they complete or when the process dies. No oneDNN here: the
 * model is loaded in the executor process only.
 *
 * Everything is non-blocking except execproc_wait_ready/_done, _stop and
 * _kill, which the tests and tools use. An event loop instead polls three
 * fds per executor (the third, execproc_log_fd(), below):
 *   execproc_done_fd(): the read end of a pipe whose write end only the
 *                       executor holds (O_NONBLOCK, its own open file, so the
 *                       executor cannot make it blocking); readable when a
 *                       completion (or the end of start-up) is there, or
 *                       hung up when the executor closed its end: call
 *                       execproc_poll();
 *   execproc_pidfd():   readable when the process has exited: call
 *                       execproc_poll(), which reaps it and says why.
 * Nothing the executor writes is trusted (docs/security-executor.md): a
 * completion of a command never sent, a malformed one, a rewritten header,
 * a doorbell rung with nothing to report or closed: the executor is given
 * up on (SIGKILL sent, not waited for) and every later call says why. Times
 * it reports are bounded by colocd's own round trip (execproc_result).
 * The process is a child of the caller, reaped through its pidfd: a
 * SIGCHLD handler elsewhere must not reap it with waitpid(-1). It gets
 * SIGKILL when the thread that spawned it exits (PR_SET_PDEATHSIG), so
 * spawn from a thread that lives as long as the daemon (its main thread).
 */
#ifndef COLOC_EXECPROC_H
#define COLOC_EXECPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "coloc/shm.h"
#include "error.h"

struct execproc;

/* An ONNX external data file for the executor: its location in the model, a sealed memfd. */
struct execproc_file {
	const char *location;
	int fd;
};

/*
 * The default executor's path into buf: coloc-executor in the same folder
 * as this program (/proc/self/exe). 0, or -errno with err set.
 */
int execproc_default_executor(char *buf, size_t len, struct coloc_err *err);

struct execproc_opts {
	const char *executor; /* path of coloc-executor; NULL: next to /proc/self/exe */
	/*
	 * The model's bytes as a sealed memfd (the executor reads it, after
	 * dropping its privileges: colocd never names a path to it), and its
	 * name as submitted (messages; ".onnx": ONNX).
	 */
	int model_fd;
	const char *model_name;
	int weights_fd; /* a sealed memfd of a weights file; -1: weights from the model's seed */
	const struct execproc_file *external; /* an ONNX model's external data files */
	int nr_external; /* at most COLOC_MAX_REQUEST_FDS */
	const char *tenant; /* name, for messages and the executor's command line */
	const char *cores; /* CPUs the executor may ever use, e.g. "0-3"; NULL: all online */
	size_t slot_in_capacity; /* bytes per query input; 0: 16 MiB (untouched pages cost nothing) */
	size_t slot_out_capacity; /* bytes per query output; 0: 16 MiB */
	/*
	 * The sandbox (docs/security-sandbox.md). uid and gid: the tenant's
	 * own (daemon/sandbox.h); 0: the executor's default user, 'coloc'.
	 * cgroup_fds: cgroup.procs files (one per hierarchy) the child joins
	 * before exec; the caller keeps them. Limits per executor: address
	 * space (0: none), threads of its uid (0: CPUs + 16, times
	 * COLOC_MAX_EXECUTORS), open files (64), no core dumps.
	 */
	uid_t uid;
	gid_t gid;
	const int *cgroup_fds;
	int nr_cgroup_fds;
	/*
	 * A cgroup v2 folder (the tenant's kill folder, cgroup.h): the
	 * executor gets a leaf of its own under it (cgroup_leaf.h), joined
	 * before exec, through whose cgroup.kill every kill of it goes, and
	 * which is removed when it is reaped. NULL: it is killed by
	 * pidfd_send_signal, which needs CAP_KILL where it runs under
	 * another uid than colocd's.
	 */
	const char *cgroup_leaf_parent;
	unsigned long long max_address_space;
	/* start it in colocd's namespaces on purpose (as where the kernel refuses them) */
	bool no_namespaces;
	/*
	 * Where a layer is missing (namespaces refused or turned off, /proc not
	 * remounted, a Landlock or seccomp feature the kernel lacks), start it
	 * anyway, execproc_isolation() saying what is missing; otherwise
	 * execproc_spawn fails with the reason.
	 */
	bool allow_weak_isolation;
	/*
	 * Its tenant is root's: the OOM killer's choice after every member's
	 * executor (EXECPROC_OOM_SCORE_ROOT, not _MEMBER).
	 */
	bool roots_tenant;
};

/*
 * oom_score_adj of an executor as it starts, written by colocd's child
 * before exec, which the executor cannot lower (its sandbox). A member's
 * is the most; root's is below by half the range, so the kernel kills a
 * member's executor before root's of up to half its memory scope's pages
 * more; both above colocd's own (docs/security-owners.md, "Executors'
 * memory").
 */
#define EXECPROC_OOM_SCORE_MEMBER 1000
#define EXECPROC_OOM_SCORE_ROOT 500

/*
 * A block to run: layers [first, last) of the query in slot; or a plan of
 * the policy's blocks that cut [first, last), run one after the other on
 * the same cores, which execproc_yield() can stop at a boundary.
 */
struct execproc_block {
	unsigned int slot;
	unsigned int first, last;
	/*
	 * The blocks' ends, increasing, the last == last; nr_blocks 0 (or
	 * block_last NULL): one block [first, last).
	 */
	const unsigned int *block_last;
	/* [nr_blocks]: block i runs on the first block_cores[i] of cpus; NULL: all of them */
	const int *block_cores;
	int nr_blocks;
	unsigned int query_id; /* echoed in the completion */
	const int *versions; /* last - first entries; NULL: version 0 everywhere */
	const int *cpus; /* OS CPU ids; team thread i on the i-th smallest */
	int nr_cpus;
	/*
	 * The cores are shared with other executors' blocks (the os policy):
	 * each team thread may run on all of them, the kernel places it
	 * (COLOC_SHM_RUN_SHARED), instead of one thread pinned per core.
	 */
	bool shared;
	/*
	 * A query's first block (first 0) only: its input is in this memfd,
	 * not in the slot, and goes to the executor with the command
	 * (COLOC_SHM_RUN_INPUT_FD: one frozen as input_memfd_frozen says; the
	 * descriptor stays the caller's). NULL: in the slot.
	 */
	const int *input_memfd;
};

struct execproc_result {
	enum coloc_shm_status status;
	int error; /* 0 or a negative errno */
	/* last: where an OK plan stopped, always one of its block ends (checked) */
	unsigned int slot, first, last, query_id;
	/*
	 * OK: the blocks run (1 .. the plan's) and each one's time inside the
	 * executor, adding up to block_ns; where the executor's do not (or one
	 * is 0), block_ns shared evenly and clamped set.
	 */
	unsigned int nr_blocks;
	unsigned long long blocks_ns[COLOC_SHM_MAX_PLAN_BLOCKS];
	/*
	 * The executor's own times, clamped: block_ns to round_trip_ns (and
	 * to it when a block that ran reports 0), switch_ns to block_ns.
	 */
	unsigned long long block_ns, switch_ns;
	unsigned long long round_trip_ns; /* from submit to this poll noticing it */
	bool clamped; /* the executor reported a time outside those bounds */
	/*
	 * The round trip in three parts that add up to it: the doorbell until
	 * the executor took the command (dispatch), its work on it (run: input
	 * copy, re-pinning, the layers, output copy), its completion until
	 * this poll (notice). From the executor's clock stamps (shm.h), which
	 * are untrusted: each is clamped into the round trip.
	 */
	unsigned long long dispatch_ns, run_ns, notice_ns;
	char reason[COLOC_SHM_REASON_LEN];
};

/*
 * Creates the shared memory and starts the executor, as a child running
 * with a clean environment and only the shared memory, the doorbell and
 * the model's memfds as open files (fds 3, 4, then the model, the weights
 * and the external data files from 5 on). Returns at once; the executor
 * is READY after loading.
 */
int execproc_spawn(const struct execproc_opts *o, struct execproc **out, struct coloc_err *err);
/*
 * One executor process serving nr lanes (1 .. COLOC_MAX_EXECUTORS) over
 * one copy of the model (docs/design/lanes.md): a shared memory and a
 * doorbell per lane, lane i's handle into out[i], each used as an executor
 * of its own (commands, completions, execproc_stop_begin). They share the
 * process and its fate: when it dies every lane's pidfd turns readable and
 * every lane is dead; an exit command on any lane ends them all. Lane 0's
 * handle holds the log and reaps the process: free it last.
 */
int execproc_spawn_lanes(const struct execproc_opts *o, int nr, struct execproc **out,
			 struct coloc_err *err);

/*
 * The executor's tgid in colocd's pid namespace (the pid to attribute to
 * the tenant), also where it runs in a pid namespace of its own.
 */
pid_t execproc_pid(const struct execproc *ep);
/*
 * Whether it runs as pid 1 of a pid namespace of its own, where it can
 * name (signal, re-pin, renice) no other tenant's process. It also gets
 * ipc and network namespaces (no System V IPC, no network but a loopback
 * that is down), and a mount namespace with a /proc of its own, listing
 * itself only. When the kernel refuses the namespaces (EPERM in a nested
 * container; clone3 filtered to ENOSYS under systemd's RestrictNamespaces
 * is retried with clone) or the /proc mount fails, it is an error unless
 * allow_weak_isolation; then it runs in colocd's namespaces and
 * execproc_isolation() says what is missing, in words for colocd's log.
 * Either way it runs in a session of its own (setsid), stdin /dev/null.
 */
bool execproc_own_pidns(const struct execproc *ep);
const char *execproc_isolation(const struct execproc *ep);
int execproc_pidfd(const struct execproc *ep);
int execproc_done_fd(const struct execproc *ep);
/*
 * Its stdout and stderr: the read end of their pipe (-1 once closed), to
 * watch for POLLIN; execproc_drain_log logs the lines there as
 * "colocd: tenant NAME executor PID: LINE" and returns false at end of file,
 * when the caller stops watching it and calls execproc_close_log.
 * execproc_free logs what is left.
 */
int execproc_log_fd(const struct execproc *ep);
bool execproc_drain_log(struct execproc *ep);
void execproc_close_log(struct execproc *ep);
/*
 * colocd's copy of the header: the layout it chose, and the model as the
 * executor described it when it got ready (checked against the layout), or
 * why it failed. Its executor_pid is the host pid (execproc_pid()). Never a pointer into the shared memory, which the
 * executor can rewrite at any time.
 */
const struct coloc_shm_header *execproc_header(const struct execproc *ep);
/*
 * colocd's copy of the executor's summary of its model (shm.h), taken once
 * when header.described turned 1, while it was still loading, and checked
 * (daemon/shm_summary_check.h: a summary that fails a check gives the
 * executor up): NULL until then. An executor gets ready only after it has
 * described its model, and its header's sizes at ready must be the
 * summary's.
 */
const struct coloc_shm_summary *execproc_summary(const struct execproc *ep);
/*
 * colocd's copy of the kernel versions the executor built (shm.h), taken
 * once when it got ready and checked (shm_versions_check: a list that
 * fails gives the executor up): NULL until then.
 */
const struct coloc_shm_versions *execproc_versions(const struct execproc *ep);
/*
 * Where a slot's input goes and its output comes (hdr.in_bytes / out_bytes);
 * once ready, those pages are allocated by the executor and mapped on both
 * sides (colocd maps them only if the executor allocated all of them: it
 * never allocates them for the executor). That is 4 slots x (in + out) of
 * memory per executor from its start, about 2.4 MiB for ResNet-50.
 */
void *execproc_input(struct execproc *ep, unsigned int slot);
const void *execproc_output(const struct execproc *ep, unsigned int slot);
/*
 * colocd never faults a slot page in (it would be colocd's memory, in no
 * tenant's cap), so before it writes slot's input (execproc_input) it asks
 * whether the executor still holds every page of it: 0 if so; else the
 * executor is given up, "gave its query slots' pages back", -EPROTO.
 */
int execproc_input_allocated(struct execproc *ep, unsigned int slot, struct coloc_err *err);
/* Slot's output (hdr.out_bytes) into buf, read from the memfd: a hole reads as zeros. */
int execproc_read_output(const struct execproc *ep, unsigned int slot, void *buf,
			 struct coloc_err *err);

/* Whether a block's input may come in a memfd (execproc_block.input_memfd). */
bool execproc_takes_input_memfd(const struct execproc *ep);
/*
 * Writes the command and rings the doorbell. -EBUSY while a block is
 * outstanding or before the executor is ready; -EINVAL for what the layout
 * cannot carry (slot, CPU id or block length out of range, a version above
 * 255, a plan whose blocks do not follow each other to last or are more
 * than COLOC_SHM_MAX_PLAN_BLOCKS). Whether the block fits the model is the
 * executor's to say.
 */
int execproc_submit_block(struct execproc *ep, const struct execproc_block *b,
			  struct coloc_err *err);
/* A bare round trip with nothing to run (COLOC_SHM_OP_NOP). */
int execproc_submit_nop(struct execproc *ep, struct coloc_err *err);
/*
 * Asks the plan in flight to stop at its next block boundary (the yield
 * word, shm.h); its completion then says how far it went. true when asked
 * now, false when there is no plan of several blocks outstanding or it was
 * asked already.
 */
bool execproc_yield(struct execproc *ep);
/*
 * Rings the doorbell early for the next command (struct coloc_shm_ready,
 * shm.h): the team threads on cpus[0..nr) wake and spin, bounded, until it
 * lands. true when rung now; false when nr is 0, a command is outstanding,
 * the executor cannot take one, or it was rung already for that command.
 */
bool execproc_ring_early(struct execproc *ep, const int *cpus, int nr);

/*
 * Never blocks. Returns 1 with res filled when the outstanding command has
 * completed, 0 when nothing new happened (or the model was just described,
 * or start-up just finished: see execproc_summary, execproc_ready), or a negative errno when the executor has died or given
 * up (the reason, exit status or signal, and what it was running, in err;
 * the process is reaped then), or -EPROTO when it broke the protocol (what
 * it did in err; SIGKILL sent, and a later call, once the pidfd is
 * readable, reaps it). res may be NULL when nothing is outstanding.
 */
int execproc_poll(struct execproc *ep, struct execproc_result *res, struct coloc_err *err);
bool execproc_ready(const struct execproc *ep);
/*
 * Whether the executor has taken the outstanding command (it is running
 * it): a deadline for a hung block starts here, not at submit.
 */
bool execproc_started(const struct execproc *ep);

/* Blocks (poll(2) on both fds) until ready, or timeout_ms; -ETIMEDOUT. */
int execproc_wait_ready(struct execproc *ep, int timeout_ms, struct coloc_err *err);
/* Blocks until the outstanding command completes (1), or as execproc_poll. */
int execproc_wait_done(struct execproc *ep, struct execproc_result *res, int timeout_ms,
		       struct coloc_err *err);

/*
 * Starts stopping it without waiting: an idle, ready executor is asked to
 * exit (COLOC_SHM_OP_EXIT), any other gets SIGKILL. The pidfd turns
 * readable once it is gone; execproc_poll then reaps it (execproc_reaped).
 * A caller with a deadline calls execproc_signal_kill when it passes.
 */
void execproc_stop_begin(struct execproc *ep);
/*
 * SIGKILL, not waited for; 0 or a negative errno. Every kill of an
 * executor goes through here (give-ups, _kill, _stop, _stop_begin, a
 * failed start, and colocd's deadlines and shutdown): through its leaf's
 * cgroup.kill where it has one, else through its pidfd. A kill that fails
 * is logged on stderr once, naming what is missing (a process of another
 * uid, no cgroup v2 leaf, no CAP_KILL: -EPERM).
 */
int execproc_signal_kill(struct execproc *ep);
/* Its cgroup v2 leaf's folder ("" without one; gone once it is reaped). */
const char *execproc_cgroup_leaf(const struct execproc *ep);
/* Whether the process has been reaped (by execproc_poll, _kill or _stop). */
bool execproc_reaped(const struct execproc *ep);
/*
 * Asks the executor to exit (COLOC_SHM_OP_EXIT) and waits up to timeout_ms
 * for it to do so with status 0; 0 if it did. Otherwise (still loading,
 * busy, no answer, or a bad exit) it is killed and the reason returned.
 */
int execproc_stop(struct execproc *ep, int timeout_ms, struct coloc_err *err);
/*
 * SIGKILL through the pidfd and reap, blocking until the kernel has torn
 * the process down (tests, tools, shutdown); the handle stays valid for free.
 */
int execproc_kill(struct execproc *ep);
/* Kills the executor if it is alive, reaps it, unmaps, closes. NULL is fine. */
void execproc_free(struct execproc *ep);

#endif /* COLOC_EXECPROC_H */
