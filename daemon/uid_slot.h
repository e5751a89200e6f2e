/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Each colocd's own part of the executors' uid range (docs/security-sandbox.md,
 * "Executor uids"): the range is cut into UID_SLOT_COUNT slots and a colocd
 * takes the first one whose lock file it can flock, and holds it for its
 * lifetime (the kernel drops the lock when it exits). The lock files are
 * root's, mode 0600, in a directory of root's that no one else may write,
 * opened relative to it and never through a link: a member can open none
 * of them, so it cannot hold a slot and push colocd out of ranges.
 */
#ifndef COLOC_DAEMON_UID_SLOT_H
#define COLOC_DAEMON_UID_SLOT_H

#include <limits.h>
#include <sys/types.h>
#include "error.h"

#define UID_SLOT_DEFAULT_DIR "/run/coloc/executor-uids"
#define UID_SLOT_COUNT 16

struct uid_slot {
	int fd; /* the lock held; -1 when none */
	int index; /* 0..UID_SLOT_COUNT-1 */
	uid_t first, last;
	char path[PATH_MAX]; /* the lock file */
};

/*
 * Cuts first..last into UID_SLOT_COUNT slots (the last takes the rest) and
 * locks the first free one's file "slot-N" in dir (NULL: the default; its
 * last component is made 0700 if missing). -EUSERS when every slot is
 * held, -EPERM when dir or a lock file is not root's alone; err says which
 * and what to do.
 */
int uid_slot_claim(const char *dir, uid_t first, uid_t last, struct uid_slot *out,
		   struct coloc_err *err);
void uid_slot_release(struct uid_slot *s);

#endif /* COLOC_DAEMON_UID_SLOT_H */
