// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of colocd's slot and executor assignment (policy/assign.c) as a
 * pure unit, on hand-made views of a tenant's executors: which executor a
 * waiting query's slot is on, which slot-holding queries could run now,
 * where a query moves and which executor runs its next block. Every
 * expectation follows from the rules assign.h states.
 */
#include <string.h>
#include "kselftest_harness.h"
#include "assign.h"

#define SLOTS 4
#define EXECS 3

FIXTURE(assign)
{
	struct policy_slot_view slot[EXECS][SLOTS];
	struct policy_exec_view ex[EXECS];
};

FIXTURE_SETUP(assign)
{
	memset(self->slot, 0, sizeof(self->slot));
	for (int x = 0; x < EXECS; x++)
		self->ex[x] = (struct policy_exec_view){ .nr_slots = SLOTS, .slot = self->slot[x] };
}

FIXTURE_TEARDOWN(assign)
{
}

/* Puts a query into slot k of executor x. */
static void hold(FIXTURE_DATA(assign) * self, int x, int k, bool started, bool in_flight,
		 uint64_t arrival)
{
	self->slot[x][k] = (struct policy_slot_view){
		.used = true, .started = started, .in_flight = in_flight, .arrival_ns = arrival
	};
}

/* A waiting query's slot: on the executor holding the fewest (the first such), none when all are full. */
TEST_F(assign, slot__on_the_executor_holding_the_fewest_first_of_equals)
{
	EXPECT_EQ(0, policy_assign_slot(self->ex, EXECS));
	hold(self, 0, 0, false, false, 1);
	hold(self, 0, 1, false, false, 2);
	hold(self, 1, 2, false, false, 3);
	hold(self, 2, 0, false, false, 4);
	EXPECT_EQ(1, policy_assign_slot(self->ex, EXECS));
	EXPECT_EQ(0, policy_assign_free_slot(&self->ex[1]));
	EXPECT_EQ(2, policy_assign_free_slot(&self->ex[0]));
	for (int x = 0; x < EXECS; x++)
		for (int k = 0; k < SLOTS; k++)
			hold(self, x, k, false, false, 10);
	EXPECT_EQ(-1, policy_assign_slot(self->ex, EXECS));
	EXPECT_EQ(-1, policy_assign_free_slot(&self->ex[2]));
}

/*
 * Runnable: a started query only while its own executor is idle; one that
 * has not started while any executor of the tenant is; never one in
 * flight or an empty slot.
 */
TEST_F(assign, runnable__started_on_its_idle_executor_new_on_any_idle)
{
	hold(self, 0, 0, true, false, 1);
	hold(self, 0, 1, false, false, 2);
	hold(self, 1, 0, false, true, 3);
	self->ex[1].busy = true;
	EXPECT_TRUE(policy_assign_runnable(self->ex, EXECS, 0, 0));
	EXPECT_TRUE(policy_assign_runnable(self->ex, EXECS, 0, 1));
	EXPECT_FALSE(policy_assign_runnable(self->ex, EXECS, 1, 0));
	EXPECT_FALSE(policy_assign_runnable(self->ex, EXECS, 2, 3));
	self->ex[0].busy = true;
	EXPECT_FALSE(policy_assign_runnable(self->ex, EXECS, 0, 0));
	/* executor 2 is idle: the new query may still run there */
	EXPECT_TRUE(policy_assign_runnable(self->ex, EXECS, 0, 1));
	self->ex[2].busy = true;
	EXPECT_FALSE(policy_assign_runnable(self->ex, EXECS, 0, 1));
}

/* A moving query takes a free slot, else that of the latest query yet to start and not in flight. */
TEST_F(assign, move_slot__free_else_the_latest_not_started_else_none)
{
	hold(self, 2, 0, false, false, 5);
	EXPECT_EQ(1, policy_assign_move_slot(&self->ex[2]));
	hold(self, 2, 1, false, false, 9);
	hold(self, 2, 2, true, false, 20);
	hold(self, 2, 3, false, true, 30);
	EXPECT_EQ(1, policy_assign_move_slot(&self->ex[2]));
	hold(self, 2, 1, true, false, 9);
	EXPECT_EQ(0, policy_assign_move_slot(&self->ex[2]));
	hold(self, 2, 0, false, true, 5);
	EXPECT_EQ(-1, policy_assign_move_slot(&self->ex[2]));
}

/*
 * The executor of a block: a started query's own (none while it is busy);
 * a new query's own when idle and free of started queries; else, first,
 * an idle executor without a started query waiting, then any idle one
 * with room.
 */
TEST_F(assign, executor__started_stays_new_prefers_own_then_idle_without_started)
{
	hold(self, 0, 0, true, false, 1);
	hold(self, 0, 1, false, false, 2);
	hold(self, 1, 0, true, false, 3);
	EXPECT_EQ(0, policy_assign_executor(self->ex, EXECS, 0, 0));
	/* executor 0 holds a started query: the new one goes where none waits */
	EXPECT_EQ(2, policy_assign_executor(self->ex, EXECS, 0, 1));
	self->ex[2].busy = true;
	/* none such idle: its own, idle, comes first among the rest */
	EXPECT_EQ(0, policy_assign_executor(self->ex, EXECS, 0, 1));
	self->ex[0].busy = true;
	EXPECT_EQ(-1, policy_assign_executor(self->ex, EXECS, 0, 0));
	EXPECT_EQ(1, policy_assign_executor(self->ex, EXECS, 0, 1));
	/* executor 1 full of queries that started: no room to move into */
	for (int k = 1; k < SLOTS; k++)
		hold(self, 1, k, true, false, 4);
	EXPECT_EQ(-1, policy_assign_executor(self->ex, EXECS, 0, 1));
	/* a new query on its own idle executor with no started query stays */
	self->ex[2].busy = false;
	hold(self, 2, 3, false, false, 7);
	EXPECT_EQ(2, policy_assign_executor(self->ex, EXECS, 2, 3));
}

TEST_HARNESS_MAIN
