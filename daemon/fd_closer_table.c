// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * fd_closer's table (fd_closer.h): which entry a uid's closes go to, and
 * how they stand. Root's closes have entry 0, which no member reaches. A
 * member holds an entry while it has a close waiting or running; an entry
 * with neither is free, and its thread, while still up, serves whoever
 * takes it. With none free, a hung entry (a close past FD_CLOSER_STUCK_MS)
 * is retired: its thread leaves the table with that uid's closes, in an
 * entry on its own stack, and ends once they are done; with none to
 * retire, the closes go to the overflow entry, shared, whose hung thread
 * is retired the same way at the next close or look of anyone's, taking
 * only the hanging uid's closes with it. docs/design/fd-closer.md, "The
 * table".
 */
#include "fd_closer_internal.h"
#include "mono_clock.h"

static struct fd_closer_worker *fd_closer_retired;
static int fd_closer_nr_retired;
/* counts the times an entry was taken for a uid: a hint of another count may be stale */
static unsigned int fd_closer_gen = 1;

static bool fd_closer_hangs(const struct fd_closer_uid *u)
{
	return u->busy_since_ns &&
	       coloc_now_ns() - u->busy_since_ns > FD_CLOSER_STUCK_MS * 1000000ull;
}

/* uid's own entry in the table (root's for root), else NULL; through hint while it holds. */
static struct fd_closer_uid *fd_closer_own(uid_t uid, struct fd_closer_hint *hint)
{
	struct fd_closer_hint none = { 0 };

	if (!uid)
		return &fd_closer_uids[FD_CLOSER_ROOT];
	if (!hint)
		hint = &none;
	if (hint->slot > FD_CLOSER_ROOT && hint->slot < FD_CLOSER_OVERFLOW) {
		struct fd_closer_uid *u = &fd_closer_uids[hint->slot];

		if (u->used && u->uid == uid)
			return u;
	} else if (hint->gen == fd_closer_gen) {
		return NULL;
	}
	hint->slot = FD_CLOSER_ROOT;
	hint->gen = fd_closer_gen;
	for (int i = FD_CLOSER_ROOT + 1; i < FD_CLOSER_OVERFLOW; i++)
		if (fd_closer_uids[i].used && fd_closer_uids[i].uid == uid) {
			hint->slot = i;
			return &fd_closer_uids[i];
		}
	return NULL;
}

static struct fd_closer_uid *fd_closer_retired_of(uid_t uid)
{
	for (struct fd_closer_worker *w = fd_closer_retired; w; w = w->next)
		if (w->own.uid == uid)
			return &w->own;
	return NULL;
}

/* uid's closes waiting in u, and the one running if it is uid's. */
static int fd_closer_count_in(const struct fd_closer_uid *u, uid_t uid)
{
	int n = u->busy_since_ns && u->closing_uid == uid;

	for (int i = 0, fd = u->oldest; i < u->len; i++, fd = fd_closer_after[fd])
		n += fd_closer_owner[fd] == uid;
	return n;
}

static struct fd_closer_uid *fd_closer_take(struct fd_closer_uid *u, uid_t uid)
{
	u->used = true;
	u->uid = uid;
	fd_closer_gen++;
	return u;
}

/*
 * u's thread, hung in a close of closing_uid's, leaves the table with that
 * uid's closes queued in u, into its own entry, listed as retired; the
 * closes of others stay in u, in order, for a thread to come. False when
 * u does not hang, or FD_CLOSER_RETIRED_MAX threads are retired already.
 */
static bool fd_closer_retire(struct fd_closer_uid *u)
{
	struct fd_closer_worker *w = u->worker;
	struct fd_closer_uid *r;
	int fd = u->oldest, n = u->len;

	if (!w || !fd_closer_hangs(u) || fd_closer_nr_retired >= FD_CLOSER_RETIRED_MAX)
		return false;
	r = &w->own;
	*r = (struct fd_closer_uid){ .used = true,
				     .running = true,
				     .uid = u->closing_uid,
				     .closing_uid = u->closing_uid,
				     .busy_since_ns = u->busy_since_ns,
				     .worker = w };
	pthread_cond_init(&r->work, &fd_closer_cond_attr);
	for (u->len = 0; n--;) {
		int next = fd_closer_after[fd];

		fd_closer_push(fd_closer_owner[fd] == r->uid ? r : u, fd);
		fd = next;
	}
	w->u = r;
	w->next = fd_closer_retired;
	fd_closer_retired = w;
	fd_closer_nr_retired++;
	u->worker = NULL;
	u->running = false;
	u->busy_since_ns = 0;
	return true;
}

struct fd_closer_uid *fd_closer_entry_for(uid_t uid)
{
	struct fd_closer_uid *u = fd_closer_own(uid, NULL), *overflow;

	if (!u)
		u = fd_closer_retired_of(uid);
	if (u)
		return u;
	for (int i = FD_CLOSER_ROOT + 1; i < FD_CLOSER_OVERFLOW; i++) {
		u = &fd_closer_uids[i];
		if (!u->used || (!u->len && !u->busy_since_ns))
			return fd_closer_take(u, uid);
	}
	for (int i = FD_CLOSER_ROOT + 1; i < FD_CLOSER_OVERFLOW; i++)
		if (fd_closer_retire(&fd_closer_uids[i]))
			return fd_closer_take(&fd_closer_uids[i], uid);
	overflow = &fd_closer_uids[FD_CLOSER_OVERFLOW];
	fd_closer_retire(overflow);
	return overflow;
}

void fd_closer_worker_ends(struct fd_closer_worker *w)
{
	struct fd_closer_worker **p = &fd_closer_retired;

	w->u->running = false;
	w->u->worker = NULL;
	if (w->u != &w->own)
		return;
	while (*p != w)
		p = &(*p)->next;
	*p = w->next;
	fd_closer_nr_retired--;
	pthread_cond_destroy(&w->own.work);
}

enum fd_closer_state fd_closer_state(uid_t uid, struct fd_closer_hint *hint)
{
	struct fd_closer_uid *overflow = &fd_closer_uids[FD_CLOSER_OVERFLOW], *u, *r = NULL;
	enum fd_closer_state state = FD_CLOSER_OK;

	fd_closer_lock_table();
	if (fd_closer_retire(overflow))
		fd_closer_start_threads();
	u = fd_closer_own(uid, hint);
	if (fd_closer_nr_retired)
		r = fd_closer_retired_of(uid);
	if ((u && fd_closer_hangs(u)) || (r && fd_closer_hangs(r)) ||
	    (fd_closer_hangs(overflow) && overflow->closing_uid == uid))
		state = FD_CLOSER_HUNG;
	else if ((u && u->len >= FD_CLOSER_STUCK_QUEUE) || (r && r->len >= FD_CLOSER_STUCK_QUEUE) ||
		 (overflow->len >= FD_CLOSER_STUCK_QUEUE && fd_closer_count_in(overflow, uid)))
		state = FD_CLOSER_BEHIND;
	pthread_mutex_unlock(&fd_closer_lock);
	return state;
}

int fd_closer_pending(uid_t uid)
{
	struct fd_closer_uid *u, *r;
	int n;

	fd_closer_lock_table();
	u = fd_closer_own(uid, NULL);
	r = fd_closer_retired_of(uid);
	n = fd_closer_count_in(&fd_closer_uids[FD_CLOSER_OVERFLOW], uid);
	if (u)
		n += fd_closer_count_in(u, uid);
	if (r)
		n += fd_closer_count_in(r, uid);
	pthread_mutex_unlock(&fd_closer_lock);
	return n;
}
