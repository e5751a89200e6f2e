// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the baseline policies on the hand-worked table
 * (tests/policy_fixture.h): fcfs (earliest arrival, all free cores, each
 * layer's fastest version, deadlines and drops), os (every idle tenant on
 * the same cores), static (equal shares by cpu id), temporal (the whole
 * machine, the count fastest for the model, a plan per slot) and
 * model-wise (the fewest cores whose alone latency meets the QoS).
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_fixture.h"

TEST_F(pol, fcfs_decide__picks_the_earliest_arrival)
{
	for (int t = 0; t < 3; t++)
		self->tenants[t] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	add_query(&self->in, self->queries, 10, 0, 3000, 100000000);
	add_query(&self->in, self->queries, 11, 1, 1000, 100000000);
	add_query(&self->in, self->queries, 12, 2, 2000, 100000000);
	self->in.now_ns = 5000;
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(11, self->decisions[0].query_id);
	ASSERT_EQ(1, self->decisions[0].tenant);
	ASSERT_EQ(5000, self->decisions[0].decided_ns);
	ASSERT_EQ(0, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));

	/* a tie on arrival goes to the lower id */
	self->queries[0].arrival_ns = 1000;
	self->queries[0].id = 9;
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(9, self->decisions[0].query_id);
}

TEST_F(pol, fcfs_decide__gives_all_free_cores)
{
	static const int four[] = { 1, 2, 5, 6 }, three[] = { 0, 3, 6 };
	struct policy_cpuset want;

	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);

	self->free = cpus_of(four, 4);
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(4, self->decisions[0].nr_cores);
	ASSERT_EQ(0, memcmp(&self->free, &self->decisions[0].cores, sizeof(self->free)));

	/* 3 free, profiled 1, 2, 4: the 2 lowest-numbered free cores */
	self->free = cpus_of(three, 3);
	want = cpus_of(three, 2);
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(2, self->decisions[0].nr_cores);
	ASSERT_EQ(0, memcmp(&want, &self->decisions[0].cores, sizeof(want)));

	/* no free core: nothing, and no error */
	policy_cpuset_zero(&self->free);
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(0, self->out.nr_decisions);
	ASSERT_EQ(0, self->out.nr_drops);
}

TEST_F(pol, fcfs_decide__each_layer_in_its_fastest_version_alone_at_that_count)
{
	static const struct {
		int nr_free;
		uint8_t versions[3];
		uint64_t alone_ns;
	} cases[] = {
		{ 4, { 2, 0, 1 }, 540000 },
		{ 2, { 1, 0, 0 }, 960000 },
		{ 1, { 0, 1, 2 }, 1870000 },
	};

	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct policy_decision *d = &self->decisions[0];

		policy_cpuset_zero(&self->free);
		for (int c = 0; c < cases[i].nr_free; c++)
			policy_cpuset_set(&self->free, 7 - c);
		ASSERT_EQ(0, run_round(self, "fcfs"));
		ASSERT_EQ(1, self->out.nr_decisions);
		ASSERT_EQ(cases[i].nr_free, d->nr_cores);
		ASSERT_EQ(0, d->first_layer);
		ASSERT_EQ(3, d->last_layer);
		ASSERT_EQ(0, memcmp(cases[i].versions, d->versions, 3));
		ASSERT_EQ(cases[i].alone_ns, d->alone_ns);
		ASSERT_EQ(cases[i].alone_ns, d->predicted_ns);
		ASSERT_EQ(1.0, d->level);
	}
}

TEST_F(pol, fcfs_decide__resumes_at_the_next_layer)
{
	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	self->queries[0].next_layer = 1;
	policy_cpuset_zero(&self->free);
	for (int c = 0; c < 4; c++)
		policy_cpuset_set(&self->free, c);
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(1, self->decisions[0].first_layer);
	ASSERT_EQ(3, self->decisions[0].last_layer);
	ASSERT_EQ(0, self->decisions[0].versions[0]);
	ASSERT_EQ(1, self->decisions[0].versions[1]);
	ASSERT_EQ(130000 + 160000, self->decisions[0].alone_ns);
}

TEST_F(pol, fcfs_decide__waits_while_a_query_runs)
{
	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	self->tenants[1] = self->tenants[0];
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	add_query(&self->in, self->queries, 2, 1, 10, 100000000);
	self->queries[0].in_flight = true;
	self->running[0] = (struct policy_decision){ .query_id = 1, .tenant = 0, .nr_cores = 4 };
	self->in.nr_running = 1;
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(0, self->out.nr_decisions);

	/* once it is done, the next one goes */
	self->in.nr_running = 0;
	self->queries[0] = self->queries[1];
	self->in.nr_queries = 1;
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(2, self->decisions[0].query_id);
}

/*
 * Past its deadline plus its QoS (5 ms) and with query 3, just in time,
 * late for it (overdue: policy_late_overdue_test), a query is demoted, as
 * a late one waits behind the one on time (the late rule's own cases:
 * policy_late_baselines_test); nothing is dropped.
 */
TEST_F(pol, fcfs_decide__carries_deadlines_and_drops_only_past_the_deadline_plus_the_qos)
{
	const uint64_t now = 10000000, qos = 5000000;

	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = qos };
	policy_cpuset_zero(&self->free);
	for (int c = 0; c < 4; c++)
		policy_cpuset_set(&self->free, c);
	self->in.now_ns = now;
	/* 4 free cores: the whole model takes 540 µs alone */
	add_query(&self->in, self->queries, 1, 0, 0, now - qos); /* deadline + QoS now */
	add_query(&self->in, self->queries, 2, 0, 1000, now + 539999 - qos); /* 1 ns short */
	add_query(&self->in, self->queries, 3, 0, 5500000, now + 540000); /* just in time */
	add_query(&self->in, self->queries, 4, 0, 5000000, now + 539999); /* late: waits */
	add_query(&self->in, self->queries, 5, 0, 6000000, now + 9000000);
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_STREQ("cannot meet its deadline", policy_drop_reason_name(POLICY_DROP_CANNOT_MEET));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(3, self->decisions[0].query_id);
	ASSERT_EQ(now + 540000, now + self->decisions[0].predicted_ns);
	ASSERT_EQ(0, policy_check_output(policy_find("fcfs"), &self->in, &self->out, NULL));

	/* --late serve: the late one is served, nothing dropped */
	self->cfg.late = POLICY_LATE_SERVE;
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(1, self->decisions[0].query_id);
}

/*
 * os on 8 online cores, the tiny model profiled at 1, 2 and 4: every tenant
 * with nothing in flight gets its earliest query at once, all on the same 4
 * lowest cores (the largest profiled count), versions 2, 0, 1 (540 µs alone).
 */
TEST_F(pol, os_decide__every_idle_tenant_gets_its_earliest_query_on_the_same_cores)
{
	static const int low4[] = { 0, 1, 2, 3 }, two[] = { 5, 6 };
	static const uint8_t want_v[3] = { 2, 0, 1 };
	struct policy_cpuset want = cpus_of(low4, 4);

	for (int t = 0; t < 3; t++)
		self->tenants[t] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	add_query(&self->in, self->queries, 5, 0, 30, 100000000);
	add_query(&self->in, self->queries, 6, 0, 10, 100000000); /* tenant 0's earliest */
	add_query(&self->in, self->queries, 7, 1, 20, 100000000);
	add_query(&self->in, self->queries, 8, 2, 0, 100000000); /* running */
	add_query(&self->in, self->queries, 9, 2, 1, 100000000); /* waits for it */
	self->queries[3].in_flight = true;
	self->running[0] = (struct policy_decision){
		.query_id = 8, .tenant = 2, .nr_cores = 4, .cores = want
	};
	self->in.nr_running = 1;
	self->in.now_ns = 1000;
	ASSERT_EQ(0, run_round(self, "os"));
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(2, self->out.nr_decisions);
	ASSERT_EQ(6, self->decisions[0].query_id);
	ASSERT_EQ(0, self->decisions[0].tenant);
	ASSERT_EQ(7, self->decisions[1].query_id);
	ASSERT_EQ(1, self->decisions[1].tenant);
	for (int i = 0; i < 2; i++) {
		const struct policy_decision *d = &self->decisions[i];

		ASSERT_EQ(4, d->nr_cores);
		ASSERT_EQ(0, memcmp(&want, &d->cores, sizeof(want)));
		ASSERT_EQ(0, d->first_layer);
		ASSERT_EQ(3, d->last_layer);
		ASSERT_EQ(0, memcmp(want_v, d->versions, 3));
		ASSERT_EQ(540000, d->alone_ns);
		ASSERT_EQ(540000, d->predicted_ns);
		ASSERT_EQ(1000, d->decided_ns);
	}
	/* the overlap (and cores of the running block) is os's contract, not fcfs's */
	ASSERT_EQ(0, policy_check_output(policy_find("os"), &self->in, &self->out, NULL));
	ASSERT_EQ(-EPROTO,
		  policy_check_output(policy_find("fcfs"), &self->in, &self->out, &self->err));
	ASSERT_NE(NULL, strstr(self->err.msg, "granted twice"));

	/* 2 cores given: both tenants on those 2, versions 1, 0, 0 (960 µs) */
	self->free = cpus_of(two, 2);
	want = cpus_of(two, 2);
	ASSERT_EQ(0, run_round(self, "os"));
	ASSERT_EQ(2, self->out.nr_decisions);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(2, self->decisions[i].nr_cores);
		ASSERT_EQ(0, memcmp(&want, &self->decisions[i].cores, sizeof(want)));
		ASSERT_EQ(960000, self->decisions[i].alone_ns);
	}

	/* tenant 2's block done: its next query goes too, still FCFS within it */
	self->in.nr_running = 0;
	self->queries[3] = self->queries[4];
	self->in.nr_queries = 4;
	self->free = self->cfg.online;
	ASSERT_EQ(0, run_round(self, "os"));
	ASSERT_EQ(3, self->out.nr_decisions);
	ASSERT_EQ(9, self->decisions[2].query_id);
	ASSERT_EQ(2, self->decisions[2].tenant);
}

/*
 * Per tenant: past its deadline plus its QoS, with its tenant's query 3,
 * just in time, late for it (overdue: policy_late_overdue_test), a query
 * is demoted behind query 3, as tenant 1's late query waits behind its
 * query on time (policy_late_baselines_test); nothing is dropped.
 */
TEST_F(pol, os_decide__drops_per_tenant_only_past_the_deadline_plus_the_qos_or_serves_it_late)
{
	const uint64_t now = 10000000;

	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 5000000 };
	self->tenants[1] = self->tenants[0];
	self->in.now_ns = now;
	/* 4 cores: the whole model takes 540 µs alone; the QoS is 5 ms */
	add_query(&self->in, self->queries, 1, 0, 0, now - 5000000); /* deadline + QoS now */
	add_query(&self->in, self->queries, 2, 0, 1000, now - 4460001); /* 1 ns short of it */
	add_query(&self->in, self->queries, 3, 0, 5500000, now + 540000); /* just in time */
	add_query(&self->in, self->queries, 4, 1, 4500000, now + 100); /* late: waits */
	add_query(&self->in, self->queries, 5, 1, 6000000, now + 9000000);
	ASSERT_EQ(0, run_round(self, "os"));
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(2, self->out.nr_decisions);
	ASSERT_EQ(3, self->decisions[0].query_id);
	ASSERT_EQ(5, self->decisions[1].query_id);
	ASSERT_EQ(0, policy_check_output(policy_find("os"), &self->in, &self->out, NULL));

	/* --late serve: each tenant's earliest goes, late; nothing dropped */
	self->cfg.late = POLICY_LATE_SERVE;
	ASSERT_EQ(0, run_round(self, "os"));
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(2, self->out.nr_decisions);
	ASSERT_EQ(1, self->decisions[0].query_id);
	ASSERT_EQ(4, self->decisions[1].query_id);
}

TEST_F(pol, static_decide__equal_shares_by_cpu_id)
{
	/* 2 tenants in slots 0 and 2 (slot 1 empty), 8 cores: 0-3 and 4-7 */
	static const int lo[] = { 0, 1, 2, 3 }, hi[] = { 4, 5, 6, 7 };
	struct policy_cpuset want_lo = cpus_of(lo, 4), want_hi = cpus_of(hi, 4);

	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	self->tenants[2] = self->tenants[0];
	add_query(&self->in, self->queries, 1, 2, 0, 100000000);
	add_query(&self->in, self->queries, 2, 0, 5, 100000000);
	add_query(&self->in, self->queries, 3, 0, 1, 100000000);
	ASSERT_EQ(0, run_round(self, "static"));
	ASSERT_EQ(2, self->out.nr_decisions);
	ASSERT_EQ(3, self->decisions[0].query_id); /* tenant 0's earliest */
	ASSERT_EQ(0, memcmp(&want_lo, &self->decisions[0].cores, sizeof(want_lo)));
	ASSERT_EQ(1, self->decisions[1].query_id);
	ASSERT_EQ(0, memcmp(&want_hi, &self->decisions[1].cores, sizeof(want_hi)));
	ASSERT_EQ(0, policy_check_output(policy_find("static"), &self->in, &self->out, NULL));
}

TEST_F(pol, static_decide__three_tenants_on_eight_cores_get_3_3_2_and_use_2_each)
{
	/* shares {0,1,2} {3,4,5} {6,7}; profiled 1, 2, 4: 2 cores each, the lowest of the share */
	static const int want[3][2] = { { 0, 1 }, { 3, 4 }, { 6, 7 } };

	for (int t = 0; t < 3; t++) {
		self->tenants[t] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
		add_query(&self->in, self->queries, 100 + t, t, 0, 100000000);
	}
	ASSERT_EQ(0, run_round(self, "static"));
	ASSERT_EQ(3, self->out.nr_decisions);
	for (int t = 0; t < 3; t++) {
		struct policy_cpuset w = cpus_of(want[t], 2);

		ASSERT_EQ(100 + t, self->decisions[t].query_id);
		ASSERT_EQ(0, memcmp(&w, &self->decisions[t].cores, sizeof(w)));
	}
}

TEST_F(pol, static_decide__a_tenant_waits_for_its_own_block_only)
{
	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	self->tenants[1] = self->tenants[0];
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	add_query(&self->in, self->queries, 2, 0, 1, 100000000);
	add_query(&self->in, self->queries, 3, 1, 2, 100000000);
	self->queries[0].in_flight = true;
	self->running[0] = (struct policy_decision){ .query_id = 1, .tenant = 0, .nr_cores = 4 };
	self->in.nr_running = 1;
	policy_cpuset_zero(&self->free);
	for (int c = 4; c < 8; c++)
		policy_cpuset_set(&self->free, c);
	ASSERT_EQ(0, run_round(self, "static"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(3, self->decisions[0].query_id);
	ASSERT_EQ(4, self->decisions[0].nr_cores);
}

TEST_F(pol, temporal_decide__waits_for_the_whole_machine_where_fcfs_does_not)
{
	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 100000000 };
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	add_query(&self->in, self->queries, 2, 0, 1, 100000000);
	/* core 0 is not free (say, its executor is being restarted); nothing runs */
	policy_cpuset_clear(&self->free, 0);
	ASSERT_EQ(0, run_round(self, "temporal"));
	ASSERT_EQ(0, self->out.nr_decisions);
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(4, self->decisions[0].nr_cores);

	/* the whole machine free: one query, on 4 of the 8 cores (profiled 1, 2, 4) */
	policy_cpuset_set(&self->free, 0);
	ASSERT_EQ(0, run_round(self, "temporal"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(1, self->decisions[0].query_id);
	ASSERT_EQ(4, self->decisions[0].nr_cores);
	ASSERT_EQ(540000, self->decisions[0].alone_ns);
}

TEST_F(pol, temporal_decide__uses_the_count_fastest_for_the_model)
{
	/*
	 * 2 layers, 1 version, profiled 1, 2, 4 cores (µs): layer 0 100, 60, 70;
	 * layer 1 100, 50, 80. Whole model: 200, 110, 150: 2 cores is fastest,
	 * as VELTAIR's ResNet-50 is faster on 56 cores than on 64.
	 */
	static const uint64_t hump_ns[] = { 100000, 60000, 70000, 100000, 50000, 80000 };
	static const struct policy_costs hump = {
		.nr_layers = 2,
		.nr_versions = 1,
		.nr_core_counts = 3,
		.nr_levels = 1,
		.core_counts = tiny_counts,
		.latency_ns = hump_ns,
	};

	self->tenants[0] = (struct policy_tenant){ .costs = &hump, .qos_ns = 100000000, .uid = 1 };
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	ASSERT_EQ(0, run_round(self, "temporal"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(2, self->decisions[0].nr_cores);
	ASSERT_EQ(110000, self->decisions[0].alone_ns);
	/* fcfs takes every free core: 4 of them, 150 µs */
	ASSERT_EQ(0, run_round(self, "fcfs"));
	ASSERT_EQ(4, self->decisions[0].nr_cores);
	ASSERT_EQ(150000, self->decisions[0].alone_ns);
	/* from layer 1 on: 100, 50, 80: still 2 */
	self->queries[0].next_layer = 1;
	ASSERT_EQ(0, run_round(self, "temporal"));
	ASSERT_EQ(2, self->decisions[0].nr_cores);
	ASSERT_EQ(50000, self->decisions[0].alone_ns);
}

TEST(temporal_decide__a_new_tenant_in_a_slot_gets_its_own_plan)
{
	/* one policy across two rounds: slot 0 first holds tiny (best 4 cores), then hump (best 2) */
	static const uint64_t hump_ns[] = { 100000, 60000, 70000, 100000, 50000, 80000 };
	static const struct policy_costs hump = {
		.nr_layers = 2,
		.nr_versions = 1,
		.nr_core_counts = 3,
		.nr_levels = 1,
		.core_counts = tiny_counts,
		.latency_ns = hump_ns,
	};
	struct policy_config cfg = { .late = POLICY_LATE_SERVE };
	struct policy_tenant tenant = { .costs = &tiny, .qos_ns = 100000000, .uid = 7 };
	struct policy_query q = { .id = 1, .deadline_ns = 100000000 };
	struct policy_decision dec[1];
	uint8_t versions[8];
	struct policy_output out = {
		.decisions = dec, .max_decisions = 1, .versions = versions, .max_versions = 8
	};
	struct policy_input in = {
		.tenants = &tenant,
		.nr_tenants = 1,
		.queries = &q,
		.nr_queries = 1,
		.free = &cfg.online,
	};
	struct policy *p;

	fill_tiny();
	for (int c = 0; c < 8; c++)
		policy_cpuset_set(&cfg.online, c);
	p = policy_create(policy_find("temporal"), &cfg, NULL);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, policy_decide(p, &in, &out, NULL));
	ASSERT_EQ(4, dec[0].nr_cores);
	tenant = (struct policy_tenant){ .costs = &hump, .qos_ns = 100000000, .uid = 8 };
	policy_output_reset(&out);
	ASSERT_EQ(0, policy_decide(p, &in, &out, NULL));
	ASSERT_EQ(2, dec[0].nr_cores);
	policy_destroy(p);
}

TEST_F(pol, model_wise_decide__takes_the_fewest_cores_whose_alone_latency_meets_qos)
{
	/* QoS 1000 µs: the whole model alone is 1870 µs on 1 core, 960 µs on 2 */
	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 1000000 };
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	ASSERT_EQ(0, run_round(self, "model-wise"));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(3, self->decisions[0].last_layer);
	ASSERT_EQ(2, self->decisions[0].nr_cores);
	ASSERT_EQ(960000, self->decisions[0].predicted_ns);
	/*
	 * layer-wise: layer 0's share of the QoS is its alone latency at the
	 * largest count over the model's, 250 / 540 x 1000 = 463 µs: 2 cores (450).
	 */
	ASSERT_EQ(0, run_round(self, "layer-wise"));
	ASSERT_EQ(1, self->decisions[0].last_layer);
	ASSERT_EQ(2, self->decisions[0].nr_cores);
	ASSERT_EQ(450000, self->decisions[0].predicted_ns);
}

TEST_HARNESS_MAIN
