/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the tests of colocd's serving core (daemon/serving.c) share
 * (serving_test.c, serving_tenants_test.c, serving_executors_test.c): a
 * serving core with real executor processes on models/mobilenet_v2.model,
 * a real profile made once per test binary by bin/coloc-profile with one
 * iteration in a temporary cache, and the event loop the test plays: it
 * polls the fds the module names and calls back in until a condition holds.
 * Times are printed, never asserted: the machine is shared.
 * Include it after kselftest_harness.h.
 */
#ifndef COLOC_TESTS_SERVING_FIXTURE_H
#define COLOC_TESTS_SERVING_FIXTURE_H

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "profile_host.h"
#include "reference.h"
#include "serving.h"
#include "serving_util.h"
#include "testutil.h"

#define READY_MS 180000
#define DONE_MS 120000
#define QOS_NS 60000000000ull /* 60 s: nothing is dropped on a loaded machine */
#define MAX_Q 64
#define TOL 1e-3f

static char cache_dir[64]; /* made once, shared by the forked tests */

static inline void model_path(char *buf, size_t len, const char *name)
{
	const char *root = getenv("COLOC_ROOT");

	snprintf(buf, len, "%s/models/%s.model", root ? root : ".", name);
}

/*
 * The profile every setup finds, made once before the harness starts its
 * 30 s clock on each test (coloc-profile took most of it on a loaded
 * machine); a setup that finds none makes it itself and says why not.
 */
__attribute__((constructor)) static void make_cache_dir(void)
{
	char model[512], out[4096];

	tu_shared_tmpdir("serving-test", cache_dir, sizeof(cache_dir));
	model_path(model, sizeof(model), "mobilenet_v2");
	if (cache_dir[0] && !access(model, R_OK))
		tu_quick_profile(model, cache_dir, out, sizeof(out));
}

/* One query as the test sees it: its completion, and a copy of its output. */
struct qrec {
	bool done;
	enum serving_status status;
	char reason[256];
	uint64_t latency_ns, exec_ns;
	struct serving_breakdown parts;
	float *out;
	size_t out_bytes;
};

static inline void on_done(void *ctx, const struct serving_completion *c)
{
	struct qrec *r = ctx;

	r->done = true;
	r->status = c->status;
	snprintf(r->reason, sizeof(r->reason), "%s", c->reason);
	r->latency_ns = c->latency_ns;
	r->exec_ns = c->exec_ns;
	r->parts = c->parts;
	r->out_bytes = c->output_bytes;
	if (c->output) {
		r->out = malloc(c->output_bytes);
		if (r->out)
			memcpy(r->out, c->output, c->output_bytes);
	}
}

struct watched {
	int fds[16];
	int nr;
	int adds, removes;
	/* tenant_changed calls, as "name:state:pid[,pid...]" */
	char events[32][96];
	int nr_events;
};

static inline int on_watch(void *ctx, int fd, bool add)
{
	struct watched *w = ctx;

	if (add) {
		w->fds[w->nr++] = fd;
		w->adds++;
		return 0;
	}
	w->removes++;
	for (int i = 0; i < w->nr; i++)
		if (w->fds[i] == fd) {
			w->fds[i] = w->fds[--w->nr];
			break;
		}
	return 0;
}

static inline void on_tenant(void *ctx, const char *name, enum serving_tenant_state state,
			     const pid_t *pids, int nr_pids)
{
	struct watched *w = ctx;
	char *e;
	size_t len;

	if (w->nr_events >= 32)
		return;
	e = w->events[w->nr_events++];
	len = (size_t)snprintf(e, sizeof(w->events[0]), "%s:%s:", name, serving_state_name(state));
	for (int i = 0; i < nr_pids && len < sizeof(w->events[0]); i++)
		len += (size_t)snprintf(e + len, sizeof(w->events[0]) - len, "%s%d", i ? "," : "",
					(int)pids[i]);
	if (!nr_pids && len < sizeof(w->events[0]))
		snprintf(e + len, sizeof(w->events[0]) - len, "0");
}

FIXTURE(serving)
{
	struct serving *s;
	struct watched w;
	char model[512];
	size_t in_bytes;
	float *input;
	struct qrec q[MAX_Q];
	bool executor_lanes; /* serving_config's, for make_serving */
};

static inline int make_serving(FIXTURE_DATA(serving) * self, const char *policy, int max_queue,
			       int max_total, const char *cache, struct coloc_err *err)
{
	char bin[512];
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)),
				      .cache_dir = cache,
				      .policy = policy,
				      .max_queue = max_queue,
				      .max_queue_total = max_total,
				      .executor_lanes = self->executor_lanes,
				      .watch = on_watch,
				      .tenant_changed = on_tenant,
				      .ctx = &self->w };

	serving_destroy(self->s);
	self->s = NULL;
	return serving_create(&cfg, &self->s, err);
}

FIXTURE_SETUP(serving)
{
	struct coloc_err err = { 0 };
	char out[8192];

	model_path(self->model, sizeof(self->model), "mobilenet_v2");
	if (access(self->model, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", self->model);
	ASSERT_NE(0, cache_dir[0]);
	/* made before the tests (make_cache_dir); if that failed, here, with the reason */
	ASSERT_EQ(0, tu_serving_profile(self->model, cache_dir, out, sizeof(out)))
	TH_LOG("%s", out);
	ASSERT_EQ(0, make_serving(self, NULL, 0, 0, cache_dir, &err))
	TH_LOG("%s", coloc_err_str(&err));
}

FIXTURE_TEARDOWN(serving)
{
	serving_destroy(self->s);
	for (int i = 0; i < MAX_Q; i++)
		free(self->q[i].out);
	free(self->input);
}

/* Polls the module's fds as an event loop would, until cond(self) or timeout_ms. */
typedef bool (*cond_fn)(FIXTURE_DATA(serving) * self, void *arg);

static inline bool pump(FIXTURE_DATA(serving) * self, cond_fn cond, void *arg, int timeout_ms,
			void (*each)(FIXTURE_DATA(serving) * self, void *arg))
{
	uint64_t end = coloc_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	while (!cond(self, arg)) {
		if (coloc_now_ns() >= end)
			return false;
		if (tu_serving_turn(self->s, (int)((end - coloc_now_ns()) / 1000000) + 1) > 0 &&
		    each)
			each(self, arg);
	}
	return true;
}

static inline bool nothing_watched(FIXTURE_DATA(serving) * self, void *arg)
{
	(void)arg;
	return self->w.nr == 0;
}

static inline bool tenant_in_state(FIXTURE_DATA(serving) * self, void *arg)
{
	const char **want = arg; /* name, state name */
	struct serving_tenant_info info;

	return !serving_tenant_info(self->s, want[0], &info) &&
	       !strcmp(serving_state_name(info.state), want[1]);
}

static inline bool tenant_gone(FIXTURE_DATA(serving) * self, void *arg)
{
	struct serving_tenant_info info;

	return serving_tenant_info(self->s, arg, &info) == -ENOENT;
}

/* arg: int[2], the first and one past the last query record to wait for */
static inline bool queries_done(FIXTURE_DATA(serving) * self, void *arg)
{
	const int *range = arg;

	for (int i = range[0]; i < range[1]; i++)
		if (!self->q[i].done)
			return false;
	return true;
}

static inline int admit_executors(FIXTURE_DATA(serving) * self, const char *name, uint64_t qos_ns,
				  int executors, struct coloc_err *err)
{
	struct serving_tenant_spec spec = {
		.name = name, .model_name = self->model, .qos_ns = qos_ns, .executors = executors
	};

	return tu_serving_admit(self->s, spec, self->model, NULL, READY_MS, err);
}

static inline int admit(FIXTURE_DATA(serving) * self, const char *name, uint64_t qos_ns,
			struct coloc_err *err)
{
	return admit_executors(self, name, qos_ns, 0, err);
}

static inline bool wait_ready(FIXTURE_DATA(serving) * self, const char *name)
{
	const char *want[2] = { name, "ready" };

	return pump(self, tenant_in_state, want, READY_MS, NULL);
}

/* A deterministic input of the right size (values in [-1, 1)). */
static inline void make_input(FIXTURE_DATA(serving) * self, const char *name)
{
	struct serving_tenant_info info;

	if (serving_tenant_info(self->s, name, &info))
		return;
	self->in_bytes = info.in_bytes;
	free(self->input);
	self->input = malloc(self->in_bytes);
	for (size_t i = 0; self->input && i < self->in_bytes / sizeof(float); i++)
		self->input[i] = (float)((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
}

static inline int submit(FIXTURE_DATA(serving) * self, const char *name, int rec,
			 struct coloc_err *err)
{
	return serving_submit(self->s, name, self->input, self->in_bytes, on_done, &self->q[rec],
			      NULL, err);
}

static inline bool tenant_busy(FIXTURE_DATA(serving) * self, void *arg)
{
	struct serving_core_info cores[POLICY_MAX_CPUS];
	int n = serving_cores(self->s, cores, POLICY_MAX_CPUS);

	for (int i = 0; i < n; i++)
		if (cores[i].busy && !strcmp(cores[i].tenant, arg))
			return true;
	return false;
}

/* arg: a pid_t; colocd reaps an executor it stopped or killed without waiting for it */
static inline bool process_reaped(FIXTURE_DATA(serving) * self, void *arg)
{
	(void)self;
	return kill(*(pid_t *)arg, 0) && errno == ESRCH;
}

static inline bool fds_watched_are(FIXTURE_DATA(serving) * self, void *arg)
{
	return self->w.nr == *(int *)arg;
}

static inline bool tenant_idle(FIXTURE_DATA(serving) * self, void *arg)
{
	return !tenant_busy(self, arg);
}

/*
 * The solo latency as the profile says, computed here from the file's
 * cells: their sum, times the profile's cold start where it is above 1
 * (models/PROFILE.md: what a query served alone at low load costs).
 */
static inline uint64_t profiled_solo_ns(const char *model_path, int nr_cpus)
{
	struct coloc_err err = { 0 };
	struct model *m = model_load(model_path, &err);
	struct profile *p = m ? profile_table_find(model_path, m, cache_dir, &err) : NULL;
	int cores = p ? (nr_cpus < p->nr_cores ? nr_cpus : p->nr_cores) : 0;
	double cold = p && profile_cold_ratio(&p->conditions) > 1 ?
			      profile_cold_ratio(&p->conditions) :
			      1.0;
	uint64_t sum = 0;

	for (int l = 0; p && l < p->nr_layers; l++) {
		uint64_t best = UINT64_MAX;

		for (int v = 0; v < p->layers[l].nr_versions; v++) {
			uint64_t c = *profile_latency_cell_const(p, l, v, cores, 0);

			if (c && c < best)
				best = c;
		}
		sum += best;
	}
	profile_free(p);
	model_free(m);
	return (uint64_t)((double)sum * cold);
}

#endif
