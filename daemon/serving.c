// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving core (serving.h): tenants with their executor processes,
 * their queries, and the policy rounds that turn queued queries into
 * blocks on cores.
 *
 * A round (sv_schedule) runs after anything that could allow a decision:
 * an arrival, a completion, a tenant coming, failing or going. It first
 * moves queued queries into free executor slots (copying their inputs into
 * the shared memory), then shows the policy every query that holds a slot,
 * except that a tenant whose executor is running a block shows only that
 * block's query: an executor runs one block at a time, so the policy must
 * not give a tenant a second one. Decisions are started at once; drops
 * complete their queries. Per-core interference (the policy's slowdown
 * signal) is measured without a PMU: each finished block's time over the
 * table's alone time for it, smoothed per core.
 *
 * Completion callbacks run last on a query, after it has left every list,
 * and may call serving_submit (a round in progress then repeats); they must
 * not call serving_remove, serving_restart or serving_destroy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cpulist.h"
#include "execproc.h"
#include "model.h"
#include "policy.h"
#include "profile_table.h"
#include "serving.h"
#include "topology.h"

#define SV_MAX_TENANTS POLICY_MAX_TENANTS
#define SV_MAX_ROUNDS 16 /* decide calls per round before leaving the rest to the next event */
#define SV_SLOWDOWN_WEIGHT 0.3 /* weight of a new block in a core's smoothed slowdown */
#define SV_STOP_MS 100 /* an idle executor answers EXIT in microseconds */

struct sv_query {
	uint64_t id;
	uint64_t arrival_ns, deadline_ns;
	int next_layer;
	uint64_t exec_ns; /* sum of its blocks' times inside the executor */
	int slot; /* -1 while it waits for one */
	bool in_flight;
	void *input; /* our copy until it is in a slot */
	serving_done_fn done;
	void *ctx;
	struct sv_query *next;
};

struct sv_tenant {
	bool used;
	bool removing;
	enum serving_tenant_state state;
	char name[SERVING_NAME_LEN];
	char reason[SERVING_REASON_LEN];
	char *model_path, *weights_path;
	uint64_t qos_ns, solo_ns, uid, started_ns;
	struct model *model;
	struct profile_table table;
	size_t in_bytes, out_bytes;
	struct execproc *ep;
	struct sv_query *head, *tail; /* queued and in flight, by arrival */
	int nr_queries;
	struct sv_query *slots[COLOC_SHM_NR_SLOTS];
	/* the block in flight */
	bool busy;
	struct sv_query *blk_query;
	struct policy_decision blk;
	uint8_t *blk_versions; /* [nr_layers] */
	uint64_t blk_submit_ns;
	struct serving_stats stats;
	unsigned int order; /* admission order, for listing */
};

struct serving {
	char *executor, *cache_dir;
	int max_queue, max_queue_total;
	void (*watch)(void *ctx, int fd, bool add);
	void (*tenant_changed)(void *ctx, const char *name, enum serving_tenant_state state,
			       pid_t pid);
	void *ctx;

	const struct policy_entry *entry;
	struct policy *policy;
	struct policy_config pcfg;
	struct policy_cpuset free;
	int cpus[POLICY_MAX_CPUS], nr_cpus;
	char cores[8192]; /* cpus as a CPU list, for the executors */
	int owner[POLICY_MAX_CPUS]; /* tenant whose block holds the CPU, or -1 */
	struct policy_signal *core_sig; /* [POLICY_MAX_CPUS] */

	struct sv_tenant tenants[SV_MAX_TENANTS];
	uint64_t next_uid, next_query_id;
	unsigned int next_order;
	int nr_live; /* queries accepted and not completed, all tenants */

	/* one round's scratch */
	struct policy_tenant ptenants[SV_MAX_TENANTS];
	struct policy_query *pqueries; /* [max_queue_total] */
	struct policy_decision running[SV_MAX_TENANTS];
	struct policy_decision decisions[SV_MAX_TENANTS];
	struct policy_drop drops[SV_MAX_TENANTS * COLOC_SHM_NR_SLOTS];
	uint8_t *versions;
	int max_versions;
	bool scheduling, again;
	uint64_t policy_errors;
	char policy_error[COLOC_ERR_MSG_MAX];
};

static const char *const state_names[] = {
	[SERVING_TENANT_STARTING] = "starting",
	[SERVING_TENANT_READY] = "ready",
	[SERVING_TENANT_DRAINING] = "draining",
	[SERVING_TENANT_FAILED] = "failed",
};

static const char *const status_names[] = {
	[SERVING_QUERY_OK] = "ok",
	[SERVING_QUERY_DROPPED] = "dropped",
	[SERVING_QUERY_FAILED] = "failed",
};

const char *serving_state_name(enum serving_tenant_state s)
{
	return (unsigned int)s < sizeof(state_names) / sizeof(*state_names) ? state_names[s] : "?";
}

const char *serving_status_name(enum serving_status s)
{
	return (unsigned int)s < sizeof(status_names) / sizeof(*status_names) ? status_names[s] :
										"?";
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct sv_tenant *find_tenant(const struct serving *s, const char *name)
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

static void notify_state(struct serving *s, struct sv_tenant *t)
{
	if (s->tenant_changed)
		s->tenant_changed(s->ctx, t->name, t->state, t->ep ? execproc_pid(t->ep) : 0);
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
		t->slots[q->slot] = NULL;
	t->nr_queries--;
	s->nr_live--;
}

/* Takes q off every list, counts it, calls back, frees it. */
static void complete_query(struct serving *s, struct sv_tenant *t, struct sv_query *q,
			   enum serving_status status, const char *reason)
{
	uint64_t now = now_ns();
	struct serving_completion c = { .query_id = q->id,
					.tenant = t->name,
					.status = status,
					.reason = reason ? reason : "",
					.latency_ns = now - q->arrival_ns,
					.exec_ns = q->exec_ns };

	if (status == SERVING_QUERY_OK) {
		c.output = execproc_output(t->ep, (unsigned int)q->slot);
		c.output_bytes = t->out_bytes;
		serving_stats_served(&t->stats, now, c.latency_ns, t->qos_ns);
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
	free(q->input);
	free(q);
}

static void fail_all_queries(struct serving *s, struct sv_tenant *t, const char *why)
{
	char reason[SERVING_REASON_LEN];

	snprintf(reason, sizeof(reason), "tenant %s: %s", t->name, why);
	while (t->head)
		complete_query(s, t, t->head, SERVING_QUERY_FAILED, reason);
}

/* ---- executors -------------------------------------------------------------- */

static void watch_executor(struct serving *s, struct sv_tenant *t, bool add)
{
	if (!s->watch || !t->ep)
		return;
	s->watch(s->ctx, execproc_done_fd(t->ep), add);
	s->watch(s->ctx, execproc_pidfd(t->ep), add);
}

static void release_block_cores(struct serving *s, struct sv_tenant *t)
{
	int idx = tenant_index(s, t);

	if (!t->busy)
		return;
	for (int c = policy_cpuset_next(&t->blk.cores, 0); c >= 0;
	     c = policy_cpuset_next(&t->blk.cores, c + 1))
		if (s->owner[c] == idx) {
			s->owner[c] = -1;
			policy_cpuset_set(&s->free, c);
		}
	t->busy = false;
	if (t->blk_query)
		t->blk_query->in_flight = false;
	t->blk_query = NULL;
}

static void close_executor(struct serving *s, struct sv_tenant *t, bool graceful)
{
	if (!t->ep)
		return;
	watch_executor(s, t, false);
	if (graceful)
		execproc_stop(t->ep, SV_STOP_MS, NULL);
	execproc_free(t->ep);
	t->ep = NULL;
}

static void free_tenant(struct serving *s, struct sv_tenant *t)
{
	close_executor(s, t, false);
	model_free(t->model);
	profile_table_free(&t->table);
	free(t->model_path);
	free(t->weights_path);
	free(t->blk_versions);
	memset(t, 0, sizeof(*t));
	(void)s;
}

static void sv_schedule(struct serving *s);

/*
 * The executor is gone or given up on: cores back at once, then every
 * query of the tenant fails with the reason. A tenant being removed goes.
 */
static void fail_tenant(struct serving *s, struct sv_tenant *t, const char *why)
{
	release_block_cores(s, t);
	close_executor(s, t, false);
	t->state = SERVING_TENANT_FAILED;
	snprintf(t->reason, sizeof(t->reason), "%s", why);
	fail_all_queries(s, t, why);
	if (t->removing) {
		free_tenant(s, t);
	} else {
		notify_state(s, t);
	}
	sv_schedule(s);
}

static int start_executor(struct serving *s, struct sv_tenant *t, struct coloc_err *err)
{
	struct execproc_opts o = { .executor = s->executor,
				   .model_path = t->model_path,
				   .weights_path = t->weights_path,
				   .tenant = t->name,
				   .cores = s->cores,
				   .slot_in_capacity = t->in_bytes,
				   .slot_out_capacity = t->out_bytes };
	int ret = execproc_spawn(&o, &t->ep, err);

	if (ret)
		return ret;
	t->state = SERVING_TENANT_STARTING;
	t->reason[0] = '\0';
	t->uid = s->next_uid++;
	t->started_ns = now_ns();
	watch_executor(s, t, true);
	notify_state(s, t);
	return 0;
}

/* Drained: the executor stops, the tenant goes. */
static void finish_removal(struct serving *s, struct sv_tenant *t)
{
	close_executor(s, t, true);
	free_tenant(s, t);
}

/* ---- policy rounds ---------------------------------------------------------- */

/* Queued queries of a serving tenant take free slots, in arrival order. */
static void fill_slots(struct sv_tenant *t)
{
	if (!t->ep || (t->state != SERVING_TENANT_READY && t->state != SERVING_TENANT_DRAINING))
		return;
	for (struct sv_query *q = t->head; q; q = q->next) {
		unsigned int slot;

		if (q->slot >= 0)
			continue;
		for (slot = 0; slot < COLOC_SHM_NR_SLOTS && t->slots[slot]; slot++)
			;
		if (slot == COLOC_SHM_NR_SLOTS)
			return;
		memcpy(execproc_input(t->ep, slot), q->input, t->in_bytes);
		free(q->input);
		q->input = NULL;
		q->slot = (int)slot;
		t->slots[slot] = q;
	}
}

static bool tenant_serving(const struct sv_tenant *t)
{
	return t->used && t->ep &&
	       (t->state == SERVING_TENANT_READY || t->state == SERVING_TENANT_DRAINING);
}

static void build_input(struct serving *s, struct policy_input *in)
{
	int nq = 0, nr = 0;

	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];
		struct policy_tenant *pt = &s->ptenants[i];

		memset(pt, 0, sizeof(*pt));
		if (!tenant_serving(t))
			continue;
		pt->model = &t->table.model;
		pt->uid = t->uid;
		pt->qos_ns = t->qos_ns;
		if (t->busy)
			s->running[nr++] = t->blk;
		for (struct sv_query *q = t->head; q; q = q->next) {
			if (q->slot < 0 || (t->busy && q != t->blk_query))
				continue;
			s->pqueries[nq++] = (struct policy_query){ .id = q->id,
								   .tenant = i,
								   .arrival_ns = q->arrival_ns,
								   .deadline_ns = q->deadline_ns,
								   .next_layer = q->next_layer,
								   .in_flight = q->in_flight };
		}
	}
	*in = (struct policy_input){ .now_ns = now_ns(),
				     .tenants = s->ptenants,
				     .nr_tenants = SV_MAX_TENANTS,
				     .queries = s->pqueries,
				     .nr_queries = nq,
				     .running = s->running,
				     .nr_running = nr,
				     .free = &s->free,
				     .cores = s->core_sig };
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
	uint64_t now = now_ns();

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
	complete_query(s, t, q, SERVING_QUERY_DROPPED, reason);
}

/* Starts d's block; false when it could not be (the query failed, or the executor is busy). */
static bool apply_decision(struct serving *s, const struct policy_decision *d)
{
	struct sv_tenant *t = &s->tenants[d->tenant];
	struct sv_query *q = find_query(t, d->query_id);
	int n = d->last_layer - d->first_layer, nr_cpus = 0;
	int versions[COLOC_SHM_MAX_BLOCK_LAYERS], cpus[POLICY_MAX_CPUS];
	struct coloc_err err = { 0 };
	struct execproc_block b;

	if (!q || t->busy || n > COLOC_SHM_MAX_BLOCK_LAYERS)
		return false;
	for (int i = 0; i < n; i++)
		versions[i] = d->versions[i];
	for (int c = policy_cpuset_next(&d->cores, 0); c >= 0;
	     c = policy_cpuset_next(&d->cores, c + 1))
		cpus[nr_cpus++] = c;
	b = (struct execproc_block){ .slot = (unsigned int)q->slot,
				     .first = (unsigned int)d->first_layer,
				     .last = (unsigned int)d->last_layer,
				     .query_id = (unsigned int)q->id,
				     .versions = versions,
				     .cpus = cpus,
				     .nr_cpus = nr_cpus };
	if (execproc_submit_block(t->ep, &b, &err)) {
		complete_query(s, t, q, SERVING_QUERY_FAILED, coloc_err_str(&err));
		return false;
	}
	t->busy = true;
	t->blk_query = q;
	t->blk = *d;
	memcpy(t->blk_versions, d->versions, (size_t)n);
	t->blk.versions = t->blk_versions;
	t->blk_submit_ns = now_ns();
	q->in_flight = true;
	for (int i = 0; i < nr_cpus; i++) {
		s->owner[cpus[i]] = d->tenant;
		policy_cpuset_clear(&s->free, cpus[i]);
	}
	return true;
}

static void sv_schedule(struct serving *s)
{
	struct policy_output out = { .decisions = s->decisions,
				     .max_decisions = SV_MAX_TENANTS,
				     .versions = s->versions,
				     .max_versions = s->max_versions,
				     .drops = s->drops,
				     .max_drops = (int)(sizeof(s->drops) / sizeof(*s->drops)) };
	int rounds = 0;

	if (s->scheduling) {
		s->again = true;
		return;
	}
	s->scheduling = true;
	do {
		struct policy_input in;
		struct coloc_err err = { 0 };
		bool progress = false;

		s->again = false;
		for (int i = 0; i < SV_MAX_TENANTS; i++)
			fill_slots(&s->tenants[i]);
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
			progress |= apply_decision(s, &out.decisions[i]);
		for (int i = 0; i < out.nr_drops; i++)
			apply_drop(s, &out.drops[i]);
		progress |= out.nr_drops > 0;
		if (progress && (out.nr_drops || out.nr_decisions == out.max_decisions))
			s->again = true;
	} while (s->again && ++rounds < SV_MAX_ROUNDS);
	s->scheduling = false;
	/* a drop may have taken a draining tenant's last query: no event of its own follows */
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		if (t->used && t->removing && t->state == SERVING_TENANT_DRAINING &&
		    !t->nr_queries && !t->busy)
			finish_removal(s, t);
	}
}

/* ---- events ----------------------------------------------------------------- */

static void update_slowdown(struct serving *s, const struct policy_decision *d, uint64_t ns)
{
	double ratio;

	if (!d->alone_ns || !ns)
		return;
	ratio = (double)ns / (double)d->alone_ns;
	for (int c = policy_cpuset_next(&d->cores, 0); c >= 0;
	     c = policy_cpuset_next(&d->cores, c + 1)) {
		struct policy_signal *sig = &s->core_sig[c];

		sig->slowdown = sig->live & POLICY_SIG_SLOWDOWN ?
					(1 - SV_SLOWDOWN_WEIGHT) * sig->slowdown +
						SV_SLOWDOWN_WEIGHT * ratio :
					ratio;
		sig->live |= POLICY_SIG_SLOWDOWN;
	}
}

static void block_finished(struct serving *s, struct sv_tenant *t, const struct execproc_result *r)
{
	struct sv_query *q = t->blk_query;
	uint64_t measured = r->block_ns ? r->block_ns : r->round_trip_ns;
	char reason[SERVING_REASON_LEN + 64];

	if (!t->busy || !q)
		return;
	if (r->status == COLOC_SHM_DONE_OK) {
		policy_block_done(s->policy, &t->blk, measured);
		update_slowdown(s, &t->blk, measured);
	}
	release_block_cores(s, t);
	if (r->status != COLOC_SHM_DONE_OK) {
		snprintf(reason, sizeof(reason), "layers [%u, %u) %s: %s", r->first, r->last,
			 r->status == COLOC_SHM_DONE_REFUSED ? "refused" : "failed", r->reason);
		complete_query(s, t, q, SERVING_QUERY_FAILED, reason);
		return;
	}
	q->exec_ns += r->block_ns;
	q->next_layer = t->blk.last_layer;
	if (q->next_layer >= t->model->nr_layers)
		complete_query(s, t, q, SERVING_QUERY_OK, NULL);
}

static void poll_tenant(struct serving *s, struct sv_tenant *t)
{
	struct execproc_result res;
	struct coloc_err err = { 0 };
	int ret;

	if (!t->ep)
		return;
	ret = execproc_poll(t->ep, &res, &err);
	if (ret < 0) {
		fail_tenant(s, t, coloc_err_str(&err));
		return;
	}
	if (t->state == SERVING_TENANT_STARTING && execproc_ready(t->ep)) {
		const struct coloc_shm_header *h = execproc_header(t->ep);

		if (h->in_bytes != t->in_bytes || h->out_bytes != t->out_bytes ||
		    (int)h->nr_layers != t->model->nr_layers) {
			char why[SERVING_REASON_LEN];

			snprintf(why, sizeof(why),
				 "the executor loaded %u layers with %llu input and %llu output "
				 "bytes; the model has %d, %zu and %zu",
				 h->nr_layers, (unsigned long long)h->in_bytes,
				 (unsigned long long)h->out_bytes, t->model->nr_layers, t->in_bytes,
				 t->out_bytes);
			fail_tenant(s, t, why);
			return;
		}
		t->state = t->removing ? SERVING_TENANT_DRAINING : SERVING_TENANT_READY;
		notify_state(s, t);
	}
	if (ret == 1)
		block_finished(s, t, &res);
	if (t->removing && !t->nr_queries && !t->busy)
		finish_removal(s, t);
}

void serving_handle_fd(struct serving *s, int fd)
{
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];

		if (t->used && t->ep &&
		    (execproc_done_fd(t->ep) == fd || execproc_pidfd(t->ep) == fd)) {
			poll_tenant(s, t);
			break;
		}
	}
	sv_schedule(s);
}

static uint64_t hang_deadline(const struct sv_tenant *t)
{
	uint64_t predicted = t->blk.predicted_ns ? t->blk.predicted_ns : t->blk.alone_ns;

	return t->blk_submit_ns + SERVING_HANG_FACTOR * predicted + SERVING_HANG_SLACK_NS;
}

void serving_tick(struct serving *s)
{
	uint64_t now = now_ns();

	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		struct sv_tenant *t = &s->tenants[i];
		char why[SERVING_REASON_LEN];

		if (!t->used || !t->ep)
			continue;
		poll_tenant(s, t);
		if (!t->used || !t->ep)
			continue;
		if (t->state == SERVING_TENANT_STARTING &&
		    now - t->started_ns > SERVING_START_TIMEOUT_NS) {
			snprintf(why, sizeof(why),
				 "the executor was not ready after %.0f s: killed",
				 SERVING_START_TIMEOUT_NS / 1e9);
			fail_tenant(s, t, why);
		} else if (t->busy && now > hang_deadline(t)) {
			snprintf(why, sizeof(why),
				 "hung: the block of layers [%d, %d) of query %llu ran %.1f ms, "
				 "%.1f ms predicted (the limit is %dx + %.1f s): killed",
				 t->blk.first_layer, t->blk.last_layer,
				 (unsigned long long)t->blk.query_id,
				 (now - t->blk_submit_ns) / 1e6, t->blk.predicted_ns / 1e6,
				 SERVING_HANG_FACTOR, SERVING_HANG_SLACK_NS / 1e9);
			execproc_kill(t->ep);
			fail_tenant(s, t, why);
		}
	}
	sv_schedule(s);
}

int serving_next_timeout_ms(const struct serving *s)
{
	uint64_t now = now_ns(), next = UINT64_MAX;

	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		const struct sv_tenant *t = &s->tenants[i];
		uint64_t at = UINT64_MAX;

		if (!t->used || !t->ep)
			continue;
		if (t->state == SERVING_TENANT_STARTING)
			at = t->started_ns + SERVING_START_TIMEOUT_NS;
		else if (t->busy)
			at = hang_deadline(t);
		if (at < next)
			next = at;
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

		if (!t->used || !t->ep)
			continue;
		if (n < max)
			fds[n] = execproc_done_fd(t->ep);
		n++;
		if (n < max)
			fds[n] = execproc_pidfd(t->ep);
		n++;
	}
	return n;
}

/* ---- tenants ---------------------------------------------------------------- */

static bool name_valid(const char *name)
{
	size_t n = strlen(name);

	if (!n || n >= SERVING_NAME_LEN || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

/* One query's input and output bytes, in shm.h's layout. */
static int model_io_bytes(const struct model *m, size_t *in, size_t *out)
{
	bool *read = calloc(m->nr_layers, sizeof(*read));

	if (!read)
		return -ENOMEM;
	*in = *out = 0;
	for (int l = 0; l < m->nr_layers; l++)
		for (int k = 0; k < m->layers[l].nr_inputs; k++)
			read[m->layers[l].inputs[k]] = true;
	for (int l = 0; l < m->nr_layers; l++) {
		size_t bytes = (size_t)model_shape_elems(&m->layers[l].out) * sizeof(float);

		if (m->layers[l].op == MODEL_OP_INPUT)
			*in += bytes;
		if (!read[l])
			*out += bytes;
	}
	free(read);
	return 0;
}

/* out.versions holds SV_MAX_TENANTS whole models of the largest tenant. */
static int grow_versions(struct serving *s, int nr_layers)
{
	int want = SV_MAX_TENANTS * nr_layers;
	uint8_t *v;

	if (want <= s->max_versions)
		return 0;
	v = realloc(s->versions, (size_t)want);
	if (!v)
		return -ENOMEM;
	s->versions = v;
	s->max_versions = want;
	return 0;
}

int serving_admit(struct serving *s, const struct serving_tenant_spec *spec, struct coloc_err *err)
{
	struct sv_tenant *t = NULL;
	struct profile *p;
	int ret;

	if (!spec->name || !name_valid(spec->name))
		return coloc_err_set(err, -EINVAL,
				     "tenant name '%s' is not 1 to %d of letters, digits, '_', "
				     "'.' and '-'",
				     spec->name ? spec->name : "", SERVING_NAME_LEN - 1);
	if (find_tenant(s, spec->name))
		return coloc_err_set(err, -EEXIST, "tenant %s exists; remove it first", spec->name);
	if (!spec->model_path)
		return coloc_err_set(err, -EINVAL, "tenant %s: no model file", spec->name);
	for (int i = 0; i < SV_MAX_TENANTS && !t; i++)
		if (!s->tenants[i].used)
			t = &s->tenants[i];
	if (!t)
		return coloc_err_set(err, -ENOSPC, "%d tenants are served, the most colocd takes",
				     SV_MAX_TENANTS);
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", spec->name);
	t->qos_ns = spec->qos_ns;
	t->model = model_load(spec->model_path, err);
	if (!t->model)
		return err ? err->code : -EINVAL;
	p = profile_table_find(spec->model_path, t->model, s->cache_dir, err);
	if (!p) {
		ret = err ? err->code : -ENOENT;
		goto fail;
	}
	ret = profile_table_build(p, t->model, &t->table, err);
	profile_free(p);
	if (ret)
		goto fail;
	t->solo_ns = policy_model_solo_ns(&t->table.model, s->nr_cpus);
	if (!t->solo_ns || spec->qos_ns < t->solo_ns) {
		ret = coloc_err_set(err, -ERANGE,
				    "tenant %s: QoS %.3f ms is below model %s's profiled solo "
				    "latency %.3f ms on all %d served cores",
				    spec->name, spec->qos_ns / 1e6, t->model->name,
				    t->solo_ns / 1e6, s->nr_cpus);
		goto fail;
	}
	ret = model_io_bytes(t->model, &t->in_bytes, &t->out_bytes);
	if (!ret)
		ret = grow_versions(s, t->model->nr_layers);
	t->blk_versions = calloc(t->model->nr_layers, 1);
	t->model_path = strdup(spec->model_path);
	t->weights_path = spec->weights_path ? strdup(spec->weights_path) : NULL;
	if (ret || !t->blk_versions || !t->model_path || (spec->weights_path && !t->weights_path)) {
		ret = coloc_err_set(err, -ENOMEM, "out of memory admitting %s", spec->name);
		goto fail;
	}
	for (int i = 0; i < COLOC_SHM_NR_SLOTS; i++)
		t->slots[i] = NULL;
	t->used = true;
	t->order = s->next_order++;
	ret = start_executor(s, t, err);
	if (ret)
		goto fail;
	return 0;
fail:
	free_tenant(s, t);
	return ret;
}

int serving_remove(struct serving *s, const char *name, struct coloc_err *err)
{
	struct sv_tenant *t = find_tenant(s, name);

	if (!t)
		return coloc_err_set(err, -ENOENT, "no tenant %s", name);
	t->removing = true;
	if (t->state == SERVING_TENANT_FAILED || t->state == SERVING_TENANT_STARTING) {
		fail_all_queries(s, t, "removed before it served");
		free_tenant(s, t);
		sv_schedule(s);
		return 0;
	}
	t->state = SERVING_TENANT_DRAINING;
	notify_state(s, t);
	if (!t->nr_queries && !t->busy)
		finish_removal(s, t);
	return 0;
}

int serving_restart(struct serving *s, const char *name, struct coloc_err *err)
{
	struct sv_tenant *t = find_tenant(s, name);

	if (!t)
		return coloc_err_set(err, -ENOENT, "no tenant %s", name);
	if (t->state != SERVING_TENANT_FAILED)
		return coloc_err_set(err, -EINVAL, "tenant %s is %s; only a failed one restarts",
				     name, serving_state_name(t->state));
	return start_executor(s, t, err);
}

int serving_submit(struct serving *s, const char *tenant, const void *input, size_t len,
		   serving_done_fn done, void *ctx, uint64_t *query_id, struct coloc_err *err)
{
	struct sv_tenant *t = find_tenant(s, tenant);
	uint64_t now = now_ns();
	struct sv_query *q;
	int ret = 0;

	if (!t)
		return coloc_err_set(err, -ENOENT, "no tenant %s", tenant);
	serving_stats_offered(&t->stats, now);
	if (len != t->in_bytes)
		ret = coloc_err_set(err, -EINVAL,
				    "tenant %s: the input is %zu bytes, model %s takes %zu", tenant,
				    len, t->model->name, t->in_bytes);
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
	if (ret) {
		if (ret == -EAGAIN) {
			t->stats.rejected++;
			snprintf(t->stats.last_reject, sizeof(t->stats.last_reject), "%s",
				 coloc_err_str(err));
		}
		return ret;
	}
	q = calloc(1, sizeof(*q));
	if (q)
		q->input = malloc(len);
	if (!q || !q->input) {
		free(q);
		return coloc_err_set(err, -ENOMEM, "out of memory queueing a query of %s", tenant);
	}
	memcpy(q->input, input, len);
	q->id = ++s->next_query_id;
	q->arrival_ns = now;
	q->deadline_ns = now + t->qos_ns;
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

/* ---- what status shows ------------------------------------------------------ */

int serving_tenant_info(const struct serving *s, const char *name, struct serving_tenant_info *info)
{
	const struct sv_tenant *t = find_tenant(s, name);

	if (!t)
		return -ENOENT;
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", t->name);
	info->state = t->state;
	snprintf(info->reason, sizeof(info->reason), "%s", t->reason);
	snprintf(info->note, sizeof(info->note), "%s", t->table.note);
	info->pid = t->ep ? execproc_pid(t->ep) : 0;
	info->qos_ns = t->qos_ns;
	info->solo_ns = t->solo_ns;
	info->in_bytes = t->in_bytes;
	info->out_bytes = t->out_bytes;
	for (const struct sv_query *q = t->head; q; q = q->next) {
		if (q->in_flight)
			info->in_flight++;
		else
			info->queued++;
	}
	serving_stats_summarise(&t->stats, now_ns(), &info->stats);
	snprintf(info->last_drop, sizeof(info->last_drop), "%s", t->stats.last_drop);
	snprintf(info->last_reject, sizeof(info->last_reject), "%s", t->stats.last_reject);
	snprintf(info->last_failure, sizeof(info->last_failure), "%s", t->stats.last_failure);
	return 0;
}

int serving_tenant_names(const struct serving *s, const char **names, int max)
{
	int n = 0;

	for (unsigned int order = 0; order < s->next_order; order++)
		for (int i = 0; i < SV_MAX_TENANTS; i++)
			if (s->tenants[i].used && s->tenants[i].order == order) {
				if (n < max)
					names[n] = s->tenants[i].name;
				n++;
			}
	return n;
}

int serving_cores(const struct serving *s, struct serving_core_info *cores, int max)
{
	int n;

	for (n = 0; n < s->nr_cpus; n++) {
		int cpu = s->cpus[n], owner = s->owner[cpu];
		const struct sv_tenant *t = owner >= 0 ? &s->tenants[owner] : NULL;

		if (n >= max)
			continue;
		cores[n] = (struct serving_core_info){ .cpu = cpu };
		if (!t)
			continue;
		cores[n].busy = true;
		cores[n].tenant = t->name;
		cores[n].query_id = t->blk.query_id;
		cores[n].first_layer = t->blk.first_layer;
		cores[n].last_layer = t->blk.last_layer;
		cores[n].versions = t->blk.versions;
	}
	return n;
}

uint64_t serving_policy_errors(const struct serving *s, const char **last)
{
	if (last)
		*last = s->policy_error;
	return s->policy_errors;
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

int serving_create(const struct serving_config *cfg, struct serving **out, struct coloc_err *err)
{
	const char *name = cfg->policy ? cfg->policy : "fcfs";
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
	if (s->entry->shares_cores) {
		ret = coloc_err_set(err, -EINVAL,
				    "policy '%s' shares cores between blocks; serving pins "
				    "each block's cores exclusively",
				    name);
		goto fail;
	}
	s->max_queue = cfg->max_queue > 0 ? cfg->max_queue : SERVING_DEFAULT_QUEUE;
	s->max_queue_total =
		cfg->max_queue_total > 0 ? cfg->max_queue_total : SERVING_DEFAULT_QUEUE_TOTAL;
	s->watch = cfg->watch;
	s->tenant_changed = cfg->tenant_changed;
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
	s->pcfg.late = POLICY_LATE_DROP;
	s->executor = cfg->executor ? strdup(cfg->executor) : NULL;
	s->cache_dir = cfg->cache_dir ? strdup(cfg->cache_dir) : NULL;
	s->core_sig = calloc(POLICY_MAX_CPUS, sizeof(*s->core_sig));
	s->pqueries = calloc(s->max_queue_total, sizeof(*s->pqueries));
	if ((cfg->executor && !s->executor) || (cfg->cache_dir && !s->cache_dir) || !s->core_sig ||
	    !s->pqueries) {
		ret = coloc_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	s->policy = policy_create(s->entry, &s->pcfg, err);
	if (!s->policy) {
		ret = err && err->code ? err->code : -EINVAL;
		goto fail;
	}
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
		release_block_cores(s, t);
		close_executor(s, t, false);
		fail_all_queries(s, t, "colocd stopped serving");
		free_tenant(s, t);
	}
	policy_destroy(s->policy);
	free(s->pqueries);
	free(s->core_sig);
	free(s->versions);
	free(s->executor);
	free(s->cache_dir);
	free(s);
}
