// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving core (serving.h): tenants with their executor processes and
 * their queries; admission is in serving_admit.c, the policy rounds in
 * serving_round.c, a query alone's blocks planned ahead into one command
 * in serving_plan.c, executor events (completions, deaths, deadlines) in
 * serving_events.c, what status shows in serving_view.c.
 *
 * A policy round (sv_schedule) runs after anything that could allow a
 * decision: an arrival, a completion, a tenant coming, failing or going.
 * Executor events come through serving_handle_fd (a completion or a death)
 * and serving_tick (hung blocks, executors that never got ready); a death
 * returns the tenant's cores before its queries are failed.
 *
 * Executors: a tenant has nr_exec of them, all started, ready and failed
 * together; a queued query takes a slot on the one with the fewest queries
 * (serving_round.c), and one that has not started may move to another that
 * is idle when the policy decides its first block.
 *
 * Cores: a block's cores leave the free set and are owned by its tenant
 * (owner[], core_changed) until it finishes; the executor pins one team
 * thread per core. Under a policy that shares cores (os) decisions overlap:
 * cores never leave the free set, no core has an owner (core_changed is
 * never called, so colocd's core_owner map shows every core free), and the
 * executor runs the block unpinned on its cores (execproc_block.shared),
 * the kernel sharing them between tenants.
 *
 * Completion callbacks run last on a query, after it has left every list,
 * and may call serving_submit (a round in progress then repeats); they must
 * not call serving_remove, serving_restart or serving_destroy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cpulist.h"
#include "input_memfd.h"
#include "isa_probe.h"
#include "profile_table.h"
#include "sandbox.h"
#include "serving_internal.h"
#include "topology.h"

uint64_t sv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct sv_tenant *sv_find_tenant(const struct serving *s, const char *name)
{
	for (int i = 0; i < SV_MAX_TENANTS; i++)
		if (s->tenants[i].used && !strcmp(s->tenants[i].name, name))
			return (struct sv_tenant *)&s->tenants[i];
	return NULL;
}

static int tenant_index(const struct serving *s, const struct sv_tenant *t)
{
	return (int)(t - s->tenants);
}

int sv_tenant_busy(const struct sv_tenant *t)
{
	int n = 0;

	for (int x = 0; x < t->nr_exec; x++)
		n += t->ex[x].busy;
	return n;
}

int sv_blocks_in_flight(const struct serving *s)
{
	int n = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++)
		if (s->tenants[i].used)
			n += sv_tenant_busy(&s->tenants[i]);
	return n;
}

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

/* ---- queries ---------------------------------------------------------------- */

static void unlink_query(struct serving *s, struct sv_tenant *t, struct sv_query *q)
{
	struct sv_query **pp = &t->head, *prev = NULL;

	while (*pp && *pp != q) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (!*pp)
		return;
	*pp = q->next;
	if (t->tail == q)
		t->tail = prev;
	if (q->slot >= 0)
		t->ex[q->exec].slots[q->slot] = NULL;
	t->nr_queries--;
	s->nr_live--;
}

/* Takes q off every list, counts it, calls back, frees it. */
void sv_complete_query(struct serving *s, struct sv_tenant *t, struct sv_query *q,
		       enum serving_status status, const char *reason)
{
	uint64_t now = sv_now_ns();
	struct serving_completion c = { .query_id = q->id,
					.tenant = t->name,
					.status = status,
					.reason = reason ? reason : "",
					.latency_ns = now - q->arrival_ns,
					.exec_ns = q->exec_ns,
					.parts = q->parts };

	c.parts.ns[COLOC_PART_REPLY] = now - q->mark_ns;
	if (status == SERVING_QUERY_OK) {
		c.output = execproc_output(t->ex[q->exec].ep, (unsigned int)q->slot);
		c.output_bytes = t->out_bytes;
		serving_stats_served(&t->stats, now, c.latency_ns, t->qos_ns, &c.parts);
	} else if (status == SERVING_QUERY_DROPPED) {
		t->stats.dropped++;
		snprintf(t->stats.last_drop, sizeof(t->stats.last_drop), "%s", c.reason);
	} else {
		t->stats.failed++;
		snprintf(t->stats.last_failure, sizeof(t->stats.last_failure), "%s", c.reason);
	}
	unlink_query(s, t, q);
	if (q->done)
		q->done(q->ctx, &c);
	sv_query_drop_input(s, q);
	free(q);
}

static void fail_all_queries(struct serving *s, struct sv_tenant *t, const char *why)
{
	char reason[SERVING_REASON_LEN], prefix[SERVING_NAME_LEN + 16];

	/* execproc's reasons name the tenant already */
	snprintf(prefix, sizeof(prefix), "tenant %s: ", t->name);
	snprintf(reason, sizeof(reason), "%s%s", strncmp(why, prefix, strlen(prefix)) ? prefix : "",
		 why);
	while (t->head)
		sv_complete_query(s, t, t->head, SERVING_QUERY_FAILED, reason);
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
		r->kill_at_ns = sv_now_ns() + SV_STOP_MS * 1000000ull;
	} else {
		execproc_signal_kill(x->ep);
	}
	r->ep = x->ep;
	r->next = s->retired;
	s->retired = r;
	x->ep = NULL;
}

void sv_release_block_cores(struct serving *s, struct sv_tenant *t, struct sv_exec *x)
{
	int idx = tenant_index(s, t);
	uint64_t now = sv_now_ns();

	if (!x->busy)
		return;
	for (int c = policy_cpuset_next(&x->blk.cores, 0); c >= 0;
	     c = policy_cpuset_next(&x->blk.cores, c + 1)) {
		s->core_idle_since[c] = now;
		if (s->owner[c] == idx) {
			s->owner[c] = -1;
			policy_cpuset_set(&s->free, c);
			if (s->core_changed)
				s->core_changed(s->ctx, c, NULL, 0, 0, 0);
		}
	}
	x->busy = false;
	if (x->blk_query)
		x->blk_query->in_flight = false;
	x->blk_query = NULL;
}

static void close_executors(struct serving *s, struct sv_tenant *t, bool graceful)
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
	close_executors(s, t, false);
	free(t->summary);
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
	close_executors(s, t, false);
	t->state = SERVING_TENANT_FAILED;
	snprintf(t->reason, sizeof(t->reason), "%s", why);
	fail_all_queries(s, t, why);
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
				   .slot_out_capacity = t->out_bytes };

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
	t->started_ns = sv_now_ns();
	sv_notify_running(s, t, t->state);
	return 0;
}

/* Drained: the executors stop, the tenant goes. */
void sv_finish_removal(struct serving *s, struct sv_tenant *t)
{
	pid_t pids[SERVING_MAX_EXECUTORS];
	int nr_pids = tenant_pids(t, pids);

	close_executors(s, t, true);
	notify_state(s, t, SERVING_TENANT_REMOVED, pids, nr_pids);
	sv_free_tenant(s, t);
}

void sv_drop_tenant(struct serving *s, struct sv_tenant *t)
{
	pid_t pids[SERVING_MAX_EXECUTORS];
	int nr_pids = tenant_pids(t, pids);

	for (int i = 0; i < t->nr_exec; i++)
		sv_release_block_cores(s, t, &t->ex[i]);
	close_executors(s, t, false);
	fail_all_queries(s, t, "removed before it served");
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

		close_executors(s, t, false);
		fail_all_queries(s, t, "removed before it served");
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

void sv_query_drop_input(struct serving *s, struct sv_query *q)
{
	free(q->input);
	q->input = NULL;
	if (q->input_fd >= 0) {
		close(q->input_fd);
		q->input_fd = -1;
		s->nr_input_fds--;
	}
}

static int owner_queued(const struct serving *s, uid_t owner)
{
	int tenants, executors, queued;

	sv_owner_usage(s, owner, &tenants, &executors, &queued);
	return queued;
}

int serving_submit(struct serving *s, const char *tenant, const void *input, size_t len,
		   serving_done_fn done, void *ctx, uint64_t *query_id, struct coloc_err *err)
{
	void *copy = malloc(len ? len : 1);
	int ret;

	if (!copy)
		return coloc_err_set(err, -ENOMEM, "out of memory queueing a query of %s", tenant);
	memcpy(copy, input, len);
	ret = serving_submit_take(s, tenant, &copy, len, done, ctx, query_id, err);
	free(copy);
	return ret;
}

/*
 * One query, its input a malloc'd copy (*input) or a checked memfd
 * (*input_fd, from offset on), taken on 0.
 */
static int submit_query(struct serving *s, const char *tenant, void **input, int *input_fd,
			size_t offset, size_t len, serving_done_fn done, void *ctx,
			uint64_t *query_id, struct coloc_err *err)
{
	struct sv_tenant *t = sv_find_tenant(s, tenant);
	uint64_t now = sv_now_ns();
	struct sv_query *q;
	int ret = 0;

	if (!t)
		return coloc_err_set(err, -ENOENT, "no tenant %s", tenant);
	serving_stats_offered(&t->stats, now);
	if (!t->described)
		ret = coloc_err_set(err, -EAGAIN,
				    "tenant %s is being admitted: its executor has not described "
				    "its model yet",
				    tenant);
	else if (len != t->in_bytes)
		ret = coloc_err_set(err, -EINVAL,
				    "tenant %s: the input is %zu bytes, model %s takes %zu", tenant,
				    len, t->model_name, t->in_bytes);
	else if (t->state == SERVING_TENANT_FAILED || t->state == SERVING_TENANT_DRAINING)
		ret = coloc_err_set(err, -EAGAIN, "tenant %s is %s%s%s", tenant,
				    serving_state_name(t->state),
				    t->state == SERVING_TENANT_FAILED ? ": " : "", t->reason);
	else if (t->nr_queries >= s->max_queue)
		ret = coloc_err_set(err, -EAGAIN,
				    "tenant %s has %d queries queued or running, the most it may",
				    tenant, s->max_queue);
	else if (s->nr_live >= s->max_queue_total)
		ret = coloc_err_set(err, -EAGAIN,
				    "%d queries are queued or running over all tenants, the most "
				    "colocd takes",
				    s->max_queue_total);
	else if (t->owner && s->max_queued_per_uid &&
		 owner_queued(s, t->owner) >= s->max_queued_per_uid)
		ret = coloc_err_set(err, -EAGAIN,
				    "uid %u's tenants have %d queries queued or running, its quota "
				    "(colocd --max-queued-per-uid raises it)",
				    (unsigned int)t->owner, s->max_queued_per_uid);
	if (ret) {
		if (ret == -EAGAIN) {
			t->stats.rejected++;
			snprintf(t->stats.last_reject, sizeof(t->stats.last_reject), "%s",
				 coloc_err_str(err));
		}
		return ret;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return coloc_err_set(err, -ENOMEM, "out of memory queueing a query of %s", tenant);
	q->input_fd = -1;
	if (input) {
		q->input = *input;
		*input = NULL;
	} else {
		q->input_fd = *input_fd;
		q->input_offset = offset;
		*input_fd = -1;
		s->nr_input_fds++;
	}
	q->id = ++s->next_query_id;
	q->arrival_ns = q->mark_ns = now;
	q->deadline_ns = now + t->qos_ns;
	q->exec = -1;
	q->slot = -1;
	q->done = done;
	q->ctx = ctx;
	if (t->tail)
		t->tail->next = q;
	else
		t->head = q;
	t->tail = q;
	t->nr_queries++;
	s->nr_live++;
	if (query_id)
		*query_id = q->id;
	sv_schedule(s);
	return 0;
}

int serving_submit_take(struct serving *s, const char *tenant, void **input, size_t len,
			serving_done_fn done, void *ctx, uint64_t *query_id, struct coloc_err *err)
{
	return submit_query(s, tenant, input, NULL, 0, len, done, ctx, query_id, err);
}

int serving_submit_fd(struct serving *s, const char *tenant, int *input_fd, size_t offset,
		      size_t len, serving_done_fn done, void *ctx, uint64_t *query_id,
		      struct coloc_err *err)
{
	struct sv_tenant *t = sv_find_tenant(s, tenant);
	void *copy = NULL;
	int ret;

	/* held, or refused at once: nothing read for a query that is not taken */
	if (s->nr_input_fds < SV_MAX_INPUT_FDS || !t || !t->described || len != t->in_bytes ||
	    t->nr_queries >= s->max_queue || s->nr_live >= s->max_queue_total)
		return submit_query(s, tenant, NULL, input_fd, offset, len, done, ctx, query_id,
				    err);
	/* too many held: this one's bytes are read now, its descriptor left to the caller */
	copy = malloc(len ? len : 1);
	if (!copy)
		return coloc_err_set(err, -ENOMEM, "out of memory queueing a query of %s", tenant);
	ret = input_memfd_read(*input_fd, offset, copy, len);
	if (!ret)
		ret = submit_query(s, tenant, &copy, NULL, 0, len, done, ctx, query_id, err);
	else
		coloc_err_set(err, ret, "reading the input's memfd: %s", strerror(-ret));
	free(copy);
	return ret;
}

/* ---- life ------------------------------------------------------------------- */

static int served_cpus(struct serving *s, const char *list, struct coloc_err *err)
{
	cpu_set_t mask;
	size_t len = 0;

	if (list) {
		s->nr_cpus = cpulist_parse(list, 0, s->cpus, POLICY_MAX_CPUS, err);
		if (s->nr_cpus < 0)
			return s->nr_cpus;
	} else {
		if (sched_getaffinity(0, sizeof(mask), &mask))
			return coloc_err_set(err, -errno, "sched_getaffinity: %s", strerror(errno));
		s->nr_cpus = 0;
		for (int c = 0; c < CPU_SETSIZE && c < POLICY_MAX_CPUS; c++)
			if (CPU_ISSET(c, &mask))
				s->cpus[s->nr_cpus++] = c;
	}
	for (int i = 0; i < s->nr_cpus; i++) {
		int n = snprintf(s->cores + len, sizeof(s->cores) - len, "%s%d", i ? "," : "",
				 s->cpus[i]);

		if (n < 0 || (size_t)n >= sizeof(s->cores) - len)
			return coloc_err_set(err, -E2BIG, "too many CPUs to serve");
		len += (size_t)n;
	}
	return 0;
}

static void fill_topology(struct serving *s)
{
	struct topology *topo;

	if (topology_open(NULL, &topo, NULL))
		return;
	for (int i = 0; i < s->nr_cpus; i++) {
		int llc = topology_cpu_llc(topo, s->cpus[i]);
		int sock = topology_cpu_socket(topo, s->cpus[i]);

		s->pcfg.llc[s->cpus[i]] = llc > 0 ? llc : 0;
		s->pcfg.socket[s->cpus[i]] = sock > 0 ? sock : 0;
	}
	topology_close(topo);
}

/* This machine as profiles name it: the caller's, or with the ISA its executor binary gives. */
static int this_machine(struct serving *s, const struct serving_config *cfg, struct coloc_err *err)
{
	char isa[PROFILE_ISA_LEN];
	int ret;

	if (cfg->machine) {
		s->machine = *cfg->machine;
		return 0;
	}
	ret = isa_probe(s->executor, isa, sizeof(isa), err);
	if (!ret && (ret = profile_machine_detect_isa(&s->machine, isa)))
		coloc_err_set(err, ret, "cannot identify this machine for the profile cache: %s",
			      strerror(-ret));
	return ret;
}

int serving_create(const struct serving_config *cfg, struct serving **out, struct coloc_err *err)
{
	const char *name = cfg->policy ? cfg->policy : SERVING_DEFAULT_POLICY;
	struct serving *s = calloc(1, sizeof(*s));
	int ret;

	*out = NULL;
	if (!s)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	s->entry = policy_find(name);
	if (!s->entry) {
		ret = coloc_err_set(err, -EINVAL, "no policy '%s'", name);
		goto fail;
	}
	s->max_queue = cfg->max_queue > 0 ? cfg->max_queue : SERVING_DEFAULT_QUEUE;
	s->max_queue_total =
		cfg->max_queue_total > 0 ? cfg->max_queue_total : SERVING_DEFAULT_QUEUE_TOTAL;
	s->max_tenants_per_uid = cfg->max_tenants_per_uid > 0 ? cfg->max_tenants_per_uid : 0;
	s->max_executors_per_uid = cfg->max_executors_per_uid > 0 ? cfg->max_executors_per_uid : 0;
	s->max_queued_per_uid = cfg->max_queued_per_uid > 0 ? cfg->max_queued_per_uid : 0;
	s->watch = cfg->watch;
	s->tenant_changed = cfg->tenant_changed;
	s->core_changed = cfg->core_changed;
	s->tenant_cores = cfg->tenant_cores;
	s->sandbox = cfg->sandbox;
	s->block_done = cfg->block_done;
	s->ctx = cfg->ctx;
	ret = served_cpus(s, cfg->cores, err);
	if (ret)
		goto fail;
	for (int c = 0; c < POLICY_MAX_CPUS; c++)
		s->owner[c] = -1;
	for (int i = 0; i < s->nr_cpus; i++) {
		policy_cpuset_set(&s->pcfg.online, s->cpus[i]);
		policy_cpuset_set(&s->free, s->cpus[i]);
	}
	fill_topology(s);
	s->pcfg.late = cfg->late_serve ? POLICY_LATE_SERVE : POLICY_LATE_DROP;
	s->plan_ahead = !cfg->no_plan_ahead;
	s->executor_lanes = cfg->executor_lanes;
	s->executor = cfg->executor ? strdup(cfg->executor) : NULL;
	s->cache_dir = cfg->cache_dir ? strdup(cfg->cache_dir) : NULL;
	s->core_sig = calloc(POLICY_MAX_CPUS, sizeof(*s->core_sig));
	s->core_level = calloc(POLICY_MAX_CPUS, sizeof(*s->core_level));
	s->core_sig_now = calloc(POLICY_MAX_CPUS, sizeof(*s->core_sig_now));
	s->dom_sig_now = calloc(POLICY_MAX_CPUS, sizeof(*s->dom_sig_now));
	s->pqueries = calloc(s->max_queue_total, sizeof(*s->pqueries));
	if ((cfg->executor && !s->executor) || (cfg->cache_dir && !s->cache_dir) || !s->core_sig ||
	    !s->core_level || !s->core_sig_now || !s->dom_sig_now || !s->pqueries) {
		ret = coloc_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	s->policy = policy_create(s->entry, &s->pcfg, err);
	if (!s->policy) {
		ret = err && err->code ? err->code : -EINVAL;
		goto fail;
	}
	ret = this_machine(s, cfg, err);
	if (ret)
		goto fail;
	s->next_uid = 1;
	*out = s;
	return 0;
fail:
	serving_destroy(s);
	return ret;
}

void serving_destroy(struct serving *s)
{
	if (!s)
		return;
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		if (!t->used)
			continue;
		if (!t->described) {
			sv_admit_refuse(s, t, -ESHUTDOWN, "colocd stopped serving");
			continue;
		}
		for (int x = 0; x < t->nr_exec; x++)
			sv_release_block_cores(s, t, &t->ex[x]);
		close_executors(s, t, false);
		fail_all_queries(s, t, "colocd stopped serving");
		sv_free_tenant(s, t);
	}
	/* shutting down: the one place that waits for the kernel to tear them down */
	while (s->retired)
		sv_free_retired(s, &s->retired);
	while (s->holds)
		serving_release(s, s->holds);
	policy_destroy(s->policy);
	free(s->pqueries);
	free(s->core_sig);
	free(s->core_level);
	free(s->core_sig_now);
	free(s->dom_sig_now);
	free(s->versions);
	free(s->plan_versions);
	free(s->executor);
	free(s->cache_dir);
	free(s);
}
