// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One HTTP/2 connection's state (gateway/h2_conn.h) fed bytes, without a
 * socket: the preface and the settings exchange, a request in a HEADERS
 * with CONTINUATIONs and several DATA frames (padded too, and byte by
 * byte), flow control both ways, and each refusal: rapid reset, a
 * CONTINUATION flood, PING and empty-DATA floods, a window overflow, DATA
 * past the window, too many streams, PUSH_PROMISE, a bad preface. Frames
 * are written here by hand (RFC 9113), header blocks as HPACK literals
 * without Huffman (RFC 7541 6.2.2), independently of h2_frame.c and hpack.c.
 */
#define _GNU_SOURCE
#include "h2_conn_fixture.h"

/* ---- the tests ------------------------------------------------------------------------ */

TEST_F(conn, settings__ours_first_the_clients_acknowledged)
{
	struct frame f;
	bool saw_streams = false, saw_window = false;

	ASSERT_TRUE(out_find(&self->c, -1, 0, &f));
	EXPECT_EQ(4, f.type); /* SETTINGS first */
	EXPECT_EQ(0, f.flags);
	for (uint32_t i = 0; i + 6 <= f.len; i += 6) {
		uint16_t id = (uint16_t)(f.payload[i] << 8 | f.payload[i + 1]);
		uint32_t v = get_u32(f.payload + i + 2);

		saw_streams |= id == 3 && v == lim.max_streams;
		saw_window |= id == 4 && v == lim.stream_window;
	}
	EXPECT_TRUE(saw_streams);
	EXPECT_TRUE(saw_window);
	/* the connection's window raised to conn_window */
	ASSERT_TRUE(out_find(&self->c, 8, 0, &f));
	EXPECT_EQ(0, f.stream);
	EXPECT_EQ(lim.conn_window - 65535, get_u32(f.payload));
	drain(&self->c);
	put_preface(&self->w, 1 << 20);
	ASSERT_EQ(0, feed(self));
	ASSERT_TRUE(out_find(&self->c, 4, 0, &f));
	EXPECT_EQ(1, f.flags); /* ACK */
	EXPECT_EQ(0, f.len);
	EXPECT_EQ(-1, goaway_error(&self->c));
}

TEST_F(conn, preface__anything_else_is_a_protocol_error)
{
	memcpy(self->w.b, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
	self->w.n = 27;
	EXPECT_EQ(-EPROTO, feed(self));
	EXPECT_EQ(1, goaway_error(&self->c));
	EXPECT_FALSE(h2_conn_want_read(&self->c));
}

/* A request: HEADERS + 2 CONTINUATIONs, DATA in three frames (one padded), END_STREAM. */
static void put_split_request(struct wire *w, const uint8_t *body, size_t len)
{
	uint8_t block[512], padded[4096];
	size_t n = request_block(block, "/inference.GRPCInferenceService/ModelInfer");
	size_t a = n / 3, b = 2 * n / 3, third = len / 3;

	put_frame(w, 1, 0, 1, block, a);
	put_frame(w, 9, 0, 1, block + a, b - a);
	put_frame(w, 9, 0x4, 1, block + b, n - b);
	put_frame(w, 0, 0, 1, body, third);
	padded[0] = 7; /* 7 bytes of padding */
	memcpy(padded + 1, body + third, third);
	memset(padded + 1 + third, 0, 7);
	put_frame(w, 0, 0x8, 1, padded, 1 + third + 7);
	put_frame(w, 0, 0x1, 1, body + 2 * third, len - 2 * third);
}

TEST_F(conn, request__headers_continuations_and_data_frames_read_whole)
{
	uint8_t body[3000];

	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(i * 7 + 3);
	put_preface(&self->w, 65535);
	put_split_request(&self->w, body, sizeof(body));
	ASSERT_EQ(0, feed(self));
	EXPECT_EQ(1, self->seen.opened);
	EXPECT_EQ(1, self->seen.headers);
	EXPECT_EQ(0, self->seen.headers_result);
	EXPECT_STREQ("/inference.GRPCInferenceService/ModelInfer", self->seen.path);
	ASSERT_EQ(sizeof(body), self->seen.data_len);
	EXPECT_EQ(0, memcmp(body, self->seen.data, sizeof(body)));
	EXPECT_EQ(1, self->seen.ended);
	EXPECT_EQ(0, self->seen.closed);
	EXPECT_EQ(-1, goaway_error(&self->c));
}

TEST_F(conn, request__fed_one_byte_at_a_time_reads_the_same)
{
	uint8_t body[3000];

	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(i * 13 + 1);
	put_preface(&self->w, 65535);
	put_split_request(&self->w, body, sizeof(body));
	for (size_t i = 0; i < self->w.n; i++)
		ASSERT_EQ(0, h2_conn_feed(&self->c, self->w.b + i, 1, 1));
	ASSERT_EQ(sizeof(body), self->seen.data_len);
	EXPECT_EQ(0, memcmp(body, self->seen.data, sizeof(body)));
	EXPECT_EQ(1, self->seen.ended);
	EXPECT_STREQ("/inference.GRPCInferenceService/ModelInfer", self->seen.path);
}

TEST_F(conn, request__data_read_by_the_caller_counts_as_fed)
{
	static uint8_t body[5000];
	void *st = NULL;
	size_t n;

	put_preface(&self->w, 65535);
	put_request_headers(&self->w, 1, false);
	put_frame(&self->w, 0, 0x1, 1, body, sizeof(body));
	/* everything up to the DATA frame's content */
	ASSERT_EQ(0, h2_conn_feed(&self->c, self->w.b, self->w.n - sizeof(body), 1));
	n = h2_conn_data_next(&self->c, &st, SIZE_MAX);
	EXPECT_EQ(sizeof(body), n);
	EXPECT_EQ(&ids[1], st);
	ASSERT_EQ(0, h2_conn_data_placed(&self->c, 3000, 1));
	EXPECT_EQ(2000, h2_conn_data_next(&self->c, &st, SIZE_MAX));
	ASSERT_EQ(0, h2_conn_data_placed(&self->c, 2000, 1));
	EXPECT_EQ(0, self->seen.data_len); /* placed, not handed over */
	EXPECT_EQ(1, self->seen.ended);
	EXPECT_EQ(0, h2_conn_data_next(&self->c, &st, SIZE_MAX));
}

TEST_F(conn, flow__our_window_updates_follow_what_was_taken)
{
	static uint8_t body[600000];
	struct frame f;
	uint64_t stream_inc = 0, conn_inc = 0;

	put_preface(&self->w, 65535);
	put_request_headers(&self->w, 1, false);
	for (size_t at = 0; at < sizeof(body); at += 100000)
		put_frame(&self->w, 0, 0, 1, body + at, 100000);
	drain(&self->c);
	ASSERT_EQ(0, feed(self));
	for (int i = 0; out_find(&self->c, 8, i, &f); i++)
		*(f.stream ? &stream_inc : &conn_inc) += get_u32(f.payload);
	/* over half the stream's 1 MiB taken: given back; not yet half the connection's 4 MiB */
	EXPECT_EQ(sizeof(body), stream_inc);
	EXPECT_EQ(0, conn_inc);
	drain(&self->c);
	for (size_t at = 0; at < sizeof(body); at += 100000)
		put_frame(&self->w, 0, 0, 1, body + at, 100000);
	ASSERT_EQ(0, feed(self));
	for (int i = 0; out_find(&self->c, 8, i, &f); i++)
		*(f.stream ? &stream_inc : &conn_inc) += get_u32(f.payload);
	EXPECT_EQ(2 * sizeof(body), stream_inc);
	EXPECT_EQ(0, conn_inc);
	EXPECT_EQ(-1, goaway_error(&self->c));
}

TEST_F(conn, flow__data_past_the_streams_window_resets_it)
{
	static uint8_t body[600000];

	put_preface(&self->w, 65535);
	put_request_headers(&self->w, 1, false);
	ASSERT_EQ(0, feed(self));
	/* 1.2 MB in one flight, past the stream's 1 MiB window (our WINDOW_UPDATE held back) */
	self->c.lim.stream_window = 4u << 20;
	put_frame(&self->w, 0, 0, 1, body, sizeof(body));
	put_frame(&self->w, 0, 0, 1, body, sizeof(body));
	ASSERT_EQ(0, feed(self));
	EXPECT_EQ(1, self->seen.closed);
	EXPECT_EQ(3, self->seen.close_error); /* FLOW_CONTROL_ERROR */
	EXPECT_EQ(sizeof(body), self->seen.data_len);
}

TEST_F(conn, flow__our_answer_waits_for_the_clients_window)
{
	uint8_t *body = malloc(100), hdr[1] = { 0x88 }, trl[3] = { 0x40, 0, 0 };
	uint8_t wu[4];
	struct frame f;

	memset(body, 0xab, 100);
	put_preface(&self->w, 10); /* the client's streams: 10 bytes */
	put_request_headers(&self->w, 1, true);
	ASSERT_EQ(0, feed(self));
	drain(&self->c);
	ASSERT_EQ(0, h2_conn_respond(&self->c, 1, hdr, 1, body, 100, trl, 3));
	ASSERT_TRUE(out_find(&self->c, 0, 0, &f));
	EXPECT_EQ(10, f.len);
	EXPECT_FALSE(out_find(&self->c, 0, 1, &f));
	EXPECT_FALSE(out_find(&self->c, 1, 1, &f)); /* no trailers yet */
	EXPECT_EQ(0, self->seen.closed);
	drain(&self->c);
	put_u32(wu, 90);
	put_frame(&self->w, 8, 0, 1, wu, 4);
	ASSERT_EQ(0, feed(self));
	ASSERT_TRUE(out_find(&self->c, 0, 0, &f));
	EXPECT_EQ(90, f.len);
	ASSERT_TRUE(out_find(&self->c, 1, 0, &f));
	EXPECT_EQ(0x5, f.flags); /* END_HEADERS | END_STREAM */
	EXPECT_EQ(1, self->seen.closed);
	EXPECT_EQ(0, self->seen.close_error);
}

TEST_F(conn, flow__a_window_pushed_past_2_31_is_an_error)
{
	uint8_t wu[4];

	put_preface(&self->w, 65535);
	put_u32(wu, 0x7fffffff);
	put_frame(&self->w, 8, 0, 0, wu, 4);
	EXPECT_EQ(-EPROTO, feed(self));
	EXPECT_EQ(3, goaway_error(&self->c));
}

TEST(flow__data_past_the_connections_window_is_an_error)
{
	static struct wire w;
	static uint8_t body[70000];
	struct h2_conn_limits small = lim;
	struct seen *seen = calloc(1, sizeof(*seen));
	struct h2_conn c;
	struct frame f;

	small.conn_window = 65535; /* never raised */
	ASSERT_EQ(0, h2_conn_init(&c, &small, &cbs, seen));
	put_preface(&w, 65535);
	put_request_headers(&w, 1, false);
	put_frame(&w, 0, 0, 1, body, sizeof(body));
	EXPECT_EQ(-EPROTO, h2_conn_feed(&c, w.b, w.n, 1));
	ASSERT_TRUE(out_find(&c, 7, 0, &f));
	EXPECT_EQ(3, get_u32(f.payload + 4));
	EXPECT_EQ(0, seen->data_len);
	h2_conn_free(&c);
	EXPECT_EQ(1, seen->closed);
	free(seen);
}

TEST_F(conn, refuse__streams_past_max_streams_are_refused)
{
	struct frame f;

	put_preface(&self->w, 65535);
	for (uint32_t id = 1; id <= 9; id += 2)
		put_request_headers(&self->w, id, false);
	drain(&self->c);
	ASSERT_EQ(0, feed(self));
	EXPECT_EQ(4, self->seen.opened);
	ASSERT_TRUE(out_find(&self->c, 3, 0, &f));
	EXPECT_EQ(9, f.stream);
	EXPECT_EQ(7, get_u32(f.payload)); /* REFUSED_STREAM */
}

TEST_F(conn, refuse__rapid_reset_gets_goaway_enhance_your_calm)
{
	uint8_t cancel[4] = { 0, 0, 0, 8 };
	int r = 0;
	uint32_t id = 1;

	put_preface(&self->w, 65535);
	ASSERT_EQ(0, feed(self));
	/* opened and reset at once, in one second */
	for (int i = 0; i < H2_CALM_RESETS + 10 && !r; i++, id += 2) {
		put_request_headers(&self->w, id, false);
		put_frame(&self->w, 3, 0, id, cancel, 4);
		r = feed(self);
	}
	EXPECT_EQ(-EPROTO, r);
	EXPECT_EQ(11, goaway_error(&self->c));
	EXPECT_LE(self->seen.opened, H2_CALM_RESETS + (int)lim.max_streams + 1);
	EXPECT_EQ(self->seen.opened, self->seen.closed);
}

TEST_F(conn, refuse__resets_spread_over_seconds_are_fine)
{
	uint8_t cancel[4] = { 0, 0, 0, 8 };
	uint32_t id = 1;

	put_preface(&self->w, 65535);
	ASSERT_EQ(0, feed(self));
	for (int i = 0; i < 3 * H2_CALM_RESETS; i++, id += 2) {
		put_request_headers(&self->w, id, false);
		put_frame(&self->w, 3, 0, id, cancel, 4);
		ASSERT_EQ(0, h2_conn_feed(&self->c, self->w.b, self->w.n,
					  (uint64_t)(i / 100) * 1000000000ull));
		self->w.n = 0;
		drain(&self->c);
	}
	EXPECT_EQ(-1, goaway_error(&self->c));
}

/* However slowly they come: past 4 x (answered + the bound), GOAWAY. */
TEST_F(conn, refuse__resets_without_answers_get_goaway_at_any_pace)
{
	uint8_t cancel[4] = { 0, 0, 0, 8 };
	uint32_t id = 1;
	int i, r = 0;

	put_preface(&self->w, 65535);
	ASSERT_EQ(0, feed(self));
	for (i = 0; i < 2000 && !r; i++, id += 2) {
		put_request_headers(&self->w, id, false);
		put_frame(&self->w, 3, 0, id, cancel, 4);
		r = h2_conn_feed(&self->c, self->w.b, self->w.n, (uint64_t)i * 1000000000ull);
		self->w.n = 0;
	}
	EXPECT_EQ(-EPROTO, r);
	EXPECT_EQ(4 * (H2_CALM_RESETS + (int)lim.max_streams) + 1, i);
	EXPECT_EQ(11, goaway_error(&self->c));
}

/* The server's own cancels (the reaper's, h2_conn_cancel) are not the client's resets. */
TEST_F(conn, refuse__the_servers_own_cancels_do_not_count)
{
	uint32_t id = 1;
	int i;

	put_preface(&self->w, 65535);
	ASSERT_EQ(0, feed(self));
	for (i = 0; i < 2000; i++, id += 2) {
		put_request_headers(&self->w, id, false);
		ASSERT_EQ(0, h2_conn_feed(&self->c, self->w.b, self->w.n,
					  (uint64_t)i * 1000000000ull));
		self->w.n = 0;
		ASSERT_EQ(0, h2_conn_cancel(&self->c, id));
		drain(&self->c);
	}
	EXPECT_EQ(-1, goaway_error(&self->c));
	EXPECT_EQ(2000, self->seen.closed);
}

TEST_F(conn, refuse__a_continuation_flood_gets_goaway)
{
	uint8_t junk[1000];
	int r = 0;

	memset(junk, 0x40, sizeof(junk));
	put_preface(&self->w, 65535);
	put_frame(&self->w, 1, 0, 1, junk, 100);
	ASSERT_EQ(0, feed(self));
	for (int i = 0; i < 100 && !r; i++) {
		put_frame(&self->w, 9, 0, 1, junk, sizeof(junk));
		r = feed(self);
	}
	EXPECT_EQ(-EPROTO, r);
	EXPECT_EQ(11, goaway_error(&self->c));
	EXPECT_EQ(0, self->seen.opened);
}

TEST_F(conn, refuse__a_ping_flood_gets_goaway_pings_answered_before)
{
	uint8_t opaque[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct frame f;
	int r = 0, i;

	put_preface(&self->w, 65535);
	put_frame(&self->w, 6, 0, 0, opaque, 8);
	ASSERT_EQ(0, feed(self));
	ASSERT_TRUE(out_find(&self->c, 6, 0, &f));
	EXPECT_EQ(1, f.flags);
	EXPECT_EQ(0, memcmp(opaque, f.payload, 8));
	for (i = 0; i < 2 * H2_CALM_FRAMES && !r; i++) {
		put_frame(&self->w, 6, 0, 0, opaque, 8);
		r = feed(self);
		drain(&self->c);
	}
	EXPECT_EQ(-EPROTO, r);
	EXPECT_GE(i, H2_CALM_FRAMES - 2);
}

TEST_F(conn, refuse__an_empty_data_flood_gets_goaway)
{
	int r = 0;

	put_preface(&self->w, 65535);
	put_request_headers(&self->w, 1, false);
	ASSERT_EQ(0, feed(self));
	for (int i = 0; i < 2 * H2_CALM_FRAMES && !r; i++) {
		put_frame(&self->w, 0, 0, 1, NULL, 0);
		r = feed(self);
	}
	EXPECT_EQ(-EPROTO, r);
	EXPECT_EQ(11, goaway_error(&self->c));
}

TEST_F(conn, refuse__push_promise_and_data_on_stream_0_are_protocol_errors)
{
	uint8_t p[4] = { 0, 0, 0, 2 };

	put_preface(&self->w, 65535);
	put_frame(&self->w, 5, 0x4, 1, p, 4);
	EXPECT_EQ(-EPROTO, feed(self));
	EXPECT_EQ(1, goaway_error(&self->c));
	h2_conn_free(&self->c);
	ASSERT_EQ(0, h2_conn_init(&self->c, &lim, &cbs, &self->seen));
	put_preface(&self->w, 65535);
	put_frame(&self->w, 0, 0, 0, p, 4);
	EXPECT_EQ(-EPROTO, feed(self));
	EXPECT_EQ(1, goaway_error(&self->c));
}

TEST_F(conn, refuse__interleaved_header_blocks_are_a_protocol_error)
{
	uint8_t block[512];
	size_t n = request_block(block, "/x");

	put_preface(&self->w, 65535);
	put_frame(&self->w, 1, 0, 1, block, n / 2);
	put_request_headers(&self->w, 3, false);
	EXPECT_EQ(-EPROTO, feed(self));
	EXPECT_EQ(1, goaway_error(&self->c));
}

/* Answers not taken from the output: past max_out, no more is read. */
TEST_F(conn, output__not_read_from_while_its_answers_wait)
{
	uint8_t hdr[1] = { 0x88 };
	uint32_t id = 1;
	int answered = 0;
	uint8_t wu[4];

	/* windows wide open: the answers go to the output, not wait for WINDOW_UPDATE */
	put_preface(&self->w, 0x7fffffff);
	put_u32(wu, 0x7fffffff - 65535);
	put_frame(&self->w, 8, 0, 0, wu, 4);
	ASSERT_EQ(0, feed(self));
	while (h2_conn_want_read(&self->c) && answered < 1000) {
		put_request_headers(&self->w, id, true);
		ASSERT_EQ(0, feed(self));
		ASSERT_EQ(0,
			  h2_conn_respond(&self->c, id, hdr, 1, calloc(1, 16384), 16384, NULL, 0));
		id += 2;
		answered++;
	}
	EXPECT_FALSE(h2_conn_want_read(&self->c));
	EXPECT_LE(answered, (int)(lim.max_out / 16384) + 2);
	drain(&self->c);
	EXPECT_TRUE(h2_conn_want_read(&self->c));
}

/*
 * Past max_out the output does not grow with answers either: with the
 * client's windows wide open, a second answer's DATA waits while the first
 * is unsent (main appended it), and goes out once the output drains.
 */
TEST(output__answers_wait_while_it_is_over_max_out)
{
	static struct wire w;
	struct h2_conn_limits small = lim;
	struct seen *seen = calloc(1, sizeof(*seen));
	uint8_t hdr[1] = { 0x88 }, wu[4];
	struct h2_conn c;
	struct frame f;

	small.max_out = 4096;
	ASSERT_EQ(0, h2_conn_init(&c, &small, &cbs, seen));
	put_preface(&w, 0x7fffffff);
	put_u32(wu, 0x7fffffff - 65535);
	put_frame(&w, 8, 0, 0, wu, 4);
	put_request_headers(&w, 1, true);
	put_request_headers(&w, 3, true);
	ASSERT_EQ(0, h2_conn_feed(&c, w.b, w.n, 1));
	drain(&c);
	ASSERT_EQ(0, h2_conn_respond(&c, 1, hdr, 1, calloc(1, 8192), 8192, NULL, 0));
	EXPECT_EQ(1, seen->closed);
	ASSERT_EQ(0, h2_conn_respond(&c, 3, hdr, 1, calloc(1, 8192), 8192, NULL, 0));
	EXPECT_EQ(1, seen->closed);
	ASSERT_TRUE(out_find(&c, 0, 0, &f));
	EXPECT_EQ(1, f.stream);
	EXPECT_FALSE(out_find(&c, 0, 1, &f));
	drain(&c);
	ASSERT_TRUE(out_find(&c, 0, 0, &f));
	EXPECT_EQ(3, f.stream);
	EXPECT_EQ(8192, f.len);
	EXPECT_EQ(2, seen->closed);
	h2_conn_free(&c);
	free(seen);
}

TEST_F(conn, goaway__streams_after_ours_are_refused_earlier_ones_answered)
{
	uint8_t hdr[1] = { 0x88 };
	struct frame f;

	put_preface(&self->w, 65535);
	put_request_headers(&self->w, 1, true);
	ASSERT_EQ(0, feed(self));
	h2_conn_goaway(&self->c, 0);
	put_request_headers(&self->w, 3, true);
	drain(&self->c);
	ASSERT_EQ(0, feed(self));
	EXPECT_EQ(1, self->seen.opened);
	ASSERT_TRUE(out_find(&self->c, 3, 0, &f));
	EXPECT_EQ(3, f.stream);
	EXPECT_EQ(0, h2_conn_respond(&self->c, 1, hdr, 1, NULL, 0, NULL, 0));
	EXPECT_EQ(1, self->seen.closed);
	EXPECT_TRUE(h2_conn_want_read(&self->c));
}

/* ---- streams by id -------------------------------------------------------------------- */

struct by_id {
	int data_to_wrong, data_calls, closed;
};

static void *id_open(void *arg, uint32_t id)
{
	(void)arg;
	return (void *)(uintptr_t)id;
}

static int id_field(void *arg, void *st, const char *n, size_t nl, const char *v, size_t vl)
{
	(void)arg, (void)st, (void)n, (void)nl, (void)v, (void)vl;
	return 0;
}

static void id_headers(void *arg, void *st, int result)
{
	(void)arg, (void)st, (void)result;
}

/* each DATA frame's one byte is its stream id's low byte */
static void id_data(void *arg, void *st, const uint8_t *p, size_t n)
{
	struct by_id *b = arg;

	b->data_calls++;
	b->data_to_wrong += n != 1 || p[0] != (uint8_t)(uintptr_t)st;
}

static void id_end(void *arg, void *st)
{
	(void)arg, (void)st;
}

static void id_close(void *arg, void *st, uint32_t error)
{
	(void)st, (void)error;
	((struct by_id *)arg)->closed++;
}

static const struct h2_conn_cb id_cbs = {
	id_open, id_field, id_headers, id_data, id_end, id_close
};

/*
 * 3,000 streams open at once (max_streams 65,536), a pseudo-random half reset,
 * then a DATA frame on each: every open one's reaches its own stream, the
 * reset ones' are dropped. And nothing is made per max_streams up front: a
 * connection allowed 65,536 streams costs what one allowed 4 does.
 */
TEST(streams__found_by_id_among_thousands_none_made_up_front)
{
	static struct wire w;
	struct h2_conn_limits big = lim;
	struct by_id b = { 0 };
	uint8_t cancel[4] = { 0, 0, 0, 8 };
	struct h2_conn c;
	struct mallinfo2 m0, m1;
	const int n = 3000;
	uint32_t x = 12345;
	int open = n;

	big.max_streams = 65536;
	m0 = mallinfo2();
	ASSERT_EQ(0, h2_conn_init(&c, &big, &id_cbs, &b));
	m1 = mallinfo2();
	/* what malloc hands out, from its arenas and mmap alike */
	EXPECT_LT(m1.uordblks + m1.hblkhd - m0.uordblks - m0.hblkhd, 256u << 10)
	TH_LOG("%zu bytes at init", m1.uordblks + m1.hblkhd - m0.uordblks - m0.hblkhd);
	w.n = 0;
	put_preface(&w, 65535);
	for (int i = 0; i < n; i++)
		put_request_headers(&w, 1 + 2 * (uint32_t)i, false);
	ASSERT_EQ(0, h2_conn_feed(&c, w.b, w.n, 1));
	EXPECT_EQ(n, (int)c.nr_streams);
	w.n = 0;
	for (int i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		if ((x >> 16) & 1) {
			open--;
			put_frame(&w, 3, 0, 1 + 2 * (uint32_t)i, cancel, 4);
		}
	}
	/* in one second: fewer resets than the budget (H2_CALM_RESETS + max_streams) */
	ASSERT_EQ(0, h2_conn_feed(&c, w.b, w.n, 2000000000ull));
	EXPECT_EQ(n - open, b.closed);
	EXPECT_EQ(open, (int)c.nr_streams);
	w.n = 0;
	for (int i = 0; i < n; i++) {
		uint8_t one = (uint8_t)(1 + 2 * i);

		put_frame(&w, 0, 0, 1 + 2 * (uint32_t)i, &one, 1);
		if (w.n > sizeof(w.b) - 64) {
			ASSERT_EQ(0, h2_conn_feed(&c, w.b, w.n, 3000000000ull));
			w.n = 0;
		}
	}
	ASSERT_EQ(0, h2_conn_feed(&c, w.b, w.n, 3000000000ull));
	EXPECT_EQ(open, b.data_calls);
	EXPECT_EQ(0, b.data_to_wrong);
	h2_conn_free(&c);
	EXPECT_EQ(n, b.closed);
}

/*
 * The stream table's salt is the kernel's randomness, not the heap's
 * addresses: a connection made again in the same struct (its buffers most
 * likely at the same addresses too) gets another salt each time, so a
 * client cannot learn it from one connection for the next (with the salt
 * of heap addresses, all 8 were the same).
 */
TEST(streams__each_connection_salts_its_table_afresh)
{
	struct h2_conn c;
	uint32_t salts[8];
	int same = 0;

	for (int i = 0; i < 8; i++) {
		ASSERT_EQ(0, h2_conn_init(&c, &lim, &id_cbs, NULL));
		salts[i] = c.table_salt;
		h2_conn_free(&c);
	}
	for (int i = 1; i < 8; i++)
		same += salts[i] == salts[0];
	EXPECT_GT(7, same);
}

TEST_HARNESS_MAIN
