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

TEST(state__round_trips_owners_and_reads_a_file_without_them_as_roots)
{
	char dir[] = "/tmp/coloc-owners-state-XXXXXX", path[128];
	struct colocd *d = calloc(1, sizeof(*d));
	struct colocd_spec *back = calloc(COLOC_MAX_TENANTS, sizeof(*back));
	struct coloc_err err = { 0 };
	FILE *f;

	ASSERT_NE(NULL, d);
	ASSERT_NE(NULL, back);
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state.json", dir);
	d->specs = calloc(COLOC_MAX_TENANTS, sizeof(*d->specs));
	ASSERT_NE(NULL, d->specs);
	d->cfg.state_path = path;
	snprintf(d->specs[0].name, sizeof(d->specs[0].name), "rootsvc");
	snprintf(d->specs[0].model, sizeof(d->specs[0].model), "/m/a.model");
	d->specs[0].qos_ns = 5000000;
	d->specs[0].owner = 0;
	snprintf(d->specs[1].name, sizeof(d->specs[1].name), "mine");
	snprintf(d->specs[1].model, sizeof(d->specs[1].model), "/m/b.model");
	d->specs[1].qos_ns = 7000000;
	d->specs[1].owner = MEMBER;
	d->nr_specs = 2;
	ASSERT_EQ(0, colocd_state_write(d, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(2, colocd_state_read(path, back, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_STREQ("rootsvc", back[0].name);
	EXPECT_EQ(0, back[0].owner);
	EXPECT_STREQ("mine", back[1].name);
	EXPECT_EQ(MEMBER, back[1].owner);

	/* written before tenants had owners: root's */
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "{\"tenants\":[{\"name\":\"old\",\"model\":\"/m/a.model\",\"qos_ns\":5}]}\n");
	fclose(f);
	back[0].owner = 12345;
	ASSERT_EQ(1, colocd_state_read(path, back, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, back[0].owner);

	/* (uid_t)-1 is no one's */
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "{\"tenants\":[{\"name\":\"x\",\"model\":\"/m/a.model\",\"qos_ns\":5,"
		   "\"owner\":4294967295}]}\n");
	fclose(f);
	EXPECT_EQ(-EINVAL, colocd_state_read(path, back, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "owner")) TH_LOG("%s", coloc_err_str(&err));

	EXPECT_EQ(0, tu_remove_tree(dir));
	free(d->specs);
	free(d);
	free(back);
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
TEST(state__a_planted_temporary_file_and_a_state_not_roots_are_refused)
{
	char dir[] = "/tmp/coloc-owners-state-XXXXXX", path[128], tmp[144], link[144];
	struct colocd *d = calloc(1, sizeof(*d));
	struct colocd_spec *back = calloc(COLOC_MAX_TENANTS, sizeof(*back));
	struct coloc_err err = { 0 };
	struct stat st;
	int fd;

	if (geteuid() != 0)
		SKIP(return, "needs root to give files to another user");
	ASSERT_NE(NULL, d);
	ASSERT_NE(NULL, back);
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, chmod(dir, 01777)); /* as /tmp: sticky, anyone may create */
	snprintf(path, sizeof(path), "%s/colocd.state", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	d->specs = calloc(COLOC_MAX_TENANTS, sizeof(*d->specs));
	ASSERT_NE(NULL, d->specs);
	d->cfg.state_path = path;
	snprintf(d->specs[0].name, sizeof(d->specs[0].name), "rootsvc");
	snprintf(d->specs[0].model, sizeof(d->specs[0].model), "/m/a.model");
	d->specs[0].qos_ns = 5000000;
	d->nr_specs = 1;

	/* the member's planted temporary file: refused, not written, not renamed */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fchown(fd, MEMBER, MEMBER));
	close(fd);
	EXPECT_EQ(-EEXIST, colocd_state_write(d, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "not root's"))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, stat(tmp, &st));
	EXPECT_EQ(MEMBER, st.st_uid);
	EXPECT_EQ(0, st.st_size);
	EXPECT_NE(0, access(path, F_OK)) TH_LOG("the planted file became the state");
	ASSERT_EQ(0, unlink(tmp));

	/* a leftover of colocd's own is replaced */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	close(fd);
	coloc_err_clear(&err);
	ASSERT_EQ(0, colocd_state_write(d, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(1, colocd_state_read(path, back, &err)) TH_LOG("%s", coloc_err_str(&err));

	/* the state given to the member (as the planted file made it): refused */
	ASSERT_EQ(0, chown(path, MEMBER, MEMBER));
	EXPECT_EQ(-EPERM, colocd_state_read(path, back, &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "owner uid 64990"))
	TH_LOG("%s", coloc_err_str(&err));
	/* root's but writable by others: refused */
	ASSERT_EQ(0, chown(path, 0, 0));
	ASSERT_EQ(0, chmod(path, 0666));
	coloc_err_clear(&err);
	EXPECT_EQ(-EPERM, colocd_state_read(path, back, &err));
	ASSERT_EQ(0, chmod(path, 0600));
	/* a link to root's own file: not followed */
	snprintf(link, sizeof(link), "%s/link.state", dir);
	ASSERT_EQ(0, symlink(path, link));
	coloc_err_clear(&err);
	EXPECT_EQ(-ELOOP, colocd_state_read(link, back, &err));
	coloc_err_clear(&err);
	EXPECT_EQ(1, colocd_state_read(path, back, &err)) TH_LOG("%s", coloc_err_str(&err));

	EXPECT_EQ(0, tu_remove_tree(dir));
	free(d->specs);
	free(d);
	free(back);
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
