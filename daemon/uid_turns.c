// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The uid-fair queue of uid_turns.h. The queue holds at most the tenants
 * being admitted (64 per serving core), so both calls walk it.
 */
#include <stddef.h>
#include "uid_turns.h"

void uid_turns_push(struct uid_turns *q, struct uid_turns_item *item, uid_t uid)
{
	struct uid_turns_item **end = &q->head;

	while (*end)
		end = &(*end)->next;
	item->next = NULL;
	item->uid = uid;
	*end = item;
}

struct uid_turns_item *uid_turns_pop(struct uid_turns *q)
{
	struct uid_turns_item **next = NULL, **first = NULL, *item;

	for (struct uid_turns_item **p = &q->head; *p; p = &(*p)->next) {
		uid_t uid = (*p)->uid;

		if (!uid) {
			next = p;
			break;
		}
		/* the oldest item of the least uid past the last served, and of the least of all */
		if (q->served && uid > q->last && (!next || uid < (*next)->uid))
			next = p;
		if (!first || uid < (*first)->uid)
			first = p;
	}
	if (!next)
		next = first;
	if (!next)
		return NULL;
	item = *next;
	*next = item->next;
	if (item->uid) {
		q->last = item->uid;
		q->served = true;
	}
	return item;
}
