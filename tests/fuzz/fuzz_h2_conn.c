// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target: one HTTP/2 connection of the gateway's own gRPC server
 * (gateway/h2_conn.h) fed a client's bytes after the preface, in pieces
 * whose sizes the first byte's bits vary; a DATA frame's content is taken
 * now and then as the server takes a message's bytes, read straight into
 * place (h2_conn_data_next/placed), and every stream whose request ended
 * is answered (a header block, a body, trailers) so that flow control and
 * the answers' frames run too. Checked: no more streams open than
 * max_streams, each stream closed exactly once (h2_conn_free closes the
 * rest), a dead connection stays dead.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "h2_conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_STREAMS 8

struct fuzz_stream {
	uint32_t id;
	bool open, ended;
};

struct fuzz_conn {
	struct fuzz_stream s[1024];
	int nr, open;
};

static void fuzz_die(const char *why)
{
	fprintf(stderr, "fuzz_h2_conn: %s\n", why);
	abort();
}

static void *fc_open(void *arg, uint32_t id)
{
	struct fuzz_conn *f = arg;
	struct fuzz_stream *s;

	if (f->nr == 1024)
		return NULL;
	if (++f->open > FUZZ_STREAMS)
		fuzz_die("more streams open than max_streams");
	s = &f->s[f->nr++];
	s->id = id;
	s->open = true;
	return s;
}

static int fc_field(void *arg, void *st, const char *name, size_t name_len, const char *value,
		    size_t value_len)
{
	(void)arg, (void)name, (void)value;
	if (!((struct fuzz_stream *)st)->open || name_len + value_len > 16384)
		fuzz_die("a field for a closed stream, or over the list's bound");
	return 0;
}

static void fc_headers(void *arg, void *st, int result)
{
	(void)arg, (void)result;
	if (!((struct fuzz_stream *)st)->open)
		fuzz_die("headers for a closed stream");
}

static uint8_t fuzz_sink;

static void fc_data(void *arg, void *st, const uint8_t *p, size_t n)
{
	(void)arg;
	if (!((struct fuzz_stream *)st)->open)
		fuzz_die("data for a closed stream");
	for (size_t i = 0; i < n; i++) /* every byte readable */
		fuzz_sink ^= p[i];
}

static void fc_end(void *arg, void *st)
{
	struct fuzz_stream *s = st;

	(void)arg;
	if (!s->open || s->ended)
		fuzz_die("a stream ended twice or after its close");
	s->ended = true;
}

static void fc_close(void *arg, void *st, uint32_t error)
{
	struct fuzz_conn *f = arg;
	struct fuzz_stream *s = st;

	(void)error;
	if (!s->open)
		fuzz_die("a stream closed twice");
	s->open = false;
	f->open--;
}

static const struct h2_conn_cb fc_cb = { fc_open, fc_field, fc_headers, fc_data, fc_end, fc_close };

/* Answers each stream whose request ended and that is still open. */
static void fuzz_answer(struct h2_conn *c, struct fuzz_conn *f)
{
	static const uint8_t hdr[] = { 0x88 }, trl[] = { 0x40, 1, 'a', 1, '0' };

	for (int i = 0; i < f->nr; i++) {
		uint8_t *body;

		if (!f->s[i].open || !f->s[i].ended)
			continue;
		body = malloc(70000);
		if (!body)
			return;
		memset(body, 0x5a, 70000);
		f->s[i].ended = false; /* answered once */
		h2_conn_respond(c, f->s[i].id, hdr, sizeof(hdr), body, (size_t)(i * 997) % 70000,
				trl, sizeof(trl));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct h2_conn_limits lim = { .max_streams = FUZZ_STREAMS,
						   .stream_window = 65535 * 4,
						   .conn_window = 1 << 20,
						   .max_frame = 1 << 16,
						   .max_header_list = 16384,
						   .max_out = 1 << 20 };
	static struct fuzz_conn f;
	static uint8_t sink[1 << 16];
	struct h2_conn c;
	uint8_t mode = size ? data[0] : 0;
	uint64_t now = 0;
	bool dead = false;

	memset(&f, 0, sizeof(f));
	if (h2_conn_init(&c, &lim, &fc_cb, &f))
		return 0;
	if (h2_conn_feed(&c, (const uint8_t *)H2_PREFACE, 24, now))
		fuzz_die("the preface refused");
	data += !!size;
	size -= !!size;
	while (size && !dead) {
		size_t piece = mode & 1 ? 1 + (data[0] % 97) : size;
		void *st;
		size_t n = h2_conn_data_next(&c, &st, size);
		const uint8_t *out;

		piece = piece < size ? piece : size;
		if (n && mode & 2) { /* the server reads it into place */
			n = n < piece ? n : piece;
			memcpy(sink, data, n < sizeof(sink) ? n : sizeof(sink));
			dead = h2_conn_data_placed(&c, n, now) != 0;
			piece = n;
		} else {
			dead = h2_conn_feed(&c, data, piece, now) != 0;
		}
		data += piece;
		size -= piece;
		now += mode & 4 ? 10000000ull : 0;
		fuzz_answer(&c, &f);
		if (h2_conn_out(&c, &out) > lim.max_out + (1 << 20))
			fuzz_die("the output grew past its bound");
		if (mode & 8)
			h2_conn_out_done(&c, h2_conn_out(&c, &out));
	}
	if (dead && h2_conn_want_read(&c))
		fuzz_die("a dead connection wants more");
	h2_conn_free(&c);
	if (f.open)
		fuzz_die("streams left open after h2_conn_free");
	return 0;
}
