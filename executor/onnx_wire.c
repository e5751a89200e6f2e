// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A pass over an ONNX file's protobuf wire format before protobuf-c decodes
 * it, refusing messages nested deeper than ONNX_MAX_NESTING. ONNX messages
 * nest without end (a GraphProto in an AttributeProto in a NodeProto in a
 * GraphProto, a TypeProto's sequence of sequences), protobuf-c recurses once
 * per level and has no limit of its own, so a small file could exhaust the
 * stack. The walk follows the schema (protobuf-c's descriptors say which
 * field holds a message) with its own bounded stack: it recurses nowhere.
 */
#include <errno.h>
#include <stdint.h>

#include "onnx_internal.h"

struct wire_level {
	const ProtobufCMessageDescriptor *desc;
	size_t end; /* where this message's bytes end */
};

static bool read_varint(const uint8_t *buf, size_t end, size_t *pos, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*pos >= end)
			return false;
		b = buf[(*pos)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static bool skip(size_t end, size_t *pos, uint64_t n)
{
	if (n > end - *pos)
		return false;
	*pos += n;
	return true;
}

int onnx_wire_check_nesting(const ProtobufCMessageDescriptor *desc, const void *data, size_t len,
			    int max_depth)
{
	struct wire_level stack[ONNX_MAX_NESTING + 1];
	const uint8_t *buf = data;
	size_t pos = 0;
	int depth = 0;

	if (max_depth < 0 || max_depth > ONNX_MAX_NESTING)
		return -EINVAL;
	stack[0] = (struct wire_level){ desc, len };
	for (;;) {
		const ProtobufCFieldDescriptor *f;
		size_t end;
		uint64_t key, v;

		while (depth > 0 && pos == stack[depth].end)
			depth--;
		end = stack[depth].end;
		if (pos == end)
			return 0;
		if (!read_varint(buf, end, &pos, &key))
			return -EINVAL;
		switch (key & 7) {
		case 0: /* varint */
			if (!read_varint(buf, end, &pos, &v))
				return -EINVAL;
			break;
		case 1: /* 64-bit */
			if (!skip(end, &pos, 8))
				return -EINVAL;
			break;
		case 5: /* 32-bit */
			if (!skip(end, &pos, 4))
				return -EINVAL;
			break;
		case 2: /* length-delimited: a message, or bytes to skip */
			if (!read_varint(buf, end, &pos, &v) || v > end - pos)
				return -EINVAL;
			f = key >> 3 <= UINT32_MAX ?
				    protobuf_c_message_descriptor_get_field(stack[depth].desc,
									    (unsigned)(key >> 3)) :
				    NULL;
			if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE) {
				pos += v;
				break;
			}
			if (depth == max_depth)
				return -ELOOP;
			stack[++depth] = (struct wire_level){ f->descriptor, pos + v };
			break;
		default: /* groups: neither ONNX nor protobuf-c has them */
			return -EINVAL;
		}
	}
}
