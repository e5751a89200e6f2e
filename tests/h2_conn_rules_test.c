// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One HTTP/2 connection (gateway/h2_conn.h) held to the rules an attacker
 * tests: resets the server is made to make count like the client's own
 * (MadeYouReset), calls held after their stream ended count as open, and
 * malformed requests (RFC 9113 8.2, 8.3: field names and values, pseudo-
 * headers, connection-specific fields, self-dependency, frames before the
 * client's SETTINGS) are refused. Fixture: h2_conn_fixture.h.
 */
#define _GNU_SOURCE
#include "h2_conn_fixture.h"

/* ---- server-made resets (MadeYouReset), held calls ------------------------------------ */

/* A WINDOW_UPDATE of 0 on each stream: the server resets it, and that counts as a reset. */
TEST_F(conn, refuse__resets_the_server_is_made_to_make_get_goaway_enhance_your_calm)
{
	uint8_t zero[4] = { 0 };
	struct frame f;
	uint32_t id = 1;
	int i, r = 0;

	put_preface(&self->w, 65535);
	ASSERT_EQ(0, feed(self));
	for (i = 0; i < 2 * H2_CALM_RESETS + 10 && !r; i++, id += 2) {
		put_request_headers(&self->w, id, false);
		put_frame(&self->w, 8, 0, id, zero, 4);
		r = feed(self);
		if (i == 0) {
			ASSERT_TRUE(out_find(&self->c, 3, 0, &f));
			EXPECT_EQ(1, get_u32(f.payload)); /* RST_STREAM PROTOCOL_ERROR */
		}
		if (!r)
			drain(&self->c);
	}
	EXPECT_EQ(-EPROTO, r);
	EXPECT_EQ(11, goaway_error(&self->c));
	EXPECT_EQ(H2_CALM_RESETS + (int)lim.max_streams + 1, i);
}

/* DATA after END_STREAM: the stream reset STREAM_CLOSED, counted the same. */
TEST_F(conn, refuse__data_after_end_stream_resets_count_too)
{
	uint8_t x = 'x';
	uint32_t id = 1;
	int i, r = 0;

	put_preface(&self->w, 65535);
	ASSERT_EQ(0, feed(self));
	for (i = 0; i < 2 * H2_CALM_RESETS + 10 && !r; i++, id += 2) {
		put_request_headers(&self->w, id, true);
		put_frame(&self->w, 0, 0x1, id, &x, 1);
		r = feed(self);
		drain(&self->c);
	}
	EXPECT_EQ(-EPROTO, r);
	EXPECT_EQ(5, self->seen.close_error); /* STREAM_CLOSED */
	EXPECT_EQ(H2_CALM_RESETS + (int)lim.max_streams + 1, i);
}

/*
 * Calls whose stream the client reset while their user works on them stay
 * held (h2_conn_hold): a fifth stream is refused until one is let go.
 */
TEST_F(conn, refuse__calls_held_after_their_stream_ended_count_as_open)
{
	uint8_t cancel[4] = { 0, 0, 0, 8 };
	struct frame f;

	put_preface(&self->w, 65535);
	for (uint32_t id = 1; id <= 7; id += 2) {
		put_request_headers(&self->w, id, true);
		put_frame(&self->w, 3, 0, id, cancel, 4);
	}
	ASSERT_EQ(0, feed(self));
	EXPECT_EQ(4, self->seen.closed);
	for (int i = 0; i < 4; i++)
		h2_conn_hold(&self->c, true); /* what the gateway does for a call being handled */
	drain(&self->c);
	put_request_headers(&self->w, 9, true);
	ASSERT_EQ(0, feed(self));
	EXPECT_EQ(4, self->seen.opened);
	ASSERT_TRUE(out_find(&self->c, 3, 0, &f));
	EXPECT_EQ(9, f.stream);
	EXPECT_EQ(7, get_u32(f.payload)); /* REFUSED_STREAM */
	h2_conn_hold(&self->c, false);
	drain(&self->c);
	put_request_headers(&self->w, 11, true);
	ASSERT_EQ(0, feed(self));
	EXPECT_EQ(5, self->seen.opened);
	EXPECT_FALSE(out_find(&self->c, 3, 0, &f));
}

/* ---- RFC 9113 8.2, 8.3: malformed requests -------------------------------------------- */

struct field {
	const char *name, *value;
	size_t nl, vl; /* 0: strlen */
};

/* clang-format off */
#define F(n, v) { n, v, 0, 0 }
/* clang-format on */
#define REQ F(":method", "POST"), F(":scheme", "http"), F(":path", "/p"), F(":authority", "a")

static const struct {
	const char *why;
	struct field f[10];
} malformed[] = {
	{ "uppercase name", { REQ, F("X-Up", "a") } },
	{ "CR in a value", { REQ, F("x-a", "a\rb") } },
	{ "LF in a value", { REQ, F("x-a", "a\nb: c") } },
	{ "NUL in a value", { REQ, { "x-a", "a\0b", 3, 3 } } },
	{ "NUL in a name", { REQ, { "x\0a", "a", 3, 1 } } },
	{ "space in a name", { REQ, F("x a", "a") } },
	{ "a value's leading space", { REQ, F("x-a", " a") } },
	{ "pseudo-header after a regular one",
	  { F(":method", "POST"), F(":scheme", "http"), F("content-type", "application/grpc"),
	    F(":path", "/p") } },
	{ "unknown pseudo-header", { REQ, F(":protocol", "websocket") } },
	{ "two :path", { REQ, F(":path", "/x") } },
	{ "an empty :path", { F(":method", "POST"), F(":scheme", "http"), F(":path", "") } },
	{ "connection", { REQ, F("connection", "keep-alive") } },
	{ "keep-alive", { REQ, F("keep-alive", "timeout=5") } },
	{ "proxy-connection", { REQ, F("proxy-connection", "close") } },
	{ "transfer-encoding", { REQ, F("transfer-encoding", "chunked") } },
	{ "upgrade", { REQ, F("upgrade", "h2c") } },
	{ "te other than trailers", { REQ, F("te", "gzip") } },
	{ "no :method", { F(":scheme", "http"), F(":path", "/p") } },
	{ "no :scheme", { F(":method", "POST"), F(":path", "/p") } },
	{ "no :path", { F(":method", "POST"), F(":scheme", "http") } },
};

static void put_fields(struct wire *w, uint32_t id, uint8_t flags, const struct field *f)
{
	uint8_t block[1024];
	size_t n = 0;

	for (; f->name; f++)
		n += hpack_literal_n(block + n, f->name, f->nl ? f->nl : strlen(f->name), f->value,
				     f->vl ? f->vl : strlen(f->value));
	put_frame(w, 1, flags, id, block, n);
}

TEST_F(conn, malformed__each_request_is_reset_protocol_error_its_user_told_nothing)
{
	for (size_t i = 0; i < sizeof(malformed) / sizeof(*malformed); i++) {
		struct frame f;

		h2_conn_free(&self->c);
		memset(&self->seen, 0, sizeof(self->seen));
		ASSERT_EQ(0, h2_conn_init(&self->c, &lim, &cbs, &self->seen));
		put_preface(&self->w, 65535);
		put_fields(&self->w, 1, 0x5, malformed[i].f);
		drain(&self->c);
		ASSERT_EQ(0, feed(self)) TH_LOG("%s", malformed[i].why);
		ASSERT_TRUE(out_find(&self->c, 3, 0, &f)) TH_LOG("%s", malformed[i].why);
		EXPECT_EQ(1, f.stream);
		EXPECT_EQ(1, get_u32(f.payload)) TH_LOG("%s", malformed[i].why);
		EXPECT_EQ(0, self->seen.headers) TH_LOG("%s", malformed[i].why);
		EXPECT_EQ(0, self->seen.ended) TH_LOG("%s", malformed[i].why);
		EXPECT_EQ(1, self->seen.closed) TH_LOG("%s", malformed[i].why);
		EXPECT_EQ(-1, goaway_error(&self->c)) TH_LOG("%s", malformed[i].why);
	}
}

TEST_F(conn, malformed__a_well_formed_request_with_te_trailers_is_taken)
{
	const struct field ok[] = { REQ,
				    F("content-type", "application/grpc"),
				    F("te", "trailers"),
				    F("x-b", "a b"),
				    { 0 } };
	struct frame f;

	put_preface(&self->w, 65535);
	put_fields(&self->w, 1, 0x5, ok);
	drain(&self->c);
	ASSERT_EQ(0, feed(self));
	EXPECT_EQ(1, self->seen.headers);
	EXPECT_EQ(1, self->seen.ended);
	EXPECT_FALSE(out_find(&self->c, 3, 0, &f));
}

TEST_F(conn, malformed__a_pseudo_header_in_trailers_resets_the_stream)
{
	const struct field trl[] = { F(":path", "/x"), { 0 } };
	struct frame f;

	put_preface(&self->w, 65535);
	put_request_headers(&self->w, 1, false);
	put_fields(&self->w, 1, 0x5, trl);
	drain(&self->c);
	ASSERT_EQ(0, feed(self));
	ASSERT_TRUE(out_find(&self->c, 3, 0, &f));
	EXPECT_EQ(1, get_u32(f.payload));
	EXPECT_EQ(0, self->seen.ended);
}

TEST_F(conn, malformed__a_stream_depending_on_itself)
{
	uint8_t block[600], prio[5] = { 0, 0, 0, 1, 16 };
	size_t n;
	struct frame f;

	/* HEADERS with a priority on itself: the stream reset PROTOCOL_ERROR */
	put_preface(&self->w, 65535);
	memcpy(block, prio, 5);
	n = 5 + request_block(block + 5, "/p");
	put_frame(&self->w, 1, 0x5 | 0x20, 1, block, n);
	drain(&self->c);
	ASSERT_EQ(0, feed(self));
	ASSERT_TRUE(out_find(&self->c, 3, 0, &f));
	EXPECT_EQ(1, f.stream);
	EXPECT_EQ(1, get_u32(f.payload));
	EXPECT_EQ(0, self->seen.headers);
	/* PRIORITY of an open stream on itself: reset too */
	put_request_headers(&self->w, 3, false);
	prio[3] = 3;
	put_frame(&self->w, 2, 0, 3, prio, 5);
	drain(&self->c);
	ASSERT_EQ(0, feed(self));
	ASSERT_TRUE(out_find(&self->c, 3, 0, &f));
	EXPECT_EQ(3, f.stream);
	EXPECT_EQ(1, get_u32(f.payload));
	/* of an idle stream (no RST_STREAM for one): the connection's PROTOCOL_ERROR */
	prio[3] = 9;
	put_frame(&self->w, 2, 0, 9, prio, 5);
	EXPECT_EQ(-EPROTO, feed(self));
	EXPECT_EQ(1, goaway_error(&self->c));
}

TEST_F(conn, malformed__frames_before_the_clients_settings_are_a_protocol_error)
{
	memcpy(self->w.b, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
	self->w.n = 24;
	put_request_headers(&self->w, 1, true);
	EXPECT_EQ(-EPROTO, feed(self));
	EXPECT_EQ(1, goaway_error(&self->c));
	EXPECT_EQ(0, self->seen.opened);
}

TEST_HARNESS_MAIN
