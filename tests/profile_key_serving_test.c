// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's serving core finds a tenant's profile by the key of all its
 * sealed files (executor/profile_key.h): a tenant with the model file a
 * profile was measured on but other weights, or none, is refused "no
 * profile for this model" instead of being admitted on that profile. The
 * profile found serves only an executor that built its kernel versions,
 * by name and in order (profile_versions.h): one of other versions is
 * refused naming the first layer that differs and both names. Real
 * executors, a real profile from bin/coloc-profile (--weights).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "profile.h"
#include "profile_tool.h"
#include "serving.h"
#include "serving_util.h"
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
					    .qos_ns = QOS_NS };

	return tu_serving_admit(self->s, spec, self->model, weights, READY_MS, err);
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

/* The tiny model's entry in the fixture's cache into path: 0, or -1 when there is none. */
static int cache_entry(FIXTURE_DATA(keyed) * self, char *path, size_t len)
{
	DIR *d = opendir(self->cache);
	struct dirent *e;
	int ret = -1;

	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "tiny-", 5) && strlen(e->d_name) > 8 &&
		    !strcmp(e->d_name + strlen(e->d_name) - 8, ".profile")) {
			snprintf(path, len, "%s/%s", self->cache, e->d_name);
			ret = 0;
		}
	if (d)
		closedir(d);
	return ret;
}

/* The first layer of p with two versions or more; -1 if none has. */
static int layer_of_versions(const struct profile *p)
{
	for (int l = 0; l < p->nr_layers; l++)
		if (p->layers[l].nr_versions > 1)
			return l;
	return -1;
}

/* A conv version name that layer l of p does not list (one another ISA offers). */
static const char *version_not_listed(const struct profile *p, int l)
{
	static const char *const others[] = { "winograd", "gemm-nhwc", "row-tiles", "onednn-any" };

	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		bool listed = false;

		for (int v = 0; v < p->layers[l].nr_versions; v++)
			listed |= !strcmp(p->layers[l].version_names[v], others[i]);
		if (!listed)
			return others[i];
	}
	return "no-such-version";
}

/*
 * Positions mean other kernels in a profile whose layer lists its first two
 * versions the other way round, or whose last is one another ISA built:
 * each refused (-ESTALE) with the model, the layer, both names and the
 * coloc-profile command; the profile as measured admits the same files.
 */
TEST_F_TIMEOUT(keyed, admit__profile_of_other_versions_refused_naming_both, 300)
{
	char out[4096], path[PATH_MAX], want[256], name[PROFILE_VERSION_NAME_LEN];
	struct coloc_err err = { 0 };
	struct profile *p;
	int l, last;

	ASSERT_EQ(0, profile(self, NULL, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(0, cache_entry(self, path, sizeof(path)));
	p = profile_load(path, &err);
	ASSERT_NE(NULL, p) TH_LOG("%s", err.msg);
	l = layer_of_versions(p);
	if (l < 0) {
		profile_free(p);
		SKIP(return, "no layer of the tiny model has two kernel versions on this CPU");
	}
	last = p->layers[l].nr_versions - 1;
	memcpy(name, p->layers[l].version_names[0], sizeof(name));
	memcpy(p->layers[l].version_names[0], p->layers[l].version_names[1], sizeof(name));
	memcpy(p->layers[l].version_names[1], name, sizeof(name));
	ASSERT_EQ(0, profile_save(p, path, &err)) TH_LOG("%s", err.msg);
	EXPECT_EQ(-ESTALE, admit(self, "swapped", NULL, &err));
	snprintf(want, sizeof(want), "layer %d's version 0 is '%s' in the profile, '%s' here", l,
		 p->layers[l].version_names[0], name);
	EXPECT_NE(NULL, strstr(err.msg, want)) TH_LOG("%s", err.msg);
	EXPECT_NE(NULL, strstr(err.msg, "the profile of model tiny")) TH_LOG("%s", err.msg);
	EXPECT_NE(NULL, strstr(err.msg, "coloc-profile tiny.model -o tiny.profile --cache-dir"))
	TH_LOG("%s", err.msg);

	coloc_err_clear(&err);
	memcpy(p->layers[l].version_names[1], p->layers[l].version_names[0], sizeof(name));
	memcpy(p->layers[l].version_names[0], name, sizeof(name));
	memcpy(name, p->layers[l].version_names[last], sizeof(name));
	snprintf(p->layers[l].version_names[last], sizeof(name), "%s", version_not_listed(p, l));
	ASSERT_EQ(0, profile_save(p, path, &err)) TH_LOG("%s", err.msg);
	EXPECT_EQ(-ESTALE, admit(self, "other-isa", NULL, &err));
	snprintf(want, sizeof(want), "layer %d's version %d is '%s' in the profile, '%s' here", l,
		 last, p->layers[l].version_names[last], name);
	EXPECT_NE(NULL, strstr(err.msg, want)) TH_LOG("%s", err.msg);

	coloc_err_clear(&err);
	memcpy(p->layers[l].version_names[last], name, sizeof(name));
	ASSERT_EQ(0, profile_save(p, path, &err)) TH_LOG("%s", err.msg);
	EXPECT_EQ(0, admit(self, "measured", NULL, &err)) TH_LOG("%s", err.msg);
	profile_free(p);
}

/*
 * What a cache directory others may write can hold at the entry's name (the
 * review of s20, LOW 2): a FIFO, which blocked colocd's loop in open(); a
 * link to a file of root's, whose first bytes the parse error quoted; a
 * file of another uid's. Each refused at once, saying why and quoting none
 * of the file; root's own file at the name admits the same files.
 */
TEST_F_TIMEOUT(keyed, admit__cache_entry_not_roots_regular_file_not_read, 300)
{
	char out[4096], path[PATH_MAX], aside[PATH_MAX + 8], secret[PATH_MAX];
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, profile(self, NULL, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(0, cache_entry(self, path, sizeof(path)));
	snprintf(aside, sizeof(aside), "%s.aside", path);
	ASSERT_EQ(0, rename(path, aside));

	ASSERT_EQ(0, mkfifo(path, 0644));
	EXPECT_EQ(-EPERM, admit(self, "fifo", NULL, &err));
	EXPECT_NE(NULL, strstr(err.msg, "is not a regular file: not read")) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, unlink(path));

	snprintf(secret, sizeof(secret), "%s/secret", self->dir);
	ASSERT_EQ(0, tu_write_file(secret, "SECRET-OF-ROOT 1 2\n", 19));
	ASSERT_EQ(0, symlink(secret, path));
	coloc_err_clear(&err);
	EXPECT_EQ(-ELOOP, admit(self, "link", NULL, &err));
	EXPECT_NE(NULL, strstr(err.msg, "is a symbolic link: not read")) TH_LOG("%s", err.msg);
	EXPECT_EQ(NULL, strstr(err.msg, "SECRET")) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, unlink(path));

	ASSERT_EQ(0, rename(aside, path));
	ASSERT_EQ(0, chown(path, 65534, 65534));
	coloc_err_clear(&err);
	EXPECT_EQ(-EPERM, admit(self, "theirs", NULL, &err));
	EXPECT_NE(NULL, strstr(err.msg, "is owned by uid 65534, not 0: not read"))
	TH_LOG("%s", err.msg);
	ASSERT_EQ(0, chown(path, 0, 0));
	coloc_err_clear(&err);
	EXPECT_EQ(0, admit(self, "rootsown", NULL, &err)) TH_LOG("%s", err.msg);
}

TEST_HARNESS_MAIN
