// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of kernel version lists by name (executor/profile_versions.c): the
 * one comparison finds the first version that differs, a profile's lists
 * and a list put layer by layer (as an executor reports it) compare equal
 * exactly when their names and order are, and a list full of garbage is
 * read within its bounds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "profile_versions.h"

#define NAME_LEN PROFILE_VERSION_NAME_LEN

static const int nr_versions[] = { 1, 3, 2 };
static const char *const names[3][3] = {
	{ "input" },
	{ "onednn-nhwc", "row-split", "winograd" },
	{ "gemm", "row-split" },
};

FIXTURE(versions)
{
	struct profile *p;
	struct coloc_shm_versions want, got;
};

FIXTURE_SETUP(versions)
{
	static const int levels[] = { 0, 50 };
	struct coloc_err err = { 0 };

	self->p = profile_new(3, nr_versions, 1, 2, levels, &err);
	ASSERT_NE(NULL, self->p) TH_LOG("%s", err.msg);
	for (int l = 0; l < 3; l++)
		for (int v = 0; v < nr_versions[l]; v++)
			snprintf(self->p->layers[l].version_names[v], NAME_LEN, "%s", names[l][v]);
	ASSERT_EQ(0, profile_versions_of(self->p, &self->want));
	memset(&self->got, 0, sizeof(self->got));
}

FIXTURE_TEARDOWN(versions)
{
	profile_free(self->p);
}

/* Layer l of names, as an executor puts it, with versions a and b swapped (a == b: none). */
static int put_layer(struct coloc_shm_versions *w, int l, int a, int b)
{
	char list[PROFILE_MAX_VERSIONS][NAME_LEN];

	for (int v = 0; v < nr_versions[l]; v++)
		snprintf(list[v], NAME_LEN, "%s", names[l][v == a ? b : v == b ? a : v]);
	return profile_versions_put(w, l, nr_versions[l], list);
}

TEST_F(versions, differ__first_index_where_names_or_lengths_part)
{
	char a[3][NAME_LEN] = { "gemm", "matmul", "oc-split" };
	char b[3][NAME_LEN] = { "gemm", "matmul", "oc-tiles" };

	EXPECT_EQ(-1, profile_versions_differ(3, a, 3, a));
	EXPECT_EQ(2, profile_versions_differ(3, a, 3, b));
	EXPECT_EQ(2, profile_versions_differ(3, a, 2, a));
	EXPECT_EQ(2, profile_versions_differ(2, a, 3, a));
	EXPECT_EQ(0, profile_versions_differ(0, a, 3, a));
	EXPECT_EQ(-1, profile_versions_differ(0, a, 0, b));
	memcpy(b[0], "matmul", sizeof("matmul"));
	EXPECT_EQ(0, profile_versions_differ(3, a, 3, b));
}

TEST_F(versions, same__as_put_by_an_executor_in_any_name_order)
{
	struct profile_versions_diff d;

	/* the names enter the table in another order than the profile's: only names count */
	ASSERT_EQ(0, put_layer(&self->got, 2, 0, 0));
	ASSERT_EQ(0, put_layer(&self->got, 1, 0, 0));
	ASSERT_EQ(0, put_layer(&self->got, 0, 0, 0));
	EXPECT_STREQ("input", self->want.names[0]);
	EXPECT_STREQ("gemm", self->got.names[0]);
	EXPECT_TRUE(profile_versions_same(&self->want, &self->got, 3, &d));
	EXPECT_EQ(5u, self->got.nr_names); /* row-split once */
}

TEST_F(versions, same__false_at_the_first_swapped_layer_with_both_names)
{
	struct profile_versions_diff d;

	ASSERT_EQ(0, put_layer(&self->got, 0, 0, 0));
	ASSERT_EQ(0, put_layer(&self->got, 1, 1, 2));
	ASSERT_EQ(0, put_layer(&self->got, 2, 0, 1));
	ASSERT_FALSE(profile_versions_same(&self->want, &self->got, 3, &d));
	EXPECT_EQ(1, d.layer);
	EXPECT_EQ(1, d.version);
	EXPECT_STREQ("row-split", d.want);
	EXPECT_STREQ("winograd", d.got);
	/* the first layer only: the same */
	EXPECT_TRUE(profile_versions_same(&self->want, &self->got, 1, &d));
}

TEST_F(versions, same__a_missing_version_is_an_empty_name)
{
	char other_isa[2][NAME_LEN] = { "onednn-nhwc", "row-split" };
	struct profile_versions_diff d;

	ASSERT_EQ(0, put_layer(&self->got, 0, 0, 0));
	ASSERT_EQ(0, profile_versions_put(&self->got, 1, 2, other_isa));
	ASSERT_EQ(0, put_layer(&self->got, 2, 0, 0));
	ASSERT_FALSE(profile_versions_same(&self->want, &self->got, 3, &d));
	EXPECT_EQ(1, d.layer);
	EXPECT_EQ(2, d.version);
	EXPECT_STREQ("winograd", d.want);
	EXPECT_STREQ("", d.got);
}

TEST_F(versions, put__refuses_a_full_table_and_bad_counts)
{
	char one[1][NAME_LEN];
	int l;

	for (l = 0; l < COLOC_SHM_MAX_VERSION_NAMES; l++) {
		snprintf(one[0], NAME_LEN, "v%d", l);
		ASSERT_EQ(0, profile_versions_put(&self->got, l, 1, one));
	}
	snprintf(one[0], NAME_LEN, "v%d", l);
	EXPECT_EQ(-E2BIG, profile_versions_put(&self->got, l, 1, one));
	snprintf(one[0], NAME_LEN, "v0");
	EXPECT_EQ(0, profile_versions_put(&self->got, l, 1, one));
	EXPECT_EQ(-EINVAL, profile_versions_put(&self->got, 0, 0, one));
	EXPECT_EQ(-EINVAL, profile_versions_put(&self->got, 0, PROFILE_MAX_VERSIONS + 1, one));
	EXPECT_EQ(-EINVAL, profile_versions_put(&self->got, COLOC_SHM_MAX_LAYERS, 1, one));
}

/* What a hostile executor may write, compared unchecked: nothing read out of bounds. */
TEST_F(versions, same__garbage_read_within_its_bounds)
{
	struct coloc_shm_versions *g = &self->got;
	struct profile_versions_diff d;

	memset(g, 0xff, sizeof(*g));
	g->nr_names = ~0u;
	ASSERT_FALSE(profile_versions_same(&self->want, g, COLOC_SHM_MAX_LAYERS + 5, &d));
	EXPECT_EQ(0, d.layer);
	EXPECT_EQ(0, d.version);
	EXPECT_STREQ("input", d.want);
	EXPECT_STREQ("", d.got); /* 0xff is past even the largest table */
	memset(g->layer, 1, sizeof(g->layer));
	ASSERT_FALSE(profile_versions_same(&self->want, g, 3, &d));
	EXPECT_EQ(NAME_LEN - 1, (int)strlen(d.got)); /* a name without its NUL, cut */
}

TEST_HARNESS_MAIN
