// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An HTTP/2 connection's streams by id (h2_streams.h): the salted
 * open-addressing table, grown past half full, and the structs made as
 * needed and kept on the free list.
 */
#include <stdlib.h>
#include <string.h>
#include "h2_streams.h"

static uint32_t table_slot(const struct h2_conn *c, uint32_t id)
{
	return ((id ^ c->table_salt) * 0x9e3779b1u) >> (32 - c->table_bits);
}

struct h2_stream *h2_streams_find(struct h2_conn *c, uint32_t id)
{
	uint32_t mask = (1u << c->table_bits) - 1;

	if (!c->table)
		return NULL;
	for (uint32_t i = table_slot(c, id); c->table[i]; i = (i + 1) & mask)
		if (c->table[i]->id == id)
			return c->table[i];
	return NULL;
}

static void table_put(struct h2_conn *c, struct h2_stream *s)
{
	uint32_t mask = (1u << c->table_bits) - 1, i;

	for (i = table_slot(c, s->id); c->table[i]; i = (i + 1) & mask)
		;
	c->table[i] = s;
}

/* Room for one more open stream in the table, grown (and rehashed) past half full. */
static bool table_room(struct h2_conn *c)
{
	uint32_t bits = c->table ? c->table_bits : 3, old = c->table ? 1u << c->table_bits : 0;
	struct h2_stream **t, **was = c->table;

	if (c->table && (c->nr_streams + 1) * 2 <= 1u << c->table_bits)
		return true;
	while ((c->nr_streams + 1) * 2 > 1u << bits)
		bits++;
	t = calloc((size_t)1 << bits, sizeof(*t));
	if (!t)
		return false;
	c->table = t;
	c->table_bits = bits;
	for (uint32_t i = 0; i < old; i++)
		if (was[i])
			table_put(c, was[i]);
	free(was);
	return true;
}

/* s out of the table, the entries after it moved back (linear probing's deletion). */
static void table_remove(struct h2_conn *c, struct h2_stream *s)
{
	uint32_t mask = (1u << c->table_bits) - 1, i = table_slot(c, s->id), j;

	while (c->table[i] != s)
		i = (i + 1) & mask;
	c->table[i] = NULL;
	for (j = (i + 1) & mask; c->table[j]; j = (j + 1) & mask) {
		uint32_t k = table_slot(c, c->table[j]->id);

		/* moved back to i when its home is not cyclically within (i, j] */
		if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
			c->table[i] = c->table[j];
			c->table[j] = NULL;
			i = j;
		}
	}
}

void h2_streams_release(struct h2_conn *c, struct h2_stream *s)
{
	table_remove(c, s);
	s->gone = true;
	s->id = 0;
	s->free_next = c->free_streams;
	c->free_streams = s;
	c->nr_streams--;
}

struct h2_stream *h2_streams_new(struct h2_conn *c, uint32_t id)
{
	struct h2_stream *s = c->free_streams, *all;

	if (c->nr_streams + c->held >= c->lim.max_streams || !table_room(c))
		return NULL;
	if (s) {
		c->free_streams = s->free_next;
	} else {
		s = malloc(sizeof(*s));
		if (!s)
			return NULL;
		s->all_next = c->all_streams;
		c->all_streams = s;
	}
	all = s->all_next;
	memset(s, 0, sizeof(*s));
	s->all_next = all;
	s->id = id;
	s->recv_window = c->lim.stream_window;
	s->send_window = c->peer.initial_window_size;
	c->nr_streams++;
	table_put(c, s);
	return s;
}

void h2_streams_free(struct h2_conn *c)
{
	while (c->all_streams) {
		struct h2_stream *s = c->all_streams;

		c->all_streams = s->all_next;
		free(s);
	}
	free(c->table);
	c->table = NULL;
	c->free_streams = NULL;
}
