// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A serving tenant's executor processes (serving.c's top comment): all
 * started together or none (sv_start_executors), their fds watched on the
 * loop, retired when they leave (asked to exit or killed, then reaped
 * through their pidfds, never waited for); and the tenant's ends that stop
 * them: failed (sv_fail_tenant), dropped, drained and removed
 * (serving_remove), restarted after a failure (serving_restart).
 * tenant_changed hears of each change with the executors' pids.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sandbox.h"
#include "serving_internal.h"
#include "mono_clock.h"

/* Whether t has its executor processes (starting, serving or draining). */
bool sv_tenant_running(const struct sv_tenant *t)
{
	return t->nr_exec > 0 && t->ex[0].ep;
}

/* Its executors' tgids into pids, each once (lanes share one); how many (0 when none runs). */
static int tenant_pids(const struct sv_tenant *t, pid_t *pids)
{
	int n = 0;

	for (int x = 0; x < t->nr_exec; x++) {
		bool seen = false;

		if (!t->ex[x].ep)
			continue;
		for (int i = 0; i < n && !seen; i++)
			seen = pids[i] == execproc_pid(t->ex[x].ep);
		if (!seen)
			pids[n++] = execproc_pid(t->ex[x].ep);
	}
	return n;
}

static void notify_state(struct serving *s, struct sv_tenant *t, enum serving_tenant_state state,
			 const pid_t *pids, int nr_pids)
{
	if (s->tenant_changed)
		s->tenant_changed(s->ctx, t->name, state, pids, nr_pids);
}

/* As notify_state, with the pids of the executors t runs now. */
void sv_notify_running(struct serving *s, struct sv_tenant *t, enum serving_tenant_state state)
{
	pid_t pids[SERVING_MAX_EXECUTORS];

	notify_state(s, t, state, pids, tenant_pids(t, pids));
}

/* ---- executors -------------------------------------------------------------- */

/* x's fds watched: 0, or the watch's negative errno with none. */
static int watch_executor(struct serving *s, struct sv_exec *x)
{
	int ret;

	if (!s->watch)
		return 0;
	ret = s->watch(s->ctx, execproc_done_fd(x->ep), true);
	if (ret)
		return ret;
	ret = s->watch(s->ctx, execproc_pidfd(x->ep), true);
	if (ret) {
		s->watch(s->ctx, execproc_done_fd(x->ep), false);
		return ret;
	}
	if (execproc_log_fd(x->ep) >= 0 && (ret = s->watch(s->ctx, execproc_log_fd(x->ep), true))) {
		s->watch(s->ctx, execproc_pidfd(x->ep), false);
		s->watch(s->ctx, execproc_done_fd(x->ep), false);
	}
	return ret;
}

static void unwatch_log(struct serving *s, struct execproc *ep)
{
	if (s->watch && execproc_log_fd(ep) >= 0)
		s->watch(s->ctx, execproc_log_fd(ep), false);
}

/* Reaped: its last fd unwatched, its handle freed. */
void sv_free_retired(struct serving *s, struct sv_retired **pp)
{
	struct sv_retired *r = *pp;

	if (s->watch)
		s->watch(s->ctx, execproc_pidfd(r->ep), false);
	unwatch_log(s, r->ep);
	execproc_free(r->ep);
	*pp = r->next;
	free(r);
}

/*
 * x's process leaves the tenant without colocd waiting for it: one already
 * reaped is freed; another is asked to exit (graceful, idle) or killed, and
 * kept, its pidfd watched, until it is gone (SV_STOP_MS, then SIGKILL).
 */
static void retire_executor(struct serving *s, struct sv_exec *x, bool graceful)
{
	struct sv_retired *r = calloc(1, sizeof(*r));

	if (s->watch)
		s->watch(s->ctx, execproc_done_fd(x->ep), false);
	if (!r || execproc_reaped(x->ep)) {
		/* out of memory: the one blocking wait left, for the kernel's teardown */
		if (s->watch)
			s->watch(s->ctx, execproc_pidfd(x->ep), false);
		unwatch_log(s, x->ep);
		execproc_free(x->ep);
		free(r);
		x->ep = NULL;
		return;
	}
	if (graceful) {
		execproc_stop_begin(x->ep);
		r->kill_at_ns = coloc_now_ns() + SV_STOP_MS * 1000000ull;
	} else {
		execproc_signal_kill(x->ep);
	}
	r->ep = x->ep;
	r->next = s->retired;
	s->retired = r;
	x->ep = NULL;
}

void sv_close_executors(struct serving *s, struct sv_tenant *t, bool graceful)
{
	for (int i = 0; i < t->nr_exec; i++) {
		struct sv_exec *x = &t->ex[i];

		if (x->ep)
			retire_executor(s, x, graceful);
	}
}

/*
 * A start that failed: t's executors retired, each reaped through the loop
 * by its pidfd, watched here when watch_pidfd, or, where that is not
 * watched, by serving_tick (serving_next_timeout_ms asks for it).
 */
static void retire_after_failed_start(struct serving *s, struct sv_tenant *t, bool watch_pidfd)
{
	for (int i = 0; i < t->nr_exec; i++) {
		struct execproc *ep = t->ex[i].ep;
		bool watched;

		if (!ep)
			continue;
		watched = !s->watch || (watch_pidfd && !s->watch(s->ctx, execproc_pidfd(ep), true));
		retire_executor(s, &t->ex[i], false);
		if (!watched && s->retired && s->retired->ep == ep)
			s->retired->unwatched = true;
	}
}

void sv_free_tenant(struct serving *s, struct sv_tenant *t)
{
	sv_profile_load_end(s, t);
	sv_close_executors(s, t, false);
	free(t->summary);
	free(t->versions);
	policy_table_free(&t->table);
	free(t->model_name);
	if (t->model_fd > 0)
		close(t->model_fd);
	if (t->weights_fd > 0)
		close(t->weights_fd);
	for (int i = 0; i < t->nr_external; i++) {
		free((char *)t->external[i].location);
		close(t->external[i].fd);
	}
	for (int i = 0; i < SERVING_MAX_EXECUTORS; i++) {
		free(t->ex[i].blk_versions);
		free(t->ex[i].plan);
	}
	free(t->scratch);
	if (t->sandboxed)
		sandbox_tenant_close(s->sandbox, t->name);
	memset(t, 0, sizeof(*t));
}

/*
 * An executor is gone or given up on: the tenant's cores back at once, its
 * other executors killed, then every query of the tenant fails with the
 * reason. A tenant being removed goes.
 */
void sv_fail_tenant(struct serving *s, struct sv_tenant *t, const char *why)
{
	pid_t pids[SERVING_MAX_EXECUTORS];
	int nr_pids = tenant_pids(t, pids);

	if (!t->described) {
		sv_admit_refuse(s, t, -EINVAL, why);
		return;
	}

	for (int i = 0; i < t->nr_exec; i++)
		sv_release_block_cores(s, t, &t->ex[i]);
	sv_close_executors(s, t, false);
	t->state = SERVING_TENANT_FAILED;
	snprintf(t->reason, sizeof(t->reason), "%s", why);
	sv_fail_all_queries(s, t, why);
	if (t->removing) {
		notify_state(s, t, SERVING_TENANT_REMOVED, pids, nr_pids);
		sv_free_tenant(s, t);
	} else {
		notify_state(s, t, SERVING_TENANT_FAILED, pids, nr_pids);
	}
	sv_schedule(s);
}

/*
 * All of t's executors, or none of them (the ones started are killed): a
 * process per executor, or (serving_config.executor_lanes) one process with
 * a lane per executor, each lane watched as an executor.
 */
int sv_start_executors(struct serving *s, struct sv_tenant *t, struct coloc_err *err)
{
	struct execproc *eps[SERVING_MAX_EXECUTORS] = { 0 };
	int ret = 0;
	struct execproc_opts o = { .executor = s->executor,
				   .model_fd = t->model_fd,
				   .model_name = t->model_name,
				   .weights_fd = t->weights_fd,
				   .external = t->external,
				   .nr_external = t->nr_external,
				   .tenant = t->name,
				   .cores = s->cores,
				   .slot_in_capacity = t->in_bytes,
				   .slot_out_capacity = t->out_bytes,
				   .roots_tenant = !t->owner };

	if (t->sandboxed) {
		ret = sandbox_tenant_spawn_opts(s->sandbox, t->name, &o, err);
		if (ret)
			return ret;
	}
	for (int i = 0; i < t->nr_exec && !ret; i += s->executor_lanes ? t->nr_exec : 1)
		ret = execproc_spawn_lanes(&o, s->executor_lanes ? t->nr_exec : 1, &eps[i], err);
	for (int i = 0; i < t->nr_exec; i++)
		t->ex[i].ep = eps[i];
	if (ret) {
		/*
		 * Those started before the failure go as any exit does: killed,
		 * then reaped through the loop, never waited for here.
		 */
		retire_after_failed_start(s, t, true);
		return ret;
	}
	for (int i = 0; i < t->nr_exec && !ret; i++) {
		ret = watch_executor(s, &t->ex[i]);
		if (ret)
			coloc_err_set(err, ret, "tenant %s: cannot watch its executor: %s", t->name,
				      strerror(-ret));
	}
	if (ret) {
		retire_after_failed_start(s, t, false);
		return ret;
	}
	t->state = SERVING_TENANT_STARTING;
	t->reason[0] = '\0';
	t->uid = s->next_uid++;
	t->started_ns = coloc_now_ns();
	sv_notify_running(s, t, t->state);
	return 0;
}

/* Drained: the executors stop, the tenant goes. */
void sv_finish_removal(struct serving *s, struct sv_tenant *t)
{
	pid_t pids[SERVING_MAX_EXECUTORS];
	int nr_pids = tenant_pids(t, pids);

	sv_close_executors(s, t, true);
	notify_state(s, t, SERVING_TENANT_REMOVED, pids, nr_pids);
	sv_free_tenant(s, t);
}

void sv_drop_tenant(struct serving *s, struct sv_tenant *t)
{
	pid_t pids[SERVING_MAX_EXECUTORS];
	int nr_pids = tenant_pids(t, pids);

	for (int i = 0; i < t->nr_exec; i++)
		sv_release_block_cores(s, t, &t->ex[i]);
	sv_close_executors(s, t, false);
	sv_fail_all_queries(s, t, "removed before it served");
	notify_state(s, t, SERVING_TENANT_REMOVED, pids, nr_pids);
	sv_free_tenant(s, t);
}

/* ---- tenants ---------------------------------------------------------------- */

int serving_remove(struct serving *s, const char *name, struct coloc_err *err)
{
	struct sv_tenant *t = sv_find_tenant(s, name);
	struct coloc_err gone = { 0 };

	if (!t)
		return coloc_err_set(err, -ENOENT, "no tenant %s", name);
	t->removing = true;
	if (!t->described) {
		coloc_err_set(&gone, -ECANCELED, "tenant %s was removed before it was admitted",
			      name);
		sv_admit_refuse(s, t, gone.code, gone.msg);
		sv_schedule(s);
		return 0;
	}
	if (t->state == SERVING_TENANT_FAILED || t->state == SERVING_TENANT_STARTING) {
		pid_t pids[SERVING_MAX_EXECUTORS];
		int nr_pids = tenant_pids(t, pids);

		sv_close_executors(s, t, false);
		sv_fail_all_queries(s, t, "removed before it served");
		notify_state(s, t, SERVING_TENANT_REMOVED, pids, nr_pids);
		sv_free_tenant(s, t);
		sv_schedule(s);
		return 0;
	}
	t->state = SERVING_TENANT_DRAINING;
	sv_notify_running(s, t, t->state);
	if (!t->nr_queries && !sv_tenant_busy(t))
		sv_finish_removal(s, t);
	return 0;
}

int serving_restart(struct serving *s, const char *name, struct coloc_err *err)
{
	struct sv_tenant *t = sv_find_tenant(s, name);

	if (!t)
		return coloc_err_set(err, -ENOENT, "no tenant %s", name);
	if (t->state != SERVING_TENANT_FAILED)
		return coloc_err_set(err, -EINVAL, "tenant %s is %s; only a failed one restarts",
				     name, serving_state_name(t->state));
	return sv_start_executors(s, t, err);
}
