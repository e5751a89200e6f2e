// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An HTTP/2 connection's DATA frames (h2_conn_impl.h): the windows charged
 * when a frame's header is read, its content handed to its stream's
 * callback (or placed by the caller, h2_conn_data_placed), its padding
 * skipped, END_STREAM acted on, and WINDOW_UPDATEs sent for what was taken.
 */
#include <errno.h>
#include "h2_conn_impl.h"

/* WINDOW_UPDATEs for what the streams' users took, once half a window was. */
static void windows_update(struct h2_conn *c, struct h2_stream *s)
{
	if (c->recv_used >= (int64_t)c->lim.conn_window / 2) {
		h2c_out_small(c, h2_window_update_write, 0, (uint32_t)c->recv_used);
		c->recv_window += c->recv_used;
		c->recv_used = 0;
	}
	if (s && !s->gone && !s->remote_closed &&
	    s->recv_used >= (int64_t)c->lim.stream_window / 2) {
		h2c_out_small(c, h2_window_update_write, s->id, (uint32_t)s->recv_used);
		s->recv_window += s->recv_used;
		s->recv_used = 0;
	}
}

struct h2_stream *h2c_data_stream(struct h2_conn *c)
{
	struct h2_stream *s = c->data_stream;

	return s && !s->gone && s->id == c->f.stream && !s->remote_closed ? s : NULL;
}

/* The DATA frame's content and padding all taken: END_STREAM acted on. */
void h2c_data_frame_end(struct h2_conn *c)
{
	struct h2_stream *s = h2c_data_stream(c);

	c->state = P_HEAD;
	c->fh_got = 0;
	if (s && c->data_end) {
		s->remote_closed = true;
		c->cb->end(c->arg, s->st);
	}
	windows_update(c, s);
}

/* n bytes of the DATA frame's content (p NULL: placed by the caller) or padding taken. */
void h2c_data_take(struct h2_conn *c, const uint8_t *p, size_t n)
{
	struct h2_stream *s = h2c_data_stream(c);

	c->recv_used += (int64_t)n;
	if (c->data_left) {
		c->data_left -= n;
		if (s) {
			s->recv_used += (int64_t)n;
			if (p)
				c->cb->data(c->arg, s->st, p, n);
		}
	} else {
		c->pad_left -= n;
	}
	if (!c->data_left && !c->pad_left)
		h2c_data_frame_end(c);
}

/* A DATA frame's header read: the windows charged, its stream found. */
int h2c_data_frame_begin(struct h2_conn *c)
{
	struct h2_stream *s;

	if (!c->f.stream)
		return h2c_conn_error(c, H2_PROTOCOL_ERROR);
	if (c->f.stream > c->last_peer_id)
		return h2c_conn_error(c, H2_PROTOCOL_ERROR); /* an idle stream */
	if ((int64_t)c->f.length > c->recv_window)
		return h2c_conn_error(c, H2_FLOW_CONTROL_ERROR);
	c->recv_window -= c->f.length;
	s = h2_streams_find(c, c->f.stream);
	if (s && s->remote_closed) {
		h2c_stream_reset(c, s, H2_STREAM_CLOSED);
		s = NULL;
	} else if (s && (int64_t)c->f.length > s->recv_window) {
		h2c_stream_reset(c, s, H2_FLOW_CONTROL_ERROR);
		s = NULL;
	} else if (s) {
		s->recv_window -= c->f.length;
	}
	/* a closed stream's DATA is dropped, its bytes given back to the connection's window */
	c->data_stream = s;
	c->data_end = c->f.flags & H2_FLAG_END_STREAM;
	if (!c->f.length && !c->data_end && !h2c_calm_count(c, false))
		return -EPROTO;
	c->data_left = c->f.length;
	c->pad_left = 0;
	if (c->f.flags & H2_FLAG_PADDED) {
		if (!c->f.length)
			return h2c_conn_error(c, H2_FRAME_SIZE_ERROR);
		c->state = P_DATA_PAD;
		return 0;
	}
	c->state = P_DATA;
	if (!c->f.length)
		h2c_data_frame_end(c);
	return 0;
}
