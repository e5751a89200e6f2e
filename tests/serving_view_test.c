// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving core's views (daemon/serving_view.c) on a core built by
 * hand, no executor: serving_tenant_names lists the live tenants in
 * admission order, however many admissions came before them.
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "serving_internal.h"

/* A tenant named name at place i, admitted order-th. */
static void live(struct serving *s, int i, const char *name, unsigned int order)
{
	s->tenants[i].used = true;
	s->tenants[i].order = order;
	strcpy(s->tenants[i].name, name);
}

/*
 * After some 3 billion admissions (orders given to every submit, removed
 * or refused ones too): three live, listed by order, answered at once.
 * Main walked every order given times every place: the harness's time
 * limit ended it.
 */
TEST(tenant_names__live_ones_in_admission_order_after_billions_of_submits)
{
	struct serving *s = calloc(1, sizeof(*s));
	const char *names[3] = { 0 };

	ASSERT_NE(NULL, s);
	s->next_order = 3000000000u;
	live(s, 40, "last", 2999999999u);
	live(s, 3, "first", 7);
	live(s, 17, "second", 2000000000u);
	/* room for two: the count is still three */
	EXPECT_EQ(3, serving_tenant_names(s, names, 2));
	EXPECT_EQ(NULL, names[2]);
	EXPECT_EQ(3, serving_tenant_names(s, names, 3));
	EXPECT_STREQ("first", names[0]);
	EXPECT_STREQ("second", names[1]);
	EXPECT_STREQ("last", names[2]);
	free(s);
}

TEST_HARNESS_MAIN
