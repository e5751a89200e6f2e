// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * HPACK (RFC 7541). The decoder walks a header block once: integers with
 * their prefixes (past 32 bits: an error), strings raw or Huffman-decoded
 * into the decoder's scratch (sized before the walk: at most 8 symbols for
 * 5 bits), fields from the static table or the dynamic one, which keeps
 * its entries' bytes oldest first in one buffer of max_table bytes and
 * moves them to its front when a new entry would pass its end. Every error
 * is the connection's COMPRESSION_ERROR; a block over the list limit is
 * walked to its end so that the table stays in sync. The encoder writes
 * literals without indexing, names from the static table.
 * docs/design/hpack.md.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "hpack.h"
#include "hpack_huffman.h"

#define HPACK_ENTRY_OVERHEAD 32
#define HPACK_STATIC_COUNT 61
#define HPACK_SCRATCH_KEEP (64 * 1024) /* scratch above it is freed after a block */

struct hpack_static {
	const char *name, *value;
};

/* RFC 7541 Appendix A, index 1 first. */
static const struct hpack_static hpack_static[HPACK_STATIC_COUNT] = {
	{ ":authority", "" },
	{ ":method", "GET" },
	{ ":method", "POST" },
	{ ":path", "/" },
	{ ":path", "/index.html" },
	{ ":scheme", "http" },
	{ ":scheme", "https" },
	{ ":status", "200" },
	{ ":status", "204" },
	{ ":status", "206" },
	{ ":status", "304" },
	{ ":status", "400" },
	{ ":status", "404" },
	{ ":status", "500" },
	{ "accept-charset", "" },
	{ "accept-encoding", "gzip, deflate" },
	{ "accept-language", "" },
	{ "accept-ranges", "" },
	{ "accept", "" },
	{ "access-control-allow-origin", "" },
	{ "age", "" },
	{ "allow", "" },
	{ "authorization", "" },
	{ "cache-control", "" },
	{ "content-disposition", "" },
	{ "content-encoding", "" },
	{ "content-language", "" },
	{ "content-length", "" },
	{ "content-location", "" },
	{ "content-range", "" },
	{ "content-type", "" },
	{ "cookie", "" },
	{ "date", "" },
	{ "etag", "" },
	{ "expect", "" },
	{ "expires", "" },
	{ "from", "" },
	{ "host", "" },
	{ "if-match", "" },
	{ "if-modified-since", "" },
	{ "if-none-match", "" },
	{ "if-range", "" },
	{ "if-unmodified-since", "" },
	{ "last-modified", "" },
	{ "link", "" },
	{ "location", "" },
	{ "max-forwards", "" },
	{ "proxy-authenticate", "" },
	{ "proxy-authorization", "" },
	{ "range", "" },
	{ "referer", "" },
	{ "refresh", "" },
	{ "retry-after", "" },
	{ "server", "" },
	{ "set-cookie", "" },
	{ "strict-transport-security", "" },
	{ "transfer-encoding", "" },
	{ "user-agent", "" },
	{ "vary", "" },
	{ "via", "" },
	{ "www-authenticate", "" },
};

void hpack_decoder_init(struct hpack_decoder *d, size_t max_table)
{
	memset(d, 0, sizeof(*d));
	if (max_table > UINT32_MAX / 2)
		max_table = UINT32_MAX / 2;
	d->max_table = d->limit = (uint32_t)max_table;
	d->slots = d->max_table / HPACK_ENTRY_OVERHEAD + 1;
}

void hpack_decoder_free(struct hpack_decoder *d)
{
	free(d->entries);
	free(d->bytes);
	free(d->scratch);
	memset(d, 0, sizeof(*d));
}

/* ---- the dynamic table (RFC 7541 section 4) ---- */

static uint32_t entry_bytes(const struct hpack_entry *e)
{
	return e->name_len + e->value_len;
}

static void table_evict_oldest(struct hpack_decoder *d)
{
	const struct hpack_entry *e = &d->entries[d->oldest];

	d->size -= entry_bytes(e) + HPACK_ENTRY_OVERHEAD;
	d->head = e->off + entry_bytes(e);
	d->oldest = (d->oldest + 1) % d->slots;
	if (--d->count == 0)
		d->head = d->tail = 0;
}

static void table_shrink_to(struct hpack_decoder *d, uint32_t limit)
{
	while (d->count && d->size > limit)
		table_evict_oldest(d);
}

/* name and value must not lie in d->bytes (compaction moves them). An entry
 * larger than the table empties it and is not added (RFC 7541 4.4). */
static void table_add(struct hpack_decoder *d, const char *name, uint32_t name_len,
		      const char *value, uint32_t value_len)
{
	uint64_t need = (uint64_t)name_len + value_len + HPACK_ENTRY_OVERHEAD;
	struct hpack_entry *e;

	if (need > d->limit) {
		table_shrink_to(d, 0);
		return;
	}
	table_shrink_to(d, d->limit - (uint32_t)need);
	if (d->tail + name_len + value_len > d->max_table) {
		memmove(d->bytes, d->bytes + d->head, d->tail - d->head);
		for (uint32_t i = 0; i < d->count; i++)
			d->entries[(d->oldest + i) % d->slots].off -= d->head;
		d->tail -= d->head;
		d->head = 0;
	}
	e = &d->entries[(d->oldest + d->count) % d->slots];
	e->off = d->tail;
	e->name_len = name_len;
	e->value_len = value_len;
	memcpy(d->bytes + d->tail, name, name_len);
	memcpy(d->bytes + d->tail + name_len, value, value_len);
	d->tail += name_len + value_len;
	d->size += (uint32_t)need;
	d->count++;
}

struct hpack_field {
	const char *name, *value;
	size_t name_len, value_len;
	bool name_in_table; /* name lies in the dynamic table's bytes */
};

/* Index 1..61 the static table, 62.. the dynamic one, newest first. */
static int table_get(const struct hpack_decoder *d, uint32_t index, struct hpack_field *f)
{
	const struct hpack_entry *e;

	if (index == 0)
		return HPACK_ERR_COMPRESSION;
	if (index <= HPACK_STATIC_COUNT) {
		f->name = hpack_static[index - 1].name;
		f->value = hpack_static[index - 1].value;
		f->name_len = strlen(f->name);
		f->value_len = strlen(f->value);
		f->name_in_table = false;
		return 0;
	}
	index -= HPACK_STATIC_COUNT + 1;
	if (index >= d->count)
		return HPACK_ERR_COMPRESSION;
	e = &d->entries[(d->oldest + d->count - 1 - index) % d->slots];
	f->name = d->bytes + e->off;
	f->name_len = e->name_len;
	f->value = f->name + e->name_len;
	f->value_len = e->value_len;
	f->name_in_table = true;
	return 0;
}

/* ---- integers and strings (RFC 7541 5.1, 5.2) ---- */

struct hpack_reader {
	const uint8_t *p, *end;
	char *scratch; /* the current field's strings go at scratch[used..] */
	size_t used;
};

static int read_int(struct hpack_reader *r, int prefix_bits, uint32_t *out)
{
	uint32_t mask = (1u << prefix_bits) - 1;
	uint64_t v;
	int shift = 0;

	if (r->p >= r->end)
		return HPACK_ERR_COMPRESSION;
	v = *r->p++ & mask;
	if (v < mask) {
		*out = (uint32_t)v;
		return 0;
	}
	for (;;) {
		uint8_t b;

		if (r->p >= r->end || shift > 28)
			return HPACK_ERR_COMPRESSION;
		b = *r->p++;
		v += (uint64_t)(b & 0x7f) << shift;
		if (v > UINT32_MAX)
			return HPACK_ERR_COMPRESSION;
		if (!(b & 0x80))
			break;
		shift += 7;
	}
	*out = (uint32_t)v;
	return 0;
}

/* The symbol the top bits of a 64-bit window start, and its length. */
static unsigned huffman_symbol(uint64_t window, unsigned *len)
{
	uint16_t hit = hpack_huffman_lut8[window >> 56];
	uint32_t top = (uint32_t)(window >> 32);

	if (hit) {
		*len = hit >> 9;
		return hit & 0x1ff;
	}
	for (unsigned n = 9; n <= HPACK_HUFFMAN_MAX_LEN; n++) {
		uint32_t code = top >> (32 - n);

		if (code - hpack_huffman_first[n] < hpack_huffman_count[n]) {
			*len = n;
			return hpack_huffman_sorted[hpack_huffman_offset[n] + code -
						    hpack_huffman_first[n]];
		}
	}
	*len = HPACK_HUFFMAN_MAX_LEN + 1; /* not reached: the code is complete */
	return HPACK_HUFFMAN_EOS;
}

/* RFC 7541 5.2: the last bits, fewer than 8, must be ones (EOS's first
 * bits); EOS itself in the string is an error. out holds 8 * len / 5. */
static int huffman_decode(const uint8_t *in, size_t len, char *out, size_t *out_len)
{
	const uint8_t *end = in + len;
	uint64_t acc = 0; /* nbits valid bits at the top */
	unsigned nbits = 0;
	size_t n = 0;

	for (;;) {
		unsigned sym, code_len;

		while (nbits <= 48 && in < end) {
			acc |= (uint64_t)*in++ << (56 - nbits);
			nbits += 8;
		}
		if (nbits == 0)
			break;
		sym = huffman_symbol(acc | (~0ull >> nbits), &code_len);
		if (code_len > nbits) {
			if (nbits > 7 || (acc | (~0ull >> nbits)) != ~0ull)
				return HPACK_ERR_COMPRESSION;
			break;
		}
		if (sym == HPACK_HUFFMAN_EOS)
			return HPACK_ERR_COMPRESSION;
		out[n++] = (char)sym;
		acc <<= code_len;
		nbits -= code_len;
	}
	*out_len = n;
	return 0;
}

static int read_string(struct hpack_reader *r, const char **s, size_t *s_len)
{
	bool huffman;
	uint32_t len;
	int err;

	if (r->p >= r->end)
		return HPACK_ERR_COMPRESSION;
	huffman = *r->p & 0x80;
	err = read_int(r, 7, &len);
	if (err)
		return err;
	if (len > (size_t)(r->end - r->p))
		return HPACK_ERR_COMPRESSION;
	if (!huffman) {
		*s = (const char *)r->p;
		*s_len = len;
	} else {
		err = huffman_decode(r->p, len, r->scratch + r->used, s_len);
		if (err)
			return err;
		*s = r->scratch + r->used;
		r->used += *s_len;
	}
	r->p += len;
	return 0;
}

/* ---- the block ---- */

static int decoder_prepare(struct hpack_decoder *d, size_t len)
{
	size_t need;

	if (!d->entries) {
		d->entries = calloc(d->slots, sizeof(*d->entries));
		d->bytes = malloc(d->max_table ? d->max_table : 1);
		if (!d->entries || !d->bytes) {
			free(d->entries);
			free(d->bytes);
			d->entries = NULL;
			d->bytes = NULL;
			return HPACK_ERR_NO_MEMORY;
		}
	}
	if (len > (SIZE_MAX - d->max_table - 16) / 2)
		return HPACK_ERR_NO_MEMORY;
	/* one field's strings: both Huffman (at most 8/5 of their bytes), or
	 * a name copied out of the table and a Huffman value */
	need = d->max_table + 2 * len + 16;
	if (d->scratch_cap < need) {
		free(d->scratch);
		d->scratch = malloc(need);
		d->scratch_cap = d->scratch ? need : 0;
		if (!d->scratch)
			return HPACK_ERR_NO_MEMORY;
	}
	return 0;
}

/* A literal field (RFC 7541 6.2) after its first byte's type bits. */
static int read_literal(struct hpack_decoder *d, struct hpack_reader *r, int prefix_bits, bool add,
			struct hpack_field *f)
{
	uint32_t index;
	int err = read_int(r, prefix_bits, &index);

	if (err)
		return err;
	if (index) {
		err = table_get(d, index, f);
	} else {
		f->name_in_table = false;
		err = read_string(r, &f->name, &f->name_len);
	}
	if (!err)
		err = read_string(r, &f->value, &f->value_len);
	if (err || !add)
		return err;
	if (f->name_in_table) {
		char *copy = r->scratch + r->used;

		memcpy(copy, f->name, f->name_len);
		r->used += f->name_len;
		f->name = copy;
		f->name_in_table = false;
	}
	table_add(d, f->name, (uint32_t)f->name_len, f->value, (uint32_t)f->value_len);
	return 0;
}

static int read_field(struct hpack_decoder *d, struct hpack_reader *r, bool *first,
		      struct hpack_field *f)
{
	uint8_t b = *r->p;
	uint32_t v;
	int err;

	if (b & 0x80) {
		err = read_int(r, 7, &v);
		return err ? err : table_get(d, v, f);
	}
	if ((b & 0xc0) == 0x40)
		return read_literal(d, r, 6, true, f);
	if ((b & 0xe0) == 0x20) {
		/* a dynamic table size update: only before the first field */
		if (!*first)
			return HPACK_ERR_COMPRESSION;
		err = read_int(r, 5, &v);
		if (err || v > d->max_table)
			return HPACK_ERR_COMPRESSION;
		d->limit = v;
		table_shrink_to(d, v);
		f->name = NULL;
		return 0;
	}
	return read_literal(d, r, 4, false, f); /* 0000 without, 0001 never indexed */
}

int hpack_decode(struct hpack_decoder *d, const uint8_t *block, size_t len, size_t max_list,
		 hpack_field_fn fn, void *ctx)
{
	struct hpack_reader r = { .p = block, .end = block + len };
	uint64_t list = 0;
	bool first = true;
	int ret = 0, err;

	err = decoder_prepare(d, len);
	if (err)
		return err;
	r.scratch = d->scratch;
	while (r.p < r.end) {
		struct hpack_field f;

		r.used = 0;
		err = read_field(d, &r, &first, &f);
		if (err)
			return err;
		if (!f.name)
			continue;
		first = false;
		list += f.name_len + f.value_len + HPACK_ENTRY_OVERHEAD;
		if (ret)
			continue;
		if (list > max_list)
			ret = HPACK_ERR_LIST_TOO_LARGE;
		else if (fn)
			ret = fn(ctx, f.name, f.name_len, f.value, f.value_len);
	}
	if (d->scratch_cap > HPACK_SCRATCH_KEEP + d->max_table) {
		free(d->scratch);
		d->scratch = NULL;
		d->scratch_cap = 0;
	}
	return ret;
}

/* ---- encoding ---- */

/* An integer with an n-bit prefix, flags in the first byte's other bits. */
static size_t put_int(uint8_t *out, size_t cap, uint8_t flags, int prefix_bits, uint32_t v)
{
	uint32_t mask = (1u << prefix_bits) - 1;
	size_t n = 0;

	if (cap < 1)
		return 0;
	if (v < mask) {
		out[0] = flags | (uint8_t)v;
		return 1;
	}
	out[n++] = flags | (uint8_t)mask;
	v -= mask;
	while (v >= 0x80) {
		if (n >= cap)
			return 0;
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	if (n >= cap)
		return 0;
	out[n++] = (uint8_t)v;
	return n;
}

static size_t put_string(uint8_t *out, size_t cap, const char *s, size_t len)
{
	size_t n;

	if (len > UINT32_MAX)
		return 0;
	n = put_int(out, cap, 0, 7, (uint32_t)len);
	if (!n || cap - n < len)
		return 0;
	memcpy(out + n, s, len);
	return n + len;
}

/* A literal without indexing: name by its static index, or written. */
static size_t put_literal(uint8_t *out, size_t cap, uint32_t name_index, const char *name,
			  size_t name_len, const char *value, size_t value_len)
{
	size_t n = put_int(out, cap, 0x00, 4, name_index), m;

	if (!n)
		return 0;
	if (!name_index) {
		m = put_string(out + n, cap - n, name, name_len);
		if (!m)
			return 0;
		n += m;
	}
	m = put_string(out + n, cap - n, value, value_len);
	return m ? n + m : 0;
}

size_t hpack_encode_status(uint8_t *out, size_t cap, int status)
{
	char digits[3];

	if (status < 100 || status > 999)
		return 0;
	for (uint32_t i = 8; i <= 14; i++)
		if (atoi(hpack_static[i - 1].value) == status)
			return put_int(out, cap, 0x80, 7, i);
	digits[0] = (char)('0' + status / 100);
	digits[1] = (char)('0' + status / 10 % 10);
	digits[2] = (char)('0' + status % 10);
	return put_literal(out, cap, 8, NULL, 0, digits, 3);
}

size_t hpack_encode_field(uint8_t *out, size_t cap, const char *name, size_t name_len,
			  const char *value, size_t value_len)
{
	uint32_t index = 0;

	for (uint32_t i = 0; i < HPACK_STATIC_COUNT && !index; i++)
		if (strlen(hpack_static[i].name) == name_len &&
		    !memcmp(hpack_static[i].name, name, name_len))
			index = i + 1;
	return put_literal(out, cap, index, name, name_len, value, value_len);
}
