// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving core (serving.h) on a query's way in: serving_submit* queues
 * it on its tenant, and a policy round (sv_schedule) gives queued queries
 * free executor slots (policy/assign.h, as coloc-sim assigns them), hands
 * the policy every query that could run now, checks what it decided,
 * starts each block on its executor (execproc_submit_block) and completes
 * the drops. Also here: each core's level estimated from finished blocks
 * (policy/level_estimate.h, as coloc-sim estimates it). A tenant's
 * executor processes are in serving_tenant.c, admission in
 * serving_admit.c, plan ahead in serving_plan.c, executor events in
 * serving_events.c, what status shows in serving_view.c, serving_create
 * and serving_destroy in serving_create.c.
 *
 * A round runs after anything that could allow a decision: an arrival, a
 * completion (serving_handle_fd), a tenant coming, failing or going.
 * A tenant's nr_exec executors are started, ready and failed together; a
 * queued query takes a slot on the one with the fewest queries, and one
 * that has not started may move to another that is idle when the policy
 * decides its first block.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fd_closer.h"
#include "input_memfd.h"
#include "serving_internal.h"
#include "mono_clock.h"

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

/*
 * q's output read out of its slot into a buffer of colocd's (execproc_read_output:
 * never through the mapping); NULL with why in reason if it cannot be.
 */
static void *read_output(struct sv_tenant *t, struct sv_query *q, char *reason, size_t len)
{
	struct coloc_err err = { 0 };
	void *out = malloc(t->out_bytes ? t->out_bytes : 1);

	if (!out)
		coloc_err_set(&err, -ENOMEM, "out of memory reading the output");
	else if (!execproc_read_output(t->ex[q->exec].ep, (unsigned int)q->slot, out, &err))
		return out;
	free(out);
	snprintf(reason, len, "%s", coloc_err_str(&err));
	return NULL;
}

/* Takes q off every list, counts it, calls back, frees it. */
void sv_complete_query(struct serving *s, struct sv_tenant *t, struct sv_query *q,
		       enum serving_status status, const char *reason)
{
	uint64_t now = coloc_now_ns();
	struct serving_completion c = { .query_id = q->id,
					.tenant = t->name,
					.status = status,
					.reason = reason ? reason : "",
					.latency_ns = now - q->arrival_ns,
					.exec_ns = q->exec_ns,
					.parts = q->parts };
	char unread[SERVING_REASON_LEN];
	void *output = NULL;

	if (status == SERVING_QUERY_OK && !(output = read_output(t, q, unread, sizeof(unread)))) {
		c.status = SERVING_QUERY_FAILED;
		c.reason = unread;
	}
	c.parts.ns[COLOC_PART_REPLY] = now - q->mark_ns;
	if (c.status == SERVING_QUERY_OK) {
		c.output = output;
		c.output_bytes = t->out_bytes;
		serving_stats_served(&t->stats, now, c.latency_ns, t->qos_ns, &c.parts);
	} else if (c.status == SERVING_QUERY_DROPPED) {
		t->stats.dropped++;
		snprintf(t->stats.last_drop, sizeof(t->stats.last_drop), "%s", c.reason);
	} else {
		t->stats.failed++;
		snprintf(t->stats.last_failure, sizeof(t->stats.last_failure), "%s", c.reason);
	}
	unlink_query(s, t, q);
	if (q->done)
		q->done(q->ctx, &c);
	sv_query_drop_input(s, t, q);
	free(output);
	free(q);
}

void sv_fail_all_queries(struct serving *s, struct sv_tenant *t, const char *why)
{
	char reason[SERVING_REASON_LEN], prefix[SERVING_NAME_LEN + 16];

	/* execproc's reasons name the tenant already */
	snprintf(prefix, sizeof(prefix), "tenant %s: ", t->name);
	snprintf(reason, sizeof(reason), "%s%s", strncmp(why, prefix, strlen(prefix)) ? prefix : "",
		 why);
	while (t->head)
		sv_complete_query(s, t, t->head, SERVING_QUERY_FAILED, reason);
}

void sv_query_drop_input(struct serving *s, struct sv_tenant *t, struct sv_query *q)
{
	free(q->input);
	q->input = NULL;
	t->inputs_held -= q->input_held;
	q->input_held = 0;
	if (q->input_fd >= 0) {
		fd_closer_close(q->input_fd, t->owner);
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

/* Bytes of queued inputs colocd holds for owner's tenants. */
static size_t owner_inputs_held(const struct serving *s, uid_t owner)
{
	size_t held = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++)
		if (s->tenants[i].used && s->tenants[i].owner == owner)
			held += s->tenants[i].inputs_held;
	return held;
}

static int input_room(const struct serving *s, const struct sv_tenant *t, size_t bytes,
		      struct coloc_err *err)
{
	size_t held;

	if (!t->owner || !s->max_input_bytes_per_uid)
		return 0;
	held = owner_inputs_held(s, t->owner);
	if (held + bytes <= s->max_input_bytes_per_uid)
		return 0;
	return coloc_err_set(err, -EAGAIN,
			     "owner uid %u holds %.1f MiB of queued inputs, limit %.1f MiB (colocd "
			     "--max-input-mib-per-uid raises it; an input sent in a memfd is not "
			     "counted)",
			     (unsigned int)t->owner, (double)held / (1 << 20),
			     (double)s->max_input_bytes_per_uid / (1 << 20));
}

int serving_input_room(const struct serving *s, const char *tenant, size_t bytes,
		       struct coloc_err *err)
{
	const struct sv_tenant *t = sv_find_tenant(s, tenant);

	return t ? input_room(s, t, bytes, err) : 0;
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
	uint64_t now = coloc_now_ns();
	struct sv_query *q;
	int ret = 0;

	if (!t)
		return coloc_err_set(err, -ENOENT, "no tenant %s", tenant);
	serving_stats_offered(&t->stats, now);
	if (!t->described)
		ret = coloc_err_set(err, -EAGAIN,
				    "tenant %s is being admitted: its executor has not described "
				    "its model and got ready yet",
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
	else if (input)
		ret = input_room(s, t, len, err);
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
		q->input_held = len;
		t->inputs_held += len;
	} else {
		q->input_fd = *input_fd;
		q->input_offset = offset;
		q->input_frozen = input_memfd_frozen(q->input_fd, offset, len);
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

/* ---- the round -------------------------------------------------------------- */

bool sv_tenant_serving(const struct sv_tenant *t)
{
	return t->used && t->nr_exec > 0 && t->ex[0].ep &&
	       (t->state == SERVING_TENANT_READY || t->state == SERVING_TENANT_DRAINING);
}

/* t's executors as the assignment sees them (policy/assign.h). */
struct exec_views {
	struct policy_slot_view slot[SERVING_MAX_EXECUTORS][COLOC_SHM_NR_SLOTS];
	struct policy_exec_view ex[SERVING_MAX_EXECUTORS];
};

static struct policy_slot_view slot_view(const struct sv_query *q)
{
	if (!q)
		return (struct policy_slot_view){ 0 };
	return (struct policy_slot_view){ .used = true,
					  .started = q->next_layer > 0,
					  .in_flight = q->in_flight,
					  .arrival_ns = q->arrival_ns };
}

static void view_executors(const struct sv_tenant *t, struct exec_views *v)
{
	for (int x = 0; x < t->nr_exec; x++) {
		for (int k = 0; k < COLOC_SHM_NR_SLOTS; k++)
			v->slot[x][k] = slot_view(t->ex[x].slots[k]);
		v->ex[x] = (struct policy_exec_view){ .busy = t->ex[x].busy,
						      .nr_slots = COLOC_SHM_NR_SLOTS,
						      .slot = v->slot[x] };
	}
}

/* q's memfd read into slot of executor x: 0 or a negative errno. */
static int read_memfd_into_slot(struct sv_tenant *t, const struct sv_query *q, int x, int slot)
{
	return input_memfd_read(q->input_fd, q->input_offset,
				execproc_input(t->ex[x].ep, (unsigned int)slot), t->in_bytes);
}

/*
 * Query q's input into slot of executor x: a copy of ours or a read of its
 * memfd (0), or nothing yet where its frozen memfd goes along with its
 * first block (1, submit_with_input). A negative errno when the read fails.
 */
static int input_to_slot(struct sv_tenant *t, struct sv_query *q, int x, int slot)
{
	if (q->input) {
		memcpy(execproc_input(t->ex[x].ep, (unsigned int)slot), q->input, t->in_bytes);
		return 0;
	}
	if (q->input_frozen && execproc_takes_input_memfd(t->ex[x].ep))
		return 1;
	return read_memfd_into_slot(t, q, x, slot);
}

/* Queued queries of a serving tenant take free slots (policy_assign_slot), in arrival order. */
static void fill_slots(struct serving *s, struct sv_tenant *t)
{
	struct coloc_err err = { 0 };
	struct exec_views v;

	if (!sv_tenant_serving(t))
		return;
	view_executors(t, &v);
	for (struct sv_query *q = t->head, *next; q; q = next) {
		int best, slot, r;

		next = q->next;
		if (q->slot >= 0)
			continue;
		best = policy_assign_slot(v.ex, t->nr_exec);
		if (best < 0)
			return;
		slot = policy_assign_free_slot(&v.ex[best]);
		/* the executor broke the protocol: the tenant fails when it is gone */
		if (execproc_input_allocated(t->ex[best].ep, (unsigned int)slot, &err)) {
			sv_complete_query(s, t, q, SERVING_QUERY_FAILED, coloc_err_str(&err));
			return;
		}
		/* a memfd is read straight into the slot: the input's one copy in colocd */
		r = input_to_slot(t, q, best, slot);
		if (r < 0) { /* never run on what it did not send: the slot stays free */
			char reason[SERVING_REASON_LEN];

			snprintf(reason, sizeof(reason), "reading the input's memfd: %s",
				 strerror(-r));
			sv_complete_query(s, t, q, SERVING_QUERY_FAILED, reason);
			continue;
		}
		if (!r)
			sv_query_drop_input(s, t, q);
		q->exec = best;
		q->slot = slot;
		t->ex[best].slots[slot] = q;
		v.slot[best][slot] = slot_view(q);
	}
}

double sv_core_level(const struct serving *s, int c, uint64_t now)
{
	if (s->core_sig[c].live & POLICY_SIG_LEVEL_PMU)
		return policy_level_core_aged(&s->core_level[c], now);
	return policy_level_core_level(&s->core_level[c], now);
}

static void age_signals(struct serving *s, uint64_t now)
{
	for (int i = 0; i < s->nr_cpus; i++) {
		int c = s->cpus[i];

		s->core_sig_now[c] = s->core_sig[c];
		s->core_sig_now[c].slowdown = sv_core_level(s, c, now);
	}
	policy_domain_signals(&s->pcfg, s->core_sig_now, s->dom_sig_now);
}

static void build_input(struct serving *s, struct policy_input *in)
{
	uint64_t now = coloc_now_ns();
	int nq = 0, nr = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];
		struct policy_tenant *pt = &s->ptenants[i];
		struct exec_views v;

		memset(pt, 0, sizeof(*pt));
		if (!sv_tenant_serving(t))
			continue;
		pt->costs = &t->table.costs;
		pt->uid = t->uid;
		pt->qos_ns = t->qos_ns;
		pt->sig = t->sig;
		/* its processes, one block at a time each, but those late (serving_overrun.c) */
		pt->executors = t->strikes ? 1 : t->nr_exec - sv_tenant_late(t);
		for (int x = 0; x < t->nr_exec; x++)
			if (t->ex[x].busy && !t->ex[x].late)
				s->running[nr++] = t->ex[x].blk;
		view_executors(t, &v);
		for (struct sv_query *q = t->head; q; q = q->next) {
			/* what the policy sees: the queries in flight and those that could start */
			if (!q->in_flight &&
			    (q->slot < 0 || !sv_overrun_may_start(t) ||
			     !policy_assign_runnable(v.ex, t->nr_exec, q->exec, q->slot)))
				continue;
			s->pqueries[nq++] = (struct policy_query){ .id = q->id,
								   .tenant = i,
								   .arrival_ns = q->arrival_ns,
								   .deadline_ns = q->deadline_ns,
								   .next_layer = q->next_layer,
								   .in_flight = q->in_flight };
		}
	}
	age_signals(s, now);
	*in = (struct policy_input){ .now_ns = now,
				     .tenants = s->ptenants,
				     .nr_tenants = SV_MAX_TENANTS,
				     .queries = s->pqueries,
				     .nr_queries = nq,
				     .running = s->running,
				     .nr_running = nr,
				     .free = &s->free,
				     .cores = s->core_sig_now,
				     .domains = s->dom_sig_now,
				     .core_idle_since_ns = s->core_idle_since };
}

static struct sv_query *find_query(struct sv_tenant *t, uint64_t id)
{
	for (struct sv_query *q = t->head; q; q = q->next)
		if (q->id == id)
			return q;
	return NULL;
}

static void apply_drop(struct serving *s, const struct policy_drop *d)
{
	struct sv_tenant *t = &s->tenants[d->tenant];
	struct sv_query *q = find_query(t, d->query_id);
	char reason[SERVING_REASON_LEN];
	uint64_t now = coloc_now_ns();

	if (!q)
		return;
	if (d->reason == POLICY_DROP_CANNOT_MEET)
		snprintf(reason, sizeof(reason),
			 "%s: %.3f ms predicted for the rest, %.3f ms left to its deadline",
			 policy_drop_reason_name(d->reason), d->predicted_ns / 1e6,
			 q->deadline_ns > now ? (q->deadline_ns - now) / 1e6 : 0.0);
	else
		snprintf(reason, sizeof(reason), "%s: %.3f ms after arrival, QoS %.3f ms",
			 policy_drop_reason_name(d->reason), (now - q->arrival_ns) / 1e6,
			 t->qos_ns / 1e6);
	sv_complete_query(s, t, q, SERVING_QUERY_DROPPED, reason);
}

/*
 * Moves q (not started) into slot `slot` of executor to (policy_assign_move_slot's):
 * a free one, or one whose query has not started either, which takes q's
 * old slot (the inputs swapped through t->scratch). -EPROTO, nothing moved,
 * if either executor gave the slot's pages back.
 */
static int move_query(struct sv_tenant *t, struct sv_query *q, int to, int slot,
		      struct coloc_err *err)
{
	struct sv_exec *from = &t->ex[q->exec], *x = &t->ex[to];
	struct sv_query *other = x->slots[slot];

	if (execproc_input_allocated(x->ep, (unsigned int)slot, err) ||
	    execproc_input_allocated(from->ep, (unsigned int)q->slot, err))
		return -EPROTO;
	if (other)
		memcpy(t->scratch, execproc_input(x->ep, (unsigned int)slot), t->in_bytes);
	memcpy(execproc_input(x->ep, (unsigned int)slot),
	       execproc_input(from->ep, (unsigned int)q->slot), t->in_bytes);
	from->slots[q->slot] = other;
	if (other) {
		memcpy(execproc_input(from->ep, (unsigned int)q->slot), t->scratch, t->in_bytes);
		other->exec = q->exec;
		other->slot = q->slot;
	}
	x->slots[slot] = q;
	q->exec = to;
	q->slot = slot;
	t->moved++;
	return 0;
}

/*
 * The executor q's next block runs on (policy_assign_executor), q moved
 * there if need be; -1: none, err set if it is because q could not move.
 */
static int executor_for(struct sv_tenant *t, struct sv_query *q, struct coloc_err *err)
{
	struct exec_views v;
	int e;

	view_executors(t, &v);
	e = policy_assign_executor(v.ex, t->nr_exec, q->exec, q->slot);
	if (e >= 0 && e != q->exec && move_query(t, q, e, policy_assign_move_slot(&v.ex[e]), err))
		return -1;
	return e;
}

/*
 * The hook where a tenant's held cores change: the block's cores with those
 * of its other blocks in flight, before the block starts on them.
 */
static void tell_tenant_cores(struct serving *s, const struct sv_tenant *t, const int *cpus, int nr)
{
	int held[POLICY_MAX_CPUS], n = 0;
	struct policy_cpuset set = { 0 };

	if (!s->tenant_cores)
		return;
	for (int i = 0; i < nr; i++)
		policy_cpuset_set(&set, cpus[i]);
	for (int x = 0; x < t->nr_exec; x++)
		for (int c = t->ex[x].busy ? policy_cpuset_next(&t->ex[x].blk.cores, 0) : -1;
		     c >= 0; c = policy_cpuset_next(&t->ex[x].blk.cores, c + 1))
			policy_cpuset_set(&set, c);
	for (int c = policy_cpuset_next(&set, 0); c >= 0; c = policy_cpuset_next(&set, c + 1))
		held[n++] = c;
	s->tenant_cores(s->ctx, t->name, held, n);
}

/* x's command as execproc takes it: its plan's blocks, versions and d's cores. */
static void command_of(const struct serving *s, const struct sv_query *q, const struct sv_exec *x,
		       unsigned int *ends, int *ncores, int *versions, int *cpus, int nr_cpus,
		       struct execproc_block *b)
{
	int last = x->plan[x->plan_nr - 1].last;

	for (int i = 0; i < x->plan_nr; i++) {
		ends[i] = (unsigned int)x->plan[i].last;
		ncores[i] = x->plan[i].nr_cores;
	}
	for (int i = 0; i < last - x->blk.first_layer; i++)
		versions[i] = x->blk_versions[i];
	*b = (struct execproc_block){ .slot = (unsigned int)q->slot,
				      .first = (unsigned int)x->blk.first_layer,
				      .last = (unsigned int)last,
				      .block_last = ends,
				      .block_cores = ncores,
				      .nr_blocks = x->plan_nr,
				      .query_id = (unsigned int)q->id,
				      .versions = versions,
				      .cpus = cpus,
				      .nr_cpus = nr_cpus,
				      .shared = s->entry->shares_cores };
}

/*
 * Submits b to executor x; a query's first block with its memfd, still
 * held where it is frozen (input_to_slot), which then goes along, or where
 * the executor's input socket is full, is read into the slot after all.
 */
static int submit_with_input(struct sv_tenant *t, struct sv_query *q, int x,
			     struct execproc_block *b, struct coloc_err *err)
{
	int ret;

	if (q->input_fd < 0 || b->first)
		return execproc_submit_block(t->ex[x].ep, b, err);
	b->input_memfd = &q->input_fd;
	ret = execproc_submit_block(t->ex[x].ep, b, err);
	if (ret == -EAGAIN) {
		b->input_memfd = NULL;
		*err = (struct coloc_err){ 0 };
		ret = execproc_input_allocated(t->ex[x].ep, (unsigned int)q->slot, err);
		if (!ret)
			ret = read_memfd_into_slot(t, q, x, q->slot);
		if (ret && !err->code)
			coloc_err_set(err, ret, "reading the input's memfd: %s", strerror(-ret));
		if (!ret)
			ret = execproc_submit_block(t->ex[x].ep, b, err);
	} else if (!ret) {
		t->inputs_mapped++;
	}
	return ret;
}

/*
 * Starts d's block (and the plan ahead of it, serving_plan.c); false when
 * it could not be: the query failed, or none of its tenant's executors can
 * take it now (*refused set: the policy counts a tenant's idle executors,
 * not which of them holds which query, so two decisions of a round may
 * want the same one). in and nr_decisions: the round that decided it.
 */
static bool apply_decision(struct serving *s, const struct policy_input *in, int nr_decisions,
			   const struct policy_decision *d, bool *refused)
{
	struct sv_tenant *t = &s->tenants[d->tenant];
	struct sv_query *q = find_query(t, d->query_id);
	int n = d->last_layer - d->first_layer, nr_cpus = 0, e;
	int versions[COLOC_SHM_MAX_BLOCK_LAYERS], cpus[POLICY_MAX_CPUS];
	unsigned int ends[COLOC_SHM_MAX_PLAN_BLOCKS];
	int ncores[COLOC_SHM_MAX_PLAN_BLOCKS];
	struct coloc_err err = { 0 };
	struct execproc_block b;
	struct sv_exec *x;

	if (!q || q->slot < 0 || n > COLOC_SHM_MAX_BLOCK_LAYERS)
		return false;
	e = executor_for(t, q, &err);
	if (e < 0 && err.code) {
		sv_complete_query(s, t, q, SERVING_QUERY_FAILED, coloc_err_str(&err));
		return false;
	}
	if (e < 0) {
		*refused = true;
		return false;
	}
	x = &t->ex[e];
	x->blk = *d;
	memcpy(x->blk_versions, d->versions, (size_t)n);
	x->blk.versions = x->blk_versions;
	sv_plan_make(s, in, nr_decisions, x);
	for (int c = policy_cpuset_next(&x->blk.cores, 0); c >= 0;
	     c = policy_cpuset_next(&x->blk.cores, c + 1))
		cpus[nr_cpus++] = c;
	tell_tenant_cores(s, t, cpus, nr_cpus);
	sv_tenant_hold(s, t, true);
	command_of(s, q, x, ends, ncores, versions, cpus, nr_cpus, &b);
	if (submit_with_input(t, q, e, &b, &err)) {
		sv_complete_query(s, t, q, SERVING_QUERY_FAILED, coloc_err_str(&err));
		sv_tenant_hold(s, t, false);
		return false;
	}
	if (q->input_fd >= 0 && !b.first)
		sv_query_drop_input(s, t, q);
	x->busy = true;
	x->blk_query = q;
	x->blk_submit_ns = coloc_now_ns();
	x->over_since_ns = 0;
	x->blk_corunners = sv_blocks_in_flight(s) - sv_tenant_busy(t);
	q->in_flight = true;
	/* shared cores (os) stay free for the other tenants and have no one owner */
	for (int i = 0; i < nr_cpus && !s->entry->shares_cores; i++) {
		s->owner[cpus[i]] = d->tenant;
		policy_cpuset_clear(&s->free, cpus[i]);
		if (s->core_changed)
			s->core_changed(s->ctx, cpus[i], t->name, q->id, d->first_layer,
					(int)b.last);
	}
	return true;
}

void sv_schedule(struct serving *s)
{
	struct policy_output out = { .decisions = s->decisions,
				     .max_decisions = SV_MAX_TENANTS * SERVING_MAX_EXECUTORS,
				     .versions = s->versions,
				     .max_versions = s->max_versions,
				     .drops = s->drops,
				     .max_drops = (int)(sizeof(s->drops) / sizeof(*s->drops)) };
	int rounds = 0;

	sv_plan_yield(s);
	if (s->scheduling) {
		s->again = true;
		return;
	}
	s->scheduling = true;
	do {
		struct policy_input in;
		struct coloc_err err = { 0 };
		bool progress = false, refused = false;

		s->again = false;
		for (int i = 0; i < SV_MAX_TENANTS; i++)
			fill_slots(s, &s->tenants[i]);
		build_input(s, &in);
		if (!in.nr_queries)
			break;
		policy_output_reset(&out);
		/*
		 * A policy that errs or breaks its contract decides nothing this
		 * round: queries wait (their deadlines still apply at the next).
		 */
		if (policy_decide(s->policy, &in, &out, &err) ||
		    policy_check_output(s->entry, &in, &out, &err)) {
			s->policy_errors++;
			snprintf(s->policy_error, sizeof(s->policy_error), "%s",
				 coloc_err_str(&err));
			break;
		}
		for (int i = 0; i < out.nr_decisions; i++)
			progress |= apply_decision(s, &in, out.nr_decisions, &out.decisions[i],
						   &refused);
		for (int i = 0; i < out.nr_drops; i++)
			apply_drop(s, &out.drops[i]);
		progress |= out.nr_drops > 0;
		/* a refused decision: the next round sees which executors the others took */
		if (progress && (refused || out.nr_drops || out.nr_decisions == out.max_decisions))
			s->again = true;
	} while (s->again && ++rounds < SV_MAX_ROUNDS);
	s->scheduling = false;
	sv_tenant_idle_flush(s);
	/* a drop may have taken a draining tenant's last query: no event of its own follows */
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		if (t->used && t->removing && t->state == SERVING_TENANT_DRAINING &&
		    !t->nr_queries && !sv_tenant_busy(t))
			sv_finish_removal(s, t);
	}
}

void sv_update_slowdown(struct serving *s, struct sv_tenant *t, const struct policy_decision *d,
			uint64_t ns, bool alone)
{
	uint64_t now = coloc_now_ns();
	struct policy_level_evidence ev;

	if (!policy_level_tenant_block(&t->level, d->alone_ns, ns, alone, &ev))
		return;
	for (int c = policy_cpuset_next(&d->cores, 0); c >= 0;
	     c = policy_cpuset_next(&d->cores, c + 1)) {
		/* the PMU level model measures this core's level (serving_signal.c) */
		if (s->core_sig[c].live & POLICY_SIG_LEVEL_PMU)
			continue;
		policy_level_core_block(&s->core_level[c], &ev, now);
		s->core_sig[c].live |= POLICY_SIG_SLOWDOWN;
	}
}

void sv_release_block_cores(struct serving *s, struct sv_tenant *t, struct sv_exec *x)
{
	int idx = tenant_index(s, t);
	uint64_t now = coloc_now_ns();

	if (!x->busy)
		return;
	/* a late command's cores went back when it overran (serving_overrun.c) */
	for (int c = x->late ? -1 : policy_cpuset_next(&x->blk.cores, 0); c >= 0;
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
	x->late = false;
	if (x->blk_query)
		x->blk_query->in_flight = false;
	x->blk_query = NULL;
	sv_tenant_hold(s, t, false);
}
