// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulator's event queue: a binary min-heap ordered by (time, kind,
 * push order), so two runs that push the same events pop them in the same
 * order, ties included.
 */
#include <errno.h>
#include <stdlib.h>
#include "sim.h"

static bool event_before(const struct sim_event *a, const struct sim_event *b)
{
	if (a->time_ns != b->time_ns)
		return a->time_ns < b->time_ns;
	if (a->kind != b->kind)
		return a->kind < b->kind;
	return a->seq < b->seq;
}

int sim_heap_init(struct sim_heap *h, int cap, struct coloc_err *err)
{
	*h = (struct sim_heap){ 0 };
	h->cap = cap > 16 ? cap : 16;
	h->ev = malloc((size_t)h->cap * sizeof(*h->ev));
	if (!h->ev)
		return coloc_err_set(err, -ENOMEM, "simulator: out of memory for %d events",
				     h->cap);
	return 0;
}

void sim_heap_free(struct sim_heap *h)
{
	free(h->ev);
	*h = (struct sim_heap){ 0 };
}

int sim_heap_push(struct sim_heap *h, uint64_t time_ns, enum sim_event_kind kind, int arg,
		  uint64_t gen, struct coloc_err *err)
{
	struct sim_event e = {
		.time_ns = time_ns, .seq = h->next_seq++, .kind = kind, .arg = arg, .gen = gen
	};
	int i;

	if (h->nr == h->cap) {
		struct sim_event *ev = realloc(h->ev, (size_t)h->cap * 2 * sizeof(*ev));

		if (!ev)
			return coloc_err_set(err, -ENOMEM, "simulator: out of memory for %d events",
					     h->cap * 2);
		h->ev = ev;
		h->cap *= 2;
	}
	for (i = h->nr++; i > 0 && event_before(&e, &h->ev[(i - 1) / 2]); i = (i - 1) / 2)
		h->ev[i] = h->ev[(i - 1) / 2];
	h->ev[i] = e;
	return 0;
}

bool sim_heap_pop(struct sim_heap *h, struct sim_event *ev)
{
	struct sim_event last;
	int i = 0;

	if (!h->nr)
		return false;
	*ev = h->ev[0];
	last = h->ev[--h->nr];
	for (;;) {
		int c = 2 * i + 1;

		if (c >= h->nr)
			break;
		if (c + 1 < h->nr && event_before(&h->ev[c + 1], &h->ev[c]))
			c++;
		if (!event_before(&h->ev[c], &last))
			break;
		h->ev[i] = h->ev[c];
		i = c;
	}
	if (h->nr)
		h->ev[i] = last;
	return true;
}
