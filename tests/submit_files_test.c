// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * daemon/submit_files.c without a daemon: which filesystems a submit's
 * files may come from (statfs magic numbers as statfs(2) lists them), the
 * sealed copy of a regular file, and a FIFO refused before any read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "submit_files.h"

TEST(submit_file_refused_fs__network_filesystems_and_fuse_by_name)
{
	/* the magic numbers of statfs(2) */
	EXPECT_STREQ("NFS", submit_file_refused_fs(0x6969));
	EXPECT_STREQ("SMB", submit_file_refused_fs(0x517B));
	EXPECT_STREQ("CIFS", submit_file_refused_fs(0xFF534D42));
	EXPECT_STREQ("SMB2", submit_file_refused_fs(0xFE534D42));
	EXPECT_STREQ("9p", submit_file_refused_fs(0x01021997));
	EXPECT_STREQ("Ceph", submit_file_refused_fs(0x00C36400));
	EXPECT_STREQ("FUSE", submit_file_refused_fs(0x65735546));
	EXPECT_STREQ("proc", submit_file_refused_fs(0x9fa0));
	/* a 32-bit f_type sign-extended into a long is the same filesystem */
	EXPECT_STREQ("CIFS", submit_file_refused_fs((unsigned long)(long)(int)0xFF534D42));
}

TEST(submit_file_refused_fs__local_filesystems_taken)
{
	EXPECT_EQ(NULL, submit_file_refused_fs(0xEF53)); /* ext2/3/4 */
	EXPECT_EQ(NULL, submit_file_refused_fs(0x01021994)); /* tmpfs */
	EXPECT_EQ(NULL, submit_file_refused_fs(0x58465342)); /* xfs */
	EXPECT_EQ(NULL, submit_file_refused_fs(0x9123683E)); /* btrfs */
}

TEST(submit_file_seal__regular_file_copied_and_sealed)
{
	char path[] = "/tmp/coloc-submit-files-XXXXXX", back[64];
	const char bytes[] = "the model's bytes, as the client opened them";
	uint64_t budget = COLOC_MAX_SUBMIT_BYTES;
	struct coloc_err err = { 0 };
	int fd = mkstemp(path), mfd;

	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)sizeof(bytes), write(fd, bytes, sizeof(bytes)));
	ASSERT_EQ(0, submit_file_seal(fd, "the model", &budget, &mfd, &err))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(COLOC_MAX_SUBMIT_BYTES - sizeof(bytes), budget);
	EXPECT_EQ(0, submit_file_check_sealed(mfd));
	ASSERT_EQ((ssize_t)sizeof(bytes), pread(mfd, back, sizeof(back), 0));
	EXPECT_EQ(0, memcmp(bytes, back, sizeof(bytes)));
	/* the copy cannot change, whatever happens to the file */
	EXPECT_EQ(-1, pwrite(mfd, "x", 1, 0));
	EXPECT_EQ(EPERM, errno);
	/* the client's file is no sealed memfd */
	EXPECT_NE(0, submit_file_check_sealed(fd));
	close(mfd);
	close(fd);
	unlink(path);
}

TEST(submit_file_seal__fifo_refused_by_kind)
{
	char dir[] = "/tmp/coloc-submit-files-XXXXXX", fifo[64];
	uint64_t budget = COLOC_MAX_SUBMIT_BYTES;
	struct coloc_err err = { 0 };
	int fd, mfd;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/f", dir);
	ASSERT_EQ(0, mkfifo(fifo, 0600));
	/* O_RDWR: opening a FIFO so does not wait for a writer */
	fd = open(fifo, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, submit_file_seal(fd, "the model", &budget, &mfd, &err));
	EXPECT_STREQ("the model is a FIFO; colocd takes regular files only", coloc_err_str(&err));
	EXPECT_EQ(-1, mfd);
	EXPECT_EQ(COLOC_MAX_SUBMIT_BYTES, budget);
	close(fd);
	unlink(fifo);
	rmdir(dir);
}

TEST_HARNESS_MAIN
