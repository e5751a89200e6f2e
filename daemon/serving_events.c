// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Executor events of the serving core (see serving.c's top comment):
 * serving_handle_fd takes what an executor's fd says (a block's completion,
 * a death, a line of its log), serving_tick the deadlines (an executor that
 * never described its model or got ready, a command overrun, serving_overrun.c,
 * or hung, its limit moved by its threads' wait for a CPU, serving_cpu_wait.c)
 * and the retired
 * executors still being stopped; serving_next_timeout_ms and serving_fds
 * tell the loop when and what to wait for. A completion moves the query on
 * (or completes it); a death or a breach fails the tenant (sv_fail_tenant),
 * which returns its cores before its queries fail.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "sandbox.h"
#include "shm_summary_check.h"
#include "serving_internal.h"
#include "mono_clock.h"
#include "util.h"

/* Its output logged; at its end of file, no longer watched. Whether fd was its log's. */
static bool drain_log(struct serving *s, struct execproc *ep, int fd)
{
	if (execproc_log_fd(ep) != fd || fd < 0)
		return false;
	if (!execproc_drain_log(ep)) {
		if (s->watch)
			s->watch(s->ctx, fd, false);
		execproc_close_log(ep);
	}
	return true;
}

/*
 * Takes what a retired executor says (the answer to EXIT, its end) and
 * frees it once reaped; past its deadline it gets SIGKILL. Returns whether
 * it is still there.
 */
static bool poll_retired(struct serving *s, struct sv_retired **pp, uint64_t now)
{
	struct sv_retired *r = *pp;

	for (int i = 0; i < 3 && execproc_poll(r->ep, NULL, NULL) > 0; i++)
		;
	if (execproc_reaped(r->ep)) {
		sv_free_retired(s, pp);
		return false;
	}
	if (r->kill_at_ns && now >= r->kill_at_ns) {
		execproc_signal_kill(r->ep);
		r->kill_at_ns = 0;
	}
	return true;
}

/*
 * A block's round trip into q's breakdown, and the wait before it (queued
 * before its first block, decide before a later one): from the last mark
 * to the command, taken as now less the round trip, so the parts of all
 * blocks and the reply add up to the query's latency.
 */
static void add_block_parts(struct sv_query *q, bool first_block, const struct execproc_result *r)
{
	uint64_t now = coloc_now_ns(), submit = now - r->round_trip_ns;
	uint64_t compute = r->block_ns < r->run_ns ? r->block_ns : r->run_ns;

	q->parts.ns[first_block ? COLOC_PART_QUEUED : COLOC_PART_DECIDE] +=
		submit > q->mark_ns ? submit - q->mark_ns : 0;
	q->parts.ns[COLOC_PART_DISPATCH] += r->dispatch_ns;
	q->parts.ns[COLOC_PART_COMPUTE] += compute;
	q->parts.ns[COLOC_PART_COPY] += r->run_ns - compute;
	q->parts.ns[COLOC_PART_NOTICE] += r->notice_ns;
	q->mark_ns = now;
}

/* The highest level on d's cores as of now, as the policy would read it. */
static double cores_level(const struct serving *s, const struct policy_decision *d)
{
	uint64_t now = coloc_now_ns();
	double level = 1.0;

	for (int c = policy_cpuset_next(&d->cores, 0); c >= 0 && c < POLICY_MAX_CPUS;
	     c = policy_cpuset_next(&d->cores, c + 1))
		level = fmax(level, sv_core_level(s, c, now));
	return level;
}

/* Tells the block hook about block d of x's command, measured_ns 0 if it failed. */
static void tell_block(struct serving *s, const struct sv_tenant *t, const struct sv_exec *x,
		       const struct policy_decision *d, uint64_t measured_ns,
		       const struct execproc_result *r)
{
	if (!s->block_done)
		return;
	s->block_done(s->ctx, &(struct serving_block_record){
				      .tenant = t->name,
				      .query = x->blk_query->id,
				      .first = d->first_layer,
				      .last = d->last_layer,
				      .nr_cores = d->nr_cores,
				      .corunners = x->blk_corunners,
				      .level = d->level,
				      .core_level = cores_level(s, d),
				      .versions = d->versions,
				      .alone_ns = d->alone_ns,
				      .predicted_ns = d->predicted_ns,
				      .measured_ns = measured_ns,
				      .round_trip_ns = r->round_trip_ns,
				      .switch_ns = r->switch_ns,
				      .ok = r->status == COLOC_SHM_DONE_OK,
				      .clamped = r->clamped,
			      });
}

/*
 * x's command completed: each block of its plan that ran is one the
 * policy learns from (its own time, as the executor measured it), and the
 * query moves on to where the command stopped.
 */
static void block_finished(struct serving *s, struct sv_tenant *t, struct sv_exec *x,
			   const struct execproc_result *r)
{
	struct sv_query *q = x->blk_query;
	char reason[SERVING_REASON_LEN + 64];

	if (!x->busy || !q)
		return;
	t->clamped_times += r->clamped;
	if (r->status != COLOC_SHM_DONE_OK) {
		tell_block(s, t, x, &x->blk, 0, r);
		sv_release_block_cores(s, t, x);
		snprintf(reason, sizeof(reason), "layers [%u, %u) %s: %s", r->first, r->last,
			 r->status == COLOC_SHM_DONE_REFUSED ? "refused" : "failed", r->reason);
		sv_complete_query(s, t, q, SERVING_QUERY_FAILED, reason);
		return;
	}
	for (unsigned int i = 0; i < r->nr_blocks; i++) {
		struct policy_decision d = sv_plan_decision(x, (int)i);

		tell_block(s, t, x, &d, r->blocks_ns[i], r);
		/* a late command's time is its stall's, not the machine's: nothing learnt */
		if (x->late)
			continue;
		policy_block_done(s->policy, &d, r->blocks_ns[i]);
		sv_update_slowdown(s, t, &d, r->blocks_ns[i], x->blk_corunners == 0);
		serving_stats_block(&t->stats, d.predicted_ns, r->blocks_ns[i]);
	}
	sv_overrun_ended(t, x);
	t->stats.commands++;
	t->stats.yields += (int)r->last < x->plan[x->plan_nr - 1].last;
	sv_release_block_cores(s, t, x);
	q->exec_ns = q->exec_ns + r->block_ns < q->exec_ns ? UINT64_MAX : q->exec_ns + r->block_ns;
	add_block_parts(q, x->blk.first_layer == 0, r);
	q->next_layer = (int)r->last;
	if (q->next_layer >= t->nr_layers)
		sv_complete_query(s, t, q, SERVING_QUERY_OK, NULL);
}

/*
 * Why an executor that described its model does not fit t's (as its first
 * executor described it), into why; false when it does. Its header's sizes
 * at ready are its summary's (execproc).
 */
static bool loaded_other_model(const struct sv_tenant *t, int i, char *why, size_t len)
{
	const struct coloc_shm_summary *sum = execproc_summary(t->ex[i].ep);

	if (!sum || !t->summary || shm_summary_same(sum, t->summary))
		return false;
	snprintf(why, len, "executor %d described another model than the tenant's", i);
	return true;
}

/*
 * An executor of a tenant being admitted gave up or broke the protocol:
 * the admission is refused with the executor's own reason (the importer's
 * "MODEL:LINE: ...") where it failed cleanly, else with colocd's.
 */
static void refuse_from_executor(struct serving *s, struct sv_tenant *t, const struct sv_exec *x,
				 int ret, const struct coloc_err *err)
{
	const struct coloc_shm_header *h = execproc_header(x->ep);

	if (h->state == COLOC_SHM_FAILED && h->error < 0 && h->reason[0])
		sv_admit_refuse(s, t, h->error, h->reason);
	else
		sv_admit_refuse(s, t, ret, coloc_err_str(err));
}

/*
 * The memory limit t's executor met, before err's words, where the
 * kernel's OOM killer killed it (first: a tenant's reason is short).
 */
static void name_oom_kill(const struct serving *s, const struct sv_tenant *t, struct coloc_err *err)
{
	char why[256];

	if (t->sandboxed && sandbox_tenant_oom_killed(s->sandbox, t->name, why, sizeof(why)) > 0)
		coloc_err_prefix(err, "%s", why);
}

/* Takes what each of t's executors has to say; false when t failed or went. */
static bool poll_tenant(struct serving *s, struct sv_tenant *t)
{
	char why[SERVING_REASON_LEN];
	int nr_ready = 0;

	for (int i = 0; i < t->nr_exec; i++) {
		struct sv_exec *x = &t->ex[i];
		struct execproc_result res;
		struct coloc_err err = { 0 };
		int ret;

		if (!x->ep)
			return true;
		ret = execproc_poll(x->ep, &res, &err);
		if (ret < 0)
			name_oom_kill(s, t, &err);
		if (ret < 0 && !t->described) {
			refuse_from_executor(s, t, x, ret, &err);
			return false;
		}
		if (ret < 0) {
			sv_fail_tenant(s, t, coloc_err_str(&err));
			return false;
		}
		if (ret == 1)
			block_finished(s, t, x, &res);
		/* a completion's callback may have ended a draining tenant (sv_schedule) */
		if (!t->used)
			return false;
		nr_ready += execproc_ready(x->ep);
	}
	if (!t->described && !sv_admit_poll(s, t))
		return false;
	for (int i = 0; i < t->nr_exec; i++)
		if (loaded_other_model(t, i, why, sizeof(why))) {
			sv_fail_tenant(s, t, why);
			return false;
		}
	if (t->state == SERVING_TENANT_STARTING && t->summary && nr_ready == t->nr_exec &&
	    !sv_admit_ready(s, t))
		return false;
	if (t->removing && !t->nr_queries && !sv_tenant_busy(t)) {
		sv_finish_removal(s, t);
		return false;
	}
	return true;
}

static bool executor_has_fd(const struct sv_tenant *t, int fd)
{
	for (int i = 0; i < t->nr_exec; i++)
		if (t->ex[i].ep &&
		    (execproc_done_fd(t->ex[i].ep) == fd || execproc_pidfd(t->ex[i].ep) == fd))
			return true;
	return false;
}

void serving_handle_fd(struct serving *s, int fd)
{
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		for (int x = 0; t->used && x < t->nr_exec; x++)
			if (t->ex[x].ep && drain_log(s, t->ex[x].ep, fd))
				return;
	}
	for (struct sv_retired *r = s->retired; r; r = r->next)
		if (drain_log(s, r->ep, fd))
			return;
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		if (t->used && t->profile_load && sv_profile_load_fd(t->profile_load) == fd) {
			if (sv_admit_profile_loaded(s, t))
				poll_tenant(s, t);
			sv_schedule(s);
			return;
		}
		if (t->used && executor_has_fd(t, fd)) {
			poll_tenant(s, t);
			sv_schedule(s);
			return;
		}
	}
	for (struct sv_retired **pp = &s->retired; *pp; pp = &(*pp)->next)
		if (execproc_pidfd((*pp)->ep) == fd) {
			poll_retired(s, pp, coloc_now_ns());
			return;
		}
}

/*
 * A block is hung past SERVING_HANG_FACTOR x the larger of its prediction and its table
 * latency alone (a policy's online correction can shrink the prediction far
 * below what a slower run of the same block takes, e.g. under ASan). Under
 * a policy that shares cores, the kernel time-slices the blocks that run at
 * once: each may take that many times as long. Sums and products saturate
 * (util.h): a profile of absurd cells makes it never.
 */
static uint64_t hang_limit(const struct sv_exec *x, int sharing)
{
	uint64_t predicted = 0, limit;

	/* a plan's blocks run one after the other: their sum */
	for (int i = 0; i < x->plan_nr; i++) {
		const struct sv_plan_block *p = &x->plan[i];
		uint64_t ns = p->predicted_ns > p->alone_ns ? p->predicted_ns : p->alone_ns;

		predicted = coloc_sat_add_u64(predicted, ns);
	}
	if (sharing > 1)
		predicted = coloc_sat_mul_u64(predicted, (uint64_t)sharing);
	limit = coloc_sat_add_u64(coloc_sat_mul_u64(SERVING_HANG_FACTOR, predicted),
				  SERVING_HANG_SLACK_NS);
	/*
	 * A late command holds no core and runs beside the blocks given its
	 * cores (serving_overrun.c), its team's barriers waiting on theirs, at
	 * the lowest weight (serving_idle.c): on what they leave. Twice the
	 * time before it is called hung; at that weight the others lose
	 * ~1/1024 of a core to it meanwhile.
	 */
	return coloc_sat_mul_u64(x->late ? 2 : 1, limit);
}

uint64_t sv_hang_deadline(const struct sv_exec *x, int sharing)
{
	return coloc_sat_add_u64(x->blk_submit_ns,
				 coloc_sat_add_u64(hang_limit(x, sharing), x->hang_waited_ns));
}

static int hang_sharing(const struct serving *s)
{
	return s->entry->shares_cores ? sv_blocks_in_flight(s) : 0;
}

static uint64_t hang_deadline(const struct serving *s, const struct sv_exec *x)
{
	return sv_hang_deadline(x, hang_sharing(s));
}

/*
 * x is past its hang deadline at now: whether its threads' wait for a CPU
 * since its overrun bound (serving_cpu_wait.c) moves the deadline past
 * now. Up to SV_HANG_WAIT_CAP x the limit in all, so that an executor
 * that keeps its own threads waiting (more of them than cores) is still
 * killed.
 */
static bool waiting_moves_hang(struct serving *s, struct sv_tenant *t, struct sv_exec *x,
			       uint64_t now)
{
	uint64_t cap = coloc_sat_mul_u64(SV_HANG_WAIT_CAP - 1, hang_limit(x, hang_sharing(s)));
	uint64_t waited;

	if (!sv_cpu_waited(s, t, x, now, &waited))
		return false;
	x->hang_waited_ns = waited < cap ? waited : cap;
	if (now > hang_deadline(s, x))
		return false;
	x->over_excused = true;
	return true;
}

/* Fails t when it never got ready or one of its blocks hangs (that executor killed). */
static void check_deadlines(struct serving *s, struct sv_tenant *t, uint64_t now)
{
	char why[SERVING_REASON_LEN];

	if (!t->summary && !t->profile_load && now - t->started_ns > SERVING_DESCRIBE_TIMEOUT_NS) {
		snprintf(why, sizeof(why),
			 "tenant %s: its executor did not describe its model within %.0f s: "
			 "killed",
			 t->name, SERVING_DESCRIBE_TIMEOUT_NS / 1e9);
		sv_admit_refuse(s, t, -ETIMEDOUT, why);
		return;
	}
	if (t->state == SERVING_TENANT_STARTING && now - t->started_ns > SERVING_START_TIMEOUT_NS) {
		snprintf(why, sizeof(why), "the executor was not ready after %.0f s: killed",
			 SERVING_START_TIMEOUT_NS / 1e9);
		sv_fail_tenant(s, t, why);
		return;
	}
	sv_overrun_check(s, t, now);
	for (int i = 0; i < t->nr_exec; i++) {
		struct sv_exec *x = &t->ex[i];

		if (!x->busy || now <= hang_deadline(s, x) || waiting_moves_hang(s, t, x, now))
			continue;
		snprintf(why, sizeof(why),
			 "hung: the block of layers [%d, %d) of query %llu ran %.1f ms, "
			 "%.1f ms predicted (limit %.1f ms: %dx + %.1f s%s, + %.1f ms waiting "
			 "for a CPU): killed",
			 x->blk.first_layer, x->plan[x->plan_nr - 1].last,
			 (unsigned long long)x->blk.query_id, (now - x->blk_submit_ns) / 1e6,
			 x->blk.predicted_ns / 1e6, hang_limit(x, hang_sharing(s)) / 1e6,
			 SERVING_HANG_FACTOR, SERVING_HANG_SLACK_NS / 1e9,
			 x->late ? ", x2 once late" : "", x->hang_waited_ns / 1e6);
		sv_fail_tenant(s, t, why);
		return;
	}
}

void serving_tick(struct serving *s)
{
	uint64_t now = coloc_now_ns();

	for (struct sv_retired **pp = &s->retired; *pp;)
		if (poll_retired(s, pp, now))
			pp = &(*pp)->next;

	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		if (t->used && sv_tenant_running(t) && poll_tenant(s, t))
			check_deadlines(s, t, now);
	}
	sv_schedule(s);
}

int serving_next_timeout_ms(const struct serving *s)
{
	uint64_t now = coloc_now_ns(), next = UINT64_MAX;

	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		const struct sv_tenant *t = &s->tenants[i];

		if (!t->used || !sv_tenant_running(t))
			continue;
		if (t->state == SERVING_TENANT_STARTING &&
		    t->started_ns + SERVING_START_TIMEOUT_NS < next)
			next = t->started_ns + SERVING_START_TIMEOUT_NS;
		if (!t->summary && !t->profile_load &&
		    t->started_ns + SERVING_DESCRIBE_TIMEOUT_NS < next)
			next = t->started_ns + SERVING_DESCRIBE_TIMEOUT_NS;
		for (int x = 0; x < t->nr_exec; x++) {
			const struct sv_exec *e = &t->ex[x];

			if (e->busy && hang_deadline(s, e) < next)
				next = hang_deadline(s, e);
			if (e->busy && !e->late && !s->entry->shares_cores &&
			    sv_overrun_deadline(t, e) < next)
				next = sv_overrun_deadline(t, e);
		}
	}
	for (const struct sv_retired *r = s->retired; r; r = r->next) {
		if (r->kill_at_ns && r->kill_at_ns < next)
			next = r->kill_at_ns;
		if (r->unwatched && now + SV_REAP_POLL_MS * 1000000ull < next)
			next = now + SV_REAP_POLL_MS * 1000000ull;
	}
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

int serving_fds(const struct serving *s, int *fds, int max)
{
	int n = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		const struct sv_tenant *t = &s->tenants[i];

		if (t->used && t->profile_load) {
			if (n < max)
				fds[n] = sv_profile_load_fd(t->profile_load);
			n++;
		}
		for (int x = 0; t->used && x < t->nr_exec; x++) {
			if (!t->ex[x].ep)
				continue;
			if (n < max)
				fds[n] = execproc_done_fd(t->ex[x].ep);
			n++;
			if (n < max)
				fds[n] = execproc_pidfd(t->ex[x].ep);
			n++;
			if (execproc_log_fd(t->ex[x].ep) < 0)
				continue;
			if (n < max)
				fds[n] = execproc_log_fd(t->ex[x].ep);
			n++;
		}
	}
	for (const struct sv_retired *r = s->retired; r; r = r->next) {
		if (n < max)
			fds[n] = execproc_pidfd(r->ep);
		n++;
		if (execproc_log_fd(r->ep) < 0)
			continue;
		if (n < max)
			fds[n] = execproc_log_fd(r->ep);
		n++;
	}
	return n;
}
