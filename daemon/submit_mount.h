/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The filesystem type of a submitted file, learnt without asking its
 * filesystem: a FUSE server (or a hung network server) answers fstat and
 * fstatfs, so a member can stall them; statx with an empty mask and
 * AT_STATX_DONT_SYNC answers from the inode the kernel holds, and names
 * the file's mount, whose type colocd's own mount table says
 * (docs/security-submit.md, "Before the first fstat").
 */
#ifndef COLOC_DAEMON_SUBMIT_MOUNT_H
#define COLOC_DAEMON_SUBMIT_MOUNT_H

#include <stddef.h>

/*
 * fd's filesystem type as /proc/self/mountinfo names it ("ext4",
 * "fuse.sshfs", ...) into type: 0, or -ENOENT when colocd's mount table
 * holds neither fd's mount nor its device (a mount of another mount
 * namespace), -errno on another error.
 */
int submit_mount_type(int fd, char *type, size_t len);

#endif /* COLOC_DAEMON_SUBMIT_MOUNT_H */
