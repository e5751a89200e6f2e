// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What root writes and reads where someone else could have put a file
 * first (review of 2026-12-06, MEDIUM 2 and LOW 4): profile_save's
 * temporary file is a new one (a link planted at the old predictable name
 * PATH.tmp.PID is not followed), colocd's --block-log is not opened
 * through a link nor as another user's file, and coloc-profile resumes
 * FILE.partial only with --resume and only when it is the caller's own;
 * and (MEDIUM 4, LOW 9) coloc-profile reads the model once, and the block
 * log is root's eyes only; and (review of 12:40, LOW 3 and LOW 6) as root
 * no link on a model's path is followed, and external data that is not
 * root's own file of one name is not read. Which models root's tools
 * refuse to read at all: rootmodel_test.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "model_file.h"
#include "onnx_graph.h"
#include "testutil.h"
#include "profile.h"
#include "profile_tool.h"
#include "profile_one_cell.h"

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

TEST_F(root_files, profile_save__a_link_at_the_old_temporary_name_is_not_followed)
{
	char path[160], link[192];
	struct profile *p = profile_one_cell(), *back;

	ASSERT_NE(NULL, p);
	snprintf(path, sizeof(path), "%s/p.profile", self->dir);
	/* what main's profile_save opened with fopen("we"): PATH.tmp.PID */
	snprintf(link, sizeof(link), "%s.tmp.%d", path, (int)getpid());
	ASSERT_EQ(0, symlink(self->victim, link));
	ASSERT_EQ(0, profile_save(p, path, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_TRUE(victim_intact(self->victim));
	back = profile_load(path, &self->err);
	ASSERT_NE(NULL, back) TH_LOG("%s", self->err.msg);
	/* the profile, the victim, the planted link: no temporary file left */
	ASSERT_EQ(3, tu_nr_dir_entries(self->dir));
	profile_free(back);
	profile_free(p);
}

/* colocd with --block-log path: its exit status (0 if it came up), its log in out. */
static int colocd_with_block_log(const char *dir, const char *path, char *out, size_t len)
{
	const char *extra[] = { "--block-log", path, NULL };
	char sock[128], pin[96], log[128];
	char *text;
	size_t n;
	pid_t pid;
	int ret = 0;

	snprintf(sock, sizeof(sock), "%s/colocd.sock", dir);
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/coloc-rootfiles-%d", (int)getpid());
	snprintf(log, sizeof(log), "%s/colocd.log", dir);
	pid = tu_start_colocd_with(sock, pin, log, extra);
	if (pid > 0)
		tu_stop_colocd(pid);
	else
		ret = 1;
	text = tu_read_file(log, &n);
	snprintf(out, len, "%s", text ? text : "");
	free(text);
	return ret;
}

TEST_F_TIMEOUT(root_files, colocd_block_log__a_link_or_anothers_file_is_refused, 240)
{
	char link[160], other[160], out[8192];
	struct stat st;
	FILE *f;

	if (geteuid())
		SKIP(return, "colocd runs as root");
	snprintf(link, sizeof(link), "%s/blocks-link.tsv", self->dir);
	ASSERT_EQ(0, symlink(self->victim, link));
	ASSERT_EQ(1, colocd_with_block_log(self->dir, link, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "is a symbolic link")) TH_LOG("%s", out);
	ASSERT_TRUE(victim_intact(self->victim));

	/* a file someone else made at the name first (a member's, in /tmp) */
	snprintf(other, sizeof(other), "%s/blocks-other.tsv", self->dir);
	f = fopen(other, "w");
	ASSERT_NE(NULL, f);
	fputs(ORIGINAL, f);
	ASSERT_EQ(0, fclose(f));
	ASSERT_EQ(0, chown(other, 65534, 65534));
	ASSERT_EQ(1, colocd_with_block_log(self->dir, other, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "is owned by uid 65534")) TH_LOG("%s", out);
	ASSERT_TRUE(victim_intact(other));

	/* root's own new file is written as before, for root's eyes only (LOW 9) */
	snprintf(other, sizeof(other), "%s/blocks.tsv", self->dir);
	umask(022); /* root's usual one: main's 0644 then made it world-readable */
	ASSERT_EQ(0, colocd_with_block_log(self->dir, other, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(0, stat(other, &st));
	ASSERT_GT(st.st_size, 0);
	ASSERT_EQ(0600, st.st_mode & 07777);
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

/* coloc-profile on model with out, one level, and extra (NULL-ended, up to 2). */
static void profile_run(const char *model, const char *out, const char *const *extra,
			struct tu_child *run)
{
	const char *args[16] = { model,	     "-o", out,		 "--iters", "1",
				 "--levels", "50", "--no-cache", "--force" };
	int n = 9;

	for (int i = 0; extra && extra[i] && n < 15; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	memset(run, 0, sizeof(*run));
	if (profile_tool_run(args, run))
		run->status = -1;
}

/*
 * MEDIUM 4 of the review of 2026-12-06: coloc-profile opened the model
 * twice, to parse it and again to hash it for the cache key, so a file
 * renamed over it in between got the cells of the first under the key of
 * the second. The key and the cells now come from one descriptor: the
 * model is opened once (inotify counts the opens of the file).
 */
TEST_F_TIMEOUT(root_files, coloc_profile__opens_the_model_once, 240)
{
	char model[128], out[128], ev[4096] __attribute__((aligned(8)));
	struct tu_child run;
	int in, opens = 0;
	ssize_t n;

	snprintf(model, sizeof(model), "%s/tiny.model", self->dir);
	snprintf(out, sizeof(out), "%s/tiny.profile", self->dir);
	ASSERT_EQ(0, profile_tool_write_tiny(model));
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ASSERT_LE(0, in);
	/* closes watched too: inotify merges an event identical to the last one queued */
	ASSERT_LE(0, inotify_add_watch(in, model, IN_OPEN | IN_CLOSE));
	profile_run(model, out, NULL, &run);
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	while ((n = read(in, ev, sizeof(ev))) > 0)
		for (char *p = ev; p < ev + n;
		     p += sizeof(struct inotify_event) + ((struct inotify_event *)p)->len)
			opens += !!(((struct inotify_event *)p)->mask & IN_OPEN);
	close(in);
	ASSERT_EQ(1, opens);
}

/*
 * LOW 3: an ONNX model's external data file that is not root's own (a
 * member's, or root's with a second name, a hard link where
 * fs.protected_hardlinks=0) is not read by root's coloc-profile; root's
 * own is, and --allow-foreign-owner reads the member's.
 */
TEST_F_TIMEOUT(root_files, coloc_profile__as_root_refuses_external_data_not_roots_own, 240)
{
	static const char *const allow[] = { "--allow-foreign-owner", NULL };
	char model[128], out[128], wbin[128], second[128];
	struct tu_child run;
	struct gb g = { 0 };
	float *w, *b, *bn;

	if (geteuid())
		SKIP(return, "root's coloc-profile; the external data is chowned to another user");
	conv_bn_relu(&g, &w, &b, &bn);
	externalize(&g, "W", self->dir, "w.bin", "w.bin", 432);
	ASSERT_EQ(0, write_onnx(&g, self->dir, "m.onnx", model, sizeof(model)));
	snprintf(out, sizeof(out), "%s/m.profile", self->dir);
	snprintf(wbin, sizeof(wbin), "%s/w.bin", self->dir);
	snprintf(second, sizeof(second), "%s/second.bin", self->dir);

	ASSERT_EQ(0, chown(wbin, 65534, 65534));
	profile_run(model, out, NULL, &run);
	ASSERT_TRUE(tu_child_exited_with(&run, 1)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "w.bin is owned by uid 65534, not 0"))
	TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "--allow-foreign-owner goes on anyway"))
	TH_LOG("%s", run.output);
	ASSERT_NE(0, access(out, F_OK));
	profile_run(model, out, allow, &run);
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_EQ(0, unlink(out));

	ASSERT_EQ(0, chown(wbin, 0, 0));
	ASSERT_EQ(0, link(wbin, second));
	profile_run(model, out, NULL, &run);
	ASSERT_TRUE(tu_child_exited_with(&run, 1)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "has 2 names (hard links), not one"))
	TH_LOG("%s", run.output);

	ASSERT_EQ(0, unlink(second));
	profile_run(model, out, NULL, &run);
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_EQ(0, access(out, F_OK));
	arena_free();
}

/*
 * LOW 6: as root only the last component was checked for a link; a
 * member's link to a directory of root's led root's tools there. No link
 * anywhere on the path is followed now (model_file_open(), which
 * coloc-profile, coloc-run and coloc-import share); the real path is read.
 */
TEST_F_TIMEOUT(root_files, model_file_open__as_root_no_link_anywhere_on_the_path, 240)
{
	char real[96], link[96], path[160], out[128];
	struct model_file mf;
	struct tu_child run;
	int fd;

	if (geteuid())
		SKIP(return, "links are refused only as root");
	snprintf(real, sizeof(real), "%s/real", self->dir);
	snprintf(link, sizeof(link), "%s/mdl", self->dir);
	snprintf(out, sizeof(out), "%s/tiny.profile", self->dir);
	ASSERT_EQ(0, mkdir(real, 0755));
	ASSERT_EQ(0, symlink("real", link));
	ASSERT_EQ(0, lchown(link, 65534, 65534));
	snprintf(path, sizeof(path), "%s/tiny.model", real);
	ASSERT_EQ(0, profile_tool_write_tiny(path));

	/* a directory component, then the last one, then a link to a link */
	snprintf(path, sizeof(path), "%s/tiny.model", link);
	EXPECT_EQ(-ELOOP, model_file_open(path, false, &mf, &self->err))
	TH_LOG("%s", self->err.msg);
	EXPECT_NE(NULL, strstr(self->err.msg, "a symbolic link is on the path"))
	TH_LOG("%s", self->err.msg);
	EXPECT_NE(NULL, strstr(self->err.msg, "give the real path")) TH_LOG("%s", self->err.msg);
	snprintf(path, sizeof(path), "%s/../mdl/tiny.model", real);
	EXPECT_EQ(-ELOOP, model_file_open(path, false, &mf, &self->err))
	TH_LOG("%s", self->err.msg);
	snprintf(path, sizeof(path), "%s/root.model", real);
	ASSERT_EQ(0, symlink("tiny.model", path));
	EXPECT_EQ(-ELOOP, model_file_open(path, false, &mf, &self->err))
	TH_LOG("%s", self->err.msg);

	snprintf(path, sizeof(path), "%s/tiny.model", link);
	profile_run(path, out, NULL, &run);
	ASSERT_TRUE(tu_child_exited_with(&run, 1)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "a symbolic link is on the path"))
	TH_LOG("%s", run.output);
	ASSERT_NE(0, access(out, F_OK));

	/* the per-component fallback where the kernel has no openat2, alike */
	EXPECT_EQ(-ELOOP, model_dir_open_nofollow(link));
	snprintf(path, sizeof(path), "%s/../mdl/", real);
	EXPECT_EQ(-ELOOP, model_dir_open_nofollow(path));
	snprintf(path, sizeof(path), "%s/../real", real);
	fd = model_dir_open_nofollow(path);
	EXPECT_LE(0, fd);
	if (fd >= 0)
		close(fd);

	/* the real path, with a ".." on it: read */
	snprintf(path, sizeof(path), "%s/../real/tiny.model", real);
	ASSERT_EQ(0, model_file_open(path, false, &mf, &self->err)) TH_LOG("%s", self->err.msg);
	model_file_close(&mf);
	snprintf(path, sizeof(path), "%s/tiny.model", real);
	profile_run(path, out, NULL, &run);
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_EQ(0, access(out, F_OK));
}

TEST_HARNESS_MAIN
