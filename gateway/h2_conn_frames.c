// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An HTTP/2 connection's frames other than DATA, each gathered whole
 * (h2_conn_impl.h): header blocks (HEADERS and CONTINUATION) decoded into
 * a new stream's request or a request's trailers, SETTINGS,
 * WINDOW_UPDATE, RST_STREAM, PING and PRIORITY.
 */
#include <errno.h>
#include <string.h>
#include "h2_conn_impl.h"

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

struct block_ctx {
	struct h2_conn *c;
	struct h2_stream *s;
};

static int block_ignore(void *arg, const char *name, size_t name_len, const char *value,
			size_t value_len)
{
	(void)arg, (void)name, (void)name_len, (void)value, (void)value_len;
	return 0;
}

/* A field checked (RFC 9113 8.2, 8.3), then given to the stream's user while all are well. */
static int block_field(void *arg, const char *name, size_t name_len, const char *value,
		       size_t value_len)
{
	struct block_ctx *b = arg;

	if (!b->s || b->s->gone ||
	    !h2_fields_check(&b->c->hb_fields, name, name_len, value, value_len))
		return 0; /* decoded on: the HPACK table stays in sync */
	if (b->c->hb_new)
		return b->c->cb->field(b->c->arg, b->s->st, name, name_len, value, value_len);
	return 0;
}

/* A whole header block (c->hb) for stream hb_stream: a request's, or trailers. */
static int block_done(struct h2_conn *c)
{
	struct block_ctx b = { c, NULL };
	uint32_t id = c->hb_stream;
	bool refused = false;
	int r;

	c->hb_stream = 0;
	if (c->hb_new && c->goaway_sent && id > c->goaway_last) {
		refused = true; /* after our GOAWAY: the client tries again elsewhere */
	} else if (c->hb_new) {
		b.s = h2_streams_new(c, id);
		if (b.s) {
			b.s->st = c->cb->open(c->arg, id);
			if (!b.s->st) {
				h2_streams_release(c, b.s);
				b.s = NULL;
			}
		}
		refused = !b.s;
	} else if (!c->hb_new) {
		b.s = h2_streams_find(c, id);
	}
	/* decoded whatever becomes of the stream: the table stays in sync */
	h2_fields_begin(&c->hb_fields, !c->hb_new);
	r = hpack_decode(&c->hpack, c->hb, c->hb_len, c->lim.max_header_list,
			 b.s ? block_field : block_ignore, &b);
	c->hb_len = 0;
	if (r == HPACK_ERR_COMPRESSION)
		return h2c_conn_error(c, H2_COMPRESSION_ERROR);
	if (r == HPACK_ERR_NO_MEMORY)
		return h2c_conn_error(c, H2_INTERNAL_ERROR); /* the table is out of sync */
	if (refused) {
		h2c_out_small(c, h2_rst_stream_write, id, H2_REFUSED_STREAM);
		return c->goaway_sent || h2c_calm_count(c, true) ? 0 : -EPROTO;
	}
	if (!b.s)
		return 0;
	if (r != HPACK_ERR_LIST_TOO_LARGE && !b.s->gone &&
	    (!h2_fields_end(&c->hb_fields) || (c->hb_new && c->hb_self_dep))) {
		h2c_stream_reset(c, b.s, H2_PROTOCOL_ERROR); /* malformed (RFC 9113 8.1.1, 5.3.1) */
		return c->dead ? -EPROTO : 0;
	}
	if (!c->hb_new) { /* trailers: only to end the request */
		if (!c->hb_end_stream || b.s->remote_closed)
			h2c_stream_reset(c, b.s, H2_PROTOCOL_ERROR);
	} else if (!b.s->gone) {
		c->cb->headers(c->arg, b.s->st, r);
	}
	if (!b.s->gone && c->hb_end_stream && !b.s->remote_closed) {
		b.s->remote_closed = true;
		c->cb->end(c->arg, b.s->st);
	}
	return 0;
}

/* A HEADERS or CONTINUATION frame's block fragment, gathered. */
static int block_fragment(struct h2_conn *c)
{
	const uint8_t *content = c->frame;
	size_t len = c->f.length;
	int r;

	if (c->f.type == H2_HEADERS) {
		struct h2_stream *s;

		if (!c->f.stream || !(c->f.stream & 1))
			return h2c_conn_error(c, H2_PROTOCOL_ERROR);
		r = h2_frame_content(&c->f, c->frame, &content, &len);
		if (r)
			return h2c_conn_error(c, (uint32_t)r);
		s = h2_streams_find(c, c->f.stream);
		if (!s && c->f.stream <= c->last_peer_id)
			return h2c_conn_error(c, H2_STREAM_CLOSED); /* RFC 9113 5.1.1 */
		c->hb_new = !s;
		if (c->hb_new)
			c->last_peer_id = c->f.stream;
		/* RFC 9113 5.3.1: a stream cannot depend on itself */
		c->hb_self_dep = c->f.flags & H2_FLAG_PRIORITY &&
				 (be32(c->frame + (c->f.flags & H2_FLAG_PADDED ? 1 : 0)) &
				  0x7fffffffu) == c->f.stream;
		c->hb_stream = c->f.stream;
		c->hb_end_stream = c->f.flags & H2_FLAG_END_STREAM;
		c->hb_len = 0;
	}
	if (c->hb_len + len > c->lim.max_header_list)
		return h2c_conn_error(c, H2_ENHANCE_YOUR_CALM); /* a CONTINUATION flood */
	memcpy(c->hb + c->hb_len, content, len);
	c->hb_len += len;
	return c->f.flags & H2_FLAG_END_HEADERS ? block_done(c) : 0;
}

/* ---- input: the other frames ---------------------------------------------------------- */

static int frame_settings(struct h2_conn *c)
{
	uint32_t old = c->peer.initial_window_size;
	int64_t delta;
	int r;

	if (c->f.flags & H2_FLAG_ACK)
		return c->f.length ? h2c_conn_error(c, H2_FRAME_SIZE_ERROR) : 0;
	if (!h2c_calm_count(c, false))
		return -EPROTO;
	c->settings_got = true;
	r = h2_settings_apply(&c->peer, c->frame, c->f.length);
	if (r)
		return h2c_conn_error(c, (uint32_t)(r < 0 ? -r : r));
	delta = (int64_t)c->peer.initial_window_size - old;
	for (struct h2_stream *s = c->all_streams; s; s = s->all_next) {
		if (!s->id || s->gone)
			continue;
		s->send_window += delta;
		if (s->send_window > H2_MAX_WINDOW)
			return h2c_conn_error(c, H2_FLOW_CONTROL_ERROR);
	}
	if (c->peer.max_frame_size > H2_CTL_MAX * 64u)
		c->peer.max_frame_size = H2_CTL_MAX * 64u; /* our DATA frames: 1 MiB at most */
	{
		uint8_t *o = h2c_out_room(c, H2_FRAME_HEADER);

		if (!o)
			return h2c_conn_error(c, H2_INTERNAL_ERROR);
		c->out_len += h2_settings_ack_write(o);
	}
	h2c_flush_all(c);
	return 0;
}

static int frame_window_update(struct h2_conn *c)
{
	uint32_t inc = be32(c->frame) & 0x7fffffffu;
	struct h2_stream *s;

	if (!c->f.stream) {
		if (!inc)
			return h2c_conn_error(c, H2_PROTOCOL_ERROR);
		if (c->send_window + inc > H2_MAX_WINDOW)
			return h2c_conn_error(c, H2_FLOW_CONTROL_ERROR);
		c->send_window += inc;
		h2c_flush_all(c);
		return 0;
	}
	if (c->f.stream > c->last_peer_id)
		return h2c_conn_error(c, H2_PROTOCOL_ERROR);
	s = h2_streams_find(c, c->f.stream);
	if (!s) /* answered already: the client's window for it no longer matters */
		return h2c_calm_count(c, false) ? 0 : -EPROTO;
	if (!inc || s->send_window + inc > H2_MAX_WINDOW) {
		h2c_stream_reset(c, s, inc ? H2_FLOW_CONTROL_ERROR : H2_PROTOCOL_ERROR);
		return 0;
	}
	s->send_window += inc;
	h2c_stream_flush(c, s);
	return 0;
}

static int frame_rst_stream(struct h2_conn *c)
{
	struct h2_stream *s;

	if (!c->f.stream || c->f.stream > c->last_peer_id)
		return h2c_conn_error(c, H2_PROTOCOL_ERROR);
	s = h2_streams_find(c, c->f.stream);
	if (!s) /* over already: a frame that does no work */
		return h2c_calm_count(c, false) ? 0 : -EPROTO;
	h2c_stream_done(c, s, be32(c->frame) ? be32(c->frame) : H2_CANCEL);
	return h2c_calm_count(c, true) ? 0 : -EPROTO;
}

/* PRIORITY is ignored, but for a stream made to depend on itself (RFC 9113 5.3.1). */
static int frame_priority(struct h2_conn *c)
{
	struct h2_stream *s;

	if (!h2c_calm_count(c, false))
		return -EPROTO;
	if ((be32(c->frame) & 0x7fffffffu) != c->f.stream)
		return 0;
	s = h2_streams_find(c, c->f.stream);
	if (!s) /* idle or closed: no RST_STREAM for an idle stream */
		return h2c_conn_error(c, H2_PROTOCOL_ERROR);
	h2c_stream_reset(c, s, H2_PROTOCOL_ERROR);
	return c->dead ? -EPROTO : 0;
}

/* A frame other than DATA, whole in c->frame. */
int h2c_frame_act(struct h2_conn *c)
{
	c->state = P_HEAD;
	c->fh_got = 0;
	switch (c->f.type) {
	case H2_HEADERS:
	case H2_CONTINUATION:
		return block_fragment(c);
	case H2_SETTINGS:
		return frame_settings(c);
	case H2_PING:
		if (!h2c_calm_count(c, false)) /* an ACK too: we send no PING */
			return -EPROTO;
		if (c->f.flags & H2_FLAG_ACK)
			return 0;
		{
			uint8_t *o = h2c_out_room(c, H2_FRAME_HEADER + 8);

			if (!o)
				return h2c_conn_error(c, H2_INTERNAL_ERROR);
			c->out_len += h2_ping_write(o, c->frame, true);
		}
		return 0;
	case H2_WINDOW_UPDATE:
		return frame_window_update(c);
	case H2_RST_STREAM:
		return frame_rst_stream(c);
	case H2_PRIORITY:
		return frame_priority(c);
	default: /* GOAWAY: the client's streams run to their end */
		return 0;
	}
}
