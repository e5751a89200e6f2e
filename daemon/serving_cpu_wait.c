// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * How long a command's threads waited for a CPU because of OTHER tasks on
 * its cores since it passed its overrun bound: neither the overrun check
 * (serving_overrun.c) nor the hang limit (serving_events.c) counts that
 * time against it, since a busy host, or the blocks given a late
 * command's cores, make it wait through no fault of its own.
 *
 * Its executor's threads allowed on the command's k cores are read
 * (/proc/PID/task/TID/schedstat: time run, run delay); over each interval
 * between two looks, W long, the wait is that of its tenant's CPU
 * pressure (PSI "some") where it has one, else its threads' summed run
 * delay / k, and it is excused at most (k W - their run) / k: the time
 * its cores ran someone else (or nothing). Threads that wait for each
 * other on cores they fill (two spinners on one) are excused nothing.
 * An interval over which the set of those threads changed (one ended,
 * came or was moved off the cores) is excused nothing either: its run
 * went uncounted. A baseline is read the first time the command is
 * looked at past its bound, again only when a verdict is due: never per
 * block. docs/security-executor.md, "Waiting for a CPU is not running".
 */
#include <errno.h>
#include "proc_schedstat.h"
#include "sandbox.h"
#include "serving_internal.h"

static int read_threads(const struct sv_exec *x, struct proc_schedstat_sum *sum, int *k)
{
	int cpus[POLICY_MAX_CPUS], n = 0;

	if (!x->ep)
		return -ESRCH;
	for (int c = policy_cpuset_next(&x->blk.cores, 0); c >= 0;
	     c = policy_cpuset_next(&x->blk.cores, c + 1))
		cpus[n++] = c;
	*k = n ? n : 1;
	return proc_schedstat_process_sum(execproc_pid(x->ep), SV_WAIT_MAX_THREADS, cpus, n, sum);
}

static int read_psi(struct serving *s, const struct sv_tenant *t, uint64_t *wait)
{
	if (!s->sandbox || !t->sandboxed)
		return -ENOENT;
	return sandbox_tenant_cpu_wait(s->sandbox, t->name, wait);
}

static uint64_t since(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

/* The excuse over one interval of wall ns: the wait, at most the time others had the cores. */
static uint64_t interval_excuse(uint64_t wall, uint64_t wait, uint64_t run, int k)
{
	uint64_t cores_wall = wall * (uint64_t)k;
	uint64_t others = cores_wall > run ? (cores_wall - run) / (uint64_t)k : 0;

	if (wait > others)
		wait = others;
	return wait < wall ? wait : wall;
}

bool sv_cpu_waited(struct serving *s, const struct sv_tenant *t, struct sv_exec *x, uint64_t now,
		   uint64_t *waited)
{
	struct proc_schedstat_sum th;
	uint64_t psi = 0, wait;
	int k;

	if (read_threads(x, &th, &k))
		return false;
	if (!x->over_since_ns) {
		x->over_by_threads = read_psi(s, t, &psi) != 0;
		x->over_since_ns = now;
		x->over_waited_ns = 0;
	} else {
		if (!x->over_by_threads && read_psi(s, t, &psi))
			return false;
		wait = x->over_by_threads ? since(th.delay_ns, x->over_delay0_ns) / (uint64_t)k
					  : since(psi, x->over_wait0_ns);
		if (th.threads_sig == x->over_threads_sig && th.nr_threads == x->over_threads_nr)
			x->over_waited_ns += interval_excuse(since(now, x->over_look_ns), wait,
							     since(th.run_ns, x->over_run0_ns), k);
	}
	x->over_look_ns = now;
	x->over_wait0_ns = psi;
	x->over_delay0_ns = th.delay_ns;
	x->over_run0_ns = th.run_ns;
	x->over_threads_sig = th.threads_sig;
	x->over_threads_nr = th.nr_threads;
	*waited = x->over_waited_ns;
	return true;
}
