// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An HTTP/2 connection's streams answered and ended (h2_conn_impl.h): an
 * answer's headers, DATA and trailers appended as the client's windows and
 * max_out let them, a stream over (its user told once), reset or
 * cancelled, and the resets and idle frames a client causes counted
 * against H2_CALM_RESETS and H2_CALM_FRAMES.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "h2_conn_impl.h"

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
void h2c_stream_done(struct h2_conn *c, struct h2_stream *s, uint32_t error)
{
	void *st = s->st;

	if (s->gone)
		return;
	h2_streams_release(c, s);
	stream_free_answer(s);
	c->cb->close(c->arg, st, error);
}

/* Counts a stream reset by the client or refused; false past the bound (GOAWAY sent). */
bool h2c_calm_count(struct h2_conn *c, bool reset)
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
		h2c_conn_error(c, H2_ENHANCE_YOUR_CALM);
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
void h2c_stream_reset(struct h2_conn *c, struct h2_stream *s, uint32_t error)
{
	h2c_out_small(c, h2_rst_stream_write, s->id, error);
	h2c_stream_done(c, s, error);
	h2c_calm_count(c, true);
}

/* As much of s's answer as the client's windows take; the stream over once it is all out. */
void h2c_stream_flush(struct h2_conn *c, struct h2_stream *s)
{
	if (!s->answering || s->gone)
		return;
	if (s->stage == 0) {
		bool end = !s->body_len && !s->trl_len;

		if (!h2c_out_frame(c, H2_HEADERS,
				   H2_FLAG_END_HEADERS | (end ? H2_FLAG_END_STREAM : 0), s->id,
				   s->hdr, s->hdr_len))
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
		if (!h2c_out_frame(c, H2_DATA, end ? H2_FLAG_END_STREAM : 0, s->id,
				   s->body + s->body_off, (size_t)n))
			return;
		s->body_off += (size_t)n;
		c->send_window -= n;
		s->send_window -= n;
	}
	if (s->stage == 1) {
		s->stage = 2;
		if (s->trl_len &&
		    !h2c_out_frame(c, H2_HEADERS, H2_FLAG_END_HEADERS | H2_FLAG_END_STREAM, s->id,
				   s->trl, s->trl_len))
			return;
		s->stage = 3;
	}
	/* RFC 9113 8.1: answered before the request was whole: the rest is not wanted */
	if (!s->remote_closed)
		h2c_out_small(c, h2_rst_stream_write, s->id, H2_NO_ERROR);
	s->local_closed = true;
	c->answered_total++;
	h2c_stream_done(c, s, H2_NO_ERROR);
}

void h2c_flush_all(struct h2_conn *c)
{
	for (struct h2_stream *s = c->all_streams; s && c->send_window > 0; s = s->all_next)
		if (s->id && !s->gone && s->answering)
			h2c_stream_flush(c, s);
}

void h2_conn_out_done(struct h2_conn *c, size_t n)
{
	bool was_full = c->out_len - c->out_off >= c->lim.max_out;

	c->out_off += n;
	if (c->out_off >= c->out_len)
		c->out_off = c->out_len = 0;
	if (was_full && c->out_len - c->out_off < c->lim.max_out && !c->dead)
		h2c_flush_all(c);
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
		h2c_stream_flush(c, s);
		if (!s->gone) /* out of memory midway */
			h2c_stream_reset(c, s, H2_INTERNAL_ERROR);
		return c->dead ? -ENOMEM : 0;
	}
	s->hdr = dup_bytes(hdr, hdr_len);
	s->trl = dup_bytes(trailers, trailers_len);
	s->hdr_len = hdr_len;
	s->trl_len = trailers_len;
	if (!s->hdr || !s->trl) {
		h2c_stream_reset(c, s, H2_INTERNAL_ERROR);
		return -ENOMEM;
	}
	h2c_stream_flush(c, s);
	return 0;
}

int h2_conn_cancel(struct h2_conn *c, uint32_t id)
{
	struct h2_stream *s = c->dead ? NULL : h2_streams_find(c, id);

	if (!s)
		return -ENOENT;
	/* the server's own choice, at most max_streams a read timeout: not the client's resets */
	h2c_out_small(c, h2_rst_stream_write, s->id, H2_CANCEL);
	h2c_stream_done(c, s, H2_CANCEL);
	return 0;
}
