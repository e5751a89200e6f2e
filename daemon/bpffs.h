/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The bpf filesystem: mounted on demand, a pin dir made ready and removed. */
#ifndef COLOC_DAEMON_BPFFS_H
#define COLOC_DAEMON_BPFFS_H

/*
 * Mounts bpffs at /sys/fs/bpf if nothing is mounted there, creates dir
 * (and its parents) and removes pins a crashed run left in it. Fails with a
 * message when dir is not on a bpf filesystem.
 */
int bpffs_prepare_dir(const char *dir);
/* Removes dir if it is empty. */
void bpffs_remove_dir(const char *dir);

#endif /* COLOC_DAEMON_BPFFS_H */
