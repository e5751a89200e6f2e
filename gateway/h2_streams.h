/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * An HTTP/2 connection's streams (h2_conn_impl.h's, nothing else includes it):
 * what one holds, and the open ones found by id. A table of 2^table_bits,
 * open addressing, at most half full, salted (a client picks its stream
 * ids); a stream's struct is made when more streams are open than ever
 * before and kept on the free list when it is over, so nothing is
 * allocated per max_streams up front and a pointer to a stream over stays
 * valid (gone) until h2_streams_free.
 */
#ifndef COLOC_GATEWAY_H2_STREAMS_H
#define COLOC_GATEWAY_H2_STREAMS_H

#include "h2_conn.h"

struct h2_stream {
	struct h2_stream *all_next; /* every stream made, for h2_conn_free */
	struct h2_stream *free_next; /* over and free for the next */
	uint32_t id;
	void *st;
	bool gone, remote_closed, local_closed, answering;
	bool borrowed; /* hdr and trl are the caller's (h2_conn_respond sent them whole) */
	int64_t recv_window, recv_used, send_window;
	/* the answer not yet in the output: stage 0 headers, 1 body, 2 trailers, 3 sent */
	int stage;
	uint8_t *hdr, *body, *trl;
	size_t hdr_len, body_len, body_off, trl_len;
};

/* Open stream id, or NULL. */
struct h2_stream *h2_streams_find(struct h2_conn *c, uint32_t id);
/* A free slot for stream id (a client's new stream), or NULL when max_streams are open. */
struct h2_stream *h2_streams_new(struct h2_conn *c, uint32_t id);
/* s no longer open: out of the table, gone, its struct free for the next. */
void h2_streams_release(struct h2_conn *c, struct h2_stream *s);
/* Every stream's struct and the table freed (the open ones told closed before). */
void h2_streams_free(struct h2_conn *c);

#endif /* COLOC_GATEWAY_H2_STREAMS_H */
