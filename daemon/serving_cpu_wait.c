// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * How long a command's threads waited for a CPU because of OTHER tasks on
 * its cores since it passed its overrun bound: neither the overrun check
 * (serving_overrun.c) nor the hang limit (serving_events.c) counts that
 * time against it, since a busy host, or the blocks given a late
 * command's cores, make it wait through no fault of its own.
 *
 * Over each interval between two looks, W long, the wait is that of its
 * tenant's CPU pressure (PSI "some") where it has one, else its
 * executor's threads' summed run delay / k, of those allowed on its k
 * cores (/proc/PID/task/TID/schedstat). It is excused at most the time
 * other tasks had those cores / k, and at most W:
 *
 * - with colocd's BPF sensor (serving_config.cpu_times), the time tasks
 *   neither of its tenant (every executor process of it, by tgid: threads
 *   created and ended between two looks too) nor of its owner (a member's
 *   own processes) ran on those of its cores its tenant ran on over the
 *   interval or the one before (the sensor's per-CPU count of its
 *   executors: a core its threads may not use, or where they only sleep,
 *   is not one they waited for; where it ran on none of them, starved on
 *   all, every one), counted in the kernel at every context switch. Its threads piled on one of its cores, or its tenant's other
 *   executor spinning there, make it wait where no other runs, and what
 *   others ran on cores its threads do not run on is not theirs: excused
 *   nothing. A change of its threads between two looks changes nothing.
 *   With PSI too, nothing is read per thread: a look costs the same for
 *   an executor of 1 or 10,000 threads. Without PSI its threads' /proc
 *   files give the wait, and the cores its runnable threads (state R) are
 *   allowed on at either look stand for those it ran on. (A command on
 *   more than SV_WAIT_MAX_CORES cores: others' time on all of them.)
 * - without (serving without BPF, a tenant the sensor does not count: the
 *   log says so once a tenant), k W less the run of its tenant's
 *   executors' threads allowed on its cores: the time its cores ran
 *   someone else or nothing. An interval over which the set of those
 *   threads changed (one ended, came or was moved off the cores) is
 *   excused nothing: its run went uncounted. Left to it: threads piled on
 *   one of k cores get up to (k-1)/k excused; a member's own processes
 *   count as others.
 *
 * A baseline is read the first time the command is looked at past its
 * bound, again only when a verdict is due: never per block.
 * docs/security-executor.md, "Waiting for a CPU is not running".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "proc_schedstat.h"
#include "sandbox.h"
#include "serving_internal.h"

static uint64_t since(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* x's cores into cpus; their count in *k, 1 at least for the arithmetic. */
static int command_cores(const struct sv_exec *x, int *cpus, int *k)
{
	int n = 0;

	for (int c = policy_cpuset_next(&x->blk.cores, 0); c >= 0;
	     c = policy_cpuset_next(&x->blk.cores, c + 1))
		cpus[n++] = c;
	*k = n ? n : 1;
	return n;
}

/*
 * x's threads allowed on its cores; with the run (and the set) of its
 * tenant's other executor processes' threads there, which are its own, not others.
 */
static int read_threads(const struct sv_tenant *t, const struct sv_exec *x, const int *cpus,
			int n, struct proc_schedstat_sum *sum)
{
	struct proc_schedstat_sum o;
	pid_t pid = x->ep ? execproc_pid(x->ep) : 0;
	int ret;

	if (pid <= 0)
		return -ESRCH;
	ret = proc_schedstat_process_sum(pid, SV_WAIT_MAX_THREADS, cpus, n, sum);
	for (int i = 0; !ret && i < t->nr_exec; i++) {
		pid_t other = t->ex[i].ep ? execproc_pid(t->ex[i].ep) : 0;

		if (other <= 0 || other == pid)
			continue;
		ret = proc_schedstat_process_sum(other, SV_WAIT_MAX_THREADS, cpus, n, &o);
		if (ret == -ESRCH || ret == -ENOENT)
			ret = 0; /* gone or none there: the set's change says so */
		else if (!ret) {
			sum->run_ns += o.run_ns;
			sum->threads_sig += o.threads_sig;
			sum->nr_threads += o.nr_threads;
		}
	}
	return ret;
}

/*
 * Others' time and its tenant's on each of x's cores into others[] and
 * own[] (on all of them in [0] past SV_WAIT_MAX_CORES): one read of the
 * sensor's maps.
 */
static int read_times(struct serving *s, const struct sv_tenant *t, const int *cpus, int n,
		      uint64_t *others, uint64_t *own)
{
	uint64_t all_others[POLICY_MAX_CPUS], all_own[POLICY_MAX_CPUS];
	int ret;

	if (!s->cpu_times)
		return -EOPNOTSUPP;
	if (n <= SV_WAIT_MAX_CORES)
		return s->cpu_times(s->ctx, t->name, t->owner, cpus, n, others, own);
	ret = s->cpu_times(s->ctx, t->name, t->owner, cpus, n, all_others, all_own);
	others[0] = own[0] = 0;
	for (int i = 0; !ret && i < n; i++) {
		others[0] += all_others[i];
		own[0] += all_own[i];
	}
	return ret;
}

/* Which of x's cores its tenant ran on since the last look (bit i: cpus[i]; past 63, bit 0). */
static uint64_t ran_on(const struct sv_exec *x, const uint64_t *own, int n)
{
	uint64_t ran = 0;

	if (n > SV_WAIT_MAX_CORES)
		n = 1;
	for (int i = 0; i < n; i++)
		if (own[i] > x->over_own0_ns[i])
			ran |= 1ull << i;
	return ran;
}

static uint64_t all_cores(int n)
{
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}

/* Over one interval: others' time on the cores that count now or counted over the interval before. */
static uint64_t others_on_allowed(const struct sv_exec *x, const uint64_t *ns, uint64_t allowed,
				  int n)
{
	uint64_t sum = 0;

	if (n > SV_WAIT_MAX_CORES)
		return since(ns[0], x->over_others0_ns[0]);
	allowed |= x->over_allowed0;
	for (int i = 0; i < n; i++)
		if (allowed & (1ull << i))
			sum += since(ns[i], x->over_others0_ns[i]);
	return sum;
}

static int read_psi(struct serving *s, const struct sv_tenant *t, uint64_t *wait)
{
	if (!s->sandbox || !t->sandboxed)
		return -ENOENT;
	return sandbox_tenant_cpu_wait(s->sandbox, t->name, wait);
}

/* Without BPF: over one interval the time its k cores ran another or nothing, / k. */
static uint64_t others_but_run(uint64_t wall, uint64_t run, int k)
{
	uint64_t cores_wall = wall * (uint64_t)k;

	return cores_wall > run ? (cores_wall - run) / (uint64_t)k : 0;
}

static void tell_no_others(struct serving *s, struct sv_tenant *t, int why)
{
	if (t->told_no_others || !s->cpu_times)
		return;
	t->told_no_others = true;
	fprintf(stderr,
		"colocd: tenant %s: the sensor does not count its tasks (%s): a late command's "
		"wait for a CPU is excused up to its cores' time less its executors' run, without "
		"what others ran there\n",
		t->name, strerror(-why));
}

/* The walk of its threads' /proc files, once a tenant in the log: its cost grows with them. */
static void tell_walk(struct sv_tenant *t, bool no_sensor)
{
	if (t->told_walk)
		return;
	t->told_walk = true;
	fprintf(stderr,
		"colocd: tenant %s: a late command's wait for a CPU is read from its executors' "
		"threads' /proc files at each look (%s)\n",
		t->name,
		no_sensor ? "no BPF sensor's count of it" : "no CPU pressure (PSI) of its cgroup");
}

/* The first look past the bound: how its wait will be read, and the baselines. */
static int first_look(struct serving *s, struct sv_tenant *t, struct sv_exec *x, const int *cpus,
		      int n, uint64_t *psi, uint64_t *others, uint64_t *own,
		      struct proc_schedstat_sum *th)
{
	int why = read_times(s, t, cpus, n, others, own);

	x->over_by_others = !why;
	if (why)
		tell_no_others(s, t, why);
	x->over_by_threads = read_psi(s, t, psi) != 0;
	/* with the sensor and PSI nothing is read per thread: a look costs the same for any */
	x->over_walks = !x->over_by_others || x->over_by_threads;
	if (!x->over_walks)
		return 0;
	tell_walk(t, !x->over_by_others);
	return read_threads(t, x, cpus, n, th);
}

bool sv_cpu_waited(struct serving *s, struct sv_tenant *t, struct sv_exec *x, uint64_t now,
		   uint64_t *waited)
{
	int cpus[POLICY_MAX_CPUS], k, n = command_cores(x, cpus, &k);
	uint64_t psi = 0, others[SV_WAIT_MAX_CORES] = { 0 }, own[SV_WAIT_MAX_CORES] = { 0 };
	uint64_t wait, cap, counted, on;
	struct proc_schedstat_sum th = { 0 };

	if (!x->over_since_ns) {
		if (first_look(s, t, x, cpus, n, &psi, others, own, &th))
			return false;
		x->over_since_ns = now;
		x->over_waited_ns = 0;
		counted = th.allowed;
	} else {
		if (x->over_walks && read_threads(t, x, cpus, n, &th))
			return false;
		if (!x->over_by_threads && read_psi(s, t, &psi))
			return false;
		if (x->over_by_others && read_times(s, t, cpus, n, others, own))
			return false;
		wait = x->over_by_threads ? since(th.delay_ns, x->over_delay0_ns) / (uint64_t)k
					  : since(psi, x->over_wait0_ns);
		/* not walked: the cores its tenant ran on stand for those its threads may use */
		counted = x->over_walks ? th.allowed : ran_on(x, own, n);
		/* run on none of them over two intervals: starved on all, each counts */
		on = x->over_walks || counted || x->over_allowed0 ? counted : all_cores(n);
		if (x->over_by_others)
			cap = others_on_allowed(x, others, on, n) / (uint64_t)k;
		else if (th.threads_sig == x->over_threads_sig &&
			 th.nr_threads == x->over_threads_nr)
			cap = others_but_run(since(now, x->over_look_ns),
					     since(th.run_ns, x->over_run0_ns), k);
		else
			cap = 0;
		x->over_waited_ns += min_u64(min_u64(wait, cap), since(now, x->over_look_ns));
	}
	x->over_look_ns = now;
	x->over_wait0_ns = psi;
	x->over_delay0_ns = th.delay_ns;
	x->over_run0_ns = th.run_ns;
	memcpy(x->over_others0_ns, others, sizeof(others));
	memcpy(x->over_own0_ns, own, sizeof(own));
	x->over_allowed0 = counted;
	x->over_threads_sig = th.threads_sig;
	x->over_threads_nr = th.nr_threads;
	*waited = x->over_waited_ns;
	return true;
}
