/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The filesystem of a submitted file, learnt without asking it: a FUSE
 * server (or a hung network server) answers fstat and fstatfs, so a member
 * can stall them; statx with an empty mask and AT_STATX_DONT_SYNC answers
 * from the inode the kernel holds, and names the file's mount, whose type
 * colocd's own mount table says (docs/security-submit.md, "Before the
 * first fstat").
 */
#ifndef COLOC_DAEMON_SUBMIT_MOUNT_H
#define COLOC_DAEMON_SUBMIT_MOUNT_H

#include <stdbool.h>

struct submit_mount {
	/* as /proc/self/mountinfo names it ("ext4", "fuse.sshfs"); "" when not there */
	char type[64];
	/* the file's device is a block device's (major not 0), not an anonymous one */
	bool block_dev;
};

/*
 * fd's mount looked up in colocd's /proc/self/mountinfo, then init's
 * (/proc/1/mountinfo), by the mount id statx gives, else by the file's
 * device: 0, with m->type "" when neither table holds either (a mount of
 * another mount namespace: a container's, a member's own), or -errno.
 */
int submit_mount_find(int fd, struct submit_mount *m);

#endif /* COLOC_DAEMON_SUBMIT_MOUNT_H */
