/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What profile_test.c and profile_tool_test.c share: the fixture profile,
 * a fresh folder of the test's own (removed at teardown) with a profile's
 * path in it. Include it after kselftest_harness.h.
 */
#ifndef COLOC_TESTS_PROFILE_FIXTURE_H
#define COLOC_TESTS_PROFILE_FIXTURE_H

#include <stdio.h>
#include "error.h"
#include "testutil.h"

FIXTURE(profile)
{
	char dir[64];
	char path[128];
	struct coloc_err err;
};

FIXTURE_SETUP(profile)
{
	ASSERT_EQ(0, tu_make_tmpdir("profile-test", self->dir, sizeof(self->dir)));
	snprintf(self->path, sizeof(self->path), "%s/p.profile", self->dir);
}

FIXTURE_TEARDOWN(profile)
{
	if (tu_remove_tree(self->dir))
		TH_LOG("could not remove %s", self->dir);
}

#endif /* COLOC_TESTS_PROFILE_FIXTURE_H */
