// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's side of one executor process (see execproc.h), once started
 * (execproc_spawn.c starts it): the futex doorbell towards it, the pipe
 * back, the commands and their completions, its ready header and model
 * summary, and the pidfd that says when it died and why. Everything the
 * executor writes is checked before use (docs/security-executor.md): a
 * breach of the protocol gives it up (killed, never waited for) with the
 * reason.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "coloc/protocol.h"
#include "execproc_internal.h"
#include "shm_summary_check.h"
#include "mono_clock.h"

/* Doorbell bytes one poll drains at most: a flood is left for the next call. */
#define EXECPROC_DRAIN_BYTES 4096
/* Rings in a row with nothing new to take before the executor is given up on. */
#define EXECPROC_MAX_IDLE_RINGS 64

pid_t execproc_pid(const struct execproc *ep)
{
	return ep->pid;
}

bool execproc_own_pidns(const struct execproc *ep)
{
	return ep->own_pidns;
}

const char *execproc_isolation(const struct execproc *ep)
{
	return ep->isolation;
}

int execproc_pidfd(const struct execproc *ep)
{
	return ep->pidfd;
}

int execproc_done_fd(const struct execproc *ep)
{
	return ep->done_fd;
}

int execproc_log_fd(const struct execproc *ep)
{
	return ep->log.fd;
}

bool execproc_drain_log(struct execproc *ep)
{
	return exec_log_drain(&ep->log, coloc_now_ns());
}

void execproc_close_log(struct execproc *ep)
{
	exec_log_close(&ep->log);
}

const struct coloc_shm_header *execproc_header(const struct execproc *ep)
{
	return &ep->hdr;
}

const struct coloc_shm_summary *execproc_summary(const struct execproc *ep)
{
	return ep->summary;
}

const struct coloc_shm_versions *execproc_versions(const struct execproc *ep)
{
	return ep->versions;
}

bool execproc_ready(const struct execproc *ep)
{
	return ep->ready;
}

bool execproc_started(const struct execproc *ep)
{
	return ep->outstanding &&
	       __atomic_load_n(&ep->shm->done.started_seq, __ATOMIC_ACQUIRE) == ep->seq;
}

bool execproc_reaped(const struct execproc *ep)
{
	return ep->dead;
}

/* The command's seq is colocd's own count: the executor can rewrite the shared one. */
static void ring(struct execproc *ep, __u32 op)
{
	struct coloc_shm_cmd *c = &ep->shm->cmd;

	ep->outstanding = true;
	ep->yield_asked = false;
	ep->op = op;
	ep->submit_ns = coloc_now_ns();
	ep->seq++;
	__atomic_store_n(&c->seq, ep->seq, __ATOMIC_RELEASE);
	/*
	 * shared (not FUTEX_PRIVATE): the waiters are another process, its
	 * command thread and its OpenMP team (exec_team_wait), all woken at once
	 */
	syscall(SYS_futex, &c->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int can_submit(const struct execproc *ep, struct coloc_err *err)
{
	if (ep->dead || ep->given_up)
		return coloc_err_set(err, ep->dead_err, "%s", ep->dead_msg);
	if (!ep->ready)
		return coloc_err_set(err, -EBUSY, "tenant %s: its executor is still loading",
				     ep->tenant);
	if (ep->outstanding)
		return coloc_err_set(err, -EBUSY,
				     "tenant %s: its executor is still running the previous block",
				     ep->tenant);
	return 0;
}

/* b's plan (or its one block) into ep->plan_last; -EINVAL if its blocks do not cut [first, last). */
static int take_plan(struct execproc *ep, const struct execproc_block *b, struct coloc_err *err)
{
	unsigned int prev = b->first;

	if (!b->nr_blocks || !b->block_last) {
		ep->plan_last[0] = b->last;
		ep->plan_cores[0] = (unsigned int)b->nr_cpus;
		ep->plan_nr = 1;
		return 0;
	}
	if (b->nr_blocks < 0 || b->nr_blocks > COLOC_SHM_MAX_PLAN_BLOCKS)
		return coloc_err_set(err, -EINVAL, "a plan of %d blocks (1..%d)", b->nr_blocks,
				     COLOC_SHM_MAX_PLAN_BLOCKS);
	for (int i = 0; i < b->nr_blocks; i++) {
		if (b->block_last[i] <= prev || b->block_last[i] > b->last ||
		    (i == b->nr_blocks - 1 && b->block_last[i] != b->last))
			return coloc_err_set(err, -EINVAL,
					     "block %d of the plan ends at layer %u: its blocks "
					     "must follow each other from %u to %u",
					     i, b->block_last[i], b->first, b->last);
		ep->plan_last[i] = prev = b->block_last[i];
		ep->plan_cores[i] = b->block_cores ? (unsigned int)b->block_cores[i] :
						     (unsigned int)b->nr_cpus;
		if (ep->plan_cores[i] < 1 || ep->plan_cores[i] > (unsigned int)b->nr_cpus)
			return coloc_err_set(err, -EINVAL,
					     "block %d of the plan wants %u of its %d cores", i,
					     ep->plan_cores[i], b->nr_cpus);
	}
	ep->plan_nr = (unsigned int)b->nr_blocks;
	return 0;
}

int execproc_submit_block(struct execproc *ep, const struct execproc_block *b,
			  struct coloc_err *err)
{
	struct coloc_shm_cmd *c = &ep->shm->cmd;
	int ret = can_submit(ep, err);

	if (ret)
		return ret;
	if (b->slot >= COLOC_SHM_NR_SLOTS)
		return coloc_err_set(err, -EINVAL, "query slot %u out of range (0..%d)", b->slot,
				     COLOC_SHM_NR_SLOTS - 1);
	if (b->last > b->first && b->last - b->first > COLOC_SHM_MAX_BLOCK_LAYERS)
		return coloc_err_set(err, -EINVAL,
				     "a block of %u layers is longer than one command carries (%d)",
				     b->last - b->first, COLOC_SHM_MAX_BLOCK_LAYERS);
	if (b->nr_cpus < 0 || (b->nr_cpus && !b->cpus))
		return coloc_err_set(err, -EINVAL, "bad core list");
	ret = take_plan(ep, b, err);
	if (ret)
		return ret;
	memset(c->cpus, 0, sizeof(c->cpus));
	for (int i = 0; i < b->nr_cpus; i++) {
		if (b->cpus[i] < 0 || b->cpus[i] >= COLOC_MAX_CPUS)
			return coloc_err_set(err, -EINVAL, "cpu %d out of range (0..%d)",
					     b->cpus[i], COLOC_MAX_CPUS - 1);
		c->cpus[b->cpus[i] / 64] |= 1ull << (b->cpus[i] % 64);
	}
	for (unsigned int i = 0; b->last > b->first && i < b->last - b->first; i++) {
		int v = b->versions ? b->versions[i] : 0;

		if (v < 0 || v > 255)
			return coloc_err_set(err, -EINVAL, "version %d of layer %u out of range", v,
					     b->first + i);
		c->versions[i] = (__u8)v;
	}
	c->op = COLOC_SHM_OP_RUN;
	c->slot = b->slot;
	c->first = b->first;
	c->last = b->last;
	c->query_id = b->query_id;
	c->flags = b->shared ? COLOC_SHM_RUN_SHARED : 0;
	if (b->input_memfd) {
		if (b->first || ep->input_sock < 0)
			return coloc_err_set(err, -EINVAL,
					     "an input memfd goes with a query's first block only");
		ret = execproc_send_input(ep, *b->input_memfd, err);
		if (ret)
			return ret;
		c->flags |= COLOC_SHM_RUN_INPUT_FD;
	}
	c->nr_blocks = ep->plan_nr;
	memcpy(c->block_last, ep->plan_last, ep->plan_nr * sizeof(*c->block_last));
	memcpy(c->block_cores, ep->plan_cores, ep->plan_nr * sizeof(*c->block_cores));
	ep->last = *b;
	ep->last.block_last = NULL; /* the caller's: ours is plan_last */
	ring(ep, COLOC_SHM_OP_RUN);
	return 0;
}

/* A command with nothing to run (NOP, EXIT). */
static void ring_bare(struct execproc *ep, __u32 op)
{
	ep->shm->cmd.op = op;
	ep->last = (struct execproc_block){ 0 };
	ep->plan_nr = 0;
	ring(ep, op);
}

int execproc_submit_nop(struct execproc *ep, struct coloc_err *err)
{
	int ret = can_submit(ep, err);

	if (ret)
		return ret;
	ring_bare(ep, COLOC_SHM_OP_NOP);
	return 0;
}

bool execproc_yield(struct execproc *ep)
{
	if (!ep->outstanding || ep->op != COLOC_SHM_OP_RUN || ep->plan_nr < 2 || ep->yield_asked)
		return false;
	ep->yield_asked = true;
	/* no wake: the executor is running, and reads it at its next boundary */
	__atomic_store_n(&ep->shm->yield.seq, ep->seq, __ATOMIC_RELEASE);
	return true;
}

const char *execproc_cgroup_leaf(const struct execproc *ep)
{
	return ep->leaf.dir;
}

/* Why a kill failed, naming what is missing, into colocd's log once. */
static void log_kill_failure(struct execproc *ep, int ret)
{
	if (ep->kill_failed)
		return;
	ep->kill_failed = true;
	if (ep->leaf.kill_fd >= 0)
		fprintf(stderr,
			"colocd: tenant %s: cannot kill its executor (pid %d) through its cgroup "
			"v2 leaf's cgroup.kill: %s\n",
			ep->tenant, ep->pid, strerror(-ret));
	else
		fprintf(stderr,
			"colocd: tenant %s: cannot kill its executor (pid %d): %s%s\n", ep->tenant,
			ep->pid, strerror(-ret),
			ret == -EPERM ? " (it runs under another uid, colocd has no CAP_KILL and "
					"the executor no cgroup v2 leaf to kill it through "
					"cgroup.kill: docs/security-sandbox.md)" :
					"");
}

int execproc_signal_kill(struct execproc *ep)
{
	int ret = 0;

	if (ep->dead || ep->kill_sent)
		return 0;
	if (ep->leaf.kill_fd >= 0) {
		ret = cgroup_leaf_kill(&ep->leaf);
		if (ret == -ENODEV) /* the leaf went with the process, reaped by its first lane */
			ret = 0;
	} else if (ep->pidfd < 0) {
		return 0;
	} else if (syscall(SYS_pidfd_send_signal, ep->pidfd, SIGKILL, NULL, 0) && errno != ESRCH) {
		ret = -errno;
	}
	if (ret) {
		log_kill_failure(ep, ret);
		return ret;
	}
	ep->kill_sent = true;
	return 0;
}

/* Control characters (a forged log line, a terminal escape) become '?'. */
static void printable(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int execproc_give_up(struct execproc *ep, struct coloc_err *err, const char *fmt, ...)
{
	char what[COLOC_ERR_MSG_MAX / 2];
	va_list ap;

	if (!ep->given_up) {
		va_start(ap, fmt);
		vsnprintf(what, sizeof(what), fmt, ap);
		va_end(ap);
		ep->given_up = true;
		ep->dead_err = -EPROTO;
		snprintf(ep->dead_msg, sizeof(ep->dead_msg),
			 "tenant %s: executor (pid %d) %s; killed", ep->tenant, ep->pid, what);
		execproc_signal_kill(ep);
	}
	return coloc_err_set(err, ep->dead_err, "%s", ep->dead_msg);
}

/* A later lane whose process its first lane's handle has reaped already: dead, status unknown. */
static bool reaped_by_first_lane(struct execproc *ep)
{
	ep->dead = true;
	if (ep->given_up)
		return true;
	ep->dead_err = -EPIPE;
	snprintf(ep->dead_msg, sizeof(ep->dead_msg),
		 "tenant %s: executor (pid %d) ended, its first lane's handle reaped it", ep->tenant,
		 ep->pid);
	return true;
}

/* Reaps the executor if it has exited; returns true and records why if so. */
static bool reap(struct execproc *ep)
{
	struct coloc_shm_header *h = &ep->hdr;
	char doing[160] = "while idle";
	siginfo_t si = { 0 };
	int n;

	if (ep->dead)
		return true;
	/* a later lane of the process only looks: its first lane's handle reaps */
	if (waitid((idtype_t)P_PIDFD, (id_t)ep->pidfd, &si,
		   WEXITED | WNOHANG | (ep->lane_sibling ? WNOWAIT : 0))) {
		if (!ep->lane_sibling || errno != ECHILD)
			return false;
		return reaped_by_first_lane(ep);
	}
	if (!si.si_pid)
		return false;
	ep->dead = true;
	ep->exited_cleanly = si.si_code == CLD_EXITED && !si.si_status;
	/* reaped: the leaf is empty (a process left in it keeps it for its tenant's sweep) */
	cgroup_leaf_remove(&ep->leaf);
	/* the breach it was given up for says more than the SIGKILL that followed */
	if (ep->given_up)
		return true;
	ep->dead_err = -EPIPE;
	if (!ep->ready)
		snprintf(doing, sizeof(doing), "while loading its model");
	else if (ep->outstanding && ep->op == COLOC_SHM_OP_RUN)
		snprintf(doing, sizeof(doing), "while running layers [%u, %u) of query slot %u",
			 ep->last.first, ep->last.last, ep->last.slot);
	if (ep->closed_alive)
		snprintf(doing, sizeof(doing), "after it closed its end of the doorbell");
	n = snprintf(ep->dead_msg, sizeof(ep->dead_msg), "tenant %s: executor (pid %d) ",
		     ep->tenant, ep->pid);
	if (si.si_code == CLD_EXITED)
		n += snprintf(ep->dead_msg + n, sizeof(ep->dead_msg) - (size_t)n,
			      "exited with status %d %s", si.si_status, doing);
	else
		n += snprintf(ep->dead_msg + n, sizeof(ep->dead_msg) - (size_t)n,
			      "was killed by signal %d (%s) %s", si.si_status,
			      strsignal(si.si_status), doing);
	if (__atomic_load_n(&ep->shm->hdr.state, __ATOMIC_ACQUIRE) == COLOC_SHM_FAILED) {
		h->state = COLOC_SHM_FAILED;
		h->error = ep->shm->hdr.error;
		memcpy(h->reason, ep->shm->hdr.reason, sizeof(h->reason));
		h->reason[sizeof(h->reason) - 1] = '\0';
		printable(h->reason);
		snprintf(ep->dead_msg + n, sizeof(ep->dead_msg) - (size_t)n, ": %s", h->reason);
	}
	return true;
}

/*
 * The executor's summary of its model, copied once when header.described
 * turns 1 and checked (shm_summary_check.h): the one description of the
 * model colocd takes.
 */
static int take_summary(struct execproc *ep, struct coloc_err *err)
{
	char why[COLOC_ERR_MSG_MAX / 2];

	ep->summary = malloc(sizeof(*ep->summary));
	if (!ep->summary)
		return execproc_give_up(ep, err,
					"described its model; colocd is out of memory for it");
	memcpy(ep->summary, &ep->shm->summary, sizeof(*ep->summary));
	if (!shm_summary_check(ep->summary, ep->hdr.slot_in_capacity, ep->hdr.slot_out_capacity,
			       why, sizeof(why)))
		return execproc_give_up(ep, err, "%s", why);
	return 0;
}

/* At ready, the header's description must be the summary's. */
static int check_ready_summary(struct execproc *ep, struct coloc_err *err)
{
	const struct coloc_shm_header *h = &ep->hdr;
	const struct coloc_shm_summary *s = ep->summary;

	if (!s)
		return execproc_give_up(ep, err, "got ready without describing its model first");
	if (h->nr_layers != s->nr_layers || h->nr_inputs != s->nr_inputs ||
	    h->nr_outputs != s->nr_outputs || h->in_bytes != s->in_bytes ||
	    h->out_bytes != s->out_bytes)
		return execproc_give_up(ep, err, "got ready with another model than it described");
	return 0;
}

/*
 * The kernel versions the executor built, copied once at ready and checked
 * against the summary's layers (shm_summary_check.h): what colocd compares
 * with the profile it admits the tenant by.
 */
static int take_versions(struct execproc *ep, struct coloc_err *err)
{
	char why[COLOC_ERR_MSG_MAX / 2];

	ep->versions = malloc(sizeof(*ep->versions));
	if (!ep->versions)
		return execproc_give_up(
			ep, err, "reported its kernel versions; colocd is out of memory for them");
	memcpy(ep->versions, &ep->shm->versions, sizeof(*ep->versions));
	if (!shm_versions_check(ep->versions, ep->summary->nr_layers, why, sizeof(why)))
		return execproc_give_up(ep, err, "%s", why);
	return 0;
}

/*
 * Takes the executor's description of its model, once, if it fits the
 * layout; the layout colocd wrote must still be there. Then the slots'
 * input and output pages are allocated, so that no query's copy faults.
 */
static int take_ready(struct execproc *ep, struct coloc_err *err)
{
	struct coloc_shm_header *h = &ep->hdr, sh;

	memcpy(&sh, &ep->shm->hdr, sizeof(sh));
	/* its getpid(): 1 in its own pid namespace */
	if (sh.executor_pid != (ep->own_pidns ? 1 : ep->pid) || sh.in_bytes > h->slot_in_capacity ||
	    sh.out_bytes > h->slot_out_capacity || !sh.nr_layers || !sh.nr_inputs ||
	    !sh.nr_outputs || sh.nr_inputs > sh.nr_layers || sh.nr_outputs > sh.nr_layers)
		return execproc_give_up(
			ep, err,
			"described its model wrongly (pid %d, %u layers, %u inputs, %u "
			"outputs, %llu bytes in, %llu out)",
			sh.executor_pid, sh.nr_layers, sh.nr_inputs, sh.nr_outputs,
			(unsigned long long)sh.in_bytes, (unsigned long long)sh.out_bytes);
	if (memcmp(&sh, h, offsetof(struct coloc_shm_header, executor_pid)))
		return execproc_give_up(ep, err, "rewrote the layout colocd wrote into the header");
	h->executor_pid = ep->pid;
	h->in_bytes = sh.in_bytes;
	h->out_bytes = sh.out_bytes;
	h->nr_layers = sh.nr_layers;
	h->nr_inputs = sh.nr_inputs;
	h->nr_outputs = sh.nr_outputs;
	h->state = COLOC_SHM_READY;
	ep->shm_hdr = sh;
	if (check_ready_summary(ep, err) || take_versions(ep, err))
		return -EPROTO;
	if (execproc_map_slots(ep, err))
		return -EPROTO;
	ep->ready = true;
	return 0;
}

/* After ready, the header changes in its state only (to FAILED, before the executor exits). */
static int check_header(struct execproc *ep, struct coloc_err *err)
{
	const size_t model_at = offsetof(struct coloc_shm_header, nr_layers);
	const size_t model_end = offsetof(struct coloc_shm_header, error);
	struct coloc_shm_header sh;

	memcpy(&sh, &ep->shm->hdr, sizeof(sh));
	if (memcmp(&sh, &ep->shm_hdr, offsetof(struct coloc_shm_header, state)) ||
	    memcmp((char *)&sh + model_at, (char *)&ep->shm_hdr + model_at, model_end - model_at))
		return execproc_give_up(ep, err,
					"rewrote the shared memory's header after it got ready");
	if (sh.state != COLOC_SHM_READY && sh.state != COLOC_SHM_FAILED)
		return execproc_give_up(ep, err, "set the header's state to %u after it got ready",
					sh.state);
	return 0;
}

/*
 * Whether the process has begun to exit (PF_EXITING in /proc/PID/stat's
 * flags, after the command name, which may hold anything): its files close
 * before it can be reaped. Gone or unreadable counts as exiting.
 */
static bool exiting(pid_t pid)
{
	char path[64], buf[512], *p;
	unsigned int flags;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %u", &flags) != 1)
		return true;
	return flags & 0x4; /* PF_EXITING */
}

/*
 * Empties colocd's end of the doorbell, reading only what poll(2) says is
 * there and at most EXECPROC_DRAIN_BYTES; true if it rang. An end of file
 * means the executor closed its end.
 */
static bool drain_doorbell(struct execproc *ep)
{
	struct pollfd p = { .fd = ep->done_fd, .events = POLLIN };
	size_t total = 0;
	char buf[512];
	bool rang = false;

	if (ep->hung_up || poll(&p, 1, 0) != 1)
		return false;
	while (total < EXECPROC_DRAIN_BYTES) {
		ssize_t n = read(ep->done_fd, buf, sizeof(buf));

		if (n <= 0) {
			ep->hung_up = !n;
			break;
		}
		rang = true;
		total += (size_t)n;
	}
	return rang;
}

/*
 * Where a completion of the RUN outstanding must say it stopped: the end
 * of its nr_blocks-th block when OK (UINT_MAX, which no last equals, for
 * a count the plan does not have), the command's last otherwise.
 */
static unsigned int run_last(const struct execproc *ep, const struct coloc_shm_done *d)
{
	if (d->status != COLOC_SHM_DONE_OK)
		return d->nr_blocks ? UINT_MAX : ep->last.last;
	if (d->nr_blocks < 1 || d->nr_blocks > ep->plan_nr)
		return UINT_MAX;
	return ep->plan_last[d->nr_blocks - 1];
}

/* A completion that fits the command it answers; false with why filled if not. */
static bool completion_valid(const struct execproc *ep, const struct coloc_shm_done *d, char *why,
			     size_t len)
{
	const struct execproc_block *b = &ep->last;

	if (d->status > COLOC_SHM_DONE_FAILED)
		snprintf(why, len, "completed command %u with status %u, which is none", d->seq,
			 d->status);
	else if (d->error > 0 || d->error < -4095 || (d->status == COLOC_SHM_DONE_OK && d->error))
		snprintf(why, len, "completed command %u with status %u and error %d", d->seq,
			 d->status, d->error);
	else if (!memchr(d->reason, '\0', sizeof(d->reason)))
		snprintf(why, len,
			 "left the reason of completion %u without its end (no NUL in %d "
			 "bytes)",
			 d->seq, COLOC_SHM_REASON_LEN);
	else if (ep->op == COLOC_SHM_OP_RUN && (d->slot != b->slot || d->first != b->first ||
						d->query_id != b->query_id))
		snprintf(why, len,
			 "completed slot %u, layers from %u, query %u; the command was slot %u, "
			 "layers [%u, %u), query %u",
			 d->slot, d->first, d->query_id, b->slot, b->first, b->last, b->query_id);
	else if (ep->op == COLOC_SHM_OP_RUN && d->last != run_last(ep, d))
		snprintf(why, len,
			 "completed layers [%u, %u) in %u blocks (status %u), not where its plan "
			 "of %u blocks [%u, %u) can end",
			 d->first, d->last, d->nr_blocks, d->status, ep->plan_nr, b->first,
			 b->last);
	else
		return true;
	return false;
}

/*
 * The executor's times, bounded by colocd's own round trip (submit to
 * completion seen), which the block ran inside of: an honest report is
 * never changed.
 */
static unsigned long long clamp_ns(unsigned long long t, unsigned long long lo,
				   unsigned long long hi)
{
	return t < lo ? lo : t > hi ? hi : t;
}

/* The executor's stamps, whatever they say, cut [submit, seen] in three ordered parts. */
static void split_round_trip(struct execproc_result *res, unsigned long long submit,
			     unsigned long long seen, unsigned long long started,
			     unsigned long long ended)
{
	started = clamp_ns(started, submit, seen);
	ended = clamp_ns(ended, started, seen);
	res->dispatch_ns = started - submit;
	res->run_ns = ended - started;
	res->notice_ns = seen - ended;
}

/*
 * Each block's time: the executor's where they are all non-zero and add up
 * to block_ns as taken, else block_ns shared evenly (clamped).
 */
static void fill_blocks(const struct execproc *ep, const struct coloc_shm_done *d,
			struct execproc_result *res)
{
	unsigned long long sum = 0;
	bool honest = true;

	res->nr_blocks = ep->op == COLOC_SHM_OP_RUN && d->status == COLOC_SHM_DONE_OK ?
				 d->nr_blocks :
				 0;
	for (unsigned int i = 0; i < res->nr_blocks; i++) {
		res->blocks_ns[i] = d->blocks_ns[i];
		honest &= d->blocks_ns[i] > 0 && d->blocks_ns[i] <= res->block_ns - sum;
		sum += honest ? d->blocks_ns[i] : 0;
	}
	if (honest && sum == res->block_ns)
		return;
	for (unsigned int i = 0; i < res->nr_blocks; i++)
		res->blocks_ns[i] = res->block_ns / res->nr_blocks +
				    (i < res->block_ns % res->nr_blocks);
	res->clamped |= res->nr_blocks > 0;
}

static void fill_result(struct execproc *ep, const struct coloc_shm_done *d,
			struct execproc_result *res)
{
	unsigned long long seen = coloc_now_ns(), rtt = seen - ep->submit_ns;

	res->round_trip_ns = rtt;
	split_round_trip(res, ep->submit_ns, seen, d->started_ns, d->ended_ns);
	res->status = d->status;
	res->error = d->error;
	res->slot = d->slot;
	res->first = d->first;
	res->last = d->last;
	res->query_id = d->query_id;
	res->block_ns = d->block_ns;
	res->switch_ns = d->switch_ns;
	res->clamped = false;
	if (res->block_ns > rtt || (d->status == COLOC_SHM_DONE_OK && !res->block_ns)) {
		res->block_ns = rtt;
		res->clamped = true;
	}
	if (res->switch_ns > res->block_ns) {
		res->switch_ns = res->block_ns;
		res->clamped = true;
	}
	fill_blocks(ep, d, res);
	snprintf(res->reason, sizeof(res->reason), "%s", d->reason);
	printable(res->reason);
}

/*
 * 1 when the outstanding command has completed (res filled), 0 when it has
 * not yet, or -EPROTO for a completion colocd cannot take: of a command
 * never sent, malformed, or rewritten after colocd took it.
 */
static int take_completion(struct execproc *ep, struct execproc_result *res, struct coloc_err *err)
{
	struct coloc_shm_done *sd = &ep->shm->done, d;
	__u32 seq = __atomic_load_n(&sd->seq, __ATOMIC_ACQUIRE);
	__u32 started = __atomic_load_n(&sd->started_seq, __ATOMIC_ACQUIRE);
	char why[COLOC_ERR_MSG_MAX / 4];

	if (!ep->outstanding) {
		if (seq != ep->seq || started != ep->seq)
			return execproc_give_up(ep, err,
						"wrote completion %u (started %u) with no command "
						"outstanding (the last sent is %u)",
						seq, started, ep->seq);
		memcpy(&d, sd, sizeof(d));
		if (memcmp(&d, &ep->taken, sizeof(d)))
			return execproc_give_up(ep, err,
						"rewrote its completion of command %u after it "
						"was taken",
						ep->seq);
		return 0;
	}
	if (started != ep->seq && started != ep->seq - 1)
		return execproc_give_up(ep, err,
					"started command %u, never sent (the last sent is %u)",
					started, ep->seq);
	if (seq == ep->seq - 1)
		return 0;
	if (seq != ep->seq)
		return execproc_give_up(ep, err,
					"completed command %u, never sent (the last sent is %u)",
					seq, ep->seq);
	memcpy(&d, sd, sizeof(d));
	d.seq = seq;
	if (!completion_valid(ep, &d, why, sizeof(why)))
		return execproc_give_up(ep, err, "%s", why);
	/* the snapshot is of the shared bytes, seq included, as the idle check reads them */
	memcpy(&ep->taken, &d, sizeof(d));
	ep->outstanding = false;
	if (res)
		fill_result(ep, &d, res);
	return 1;
}

int execproc_poll(struct execproc *ep, struct execproc_result *res, struct coloc_err *err)
{
	bool rang;
	int ret;

	if (ep->given_up) {
		reap(ep);
		return coloc_err_set(err, ep->dead_err, "%s", ep->dead_msg);
	}
	rang = drain_doorbell(ep);
	/* an exit closes it too: the one that closed it on purpose and lives on is killed */
	if (ep->hung_up && !ep->closed_alive && !reap(ep) && !exiting(ep->pid)) {
		ep->closed_alive = true;
		execproc_signal_kill(ep);
	}
	if (!ep->ready && !ep->dead) {
		__u32 state = __atomic_load_n(&ep->shm->hdr.state, __ATOMIC_ACQUIRE);

		if (!ep->summary && __atomic_load_n(&ep->shm->hdr.described, __ATOMIC_ACQUIRE)) {
			ep->idle_rings = 0;
			if ((ret = take_summary(ep, err)))
				return ret;
		}

		if (state == COLOC_SHM_READY) {
			ep->idle_rings = 0;
			return take_ready(ep, err);
		}
		if (state != COLOC_SHM_STARTING && state != COLOC_SHM_FAILED)
			return execproc_give_up(
				ep, err, "set the header's state to %u while loading", state);
	}
	if (ep->ready && (ret = check_header(ep, err)))
		return ret;
	/* a completion written before the process died is still delivered first */
	ret = take_completion(ep, res, err);
	if (ret) {
		ep->idle_rings = 0;
		return ret;
	}
	if (reap(ep))
		return coloc_err_set(err, ep->dead_err, "%s", ep->dead_msg);
	if (rang && ++ep->idle_rings > EXECPROC_MAX_IDLE_RINGS)
		return execproc_give_up(
			ep, err, "rang its doorbell %d times in a row with nothing to report",
			ep->idle_rings);
	return 0;
}

static int wait_for(struct execproc *ep, struct execproc_result *res, int timeout_ms,
		    bool for_ready, struct coloc_err *err)
{
	unsigned long long deadline = coloc_now_ns() + (unsigned long long)timeout_ms * 1000000ull;

	for (;;) {
		struct pollfd p[2] = { { .fd = ep->hung_up ? -1 : ep->done_fd, .events = POLLIN },
				       { .fd = ep->pidfd, .events = POLLIN } };
		unsigned long long now;
		int ret = execproc_poll(ep, res, err);

		/* a blocking caller may wait for the one it gave up on to be gone */
		if (ret < 0 && ep->given_up)
			execproc_kill(ep);
		if (ret || (for_ready && ep->ready))
			return ret;
		now = coloc_now_ns();
		if (now >= deadline)
			return coloc_err_set(
				err, -ETIMEDOUT, "tenant %s: its executor did not %s within %d ms",
				ep->tenant, for_ready ? "get ready" : "complete", timeout_ms);
		if (poll(p, 2, (int)((deadline - now + 999999) / 1000000)) < 0 && errno != EINTR)
			return coloc_err_set(err, -errno, "poll: %s", strerror(errno));
	}
}

int execproc_wait_ready(struct execproc *ep, int timeout_ms, struct coloc_err *err)
{
	return wait_for(ep, NULL, timeout_ms, true, err);
}

int execproc_wait_done(struct execproc *ep, struct execproc_result *res, int timeout_ms,
		       struct coloc_err *err)
{
	if (!ep->outstanding && !ep->dead && !ep->given_up)
		return coloc_err_set(err, -EINVAL, "tenant %s: no block is outstanding",
				     ep->tenant);
	return wait_for(ep, res, timeout_ms, false, err);
}

int execproc_kill(struct execproc *ep)
{
	siginfo_t si;
	int ret;

	if (ep->dead || ep->pidfd < 0)
		return 0;
	ep->kill_sent = false;
	ret = execproc_signal_kill(ep);
	if (ret)
		return ret;
	/* blocks only until the kernel has torn the process down (or another lane reaped it) */
	if (waitid((idtype_t)P_PIDFD, (id_t)ep->pidfd, &si, WEXITED | WNOWAIT) &&
	    !(ep->lane_sibling && errno == ECHILD))
		return -errno;
	reap(ep);
	return 0;
}

void execproc_stop_begin(struct execproc *ep)
{
	if (ep->dead)
		return;
	if (!can_submit(ep, NULL))
		ring_bare(ep, COLOC_SHM_OP_EXIT);
	else
		execproc_signal_kill(ep);
}

int execproc_stop(struct execproc *ep, int timeout_ms, struct coloc_err *err)
{
	struct pollfd p = { .fd = ep->pidfd, .events = POLLIN };
	int ret = can_submit(ep, err);

	if (!ret) {
		ring_bare(ep, COLOC_SHM_OP_EXIT);
		ret = wait_for(ep, NULL, timeout_ms, false, err);
	}
	/* acknowledged: it is on its way out */
	if (ret == 1 && poll(&p, 1, timeout_ms) == 1 && reap(ep) && ep->exited_cleanly)
		return 0;
	if (!ep->dead)
		execproc_kill(ep);
	if (ret >= 0)
		ret = coloc_err_set(err, ep->exited_cleanly ? -ETIMEDOUT : ep->dead_err,
				    "tenant %s: its executor did not exit cleanly when asked (%s); "
				    "killed",
				    ep->tenant, ep->dead_msg);
	return ret;
}

void execproc_free(struct execproc *ep)
{
	if (!ep)
		return;
	if (ep->pid > 0 && !ep->dead)
		execproc_kill(ep);
	cgroup_leaf_remove(&ep->leaf);
	if (ep->shm)
		munmap(ep->shm, ep->shm_bytes);
	if (ep->shm_fd >= 0)
		close(ep->shm_fd);
	if (ep->pidfd >= 0)
		close(ep->pidfd);
	if (ep->done_fd >= 0)
		close(ep->done_fd);
	if (ep->input_sock >= 0)
		close(ep->input_sock);
	if (ep->log.fd >= 0)
		exec_log_drain(&ep->log, coloc_now_ns());
	exec_log_close(&ep->log);
	free(ep->summary);
	free(ep->versions);
	free(ep);
}
