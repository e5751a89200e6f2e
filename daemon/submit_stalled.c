// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The count of stalled submit copies (submit_stalled.h): slots taken on
 * the loop when a copy is given up on, freed by the copy's own thread when
 * its read returns, under one lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include "submit_stalled.h"

static pthread_mutex_t submit_stalled_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	bool used;
	uid_t uid;
} submit_stalled[SUBMIT_STALLED_MAX];

int submit_stalled_check(uid_t uid, struct coloc_err *err)
{
	int all = 0, mine = 0;

	pthread_mutex_lock(&submit_stalled_lock);
	for (int i = 0; i < SUBMIT_STALLED_MAX; i++)
		if (submit_stalled[i].used) {
			all++;
			mine += submit_stalled[i].uid == uid;
		}
	pthread_mutex_unlock(&submit_stalled_lock);
	if (mine >= SUBMIT_STALLED_MAX_PER_UID)
		return coloc_err_set(err, -EAGAIN,
				     "%d of your submits are still stuck reading their files "
				     "(timed out); colocd takes no other submit of yours until "
				     "one of those reads returns: unmount or fix the filesystem "
				     "they are on",
				     mine);
	if (all >= SUBMIT_STALLED_MAX)
		return coloc_err_set(err, -EAGAIN,
				     "%d submits are still stuck reading their files (timed "
				     "out); colocd takes no submit until one of those reads "
				     "returns",
				     all);
	return 0;
}

int submit_stalled_add(uid_t uid)
{
	int slot = -1;

	pthread_mutex_lock(&submit_stalled_lock);
	for (int i = 0; i < SUBMIT_STALLED_MAX && slot < 0; i++)
		if (!submit_stalled[i].used) {
			submit_stalled[i].used = true;
			submit_stalled[i].uid = uid;
			slot = i;
		}
	pthread_mutex_unlock(&submit_stalled_lock);
	return slot;
}

void submit_stalled_ended(int slot)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&submit_stalled_lock);
	submit_stalled[slot].used = false;
	pthread_mutex_unlock(&submit_stalled_lock);
}
