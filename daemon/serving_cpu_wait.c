// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * How long a command's threads were runnable but waited for a CPU since
 * it passed its overrun bound: neither the overrun check (serving_overrun.c)
 * nor the hang limit (serving_events.c) counts that time against it, since
 * a busy host, or the blocks given a late command's cores, make it wait
 * through no fault of its own. Where its tenant's cgroup has a CPU
 * pressure (PSI) total, that (the wall time some thread of the tenant
 * waited); without one (cgroup v1, or v2 without PSI) the run delay of its
 * executor's threads (/proc/PID/task/TID/schedstat, kept by the kernel
 * whatever the cgroups), summed and taken as at most the wall time since
 * (several may wait at once). A baseline is read the first time the command is looked at
 * past its bound, and a total again only when a verdict is due: never per
 * block. docs/security-executor.md, "Waiting for a CPU is not running".
 */
#include <errno.h>
#include "proc_schedstat.h"
#include "sandbox.h"
#include "serving_internal.h"

static int read_wait(struct serving *s, const struct sv_tenant *t, const struct sv_exec *x,
		     bool by_threads, uint64_t *wait)
{
	if (by_threads)
		return x->ep ? proc_schedstat_process_delay(execproc_pid(x->ep),
							    SV_WAIT_MAX_THREADS, wait)
			     : -ESRCH;
	if (!s->sandbox || !t->sandboxed)
		return -ENOENT;
	return sandbox_tenant_cpu_wait(s->sandbox, t->name, wait);
}

bool sv_cpu_waited(struct serving *s, const struct sv_tenant *t, struct sv_exec *x, uint64_t now,
		   uint64_t *waited)
{
	uint64_t wait;

	if (!x->over_since_ns) {
		x->over_by_threads = read_wait(s, t, x, false, &wait) != 0;
		if (x->over_by_threads && read_wait(s, t, x, true, &wait))
			return false;
		x->over_since_ns = now;
		x->over_wait0_ns = wait;
	} else if (read_wait(s, t, x, x->over_by_threads, &wait)) {
		return false;
	}
	*waited = wait > x->over_wait0_ns ? wait - x->over_wait0_ns : 0;
	if (*waited > now - x->over_since_ns)
		*waited = now - x->over_since_ns;
	return true;
}
