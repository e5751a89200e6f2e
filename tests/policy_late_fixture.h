/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the tests of the late-query rule (late.c) on the four baselines
 * share, after policy_fixture.h and policy_two_models.h: the baselines,
 * one tenant of the tiny model with a QoS of 5 ms, and a round that
 * serves one query or gives one up (policy_late_baselines_test.c,
 * policy_late_overdue_test.c).
 */
#ifndef COLOC_TESTS_POLICY_LATE_FIXTURE_H
#define COLOC_TESTS_POLICY_LATE_FIXTURE_H

#define QOS (5 * MS)

static const char *const baselines[] = { "fcfs", "temporal", "os", "static" };

/*
 * One tenant of the tiny model (QoS 5 ms, 540 us alone on 4 of the 8
 * cores) in slot 0, the others empty, every core free, no query, at now.
 */
static inline void one_tenant(FIXTURE_DATA(pol) * self, uint64_t now)
{
	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = QOS };
	self->in.nr_tenants = 1;
	self->in.nr_queries = 0;
	self->in.nr_running = 0;
	self->free = self->cfg.online;
	self->in.now_ns = now;
}

/*
 * A round of policy name at self's input gives no query up and decides one
 * block, of query id; each failure names the policy.
 */
static inline void round_serves(struct __test_metadata *_metadata, FIXTURE_DATA(pol) * self,
				const char *name, uint64_t id)
{
	ASSERT_EQ(0, run_round(self, name)) TH_LOG("%s", name);
	EXPECT_EQ(0, self->out.nr_drops) TH_LOG("%s gave a query up", name);
	ASSERT_EQ(1, self->out.nr_decisions) TH_LOG("%s", name);
	EXPECT_EQ(id, self->decisions[0].query_id)
	TH_LOG("%s: query %llu first", name, (unsigned long long)id);
}

/* A round of policy name at self's input gives query id up, as one it cannot meet, and only it. */
static inline void round_gives_up(struct __test_metadata *_metadata, FIXTURE_DATA(pol) * self,
				  const char *name, uint64_t id)
{
	ASSERT_EQ(0, run_round(self, name)) TH_LOG("%s", name);
	ASSERT_EQ(1, self->out.nr_drops) TH_LOG("%s", name);
	EXPECT_EQ(id, self->drops[0].query_id) TH_LOG("%s", name);
	EXPECT_EQ(POLICY_DROP_CANNOT_MEET, self->drops[0].reason) TH_LOG("%s", name);
}

#endif /* COLOC_TESTS_POLICY_LATE_FIXTURE_H */
