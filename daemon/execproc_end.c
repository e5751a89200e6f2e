// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The end of an executor (execproc.h): the SIGKILL (through its cgroup v2
 * leaf's cgroup.kill, or its pidfd), giving it up for a breach of the
 * protocol, reaping it with why it died in words, and freeing colocd's
 * handle of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "execproc_internal.h"
#include "mono_clock.h"

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

void execproc_printable(char *s)
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

bool execproc_reap(struct execproc *ep)
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
		execproc_printable(h->reason);
		snprintf(ep->dead_msg + n, sizeof(ep->dead_msg) - (size_t)n, ": %s", h->reason);
	}
	return true;
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
	execproc_reap(ep);
	return 0;
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
