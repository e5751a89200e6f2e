// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target: the HTTP/2 pieces the gateway's own gRPC server reads
 * from any client (gateway/hpack.c, gateway/h2_frame.c). The first byte
 * picks one. 'h': header blocks into one HPACK decoder (the next byte
 * picks the table size, the one after the list limit; then each block is
 * one length byte and its bytes), a connection's life: after a
 * COMPRESSION_ERROR the decoder starts again. Every field must fit the
 * bounds the decoder promises, the list limit must hold, the table must
 * stay within its size, and each accepted block's fields, encoded again
 * with hpack_encode_field, must decode to the same fields. 's': a SETTINGS
 * payload, accepted values within the RFC's ranges. 'f': a frame header
 * then its payload through h2_frame_content, the content inside the frame.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "h2_frame.h"
#include "hpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FIELDS_TEXT 65536

struct fuzz_block {
	size_t len, max_list, list, bound;
	uint8_t encoded[FIELDS_TEXT]; /* the fields again, as literals */
	size_t encoded_len;
	int calls;
};

static int fuzz_hpack_field(void *ctx, const char *name, size_t name_len, const char *value,
			    size_t value_len)
{
	struct fuzz_block *b = ctx;
	size_t n;

	if (name_len + value_len > b->bound) {
		fprintf(stderr, "fuzz_hpack: a field of %zu bytes from a block of %zu\n",
			name_len + value_len, b->len);
		abort();
	}
	b->list += name_len + value_len + 32;
	if (b->list > b->max_list) {
		fprintf(stderr, "fuzz_hpack: fields past the list limit reached the callback\n");
		abort();
	}
	b->calls++;
	n = hpack_encode_field(b->encoded + b->encoded_len, sizeof(b->encoded) - b->encoded_len,
			       name, name_len, value, value_len);
	if (!n)
		b->encoded_len = sizeof(b->encoded) + 1; /* too long to replay */
	else if (b->encoded_len <= sizeof(b->encoded))
		b->encoded_len += n;
	return 0;
}

/* The fields decoded again from their literal encoding (no table). */
struct fuzz_replay {
	char text[FIELDS_TEXT];
	size_t len;
	int calls;
};

static int fuzz_hpack_append(void *ctx, const char *name, size_t name_len, const char *value,
			     size_t value_len)
{
	struct fuzz_replay *r = ctx;

	r->calls++;
	if (r->len + name_len + value_len + 2 > sizeof(r->text))
		return 1;
	memcpy(r->text + r->len, name, name_len);
	r->len += name_len;
	r->text[r->len++] = 0;
	memcpy(r->text + r->len, value, value_len);
	r->len += value_len;
	r->text[r->len++] = 0;
	return 0;
}

static void fuzz_hpack_check_table(const struct hpack_decoder *d)
{
	if (d->size > d->limit || d->limit > d->max_table || d->count >= d->slots ||
	    d->tail - d->head > d->max_table || d->tail > d->max_table) {
		fprintf(stderr, "fuzz_hpack: table out of bounds (size %u limit %u count %u)\n",
			d->size, d->limit, d->count);
		abort();
	}
}

/* Both decodings of the same fields must be the same bytes. */
static void fuzz_hpack_replay(const struct fuzz_block *b)
{
	static struct fuzz_replay a, c;
	struct hpack_decoder d;

	if (b->encoded_len > sizeof(b->encoded))
		return;
	memset(&a, 0, sizeof(a));
	memset(&c, 0, sizeof(c));
	hpack_decoder_init(&d, 0);
	if (hpack_decode(&d, b->encoded, b->encoded_len, SIZE_MAX, fuzz_hpack_append, &a) != 0 ||
	    a.calls != b->calls) {
		fprintf(stderr, "fuzz_hpack: the encoder's own block was refused\n");
		abort();
	}
	/* once more: the same text, and nothing went into the table */
	if (hpack_decode(&d, b->encoded, b->encoded_len, SIZE_MAX, fuzz_hpack_append, &c) != 0 ||
	    a.len != c.len || memcmp(a.text, c.text, a.len) || d.size != 0) {
		fprintf(stderr, "fuzz_hpack: literals decoded differently or indexed\n");
		abort();
	}
	hpack_decoder_free(&d);
}

static void fuzz_hpack_blocks(const uint8_t *data, size_t size)
{
	static struct fuzz_block b;
	struct hpack_decoder d;
	size_t max_table, max_list;

	if (size < 2)
		return;
	max_table = (size_t)data[0] * 32;
	max_list = data[1] == 255 ? SIZE_MAX : (size_t)data[1] * 64;
	data += 2;
	size -= 2;
	hpack_decoder_init(&d, max_table);
	while (size) {
		size_t len = data[0] < size ? data[0] : size - 1;
		int r;

		memset(&b, 0, sizeof(b));
		b.len = len;
		b.max_list = max_list;
		b.bound = max_table + len * 8 / 5 + 64; /* + a static entry's name and value */
		r = hpack_decode(&d, data + 1, len, max_list, fuzz_hpack_field, &b);
		if (r != 0 && r != HPACK_ERR_COMPRESSION && r != HPACK_ERR_LIST_TOO_LARGE) {
			fprintf(stderr, "fuzz_hpack: hpack_decode returned %d\n", r);
			abort();
		}
		fuzz_hpack_check_table(&d);
		if (r == 0)
			fuzz_hpack_replay(&b);
		if (r == HPACK_ERR_COMPRESSION) {
			hpack_decoder_free(&d);
			hpack_decoder_init(&d, max_table);
		}
		data += len + 1;
		size -= len + 1;
	}
	hpack_decoder_free(&d);
}

static void fuzz_settings(const uint8_t *data, size_t size)
{
	struct h2_settings s;
	int r;

	h2_settings_default(&s);
	r = h2_settings_apply(&s, data, size);
	if (r != 0 && r != H2_PROTOCOL_ERROR && r != H2_FLOW_CONTROL_ERROR &&
	    r != H2_FRAME_SIZE_ERROR)
		abort();
	if ((r == H2_FRAME_SIZE_ERROR) != (size % 6 != 0))
		abort();
	if (s.enable_push > 1 || s.initial_window_size > H2_MAX_WINDOW ||
	    s.max_frame_size < H2_DEFAULT_MAX_FRAME || s.max_frame_size > H2_MAX_MAX_FRAME) {
		fprintf(stderr, "fuzz_hpack: a setting out of its range was applied\n");
		abort();
	}
}

static void fuzz_frame(const uint8_t *data, size_t size)
{
	struct h2_frame_header h;
	const uint8_t *content;
	size_t content_len;
	uint8_t again[H2_FRAME_HEADER];

	if (size < H2_FRAME_HEADER)
		return;
	h2_frame_header_read(data, &h);
	h2_frame_header_write(again, h.length, h.type, h.flags, h.stream);
	if (memcmp(again, data, 5) || memcmp(again + 6, data + 6, 3) || (again[5] ^ data[5]) & 0x7f)
		abort();
	data += H2_FRAME_HEADER;
	size -= H2_FRAME_HEADER;
	if (h.length > size)
		h.length = (uint32_t)size;
	if (h2_frame_content(&h, data, &content, &content_len) == 0 &&
	    (content < data || content + content_len > data + h.length)) {
		fprintf(stderr, "fuzz_hpack: content outside its frame\n");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0]) {
	case 'h':
		fuzz_hpack_blocks(data + 1, size - 1);
		break;
	case 's':
		fuzz_settings(data + 1, size - 1);
		break;
	case 'f':
		fuzz_frame(data + 1, size - 1);
		break;
	default:
		break;
	}
	return 0;
}
