/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * HPACK (RFC 7541), the header compression of the gateway's HTTP/2 server:
 * a decoder with a bounded dynamic table, one per connection, and a
 * stateless encoder (no dynamic table, no Huffman) for the answers.
 *
 * The decoder reads bytes any client sends: its memory is max_table (the
 * dynamic table) plus one scratch buffer of at most max_table + 2 x the
 * block's length (decoded strings: Huffman expands 5 bits to 8 at most),
 * and its work is linear in the block's length. docs/design/hpack.md.
 */
#ifndef COLOC_GATEWAY_HPACK_H
#define COLOC_GATEWAY_HPACK_H

#include <stddef.h>
#include <stdint.h>

#define HPACK_ERR_COMPRESSION (-1) /* malformed block: the connection's COMPRESSION_ERROR */
#define HPACK_ERR_LIST_TOO_LARGE \
	(-2) /* decoded whole (table in sync), but the fields' size
                                        (RFC 9113 6.5.2: name + value + 32 each) passed max_list */
#define HPACK_ERR_NO_MEMORY \
	(-3) /* the table or scratch could not be allocated: the
                                   connection's INTERNAL_ERROR (the table is out of sync) */

/* One dynamic table entry: its name and value lie at off in the table's bytes. */
struct hpack_entry {
	uint32_t off, name_len, value_len;
};

/* A bounded dynamic table (ring of entries); opaque to callers. */
struct hpack_decoder {
	uint32_t max_table; /* what we advertise: a size update above it is an error */
	uint32_t limit; /* the size the peer last chose (<= max_table) */
	uint32_t size; /* RFC 7541 4.1: name + value + 32 over the entries */
	uint32_t count, oldest; /* entries[oldest] is the oldest of count, in a ring */
	uint32_t slots; /* entries' length: max_table / 32 + 1 */
	uint32_t head, tail; /* the live bytes are bytes[head, tail), oldest first */
	struct hpack_entry *entries;
	char *bytes; /* max_table bytes, compacted to the front when the tail is reached */
	char *scratch; /* decoded strings of one block */
	size_t scratch_cap;
};

/* The SETTINGS_HEADER_TABLE_SIZE we advertise (4096). Allocates nothing: the
 * first hpack_decode does. */
void hpack_decoder_init(struct hpack_decoder *d, size_t max_table);
void hpack_decoder_free(struct hpack_decoder *d);

/* Called for each field in order; name/value (Huffman already decoded) valid only during the
 * call; a nonzero return is remembered, decoding goes on to the block's end (so the table
 * stays in sync) and that value is returned. */
typedef int (*hpack_field_fn)(void *ctx, const char *name, size_t name_len, const char *value,
			      size_t value_len);
/* 0, or the first of: fn's nonzero return or HPACK_ERR_LIST_TOO_LARGE, whichever came
 * first (fn is not called again after either); HPACK_ERR_COMPRESSION or HPACK_ERR_NO_MEMORY
 * at once (the connection must end: the table is out of sync). fn's own values should be
 * positive to be told apart. max_list SIZE_MAX: no limit. */
int hpack_decode(struct hpack_decoder *d, const uint8_t *block, size_t len, size_t max_list,
		 hpack_field_fn fn, void *ctx);

/* Encoding, stateless (no dynamic table, no Huffman): each returns the bytes written at out,
 * or 0 when they do not fit in cap. */
size_t hpack_encode_status(uint8_t *out, size_t cap, int status); /* ":status" (200: index 8) */
/* A literal without indexing; the name indexed when the static table has it. */
size_t hpack_encode_field(uint8_t *out, size_t cap, const char *name, size_t name_len,
			  const char *value, size_t value_len);

#endif /* COLOC_GATEWAY_HPACK_H */
