// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The one rule root's tools apply to a model's files (common/trusted_path.h),
 * for coloc-profile, coloc-run and coloc-import alike: as root each refuses
 * a model, weights, external data or an import's output that a member
 * could have written or swapped (the member's file, one below a member's
 * directory at any depth or below a directory all may write, one reached
 * through a member's link), naming the file, what failed and
 * --allow-foreign-owner, which goes on (a link never); root's own is read.
 * The members' files are made by children that drop to their uids.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "onnx_graph.h"
#include "profile_tool.h"
#include "testutil.h"

#define MEMBER 64990
#define OTHER_MEMBER 64991
#define ALLOW "--allow-foreign-owner"

enum tool { PROFILE, RUN, IMPORT, NR_TOOLS };
static const char *const tool_name[NR_TOOLS] = { "coloc-profile", "coloc-run", "coloc-import" };

/* Where a model lies (below the test's directory) and what root's tools make of it. */
struct placement {
	const char *model;
	const char *refusal; /* in every tool's output, exit 1; NULL: it runs */
	bool allowed; /* --allow-foreign-owner runs it */
};

static const struct placement placements[] = {
	{ "own/m.onnx", NULL, true },
	{ "m1/m.onnx", "m1/m.onnx: is owned by uid 64990, not 0", true },
	{ "m2/inner/m.onnx", "lies in DIR/m2, owned by uid 64990, not root", true },
	{ "sticky/inner/m.onnx", NULL, true },
	{ "sticky/m.onnx", "lies in DIR/sticky, which others may write (mode 1777)", true },
	{ "group/m.onnx", "lies in DIR/group, which others may write (mode 0775)", true },
	{ "m3/link.onnx", "a symbolic link is on the path", false },
	{ "ext/m.onnx", "sub/w.bin lies in DIR/ext/sub, owned by uid 64990, not root", true },
};

FIXTURE(rootmodel)
{
	char dir[64];
};

/* As uid (a child that drops to it), path gets len bytes of data, or with len 0 is a link to data. */
static int as_member(uid_t uid, const char *path, const void *data, size_t len)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd;

		if (setgroups(0, NULL) || setgid((gid_t)uid) || setuid(uid))
			_exit(1);
		if (!len)
			_exit(symlink(data, path) ? 1 : 0);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		_exit(fd < 0 || write(fd, data, len) != (ssize_t)len || close(fd));
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 :
											      -1;
}

/* DIR/sub made by root with mode, then given to uid. */
static int made_dir(const char *dir, const char *sub, mode_t mode, uid_t uid)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	return mkdir(path, 0755) || chmod(path, mode) || chown(path, uid, uid) ? -1 : 0;
}

/* DIR/to with from's bytes, root's. */
static int copied(const char *dir, const char *from, const char *to)
{
	char path[160];
	size_t n;
	char *bytes = tu_read_file(from, &n);
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, to);
	f = bytes ? fopen(path, "wb") : NULL;
	ok = f && fwrite(bytes, 1, n, f) == n;
	ok = f && !fclose(f) && ok;
	free(bytes);
	return ok ? 0 : -1;
}

/*
 * The placements' tree: own/ (root's, with root's m.onnx), m1/ (MEMBER's,
 * with MEMBER's copy), m2/ (MEMBER's) with root's inner/ and copy, sticky/
 * (root's, 1777) alike and a copy of its own, group/ (root's, 0775, not sticky) with a copy, m3/
 * (OTHER_MEMBER's, with their link to own/m.onnx), ext/ (root's) with
 * root's m.onnx whose weights are in sub/w.bin, root's file in MEMBER's
 * sub/; out/ for what the tools write.
 */
FIXTURE_SETUP(rootmodel)
{
	char own[96], path[256], sub[96];
	float *w, *b, *bn;
	struct gb g = { 0 }, e = { 0 };
	size_t n;
	char *bytes;

	if (geteuid())
		SKIP(return, "the rule is root's; the members' files are made by setuid children");
	ASSERT_EQ(0, tu_make_tmpdir("rootmodel", self->dir, sizeof(self->dir)));
	ASSERT_EQ(0, chmod(self->dir, 0755));
	ASSERT_EQ(0, made_dir(self->dir, "own", 0755, 0));
	ASSERT_EQ(0, made_dir(self->dir, "out", 0755, 0));
	snprintf(own, sizeof(own), "%s/own", self->dir);
	conv_bn_relu(&g, &w, &b, &bn);
	ASSERT_EQ(0, write_onnx(&g, own, "m.onnx", path, sizeof(path)));
	bytes = tu_read_file(path, &n);
	ASSERT_NE(NULL, bytes);

	ASSERT_EQ(0, made_dir(self->dir, "m1", 0755, MEMBER));
	snprintf(path, sizeof(path), "%s/m1/m.onnx", self->dir);
	ASSERT_EQ(0, as_member(MEMBER, path, bytes, n));
	free(bytes);
	ASSERT_EQ(0, made_dir(self->dir, "m2", 0755, MEMBER));
	ASSERT_EQ(0, made_dir(self->dir, "m2/inner", 0755, 0));
	ASSERT_EQ(0, made_dir(self->dir, "sticky", 01777, 0));
	ASSERT_EQ(0, made_dir(self->dir, "sticky/inner", 0755, 0));
	snprintf(path, sizeof(path), "%s/m.onnx", own);
	ASSERT_EQ(0, copied(self->dir, path, "m2/inner/m.onnx"));
	ASSERT_EQ(0, copied(self->dir, path, "sticky/inner/m.onnx"));
	ASSERT_EQ(0, copied(self->dir, path, "sticky/m.onnx"));
	ASSERT_EQ(0, made_dir(self->dir, "group", 0775, 0));
	ASSERT_EQ(0, copied(self->dir, path, "group/m.onnx"));
	ASSERT_EQ(0, made_dir(self->dir, "m3", 0755, OTHER_MEMBER));
	snprintf(sub, sizeof(sub), "%s/m3/link.onnx", self->dir);
	ASSERT_EQ(0, as_member(OTHER_MEMBER, sub, path, 0));

	ASSERT_EQ(0, made_dir(self->dir, "ext", 0755, 0));
	ASSERT_EQ(0, made_dir(self->dir, "ext/sub", 0755, 0));
	snprintf(sub, sizeof(sub), "%s/ext", self->dir);
	conv_bn_relu(&e, &w, &b, &bn);
	externalize(&e, "W", sub, "sub/w.bin", "sub/w.bin", 432);
	ASSERT_EQ(0, write_onnx(&e, sub, "m.onnx", path, sizeof(path)));
	snprintf(sub, sizeof(sub), "%s/ext/sub", self->dir);
	ASSERT_EQ(0, chown(sub, MEMBER, MEMBER));
	arena_free();
}

FIXTURE_TEARDOWN(rootmodel)
{
	if (self->dir[0] && tu_remove_tree(self->dir))
		TH_LOG("could not remove %s", self->dir);
}

/*
 * tool on DIR/model (weights: DIR/weights, or NULL), writing into DIR/out
 * (an import: DIR/output, or out/i.model), with --allow-foreign-owner when
 * allow. Its exit status and output in run.
 */
static void run_tool(const char *dir, enum tool tool, const char *model, const char *weights,
		     const char *output, bool allow, struct tu_child *run)
{
	char bin[PATH_MAX], m[160], w[160], o[160], ow[160];
	const char *args[16] = { m };
	int n = 1;

	snprintf(m, sizeof(m), "%s/%s", dir, model);
	snprintf(w, sizeof(w), "%s/%s", dir, weights ? weights : "");
	snprintf(o, sizeof(o), "%s/%s", dir,
		 output		? output :
		 tool == IMPORT ? "out/i.model" :
				  "out/m.profile");
	snprintf(ow, sizeof(ow), "%s/out/i.weights", dir);
	if (tool == PROFILE) {
		static const char *const profile[] = { "--iters", "1",		"--levels",
						       "50",	  "--no-cache", "--force" };

		args[n++] = "-o";
		args[n++] = o;
		for (size_t i = 0; i < sizeof(profile) / sizeof(profile[0]); i++)
			args[n++] = profile[i];
	} else if (tool == RUN) {
		args[n++] = "--iters";
		args[n++] = "1";
	} else {
		args[n++] = "-o";
		args[n++] = o;
		args[n++] = "-w";
		args[n++] = ow;
	}
	if (weights) {
		args[n++] = "--weights";
		args[n++] = w;
	}
	if (allow)
		args[n++] = ALLOW;
	args[n] = NULL;
	memset(run, 0, sizeof(*run));
	if (tu_child_start(tu_bin(tool_name[tool], bin, sizeof(bin)), args, run) ||
	    tu_child_finish(run))
		run->status = -1;
}

/* want with "DIR" replaced by dir, found in run's output. */
static bool says(const struct tu_child *run, const char *dir, const char *want)
{
	const char *at = strstr(want, "DIR");
	char text[256];

	if (!at)
		return strstr(run->output, want) != NULL;
	snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - want), want, dir, at + 3);
	return strstr(run->output, text) != NULL;
}

/* The outcome the tool must have: refused with refusal (exit 1), or run (exit 0). */
static void expect(struct __test_metadata *_metadata, const char *dir, enum tool tool,
		   const char *file, bool allow, const char *refusal, const struct tu_child *run)
{
	const char *how = allow ? " " ALLOW : "";

	if (!refusal) {
		EXPECT_TRUE(tu_child_exited_with(run, 0))
		TH_LOG("%s on %s%s: %s", tool_name[tool], file, how, run->output);
		return;
	}
	EXPECT_TRUE(tu_child_exited_with(run, 1))
	TH_LOG("%s on %s%s: %s", tool_name[tool], file, how, run->output);
	EXPECT_TRUE(says(run, dir, refusal))
	TH_LOG("%s on %s%s: want '%s' in: %s", tool_name[tool], file, how, refusal, run->output);
	if (!strstr(refusal, "symbolic link"))
		EXPECT_TRUE(says(run, dir, ALLOW))
	TH_LOG("%s on %s%s: %s", tool_name[tool], file, how, run->output);
}

TEST_F_TIMEOUT(rootmodel, every_tool__refuses_a_model_a_member_could_write_or_swap, 600)
{
	struct tu_child run;

	for (size_t i = 0; i < sizeof(placements) / sizeof(placements[0]); i++) {
		const struct placement *p = &placements[i];

		for (enum tool t = 0; t < NR_TOOLS; t++) {
			run_tool(self->dir, t, p->model, NULL, NULL, false, &run);
			expect(_metadata, self->dir, t, p->model, false, p->refusal, &run);
			if (!p->refusal)
				continue;
			run_tool(self->dir, t, p->model, NULL, NULL, true, &run);
			expect(_metadata, self->dir, t, p->model, true,
			       p->allowed ? NULL : p->refusal, &run);
		}
	}
}

/* A .model's weights file, read by coloc-profile and coloc-run, under the same rule. */
TEST_F_TIMEOUT(rootmodel, profile_and_run__refuse_a_members_weights, 300)
{
	static const struct placement weights[] = {
		{ "own/w.weights", NULL, true },
		{ "m1/w.weights", "m1/w.weights: is owned by uid 64990, not 0", true },
		{ "m2/inner/w.weights", "lies in DIR/m2, owned by uid 64990, not root", true },
	};
	char model[160], path[160], bin[PATH_MAX], cmd[PATH_MAX + 512], out[4096];
	struct tu_child run;
	size_t n;
	char *bytes;

	snprintf(model, sizeof(model), "%s/own/t.model", self->dir);
	snprintf(path, sizeof(path), "%s/own/w.weights", self->dir);
	ASSERT_EQ(0, profile_tool_write_tiny(model));
	snprintf(cmd, sizeof(cmd), "%s '%s' --save-weights '%s'",
		 tu_bin("coloc-run", bin, sizeof(bin)), model, path);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s: %s", cmd, out);
	ASSERT_EQ(0, copied(self->dir, path, "m2/inner/w.weights"));
	bytes = tu_read_file(path, &n);
	ASSERT_NE(NULL, bytes);
	snprintf(path, sizeof(path), "%s/m1/w.weights", self->dir);
	ASSERT_EQ(0, as_member(MEMBER, path, bytes, n));
	free(bytes);

	for (size_t i = 0; i < sizeof(weights) / sizeof(weights[0]); i++) {
		for (enum tool t = PROFILE; t <= RUN; t++) {
			run_tool(self->dir, t, "own/t.model", weights[i].model, NULL, false, &run);
			expect(_metadata, self->dir, t, weights[i].model, false, weights[i].refusal,
			       &run);
			run_tool(self->dir, t, "own/t.model", weights[i].model, NULL, true, &run);
			expect(_metadata, self->dir, t, weights[i].model, true, NULL, &run);
		}
	}
}

/* coloc-import writes only where no member could have put a file or a link first. */
TEST_F_TIMEOUT(rootmodel, import__writes_only_below_roots_own_directories, 300)
{
	static const struct placement outputs[] = {
		{ "out/i.model", NULL, true },
		{ "m1/i.model", "lies in DIR/m1, owned by uid 64990, not root", true },
		{ "sticky/inner/i.model", NULL, true },
		{ "sticky/i.model", "lies in DIR/sticky, which others may write (mode 1777)", true },
		{ "m3/link.onnx", "lies in DIR/m3, owned by uid 64991, not root", false },
	};
	char path[160], *before, *after;
	size_t n, m;
	struct tu_child run;
	struct stat st;

	snprintf(path, sizeof(path), "%s/own/m.onnx", self->dir);
	before = tu_read_file(path, &n);
	ASSERT_NE(NULL, before);
	for (size_t i = 0; i < sizeof(outputs) / sizeof(outputs[0]); i++) {
		const struct placement *p = &outputs[i];

		snprintf(path, sizeof(path), "%s/%s", self->dir, p->model);
		run_tool(self->dir, IMPORT, "own/m.onnx", NULL, p->model, false, &run);
		expect(_metadata, self->dir, IMPORT, p->model, false, p->refusal, &run);
		if (!p->refusal)
			continue;
		/* refused before anything was made: nothing new, the link still a link */
		EXPECT_EQ(p->allowed ? -1 : 0, lstat(path, &st)) TH_LOG("%s", path);
		run_tool(self->dir, IMPORT, "own/m.onnx", NULL, p->model, true, &run);
		expect(_metadata, self->dir, IMPORT, p->model, true,
		       p->allowed ? NULL : "a symbolic link is on the path", &run);
	}
	/* the member's link to root's model was not written through */
	snprintf(path, sizeof(path), "%s/own/m.onnx", self->dir);
	after = tu_read_file(path, &m);
	ASSERT_NE(NULL, after);
	EXPECT_TRUE(n == m && !memcmp(before, after, n));
	free(before);
	free(after);
}

TEST_HARNESS_MAIN
