/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * HTTP/2 frames (RFC 9113 sections 4 and 6) for the gateway's own gRPC
 * server and the benchmark's client: the frame header read and written, a
 * DATA or HEADERS frame's padding taken off, SETTINGS applied, and the
 * control frames written whole. No state: the connection's is its user's.
 */
#ifndef COLOC_GATEWAY_H2_FRAME_H
#define COLOC_GATEWAY_H2_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" /* 24 bytes */
#define H2_FRAME_HEADER 9
#define H2_DEFAULT_MAX_FRAME 16384
#define H2_MAX_MAX_FRAME 16777215 /* 2^24 - 1, SETTINGS_MAX_FRAME_SIZE's ceiling */
#define H2_DEFAULT_WINDOW 65535
#define H2_MAX_WINDOW 0x7fffffff

enum {
	H2_DATA,
	H2_HEADERS,
	H2_PRIORITY,
	H2_RST_STREAM,
	H2_SETTINGS,
	H2_PUSH_PROMISE,
	H2_PING,
	H2_GOAWAY,
	H2_WINDOW_UPDATE,
	H2_CONTINUATION
};
enum {
	H2_FLAG_END_STREAM = 0x1,
	H2_FLAG_ACK = 0x1,
	H2_FLAG_END_HEADERS = 0x4,
	H2_FLAG_PADDED = 0x8,
	H2_FLAG_PRIORITY = 0x20
};
enum {
	H2_NO_ERROR,
	H2_PROTOCOL_ERROR,
	H2_INTERNAL_ERROR,
	H2_FLOW_CONTROL_ERROR,
	H2_SETTINGS_TIMEOUT,
	H2_STREAM_CLOSED,
	H2_FRAME_SIZE_ERROR,
	H2_REFUSED_STREAM,
	H2_CANCEL,
	H2_COMPRESSION_ERROR,
	H2_CONNECT_ERROR,
	H2_ENHANCE_YOUR_CALM,
	H2_INADEQUATE_SECURITY,
	H2_HTTP_1_1_REQUIRED
};
enum {
	H2_SET_HEADER_TABLE_SIZE = 1,
	H2_SET_ENABLE_PUSH,
	H2_SET_MAX_CONCURRENT_STREAMS,
	H2_SET_INITIAL_WINDOW_SIZE,
	H2_SET_MAX_FRAME_SIZE,
	H2_SET_MAX_HEADER_LIST_SIZE
};

struct h2_frame_header {
	uint32_t length;
	uint8_t type, flags;
	uint32_t stream; /* R bit cleared */
};

void h2_frame_header_read(const uint8_t *p, struct h2_frame_header *h);
size_t h2_frame_header_write(uint8_t *out, uint32_t length, uint8_t type, uint8_t flags,
			     uint32_t stream); /* 9 */

/* A DATA or HEADERS frame's content with its padding (and HEADERS' priority fields) taken off:
 * 0, or H2_PROTOCOL_ERROR / H2_FRAME_SIZE_ERROR as RFC 9113 says. payload holds h->length
 * bytes. */
int h2_frame_content(const struct h2_frame_header *h, const uint8_t *payload,
		     const uint8_t **content, size_t *content_len);

struct h2_settings {
	uint32_t header_table_size, enable_push, max_concurrent_streams, initial_window_size,
		max_frame_size, max_header_list_size;
};
/* RFC 9113 6.5.2's initial values (no limit: UINT32_MAX). */
void h2_settings_default(struct h2_settings *s);
/* A SETTINGS frame's payload applied in order: 0 or the RFC's error for a bad value or length;
 * unknown identifiers ignored. */
int h2_settings_apply(struct h2_settings *s, const uint8_t *payload, size_t len);

/* Whole frames written at out (header included); each returns its length. */
size_t h2_settings_write(uint8_t *out, const uint16_t *ids, const uint32_t *values, size_t n);
size_t h2_settings_ack_write(uint8_t *out);
size_t h2_ping_write(uint8_t *out, const uint8_t opaque[8], bool ack);
size_t h2_window_update_write(uint8_t *out, uint32_t stream, uint32_t increment);
size_t h2_rst_stream_write(uint8_t *out, uint32_t stream, uint32_t error);
size_t h2_goaway_write(uint8_t *out, uint32_t last_stream, uint32_t error); /* no debug data */

#endif /* COLOC_GATEWAY_H2_FRAME_H */
