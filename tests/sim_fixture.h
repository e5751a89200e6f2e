/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the sim_*_test.c files share: the hand-built latency tables of
 * sim_hand_tables.h, a recorder of every block and query a run reports,
 * small run parameters, the fixture sim, and where VELTAIR's tables are.
 * Include it after kselftest_harness.h.
 */
#ifndef COLOC_TESTS_SIM_FIXTURE_H
#define COLOC_TESTS_SIM_FIXTURE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "policy_impl.h"
#include "sim.h"
#include "sim_hand_tables.h"

/* ---- observers -------------------------------------------------------------------- */

#define MAX_REC 4096

struct block_rec {
	uint64_t query_id;
	int first, last, nr_cores;
	struct policy_cpuset cores;
	uint64_t start_ns, end_ns;
};

struct watch {
	struct sim_query_record q[MAX_REC];
	int nr_q;
	struct block_rec *b;
	int nr_b, cap_b;
	bool overflow;
};

static inline void watch_query(void *ctx, const struct sim_query_record *q)
{
	struct watch *w = ctx;

	if (w->nr_q < MAX_REC)
		w->q[w->nr_q++] = *q;
}

static inline void watch_block(void *ctx, const struct sim_block_record *b)
{
	struct watch *w = ctx;

	if (w->nr_b == w->cap_b) {
		int cap = w->cap_b ? w->cap_b * 2 : 1024;
		struct block_rec *v = realloc(w->b, (size_t)cap * sizeof(*v));

		if (!v) {
			w->overflow = true;
			return;
		}
		w->b = v;
		w->cap_b = cap;
	}
	w->b[w->nr_b++] = (struct block_rec){
		.query_id = b->d->query_id,
		.first = b->d->first_layer,
		.last = b->d->last_layer,
		.nr_cores = b->d->nr_cores,
		.cores = b->d->cores,
		.start_ns = b->start_ns,
		.end_ns = b->end_ns,
	};
}

static inline const struct sim_query_record *record_of(const struct watch *w, uint64_t id)
{
	for (int i = 0; i < w->nr_q; i++)
		if (w->q[i].id == id)
			return &w->q[i];
	return NULL;
}

/* A trace in memory: arrival times in ms, tenants. */
struct mem_trace {
	uint64_t t[8];
	int tenant[8];
	struct sim_trace trace;
};

static inline void mem_trace_init(struct mem_trace *m, int nr, const double *ms, const int *tenant)
{
	for (int i = 0; i < nr; i++) {
		m->t[i] = (uint64_t)llround(ms[i] * 1e6);
		m->tenant[i] = tenant[i];
	}
	m->trace = (struct sim_trace){ .time_ns = m->t, .tenant = m->tenant, .nr = nr };
}

static inline struct sim_params small_params(const struct policy_entry *pol, int cores, int llc,
					     const struct sim_tenant *tenants, int nr_tenants,
					     const struct sim_trace *trace, struct watch *w)
{
	return (struct sim_params){
		.policy = pol,
		.machine = { .nr_cores = cores, .nr_sockets = 1, .llc_size = llc },
		.late = POLICY_LATE_DROP,
		.tenants = tenants,
		.nr_tenants = nr_tenants,
		.trace = trace,
		.duration_ns = 1000 * MS,
		.interference = { .full_slowdown = 1.6 },
		.max_queued = SIM_DEFAULT_MAX_QUEUED,
		.on_query = watch_query,
		.on_block = watch_block,
		.ctx = w,
	};
}

/* Every policy a tenant may run under, for searches against a bound */
static const char *const every_policy[] = { "os",	  "static", "temporal", "model-wise",
					    "layer-wise", "fcfs",   "coloc",	"coloc-wide" };
#define NR_EVERY_POLICY (sizeof(every_policy) / sizeof(every_policy[0]))

/*
 * The nr tenants st on 4 cores of one socket (LLC domains of one core) with
 * executors executors each, socket slowdown m: their QoS-QPS searched (20 s,
 * seed 1) under policy name, in *s; -EINVAL for no such policy.
 */
static inline int search_on_4(const char *name, const struct sim_tenant *st, int nr,
			      int executors, double m, struct sim_search_result *s,
			      struct coloc_err *err)
{
	struct sim_params p = {
		.policy = policy_find(name),
		.machine = { .nr_cores = 4, .nr_sockets = 1, .llc_size = 1 },
		.late = POLICY_LATE_DROP,
		.tenants = st,
		.nr_tenants = nr,
		.executors = executors,
		.duration_ns = 20000 * MS,
		.warmup_ns = 2000 * MS,
		.seed = 1,
		.interference = { .full_slowdown = m, .socket_slowdown = m },
		.max_queued = SIM_DEFAULT_MAX_QUEUED,
	};

	if (!p.policy)
		return coloc_err_set(err, -EINVAL, "no policy %s", name);
	return sim_search_qos_qps(&p, SIM_QOS_FRACTION, 16, 0.005, s, err);
}

/* Tenant st alone: search_on_4() with one tenant */
static inline int search_alone_on_4(const char *name, const struct sim_tenant *st, int executors,
				    double m, struct sim_search_result *s, struct coloc_err *err)
{
	return search_on_4(name, st, 1, executors, m, s, err);
}

FIXTURE(sim)
{
	struct watch *w;
	struct sim_result r;
	struct coloc_err err;
};

FIXTURE_SETUP(sim)
{
	self->w = calloc(1, sizeof(*self->w));
	ASSERT_NE(NULL, self->w);
	memset(&self->err, 0, sizeof(self->err));
}

FIXTURE_TEARDOWN(sim)
{
	free(self->w->b);
	free(self->w);
}

/* VELTAIR's published tables, kept in the repository (data/veltair/README.md) */
static inline void veltair_dir(char *buf, size_t len)
{
	const char *root = getenv("COLOC_ROOT");

	snprintf(buf, len, "%s/data/veltair", root ? root : ".");
}

#endif /* COLOC_TESTS_SIM_FIXTURE_H */
