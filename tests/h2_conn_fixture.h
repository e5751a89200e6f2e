/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the h2_conn tests share (h2_conn_test, h2_conn_rules_test): callbacks
 * that record what the connection told its user, frames and HPACK literals
 * written by hand (RFC 9113, RFC 7541 6.2.2, independently of h2_frame.c and
 * hpack.c), frames read back from its output, and the fixture.
 */
#ifndef COLOC_TESTS_H2_CONN_FIXTURE_H
#define COLOC_TESTS_H2_CONN_FIXTURE_H

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "h2_conn.h"

/* ---- what the connection told us ------------------------------------------------------ */

struct seen {
	int opened, closed, ended, headers, headers_result;
	uint32_t close_error, last_id;
	char path[128];
	uint8_t data[1 << 20];
	size_t data_len;
	bool refuse_open;
};

static int ids[64]; /* a stream's pointer is &ids[id % 64] */

static inline void *cb_open(void *arg, uint32_t id)
{
	struct seen *s = arg;

	if (s->refuse_open)
		return NULL;
	s->opened++;
	s->last_id = id;
	return &ids[id % 64];
}

static inline int cb_field(void *arg, void *st, const char *name, size_t name_len,
			   const char *value, size_t value_len)
{
	struct seen *s = arg;

	(void)st;
	if (name_len == 5 && !memcmp(name, ":path", 5) && value_len < sizeof(s->path)) {
		memcpy(s->path, value, value_len);
		s->path[value_len] = 0;
	}
	return 0;
}

static inline void cb_headers(void *arg, void *st, int result)
{
	struct seen *s = arg;

	(void)st;
	s->headers++;
	s->headers_result = result;
}

static inline void cb_data(void *arg, void *st, const uint8_t *p, size_t n)
{
	struct seen *s = arg;

	(void)st;
	if (s->data_len + n <= sizeof(s->data))
		memcpy(s->data + s->data_len, p, n);
	s->data_len += n;
}

static inline void cb_end(void *arg, void *st)
{
	(void)st;
	((struct seen *)arg)->ended++;
}

static inline void cb_close(void *arg, void *st, uint32_t error)
{
	struct seen *s = arg;

	(void)st;
	s->closed++;
	s->close_error = error;
}

static const struct h2_conn_cb cbs = { cb_open, cb_field, cb_headers, cb_data, cb_end, cb_close };

static const struct h2_conn_limits lim = {
	.max_streams = 4,
	.stream_window = 1 << 20,
	.conn_window = 4 << 20,
	.max_frame = 1 << 20,
	.max_header_list = 16384,
	.max_out = 1 << 20,
};

/* ---- frames written by hand ----------------------------------------------------------- */

struct wire {
	uint8_t b[1 << 21];
	size_t n;
};

static inline void put_frame(struct wire *w, uint8_t type, uint8_t flags, uint32_t stream,
			     const void *payload, size_t len)
{
	uint8_t *p = w->b + w->n;

	p[0] = (uint8_t)(len >> 16);
	p[1] = (uint8_t)(len >> 8);
	p[2] = (uint8_t)len;
	p[3] = type;
	p[4] = flags;
	p[5] = (uint8_t)(stream >> 24);
	p[6] = (uint8_t)(stream >> 16);
	p[7] = (uint8_t)(stream >> 8);
	p[8] = (uint8_t)stream;
	if (len)
		memcpy(p + 9, payload, len);
	w->n += 9 + len;
}

static inline void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* A literal field without indexing, new name, names and values of any bytes (under 127). */
static inline size_t hpack_literal_n(uint8_t *p, const char *name, size_t nl, const char *value,
				     size_t vl)
{
	size_t n = 0;

	p[n++] = 0x00;
	p[n++] = (uint8_t)nl;
	memcpy(p + n, name, nl);
	n += nl;
	p[n++] = (uint8_t)vl;
	memcpy(p + n, value, vl);
	return n + vl;
}

/* The same, names and values as strings. */
static inline size_t hpack_literal(uint8_t *p, const char *name, const char *value)
{
	return hpack_literal_n(p, name, strlen(name), value, strlen(value));
}

static inline size_t request_block(uint8_t *p, const char *path)
{
	size_t n = 0;

	n += hpack_literal(p + n, ":method", "POST");
	n += hpack_literal(p + n, ":scheme", "http");
	n += hpack_literal(p + n, ":path", path);
	n += hpack_literal(p + n, ":authority", "localhost");
	n += hpack_literal(p + n, "content-type", "application/grpc");
	n += hpack_literal(p + n, "te", "trailers");
	return n;
}

static inline void put_preface(struct wire *w, uint32_t initial_window)
{
	uint8_t set[6] = { 0, 4 };

	memcpy(w->b + w->n, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
	w->n += 24;
	put_u32(set + 2, initial_window);
	put_frame(w, 4, 0, 0, set, 6);
}

static inline void put_request_headers(struct wire *w, uint32_t id, bool end_stream)
{
	uint8_t block[512];
	size_t n = request_block(block, "/inference.GRPCInferenceService/ServerLive");

	put_frame(w, 1, 0x4 | (end_stream ? 0x1 : 0), id, block, n);
}

/* ---- frames read back ----------------------------------------------------------------- */

struct frame {
	uint32_t len, stream;
	uint8_t type, flags;
	const uint8_t *payload;
};

/* The i-th frame of type type in the output (-1 type: any), or false. */
static inline bool out_find(struct h2_conn *c, int type, int i, struct frame *f)
{
	const uint8_t *p;
	size_t n = h2_conn_out(c, &p), at = 0;

	while (at + 9 <= n) {
		f->len = (uint32_t)p[at] << 16 | (uint32_t)p[at + 1] << 8 | p[at + 2];
		f->type = p[at + 3];
		f->flags = p[at + 4];
		f->stream = ((uint32_t)p[at + 5] << 24 | (uint32_t)p[at + 6] << 16 |
			     (uint32_t)p[at + 7] << 8 | p[at + 8]) &
			    0x7fffffff;
		f->payload = p + at + 9;
		if (at + 9 + f->len > n)
			return false;
		at += 9 + f->len;
		if ((type < 0 || f->type == type) && i-- == 0)
			return true;
	}
	return false;
}

static inline uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The GOAWAY's error code in the output, or -1 when there is none. */
static inline int64_t goaway_error(struct h2_conn *c)
{
	struct frame f;

	return out_find(c, 7, 0, &f) ? (int64_t)get_u32(f.payload + 4) : -1;
}

static inline void drain(struct h2_conn *c)
{
	const uint8_t *p;

	h2_conn_out_done(c, h2_conn_out(c, &p));
}

FIXTURE(conn)
{
	struct h2_conn c;
	struct seen seen;
	struct wire w;
};

FIXTURE_SETUP(conn)
{
	memset(&self->seen, 0, sizeof(self->seen));
	self->w.n = 0;
	ASSERT_EQ(0, h2_conn_init(&self->c, &lim, &cbs, &self->seen));
}

FIXTURE_TEARDOWN(conn)
{
	h2_conn_free(&self->c);
}

static inline int feed(FIXTURE_DATA(conn) * self)
{
	int r = h2_conn_feed(&self->c, self->w.b, self->w.n, 1000000000ull);

	self->w.n = 0;
	return r;
}

#endif /* COLOC_TESTS_H2_CONN_FIXTURE_H */
