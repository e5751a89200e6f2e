// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A walk over protobuf's wire format (onnx_scan.h): varint keys, then a
 * varint, a fixed 32- or 64-bit value, or a length-delimited field, which
 * is descended into only along onnx.proto's paths to a TensorProto
 * (ModelProto.graph 7; GraphProto.node 1, initializer 5,
 * sparse_initializer 15; NodeProto.attribute 5; AttributeProto.t 5, g 6,
 * tensors 10, graphs 11; SparseTensorProto.values 1, indices 2) and, in a
 * TensorProto, to its external_data 13 (StringStringEntryProto key 1,
 * value 2). Bounded depth, every length checked against the model's size.
 * The walk goes by offsets: over a buffer, or over a file read through a
 * window of SCAN_WINDOW bytes with pread (never mapped: a file truncated
 * while mapped is a SIGBUS, docs/gateway.md), the fields it skips unread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "onnx_scan.h"

#define SCAN_MAX_DEPTH 16
#define SCAN_WINDOW 65536

enum scan_msg {
	SCAN_MODEL,
	SCAN_GRAPH,
	SCAN_NODE,
	SCAN_ATTR,
	SCAN_SPARSE,
	SCAN_TENSOR,
	SCAN_ENTRY
};

struct scan {
	char (*locs)[ONNX_SCAN_LOCATION_LEN];
	int max, nr;
	int fd; /* -1: the whole model is in win */
	uint64_t size; /* the model's bytes */
	const uint8_t *win; /* the bytes at win_off.. held now */
	uint64_t win_off, win_len;
	/* the entry being read: where its key and value are (len ~0: none) */
	uint64_t key, value, key_len, value_len;
	uint8_t *buf; /* SCAN_WINDOW bytes, with fd */
};

/* The byte at off (below s->size): 0, -ENODATA (the file shorter than its size), -errno. */
static int scan_byte(struct scan *s, uint64_t off, uint8_t *b)
{
	if (off < s->win_off || off - s->win_off >= s->win_len) {
		uint64_t want = s->size - off < SCAN_WINDOW ? s->size - off : SCAN_WINDOW;
		ssize_t n;

		if (s->fd < 0)
			return -EINVAL;
		do
			n = pread(s->fd, s->buf, (size_t)want, (off_t)off);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return -errno;
		if (!n)
			return -ENODATA;
		s->win = s->buf;
		s->win_off = off;
		s->win_len = (uint64_t)n;
	}
	*b = s->win[off - s->win_off];
	return 0;
}

/* len bytes at off into out. */
static int scan_copy(struct scan *s, uint64_t off, uint64_t len, uint8_t *out)
{
	for (uint64_t i = 0; i < len; i++) {
		int r = scan_byte(s, off + i, &out[i]);

		if (r)
			return r;
	}
	return 0;
}

static int scan_varint(struct scan *s, uint64_t *p, uint64_t end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;
		int r;

		if (*p >= end)
			return -EINVAL;
		r = scan_byte(s, (*p)++, &b);
		if (r)
			return r;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -EINVAL;
}

/* The kind of message field f of a kind holds, or -1 when the walk does not go there. */
static int scan_child(enum scan_msg kind, uint64_t f)
{
	switch (kind) {
	case SCAN_MODEL:
		return f == 7 ? SCAN_GRAPH : -1;
	case SCAN_GRAPH:
		return f == 1 ? SCAN_NODE : f == 5 ? SCAN_TENSOR : f == 15 ? SCAN_SPARSE : -1;
	case SCAN_NODE:
		return f == 5 ? SCAN_ATTR : -1;
	case SCAN_ATTR:
		return f == 5 || f == 10 ? SCAN_TENSOR : f == 6 || f == 11 ? SCAN_GRAPH : -1;
	case SCAN_SPARSE:
		return f == 1 || f == 2 ? SCAN_TENSOR : -1;
	case SCAN_TENSOR:
		return f == 13 ? SCAN_ENTRY : -1;
	default:
		return -1;
	}
}

#define SCAN_NONE UINT64_MAX

static int scan_add(struct scan *s)
{
	uint8_t key[8], value[ONNX_SCAN_LOCATION_LEN];
	int r;

	if (s->key_len != 8 || s->value_len == SCAN_NONE)
		return 0;
	r = scan_copy(s, s->key, 8, key);
	if (r || memcmp(key, "location", 8))
		return r;
	if (!s->value_len || s->value_len >= ONNX_SCAN_LOCATION_LEN)
		return -EINVAL;
	r = scan_copy(s, s->value, s->value_len, value);
	if (r)
		return r;
	if (memchr(value, '\0', s->value_len))
		return -EINVAL;
	for (int i = 0; i < s->nr; i++)
		if (strlen(s->locs[i]) == s->value_len && !memcmp(s->locs[i], value, s->value_len))
			return 0;
	if (s->nr >= s->max)
		return -E2BIG;
	memcpy(s->locs[s->nr], value, s->value_len);
	s->locs[s->nr++][s->value_len] = '\0';
	return 0;
}

static int scan_msg(struct scan *s, uint64_t p, uint64_t end, enum scan_msg kind, int depth)
{
	int ret;

	if (depth > SCAN_MAX_DEPTH)
		return -EINVAL;
	if (kind == SCAN_ENTRY)
		s->key_len = s->value_len = SCAN_NONE;
	while (p < end) {
		uint64_t key, v;
		int child;

		ret = scan_varint(s, &p, end, &key);
		if (ret)
			return ret;
		switch (key & 7) {
		case 0:
			ret = scan_varint(s, &p, end, &v);
			if (ret)
				return ret;
			break;
		case 1:
		case 5:
			if (end - p < ((key & 7) == 1 ? 8u : 4u))
				return -EINVAL;
			p += (key & 7) == 1 ? 8 : 4;
			break;
		case 2:
			ret = scan_varint(s, &p, end, &v);
			if (ret)
				return ret;
			if (v > end - p)
				return -EINVAL;
			if (kind == SCAN_ENTRY && (key >> 3) == 1) {
				s->key = p;
				s->key_len = v;
			} else if (kind == SCAN_ENTRY && (key >> 3) == 2) {
				s->value = p;
				s->value_len = v;
			} else if ((child = scan_child(kind, key >> 3)) >= 0) {
				ret = scan_msg(s, p, p + v, (enum scan_msg)child, depth + 1);
				if (ret)
					return ret;
			}
			p += v;
			break;
		default:
			return -EINVAL; /* groups: not in onnx.proto */
		}
	}
	return kind == SCAN_ENTRY ? scan_add(s) : 0;
}

int onnx_scan_locations(const void *buf, size_t len, char (*locs)[ONNX_SCAN_LOCATION_LEN], int max)
{
	struct scan s = {
		.locs = locs, .max = max, .fd = -1, .size = len, .win = buf, .win_len = len
	};
	int ret = scan_msg(&s, 0, len, SCAN_MODEL, 0);

	return ret ? ret : s.nr;
}

int onnx_scan_locations_fd(int fd, uint64_t size, char (*locs)[ONNX_SCAN_LOCATION_LEN], int max)
{
	struct scan s = { .locs = locs, .max = max, .fd = fd, .size = size };
	uint8_t *buf = malloc(SCAN_WINDOW);
	int ret;

	if (!buf)
		return -ENOMEM;
	s.buf = buf;
	ret = scan_msg(&s, 0, size, SCAN_MODEL, 0);
	free(buf);
	return ret ? ret : s.nr;
}
