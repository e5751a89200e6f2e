/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One HTTP/2 connection's state on the server side (RFC 9113), without
 * I/O: bytes in (h2_conn_feed), callbacks out, the bytes to send appended
 * to the connection's output (h2_conn_out). The gateway's own gRPC server
 * (grpc_h2.c) drives it; tests/h2_conn_test.c and tests/fuzz/fuzz_h2_conn.c
 * feed it bytes alone. Frames by h2_frame.h, header blocks by hpack.h.
 *
 * What it refuses, each with a GOAWAY and -EPROTO from h2_conn_feed unless
 * said: a bad preface, or a first frame other than SETTINGS; a malformed
 * request (h2_fields.h: RFC 9113 8.2, 8.3) or a stream depending on itself
 * (that stream RST_STREAM PROTOCOL_ERROR; a PRIORITY frame of an idle one:
 * the connection's); frames out of order or malformed (PROTOCOL_ERROR,
 * FRAME_SIZE_ERROR, COMPRESSION_ERROR); a header block (HEADERS and its
 * CONTINUATIONs) over max_header_list compressed bytes (ENHANCE_YOUR_CALM:
 * a CONTINUATION flood); a window pushed past 2^31-1 (FLOW_CONTROL_ERROR;
 * a stream's own: RST_STREAM); DATA past the window we gave; more streams
 * than max_streams at once, counting the calls its user still holds after
 * their stream ended (h2_conn_hold; that stream RST_STREAM REFUSED_STREAM);
 * more than H2_CALM_RESETS + max_streams streams a second reset by the
 * client, refused, or reset by us for a stream error the client caused, or
 * more than 4 x (those answered + H2_CALM_RESETS + max_streams) over the
 * connection's life (rapid reset, CVE-2023-44487; MadeYouReset,
 * CVE-2025-8671), or more than H2_CALM_FRAMES frames a second that do no
 * work (PING and its ACK, SETTINGS, PRIORITY, empty DATA, WINDOW_UPDATE or
 * RST_STREAM on a stream that is over): ENHANCE_YOUR_CALM. Memory: the
 * most streams open at once so far (at most max_streams, made as needed,
 * found by id in a hash table), one frame of max 16 KiB besides DATA, a header block of max_header_list, the
 * HPACK table; DATA goes straight to the stream's callback; the output
 * grows with control answers, which stop being read for
 * (h2_conn_want_read) while it is over max_out, and with answers' headers
 * and trailers; their DATA waits while it is over max_out.
 */
#ifndef COLOC_GATEWAY_H2_CONN_H
#define COLOC_GATEWAY_H2_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hpack.h"
#include "h2_fields.h"
#include "h2_frame.h"

#define H2_CALM_RESETS 200 /* streams reset or refused a second, past max_streams */
#define H2_CALM_FRAMES 1000 /* frames a second that do no work */
#define H2_CTL_MAX 16384 /* the largest frame other than DATA we take */

struct h2_conn_limits {
	uint32_t max_streams; /* SETTINGS_MAX_CONCURRENT_STREAMS */
	uint32_t stream_window; /* SETTINGS_INITIAL_WINDOW_SIZE, ours */
	uint32_t conn_window; /* the connection's, raised at start by WINDOW_UPDATE */
	uint32_t max_frame; /* SETTINGS_MAX_FRAME_SIZE, ours */
	uint32_t max_header_list; /* SETTINGS_MAX_HEADER_LIST_SIZE, ours */
	size_t max_out; /* output past which no more is read */
};

/* What a connection tells its user; st is the pointer open() returned for the stream. */
struct h2_conn_cb {
	/* A client's new stream: its pointer, or NULL to refuse it (REFUSED_STREAM). */
	void *(*open)(void *arg, uint32_t id);
	/* A field of its request header block, in order (hpack_field_fn's rules). */
	int (*field)(void *arg, void *st, const char *name, size_t name_len, const char *value,
		     size_t value_len);
	/* Its header block is whole: 0, or HPACK_ERR_LIST_TOO_LARGE, or field()'s nonzero. */
	void (*headers)(void *arg, void *st, int result);
	/* Content of its DATA frames, as it comes. */
	void (*data)(void *arg, void *st, const uint8_t *p, size_t n);
	/* The client closed its side (END_STREAM). */
	void (*end)(void *arg, void *st);
	/* The stream is over and st is never passed again: answered, or reset (error != 0). */
	void (*close)(void *arg, void *st, uint32_t error);
};

struct h2_stream; /* h2_streams.h's */

struct h2_conn {
	struct h2_conn_limits lim;
	const struct h2_conn_cb *cb;
	void *arg;
	struct hpack_decoder hpack;
	struct h2_settings peer;
	/* input */
	int state; /* h2_conn_impl.h's parser states */
	size_t preface_got;
	uint8_t fh[H2_FRAME_HEADER];
	size_t fh_got;
	struct h2_frame_header f;
	uint8_t *frame; /* H2_CTL_MAX bytes */
	size_t frame_got;
	size_t data_left, pad_left, skip_left;
	struct h2_stream *data_stream; /* the DATA frame's stream, NULL if dropped */
	bool data_end;
	uint8_t *hb; /* a header block being gathered */
	size_t hb_len;
	uint32_t hb_stream; /* its stream, 0 when none is */
	bool hb_end_stream, hb_new;
	bool hb_self_dep; /* its HEADERS made the stream depend on itself */
	struct h2_fields hb_fields; /* its fields as RFC 9113 8.2, 8.3 ask */
	bool settings_got; /* the client's first SETTINGS (its preface's end) */
	/* streams */
	struct h2_stream **table; /* the open streams by id (h2_streams.c) */
	uint32_t table_bits, table_salt;
	struct h2_stream *all_streams, *free_streams; /* every one made; those over */
	uint32_t nr_streams;
	uint32_t held; /* calls whose stream is over but whose work goes on (h2_conn_hold) */
	uint32_t last_peer_id; /* the highest stream the client opened */
	int64_t recv_window, recv_used; /* the connection's, ours */
	int64_t send_window; /* the connection's, the client's */
	/* floods: counts in the current second */
	uint64_t calm_second;
	uint32_t calm_resets, calm_frames;
	uint64_t resets_total, answered_total; /* over the connection's life */
	/* output */
	uint8_t *out;
	size_t out_len, out_off, out_cap;
	bool goaway_sent, dead;
	uint32_t goaway_error, goaway_last;
	uint64_t now_ns;
};

/* Our preface (SETTINGS, the connection's WINDOW_UPDATE) queued; 0 or -ENOMEM. */
int h2_conn_init(struct h2_conn *c, const struct h2_conn_limits *lim, const struct h2_conn_cb *cb,
		 void *arg);
void h2_conn_free(struct h2_conn *c); /* closes each open stream (H2_CANCEL) */
/*
 * Takes n bytes from the client at now_ns: 0, or -EPROTO when the
 * connection is over (a GOAWAY queued: send the output, then close).
 */
int h2_conn_feed(struct h2_conn *c, const uint8_t *p, size_t n, uint64_t now_ns);
/*
 * Where the next bytes are a DATA frame's content for a stream and none are
 * held: how many (at most max) with the stream's pointer in *st; else 0.
 * The caller may read them itself straight to where st keeps them and say
 * so with h2_conn_data_placed (instead of feeding them).
 */
size_t h2_conn_data_next(struct h2_conn *c, void **st, size_t max);
int h2_conn_data_placed(struct h2_conn *c, size_t n, uint64_t now_ns);
/*
 * Answers stream id: a header block (HPACK), body bytes (taken over and
 * freed), a trailer block; body and trailers may be empty. The DATA waits
 * for the client's windows. -ENOENT (body freed) when the stream is gone.
 */
int h2_conn_respond(struct h2_conn *c, uint32_t id, const uint8_t *hdr, size_t hdr_len,
		    uint8_t *body, size_t body_len, const uint8_t *trailers, size_t trailers_len);
/*
 * Stream id reset (RST_STREAM CANCEL) and over, its answer dropped; -ENOENT
 * when gone. It does not count against the client's resets (H2_CALM_RESETS).
 */
int h2_conn_cancel(struct h2_conn *c, uint32_t id);
/*
 * A call whose stream is over (closed with an error while its user still
 * works on it) held (true) or let go: held ones count against max_streams
 * as open streams do, so resets do not free slots for more work.
 */
static inline void h2_conn_hold(struct h2_conn *c, bool hold)
{
	c->held += hold ? 1 : -1u;
}
/* GOAWAY (error, the last stream opened): streams after it are refused; 0 or -ENOMEM. */
void h2_conn_goaway(struct h2_conn *c, uint32_t error);
/*
 * Bytes to send, and how many were sent: once the output is under max_out
 * again, the answers' DATA that waited for it is appended (streams may close).
 */
static inline size_t h2_conn_out(const struct h2_conn *c, const uint8_t **p)
{
	*p = c->out + c->out_off;
	return c->out_len - c->out_off;
}
void h2_conn_out_done(struct h2_conn *c, size_t n);
/* Whether more input should be read: alive and its output under max_out. */
static inline bool h2_conn_want_read(const struct h2_conn *c)
{
	return !c->dead && c->out_len - c->out_off < c->lim.max_out;
}

#endif /* COLOC_GATEWAY_H2_CONN_H */
