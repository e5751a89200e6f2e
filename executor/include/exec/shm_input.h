/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A query's input straight from its client's memfd (COLOC_SHM_RUN_INPUT_FD,
 * include/coloc/shm.h): the descriptor taken from the lane's input socket,
 * and the memfd mapped read-only once and kept, so that the input crosses
 * into the executor's arena with one memcpy from pages already mapped,
 * instead of colocd's pread into the slot and the executor's copy out of
 * it (docs/design/serving-path.md). A lane keeps up to COLOC_SHM_NR_SLOTS
 * memfds mapped, the least recently used one dropped for a new one; a
 * memfd is known again by its open file (kcmp), not by its inode number.
 */
#ifndef COLOC_SHM_INPUT_H
#define COLOC_SHM_INPUT_H

#include <stddef.h>
#include <linux/types.h>
#include "coloc/shm.h"

struct shm_input_map {
	int fd;
	const char *bytes; /* mapped read-only, len bytes; NULL: an empty entry */
	size_t len;
	unsigned long long ino; /* st_ino: the cheap test before kcmp */
	unsigned long long used; /* when it was last used, for the eviction */
};

struct shm_input {
	int sock; /* the lane's end of its input socket; -1: commands cannot carry inputs */
	/* zeroed: none kept */
	struct shm_input_map map[COLOC_SHM_NR_SLOTS];
	unsigned long long tick;
};

/*
 * The memfd colocd sent for command seq into *fd (close-on-exec; the
 * caller's), messages of older commands dropped on the way. 0, or a
 * negative errno with why saying what came instead.
 */
int shm_input_recv(struct shm_input *in, __u32 seq, int *fd, char *why, size_t len);
/*
 * The memfd's first bytes bytes, mapped (a memfd seen before: its mapping
 * kept): *src points at them until a later call evicts it. Takes *fd into
 * the cache (*fd set to -1) when it maps it; else the caller closes it.
 * 0, or a negative errno with why (a memfd not sealed against shrinking,
 * or smaller than bytes).
 */
int shm_input_map(struct shm_input *in, int *fd, size_t bytes, const char **src, char *why,
		  size_t len);
/* Unmaps and closes every kept memfd; the socket stays the caller's. */
void shm_input_release(struct shm_input *in);

#endif /* COLOC_SHM_INPUT_H */
