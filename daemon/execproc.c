// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's side of one executor process (see execproc.h), once started
 * (execproc_spawn.c starts it): the futex doorbell back from it and the
 * poll that takes what it wrote, in order (its model, ready, a completion,
 * its death), and the waits built on it. The commands are in
 * execproc_submit.c, what is taken and checked in execproc_ready.c and
 * execproc_done.c, the end in execproc_end.c. Everything the executor
 * writes is checked before use (docs/security-executor.md): a breach of
 * the protocol gives it up (killed, never waited for) with the reason.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "coloc/protocol.h"
#include "execproc_internal.h"
#include "mono_clock.h"
#include "proc_stat.h"

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

const char *execproc_cgroup_leaf(const struct execproc *ep)
{
	return ep->leaf.dir;
}

/*
 * Whether the process has begun to exit (PF_EXITING in /proc/PID/stat's
 * flags, after the command name, which may hold anything): its files close
 * before it can be reaped. Gone or unreadable counts as exiting.
 */
static bool exiting(pid_t pid)
{
	unsigned long long f[PROC_STAT_FLAGS + 1];
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (proc_stat_read(path, NULL, f, PROC_STAT_FLAGS + 1))
		return true;
	return f[PROC_STAT_FLAGS] & 0x4; /* PF_EXITING */
}

/*
 * Empties colocd's end of the doorbell (non-blocking), at most
 * EXECPROC_DRAIN_BYTES; true if it rang. A read shorter than asked took
 * all there was: one read a ring, no poll(2) before it. An end of file
 * means the executor closed its end.
 */
static bool drain_doorbell(struct execproc *ep)
{
	size_t total = 0;
	char buf[512];
	bool rang = false;

	while (!ep->hung_up && total < EXECPROC_DRAIN_BYTES) {
		ssize_t n = read(ep->done_fd, buf, sizeof(buf));

		if (n <= 0) {
			ep->hung_up = !n;
			break;
		}
		rang = true;
		total += (size_t)n;
		if ((size_t)n < sizeof(buf))
			break;
	}
	return rang;
}

int execproc_poll(struct execproc *ep, struct execproc_result *res, struct coloc_err *err)
{
	bool rang;
	int ret;

	if (ep->given_up) {
		execproc_reap(ep);
		return coloc_err_set(err, ep->dead_err, "%s", ep->dead_msg);
	}
	rang = drain_doorbell(ep);
	/* an exit closes it too: the one that closed it on purpose and lives on is killed */
	if (ep->hung_up && !ep->closed_alive && !execproc_reap(ep) && !exiting(ep->pid)) {
		ep->closed_alive = true;
		execproc_signal_kill(ep);
	}
	if (!ep->ready && !ep->dead) {
		__u32 state = __atomic_load_n(&ep->shm->hdr.state, __ATOMIC_ACQUIRE);

		if (!ep->summary && __atomic_load_n(&ep->shm->hdr.described, __ATOMIC_ACQUIRE)) {
			ep->idle_rings = 0;
			if ((ret = execproc_take_summary(ep, err)))
				return ret;
		}

		if (state == COLOC_SHM_READY) {
			ep->idle_rings = 0;
			return execproc_take_ready(ep, err);
		}
		if (state != COLOC_SHM_STARTING && state != COLOC_SHM_FAILED)
			return execproc_give_up(
				ep, err, "set the header's state to %u while loading", state);
	}
	if (ep->ready && (ret = execproc_check_header(ep, err)))
		return ret;
	/* a completion written before the process died is still delivered first */
	ret = execproc_take_completion(ep, res, err);
	if (ret) {
		ep->idle_rings = 0;
		return ret;
	}
	if (execproc_reap(ep))
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

void execproc_stop_begin(struct execproc *ep)
{
	if (ep->dead)
		return;
	if (!execproc_can_submit(ep, NULL))
		execproc_ring_bare(ep, COLOC_SHM_OP_EXIT);
	else
		execproc_signal_kill(ep);
}

int execproc_stop(struct execproc *ep, int timeout_ms, struct coloc_err *err)
{
	struct pollfd p = { .fd = ep->pidfd, .events = POLLIN };
	int ret = execproc_can_submit(ep, err);

	if (!ret) {
		execproc_ring_bare(ep, COLOC_SHM_OP_EXIT);
		ret = wait_for(ep, NULL, timeout_ms, false, err);
	}
	/* acknowledged: it is on its way out */
	if (ret == 1 && poll(&p, 1, timeout_ms) == 1 && execproc_reap(ep) && ep->exited_cleanly)
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
