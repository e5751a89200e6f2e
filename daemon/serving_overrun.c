// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Overruns: a command that runs far past its table latency gives its cores
 * back. An executor is its tenant's code; one that stalls mid-block below
 * the hang limit (serving_events.c: 50x + 2 s) would otherwise hold its
 * block's cores, and every other tenant wait, for seconds on end.
 *
 * Past SV_OVERRUN_FACTOR x the sum of its blocks' table latencies (alone,
 * on their cores and versions: what the profile says, which no stall
 * teaches) + SV_OVERRUN_SLACK_NS, the command is late: its cores go back to
 * the free set at once (core_changed says so) for the policy to give to
 * others. Its tenant's cpuset keeps them: the executor re-pins its threads
 * at each block of its plan, which a narrower cpuset fails (EINVAL), so
 * the late block goes on beside whoever got its cores, its tenant's
 * cgroup at the lowest weight but not idle while nothing else of it runs
 * (serving_idle.c says why).
 * The policy no longer sees it running; its executor stays busy, and its
 * end (or the hang limit's kill) frees nothing and teaches nothing (its
 * time is the stall's, not the machine's).
 *
 * A command that is slow because its threads wait for a CPU (others'
 * processes on its cores, a busy host) is not late for it: a command past
 * its bound is judged on the time since then that its threads did not wait
 * (serving_cpu_wait.c: its tenant's CPU pressure, or without PSI its
 * executor's threads' run delay, either at most the time other tasks had
 * its cores), and is late once that reaches
 * SV_OVERRUN_RUN_FACTOR x its table + SV_OVERRUN_SLACK_NS; at
 * SV_OVERRUN_WAIT_CAP x its bound it is late whatever it waited, so that
 * an executor that keeps its own threads waiting (more threads than
 * cores) holds its cores no longer than that. Under a policy that shares
 * cores nothing is late, but the wait's baseline is taken all the same,
 * for the hang limit.
 *
 * Its tenant is charged a strike (at most SV_OVERRUN_MAX_STRIKES): each
 * halves the factor (8x, 4x, 2x at least) and, while it has any, the
 * policy sees one executor of it and starts none of its blocks while a late
 * one is out. SV_OVERRUN_FORGIVE commands within the bound take one strike
 * away; one excused by a wait for a CPU is not within it and does not
 * count. An honest tenant's rare slow command (EfficientNet-B0's 2-core
 * spells run 5-7x their table here) costs it a tighter bound for a few
 * dozen commands; docs/security-executor.md has the numbers.
 */
#include "serving_internal.h"
#include "util.h"

static int overrun_factor(const struct sv_tenant *t)
{
	int f = SV_OVERRUN_FACTOR >> t->strikes;

	return f > SV_OVERRUN_MIN_FACTOR ? f : SV_OVERRUN_MIN_FACTOR;
}

/* Sums and products saturate (util.h): a profile of absurd cells makes a bound of never. */
static uint64_t plan_alone(const struct sv_exec *x)
{
	uint64_t alone = 0;

	for (int i = 0; i < x->plan_nr; i++)
		alone = coloc_sat_add_u64(alone, x->plan[i].alone_ns);
	return alone;
}

/*
 * f x the plan's table + SV_OVERRUN_SLACK_NS. The slack is absolute: a
 * slack relative to the table struck honest sub-ms commands 15-60x as
 * often under load (docs/security-executor.md, "Why the slack stays 10 ms").
 */
static uint64_t scaled_with_slack(uint64_t f, const struct sv_exec *x)
{
	return coloc_sat_add_u64(coloc_sat_mul_u64(f, plan_alone(x)), SV_OVERRUN_SLACK_NS);
}

static uint64_t bound(const struct sv_tenant *t, const struct sv_exec *x)
{
	return coloc_sat_add_u64(x->blk_submit_ns,
				 scaled_with_slack((uint64_t)overrun_factor(t), x));
}

uint64_t sv_overrun_deadline(const struct sv_tenant *t, const struct sv_exec *x)
{
	return x->over_since_ns ? x->over_next_ns : bound(t, x);
}

/*
 * x is past its bound at now: whether its threads' wait for a CPU
 * (serving_cpu_wait.c) excuses it for now (x->over_next_ns then set to
 * when it is judged again). false where that wait cannot be read.
 */
static bool waiting_excuses(struct serving *s, struct sv_tenant *t, struct sv_exec *x,
			    uint64_t now)
{
	uint64_t b = bound(t, x), cap, waited, next;

	cap = coloc_sat_add_u64(x->blk_submit_ns,
				coloc_sat_mul_u64(SV_OVERRUN_WAIT_CAP, b - x->blk_submit_ns));
	if (!sv_cpu_waited(s, t, x, now, &waited) || now >= cap)
		return false;
	/* late once its threads have run, not waited, this long since it passed its bound */
	next = coloc_sat_add_u64(x->over_since_ns + waited,
				 scaled_with_slack(SV_OVERRUN_RUN_FACTOR, x));
	x->over_next_ns = next < cap ? next : cap;
	if (now >= x->over_next_ns)
		return false;
	x->over_excused = true;
	return true;
}

int sv_tenant_late(const struct sv_tenant *t)
{
	int n = 0;

	for (int x = 0; x < t->nr_exec; x++)
		n += t->ex[x].busy && t->ex[x].late;
	return n;
}

bool sv_overrun_may_start(const struct sv_tenant *t)
{
	return !t->strikes || !sv_tenant_late(t);
}

/* x's cores back to the free set now; x stays busy until its command ends. */
static void take_back(struct serving *s, struct sv_tenant *t, struct sv_exec *x, uint64_t now)
{
	int idx = (int)(t - s->tenants);

	for (int c = policy_cpuset_next(&x->blk.cores, 0); c >= 0;
	     c = policy_cpuset_next(&x->blk.cores, c + 1)) {
		s->core_idle_since[c] = now;
		if (s->owner[c] != idx)
			continue;
		s->owner[c] = -1;
		policy_cpuset_set(&s->free, c);
		if (s->core_changed)
			s->core_changed(s->ctx, c, NULL, 0, 0, 0);
	}
	x->late = true;
	sv_tenant_hold(s, t, false); /* the lowest weight, unless a block of it is on time */
	t->overruns++;
	if (t->strikes < SV_OVERRUN_MAX_STRIKES)
		t->strikes++;
	t->good_commands = 0;
}

void sv_overrun_check(struct serving *s, struct sv_tenant *t, uint64_t now)
{
	uint64_t waited;

	for (int i = 0; i < t->nr_exec; i++) {
		struct sv_exec *x = &t->ex[i];

		if (!x->busy || x->late || now <= sv_overrun_deadline(t, x))
			continue;
		/* under a policy that shares cores no block holds any: the hang limit's baseline */
		if (s->entry->shares_cores) {
			if (!x->over_since_ns)
				sv_cpu_waited(s, t, x, now, &waited);
			continue;
		}
		if (!waiting_excuses(s, t, x, now))
			take_back(s, t, x, now);
	}
}

void sv_overrun_ended(struct sv_tenant *t, const struct sv_exec *x)
{
	if (x->late || x->over_excused || !t->strikes || ++t->good_commands < SV_OVERRUN_FORGIVE)
		return;
	t->strikes--;
	t->good_commands = 0;
}
