// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's serving core finds a tenant's profile by the key of all its
 * sealed files (executor/profile_key.h): a tenant with the model file a
 * profile was measured on but other weights, or none, is refused "no
 * profile for this model" instead of being admitted on that profile.
 * Real executors, a real profile from bin/coloc-profile --weights.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "profile_tool.h"
#include "serving.h"
#include "testutil.h"

#define READY_MS 180000
#define QOS_NS 60000000000ull /* 60 s: the QoS refuses nothing here */

FIXTURE(keyed)
{
	char dir[64], model[128], w1[128], w2[128], cache[128];
	struct serving *s;
};

FIXTURE_SETUP(keyed)
{
	char out[4096], bin[PATH_MAX];
	struct coloc_err err = { 0 };
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)),
				      .policy = "coloc" };

	self->s = NULL;
	ASSERT_EQ(0, tu_make_tmpdir("key-serving", self->dir, sizeof(self->dir)));
	snprintf(self->model, sizeof(self->model), "%s/tiny.model", self->dir);
	snprintf(self->w1, sizeof(self->w1), "%s/w1.weights", self->dir);
	snprintf(self->w2, sizeof(self->w2), "%s/w2.weights", self->dir);
	snprintf(self->cache, sizeof(self->cache), "%s/cache", self->dir);
	ASSERT_EQ(0, profile_tool_write_tiny_weights(self->model, self->w1, self->w2, out,
						     sizeof(out)))
	TH_LOG("%s", out);
	cfg.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	cfg.cache_dir = self->cache;
	ASSERT_EQ(0, serving_create(&cfg, &self->s, &err)) TH_LOG("%s", err.msg);
}

FIXTURE_TEARDOWN(keyed)
{
	serving_destroy(self->s);
	tu_remove_tree(self->dir);
}

/* Admits name with the tiny model and weights (NULL: none): 0 or -errno with err. */
static int admit(FIXTURE_DATA(keyed) * self, const char *name, const char *weights,
		 struct coloc_err *err)
{
	struct serving_tenant_spec spec = { .name = name,
					    .model_name = "tiny.model",
					    .model_fd = tu_sealed_copy(self->model),
					    .weights_fd = weights ? tu_sealed_copy(weights) : -1,
					    .qos_ns = QOS_NS };
	int ret;

	if (spec.model_fd < 0 || (weights && spec.weights_fd < 0))
		return coloc_err_set(err, -EIO, "cannot copy the files");
	ret = serving_admit_wait(self->s, &spec, READY_MS, err);
	close(spec.model_fd);
	if (spec.weights_fd >= 0)
		close(spec.weights_fd);
	return ret;
}

/* The tiny model profiled into the fixture's cache, with weights (NULL: the seed's). */
static int profile(FIXTURE_DATA(keyed) * self, const char *weights, char *out, size_t len)
{
	char cmd[2048], bin[PATH_MAX];

	snprintf(cmd, sizeof(cmd),
		 "%s '%s' %s%s%s -o '%s/tiny.profile' --iters 1 --levels 50 --force "
		 "--cache-dir '%s'",
		 tu_bin("coloc-profile", bin, sizeof(bin)), self->model,
		 weights ? "--weights '" : "", weights ? weights : "", weights ? "'" : "",
		 self->dir, self->cache);
	return tu_run(cmd, out, len);
}

/* Profiled with the seed's weights: a tenant with a weights file of its own finds none. */
TEST_F_TIMEOUT(keyed, admit__weights_not_profiled_find_no_profile, 300)
{
	struct coloc_err err = { 0 };
	char out[4096];

	ASSERT_EQ(0, profile(self, NULL, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(0, admit(self, "seeded", NULL, &err)) TH_LOG("%s", err.msg);
	coloc_err_clear(&err);
	EXPECT_EQ(-ENOENT, admit(self, "own", self->w2, &err));
	EXPECT_NE(NULL, strstr(err.msg, "no profile for this model")) TH_LOG("%s", err.msg);
}

TEST_F_TIMEOUT(keyed, admit__other_weights_find_no_profile, 300)
{
	struct coloc_err err = { 0 };
	char out[4096];

	ASSERT_EQ(0, profile(self, self->w1, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(0, admit(self, "measured", self->w1, &err)) TH_LOG("%s", err.msg);
	coloc_err_clear(&err);
	EXPECT_EQ(-ENOENT, admit(self, "other", self->w2, &err));
	EXPECT_NE(NULL, strstr(err.msg, "no profile for this model")) TH_LOG("%s", err.msg);
	coloc_err_clear(&err);
	EXPECT_EQ(-ENOENT, admit(self, "seeded", NULL, &err));
	EXPECT_NE(NULL, strstr(err.msg, "no profile for this model")) TH_LOG("%s", err.msg);
}

TEST_HARNESS_MAIN
