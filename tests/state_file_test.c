// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's --state file (daemon/serving_state.c) as an attacker in its
 * directory sees it (docs/security-submit.md, "--state"): owners round
 * trip; a member's planted temporary file, a state not root's, one others
 * may write and a link are refused; a directory others may write keeps the
 * real colocd from starting.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "colocd.h"
#include "serving_state.h"
#include "testutil.h"

/* a uid no account on a test machine has */
#define MEMBER 64990

/* A colocd of no tenant whose --state is dir/colocd.state, and room to read a state back. */
FIXTURE(state)
{
	char dir[64], path[128];
	struct colocd *d;
	struct colocd_spec *back;
	struct coloc_err err;
};

FIXTURE_SETUP(state)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/coloc-owners-state-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->path, sizeof(self->path), "%s/colocd.state", self->dir);
	self->d = calloc(1, sizeof(*self->d));
	self->back = calloc(COLOC_MAX_TENANTS, sizeof(*self->back));
	ASSERT_NE(NULL, self->d);
	ASSERT_NE(NULL, self->back);
	self->d->specs = calloc(COLOC_MAX_TENANTS, sizeof(*self->d->specs));
	ASSERT_NE(NULL, self->d->specs);
	self->d->cfg.state_path = self->path;
}

FIXTURE_TEARDOWN(state)
{
	if (self->dir[0])
		EXPECT_EQ(0, tu_remove_tree(self->dir));
	if (self->d)
		free(self->d->specs);
	free(self->d);
	free(self->back);
}

/* Adds tenant name (model, qos_ns, owner) to d's specs. */
static void add_spec(struct colocd *d, const char *name, const char *model, uint64_t qos_ns,
		     uid_t owner)
{
	struct colocd_spec *s = &d->specs[d->nr_specs++];

	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->model, sizeof(s->model), "%s", model);
	s->qos_ns = qos_ns;
	s->owner = owner;
}

TEST_F(state, round_trips_owners_and_reads_a_file_without_them_as_roots)
{
	FILE *f;

	add_spec(self->d, "rootsvc", "/m/a.model", 5000000, 0);
	add_spec(self->d, "mine", "/m/b.model", 7000000, MEMBER);
	ASSERT_EQ(0, colocd_state_write(self->d, &self->err))
	TH_LOG("%s", coloc_err_str(&self->err));
	ASSERT_EQ(2, colocd_state_read(self->path, self->back, &self->err))
	TH_LOG("%s", coloc_err_str(&self->err));
	EXPECT_STREQ("rootsvc", self->back[0].name);
	EXPECT_EQ(0, self->back[0].owner);
	EXPECT_STREQ("mine", self->back[1].name);
	EXPECT_EQ(MEMBER, self->back[1].owner);

	/* written before tenants had owners: root's */
	f = fopen(self->path, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "{\"tenants\":[{\"name\":\"old\",\"model\":\"/m/a.model\",\"qos_ns\":5}]}\n");
	fclose(f);
	self->back[0].owner = 12345;
	ASSERT_EQ(1, colocd_state_read(self->path, self->back, &self->err))
	TH_LOG("%s", coloc_err_str(&self->err));
	EXPECT_EQ(0, self->back[0].owner);

	/* (uid_t)-1 is no one's */
	f = fopen(self->path, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "{\"tenants\":[{\"name\":\"x\",\"model\":\"/m/a.model\",\"qos_ns\":5,"
		   "\"owner\":4294967295}]}\n");
	fclose(f);
	EXPECT_EQ(-EINVAL, colocd_state_read(self->path, self->back, &self->err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&self->err), "owner"))
	TH_LOG("%s", coloc_err_str(&self->err));
}

/*
 * A member's tenant kept under its bare name by a colocd from before each
 * owner's names were its own takes its key: its copies renamed, the file
 * rewritten; root's and one keyed already stay as they are, and a second
 * pass finds nothing to do (docs/design/tenant-names.md).
 */
TEST_F(state, rekey__a_members_bare_name_takes_its_key_copies_and_file_too)
{
	const char *copies[] = { "mine.model", "mine.weights", "64990:mine.model",
				 "64990:mine.weights" };
	char files[160], file[224];
	int fd;

	if (geteuid() != 0)
		SKIP(return, "needs root: colocd reads only root's copies");
	snprintf(files, sizeof(files), "%s.files", self->path);
	ASSERT_EQ(0, mkdir(files, 0700));
	for (int i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "%s/%s", files, copies[i]);
		fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		ASSERT_LE(0, fd);
		close(fd);
	}
	add_spec(self->d, "rootsvc", "/m/a.model", 5000000, 0);
	add_spec(self->d, "mine", "/m/b.model", 7000000, MEMBER);
	snprintf(self->d->specs[1].weights, sizeof(self->d->specs[1].weights), "/m/b.weights");
	add_spec(self->d, "64990:keyed", "/m/c.model", 7000000, MEMBER);
	EXPECT_EQ(0, colocd_state_rekey(self->path, self->d->specs, 3, &self->err))
	TH_LOG("%s", coloc_err_str(&self->err));
	EXPECT_STREQ("rootsvc", self->d->specs[0].name);
	EXPECT_STREQ("64990:mine", self->d->specs[1].name);
	EXPECT_STREQ("64990:keyed", self->d->specs[2].name);
	for (int i = 0; i < 4; i++) {
		snprintf(file, sizeof(file), "%s/%s", files, copies[i]);
		EXPECT_EQ(i < 2 ? -1 : 0, access(file, F_OK)) TH_LOG("%s", file);
	}
	ASSERT_EQ(3, colocd_state_read(self->path, self->back, &self->err))
	TH_LOG("%s", coloc_err_str(&self->err));
	EXPECT_STREQ("64990:mine", self->back[1].name);
	EXPECT_EQ(MEMBER, self->back[1].owner);
	EXPECT_EQ(0, colocd_state_rekey(self->path, self->back, 3, &self->err));
	EXPECT_STREQ("64990:mine", self->back[1].name);
}

/*
 * The review of 2026-12-06 (MEDIUM, poc/exp6_state.sh): a member planted
 * STATE.tmp in a sticky directory, colocd wrote into it and renamed it,
 * and the member then owned the state and, after a restart, root's tenant.
 * Now the temporary file is made new (O_EXCL) and a planted one refused,
 * left as it is; a state file that is not root's, or that others may read
 * or write, or a link, is refused when read. Main wrote into the planted
 * file and read every one of them.
 */
TEST_F(state, a_planted_temporary_file_and_a_state_not_roots_are_refused)
{
	char tmp[144], link[144];
	struct stat st;
	int fd;

	if (geteuid() != 0)
		SKIP(return, "needs root to give files to another user");
	ASSERT_EQ(0, chmod(self->dir, 01777)); /* as /tmp: sticky, anyone may create */
	snprintf(tmp, sizeof(tmp), "%s.tmp", self->path);
	add_spec(self->d, "rootsvc", "/m/a.model", 5000000, 0);

	/* the member's planted temporary file: refused, not written, not renamed */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fchown(fd, MEMBER, MEMBER));
	close(fd);
	EXPECT_EQ(-EEXIST, colocd_state_write(self->d, &self->err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&self->err), "not root's"))
	TH_LOG("%s", coloc_err_str(&self->err));
	ASSERT_EQ(0, stat(tmp, &st));
	EXPECT_EQ(MEMBER, st.st_uid);
	EXPECT_EQ(0, st.st_size);
	EXPECT_NE(0, access(self->path, F_OK)) TH_LOG("the planted file became the state");
	ASSERT_EQ(0, unlink(tmp));

	/* a leftover of colocd's own is replaced */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	close(fd);
	coloc_err_clear(&self->err);
	ASSERT_EQ(0, colocd_state_write(self->d, &self->err))
	TH_LOG("%s", coloc_err_str(&self->err));
	ASSERT_EQ(1, colocd_state_read(self->path, self->back, &self->err))
	TH_LOG("%s", coloc_err_str(&self->err));

	/* the state given to the member (as the planted file made it): refused */
	ASSERT_EQ(0, chown(self->path, MEMBER, MEMBER));
	EXPECT_EQ(-EPERM, colocd_state_read(self->path, self->back, &self->err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&self->err), "owner uid 64990"))
	TH_LOG("%s", coloc_err_str(&self->err));
	/* root's but writable by others: refused */
	ASSERT_EQ(0, chown(self->path, 0, 0));
	ASSERT_EQ(0, chmod(self->path, 0666));
	coloc_err_clear(&self->err);
	EXPECT_EQ(-EPERM, colocd_state_read(self->path, self->back, &self->err));
	ASSERT_EQ(0, chmod(self->path, 0600));
	/* a link to root's own file: not followed */
	snprintf(link, sizeof(link), "%s/link.state", self->dir);
	ASSERT_EQ(0, symlink(self->path, link));
	coloc_err_clear(&self->err);
	EXPECT_EQ(-ELOOP, colocd_state_read(link, self->back, &self->err));
	coloc_err_clear(&self->err);
	EXPECT_EQ(1, colocd_state_read(self->path, self->back, &self->err))
	TH_LOG("%s", coloc_err_str(&self->err));
}

/*
 * colocd started with --state in a directory others may write (not
 * sticky) refuses to start, naming the directory's mode; a directory of
 * another user's too. Main started and used it.
 */
TEST(state__a_directory_others_can_write_is_refused_at_start)
{
	char dir[] = "/tmp/coloc-owners-statedir-XXXXXX", cmd[PATH_MAX + 512], bin[512];
	char out[4096];
	struct coloc_err err = { 0 };
	int st;

	if (geteuid() != 0)
		SKIP(return, "colocd must run as root");
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, chmod(dir, 0777));
	snprintf(cmd, sizeof(cmd),
		 "%s --socket %s/colocd.sock --pin-dir /sys/fs/bpf/coloc-sd-%d "
		 "--state %s/colocd.state",
		 tu_bin("colocd", bin, sizeof(bin)), dir, getpid(), dir);
	st = tu_run(cmd, out, sizeof(out));
	EXPECT_EQ(1, st) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "is writable by other users (mode 0777)")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s/colocd.state", dir);
	EXPECT_EQ(-EPERM, colocd_state_check_dir(cmd, &err));
	ASSERT_EQ(0, chmod(dir, 0755));
	ASSERT_EQ(0, chown(dir, MEMBER, MEMBER));
	coloc_err_clear(&err);
	EXPECT_EQ(-EPERM, colocd_state_check_dir(cmd, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "belongs to uid 64990"))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, chown(dir, 0, 0));
	coloc_err_clear(&err);
	EXPECT_EQ(0, colocd_state_check_dir(cmd, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, tu_remove_tree(dir));
}

TEST_HARNESS_MAIN
