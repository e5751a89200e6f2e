/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The submit copy threads colocd gave up on (submit_copy.h): a thread past
 * its deadline is stuck in a read of a file the user's filesystem never
 * answers, and no thread can be killed, so it is left to end whenever the
 * read returns. Each one holds a thread and the submit's descriptors, so
 * their number is bounded, per user and in all; the count is the process's
 * (a stalled thread outlives the copier that started it).
 */
#ifndef COLOC_DAEMON_SUBMIT_STALLED_H
#define COLOC_DAEMON_SUBMIT_STALLED_H

#include <sys/types.h>
#include "error.h"

#define SUBMIT_STALLED_MAX 16
#define SUBMIT_STALLED_MAX_PER_UID 2

/*
 * Whether uid may start another copy: 0, or -EAGAIN with err saying whose
 * stalled copies are in the way.
 */
int submit_stalled_check(uid_t uid, struct coloc_err *err);
/* A copy of uid's given up on: its slot, to hand to submit_stalled_ended (-1: none was free). */
int submit_stalled_add(uid_t uid);
/* The stalled copy in slot ended at last (from its own thread; -1 does nothing). */
void submit_stalled_ended(int slot);

#endif /* COLOC_DAEMON_SUBMIT_STALLED_H */
