// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An HTTP/2 connection's output (h2_conn_impl.h): the buffer of bytes to
 * send, grown as needed and compacted as it is sent, the frames appended to
 * it, and GOAWAY, which a connection error sends before the connection is
 * over.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "h2_conn_impl.h"

uint8_t *h2c_out_room(struct h2_conn *c, size_t n)
{
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (c->out_cap - c->out_len < n && c->out_off) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (c->out_cap - c->out_len < n) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		uint8_t *p;

		while (cap - c->out_len < n)
			cap *= 2;
		p = realloc(c->out, cap);
		if (!p)
			return NULL;
		c->out = p;
		c->out_cap = cap;
	}
	return c->out + c->out_len;
}

/* A frame of n payload bytes (copied from p when not NULL) appended; false out of memory. */
bool h2c_out_frame(struct h2_conn *c, uint8_t type, uint8_t flags, uint32_t stream, const void *p,
		   size_t n)
{
	uint8_t *o = h2c_out_room(c, H2_FRAME_HEADER + n);

	if (!o) {
		c->dead = true;
		return false;
	}
	h2_frame_header_write(o, (uint32_t)n, type, flags, stream);
	if (n)
		memcpy(o + H2_FRAME_HEADER, p, n);
	c->out_len += H2_FRAME_HEADER + n;
	return true;
}

void h2c_out_small(struct h2_conn *c, size_t (*write)(uint8_t *, uint32_t, uint32_t), uint32_t a,
		   uint32_t b)
{
	uint8_t *o = h2c_out_room(c, 64);

	if (!o) {
		c->dead = true;
		return;
	}
	c->out_len += write(o, a, b);
}

void h2_conn_goaway(struct h2_conn *c, uint32_t error)
{
	if (!c->goaway_sent) {
		h2c_out_small(c, h2_goaway_write, c->last_peer_id, error);
		c->goaway_sent = true;
		c->goaway_error = error;
		c->goaway_last = c->last_peer_id;
	}
	if (error != H2_NO_ERROR)
		c->dead = true;
}

/* A connection error: GOAWAY with error, the connection over. */
int h2c_conn_error(struct h2_conn *c, uint32_t error)
{
	h2_conn_goaway(c, error);
	c->dead = true;
	return -EPROTO;
}
