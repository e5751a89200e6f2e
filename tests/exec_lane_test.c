// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Lanes (executor/exec_lane.c): two threads running blocks of one loaded
 * model at the same time, each on a core of its own, produce the same
 * output bytes as the model's own lane alone, and their blocks are seen in
 * flight together (their wall-clock intervals overlap); one lane refuses a
 * second thread while the other lane keeps running; and a second lane of
 * ResNet-50 with a live query (exec_query_new_live, as served) costs at
 * most a tenth of the first's resident memory, measured from
 * /proc/self/status (the weights and primitives are not copied); an idle
 * lane that released its OpenMP team leaves a busy lane's team spinning
 * between layers as if alone (voluntary context switches per block).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "model.h"
#include "mono_clock.h"
#include "testutil.h"

#define ITERS 6
/*
 * A second lane of ResNet-50, its query's arena planned by liveness, costs
 * its activations and scratch, not its weights: issue 27's bound.
 */
#define RSS_BOUND 1.1

/* Each test loads its own model: the harness forks per test. */
FIXTURE(exec_lane)
{
	int unused;
};

FIXTURE_SETUP(exec_lane)
{
	self->unused = 0;
}

FIXTURE_TEARDOWN(exec_lane)
{
}

static struct model *load_model(const char *file, struct coloc_err *err)
{
	const char *root = getenv("COLOC_ROOT");
	char path[4096];

	snprintf(path, sizeof(path), "%s/models/%s", root ? root : ".", file);
	return model_load(path, err);
}

/* One lane's thread: ITERS whole queries, split into two blocks, on one core. */
struct lane_run {
	struct exec_model *em;
	struct exec_query *q;
	struct exec_cpuset core;
	int split; /* the first block's end */
	atomic_int *go;
	uint64_t start[ITERS], end[ITERS];
	int ret;
};

static void *lane_main(void *arg)
{
	struct lane_run *r = arg;
	int nr = exec_model_graph(r->em)->nr_layers;

	while (!atomic_load(r->go))
		;
	for (int i = 0; i < ITERS && !r->ret; i++) {
		exec_query_reset(r->q);
		exec_query_fill_inputs(r->q, exec_model_graph(r->em), 7);
		r->start[i] = coloc_now_ns();
		r->ret = exec_run_block(r->em, r->q, 0, r->split, NULL, &r->core, NULL);
		if (!r->ret)
			r->ret = exec_run_block(r->em, r->q, r->split, nr, NULL, &r->core, NULL);
		r->end[i] = coloc_now_ns();
	}
	return NULL;
}

/* The last layer's output of q. */
static float *last_output(const struct model *m, const struct exec_query *q, size_t *nr)
{
	int last = m->nr_layers - 1;
	float *out;

	*nr = (size_t)model_shape_elems(&m->layers[last].out);
	out = malloc(*nr * sizeof(float));
	if (out && exec_query_read_output(q, last, out, *nr)) {
		free(out);
		out = NULL;
	}
	return out;
}

static int two_online_cpus(struct exec_cpuset *set)
{
	set->nr = 0;
	for (int c = 0; c < EXEC_MAX_CPUS && set->nr < 2; c++)
		if (exec_cpu_online(c))
			set->cpus[set->nr++] = c;
	return set->nr == 2 ? 0 : -ENODEV;
}

TEST_F(exec_lane, run_block__two_lanes_at_once_match_one_lane)
{
	struct exec_options o = { 0 };
	struct coloc_err err = { 0 };
	struct exec_lane *lanes[2] = { NULL, NULL };
	struct lane_run runs[2];
	struct exec_query *ref_q;
	struct exec_model *em;
	struct model *m;
	atomic_int go = 0;
	pthread_t th[2];
	float *ref, *got;
	size_t nr_ref, nr_got;
	bool overlap = false;

	if (two_online_cpus(&o.cpus))
		SKIP(return, "two lanes on cores of their own need two online CPUs");
	m = load_model("mobilenet_v2.model", &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	em = exec_model_load(m, &o, &err);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&err));

	/* the reference: the model's own lane, alone, the whole model as one block */
	ref_q = exec_query_new(em);
	ASSERT_NE(NULL, ref_q);
	exec_query_fill_inputs(ref_q, m, 7);
	ASSERT_EQ(0, exec_run_block(em, ref_q, 0, m->nr_layers, NULL,
				    &(struct exec_cpuset){ .nr = 1, .cpus = { o.cpus.cpus[0] } },
				    NULL));
	ref = last_output(m, ref_q, &nr_ref);
	ASSERT_NE(NULL, ref);

	for (int i = 0; i < 2; i++) {
		lanes[i] = exec_lane_new(em, &err);
		ASSERT_NE(NULL, lanes[i]) TH_LOG("%s", coloc_err_str(&err));
		runs[i] = (struct lane_run){ .em = em,
					     .q = exec_lane_query_new(lanes[i]),
					     .core = { .nr = 1, .cpus = { o.cpus.cpus[i] } },
					     .split = m->nr_layers / (2 + i),
					     .go = &go };
		ASSERT_NE(NULL, runs[i].q);
		ASSERT_EQ(0, pthread_create(&th[i], NULL, lane_main, &runs[i]));
	}
	atomic_store(&go, 1);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, runs[i].ret) TH_LOG("lane %d: %s", i, strerror(-runs[i].ret));
		got = last_output(m, runs[i].q, &nr_got);
		ASSERT_NE(NULL, got);
		ASSERT_EQ(nr_ref, nr_got);
		EXPECT_EQ(0, memcmp(ref, got, nr_ref * sizeof(float)))
			TH_LOG("lane %d's output differs from the model's own lane's", i);
		free(got);
	}
	/* both lanes' queries in flight at the same time, at least once */
	for (int i = 0; i < ITERS; i++)
		for (int j = 0; j < ITERS; j++)
			overlap |= runs[0].start[i] < runs[1].end[j] &&
				   runs[1].start[j] < runs[0].end[i];
	EXPECT_TRUE(overlap) TH_LOG("the two lanes' queries never ran at the same time");

	for (int i = 0; i < 2; i++) {
		exec_query_free(runs[i].q);
		exec_lane_free(lanes[i]);
	}
	free(ref);
	exec_query_free(ref_q);
	exec_model_free(em);
	model_free(m);
}

/* Blocks on one lane, back to back, until told to stop. */
struct busy_lane {
	struct exec_model *em;
	struct exec_query *q;
	struct exec_cpuset core;
	atomic_int stop, runs;
	int ret;
};

static void *busy_main(void *arg)
{
	struct busy_lane *b = arg;
	int nr = exec_model_graph(b->em)->nr_layers;

	while (!atomic_load(&b->stop) && !b->ret) {
		b->ret = exec_run_block(b->em, b->q, 0, nr, NULL, &b->core, NULL);
		atomic_fetch_add(&b->runs, 1);
	}
	return NULL;
}

TEST_F(exec_lane, run_block__busy_lane_refuses_a_second_thread)
{
	struct exec_options o = { 0 };
	struct coloc_err err = { 0 };
	struct busy_lane b = { 0 };
	struct exec_query *same, *other_q;
	struct exec_lane *lane, *other;
	struct exec_model *em;
	struct model *m;
	int busy = 0, ran_beside = 0;
	pthread_t th;

	if (two_online_cpus(&o.cpus))
		SKIP(return, "two lanes on cores of their own need two online CPUs");
	m = load_model("mobilenet_v2.model", &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	em = exec_model_load(m, &o, &err);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&err));
	lane = exec_lane_new(em, &err);
	other = exec_lane_new(em, &err);
	ASSERT_NE(NULL, lane);
	ASSERT_NE(NULL, other);
	b = (struct busy_lane){ .em = em,
				.q = exec_lane_query_new(lane),
				.core = { .nr = 1, .cpus = { o.cpus.cpus[0] } } };
	same = exec_lane_query_new(lane);
	other_q = exec_lane_query_new(other);
	ASSERT_NE(NULL, b.q);
	ASSERT_NE(NULL, same);
	ASSERT_NE(NULL, other_q);
	exec_query_fill_inputs(b.q, m, 3);
	exec_query_fill_inputs(same, m, 3);
	exec_query_fill_inputs(other_q, m, 3);
	ASSERT_EQ(0, pthread_create(&th, NULL, busy_main, &b));
	while (!atomic_load(&b.runs))
		usleep(1000);
	/* a query of the busy lane is refused; one of the other lane runs beside it */
	for (int i = 0; i < 200 && (!busy || !ran_beside); i++) {
		int first = exec_run_block(em, same, 0, 1, NULL,
					   &(struct exec_cpuset){ .nr = 1,
								  .cpus = { o.cpus.cpus[1] } },
					   NULL);
		int r = exec_run_block(em, other_q, 0, 2, NULL,
				       &(struct exec_cpuset){ .nr = 1, .cpus = { o.cpus.cpus[1] } },
				       NULL);

		ASSERT_TRUE(first == 0 || first == -EBUSY) TH_LOG("%s", strerror(-first));
		busy += first == -EBUSY;
		ASSERT_EQ(0, r) TH_LOG("the other lane: %s", strerror(-r));
		ran_beside++;
	}
	atomic_store(&b.stop, 1);
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, b.ret);
	EXPECT_GT(busy, 0) TH_LOG("a busy lane never refused a second thread's block");
	EXPECT_GT(ran_beside, 0);
	exec_query_free(b.q);
	exec_query_free(same);
	exec_query_free(other_q);
	exec_lane_free(lane);
	exec_lane_free(other);
	exec_model_free(em);
	model_free(m);
}

/* Voluntary switches per whole-model block of q on cores, over ITERS * 4 blocks. */
static double switches_per_block(struct exec_model *em, struct exec_query *q,
				 const struct exec_cpuset *cores)
{
	int nr = exec_model_graph(em)->nr_layers, n = ITERS * 4;
	long before = tu_voluntary_switches(0);

	for (int i = 0; i < n; i++)
		if (exec_run_block(em, q, 0, nr, NULL, cores, NULL))
			return -1.0;
	return (double)(tu_voluntary_switches(0) - before) / n;
}

/* Another lane that ran a block on every core, then sleeps until told to go. */
struct idle_lane {
	struct exec_model *em;
	struct exec_query *q;
	struct exec_cpuset cores;
	bool release;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state; /* 1: ran (ret set), 2: told to end */
	int ret;
};

static void *idle_main(void *arg)
{
	struct idle_lane *l = arg;

	l->ret = exec_run_block(l->em, l->q, 0, exec_model_graph(l->em)->nr_layers, NULL,
				&l->cores, NULL);
	if (!l->ret && l->release)
		l->ret = exec_team_release();
	pthread_mutex_lock(&l->mu);
	l->state = 1;
	pthread_cond_broadcast(&l->cv);
	while (l->state != 2)
		pthread_cond_wait(&l->cv, &l->mu);
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/*
 * libgomp counts every pool thread of the process; past the CPUs it
 * throttles every team's spin between parallel regions to 100, and a
 * block's team then sleeps and is woken at nearly every layer. An idle
 * lane that released its team (exec_team_release, as a served lane does
 * between commands) leaves the busy lane's team spinning as if alone.
 */
TEST_F(exec_lane, team_release__idle_lane_leaves_the_busy_lanes_team_spinning)
{
	struct exec_options o = { 0 };
	struct coloc_err err = { 0 };
	struct idle_lane l = { .mu = PTHREAD_MUTEX_INITIALIZER,
			       .cv = PTHREAD_COND_INITIALIZER,
			       .release = true };
	struct exec_query *q;
	struct exec_lane *lane;
	struct exec_model *em;
	struct model *m;
	double alone, beside;
	pthread_t th;

	if (two_online_cpus(&o.cpus))
		SKIP(return, "a team of two threads needs two online CPUs");
	if (sysconf(_SC_NPROCESSORS_ONLN) > 2)
		SKIP(return,
		     "libgomp throttles its spin only once a process's pool threads exceed its "
		     "CPUs (%ld here): two lanes of two threads cannot show it",
		     sysconf(_SC_NPROCESSORS_ONLN));
	m = load_model("mobilenet_v2.model", &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	em = exec_model_load(m, &o, &err);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&err));
	q = exec_query_new(em);
	ASSERT_NE(NULL, q);
	exec_query_fill_inputs(q, m, 1);
	ASSERT_LE(0.0, switches_per_block(em, q, &o.cpus)); /* warm */
	alone = switches_per_block(em, q, &o.cpus);
	ASSERT_LE(0.0, alone);

	lane = exec_lane_new(em, &err);
	ASSERT_NE(NULL, lane) TH_LOG("%s", coloc_err_str(&err));
	l.em = em;
	l.q = exec_lane_query_new(lane);
	l.cores = o.cpus;
	ASSERT_NE(NULL, l.q);
	exec_query_fill_inputs(l.q, m, 1);
	ASSERT_EQ(0, pthread_create(&th, NULL, idle_main, &l));
	pthread_mutex_lock(&l.mu);
	while (!l.state)
		pthread_cond_wait(&l.cv, &l.mu);
	pthread_mutex_unlock(&l.mu);
	ASSERT_EQ(0, l.ret) TH_LOG("%s", strerror(-l.ret));
	beside = switches_per_block(em, q, &o.cpus);
	pthread_mutex_lock(&l.mu);
	l.state = 2;
	pthread_cond_broadcast(&l.cv);
	pthread_mutex_unlock(&l.mu);
	ASSERT_EQ(0, pthread_join(th, NULL));
	TH_LOG("voluntary switches per 2-core block of MobileNet-V2 (%d layers): alone %.1f, "
	       "beside an idle lane that released its team %.1f",
	       m->nr_layers, alone, beside);
	ASSERT_LE(0.0, beside);
	/* throttled, the team sleeps at most of the layers' regions */
	EXPECT_LT(beside, 2.0 * alone + m->nr_layers / 4.0);
	exec_query_free(l.q);
	exec_lane_free(lane);
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
}

/* A second lane of a query of q's model, warmed on its own thread and core. */
struct warm_lane {
	struct exec_model *em;
	struct exec_query *q;
	struct exec_cpuset core;
	int ret;
};

static void *warm_main(void *arg)
{
	struct warm_lane *w = arg;
	const struct model *m = exec_model_graph(w->em);

	exec_query_fill_inputs(w->q, m, 1);
	for (int i = 0; i < 2 && !w->ret; i++)
		w->ret = exec_run_block(w->em, w->q, 0, m->nr_layers, NULL, &w->core, NULL);
	return NULL;
}

TEST_F(exec_lane, new__second_lane_of_resnet50_costs_a_tenth_of_one)
{
	struct exec_options o = { 0 };
	struct coloc_err err = { 0 };
	struct warm_lane w = { 0 };
	struct exec_query *q;
	struct exec_lane *lane;
	struct exec_model *em;
	struct model *m;
	long rss1, rss2, anon1, anon2;
	pthread_t th;

	if (two_online_cpus(&o.cpus))
		SKIP(return, "two lanes on cores of their own need two online CPUs");
	m = load_model("resnet50.model", &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	em = exec_model_load(m, &o, &err);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&err));
	q = exec_query_new_live(em, NULL);
	ASSERT_NE(NULL, q);
	exec_query_fill_inputs(q, m, 1);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, exec_run_block(em, q, 0, m->nr_layers, NULL,
					    &(struct exec_cpuset){ .nr = 1,
								   .cpus = { o.cpus.cpus[0] } },
					    NULL));
	rss1 = tu_proc_status_kb(0, "VmRSS");
	anon1 = tu_proc_status_kb(0, "RssAnon");
	ASSERT_GT(rss1, 0);

	lane = exec_lane_new(em, &err);
	ASSERT_NE(NULL, lane) TH_LOG("%s", coloc_err_str(&err));
	w = (struct warm_lane){ .em = em,
				.q = exec_query_new_live(em, lane),
				.core = { .nr = 1, .cpus = { o.cpus.cpus[1] } } };
	ASSERT_NE(NULL, w.q);
	ASSERT_EQ(0, pthread_create(&th, NULL, warm_main, &w));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, w.ret) TH_LOG("%s", strerror(-w.ret));
	rss2 = tu_proc_status_kb(0, "VmRSS");
	anon2 = tu_proc_status_kb(0, "RssAnon");
	TH_LOG("ResNet-50: one lane VmRSS %ld KiB (RssAnon %ld), two lanes %ld KiB (%ld): "
	       "%.3fx (%.3fx anon); the model accounts %zu KiB",
	       rss1, anon1, rss2, anon2, (double)rss2 / (double)rss1,
	       (double)anon2 / (double)anon1, exec_model_resident_bytes(em) / 1024);
	EXPECT_LT((double)rss2, RSS_BOUND * (double)rss1);
	exec_query_free(w.q);
	exec_lane_free(lane);
	exec_query_free(q);
	exec_model_free(em);
	model_free(m);
}

TEST_HARNESS_MAIN
