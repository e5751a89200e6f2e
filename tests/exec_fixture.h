/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the tests of the executor library on a hand-built net share
 * (executor_test.c, exec_versions_test.c, exec_threads_test.c): a small
 * residual net of 11 layers, loaded on two cores (one where only one is
 * online), with a query ready to run. Include it after kselftest_harness.h.
 */
#ifndef COLOC_TESTS_EXEC_FIXTURE_H
#define COLOC_TESTS_EXEC_FIXTURE_H

#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "reference.h"

/*
 * A small residual net: conv, max pool, a bottleneck with a skip add,
 * global pool, flatten, fc, softmax. 11 layers.
 */
static struct model *small_net(void)
{
	struct model *m = ref_model_new("small", 42, 16);
	int64_t in_d[4] = { 1, 3, 20, 20 }, pd[4] = { 1, 32, 5, 5 }, gd[4] = { 1, 32, 1, 1 };
	int64_t fd[2] = { 1, 32 }, od[2] = { 1, 10 };
	int x, a, b, c, s;
	struct model_layer *l;

	x = 0;
	ref_model_add(m, MODEL_OP_INPUT, "image", 0, NULL, 4, in_d);
	x = ref_model_add_conv(m, x, 32, 3, 2, 1, true, MODEL_ACT_RELU);
	ref_model_add(m, MODEL_OP_POOL, "pool", 1, &x, 4, pd)->pool = (struct model_pool){
		.kind = MODEL_POOL_MAX, .kh = 2, .kw = 2, .stride_h = 2, .stride_w = 2
	};
	x = m->nr_layers - 1;
	a = ref_model_add_conv(m, x, 16, 1, 1, 0, true, MODEL_ACT_RELU);
	b = ref_model_add_conv(m, a, 16, 3, 1, 1, true, MODEL_ACT_RELU);
	c = ref_model_add_conv(m, b, 32, 1, 1, 0, true, MODEL_ACT_NONE);
	{
		int ins[2] = { c, x };

		l = ref_model_add(m, MODEL_OP_ADD, "skip", 2, ins, 4, pd);
		l->act = MODEL_ACT_RELU;
	}
	s = m->nr_layers - 1;
	ref_model_add(m, MODEL_OP_POOL, "gap", 1, &s, 4, gd)->pool.kind = MODEL_POOL_GLOBAL_AVG;
	s = m->nr_layers - 1;
	ref_model_add(m, MODEL_OP_RESHAPE, "flatten", 1, &s, 2, fd);
	s = m->nr_layers - 1;
	l = ref_model_add(m, MODEL_OP_FC, "fc", 1, &s, 2, od);
	l->fc.out_features = 10;
	l->fc.bias = true;
	s = m->nr_layers - 1;
	ref_model_add(m, MODEL_OP_SOFTMAX, "prob", 1, &s, 2, od)->axis = 1;
	return m;
}

static int nr_cpus(void)
{
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

FIXTURE(exec)
{
	struct model *m;
	struct exec_model *em;
	struct exec_query *q;
	struct exec_options opts;
};

FIXTURE_SETUP(exec)
{
	struct coloc_err cerr = { 0 };

	self->m = small_net();
	ASSERT_NE(NULL, self->m);
	memset(&self->opts, 0, sizeof(self->opts));
	self->opts.cpus.nr = nr_cpus() >= 2 ? 2 : 1;
	self->opts.cpus.cpus[1] = 1;
	self->em = exec_model_load(self->m, &self->opts, &cerr);
	ASSERT_NE(NULL, self->em) TH_LOG("load: %s", coloc_err_str(&cerr));
	self->q = exec_query_new(self->em);
	ASSERT_NE(NULL, self->q);
}

FIXTURE_TEARDOWN(exec)
{
	exec_query_free(self->q);
	exec_model_free(self->em);
	model_free(self->m);
}

#endif
