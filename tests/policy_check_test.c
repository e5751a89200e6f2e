// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the guards around a policy round: policy_decide refuses
 * inconsistent input, policy_check_output catches a core granted twice or
 * while busy and a tenant running more blocks than its executors, and
 * coloc runs a query on each idle executor of a tenant.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_fixture.h"

TEST_F(pol, decide__rejects_inconsistent_input)
{
	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	add_query(&self->in, self->queries, 1, 1, 0, 100000000); /* slot 1 is empty */
	ASSERT_EQ(-EINVAL, run_round(self, "fcfs"));
	ASSERT_NE(NULL, strstr(self->err.msg, "tenant 1, which is not there"));
	ASSERT_EQ(0, self->out.nr_decisions);

	memset(&self->err, 0, sizeof(self->err));
	self->queries[0].tenant = 0;
	self->queries[0].next_layer = 3; /* finished: should have left the queue */
	ASSERT_EQ(-EINVAL, run_round(self, "fcfs"));

	memset(&self->err, 0, sizeof(self->err));
	self->queries[0].next_layer = 0;
	policy_cpuset_set(&self->free, 9); /* not online */
	ASSERT_EQ(-EINVAL, run_round(self, "fcfs"));
	ASSERT_NE(NULL, strstr(self->err.msg, "free CPU"));
}

TEST_F(pol, check_output__catches_a_core_granted_twice_or_while_busy)
{
	static const uint8_t v[3] = { 0, 0, 0 };
	static const int a[] = { 0, 1 }, b[] = { 1, 2 };

	/* two executors: both of its queries may run at once (the executors' own test below) */
	self->tenants[0] =
		(struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000, .executors = 2 };
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	add_query(&self->in, self->queries, 2, 0, 0, 100000000);
	self->out.nr_decisions = 2;
	for (int i = 0; i < 2; i++)
		self->decisions[i] = (struct policy_decision){
			.query_id = 1 + i,
			.first_layer = 0,
			.last_layer = 3,
			.versions = v,
			.nr_cores = 2,
		};
	self->decisions[0].cores = cpus_of(a, 2);
	self->decisions[1].cores = cpus_of(b, 2);
	ASSERT_EQ(-EPROTO,
		  policy_check_output(policy_find("fcfs"), &self->in, &self->out, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "granted twice"));

	/* disjoint, but core 1 is busy */
	self->decisions[1].cores = cpus_of((const int[]){ 2, 3 }, 2);
	ASSERT_EQ(0, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));
	policy_cpuset_clear(&self->free, 1);
	ASSERT_EQ(-EPROTO, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));

	/* 3 cores is not a profiled count; version 2 of layer 1 does not exist */
	policy_cpuset_set(&self->free, 1);
	self->out.nr_decisions = 1;
	self->decisions[0].cores = cpus_of((const int[]){ 0, 1, 4 }, 3);
	self->decisions[0].nr_cores = 3;
	ASSERT_EQ(-EPROTO, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));
	self->decisions[0].cores = cpus_of(a, 2);
	self->decisions[0].nr_cores = 2;
	self->decisions[0].versions = (const uint8_t[]){ 0, 2, 0 };
	ASSERT_EQ(-EPROTO, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));

	/* a running query is neither decided again nor dropped */
	self->decisions[0].versions = v;
	ASSERT_EQ(0, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));
	self->queries[0].in_flight = true;
	ASSERT_EQ(-EPROTO, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));
	self->out.nr_decisions = 0;
	self->out.nr_drops = 1;
	self->drops[0] = (struct policy_drop){ .query_id = 1, .reason = POLICY_DROP_CANNOT_MEET };
	ASSERT_EQ(-EPROTO, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));
	self->queries[0].in_flight = false;
	ASSERT_EQ(0, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));
}

/* queries[i] runs a block on cores 0 and 1 (taken from the free set). */
static void run_on_cores_0_1(FIXTURE_DATA(pol) * self, int i)
{
	self->queries[i].in_flight = true;
	self->running[self->in.nr_running++] = (struct policy_decision){
		.query_id = self->queries[i].id,
		.tenant = self->queries[i].tenant,
		.nr_cores = 2,
		.cores = cpus_of((const int[]){ 0, 1 }, 2),
	};
	policy_cpuset_andnot(&self->free, &self->running[self->in.nr_running - 1].cores);
}

TEST_F(pol, check_output__a_tenant_runs_no_more_blocks_than_its_executors)
{
	static const uint8_t v[3] = { 0, 0, 0 };

	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	add_query(&self->in, self->queries, 2, 0, 0, 100000000);
	add_query(&self->in, self->queries, 3, 0, 0, 100000000);
	self->out.nr_decisions = 2;
	for (int i = 0; i < 2; i++)
		self->decisions[i] = (struct policy_decision){
			.query_id = 2 + i,
			.last_layer = 3,
			.versions = v,
			.nr_cores = 2,
			.cores = cpus_of((const int[]){ 2 + 2 * i, 3 + 2 * i }, 2),
		};
	/* one executor (0 counts as 1): two blocks of the tenant in one round are one too many */
	ASSERT_EQ(-EPROTO,
		  policy_check_output(policy_find("fcfs"), &self->in, &self->out, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "tenant 0 would run 2 blocks at once on 1 executor"));
	self->tenants[0].executors = 2;
	ASSERT_EQ(0, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));
	/* a block of it already running counts: 3 on 2 */
	run_on_cores_0_1(self, 0);
	ASSERT_EQ(-EPROTO, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));
	self->tenants[0].executors = 3;
	ASSERT_EQ(0, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));
}

TEST_F(pol, coloc_decide__a_tenant_runs_a_query_on_each_idle_executor)
{
	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	self->in.nr_tenants = 1;
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	add_query(&self->in, self->queries, 2, 0, 10, 100000010);
	add_query(&self->in, self->queries, 3, 0, 20, 100000020);
	self->in.now_ns = 1000;

	/* one executor: one query at a time, the earliest deadline */
	ASSERT_EQ(0, run_round(self, "coloc"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(1, self->decisions[0].query_id);

	/* two: the two most urgent at once, on disjoint cores; the third waits */
	self->tenants[0].executors = 2;
	for (int i = 0; i < 4; i++) {
		static const char *const names[] = { "coloc", "model-wise", "layer-wise", "os" };

		ASSERT_EQ(0, run_round(self, names[i]));
		ASSERT_EQ(2, self->out.nr_decisions);
		ASSERT_EQ(1, self->decisions[0].query_id);
		ASSERT_EQ(2, self->decisions[1].query_id);
		ASSERT_EQ(0, policy_check_output(policy_find(names[i]), &self->in, &self->out,
						 &self->err));
	}

	/* one of them running: one more starts, not two */
	self->queries[0].next_layer = 1;
	run_on_cores_0_1(self, 0);
	ASSERT_EQ(0, run_round(self, "coloc"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(2, self->decisions[0].query_id);
	ASSERT_EQ(0, policy_check_output(policy_find("coloc"), &self->in, &self->out, NULL));
}

TEST_HARNESS_MAIN
