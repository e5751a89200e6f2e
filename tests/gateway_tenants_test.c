// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-gateway and the tenants already in colocd: the real gateway as the
 * `coloc` user in front of the fake colocd (gateway_fake_colocd.h), whose
 * "fast" is there before the gateway starts. A tenant of the gateway's uid
 * that colocd says runs the same model path is replaced, not adopted (the
 * path is what its submitter said, not the bytes it runs); another uid's is
 * an error that names that uid. With --tenant-prefix the gateway's tenants
 * are named apart from anyone's model names. A tenant colocd lost (a
 * restart) is submitted again, and one of another uid is not the model's.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "gateway_fake_colocd.h"
#include <pwd.h>

/* "fast" there before the gateway, of owner, said to run the repository's fast/1/model.model. */
static void take_fast(FIXTURE_DATA(fwd) * self, int owner, char *model, size_t len)
{
	char repo[PATH_MAX];

	if (!realpath(self->env.repo, repo))
		snprintf(repo, sizeof(repo), "%s", self->env.repo);
	snprintf(model, len, "%s/fast/1/model.model", repo);
	self->fake.taken = "fast";
	self->fake.taken_model = model;
	self->fake.taken_owner = owner;
	atomic_store(&self->fake.taken_state, FAKE_TAKEN_THERE);
}

/*
 * Two KServe pods with one /mnt/models, or a model updated in place, give
 * the same path for other bytes: the gateway removes its uid's tenant and
 * submits its own (before: adopted it by the path, serving its model).
 */
TEST_F_TIMEOUT(fwd, adopt__a_tenant_of_its_uid_with_its_path_is_replaced, 120)
{
	struct passwd *pw = getpwnam("coloc");
	char model[PATH_MAX + 32];

	ASSERT_NE(NULL, pw);
	take_fast(self, (int)pw->pw_uid, model, sizeof(model));
	ASSERT_TRUE(start_gateway(self, NULL));
	EXPECT_EQ(1, atomic_load(&self->fake.removes));
	EXPECT_EQ(FAKE_TAKEN_NONE, atomic_load(&self->fake.taken_state))
	TH_LOG("the gateway submitted its own fast after the remove");
	EXPECT_EQ(200, infer(self, "fast", 1));
}

/*
 * Another uid's tenant of the name (here: there again when the gateway
 * loads fast after its unload) is neither removed nor adopted, and the load's
 * error names that uid (before: adopted by its path).
 */
TEST_F_TIMEOUT(fwd, adopt__another_uids_tenant_is_an_error_naming_it, 120)
{
	const char *control[] = { "--model-control", NULL };
	char model[PATH_MAX + 32];

	ASSERT_TRUE(start_gateway(self, control));
	ASSERT_EQ(200, post_empty(self, "/v2/repository/models/fast/unload", 1));
	take_fast(self, 0, model, sizeof(model));
	EXPECT_NE(200, post_empty(self, "/v2/repository/models/fast/load", 2));
	EXPECT_TRUE(body_has(self, 2, "belongs to uid 0", false));
	EXPECT_EQ(0, atomic_load(&self->fake.removes));
	EXPECT_NE(200, infer(self, "fast", 3));
	EXPECT_EQ(200, infer(self, "slow", 4)) TH_LOG("the other models are served");
}

/*
 * With --tenant-prefix (the ServingRuntime passes the InferenceService's
 * namespace and name) the gateway's tenants are its own names: a member's
 * tenant named as the model (review2 MEDIUM 1's squatting) is left alone
 * and the model served (before: no such option, and the load failed).
 */
TEST_F_TIMEOUT(fwd, prefix__a_squatted_model_name_is_served_under_the_prefix, 120)
{
	const char *prefixed[] = { "--tenant-prefix", "ns.isvc.", NULL };
	char model[PATH_MAX + 32];

	take_fast(self, 0, model, sizeof(model));
	ASSERT_TRUE(start_gateway(self, prefixed));
	EXPECT_EQ(200, infer(self, "fast", 1));
	EXPECT_EQ(0, atomic_load(&self->fake.removes));
	EXPECT_EQ(FAKE_TAKEN_THERE, atomic_load(&self->fake.taken_state));
}

/*
 * colocd restarted without --state has no tenant for a ready model: the
 * gateway submits it again and serves it (before: it stayed ready while
 * every infer answered 503 "no tenant", review2 MEDIUM 2).
 */
TEST_F_TIMEOUT(fwd, restart__a_tenant_colocd_lost_is_submitted_again, 120)
{
	self->fake.taken = "fast";
	ASSERT_TRUE(start_gateway(self, NULL));
	atomic_store(&self->fake.taken_state, FAKE_TAKEN_REMOVED);
	for (int i = 0; i < 100 && atomic_load(&self->fake.taken_state) != FAKE_TAKEN_NONE; i++)
		usleep(100000);
	EXPECT_EQ(FAKE_TAKEN_NONE, atomic_load(&self->fake.taken_state))
	TH_LOG("fast was not submitted again within 10 s");
	for (int i = 0; i < 100 && http_get(self, "/v2/health/ready") != 200; i++)
		usleep(100000);
	EXPECT_EQ(200, http_get(self, "/v2/health/ready"));
	EXPECT_EQ(200, infer(self, "fast", 1));
}

/*
 * A colocd that answers the watcher with another uid's tenant of the
 * model's name (one namespace for all, as before s23: review s22 MEDIUM
 * 1's other order of the race) does not keep the model READY on it: the
 * watcher takes it as lost, the server turns unready, nothing is removed
 * (before: READY while every infer failed).
 */
TEST_F_TIMEOUT(fwd, restart__another_uids_tenant_of_the_name_is_not_the_models, 120)
{
	char model[PATH_MAX + 32];
	int ready = 200;

	ASSERT_TRUE(start_gateway(self, NULL));
	take_fast(self, 0, model, sizeof(model));
	for (int i = 0; i < 100 && (ready = http_get(self, "/v2/health/ready")) == 200; i++)
		usleep(100000);
	EXPECT_NE(200, ready) TH_LOG("the model stayed READY on uid 0's tenant");
	EXPECT_EQ(0, atomic_load(&self->fake.removes));
}

TEST_HARNESS_MAIN
