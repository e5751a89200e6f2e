/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A queue taken in turns by uid (uid_turns.c): root's items first, oldest
 * first; then one item per member uid with one waiting, the uids in
 * increasing order from the one served last, each uid's oldest first. A
 * member who queues many items delays another uid's by one of them a
 * round, not by all of them (docs/security-submit.md, "The cached profile
 * colocd reads"). Items are the caller's (embedded, no allocation); no
 * lock: the caller holds its own around both calls.
 */
#ifndef COLOC_DAEMON_UID_TURNS_H
#define COLOC_DAEMON_UID_TURNS_H

#include <stdbool.h>
#include <sys/types.h>

struct uid_turns_item {
	struct uid_turns_item *next;
	uid_t uid;
};

struct uid_turns {
	struct uid_turns_item *head; /* in arrival order */
	uid_t last; /* the member uid served last, when served */
	bool served;
};

/* item, of uid, at the queue's end. */
void uid_turns_push(struct uid_turns *q, struct uid_turns_item *item, uid_t uid);
/* The item whose turn it is, out of the queue; NULL when empty. */
struct uid_turns_item *uid_turns_pop(struct uid_turns *q);

#endif
