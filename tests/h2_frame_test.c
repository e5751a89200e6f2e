// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The HTTP/2 frame codec (gateway/h2_frame.c) on its own, against RFC 9113's
 * layouts worked out by hand: the frame header both ways, DATA and HEADERS
 * padding and priority taken off (and their errors), SETTINGS applied
 * (each bad value's error), and the control frames' bytes.
 */
#include <stdint.h>
#include <string.h>
#include "kselftest_harness.h"
#include "h2_frame.h"

TEST(h2_frame_header__round_trip_and_the_reserved_bit_cleared)
{
	static const uint8_t want[9] = { 0xab, 0xcd, 0xef, 0x01, 0x25, 0x00, 0x00, 0x01, 0x05 };
	uint8_t b[9];
	struct h2_frame_header h;

	ASSERT_EQ(9, h2_frame_header_write(b, 0xabcdef, H2_HEADERS, 0x25, 0x80000105));
	ASSERT_EQ(0, memcmp(b, want, 9));
	b[5] = 0x80; /* R set on the wire */
	h2_frame_header_read(b, &h);
	ASSERT_EQ(0xabcdef, h.length);
	ASSERT_EQ(H2_HEADERS, h.type);
	ASSERT_EQ(0x25, h.flags);
	ASSERT_EQ(0x105, h.stream);
	ASSERT_EQ(24, strlen(H2_PREFACE));
}

static int content_of(uint8_t type, uint8_t flags, const uint8_t *payload, uint32_t len,
		      const uint8_t **c, size_t *cl)
{
	struct h2_frame_header h = { .length = len, .type = type, .flags = flags, .stream = 1 };

	return h2_frame_content(&h, payload, c, cl);
}

TEST(h2_frame_content__padding_and_priority_taken_off)
{
	static const uint8_t data[] = { 3, 'h', 'i', 0, 0, 0 };
	static const uint8_t headers[] = { 2, 0x80, 0, 0, 3, 15, 'x', 'y', 0, 0 };
	static const uint8_t plain[] = { 'a', 'b', 'c', 'd', 'e', 'f' };
	const uint8_t *c;
	size_t cl;

	ASSERT_EQ(0, content_of(H2_DATA, H2_FLAG_PADDED, data, sizeof(data), &c, &cl));
	ASSERT_EQ(2, cl);
	ASSERT_EQ(0, memcmp(c, "hi", 2));
	ASSERT_EQ(0, content_of(H2_HEADERS, H2_FLAG_PADDED | H2_FLAG_PRIORITY, headers,
				sizeof(headers), &c, &cl));
	ASSERT_EQ(2, cl);
	ASSERT_EQ(0, memcmp(c, "xy", 2));
	ASSERT_EQ(0, content_of(H2_HEADERS, H2_FLAG_PRIORITY, headers + 1, 7, &c, &cl));
	ASSERT_EQ(2, cl);
	ASSERT_EQ(0, memcmp(c, "xy", 2));
	/* PRIORITY means nothing on DATA; no flags: all of it */
	ASSERT_EQ(0, content_of(H2_DATA, H2_FLAG_PRIORITY | H2_FLAG_END_STREAM, plain,
				sizeof(plain), &c, &cl));
	ASSERT_EQ(6, cl);
	ASSERT_TRUE(c == plain);
	ASSERT_EQ(0, content_of(H2_HEADERS, H2_FLAG_END_HEADERS, plain, 0, &c, &cl));
	ASSERT_EQ(0, cl);
	/* all padding: nothing left, still a frame */
	ASSERT_EQ(0, content_of(H2_DATA, H2_FLAG_PADDED, (const uint8_t[]){ 5, 0, 0, 0, 0, 0 }, 6,
				&c, &cl));
	ASSERT_EQ(0, cl);
}

TEST(h2_frame_content__padding_past_the_payload_and_short_frames_refused)
{
	const uint8_t *c;
	size_t cl;

	/* RFC 9113 6.1: padding as long as the payload or longer */
	ASSERT_EQ(H2_PROTOCOL_ERROR, content_of(H2_DATA, H2_FLAG_PADDED,
						(const uint8_t[]){ 6, 0, 0, 0, 0, 0 }, 6, &c, &cl));
	ASSERT_EQ(H2_PROTOCOL_ERROR,
		  content_of(H2_DATA, H2_FLAG_PADDED, (const uint8_t[]){ 1 }, 1, &c, &cl));
	/* 6.2: padding past what the priority fields leave */
	ASSERT_EQ(H2_PROTOCOL_ERROR,
		  content_of(H2_HEADERS, H2_FLAG_PADDED | H2_FLAG_PRIORITY,
			     (const uint8_t[]){ 2, 0, 0, 0, 1, 15, 0 }, 7, &c, &cl));
	ASSERT_EQ(0, content_of(H2_HEADERS, H2_FLAG_PADDED | H2_FLAG_PRIORITY,
				(const uint8_t[]){ 2, 0, 0, 0, 1, 15, 0, 0 }, 8, &c, &cl));
	ASSERT_EQ(0, cl);
	/* too short for the fields the flags announce */
	ASSERT_EQ(H2_FRAME_SIZE_ERROR, content_of(H2_DATA, H2_FLAG_PADDED, NULL, 0, &c, &cl));
	ASSERT_EQ(H2_FRAME_SIZE_ERROR, content_of(H2_HEADERS, H2_FLAG_PRIORITY,
						  (const uint8_t[]){ 0, 0, 0, 1 }, 4, &c, &cl));
	ASSERT_EQ(H2_FRAME_SIZE_ERROR, content_of(H2_HEADERS, H2_FLAG_PRIORITY | H2_FLAG_PADDED,
						  (const uint8_t[]){ 0, 0, 0, 0, 1 }, 5, &c, &cl));
	/* not a DATA or HEADERS frame */
	ASSERT_EQ(H2_PROTOCOL_ERROR, content_of(H2_PING, 0, (const uint8_t[8]){ 0 }, 8, &c, &cl));
}

static void setting(uint8_t *p, uint16_t id, uint32_t v)
{
	p[0] = id >> 8;
	p[1] = (uint8_t)id;
	p[2] = v >> 24;
	p[3] = v >> 16;
	p[4] = v >> 8;
	p[5] = (uint8_t)v;
}

TEST(h2_settings_apply__each_value_in_order_unknown_ignored)
{
	struct h2_settings s;
	uint8_t p[8 * 6];

	h2_settings_default(&s);
	ASSERT_EQ(4096, s.header_table_size);
	ASSERT_EQ(1, s.enable_push);
	ASSERT_EQ(UINT32_MAX, s.max_concurrent_streams);
	ASSERT_EQ(65535, s.initial_window_size);
	ASSERT_EQ(16384, s.max_frame_size);
	ASSERT_EQ(UINT32_MAX, s.max_header_list_size);
	setting(p, H2_SET_HEADER_TABLE_SIZE, 0);
	setting(p + 6, H2_SET_ENABLE_PUSH, 0);
	setting(p + 12, H2_SET_MAX_CONCURRENT_STREAMS, 100);
	setting(p + 18, H2_SET_INITIAL_WINDOW_SIZE, H2_MAX_WINDOW);
	setting(p + 24, H2_SET_MAX_FRAME_SIZE, 16777215);
	setting(p + 30, H2_SET_MAX_HEADER_LIST_SIZE, 8192);
	setting(p + 36, 0x99, 7);
	setting(p + 42, H2_SET_MAX_CONCURRENT_STREAMS, 5); /* the later one wins */
	ASSERT_EQ(0, h2_settings_apply(&s, p, sizeof(p)));
	ASSERT_EQ(0, s.header_table_size);
	ASSERT_EQ(0, s.enable_push);
	ASSERT_EQ(5, s.max_concurrent_streams);
	ASSERT_EQ(0x7fffffff, s.initial_window_size);
	ASSERT_EQ(16777215, s.max_frame_size);
	ASSERT_EQ(8192, s.max_header_list_size);
	ASSERT_EQ(0, h2_settings_apply(&s, p, 0)); /* empty: nothing */
}

TEST(h2_settings_apply__bad_values_and_lengths_get_the_rfcs_errors)
{
	static const struct {
		uint16_t id;
		uint32_t value;
		int error;
	} bad[] = {
		{ H2_SET_ENABLE_PUSH, 2, H2_PROTOCOL_ERROR },
		{ H2_SET_INITIAL_WINDOW_SIZE, 0x80000000u, H2_FLOW_CONTROL_ERROR },
		{ H2_SET_MAX_FRAME_SIZE, 16383, H2_PROTOCOL_ERROR },
		{ H2_SET_MAX_FRAME_SIZE, 16777216, H2_PROTOCOL_ERROR },
	};
	struct h2_settings s;
	uint8_t p[12];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h2_settings_default(&s);
		setting(p, bad[i].id, bad[i].value);
		ASSERT_EQ(bad[i].error, h2_settings_apply(&s, p, 6));
	}
	h2_settings_default(&s);
	setting(p, H2_SET_MAX_FRAME_SIZE, 16384 * 2);
	setting(p + 6, 0, 0);
	ASSERT_EQ(H2_FRAME_SIZE_ERROR, h2_settings_apply(&s, p, 5));
	ASSERT_EQ(H2_FRAME_SIZE_ERROR, h2_settings_apply(&s, p, 7));
	ASSERT_EQ(H2_FRAME_SIZE_ERROR, h2_settings_apply(&s, p, 11));
	ASSERT_EQ(16384, s.max_frame_size); /* a bad length applies nothing */
	ASSERT_EQ(0, h2_settings_apply(&s, p, 12));
	ASSERT_EQ(32768, s.max_frame_size);
}

TEST(h2_frame_write__control_frames_bytes)
{
	static const uint16_t ids[2] = { H2_SET_INITIAL_WINDOW_SIZE, H2_SET_MAX_FRAME_SIZE };
	static const uint32_t values[2] = { 0x7fffffff, 0x10000 };
	static const uint8_t opaque[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint8_t b[64];

	ASSERT_EQ(21, h2_settings_write(b, ids, values, 2));
	ASSERT_EQ(0, memcmp(b,
			    "\x00\x00\x0c\x04\x00\x00\x00\x00\x00"
			    "\x00\x04\x7f\xff\xff\xff"
			    "\x00\x05\x00\x01\x00\x00",
			    21));
	ASSERT_EQ(9, h2_settings_ack_write(b));
	ASSERT_EQ(0, memcmp(b, "\x00\x00\x00\x04\x01\x00\x00\x00\x00", 9));
	ASSERT_EQ(17, h2_ping_write(b, opaque, true));
	ASSERT_EQ(0,
		  memcmp(b, "\x00\x00\x08\x06\x01\x00\x00\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08",
			 17));
	ASSERT_EQ(17, h2_ping_write(b, opaque, false));
	ASSERT_EQ(0, b[4]);
	ASSERT_EQ(13, h2_window_update_write(b, 3, 0x80010000));
	ASSERT_EQ(0, memcmp(b, "\x00\x00\x04\x08\x00\x00\x00\x00\x03\x00\x01\x00\x00", 13));
	ASSERT_EQ(13, h2_rst_stream_write(b, 7, H2_CANCEL));
	ASSERT_EQ(0, memcmp(b, "\x00\x00\x04\x03\x00\x00\x00\x00\x07\x00\x00\x00\x08", 13));
	ASSERT_EQ(17, h2_goaway_write(b, 0x80000009, H2_ENHANCE_YOUR_CALM));
	ASSERT_EQ(0, memcmp(b,
			    "\x00\x00\x08\x07\x00\x00\x00\x00\x00"
			    "\x00\x00\x00\x09\x00\x00\x00\x0b",
			    17));
}

TEST_HARNESS_MAIN
