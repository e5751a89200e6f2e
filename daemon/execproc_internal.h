/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the execproc*.c files (the start, the commands, what is taken back,
 * the end) share of one executor process: colocd's own record of it.
 * Nothing outside them includes it; the rest of colocd sees execproc.h.
 */
#ifndef COLOC_DAEMON_EXECPROC_INTERNAL_H
#define COLOC_DAEMON_EXECPROC_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>
#include "cgroup_leaf.h"
#include "exec_log.h"
#include "execproc.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/*
 * The executor can write the whole shared memory, so nothing colocd
 * computes an address or a length from is read back from it: the layout
 * lives in hdr, colocd's own copy, into which the executor's fields are
 * taken once (and checked) when it gets ready or fails. The command's seq
 * is colocd's own count too; a completion is copied out once, then checked.
 */
struct execproc {
	struct coloc_shm *shm;
	struct coloc_shm_header hdr;
	struct coloc_shm_header shm_hdr; /* the shared header as it was when taken ready */
	struct coloc_shm_done taken; /* the shared completion as colocd last took it */
	struct coloc_shm_summary *summary; /* the model as described, copied once; NULL before */
	struct coloc_shm_versions *versions; /* the versions built, copied at ready; NULL before */
	size_t shm_bytes;
	int shm_fd; /* colocd's descriptor of the memfd: what it reads the slots through */
	pid_t pid;
	int pidfd;
	int done_fd; /* the pipe's read end, O_NONBLOCK; the executor holds the write end */
	int input_sock; /* colocd's end of the input socket (shm.h's coloc_shm_input_msg) */
	struct exec_log log; /* its stdout and stderr, into colocd's log */
	__u32 seq; /* of the last command sent */
	unsigned int idle_rings; /* doorbell rings in a row that brought nothing */
	bool ready;
	bool outstanding; /* a command was submitted and has not completed */
	bool given_up; /* broke the protocol or hung up: SIGKILL sent, dead_msg says why */
	bool hung_up; /* its end of the doorbell is closed */
	bool closed_alive; /* closed by a process not exiting: killed for it */
	bool kill_sent; /* SIGKILL sent, not waited for */
	bool kill_failed; /* a kill failed: logged once */
	/*
	 * Its cgroup v2 leaf: the first lane's handle made it and removes it
	 * when it reaps the process; a later lane holds a copy of its
	 * cgroup.kill only (its dir "").
	 */
	struct cgroup_leaf leaf;
	bool dead; /* reaped; dead_err and dead_msg say why */
	bool exited_cleanly; /* exit status 0 (after an exit command) */
	bool own_pidns; /* pid 1 of a pid namespace of its own */
	/*
	 * A lane of a process whose first lane is another handle: it shares
	 * the pid, holds a pidfd of its own, and never reaps the process
	 * (the first lane's handle does).
	 */
	bool lane_sibling;
	char isolation[COLOC_ERR_MSG_MAX]; /* how it was isolated, or why not */
	int dead_err;
	char dead_msg[COLOC_ERR_MSG_MAX];
	struct execproc_block last; /* what was submitted last, for the death message */
	unsigned int plan_last[COLOC_SHM_MAX_PLAN_BLOCKS]; /* its blocks' ends, [plan_nr] */
	unsigned int plan_cores[COLOC_SHM_MAX_PLAN_BLOCKS]; /* each one's cores, [plan_nr] */
	unsigned int plan_nr;
	bool yield_asked; /* execproc_yield for the command outstanding */
	__u32 early_seq; /* the command seq execproc_ring_early last rang for */
	__u32 op; /* the last command's op */
	unsigned long long submit_ns;
	char tenant[COLOC_SHM_NAME_LEN];
};

/*
 * Gives the executor up for a breach of the protocol: SIGKILL sent, never
 * waited for (the pidfd says when it is gone), and from now on every call
 * answers -EPROTO with the reason, "tenant T: executor (pid P) <fmt>; killed".
 */
__attribute__((format(printf, 3, 4))) int
execproc_give_up(struct execproc *ep, struct coloc_err *err, const char *fmt, ...);
/* n rounded up to whole pages. */
size_t execproc_page_round(size_t n);
/*
 * At ready (execproc_slot.c): the memfd sealed so that no page of it can be
 * given back, and the slots' pages mapped in colocd where the executor
 * allocated them. 0, or -EPROTO with the executor given up.
 */
int execproc_map_slots(struct execproc *ep, struct coloc_err *err);
/*
 * A query's input memfd to the executor on its input socket, for the
 * command about to be rung (seq ep->seq + 1; shm.h's coloc_shm_input_msg).
 * Never waits: -EAGAIN where the socket is full (an executor that took
 * none of the last ones).
 */
int execproc_send_input(struct execproc *ep, int memfd, struct coloc_err *err);
/* 0 if a command may be sent now (ready, alive, none outstanding), else why (err may be NULL). */
int execproc_can_submit(const struct execproc *ep, struct coloc_err *err);
/* A command with nothing to run (NOP, EXIT), rung. */
void execproc_ring_bare(struct execproc *ep, __u32 op);
/* Reaps the executor if it has exited; returns true and records why if so. */
bool execproc_reap(struct execproc *ep);
/* Control characters (a forged log line, a terminal escape) become '?'. */
void execproc_printable(char *s);
/* While it loads (execproc_ready.c): its summary once described, then its ready header. */
int execproc_take_summary(struct execproc *ep, struct coloc_err *err);
int execproc_take_ready(struct execproc *ep, struct coloc_err *err);
/* After ready, the header changes in its state only (to FAILED, before the executor exits). */
int execproc_check_header(struct execproc *ep, struct coloc_err *err);
/*
 * 1 when the outstanding command has completed (res filled), 0 when it has
 * not yet, or -EPROTO for a completion colocd cannot take (execproc_done.c).
 */
int execproc_take_completion(struct execproc *ep, struct execproc_result *res,
			     struct coloc_err *err);

#endif /* COLOC_DAEMON_EXECPROC_INTERNAL_H */
