// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's uid-fair queue (daemon/uid_turns.c), which orders the profile
 * parses: items pushed by hand, the order they come out against the one
 * worked out here by the rule (root's first, then one per member uid in
 * increasing order from the last served, each uid's oldest first).
 */
#include <stddef.h>

#include "kselftest_harness.h"
#include "uid_turns.h"

#define MEMBER_A 64990
#define MEMBER_B 64991
#define MEMBER_C 64992

/* The index (in items) of each item popped, until empty, into order; how many. */
static int drain(struct uid_turns *q, const struct uid_turns_item *items, int *order, int max)
{
	struct uid_turns_item *item;
	int n = 0;

	while (n < max && (item = uid_turns_pop(q)))
		order[n++] = (int)(item - items);
	return n;
}

TEST(uid_turns__empty_gives_nothing)
{
	struct uid_turns q = { 0 };

	EXPECT_EQ(NULL, uid_turns_pop(&q));
}

/* One member's 16, then another's one: the other's comes second, not seventeenth. */
TEST(uid_turns__a_members_many_items_hold_another_uid_for_one_turn)
{
	struct uid_turns_item items[17];
	struct uid_turns q = { 0 };
	int order[17], n;

	for (int i = 0; i < 16; i++)
		uid_turns_push(&q, &items[i], MEMBER_A);
	uid_turns_push(&q, &items[16], MEMBER_B);
	n = drain(&q, items, order, 17);
	ASSERT_EQ(17, n);
	EXPECT_EQ(0, order[0]);
	EXPECT_EQ(16, order[1]);
	/* then the member's own, oldest first */
	for (int i = 2; i < 17; i++)
		EXPECT_EQ(i - 1, order[i]);
}

/* Root's items go first, whenever they came; members take turns in uid order. */
TEST(uid_turns__root_first_then_members_in_turns)
{
	static const uid_t uids[] = { MEMBER_C, MEMBER_A, MEMBER_A, MEMBER_B, 0,
				      MEMBER_C, MEMBER_B, 0,	    MEMBER_A };
	/* by the rule: root's 4, 7; then A (the least) 1, B 3, C 0; A 2, B 6, C 5; A 8 */
	static const int want[] = { 4, 7, 1, 3, 0, 2, 6, 5, 8 };
	struct uid_turns_item items[9];
	struct uid_turns q = { 0 };
	int order[9];

	for (int i = 0; i < 9; i++)
		uid_turns_push(&q, &items[i], uids[i]);
	ASSERT_EQ(9, drain(&q, items, order, 9));
	for (int i = 0; i < 9; i++) {
		EXPECT_EQ(want[i], order[i]) TH_LOG("turn %d", i);
	}
}

/* The turn goes on from the uid served last, across pushes between pops. */
TEST(uid_turns__the_turn_resumes_after_the_last_served_uid)
{
	struct uid_turns_item items[5];
	struct uid_turns q = { 0 };

	uid_turns_push(&q, &items[0], MEMBER_B);
	uid_turns_push(&q, &items[1], MEMBER_B);
	EXPECT_EQ(&items[0], uid_turns_pop(&q));
	/* A comes after B was served: C's turn is next, then A's, then B's again */
	uid_turns_push(&q, &items[2], MEMBER_A);
	uid_turns_push(&q, &items[3], MEMBER_C);
	EXPECT_EQ(&items[3], uid_turns_pop(&q));
	EXPECT_EQ(&items[2], uid_turns_pop(&q));
	uid_turns_push(&q, &items[4], 0);
	EXPECT_EQ(&items[4], uid_turns_pop(&q));
	EXPECT_EQ(&items[1], uid_turns_pop(&q));
	EXPECT_EQ(NULL, uid_turns_pop(&q));
}

TEST_HARNESS_MAIN
