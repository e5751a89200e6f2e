// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A walk over protobuf's wire format (onnx_scan.h): varint keys, then a
 * varint, a fixed 32- or 64-bit value, or a length-delimited field, which
 * is descended into only along onnx.proto's paths to a TensorProto
 * (ModelProto.graph 7; GraphProto.node 1, initializer 5,
 * sparse_initializer 15; NodeProto.attribute 5; AttributeProto.t 5, g 6,
 * tensors 10, graphs 11; SparseTensorProto.values 1, indices 2) and, in a
 * TensorProto, to its external_data 13 (StringStringEntryProto key 1,
 * value 2). Bounded depth, every length checked against the buffer.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "onnx_scan.h"

#define SCAN_MAX_DEPTH 16

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
	/* the entry being read: its key and value */
	const uint8_t *key, *value;
	size_t key_len, value_len;
};

static int scan_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -EINVAL;
		*v |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80))
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

static int scan_add(struct scan *s)
{
	if (!s->key || s->key_len != 8 || memcmp(s->key, "location", 8) || !s->value)
		return 0;
	if (!s->value_len || s->value_len >= ONNX_SCAN_LOCATION_LEN ||
	    memchr(s->value, '\0', s->value_len))
		return -EINVAL;
	for (int i = 0; i < s->nr; i++)
		if (strlen(s->locs[i]) == s->value_len &&
		    !memcmp(s->locs[i], s->value, s->value_len))
			return 0;
	if (s->nr >= s->max)
		return -E2BIG;
	memcpy(s->locs[s->nr], s->value, s->value_len);
	s->locs[s->nr++][s->value_len] = '\0';
	return 0;
}

static int scan_msg(struct scan *s, const uint8_t *p, const uint8_t *end, enum scan_msg kind,
		    int depth)
{
	int ret;

	if (depth > SCAN_MAX_DEPTH)
		return -EINVAL;
	if (kind == SCAN_ENTRY)
		s->key = s->value = NULL;
	while (p < end) {
		uint64_t key, v;
		int child;

		if (scan_varint(&p, end, &key))
			return -EINVAL;
		switch (key & 7) {
		case 0:
			if (scan_varint(&p, end, &v))
				return -EINVAL;
			break;
		case 1:
		case 5:
			if ((size_t)(end - p) < ((key & 7) == 1 ? 8u : 4u))
				return -EINVAL;
			p += (key & 7) == 1 ? 8 : 4;
			break;
		case 2:
			if (scan_varint(&p, end, &v) || v > (uint64_t)(end - p))
				return -EINVAL;
			if (kind == SCAN_ENTRY && (key >> 3) == 1) {
				s->key = p;
				s->key_len = (size_t)v;
			} else if (kind == SCAN_ENTRY && (key >> 3) == 2) {
				s->value = p;
				s->value_len = (size_t)v;
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
	struct scan s = { .locs = locs, .max = max };
	int ret = scan_msg(&s, buf, (const uint8_t *)buf + len, SCAN_MODEL, 0);

	return ret ? ret : s.nr;
}
