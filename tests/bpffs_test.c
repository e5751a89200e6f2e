// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * daemon/bpffs.c on a real bpf filesystem: a pin dir is locked against a
 * second daemon, and a daemon only ever removes the dir it locked, never
 * one that took its path meanwhile (another daemon's, after a start-up
 * race).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "bpffs.h"
#include "testutil.h"

FIXTURE(bpffs)
{
	char top[128];
	char dir[160];
};

FIXTURE_SETUP(bpffs)
{
	if (geteuid() != 0)
		SKIP(return, "needs root to mount and write a bpf filesystem");
	ASSERT_EQ(0, tu_mount_bpffs());
	snprintf(self->top, sizeof(self->top), "/sys/fs/bpf/coloc-bpffs-test-%d", getpid());
	snprintf(self->dir, sizeof(self->dir), "%s/pins", self->top);
}

FIXTURE_TEARDOWN(bpffs)
{
	rmdir(self->dir);
	rmdir(self->top);
}

TEST_F(bpffs, open_dir__a_locked_dir_is_refused_to_a_second_daemon)
{
	struct bpffs_dir first, second;
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, bpffs_open_dir(&first, self->dir, NULL, 0, NULL));
	EXPECT_EQ(-EBUSY, bpffs_open_dir(&second, self->dir, NULL, 0, &err));
	EXPECT_NE(NULL, strstr(err.msg, "in use by another colocd"));
	bpffs_close_dir(&first);
	/* released and empty: removed */
	EXPECT_NE(0, access(self->dir, F_OK));
}

TEST_F(bpffs, close_dir__leaves_a_dir_that_took_the_path_since)
{
	struct bpffs_dir d;
	struct stat before, after;

	ASSERT_EQ(0, bpffs_open_dir(&d, self->dir, NULL, 0, NULL));
	/* the locked dir goes, another takes its name (the winner of a start-up race) */
	ASSERT_EQ(0, rmdir(self->dir));
	ASSERT_EQ(0, mkdir(self->dir, 0700));
	ASSERT_EQ(0, stat(self->dir, &before));
	bpffs_close_dir(&d);
	ASSERT_EQ(0, stat(self->dir, &after));
	EXPECT_EQ(before.st_ino, after.st_ino);
}

TEST_HARNESS_MAIN
