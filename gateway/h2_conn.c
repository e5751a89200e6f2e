// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One HTTP/2 connection's state, server side (h2_conn.h; RFC 9113). The
 * input is parsed as it comes, frame header by frame header: a DATA
 * frame's content goes to its stream's callback (or is read by the caller
 * straight to where the stream keeps it, h2_conn_data_next;
 * h2_conn_data.c), any other frame is gathered whole (at most H2_CTL_MAX
 * bytes) and acted on (h2_conn_frames.c). A stream over is marked gone and
 * its slot taken back when no stream pointer is held, so callbacks may
 * answer streams (h2_conn_answer.c) while a frame is being read; the
 * streams are found by id in h2_streams.c. docs/design/gateway-grpc.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "h2_conn_impl.h"

/* The size a frame of type t must have (-1: any up to H2_CTL_MAX); on stream 0 or not. */
static int frame_check(struct h2_conn *c)
{
	const struct h2_frame_header *f = &c->f;

	if (c->hb_stream && (f->type != H2_CONTINUATION || f->stream != c->hb_stream))
		return h2c_conn_error(c, H2_PROTOCOL_ERROR);
	if (f->length > c->lim.max_frame)
		return h2c_conn_error(c, H2_FRAME_SIZE_ERROR);
	switch (f->type) {
	case H2_HEADERS:
		/* the block is bounded by max_header_list whatever its frames' padding */
		return f->length > H2_CTL_MAX ? h2c_conn_error(c, H2_ENHANCE_YOUR_CALM) : 0;
	case H2_CONTINUATION:
		return !c->hb_stream	      ? h2c_conn_error(c, H2_PROTOCOL_ERROR) :
		       f->length > H2_CTL_MAX ? h2c_conn_error(c, H2_ENHANCE_YOUR_CALM) :
						0;
	case H2_PRIORITY:
		return !f->stream     ? h2c_conn_error(c, H2_PROTOCOL_ERROR) :
		       f->length != 5 ? h2c_conn_error(c, H2_FRAME_SIZE_ERROR) :
					0;
	case H2_RST_STREAM:
	case H2_WINDOW_UPDATE:
		return f->length != 4 ? h2c_conn_error(c, H2_FRAME_SIZE_ERROR) : 0;
	case H2_SETTINGS:
		return f->stream ? h2c_conn_error(c, H2_PROTOCOL_ERROR) :
		       f->length % 6 || f->length > H2_CTL_MAX ?
				   h2c_conn_error(c, H2_FRAME_SIZE_ERROR) :
				   0;
	case H2_PING:
		return f->stream      ? h2c_conn_error(c, H2_PROTOCOL_ERROR) :
		       f->length != 8 ? h2c_conn_error(c, H2_FRAME_SIZE_ERROR) :
					0;
	case H2_GOAWAY:
		return f->stream ? h2c_conn_error(c, H2_PROTOCOL_ERROR) : 0;
	case H2_PUSH_PROMISE:
		return h2c_conn_error(c, H2_PROTOCOL_ERROR); /* never from a client */
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
		return h2c_conn_error(c, H2_PROTOCOL_ERROR);
	r = frame_check(c);
	if (r)
		return r;
	if (c->f.type == H2_DATA)
		return h2c_data_frame_begin(c);
	if (c->f.type == H2_GOAWAY || c->f.type > H2_CONTINUATION) {
		/* read past: nothing in it is acted on */
		c->skip_left = c->f.length;
		c->state = c->skip_left ? P_SKIP : P_HEAD;
		c->fh_got = 0;
		return 0;
	}
	c->frame_got = 0;
	c->state = P_FRAME;
	return c->f.length ? 0 : h2c_frame_act(c);
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
				return h2c_conn_error(c, H2_PROTOCOL_ERROR);
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
				r = h2c_frame_act(c);
			break;
		case P_DATA_PAD:
			k = 1;
			c->recv_used++;
			if (p[0] >= c->f.length)
				return h2c_conn_error(c, H2_PROTOCOL_ERROR);
			c->pad_left = p[0];
			c->data_left = c->f.length - 1 - p[0];
			c->state = P_DATA;
			if (!c->data_left && !c->pad_left)
				h2c_data_frame_end(c);
			break;
		case P_DATA:
			k = take_min(n, c->data_left ? c->data_left : c->pad_left);
			h2c_data_take(c, p, k);
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
	struct h2_stream *s = c->state == P_DATA && !c->dead ? h2c_data_stream(c) : NULL;

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
	h2c_data_take(c, NULL, n);
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
	o = h2c_out_room(c, 128);
	if (!c->frame || !c->hb || !o) {
		h2_conn_free(c);
		return -ENOMEM;
	}
	c->out_len += h2_settings_write(o, ids, values, sizeof(ids) / sizeof(*ids));
	if (lim->conn_window > H2_DEFAULT_WINDOW) {
		h2c_out_small(c, h2_window_update_write, 0, lim->conn_window - H2_DEFAULT_WINDOW);
		c->recv_window = lim->conn_window;
	}
	return 0;
}

void h2_conn_free(struct h2_conn *c)
{
	for (struct h2_stream *s = c->all_streams; s; s = s->all_next)
		if (s->id && !s->gone)
			h2c_stream_done(c, s, H2_CANCEL);
	h2_streams_free(c);
	hpack_decoder_free(&c->hpack);
	free(c->frame);
	free(c->hb);
	free(c->out);
	c->frame = c->hb = c->out = NULL;
}
