// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of colocd's check of the kernel versions an executor reports at
 * ready (daemon/shm_summary_check.c, shm_versions_check): an honest list
 * passes; each way a hostile executor can break shm.h's form is refused
 * in words that quote nothing of it.
 */
#include <string.h>
#include "kselftest_harness.h"
#include "profile_versions.h"
#include "shm_summary_check.h"

FIXTURE(check)
{
	struct coloc_shm_versions v;
	char why[256];
};

/* Two layers as an executor reports them: "input", then "gemm" and "matmul". */
FIXTURE_SETUP(check)
{
	char input[1][PROFILE_VERSION_NAME_LEN] = { "input" };
	char fc[2][PROFILE_VERSION_NAME_LEN] = { "gemm", "matmul" };

	memset(&self->v, 0, sizeof(self->v));
	ASSERT_EQ(0, profile_versions_put(&self->v, 0, 1, input));
	ASSERT_EQ(0, profile_versions_put(&self->v, 1, 2, fc));
	self->why[0] = '\0';
}

FIXTURE_TEARDOWN(check)
{
}

static bool refused(FIXTURE_DATA(check) * self, const char *says)
{
	return !shm_versions_check(&self->v, 2, self->why, sizeof(self->why)) &&
	       strstr(self->why, says);
}

TEST_F(check, versions__honest_list_passes)
{
	EXPECT_TRUE(shm_versions_check(&self->v, 2, self->why, sizeof(self->why)))
	TH_LOG("%s", self->why);
	/* a layer past the summary's count is not looked at */
	self->v.layer[2][3] = 0xff;
	EXPECT_TRUE(shm_versions_check(&self->v, 2, self->why, sizeof(self->why)));
}

TEST_F(check, versions__name_table_out_of_range_refused)
{
	self->v.nr_names = 0;
	EXPECT_TRUE(refused(self, "a count of names out of 1 to 64")) TH_LOG("%s", self->why);
	self->v.nr_names = COLOC_SHM_MAX_VERSION_NAMES + 1;
	EXPECT_TRUE(refused(self, "a count of names out of 1 to 64"));
	self->v.nr_names = 3;
	self->v.reserved = 1;
	EXPECT_TRUE(refused(self, "a count of names"));
	self->v.reserved = 0;
	EXPECT_FALSE(shm_versions_check(&self->v, COLOC_SHM_MAX_LAYERS + 1, self->why,
					sizeof(self->why)));
}

TEST_F(check, versions__bad_names_refused_without_quoting_them)
{
	memset(self->v.names[1], 'Z', sizeof(self->v.names[1]));
	EXPECT_TRUE(refused(self, "a kernel version name that is not 1 to 47"))
	TH_LOG("%s", self->why);
	EXPECT_EQ(NULL, strstr(self->why, "ZZ"));
	snprintf(self->v.names[1], sizeof(self->v.names[1]), "../etc");
	EXPECT_TRUE(refused(self, "a kernel version name"));
	EXPECT_EQ(NULL, strstr(self->why, "etc"));
	snprintf(self->v.names[1], sizeof(self->v.names[1]), "ge mm");
	EXPECT_TRUE(refused(self, "a kernel version name"));
	self->v.names[1][0] = '\0';
	EXPECT_TRUE(refused(self, "a kernel version name"));
}

TEST_F(check, versions__layer_lists_none_gap_or_outside_refused)
{
	const char *says = "reported a layer's kernel versions as none";

	self->v.layer[0][0] = 0;
	EXPECT_TRUE(refused(self, says)) TH_LOG("%s", self->why);
	self->v.layer[0][0] = 1;
	self->v.layer[1][1] = 0;
	self->v.layer[1][2] = 3;
	EXPECT_TRUE(refused(self, says)) TH_LOG("gap: %s", self->why);
	self->v.layer[1][1] = 4; /* past the 3 names */
	self->v.layer[1][2] = 0;
	EXPECT_TRUE(refused(self, says)) TH_LOG("outside: %s", self->why);
	self->v.layer[1][1] = 3;
	EXPECT_TRUE(shm_versions_check(&self->v, 2, self->why, sizeof(self->why)));
}

TEST_HARNESS_MAIN
