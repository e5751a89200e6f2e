// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * HTTP/2 frames (RFC 9113 sections 4 and 6), no state: the 9-byte header,
 * DATA and HEADERS frames' padding and priority taken off, SETTINGS
 * applied with the RFC's checks, the control frames written whole.
 */
#include <string.h>
#include "h2_frame.h"

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
	return p + 4;
}

void h2_frame_header_read(const uint8_t *p, struct h2_frame_header *h)
{
	h->length = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	h->type = p[3];
	h->flags = p[4];
	h->stream = get32(p + 5) & 0x7fffffff;
}

size_t h2_frame_header_write(uint8_t *out, uint32_t length, uint8_t type, uint8_t flags,
			     uint32_t stream)
{
	out[0] = length >> 16;
	out[1] = length >> 8;
	out[2] = length;
	out[3] = type;
	out[4] = flags;
	put32(out + 5, stream & 0x7fffffff);
	return H2_FRAME_HEADER;
}

/* RFC 9113 6.1 and 6.2: a pad length at or past what is left is a
 * PROTOCOL_ERROR; a frame too short for its own Pad Length (and priority)
 * fields is one of FRAME_SIZE. */
int h2_frame_content(const struct h2_frame_header *h, const uint8_t *payload,
		     const uint8_t **content, size_t *content_len)
{
	size_t len = h->length, pos = 0, pad = 0;

	if (h->type != H2_DATA && h->type != H2_HEADERS)
		return H2_PROTOCOL_ERROR;
	if (h->flags & H2_FLAG_PADDED) {
		if (len < 1)
			return H2_FRAME_SIZE_ERROR;
		pad = payload[0];
		pos = 1;
	}
	if (h->type == H2_HEADERS && (h->flags & H2_FLAG_PRIORITY)) {
		if (len < pos + 5)
			return H2_FRAME_SIZE_ERROR;
		pos += 5;
	}
	if (pad > len - pos)
		return H2_PROTOCOL_ERROR;
	*content = payload + pos;
	*content_len = len - pos - pad;
	return 0;
}

void h2_settings_default(struct h2_settings *s)
{
	s->header_table_size = 4096;
	s->enable_push = 1;
	s->max_concurrent_streams = UINT32_MAX;
	s->initial_window_size = H2_DEFAULT_WINDOW;
	s->max_frame_size = H2_DEFAULT_MAX_FRAME;
	s->max_header_list_size = UINT32_MAX;
}

/* RFC 9113 6.5: a length not a multiple of 6 is a FRAME_SIZE_ERROR; 6.5.2:
 * ENABLE_PUSH other than 0 or 1 a PROTOCOL_ERROR, INITIAL_WINDOW_SIZE
 * past 2^31-1 a FLOW_CONTROL_ERROR, MAX_FRAME_SIZE outside 2^14..2^24-1 a
 * PROTOCOL_ERROR. A bad value leaves the settings before it applied. */
int h2_settings_apply(struct h2_settings *s, const uint8_t *payload, size_t len)
{
	if (len % 6)
		return H2_FRAME_SIZE_ERROR;
	for (size_t i = 0; i < len; i += 6) {
		uint16_t id = (uint16_t)(payload[i] << 8 | payload[i + 1]);
		uint32_t v = get32(payload + i + 2);

		switch (id) {
		case H2_SET_HEADER_TABLE_SIZE:
			s->header_table_size = v;
			break;
		case H2_SET_ENABLE_PUSH:
			if (v > 1)
				return H2_PROTOCOL_ERROR;
			s->enable_push = v;
			break;
		case H2_SET_MAX_CONCURRENT_STREAMS:
			s->max_concurrent_streams = v;
			break;
		case H2_SET_INITIAL_WINDOW_SIZE:
			if (v > H2_MAX_WINDOW)
				return H2_FLOW_CONTROL_ERROR;
			s->initial_window_size = v;
			break;
		case H2_SET_MAX_FRAME_SIZE:
			if (v < H2_DEFAULT_MAX_FRAME || v > H2_MAX_MAX_FRAME)
				return H2_PROTOCOL_ERROR;
			s->max_frame_size = v;
			break;
		case H2_SET_MAX_HEADER_LIST_SIZE:
			s->max_header_list_size = v;
			break;
		default:
			break;
		}
	}
	return 0;
}

size_t h2_settings_write(uint8_t *out, const uint16_t *ids, const uint32_t *values, size_t n)
{
	uint8_t *p = out + h2_frame_header_write(out, (uint32_t)(6 * n), H2_SETTINGS, 0, 0);

	for (size_t i = 0; i < n; i++) {
		*p++ = ids[i] >> 8;
		*p++ = (uint8_t)ids[i];
		p = put32(p, values[i]);
	}
	return (size_t)(p - out);
}

size_t h2_settings_ack_write(uint8_t *out)
{
	return h2_frame_header_write(out, 0, H2_SETTINGS, H2_FLAG_ACK, 0);
}

size_t h2_ping_write(uint8_t *out, const uint8_t opaque[8], bool ack)
{
	h2_frame_header_write(out, 8, H2_PING, ack ? H2_FLAG_ACK : 0, 0);
	memcpy(out + H2_FRAME_HEADER, opaque, 8);
	return H2_FRAME_HEADER + 8;
}

size_t h2_window_update_write(uint8_t *out, uint32_t stream, uint32_t increment)
{
	h2_frame_header_write(out, 4, H2_WINDOW_UPDATE, 0, stream);
	put32(out + H2_FRAME_HEADER, increment & 0x7fffffff);
	return H2_FRAME_HEADER + 4;
}

size_t h2_rst_stream_write(uint8_t *out, uint32_t stream, uint32_t error)
{
	h2_frame_header_write(out, 4, H2_RST_STREAM, 0, stream);
	put32(out + H2_FRAME_HEADER, error);
	return H2_FRAME_HEADER + 4;
}

size_t h2_goaway_write(uint8_t *out, uint32_t last_stream, uint32_t error)
{
	h2_frame_header_write(out, 8, H2_GOAWAY, 0, 0);
	put32(out + H2_FRAME_HEADER, last_stream & 0x7fffffff);
	put32(out + H2_FRAME_HEADER + 4, error);
	return H2_FRAME_HEADER + 8;
}
