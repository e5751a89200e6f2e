// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One HTTP/2 connection's state, server side (h2_conn.h; RFC 9113). The
 * input is parsed as it comes, frame header by frame header: a DATA
 * frame's content goes to its stream's callback (or is read by the caller
 * straight to where the stream keeps it, h2_conn_data_next), any other
 * frame is gathered whole (at most H2_CTL_MAX bytes) and acted on. A stream
 * over is marked gone and its slot taken back when no stream pointer is
 * held (h2_conn_sweep), so callbacks may answer streams while a frame is
 * being read; the streams are found by id in h2_streams.c.
 * docs/design/gateway-grpc.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "h2_streams.h"

enum { P_PREFACE, P_HEAD, P_FRAME, P_DATA_PAD, P_DATA, P_SKIP };

#define H2_SECOND 1000000000ull

/* ---- output --------------------------------------------------------------------------- */

static uint8_t *out_room(struct h2_conn *c, size_t n)
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
static bool out_frame(struct h2_conn *c, uint8_t type, uint8_t flags, uint32_t stream,
		      const void *p, size_t n)
{
	uint8_t *o = out_room(c, H2_FRAME_HEADER + n);

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

static void out_small(struct h2_conn *c, size_t (*write)(uint8_t *, uint32_t, uint32_t), uint32_t a,
		      uint32_t b)
{
	uint8_t *o = out_room(c, 64);

	if (!o) {
		c->dead = true;
		return;
	}
	c->out_len += write(o, a, b);
}

void h2_conn_goaway(struct h2_conn *c, uint32_t error)
{
	if (!c->goaway_sent) {
		out_small(c, h2_goaway_write, c->last_peer_id, error);
		c->goaway_sent = true;
		c->goaway_error = error;
		c->goaway_last = c->last_peer_id;
	}
	if (error != H2_NO_ERROR)
		c->dead = true;
}

/* A connection error: GOAWAY with error, the connection over. */
static int conn_error(struct h2_conn *c, uint32_t error)
{
	h2_conn_goaway(c, error);
	c->dead = true;
	return -EPROTO;
}

/* ---- streams (found by id in h2_streams.c) --------------------------------------------- */

static void stream_free_answer(struct h2_stream *s)
{
	if (!s->borrowed) {
		free(s->hdr);
		free(s->trl);
	}
	free(s->body);
	s->hdr = s->body = s->trl = NULL;
}

/* The stream is over: its user told once, its slot free. */
static void stream_done(struct h2_conn *c, struct h2_stream *s, uint32_t error)
{
	void *st = s->st;

	if (s->gone)
		return;
	h2_streams_release(c, s);
	stream_free_answer(s);
	c->cb->close(c->arg, st, error);
}

/* Counts a stream reset by the client or refused; false past the bound (GOAWAY sent). */
static bool calm_count(struct h2_conn *c, bool reset)
{
	uint64_t second = c->now_ns / H2_SECOND;

	if (second != c->calm_second) {
		c->calm_second = second;
		c->calm_resets = c->calm_frames = 0;
	}
	/*
	 * Resets: too many in one second, or too many for the streams answered
	 * over the connection's life, however slowly they are read (a server
	 * starved of CPU reads a flood slowly too)
	 */
	if (reset ? ++c->calm_resets > H2_CALM_RESETS + c->lim.max_streams ||
			    ++c->resets_total > 4 * (c->answered_total + H2_CALM_RESETS +
						     (uint64_t)c->lim.max_streams) :
		    ++c->calm_frames > H2_CALM_FRAMES) {
		conn_error(c, H2_ENHANCE_YOUR_CALM);
		return false;
	}
	return true;
}

/*
 * A stream error: RST_STREAM, the stream over. It counts as a reset as the
 * client's do: a client can make the server reset streams as fast as it
 * could reset them itself (a WINDOW_UPDATE of 0, DATA after END_STREAM, a
 * malformed request: MadeYouReset, CVE-2025-8671).
 */
static void stream_reset(struct h2_conn *c, struct h2_stream *s, uint32_t error)
{
	out_small(c, h2_rst_stream_write, s->id, error);
	stream_done(c, s, error);
	calm_count(c, true);
}

/* As much of s's answer as the client's windows take; the stream over once it is all out. */
static void stream_flush(struct h2_conn *c, struct h2_stream *s)
{
	if (!s->answering || s->gone)
		return;
	if (s->stage == 0) {
		bool end = !s->body_len && !s->trl_len;

		if (!out_frame(c, H2_HEADERS, H2_FLAG_END_HEADERS | (end ? H2_FLAG_END_STREAM : 0),
			       s->id, s->hdr, s->hdr_len))
			return;
		s->stage = 1;
	}
	while (s->stage == 1 && s->body_off < s->body_len) {
		int64_t n = (int64_t)(s->body_len - s->body_off);
		bool end;

		n = n < c->send_window ? n : c->send_window;
		n = n < s->send_window ? n : s->send_window;
		n = n < (int64_t)c->peer.max_frame_size ? n : (int64_t)c->peer.max_frame_size;
		if (n <= 0)
			return; /* resumed by the client's WINDOW_UPDATE */
		if (c->out_len - c->out_off >= c->lim.max_out)
			return; /* resumed as the output drains (h2_conn_out_done) */
		end = s->body_off + (size_t)n == s->body_len && !s->trl_len;
		if (!out_frame(c, H2_DATA, end ? H2_FLAG_END_STREAM : 0, s->id,
			       s->body + s->body_off, (size_t)n))
			return;
		s->body_off += (size_t)n;
		c->send_window -= n;
		s->send_window -= n;
	}
	if (s->stage == 1) {
		s->stage = 2;
		if (s->trl_len &&
		    !out_frame(c, H2_HEADERS, H2_FLAG_END_HEADERS | H2_FLAG_END_STREAM, s->id,
			       s->trl, s->trl_len))
			return;
		s->stage = 3;
	}
	/* RFC 9113 8.1: answered before the request was whole: the rest is not wanted */
	if (!s->remote_closed)
		out_small(c, h2_rst_stream_write, s->id, H2_NO_ERROR);
	s->local_closed = true;
	c->answered_total++;
	stream_done(c, s, H2_NO_ERROR);
}

static void flush_all(struct h2_conn *c)
{
	for (struct h2_stream *s = c->all_streams; s && c->send_window > 0; s = s->all_next)
		if (s->id && !s->gone && s->answering)
			stream_flush(c, s);
}

void h2_conn_out_done(struct h2_conn *c, size_t n)
{
	bool was_full = c->out_len - c->out_off >= c->lim.max_out;

	c->out_off += n;
	if (c->out_off >= c->out_len)
		c->out_off = c->out_len = 0;
	if (was_full && c->out_len - c->out_off < c->lim.max_out && !c->dead)
		flush_all(c);
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
	uint8_t *d = malloc(n ? n : 1);

	if (d && n)
		memcpy(d, p, n);
	return d;
}

int h2_conn_respond(struct h2_conn *c, uint32_t id, const uint8_t *hdr, size_t hdr_len,
		    uint8_t *body, size_t body_len, const uint8_t *trailers, size_t trailers_len)
{
	struct h2_stream *s = c->dead ? NULL : h2_streams_find(c, id);

	if (!s || s->answering) {
		free(body);
		return -ENOENT;
	}
	s->answering = true;
	s->body = body;
	s->body_len = body_len;
	/* whole now when the windows and max_out take it: nothing copied */
	if ((int64_t)body_len <= c->send_window && (int64_t)body_len <= s->send_window &&
	    c->out_len - c->out_off + hdr_len + body_len + trailers_len +
			    H2_FRAME_HEADER * (3 + body_len / c->peer.max_frame_size) <
		    c->lim.max_out) {
		s->borrowed = true;
		s->hdr = (uint8_t *)hdr;
		s->hdr_len = hdr_len;
		s->trl = (uint8_t *)trailers;
		s->trl_len = trailers_len;
		stream_flush(c, s);
		if (!s->gone) /* out of memory midway */
			stream_reset(c, s, H2_INTERNAL_ERROR);
		return c->dead ? -ENOMEM : 0;
	}
	s->hdr = dup_bytes(hdr, hdr_len);
	s->trl = dup_bytes(trailers, trailers_len);
	s->hdr_len = hdr_len;
	s->trl_len = trailers_len;
	if (!s->hdr || !s->trl) {
		stream_reset(c, s, H2_INTERNAL_ERROR);
		return -ENOMEM;
	}
	stream_flush(c, s);
	return 0;
}

int h2_conn_cancel(struct h2_conn *c, uint32_t id)
{
	struct h2_stream *s = c->dead ? NULL : h2_streams_find(c, id);

	if (!s)
		return -ENOENT;
	/* the server's own choice, at most max_streams a read timeout: not the client's resets */
	out_small(c, h2_rst_stream_write, s->id, H2_CANCEL);
	stream_done(c, s, H2_CANCEL);
	return 0;
}

/* ---- input: flow control -------------------------------------------------------------- */

/* WINDOW_UPDATEs for what the streams' users took, once half a window was. */
static void windows_update(struct h2_conn *c, struct h2_stream *s)
{
	if (c->recv_used >= (int64_t)c->lim.conn_window / 2) {
		out_small(c, h2_window_update_write, 0, (uint32_t)c->recv_used);
		c->recv_window += c->recv_used;
		c->recv_used = 0;
	}
	if (s && !s->gone && !s->remote_closed &&
	    s->recv_used >= (int64_t)c->lim.stream_window / 2) {
		out_small(c, h2_window_update_write, s->id, (uint32_t)s->recv_used);
		s->recv_window += s->recv_used;
		s->recv_used = 0;
	}
}

static struct h2_stream *data_stream(struct h2_conn *c)
{
	struct h2_stream *s = c->data_stream;

	return s && !s->gone && s->id == c->f.stream && !s->remote_closed ? s : NULL;
}

/* The DATA frame's content and padding all taken: END_STREAM acted on. */
static void data_frame_end(struct h2_conn *c)
{
	struct h2_stream *s = data_stream(c);

	c->state = P_HEAD;
	c->fh_got = 0;
	if (s && c->data_end) {
		s->remote_closed = true;
		c->cb->end(c->arg, s->st);
	}
	windows_update(c, s);
}

/* n bytes of the DATA frame's content (p NULL: placed by the caller) or padding taken. */
static void data_take(struct h2_conn *c, const uint8_t *p, size_t n)
{
	struct h2_stream *s = data_stream(c);

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
		data_frame_end(c);
}

/* A DATA frame's header read: the windows charged, its stream found. */
static int data_frame_begin(struct h2_conn *c)
{
	struct h2_stream *s;

	if (!c->f.stream)
		return conn_error(c, H2_PROTOCOL_ERROR);
	if (c->f.stream > c->last_peer_id)
		return conn_error(c, H2_PROTOCOL_ERROR); /* an idle stream */
	if ((int64_t)c->f.length > c->recv_window)
		return conn_error(c, H2_FLOW_CONTROL_ERROR);
	c->recv_window -= c->f.length;
	s = h2_streams_find(c, c->f.stream);
	if (s && s->remote_closed) {
		stream_reset(c, s, H2_STREAM_CLOSED);
		s = NULL;
	} else if (s && (int64_t)c->f.length > s->recv_window) {
		stream_reset(c, s, H2_FLOW_CONTROL_ERROR);
		s = NULL;
	} else if (s) {
		s->recv_window -= c->f.length;
	}
	/* a closed stream's DATA is dropped, its bytes given back to the connection's window */
	c->data_stream = s;
	c->data_end = c->f.flags & H2_FLAG_END_STREAM;
	if (!c->f.length && !c->data_end && !calm_count(c, false))
		return -EPROTO;
	c->data_left = c->f.length;
	c->pad_left = 0;
	if (c->f.flags & H2_FLAG_PADDED) {
		if (!c->f.length)
			return conn_error(c, H2_FRAME_SIZE_ERROR);
		c->state = P_DATA_PAD;
		return 0;
	}
	c->state = P_DATA;
	if (!c->f.length)
		data_frame_end(c);
	return 0;
}

/* ---- input: header blocks ------------------------------------------------------------- */

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
		return conn_error(c, H2_COMPRESSION_ERROR);
	if (r == HPACK_ERR_NO_MEMORY)
		return conn_error(c, H2_INTERNAL_ERROR); /* the table is out of sync */
	if (refused) {
		out_small(c, h2_rst_stream_write, id, H2_REFUSED_STREAM);
		return c->goaway_sent || calm_count(c, true) ? 0 : -EPROTO;
	}
	if (!b.s)
		return 0;
	if (r != HPACK_ERR_LIST_TOO_LARGE && !b.s->gone &&
	    (!h2_fields_end(&c->hb_fields) || (c->hb_new && c->hb_self_dep))) {
		stream_reset(c, b.s, H2_PROTOCOL_ERROR); /* malformed (RFC 9113 8.1.1, 5.3.1) */
		return c->dead ? -EPROTO : 0;
	}
	if (!c->hb_new) { /* trailers: only to end the request */
		if (!c->hb_end_stream || b.s->remote_closed)
			stream_reset(c, b.s, H2_PROTOCOL_ERROR);
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
			return conn_error(c, H2_PROTOCOL_ERROR);
		r = h2_frame_content(&c->f, c->frame, &content, &len);
		if (r)
			return conn_error(c, (uint32_t)r);
		s = h2_streams_find(c, c->f.stream);
		if (!s && c->f.stream <= c->last_peer_id)
			return conn_error(c, H2_STREAM_CLOSED); /* RFC 9113 5.1.1 */
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
		return conn_error(c, H2_ENHANCE_YOUR_CALM); /* a CONTINUATION flood */
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
		return c->f.length ? conn_error(c, H2_FRAME_SIZE_ERROR) : 0;
	if (!calm_count(c, false))
		return -EPROTO;
	c->settings_got = true;
	r = h2_settings_apply(&c->peer, c->frame, c->f.length);
	if (r)
		return conn_error(c, (uint32_t)(r < 0 ? -r : r));
	delta = (int64_t)c->peer.initial_window_size - old;
	for (struct h2_stream *s = c->all_streams; s; s = s->all_next) {
		if (!s->id || s->gone)
			continue;
		s->send_window += delta;
		if (s->send_window > H2_MAX_WINDOW)
			return conn_error(c, H2_FLOW_CONTROL_ERROR);
	}
	if (c->peer.max_frame_size > H2_CTL_MAX * 64u)
		c->peer.max_frame_size = H2_CTL_MAX * 64u; /* our DATA frames: 1 MiB at most */
	{
		uint8_t *o = out_room(c, H2_FRAME_HEADER);

		if (!o)
			return conn_error(c, H2_INTERNAL_ERROR);
		c->out_len += h2_settings_ack_write(o);
	}
	flush_all(c);
	return 0;
}

static int frame_window_update(struct h2_conn *c)
{
	uint32_t inc = be32(c->frame) & 0x7fffffffu;
	struct h2_stream *s;

	if (!c->f.stream) {
		if (!inc)
			return conn_error(c, H2_PROTOCOL_ERROR);
		if (c->send_window + inc > H2_MAX_WINDOW)
			return conn_error(c, H2_FLOW_CONTROL_ERROR);
		c->send_window += inc;
		flush_all(c);
		return 0;
	}
	if (c->f.stream > c->last_peer_id)
		return conn_error(c, H2_PROTOCOL_ERROR);
	s = h2_streams_find(c, c->f.stream);
	if (!s) /* answered already: the client's window for it no longer matters */
		return calm_count(c, false) ? 0 : -EPROTO;
	if (!inc || s->send_window + inc > H2_MAX_WINDOW) {
		stream_reset(c, s, inc ? H2_FLOW_CONTROL_ERROR : H2_PROTOCOL_ERROR);
		return 0;
	}
	s->send_window += inc;
	stream_flush(c, s);
	return 0;
}

static int frame_rst_stream(struct h2_conn *c)
{
	struct h2_stream *s;

	if (!c->f.stream || c->f.stream > c->last_peer_id)
		return conn_error(c, H2_PROTOCOL_ERROR);
	s = h2_streams_find(c, c->f.stream);
	if (!s) /* over already: a frame that does no work */
		return calm_count(c, false) ? 0 : -EPROTO;
	stream_done(c, s, be32(c->frame) ? be32(c->frame) : H2_CANCEL);
	return calm_count(c, true) ? 0 : -EPROTO;
}

/* PRIORITY is ignored, but for a stream made to depend on itself (RFC 9113 5.3.1). */
static int frame_priority(struct h2_conn *c)
{
	struct h2_stream *s;

	if (!calm_count(c, false))
		return -EPROTO;
	if ((be32(c->frame) & 0x7fffffffu) != c->f.stream)
		return 0;
	s = h2_streams_find(c, c->f.stream);
	if (!s) /* idle or closed: no RST_STREAM for an idle stream */
		return conn_error(c, H2_PROTOCOL_ERROR);
	stream_reset(c, s, H2_PROTOCOL_ERROR);
	return c->dead ? -EPROTO : 0;
}

/* A frame other than DATA, whole in c->frame. */
static int frame_act(struct h2_conn *c)
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
		if (!calm_count(c, false)) /* an ACK too: we send no PING */
			return -EPROTO;
		if (c->f.flags & H2_FLAG_ACK)
			return 0;
		{
			uint8_t *o = out_room(c, H2_FRAME_HEADER + 8);

			if (!o)
				return conn_error(c, H2_INTERNAL_ERROR);
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

/* The size a frame of type t must have (-1: any up to H2_CTL_MAX); on stream 0 or not. */
static int frame_check(struct h2_conn *c)
{
	const struct h2_frame_header *f = &c->f;

	if (c->hb_stream && (f->type != H2_CONTINUATION || f->stream != c->hb_stream))
		return conn_error(c, H2_PROTOCOL_ERROR);
	if (f->length > c->lim.max_frame)
		return conn_error(c, H2_FRAME_SIZE_ERROR);
	switch (f->type) {
	case H2_HEADERS:
		/* the block is bounded by max_header_list whatever its frames' padding */
		return f->length > H2_CTL_MAX ? conn_error(c, H2_ENHANCE_YOUR_CALM) : 0;
	case H2_CONTINUATION:
		return !c->hb_stream	      ? conn_error(c, H2_PROTOCOL_ERROR) :
		       f->length > H2_CTL_MAX ? conn_error(c, H2_ENHANCE_YOUR_CALM) :
						0;
	case H2_PRIORITY:
		return !f->stream     ? conn_error(c, H2_PROTOCOL_ERROR) :
		       f->length != 5 ? conn_error(c, H2_FRAME_SIZE_ERROR) :
					0;
	case H2_RST_STREAM:
	case H2_WINDOW_UPDATE:
		return f->length != 4 ? conn_error(c, H2_FRAME_SIZE_ERROR) : 0;
	case H2_SETTINGS:
		return f->stream ? conn_error(c, H2_PROTOCOL_ERROR) :
		       f->length % 6 || f->length > H2_CTL_MAX ?
				   conn_error(c, H2_FRAME_SIZE_ERROR) :
				   0;
	case H2_PING:
		return f->stream      ? conn_error(c, H2_PROTOCOL_ERROR) :
		       f->length != 8 ? conn_error(c, H2_FRAME_SIZE_ERROR) :
					0;
	case H2_GOAWAY:
		return f->stream ? conn_error(c, H2_PROTOCOL_ERROR) : 0;
	case H2_PUSH_PROMISE:
		return conn_error(c, H2_PROTOCOL_ERROR); /* never from a client */
	default:
		return 0;
	}
}

/* A frame header read: where its payload goes. */
static int frame_begin(struct h2_conn *c)
{
	int r;

	h2_frame_header_read(c->fh, &c->f);
	/* RFC 9113 3.4: the client's preface ends with a SETTINGS frame */
	if (!c->settings_got && (c->f.type != H2_SETTINGS || c->f.flags & H2_FLAG_ACK))
		return conn_error(c, H2_PROTOCOL_ERROR);
	r = frame_check(c);
	if (r)
		return r;
	if (c->f.type == H2_DATA)
		return data_frame_begin(c);
	if (c->f.type == H2_GOAWAY || c->f.type > H2_CONTINUATION) {
		/* read past: nothing in it is acted on */
		c->skip_left = c->f.length;
		c->state = c->skip_left ? P_SKIP : P_HEAD;
		c->fh_got = 0;
		return 0;
	}
	c->frame_got = 0;
	c->state = P_FRAME;
	return c->f.length ? 0 : frame_act(c);
}

/* ---- input: the parser ---------------------------------------------------------------- */

static size_t take_min(size_t a, size_t b)
{
	return a < b ? a : b;
}

int h2_conn_feed(struct h2_conn *c, const uint8_t *p, size_t n, uint64_t now_ns)
{
	int r = 0;

	c->now_ns = now_ns;
	while (n && !c->dead && !r) {
		size_t k;

		switch (c->state) {
		case P_PREFACE:
			k = take_min(n, 24 - c->preface_got);
			if (memcmp(p, &H2_PREFACE[c->preface_got], k))
				return conn_error(c, H2_PROTOCOL_ERROR);
			c->preface_got += k;
			if (c->preface_got == 24)
				c->state = P_HEAD;
			break;
		case P_HEAD:
			k = take_min(n, H2_FRAME_HEADER - c->fh_got);
			memcpy(c->fh + c->fh_got, p, k);
			c->fh_got += k;
			if (c->fh_got == H2_FRAME_HEADER)
				r = frame_begin(c);
			break;
		case P_FRAME:
			k = take_min(n, c->f.length - c->frame_got);
			memcpy(c->frame + c->frame_got, p, k);
			c->frame_got += k;
			if (c->frame_got == c->f.length)
				r = frame_act(c);
			break;
		case P_DATA_PAD:
			k = 1;
			c->recv_used++;
			if (p[0] >= c->f.length)
				return conn_error(c, H2_PROTOCOL_ERROR);
			c->pad_left = p[0];
			c->data_left = c->f.length - 1 - p[0];
			c->state = P_DATA;
			if (!c->data_left && !c->pad_left)
				data_frame_end(c);
			break;
		case P_DATA:
			k = take_min(n, c->data_left ? c->data_left : c->pad_left);
			data_take(c, p, k);
			break;
		default: /* P_SKIP */
			k = take_min(n, c->skip_left);
			c->skip_left -= k;
			if (!c->skip_left) {
				c->state = P_HEAD;
				c->fh_got = 0;
			}
			break;
		}
		p += k;
		n -= k;
	}
	return c->dead ? -EPROTO : r;
}

size_t h2_conn_data_next(struct h2_conn *c, void **st, size_t max)
{
	struct h2_stream *s = c->state == P_DATA && !c->dead ? data_stream(c) : NULL;

	if (!s || !c->data_left)
		return 0;
	*st = s->st;
	return take_min(c->data_left, max);
}

int h2_conn_data_placed(struct h2_conn *c, size_t n, uint64_t now_ns)
{
	c->now_ns = now_ns;
	if (c->state != P_DATA || n > c->data_left)
		return -EINVAL;
	data_take(c, NULL, n);
	return c->dead ? -EPROTO : 0;
}

/* ---- a connection --------------------------------------------------------------------- */

int h2_conn_init(struct h2_conn *c, const struct h2_conn_limits *lim, const struct h2_conn_cb *cb,
		 void *arg)
{
	uint16_t ids[] = { H2_SET_MAX_CONCURRENT_STREAMS, H2_SET_INITIAL_WINDOW_SIZE,
			   H2_SET_MAX_FRAME_SIZE, H2_SET_MAX_HEADER_LIST_SIZE, H2_SET_ENABLE_PUSH };
	uint32_t values[] = { lim->max_streams, lim->stream_window, lim->max_frame,
			      lim->max_header_list, 0 };
	uint8_t *o;

	memset(c, 0, sizeof(*c));
	c->lim = *lim;
	c->cb = cb;
	c->arg = arg;
	hpack_decoder_init(&c->hpack, 4096);
	h2_settings_default(&c->peer);
	c->recv_window = H2_DEFAULT_WINDOW;
	c->send_window = H2_DEFAULT_WINDOW;
	c->frame = malloc(H2_CTL_MAX);
	c->hb = malloc(lim->max_header_list + 1);
	/*
	 * the stream table's salt: the client picks stream ids, it cannot know
	 * this (heap addresses only when the kernel has no randomness yet)
	 */
	if (getrandom(&c->table_salt, sizeof(c->table_salt), GRND_NONBLOCK) !=
	    sizeof(c->table_salt))
		c->table_salt = (uint32_t)((uintptr_t)c >> 4) * 0x85ebca6bu ^
				(uint32_t)((uintptr_t)c->frame >> 4) * 0xc2b2ae35u;
	o = out_room(c, 128);
	if (!c->frame || !c->hb || !o) {
		h2_conn_free(c);
		return -ENOMEM;
	}
	c->out_len += h2_settings_write(o, ids, values, sizeof(ids) / sizeof(*ids));
	if (lim->conn_window > H2_DEFAULT_WINDOW) {
		out_small(c, h2_window_update_write, 0, lim->conn_window - H2_DEFAULT_WINDOW);
		c->recv_window = lim->conn_window;
	}
	return 0;
}

void h2_conn_free(struct h2_conn *c)
{
	for (struct h2_stream *s = c->all_streams; s; s = s->all_next)
		if (s->id && !s->gone)
			stream_done(c, s, H2_CANCEL);
	h2_streams_free(c);
	hpack_decoder_free(&c->hpack);
	free(c->frame);
	free(c->hb);
	free(c->out);
	c->frame = c->hb = c->out = NULL;
}
