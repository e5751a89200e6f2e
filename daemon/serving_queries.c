// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving core's queries (serving.h) on their way in and out:
 * serving_submit* checks the room its owner has for inputs and queues a
 * query on its tenant (a copy of its input, or its memfd held); a query
 * completes (done, failed or dropped) off every list, counted, its
 * callback last. A query that will surely start at once rings its
 * executor's doorbell early, before its round (ring_early).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fd_closer.h"
#include "input_memfd.h"
#include "serving_internal.h"
#include "mono_clock.h"

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
		t->input_fds--;
	}
}

static int owner_queued(const struct serving *s, uid_t owner)
{
	int tenants, executors, queued;

	sv_owner_usage(s, owner, &tenants, &executors, &queued);
	return queued;
}

/* Whether a query of t may hold its memfd: room in all, and in its owner's share. */
static bool may_hold_input_fd(const struct serving *s, const struct sv_tenant *t)
{
	int held = 0;

	if (s->nr_input_fds >= SV_MAX_INPUT_FDS)
		return false;
	for (int i = 0; i < SV_MAX_TENANTS; i++)
		if (s->tenants[i].used && s->tenants[i].owner == t->owner)
			held += s->tenants[i].input_fds;
	return held < SV_MAX_INPUT_FDS_PER_UID;
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
			     "--max-input-mib-per-uid raises it; a memfd's input counts only past "
			     "the %d memfds a uid's queries hold)",
			     (unsigned int)t->owner, (double)held / (1 << 20),
			     (double)s->max_input_bytes_per_uid / (1 << 20),
			     SV_MAX_INPUT_FDS_PER_UID);
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

/* Queries queued or running over all members' tenants (root's share is the rest). */
static int members_queued(const struct serving *s)
{
	int n = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++)
		if (s->tenants[i].used && s->tenants[i].owner)
			n += s->tenants[i].nr_queries;
	return n;
}

/*
 * Every refusal a query of t meets, for both ways in, before anything of
 * its input is read: 0, or the error with why in err (-EAGAIN counted as
 * rejected). copied: colocd would hold a copy of the input, counted
 * against its owner's input quota.
 */
static int query_refusal(struct serving *s, struct sv_tenant *t, size_t len, bool copied,
			 struct coloc_err *err)
{
	int ret = 0;

	if (!t->described)
		ret = coloc_err_set(err, -EAGAIN,
				    "tenant %s is being admitted: its executor has not described "
				    "its model and got ready yet",
				    t->name);
	else if (len != t->in_bytes)
		ret = coloc_err_set(err, -EINVAL,
				    "tenant %s: the input is %zu bytes, model %s takes %zu",
				    t->name, len, t->model_name, t->in_bytes);
	else if (t->state == SERVING_TENANT_FAILED || t->state == SERVING_TENANT_DRAINING)
		ret = coloc_err_set(err, -EAGAIN, "tenant %s is %s%s%s", t->name,
				    serving_state_name(t->state),
				    t->state == SERVING_TENANT_FAILED ? ": " : "", t->reason);
	else if (t->nr_queries >= s->max_queue)
		ret = coloc_err_set(err, -EAGAIN,
				    "tenant %s has %d queries queued or running, the most it may",
				    t->name, s->max_queue);
	else if (s->nr_live >= s->max_queue_total)
		ret = coloc_err_set(err, -EAGAIN,
				    "%d queries are queued or running over all tenants, the most "
				    "colocd takes",
				    s->max_queue_total);
	else if (t->owner &&
		 members_queued(s) >= s->max_queue_total - SERVING_ROOT_SHARE(s->max_queue_total))
		ret = coloc_err_set(err, -EAGAIN,
				    "members' tenants have %d queries queued or running, the most "
				    "members may (the rest of colocd's %d is root's)",
				    s->max_queue_total - SERVING_ROOT_SHARE(s->max_queue_total),
				    s->max_queue_total);
	else if (t->owner && s->max_queued_per_uid &&
		 owner_queued(s, t->owner) >= s->max_queued_per_uid)
		ret = coloc_err_set(err, -EAGAIN,
				    "uid %u's tenants have %d queries queued or running, its quota "
				    "(colocd --max-queued-per-uid raises it)",
				    (unsigned int)t->owner, s->max_queued_per_uid);
	else if (copied)
		ret = input_room(s, t, len, err);
	if (ret == -EAGAIN) {
		t->stats.rejected++;
		snprintf(t->stats.last_reject, sizeof(t->stats.last_reject), "%s",
			 coloc_err_str(err));
	}
	return ret;
}

/* The tenant a query is offered to, counted as offered; NULL with -ENOENT in err. */
static struct sv_tenant *offered_to(struct serving *s, const char *tenant, struct coloc_err *err)
{
	struct sv_tenant *t = sv_find_tenant(s, tenant);

	if (!t) {
		coloc_err_set(err, -ENOENT, "no tenant %s", tenant);
		return NULL;
	}
	serving_stats_offered(&t->stats, coloc_now_ns());
	return t;
}

/*
 * t's query just queued will surely start now when it is the only one and
 * no block runs: its executor's team threads wake while colocd decides the
 * block (docs/design/serving-path.md, "The doorbell rung early"), on the
 * cores its last block held, all free, but the one colocd runs on (a
 * thread spinning there would take it from colocd's round). Only for a
 * tenant of one executor under a policy that gives blocks cores of their own.
 */
static void ring_early(struct serving *s, struct sv_tenant *t)
{
	struct sv_exec *x = &t->ex[0];
	int cpus[POLICY_MAX_CPUS], nr = 0, self = sched_getcpu();

	if (s->entry->shares_cores || s->nr_live != 1 || t->nr_exec != 1 || !x->ep || x->busy ||
	    !sv_tenant_serving(t) || sv_blocks_in_flight(s))
		return;
	for (int c = policy_cpuset_next(&x->blk.cores, 0); c >= 0;
	     c = policy_cpuset_next(&x->blk.cores, c + 1))
		if (c != self && policy_cpuset_test(&s->free, c))
			cpus[nr++] = c;
	if (execproc_ring_early(x->ep, cpus, nr))
		t->early_rings++;
}

/*
 * Queues a query query_refusal() let through, its input a malloc'd copy
 * (*input) or a checked memfd (*input_fd, from offset on), taken on 0.
 */
static int queue_query(struct serving *s, struct sv_tenant *t, void **input, int *input_fd,
		       size_t offset, size_t len, serving_done_fn done, void *ctx,
		       uint64_t *query_id, struct coloc_err *err)
{
	uint64_t now = coloc_now_ns();
	struct sv_query *q = calloc(1, sizeof(*q));

	if (!q)
		return coloc_err_set(err, -ENOMEM, "out of memory queueing a query of %s", t->name);
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
		t->input_fds++;
	}
	q->id = ++s->next_query_id;
	q->arrival_ns = q->mark_ns = now;
	policy_arrivals_note(&t->arrivals, now);
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
	ring_early(s, t);
	sv_schedule(s);
	return 0;
}

int serving_submit_take(struct serving *s, const char *tenant, void **input, size_t len,
			serving_done_fn done, void *ctx, uint64_t *query_id, struct coloc_err *err)
{
	struct sv_tenant *t = offered_to(s, tenant, err);
	int ret;

	if (!t)
		return -ENOENT;
	ret = query_refusal(s, t, len, true, err);
	return ret ? ret : queue_query(s, t, input, NULL, 0, len, done, ctx, query_id, err);
}

int serving_submit_fd(struct serving *s, const char *tenant, int *input_fd, size_t offset,
		      size_t len, serving_done_fn done, void *ctx, uint64_t *query_id,
		      struct coloc_err *err)
{
	struct sv_tenant *t = offered_to(s, tenant, err);
	void *copy;
	bool held;
	int ret;

	if (!t)
		return -ENOENT;
	held = may_hold_input_fd(s, t);
	ret = query_refusal(s, t, len, !held, err);
	if (ret)
		return ret;
	if (held)
		return queue_query(s, t, NULL, input_fd, offset, len, done, ctx, query_id, err);
	/* past the held share, and taken: read now, the descriptor left to the caller */
	copy = malloc(len ? len : 1);
	if (!copy)
		return coloc_err_set(err, -ENOMEM, "out of memory queueing a query of %s", tenant);
	ret = input_memfd_read(*input_fd, offset, copy, len);
	if (!ret)
		ret = queue_query(s, t, &copy, NULL, 0, len, done, ctx, query_id, err);
	else
		coloc_err_set(err, ret, "reading the input's memfd: %s", strerror(-ret));
	free(copy);
	return ret;
}
