// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Denormals (executor/exec_fp.c): once a model is loaded, every thread of
 * the loader's OpenMP team, and of a lane's team made later on another
 * thread, flushes denormal results to zero and reads denormal inputs as
 * zero (MXCSR FTZ and DAZ), so a member's input of denormals costs what
 * any input costs; and such an input gives the output of zeros.
 */
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "model.h"

#define FTZ_DAZ 0x8040u

/* Every online CPU the executor may use. */
static struct exec_cpuset online_cpus(void)
{
	struct exec_cpuset set = { 0 };

	for (int c = 0; c < EXEC_MAX_CPUS; c++)
		if (exec_cpu_online(c))
			set.cpus[set.nr++] = c;
	return set;
}

static struct model *load_model(const char *file, struct coloc_err *err)
{
	const char *root = getenv("COLOC_ROOT");
	char path[4096];

	snprintf(path, sizeof(path), "%s/models/%s", root ? root : ".", file);
	return model_load(path, err);
}

/* Threads of a team of n on the calling thread without FTZ and DAZ both set. */
static int team_without_ftz_daz(int n)
{
	int without = 0;

#pragma omp parallel num_threads(n) reduction(+ : without)
	without += (_mm_getcsr() & FTZ_DAZ) != FTZ_DAZ;
	return without;
}

struct lane_check {
	struct exec_model *em;
	struct exec_lane *lane;
	const struct model *m;
	int n, without, ret;
};

/* On a thread made after the load: a lane's whole query, then its team's mode. */
static void *lane_main(void *arg)
{
	struct lane_check *c = arg;
	struct exec_query *q = exec_lane_query_new(c->lane);

	if (!q) {
		c->ret = -1;
		return NULL;
	}
	exec_query_fill_inputs(q, c->m, 3);
	c->ret = exec_run_block(c->em, q, 0, c->m->nr_layers, NULL,
				&(struct exec_cpuset){ .nr = 1, .cpus = { online_cpus().cpus[0] } }, NULL);
	c->without = team_without_ftz_daz(c->n);
	exec_query_free(q);
	return NULL;
}

/* The last layer's output of a query whose every input float is v. */
static float *output_of(struct exec_model *em, const struct model *m, float v, size_t *nr)
{
	struct exec_query *q = exec_query_new(em);
	struct exec_cpuset cores;
	int last = m->nr_layers - 1;
	float *out = NULL;

	if (!q)
		return NULL;
	for (int li = 0; li < m->nr_layers; li++) {
		float *in;

		if (m->layers[li].op != MODEL_OP_INPUT)
			continue;
		in = exec_query_input(q, li);
		if (!in)
			goto out;
		for (int64_t i = 0; i < model_shape_elems(&m->layers[li].out); i++)
			in[i] = v;
	}
	cores = online_cpus();
	if (exec_run_block(em, q, 0, m->nr_layers, NULL, &cores, NULL))
		goto out;
	*nr = (size_t)model_shape_elems(&m->layers[last].out);
	out = malloc(*nr * sizeof(float));
	if (out && exec_query_read_output(q, last, out, *nr)) {
		free(out);
		out = NULL;
	}
out:
	exec_query_free(q);
	return out;
}

TEST(load__every_team_thread_flushes_denormals_a_lanes_too)
{
	struct exec_options o = { 0 };
	struct coloc_err err = { 0 };
	struct lane_check c = { 0 };
	struct model *m = load_model("mobilenet_v2.model", &err);
	struct exec_model *em;
	pthread_t th;

	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	em = exec_model_load(m, &o, &err);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&err));
	c = (struct lane_check){ .em = em, .m = m, .n = omp_get_max_threads() };
	EXPECT_EQ(0, team_without_ftz_daz(c.n)) TH_LOG("the loader's team");
	c.lane = exec_lane_new(em, &err);
	ASSERT_NE(NULL, c.lane) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, pthread_create(&th, NULL, lane_main, &c));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, c.ret);
	EXPECT_EQ(0, c.without) TH_LOG("a lane's team, made on a thread of its own");
	exec_lane_free(c.lane);
	exec_model_free(em);
	model_free(m);
}

TEST(run__an_input_of_denormals_answers_as_zeros)
{
	struct exec_options o = { 0 };
	struct coloc_err err = { 0 };
	struct model *m = load_model("mobilenet_v2.model", &err);
	struct exec_model *em;
	size_t nr_zero = 0, nr_denormal = 0;
	float *zero, *denormal;

	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	em = exec_model_load(m, &o, &err);
	ASSERT_NE(NULL, em) TH_LOG("%s", coloc_err_str(&err));
	zero = output_of(em, m, 0.0f, &nr_zero);
	denormal = output_of(em, m, 1e-39f, &nr_denormal);
	ASSERT_NE(NULL, zero);
	ASSERT_NE(NULL, denormal);
	ASSERT_EQ(nr_zero, nr_denormal);
	EXPECT_EQ(0, memcmp(zero, denormal, nr_zero * sizeof(float)));
	free(zero);
	free(denormal);
	exec_model_free(em);
	model_free(m);
}

TEST_HARNESS_MAIN
