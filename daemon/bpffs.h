/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The bpf filesystem: mounted on demand, a pin dir made ready, locked and released. */
#ifndef COLOC_DAEMON_BPFFS_H
#define COLOC_DAEMON_BPFFS_H

#include <stdbool.h>
#include "error.h"

#define BPFFS_PATH_MAX 200

struct bpffs_dir {
	char path[BPFFS_PATH_MAX + 1];
	int lock_fd; /* flock'ed: one daemon per pin dir */
	bool mounted; /* bpffs was mounted at /sys/fs/bpf for it */
	int stale_removed; /* pins a crashed run left, now removed */
};

/*
 * Mounts bpffs at /sys/fs/bpf if dir is below it and nothing is mounted
 * there, checks dir is below (not at) the root of a bpf filesystem, creates
 * it, locks it against a second daemon, and removes pins a crashed run left
 * under the given names (and only those); d says what of that it did, for
 * the caller to tell the operator. 0, or a negative errno with err saying
 * what is wrong.
 */
int bpffs_open_dir(struct bpffs_dir *d, const char *dir, const char *const *names, int nr_names,
		   struct coloc_err *err);
/* Unlocks and removes the dir if it is empty (pins of others keep it). */
void bpffs_close_dir(struct bpffs_dir *d);

#endif /* COLOC_DAEMON_BPFFS_H */
