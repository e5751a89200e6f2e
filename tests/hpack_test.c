// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * HPACK (gateway/hpack.c) on its own: RFC 7541 Appendix C's examples byte
 * for byte (C.2 to C.6, the dynamic table's entries and size after each
 * block), every way a block is malformed, the header list limit (the
 * table stays in sync), and the encoder's output decoded back. The HTTP/2
 * frame codec is h2_frame_test.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kselftest_harness.h"
#include "hpack.h"

/* The fields seen, "name: value\n" each, and a callback's scripted answer. */
struct seen {
	char text[4096];
	size_t len;
	int calls, fail_at, fail_with;
};

static int collect(void *ctx, const char *name, size_t name_len, const char *value,
		   size_t value_len)
{
	struct seen *s = ctx;
	int n = snprintf(s->text + s->len, sizeof(s->text) - s->len, "%.*s: %.*s\n", (int)name_len,
			 name, (int)value_len, value);

	s->len += (size_t)n < sizeof(s->text) - s->len ? (size_t)n : 0;
	return ++s->calls == s->fail_at ? s->fail_with : 0;
}

/* Hex digits (spaces ignored) into bytes; the count. */
static size_t unhex(const char *hex, uint8_t *out)
{
	size_t n = 0;
	unsigned v;

	for (; *hex; hex++) {
		if (*hex == ' ')
			continue;
		sscanf(hex, "%2x", &v);
		out[n++] = (uint8_t)v;
		hex++;
	}
	return n;
}

static int decode_hex(struct hpack_decoder *d, const char *hex, size_t max_list, struct seen *s)
{
	uint8_t block[1024];
	size_t n = unhex(hex, block);

	memset(s, 0, sizeof(*s));
	return hpack_decode(d, block, n, max_list, collect, s);
}

/* The dynamic table as the decoder answers for it: indices 62.. read back
 * one block each, newest first, until one is refused. */
static int table_text(struct hpack_decoder *d, char *out, size_t cap)
{
	size_t len = 0;
	int count = 0;

	out[0] = 0;
	for (unsigned i = 62; i < 62 + 200; i++) {
		uint8_t block[8];
		struct seen s = { 0 };
		size_t n = 0;

		block[n++] = 0xff; /* indexed, 7-bit prefix 127 */
		if (i < 127) {
			block[0] = (uint8_t)(0x80 | i);
		} else {
			block[n++] = (uint8_t)(i - 127 < 128 ? i - 127 : 0);
		}
		if (hpack_decode(d, block, n, SIZE_MAX, collect, &s) != 0)
			break;
		len += (size_t)snprintf(out + len, cap - len, "[%u] %s", i - 61, s.text);
		count++;
	}
	return count;
}

static void integer(uint8_t *out, size_t *n, uint8_t flags, int prefix_bits, uint64_t v)
{
	uint64_t mask = (1u << prefix_bits) - 1;

	if (v < mask) {
		out[(*n)++] = flags | (uint8_t)v;
		return;
	}
	out[(*n)++] = flags | (uint8_t)mask;
	for (v -= mask; v >= 128; v >>= 7)
		out[(*n)++] = (uint8_t)(v | 0x80);
	out[(*n)++] = (uint8_t)v;
}

#define C3_1 "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"
#define C3_2 "8286 84be 5808 6e6f 2d63 6163 6865"
#define C3_3 "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"

#define REQ1 ":method: GET\n:scheme: http\n:path: /\n:authority: www.example.com\n"
#define REQ2 REQ1 "cache-control: no-cache\n"
#define REQ3                                                                              \
	":method: GET\n:scheme: https\n:path: /index.html\n:authority: www.example.com\n" \
	"custom-key: custom-value\n"
#define TAB1 "[1] :authority: www.example.com\n"
#define TAB2 "[1] cache-control: no-cache\n[2] :authority: www.example.com\n"
#define TAB3                                                          \
	"[1] custom-key: custom-value\n[2] cache-control: no-cache\n" \
	"[3] :authority: www.example.com\n"

TEST(hpack_decode__c2_each_kind_of_field_alone)
{
	struct hpack_decoder d;
	struct seen s;
	char table[2048];

	hpack_decoder_init(&d, 4096);
	ASSERT_EQ(0,
		  decode_hex(&d, "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
			     SIZE_MAX, &s));
	ASSERT_STREQ("custom-key: custom-header\n", s.text);
	ASSERT_EQ(1, table_text(&d, table, sizeof(table)));
	ASSERT_STREQ("[1] custom-key: custom-header\n", table);
	ASSERT_EQ(55, d.size);
	hpack_decoder_free(&d);

	hpack_decoder_init(&d, 4096);
	ASSERT_EQ(0, decode_hex(&d, "040c 2f73 616d 706c 652f 7061 7468", SIZE_MAX, &s));
	ASSERT_STREQ(":path: /sample/path\n", s.text);
	ASSERT_EQ(0, table_text(&d, table, sizeof(table)));
	ASSERT_EQ(0, decode_hex(&d, "1008 7061 7373 776f 7264 0673 6563 7265 74", SIZE_MAX, &s));
	ASSERT_STREQ("password: secret\n", s.text);
	ASSERT_EQ(0, table_text(&d, table, sizeof(table)));
	ASSERT_EQ(0, decode_hex(&d, "82", SIZE_MAX, &s));
	ASSERT_STREQ(":method: GET\n", s.text);
	ASSERT_EQ(0, d.size);
	hpack_decoder_free(&d);
}

TEST(hpack_decode__c3_requests_without_huffman_share_the_table)
{
	struct hpack_decoder d;
	struct seen s;
	char table[2048];

	hpack_decoder_init(&d, 4096);
	ASSERT_EQ(0, decode_hex(&d, C3_1, SIZE_MAX, &s));
	ASSERT_STREQ(REQ1, s.text);
	ASSERT_EQ(1, table_text(&d, table, sizeof(table)));
	ASSERT_STREQ(TAB1, table);
	ASSERT_EQ(57, d.size);
	ASSERT_EQ(0, decode_hex(&d, C3_2, SIZE_MAX, &s));
	ASSERT_STREQ(REQ2, s.text);
	ASSERT_EQ(2, table_text(&d, table, sizeof(table)));
	ASSERT_STREQ(TAB2, table);
	ASSERT_EQ(110, d.size);
	ASSERT_EQ(0, decode_hex(&d, C3_3, SIZE_MAX, &s));
	ASSERT_STREQ(REQ3, s.text);
	ASSERT_EQ(3, table_text(&d, table, sizeof(table)));
	ASSERT_STREQ(TAB3, table);
	ASSERT_EQ(164, d.size);
	hpack_decoder_free(&d);
}

TEST(hpack_decode__c4_requests_with_huffman_share_the_table)
{
	struct hpack_decoder d;
	struct seen s;
	char table[2048];

	hpack_decoder_init(&d, 4096);
	ASSERT_EQ(0, decode_hex(&d, "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", SIZE_MAX, &s));
	ASSERT_STREQ(REQ1, s.text);
	ASSERT_EQ(57, d.size);
	ASSERT_EQ(0, decode_hex(&d, "8286 84be 5886 a8eb 1064 9cbf", SIZE_MAX, &s));
	ASSERT_STREQ(REQ2, s.text);
	ASSERT_EQ(110, d.size);
	ASSERT_EQ(0, decode_hex(&d, "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
				SIZE_MAX, &s));
	ASSERT_STREQ(REQ3, s.text);
	ASSERT_EQ(3, table_text(&d, table, sizeof(table)));
	ASSERT_STREQ(TAB3, table);
	ASSERT_EQ(164, d.size);
	hpack_decoder_free(&d);
}

#define RESP1                                                                         \
	":status: 302\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT\n" \
	"location: https://www.example.com\n"
#define RESP2                                                                         \
	":status: 307\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT\n" \
	"location: https://www.example.com\n"
#define RESP3                                                                         \
	":status: 200\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:22 GMT\n" \
	"location: https://www.example.com\ncontent-encoding: gzip\n"                 \
	"set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1\n"
#define RTAB1                                                                              \
	"[1] location: https://www.example.com\n[2] date: Mon, 21 Oct 2013 20:13:21 GMT\n" \
	"[3] cache-control: private\n[4] :status: 302\n"
#define RTAB2                                                       \
	"[1] :status: 307\n[2] location: https://www.example.com\n" \
	"[3] date: Mon, 21 Oct 2013 20:13:21 GMT\n[4] cache-control: private\n"
#define RTAB3                                                                        \
	"[1] set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1\n" \
	"[2] content-encoding: gzip\n[3] date: Mon, 21 Oct 2013 20:13:22 GMT\n"

/* C.5 and C.6: a 256-byte table, so entries are evicted. */
static void check_responses(struct __test_metadata *_metadata, const char *const blocks[3])
{
	static const char *const want[3] = { RESP1, RESP2, RESP3 };
	static const char *const tables[3] = { RTAB1, RTAB2, RTAB3 };
	static const int counts[3] = { 4, 4, 3 };
	static const uint32_t sizes[3] = { 222, 222, 215 };
	struct hpack_decoder d;
	struct seen s;
	char table[2048];

	hpack_decoder_init(&d, 256);
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, decode_hex(&d, blocks[i], SIZE_MAX, &s));
		ASSERT_STREQ(want[i], s.text);
		ASSERT_EQ(counts[i], table_text(&d, table, sizeof(table)));
		ASSERT_STREQ(tables[i], table);
		ASSERT_EQ(sizes[i], d.size);
	}
	hpack_decoder_free(&d);
}

TEST(hpack_decode__c5_responses_without_huffman_evict_the_oldest)
{
	static const char *const blocks[3] = {
		"4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 "
		"2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 "
		"6c65 2e63 6f6d",
		"4803 3330 37c1 c0bf",
		"88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d "
		"54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 "
		"5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e "
		"3d31",
	};

	check_responses(_metadata, blocks);
}

TEST(hpack_decode__c6_responses_with_huffman_evict_the_oldest)
{
	static const char *const blocks[3] = {
		"4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 "
		"2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
		"4883 640e ffc1 c0bf",
		"88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab "
		"77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f "
		"9587 3160 65c0 03ed 4ee5 b106 3d50 07",
	};

	check_responses(_metadata, blocks);
}

/* ---- malformed blocks: each the connection's COMPRESSION_ERROR ---- */

TEST(hpack_decode__table_size_update_only_first_and_within_the_limit)
{
	struct hpack_decoder d;
	uint8_t b[16];
	size_t n = 0;
	struct seen s;

	hpack_decoder_init(&d, 4096);
	integer(b, &n, 0x20, 5, 4096);
	ASSERT_EQ(0, hpack_decode(&d, b, n, SIZE_MAX, collect, &s));
	n = 0;
	integer(b, &n, 0x20, 5, 4097);
	ASSERT_EQ(HPACK_ERR_COMPRESSION, hpack_decode(&d, b, n, SIZE_MAX, collect, &s));
	/* 2^32 + 5 read as 32 bits would be 5 */
	n = 0;
	integer(b, &n, 0x20, 5, (1ull << 32) + 5);
	ASSERT_EQ(HPACK_ERR_COMPRESSION, hpack_decode(&d, b, n, SIZE_MAX, collect, &s));
	ASSERT_EQ(0, decode_hex(&d, "20 3f e1 1f 82", SIZE_MAX, &s)); /* two, then a field */
	ASSERT_STREQ(":method: GET\n", s.text);
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "82 20", SIZE_MAX, &s));
	hpack_decoder_free(&d);
}

TEST(hpack_decode__table_size_update_evicts_and_limits_later_entries)
{
	struct hpack_decoder d;
	struct seen s;
	char table[2048];

	hpack_decoder_init(&d, 4096);
	ASSERT_EQ(0, decode_hex(&d, C3_1, SIZE_MAX, &s));
	ASSERT_EQ(0, decode_hex(&d, C3_2, SIZE_MAX, &s));
	/* down to 100: the older entry (:authority, 57) goes, 53 stays */
	ASSERT_EQ(0, decode_hex(&d, "3f 45", SIZE_MAX, &s));
	ASSERT_EQ(1, table_text(&d, table, sizeof(table)));
	ASSERT_STREQ("[1] cache-control: no-cache\n", table);
	ASSERT_EQ(53, d.size);
	/* at 53 it stays; an entry of 54, larger than the table, empties it
	 * and is not added */
	ASSERT_EQ(0, decode_hex(&d,
				"3f 16 40 0a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d "
				"7661 6c75 65",
				SIZE_MAX, &s));
	ASSERT_STREQ("custom-key: custom-value\n", s.text);
	ASSERT_EQ(0, table_text(&d, table, sizeof(table)));
	ASSERT_EQ(0, d.size);
	hpack_decoder_free(&d);
}

TEST(hpack_decode__indices_past_the_tables_are_refused)
{
	struct hpack_decoder d;
	struct seen s;

	hpack_decoder_init(&d, 4096);
	ASSERT_EQ(0, decode_hex(&d, "bd", SIZE_MAX, &s)); /* 61, the static table's last */
	ASSERT_STREQ("www-authenticate: \n", s.text);
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "be", SIZE_MAX, &s));
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "80", SIZE_MAX, &s));
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "7e 00", SIZE_MAX, &s)); /* name 62 */
	ASSERT_EQ(0, decode_hex(&d, C3_1, SIZE_MAX, &s));
	ASSERT_EQ(0, decode_hex(&d, "be", SIZE_MAX, &s));
	ASSERT_STREQ(":authority: www.example.com\n", s.text);
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "bf", SIZE_MAX, &s));
	hpack_decoder_free(&d);
}

TEST(hpack_decode__integers_past_32_bits_and_strings_past_the_block_are_refused)
{
	struct hpack_decoder d;
	struct seen s;
	uint8_t b[32];
	size_t n = 0;

	hpack_decoder_init(&d, 4096);
	/* a new name's length of 2^32 + 1 (1 read as 32 bits), then one byte */
	b[n++] = 0x00;
	integer(b, &n, 0x00, 7, (1ull << 32) + 1);
	b[n++] = 'x';
	b[n++] = 0x00;
	ASSERT_EQ(HPACK_ERR_COMPRESSION, hpack_decode(&d, b, n, SIZE_MAX, collect, &s));
	/* a size update of 31 with zero continuation bytes past 32 bits */
	ASSERT_EQ(HPACK_ERR_COMPRESSION,
		  decode_hex(&d, "3f 80 80 80 80 80 80 80 80 00", SIZE_MAX, &s));
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "ff 80", SIZE_MAX, &s)); /* cut short */
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "00 03 6162", SIZE_MAX, &s));
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "00 01 61 02 62", SIZE_MAX, &s));
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "00 01 61", SIZE_MAX, &s)); /* no value */
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "40", SIZE_MAX, &s));
	ASSERT_EQ(0, decode_hex(&d, "00 01 61 02 6263", SIZE_MAX, &s));
	ASSERT_STREQ("a: bc\n", s.text);
	hpack_decoder_free(&d);
}

TEST(hpack_decode__huffman_padding_and_eos_are_checked)
{
	struct hpack_decoder d;
	struct seen s;

	hpack_decoder_init(&d, 4096);
	/* 'a' is 00011: then 111 is the padding */
	ASSERT_EQ(0, decode_hex(&d, "00 01 61 81 1f", SIZE_MAX, &s));
	ASSERT_STREQ("a: a\n", s.text);
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "00 01 61 82 1fff", SIZE_MAX, &s)); /* 11 */
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "00 01 61 81 ff", SIZE_MAX, &s)); /* 8 */
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "00 01 61 81 18", SIZE_MAX, &s)); /* 000 */
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "00 01 61 81 1e", SIZE_MAX, &s)); /* 110 */
	/* EOS (30 ones) and 2 bits of padding; then EOS inside a string */
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "00 01 61 84 ffffffff", SIZE_MAX, &s));
	ASSERT_EQ(HPACK_ERR_COMPRESSION, decode_hex(&d, "00 01 61 85 1fff ffff fc", SIZE_MAX, &s));
	/* '0' (00000) eight times: 40 bits into 8 symbols, the most a byte gives */
	ASSERT_EQ(0, decode_hex(&d, "00 81 1f 85 0000 0000 00", SIZE_MAX, &s));
	ASSERT_STREQ("a: 00000000\n", s.text);
	/* an empty Huffman string */
	ASSERT_EQ(0, decode_hex(&d, "00 80 80", SIZE_MAX, &s));
	ASSERT_STREQ(": \n", s.text);
	hpack_decoder_free(&d);
}

/* ---- the list limit and the callback's answer: the table stays in sync ---- */

TEST(hpack_decode__over_the_list_limit_the_block_is_still_decoded_whole)
{
	struct hpack_decoder d;
	struct seen s;
	char table[2048];

	hpack_decoder_init(&d, 4096);
	/* :method GET 42 + :scheme http 43 = 85; :path / (38) passes 100 */
	ASSERT_EQ(HPACK_ERR_LIST_TOO_LARGE, decode_hex(&d, C3_1, 100, &s));
	ASSERT_STREQ(":method: GET\n:scheme: http\n", s.text);
	ASSERT_EQ(1, table_text(&d, table, sizeof(table)));
	ASSERT_STREQ(TAB1, table);
	ASSERT_EQ(0, decode_hex(&d, C3_2, SIZE_MAX, &s));
	ASSERT_STREQ(REQ2, s.text);
	ASSERT_EQ(HPACK_ERR_LIST_TOO_LARGE, decode_hex(&d, C3_3, 0, &s));
	ASSERT_EQ(0, s.calls);
	ASSERT_EQ(3, table_text(&d, table, sizeof(table)));
	ASSERT_STREQ(TAB3, table);
	/* exactly at the limit passes: the five fields of C.3.2 are 42+43+38+57+53 */
	ASSERT_EQ(0, decode_hex(&d, "8286 84c0 bf", 233, &s));
	ASSERT_EQ(HPACK_ERR_LIST_TOO_LARGE, decode_hex(&d, "8286 84c0 bf", 232, &s));
	hpack_decoder_free(&d);
}

TEST(hpack_decode__many_tiny_fields_count_32_each)
{
	struct hpack_decoder d;
	static uint8_t block[4096];
	struct seen s = { 0 };

	hpack_decoder_init(&d, 4096);
	memset(block, 0x82, sizeof(block)); /* :method GET, 42 each */
	ASSERT_EQ(HPACK_ERR_LIST_TOO_LARGE,
		  hpack_decode(&d, block, sizeof(block), 16384, collect, &s));
	ASSERT_EQ(390, s.calls); /* 390 x 42 = 16380 */
	hpack_decoder_free(&d);
}

TEST(hpack_decode__a_callbacks_answer_is_kept_and_the_table_filled)
{
	struct hpack_decoder d;
	struct seen s;
	char table[2048];
	uint8_t block[256];
	size_t n = unhex(C3_1, block);

	hpack_decoder_init(&d, 4096);
	memset(&s, 0, sizeof(s));
	s.fail_at = 2;
	s.fail_with = 7;
	ASSERT_EQ(7, hpack_decode(&d, block, n, SIZE_MAX, collect, &s));
	ASSERT_EQ(2, s.calls);
	ASSERT_EQ(1, table_text(&d, table, sizeof(table)));
	ASSERT_STREQ(TAB1, table);
	hpack_decoder_free(&d);
}

/* A table of 4096 filled and turned over many times: entries of every size
 * wrap the byte buffer; each block's newest entry reads back right. */
TEST(hpack_decode__the_table_turns_over_without_losing_an_entry)
{
	struct hpack_decoder d;
	struct seen s;
	uint8_t block[512];
	char name[64], value[300], want[400];

	hpack_decoder_init(&d, 4096);
	for (int i = 0; i < 2000; i++) {
		size_t n = 0, nl = (size_t)snprintf(name, sizeof(name), "n%d", i);
		size_t vl = (size_t)(i * 37 % 250);

		for (size_t k = 0; k < vl; k++)
			value[k] = (char)('a' + (i + k) % 26);
		block[n++] = 0x40;
		integer(block, &n, 0, 7, nl);
		memcpy(block + n, name, nl);
		n += nl;
		integer(block, &n, 0, 7, vl);
		memcpy(block + n, value, vl);
		n += vl;
		block[n++] = 0xbe;
		ASSERT_EQ(0, hpack_decode(&d, block, n, SIZE_MAX, NULL, NULL));
		memset(&s, 0, sizeof(s));
		ASSERT_EQ(0, decode_hex(&d, "be", SIZE_MAX, &s));
		snprintf(want, sizeof(want), "%s: %.*s\n", name, (int)vl, value);
		ASSERT_STREQ(want, s.text);
		ASSERT_LE(d.size, 4096);
	}
	hpack_decoder_free(&d);
}

/* A reference table, newest first, kept by the RFC's rules in a few lines. */
struct ref_table {
	char name[64][64], value[64][256];
	size_t count, size, limit;
};

static void ref_add(struct ref_table *t, const char *name, const char *value)
{
	size_t need = strlen(name) + strlen(value) + 32;

	while (t->count && t->size + need > t->limit) {
		t->count--;
		t->size -= strlen(t->name[t->count]) + strlen(t->value[t->count]) + 32;
	}
	if (need > t->limit)
		return;
	memmove(t->name[1], t->name[0], sizeof(t->name[0]) * t->count);
	memmove(t->value[1], t->value[0], sizeof(t->value[0]) * t->count);
	strcpy(t->name[0], name);
	strcpy(t->value[0], value);
	t->count++;
	t->size += need;
}

/* Thousands of blocks of one field each, with indexing: a new name or one of
 * the dynamic table's (which the insertion may evict or move), values of
 * many sizes, size updates now and then; each field and the whole table
 * compared with the reference after every block. */
TEST(hpack_decode__random_insertions_match_a_reference_table)
{
	static struct ref_table ref;
	struct hpack_decoder d;
	uint32_t rng = 12345;
	char table[65536], want[65536], name[64], value[256], field[400];

	hpack_decoder_init(&d, 512);
	ref.limit = 512;
	for (int i = 0; i < 3000; i++) {
		uint8_t b[600];
		size_t n = 0, vl, wl = 0;
		struct seen s;

		rng = rng * 1103515245 + 12345;
		if (rng % 17 == 0) {
			ref.limit = 64 + (rng >> 8) % 449;
			integer(b, &n, 0x20, 5, ref.limit);
			while (ref.count && ref.size > ref.limit) {
				ref.count--;
				ref.size -= strlen(ref.name[ref.count]) +
					    strlen(ref.value[ref.count]) + 32;
			}
		}
		vl = (rng >> 12) % 200;
		for (size_t k = 0; k < vl; k++)
			value[k] = (char)('a' + (k * 7 + (size_t)i) % 26);
		value[vl] = 0;
		if (ref.count && (rng >> 20) % 2) {
			size_t idx = (rng >> 21) % ref.count;

			strcpy(name, ref.name[idx]);
			integer(b, &n, 0x40, 6, 62 + idx);
		} else {
			snprintf(name, sizeof(name), "name-%d", i);
			b[n++] = 0x40;
			integer(b, &n, 0, 7, strlen(name));
			memcpy(b + n, name, strlen(name));
			n += strlen(name);
		}
		integer(b, &n, 0, 7, vl);
		memcpy(b + n, value, vl);
		n += vl;
		memset(&s, 0, sizeof(s));
		ASSERT_EQ(0, hpack_decode(&d, b, n, SIZE_MAX, collect, &s));
		snprintf(field, sizeof(field), "%s: %s\n", name, value);
		ASSERT_STREQ(field, s.text);
		ref_add(&ref, name, value);
		for (size_t k = 0; k < ref.count; k++)
			wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "[%zu] %s: %s\n",
					       k + 1, ref.name[k], ref.value[k]);
		want[wl] = 0;
		ASSERT_EQ((int)ref.count, table_text(&d, table, sizeof(table)));
		ASSERT_STREQ(want, table);
		ASSERT_EQ(ref.size, d.size);
	}
	hpack_decoder_free(&d);
}

/* ---- encoding ---- */

TEST(hpack_encode__statuses_and_fields_decode_back_and_add_nothing)
{
	static const struct {
		const char *name, *value;
	} fields[] = {
		{ "content-type", "application/grpc" },
		{ "grpc-status", "0" },
		{ "grpc-message", "model \"x\" not found" },
		{ "date", "" },
	};
	struct hpack_decoder d;
	uint8_t out[512];
	struct seen s;
	size_t n;
	char want[512];
	size_t wl = 0;

	n = hpack_encode_status(out, sizeof(out), 200);
	ASSERT_EQ(1, n);
	ASSERT_EQ(0x88, out[0]);
	ASSERT_EQ(1, hpack_encode_status(out, 1, 404));
	ASSERT_EQ(0x8d, out[0]);
	ASSERT_EQ(5, hpack_encode_status(out, sizeof(out), 302));
	ASSERT_EQ(0, memcmp(out,
			    "\x08\x03"
			    "302",
			    5));
	ASSERT_EQ(0, hpack_encode_status(out, 4, 302));
	ASSERT_EQ(0, hpack_encode_status(out, sizeof(out), 99));

	n = hpack_encode_field(out, sizeof(out), "content-type", 12, "application/grpc", 16);
	ASSERT_EQ(19, n);
	ASSERT_EQ(0, memcmp(out,
			    "\x0f\x10\x10"
			    "application/grpc",
			    19)); /* index 31 */

	n = hpack_encode_status(out, sizeof(out), 503);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		size_t m = hpack_encode_field(out + n, sizeof(out) - n, fields[i].name,
					      strlen(fields[i].name), fields[i].value,
					      strlen(fields[i].value));

		ASSERT_GT(m, 0);
		for (size_t cap = 0; cap < m; cap++)
			ASSERT_EQ(0, hpack_encode_field(out + n, cap, fields[i].name,
							strlen(fields[i].name), fields[i].value,
							strlen(fields[i].value)));
		n += m;
		wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "%s: %s\n", fields[i].name,
				       fields[i].value);
	}
	hpack_decoder_init(&d, 4096);
	memset(&s, 0, sizeof(s));
	ASSERT_EQ(0, hpack_decode(&d, out, n, SIZE_MAX, collect, &s));
	ASSERT_EQ(0, strncmp(s.text, ":status: 503\n", 13));
	ASSERT_STREQ(want, s.text + 13);
	ASSERT_EQ(0, d.size);
	hpack_decoder_free(&d);
}

TEST(hpack_encode__long_values_take_multibyte_lengths)
{
	struct hpack_decoder d;
	static uint8_t out[70000];
	static char value[66000];
	size_t n;
	struct seen s;
	int got = 0;

	memset(value, 'v', sizeof(value));
	n = hpack_encode_field(out, sizeof(out), "x-long", 6, value, sizeof(value));
	ASSERT_EQ(1 + 1 + 6 + 4 + sizeof(value), n); /* 66000 - 127 needs 3 more bytes */
	hpack_decoder_init(&d, 4096);
	memset(&s, 0, sizeof(s));
	got = hpack_decode(&d, out, n, SIZE_MAX, collect, &s);
	ASSERT_EQ(0, got);
	ASSERT_EQ(1, s.calls);
	hpack_decoder_free(&d);
}

TEST_HARNESS_MAIN
