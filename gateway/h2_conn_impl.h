/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * An HTTP/2 connection's insides (h2_conn.h), shared by its parts:
 * h2_conn.c (the input parsed frame header by frame header, a connection
 * made and freed), h2_conn_data.c (DATA frames and the windows we give),
 * h2_conn_frames.c (the other frames, header blocks among them),
 * h2_conn_answer.c (streams answered, reset or cancelled, and the client's
 * resets counted) and h2_conn_out.c (the output, GOAWAY). Nothing else
 * includes it.
 */
#ifndef COLOC_GATEWAY_H2_CONN_IMPL_H
#define COLOC_GATEWAY_H2_CONN_IMPL_H

#include "h2_streams.h"

/* the input parser's states (h2_conn.state) */
enum { P_PREFACE, P_HEAD, P_FRAME, P_DATA_PAD, P_DATA, P_SKIP };

#define H2_SECOND 1000000000ull

/* h2_conn_out.c: n more bytes of room at the output's end, or NULL out of memory. */
uint8_t *h2c_out_room(struct h2_conn *c, size_t n);
bool h2c_out_frame(struct h2_conn *c, uint8_t type, uint8_t flags, uint32_t stream, const void *p,
		   size_t n);
/* A frame h2_frame.h's write (RST_STREAM, WINDOW_UPDATE, GOAWAY) makes of a and b, appended. */
void h2c_out_small(struct h2_conn *c, size_t (*write)(uint8_t *, uint32_t, uint32_t), uint32_t a,
		   uint32_t b);
int h2c_conn_error(struct h2_conn *c, uint32_t error);

/* h2_conn_answer.c */
void h2c_stream_done(struct h2_conn *c, struct h2_stream *s, uint32_t error);
bool h2c_calm_count(struct h2_conn *c, bool reset);
void h2c_stream_reset(struct h2_conn *c, struct h2_stream *s, uint32_t error);
void h2c_stream_flush(struct h2_conn *c, struct h2_stream *s);
/* Each stream's answer flushed as far as the connection's window goes. */
void h2c_flush_all(struct h2_conn *c);

/* h2_conn_data.c: the DATA frame being read (c->f) */
int h2c_data_frame_begin(struct h2_conn *c);
/* Its stream while its bytes still go to it, else NULL. */
struct h2_stream *h2c_data_stream(struct h2_conn *c);
void h2c_data_take(struct h2_conn *c, const uint8_t *p, size_t n);
void h2c_data_frame_end(struct h2_conn *c);

/* h2_conn_frames.c */
int h2c_frame_act(struct h2_conn *c);

#endif /* COLOC_GATEWAY_H2_CONN_IMPL_H */
