// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * How serving turns a profile into the policy's latency table
 * (profile_table_build, executor/profile_table.c), from hand-made profiles
 * of models/mobilenet_v2.model: a slowdown below one is clamped and said so,
 * and the level columns follow the versions the policy takes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "executor.h"
#include "profile_host.h"

static void model_path(char *buf, size_t len, const char *name)
{
	const char *root = getenv("COLOC_ROOT");

	snprintf(buf, len, "%s/models/%s.model", root ? root : ".", name);
}

/* A profile of model m with one version per layer, 2 core counts, alone and one stress level. */
static struct profile *hand_profile(const struct model *m, uint64_t alone, uint64_t stressed)
{
	int *versions = calloc(m->nr_layers, sizeof(*versions)), levels[2] = { 0, 50 };
	struct profile *p;

	for (int l = 0; versions && l < m->nr_layers; l++)
		versions[l] = 1;
	p = versions ? profile_new(m->nr_layers, versions, 2, 2, levels, NULL) : NULL;
	free(versions);
	for (int l = 0; p && l < m->nr_layers; l++)
		for (int c = 1; c <= 2; c++) {
			*profile_latency_cell(p, l, 0, c, 0) = alone;
			*profile_latency_cell(p, l, 0, c, 1) = stressed;
		}
	return p;
}

TEST(profile_table__build__clamps_a_slowdown_below_one_and_says_so)
{
	struct coloc_err err = { 0 };
	char path[512];
	struct model *m;
	struct profile *dip, *rise;
	struct policy_table t;

	model_path(path, sizeof(path), "mobilenet_v2");
	m = model_load(path, &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	dip = hand_profile(m, 1000, 900);
	rise = hand_profile(m, 1000, 1200);
	ASSERT_TRUE(dip && rise);

	ASSERT_EQ(0, profile_table_build(dip, m, &t, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(1.0, t.costs.level_slowdown[1]);
	EXPECT_NE(NULL, strstr(t.note, "0.900")) TH_LOG("%s", t.note);
	EXPECT_NE(NULL, strstr(t.note, "clamped")) TH_LOG("%s", t.note);
	/* the cells stay as measured */
	EXPECT_EQ(900, policy_costs_cell(&t.costs, 3, 0, 1, 1));
	EXPECT_EQ(2, t.costs.core_counts[1]);
	EXPECT_EQ(m->layers[3].macs, t.costs.layer_ops[3]);
	policy_table_free(&t);

	ASSERT_EQ(0, profile_table_build(rise, m, &t, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(1.2, t.costs.level_slowdown[1]);
	EXPECT_STREQ("", t.note);
	/* solo on all (2) cores: every layer at 1000 ns */
	EXPECT_EQ((uint64_t)m->nr_layers * 1000, policy_costs_solo_ns(&t.costs, 2));
	policy_table_free(&t);
	profile_free(dip);
	profile_free(rise);
	model_free(m);
}

/*
 * The level columns follow the versions the policy takes: two versions a
 * layer, the second 1 % faster alone but inside the first's CI (so not
 * taken), 1100 against 1200 ns stressed with its CI wholly below (taken).
 * The slowdown is 1100 / 1000 = 1.1, not the fastest cells' 1100 / 990.
 */
TEST(profile_table__build__level_columns_from_the_versions_the_policy_takes)
{
	struct coloc_err err = { 0 };
	char path[512];
	struct model *m;
	struct profile *p;
	struct policy_table t;
	int *versions, levels[2] = { 0, 50 };
	/* [version][level]: latency, CI low, CI high */
	static const uint64_t cell[2][2][3] = {
		{ { 1000, 950, 1050 }, { 1200, 1150, 1250 } },
		{ { 990, 940, 1040 }, { 1100, 1050, 1140 } },
	};

	model_path(path, sizeof(path), "mobilenet_v2");
	m = model_load(path, &err);
	ASSERT_NE(NULL, m) TH_LOG("%s", coloc_err_str(&err));
	versions = calloc(m->nr_layers, sizeof(*versions));
	ASSERT_NE(NULL, versions);
	for (int l = 0; l < m->nr_layers; l++)
		versions[l] = 2;
	p = profile_new(m->nr_layers, versions, 2, 2, levels, NULL);
	free(versions);
	ASSERT_NE(NULL, p);
	for (int l = 0; l < m->nr_layers; l++)
		for (int v = 0; v < 2; v++)
			for (int c = 1; c <= 2; c++)
				for (int k = 0; k < 2; k++) {
					uint64_t *at = profile_latency_cell(p, l, v, c, k);

					*at = cell[v][k][0];
					p->ci_lo_ns[at - p->latency_ns] = cell[v][k][1];
					p->ci_hi_ns[at - p->latency_ns] = cell[v][k][2];
				}
	ASSERT_EQ(0, profile_table_build(p, m, &t, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(1.1, t.costs.level_slowdown[1]);
	EXPECT_STREQ("", t.note);
	policy_table_free(&t);
	profile_free(p);
	model_free(m);
}

TEST_HARNESS_MAIN
