// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What root reads where someone else could have put a file first (review
 * of 2026-12-06, MEDIUM 2): coloc-profile resumes FILE.partial only with
 * --resume and only when it is the caller's own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "testutil.h"
#include "profile.h"
#include "profile_tool.h"

#define ORIGINAL "root's precious file: ORIGINAL\n"

FIXTURE(root_files)
{
	char dir[64];
	char victim[128];
	struct coloc_err err;
};

FIXTURE_SETUP(root_files)
{
	FILE *f;

	ASSERT_EQ(0, tu_make_tmpdir("root-files", self->dir, sizeof(self->dir)));
	snprintf(self->victim, sizeof(self->victim), "%s/victim", self->dir);
	f = fopen(self->victim, "w");
	ASSERT_NE(NULL, f);
	fputs(ORIGINAL, f);
	ASSERT_EQ(0, fclose(f));
}

FIXTURE_TEARDOWN(root_files)
{
	if (tu_remove_tree(self->dir))
		TH_LOG("could not remove %s", self->dir);
}

static bool victim_intact(const char *victim)
{
	size_t n;
	char *text = tu_read_file(victim, &n);
	bool same = text && !strcmp(text, ORIGINAL);

	free(text);
	return same;
}

/* coloc-profile on the tiny model with out and a made FILE.partial, --resume. */
static void resume_refused(struct __test_metadata *_metadata, const char *dir, const char *want)
{
	char model[128], out[128], partial[160];
	const char *args[] = { model, "-o",	    out,       "--iters",  "1", "--levels",
			       "50",  "--no-cache", "--force", "--resume", NULL };
	struct tu_child run;

	snprintf(model, sizeof(model), "%s/tiny.model", dir);
	snprintf(out, sizeof(out), "%s/tiny.profile", dir);
	snprintf(partial, sizeof(partial), "%s.partial", out);
	ASSERT_EQ(0, profile_tool_write_tiny(model));
	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 1)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, want)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, partial)) TH_LOG("%s", run.output);
	ASSERT_NE(0, access(out, F_OK));
}

/* Whatever the partial holds: the checks come before it is read. */
static int plant_partial(const char *dir, const char *content, mode_t mode, uid_t uid)
{
	char partial[160];
	FILE *f;

	snprintf(partial, sizeof(partial), "%s/tiny.profile.partial", dir);
	unlink(partial);
	f = fopen(partial, "w");
	if (!f)
		return -1;
	fputs(content, f);
	if (fclose(f) || chmod(partial, mode) || chown(partial, uid, uid))
		return -1;
	return 0;
}

TEST_F_TIMEOUT(root_files, coloc_profile_resume__only_the_callers_own_partial, 240)
{
	char partial[160];

	if (geteuid())
		SKIP(return, "the planted partial is chowned to another user");
	snprintf(partial, sizeof(partial), "%s/tiny.profile.partial", self->dir);

	ASSERT_EQ(0, plant_partial(self->dir, "coloc-profile 7\n", 0644, 65534));
	resume_refused(_metadata, self->dir, "is owned by uid 65534");

	ASSERT_EQ(0, plant_partial(self->dir, "coloc-profile 7\n", 0664, 0));
	resume_refused(_metadata, self->dir, "is writable by its group or others");

	unlink(partial);
	ASSERT_EQ(0, symlink(self->victim, partial));
	resume_refused(_metadata, self->dir, "is a symbolic link");
	ASSERT_TRUE(victim_intact(self->victim));
}

TEST_F_TIMEOUT(root_files, coloc_profile__without_resume_a_partial_is_not_read, 240)
{
	char model[128], out[128], partial[160];
	const char *args[] = { model,	   "-o", out,	       "--iters", "1",
			       "--levels", "50", "--no-cache", "--force", NULL };
	struct tu_child run;
	struct profile *p;

	snprintf(model, sizeof(model), "%s/tiny.model", self->dir);
	snprintf(out, sizeof(out), "%s/tiny.profile", self->dir);
	snprintf(partial, sizeof(partial), "%s.partial", out);
	ASSERT_EQ(0, profile_tool_write_tiny(model));
	ASSERT_EQ(0, plant_partial(self->dir, "coloc-profile 7\n", 0600, geteuid()));
	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "is not resumed without --resume"))
	TH_LOG("%s", run.output);
	p = profile_load(out, &self->err);
	ASSERT_NE(NULL, p) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, profile_nr_missing(p));
	ASSERT_NE(0, access(partial, F_OK));
	profile_free(p);
}

TEST_HARNESS_MAIN
