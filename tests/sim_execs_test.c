// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the simulated executors (sim/executors.c), colocd's slots and
 * executors run by the policy library's assignment (policy/assign.h): an
 * executor holds COLOC_SHM_NR_SLOTS queries and the rest wait in arrival
 * order, slots go to the executor holding the fewest, a block's executor is
 * refused while busy, and a whole run serves queries queued beyond the
 * slots in arrival order, each in its turn (times worked out by hand).
 */
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "sim.h"
#include "sim_hand_tables.h"

FIXTURE(sim_execs)
{
	struct sim_execs e;
	struct coloc_err err;
};

FIXTURE_SETUP(sim_execs)
{
	memset(&self->e, 0, sizeof(self->e));
	memset(&self->err, 0, sizeof(self->err));
}

FIXTURE_TEARDOWN(sim_execs)
{
	sim_execs_free(&self->e);
}

static struct policy_query query(uint64_t id, int tenant)
{
	return (struct policy_query){ .id = id, .tenant = tenant, .arrival_ns = id * MS };
}

/* One executor: its slots take the first arrivals in order, the rest wait, first first. */
TEST_F(sim_execs, take__one_executor_holds_its_slots_the_rest_wait_in_order)
{
	struct policy_query q;

	ASSERT_EQ(0, sim_execs_init(&self->e, 2, 0, &self->err));
	for (uint64_t id = 0; id < COLOC_SHM_NR_SLOTS + 2; id++)
		ASSERT_EQ(0, sim_execs_wait(&self->e,
					    &(struct policy_query){
						    .id = id, .tenant = 1, .arrival_ns = id },
					    &self->err));
	EXPECT_FALSE(sim_execs_take(&self->e, 0, &q));
	for (uint64_t id = 0; id < COLOC_SHM_NR_SLOTS; id++) {
		ASSERT_TRUE(sim_execs_take(&self->e, 1, &q));
		EXPECT_EQ(id, q.id);
		EXPECT_TRUE(sim_execs_visible(&self->e, &q));
	}
	EXPECT_FALSE(sim_execs_take(&self->e, 1, &q));
	EXPECT_EQ(2, self->e.nr_waiting);
	ASSERT_NE(NULL, sim_execs_waiting(&self->e, 1, 0));
	EXPECT_EQ((uint64_t)COLOC_SHM_NR_SLOTS, sim_execs_waiting(&self->e, 1, 0)->id);
	EXPECT_EQ(NULL, sim_execs_waiting(&self->e, 1, 2));
	/* the first finishes: its slot goes to the next waiting */
	q = query(0, 1);
	ASSERT_EQ(0, sim_execs_start(&self->e, &q));
	sim_execs_end(&self->e, &q, true);
	ASSERT_TRUE(sim_execs_take(&self->e, 1, &q));
	EXPECT_EQ((uint64_t)COLOC_SHM_NR_SLOTS, q.id);
}

/*
 * Two executors: slots alternate between them (the one holding the fewest,
 * the first of equals); a block goes to an idle executor, and with both
 * busy a new query's block is refused; the one that started stays on its
 * executor and waits for it.
 */
TEST_F(sim_execs, start__idle_executor_or_refused_started_stays)
{
	struct policy_query q[3];

	ASSERT_EQ(0, sim_execs_init(&self->e, 1, 2, &self->err));
	for (int i = 0; i < 3; i++) {
		q[i] = query((uint64_t)i, 0);
		ASSERT_EQ(0, sim_execs_wait(&self->e, &q[i], &self->err));
		ASSERT_TRUE(sim_execs_take(&self->e, 0, &q[i]));
	}
	EXPECT_EQ(0u, self->e.t[0].id[0][0]);
	EXPECT_EQ(1u, self->e.t[0].id[1][0]);
	EXPECT_EQ(2u, self->e.t[0].id[0][1]);
	EXPECT_EQ(0, sim_execs_start(&self->e, &q[0]));
	q[0].in_flight = true;
	EXPECT_EQ(1, sim_execs_start(&self->e, &q[1]));
	q[1].in_flight = true;
	EXPECT_FALSE(sim_execs_visible(&self->e, &q[2]));
	EXPECT_EQ(-1, sim_execs_start(&self->e, &q[2]));
	/* q0's first block ends on executor 0; q1's goes on */
	q[0].in_flight = false;
	q[0].next_layer = 1;
	sim_execs_end(&self->e, &q[0], false);
	EXPECT_TRUE(sim_execs_visible(&self->e, &q[0]));
	/* q2 would start where no started query waits: none is idle but 0, which holds q0 */
	EXPECT_EQ(0, sim_execs_start(&self->e, &q[2]));
	q[2].in_flight = true;
	EXPECT_FALSE(sim_execs_visible(&self->e, &q[0]));
	EXPECT_EQ(-1, sim_execs_start(&self->e, &q[0]));
}

/* ---- a whole run ---------------------------------------------------------------------- */

struct ends {
	uint64_t end_ns[16];
	int nr;
};

static void watch_end(void *ctx, const struct sim_query_record *r)
{
	struct ends *e = ctx;

	if (!r->dropped && r->id < 16)
		e->end_ns[r->id] = r->end_ns;
	e->nr++;
}

/*
 * fcfs on one core, one executor, seven 10 ms queries arriving together:
 * four take the slots, three wait; each ends 10 ms after the one before,
 * in arrival order (query i at 10 (i + 1) ms), the waiting ones taking the
 * slots the first ones leave.
 */
TEST_F(sim_execs, run__queries_beyond_the_slots_wait_and_are_served_in_order)
{
	static uint64_t at[7];
	static int who[7];
	struct sim_tenant t = { .costs = &one_layer, .qos_ns = 1000 * MS, .share = 1 };
	struct sim_trace trace = { .time_ns = at, .tenant = who, .nr = 7 };
	struct ends ends = { 0 };
	struct sim_params p = {
		.policy = policy_find("fcfs"),
		.machine = { .nr_cores = 1, .nr_sockets = 1, .llc_size = 1 },
		.late = POLICY_LATE_DROP,
		.tenants = &t,
		.nr_tenants = 1,
		.trace = &trace,
		.duration_ns = 1000 * MS,
		.interference = { .full_slowdown = 1.0 },
		.max_queued = SIM_DEFAULT_MAX_QUEUED,
		.on_query = watch_end,
		.ctx = &ends,
	};
	struct sim_result r;

	ASSERT_EQ(0, sim_run(&p, &r, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(7, ends.nr);
	for (int i = 0; i < 7; i++)
		EXPECT_EQ((uint64_t)(i + 1) * 10 * MS, ends.end_ns[i]);
	EXPECT_EQ(7u, r.tenant[0].completed);
	EXPECT_EQ(0u, r.tenant[0].unserved);
}

TEST_HARNESS_MAIN
