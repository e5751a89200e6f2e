// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc/kserve.h's raw gRPC client (kserve_h2_*): KServe v2 ModelInfer over
 * one HTTP/2 connection of its own (cleartext, prior knowledge), no gRPC
 * library, so that a tool measures the gateway and not a client library.
 * One TCP connection (TCP_NODELAY), the preface and our SETTINGS (no push,
 * the largest stream window, the connection's window opened as far); each
 * call one stream: HEADERS of fields encoded once, the message in DATA
 * frames of the peer's largest size as its windows allow; many calls in
 * flight (no more than the server's SETTINGS_MAX_CONCURRENT_STREAMS: a send
 * past it waits, reading, for one to end), each answer kept by its stream
 * until its trailers' END_STREAM and taken in the order they ended. Frames through gateway/h2_frame.c,
 * header blocks through the gateway's own HPACK decoder (gateway/hpack.c).
 * The model's input name and shape from ModelMetadata on the same
 * connection, asked once per model; the request is packed once and sent
 * again while the input's bytes are the same.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "coloc/kserve.h"
#include "grpc_service.pb-c.h"
#include "h2_frame.h"
#include "hpack.h"
#include "client_error.h"
#include "kserve_tcp.h"

#define KH_METHOD(name) "/inference.GRPCInferenceService/" name
#define KH_MAX_DIMS 8
#define KH_READ_BUF (4 * H2_DEFAULT_MAX_FRAME)
#define KH_WINDOW_REFILL (1u << 30) /* the connection's window given back past this */
#define KH_MESSAGE_MAX (256u << 20)

struct kh_stream {
	uint32_t id; /* 0: free */
	uint64_t tag;
	int64_t send_window;
	bool ended, reset, end_after_headers, internal;
	uint32_t reset_code;
	int http_status, grpc_status;
	char grpc_message[256];
	uint8_t *msg; /* the DATA frames' content */
	size_t msg_len, msg_cap;
	uint64_t done_seq; /* the order it ended in; 0 while open */
};

struct kserve_h2 {
	int fd;
	char authority[128];
	struct h2_settings peer;
	int64_t conn_send_window;
	uint64_t recv_unacked;
	uint32_t next_stream;
	struct hpack_decoder dec;
	uint8_t rbuf[KH_READ_BUF];
	size_t rpos, rlen;
	uint8_t *block; /* a header block being assembled from CONTINUATIONs */
	size_t block_len, block_cap;
	uint32_t block_stream;
	struct kh_stream *streams; /* a table that grows: held by id, never by pointer */
	size_t nr_streams;
	uint64_t done_seq;
	char model[64], input[64];
	int64_t shape[KH_MAX_DIMS];
	size_t nr_dims, in_bytes;
	uint8_t *req; /* the 5-byte gRPC prefix and the packed ModelInferRequest */
	size_t req_len;
	bool broken;
	struct client_error err;
};

const char *kserve_h2_error(struct kserve_h2 *g)
{
	return g->err.msg;
}

int kserve_h2_fd(struct kserve_h2 *g)
{
	return g->fd;
}

static int kh_sendv(struct kserve_h2 *g, struct iovec *iov, int n)
{
	while (n) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg(g->fd, &mh, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return client_fail(&g->err, -errno, "send: %s", strerror(errno));
		while (n && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static int kh_send(struct kserve_h2 *g, const void *p, size_t len)
{
	struct iovec iov = { (void *)p, len };

	return kh_sendv(g, &iov, 1);
}

static int kh_append(uint8_t **buf, size_t *len, size_t *cap, const uint8_t *p, size_t n)
{
	if (*len + n > KH_MESSAGE_MAX)
		return -EMSGSIZE;
	if (*len + n > *cap) {
		size_t c = *cap ? *cap : 4096;
		uint8_t *b;

		while (c < *len + n)
			c *= 2;
		b = realloc(*buf, c);
		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = c;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	return 0;
}

static uint32_t kh_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The open stream id, or NULL (an answer to a stream not ours, or one already over). */
static struct kh_stream *kh_stream(struct kserve_h2 *g, uint32_t id)
{
	for (size_t i = 0; id && i < g->nr_streams; i++)
		if (g->streams[i].id == id && !g->streams[i].ended)
			return &g->streams[i];
	return NULL;
}

/* A free stream slot, the table grown if need be; NULL out of memory. */
static struct kh_stream *kh_stream_new(struct kserve_h2 *g)
{
	size_t old = g->nr_streams, n = old ? old * 2 : 8;
	struct kh_stream *s;

	for (size_t i = 0; i < old; i++)
		if (!g->streams[i].id)
			return &g->streams[i];
	s = realloc(g->streams, n * sizeof(*s));
	if (!s)
		return NULL;
	memset(s + old, 0, (n - old) * sizeof(*s));
	g->streams = s;
	g->nr_streams = n;
	return &s[old];
}

static void kh_end(struct kserve_h2 *g, struct kh_stream *s)
{
	s->ended = true;
	s->done_seq = ++g->done_seq;
}

/* The stream id whether open or ended, or NULL. */
static struct kh_stream *kh_stream_any(struct kserve_h2 *g, uint32_t id)
{
	for (size_t i = 0; id && i < g->nr_streams; i++)
		if (g->streams[i].id == id)
			return &g->streams[i];
	return NULL;
}

static int kh_field(void *ctx, const char *name, size_t name_len, const char *value,
		    size_t value_len)
{
	struct kh_stream *st = ctx;
	char num[16];

	if (value_len < sizeof(num)) {
		memcpy(num, value, value_len);
		num[value_len] = 0;
	} else {
		num[0] = 0;
	}
	if (name_len == 7 && !memcmp(name, ":status", 7))
		st->http_status = atoi(num);
	else if (name_len == 11 && !memcmp(name, "grpc-status", 11))
		st->grpc_status = num[0] ? atoi(num) : 2;
	else if (name_len == 12 && !memcmp(name, "grpc-message", 12))
		snprintf(st->grpc_message, sizeof(st->grpc_message), "%.*s", (int)value_len, value);
	return 0;
}

/* A header block fragment; decoded at END_HEADERS (any stream's: the table is shared). */
static int kh_headers(struct kserve_h2 *g, const struct h2_frame_header *h, const uint8_t *frag,
		      size_t len)
{
	struct kh_stream *st;
	int r;

	if (kh_append(&g->block, &g->block_len, &g->block_cap, frag, len))
		return client_fail(&g->err, -ENOMEM, "a header block too large");
	if (!(h->flags & H2_FLAG_END_HEADERS))
		return 0;
	st = kh_stream(g, g->block_stream);
	r = hpack_decode(&g->dec, g->block, g->block_len, 1 << 20, st ? kh_field : NULL, st);
	g->block_len = 0;
	if (r == HPACK_ERR_COMPRESSION || r == HPACK_ERR_NO_MEMORY)
		return client_fail(&g->err, -EPROTO,
				   "the server's header block does not decode (%d)", r);
	if (st && st->end_after_headers)
		kh_end(g, st);
	return 0;
}

static int kh_settings(struct kserve_h2 *g, const struct h2_frame_header *h, const uint8_t *p)
{
	uint32_t old = g->peer.initial_window_size;
	uint8_t ack[H2_FRAME_HEADER];
	int r;

	if (h->flags & H2_FLAG_ACK)
		return 0;
	r = h2_settings_apply(&g->peer, p, h->length);
	if (r)
		return client_fail(&g->err, -EPROTO, "the server's SETTINGS are refused (error %d)",
				   r);
	for (size_t i = 0; i < g->nr_streams; i++)
		if (g->streams[i].id)
			g->streams[i].send_window += (int64_t)g->peer.initial_window_size - old;
	return kh_send(g, ack, h2_settings_ack_write(ack));
}

/* One frame acted on (header h, payload p). */
static int kh_frame(struct kserve_h2 *g, const struct h2_frame_header *h, const uint8_t *p)
{
	struct kh_stream *st = kh_stream(g, h->stream);
	const uint8_t *c;
	uint8_t out[32];
	size_t cl;

	switch (h->type) {
	case H2_DATA:
		g->recv_unacked += h->length;
		if (h2_frame_content(h, p, &c, &cl))
			return client_fail(&g->err, -EPROTO, "a DATA frame's padding is wrong");
		if (st && kh_append(&st->msg, &st->msg_len, &st->msg_cap, c, cl))
			return client_fail(&g->err, -EMSGSIZE, "an answer over 256 MiB");
		if (st && (h->flags & H2_FLAG_END_STREAM))
			kh_end(g, st);
		return 0;
	case H2_HEADERS:
		if (h2_frame_content(h, p, &c, &cl))
			return client_fail(&g->err, -EPROTO, "a HEADERS frame's padding is wrong");
		if (st)
			st->end_after_headers = h->flags & H2_FLAG_END_STREAM;
		g->block_stream = h->stream;
		return kh_headers(g, h, c, cl);
	case H2_CONTINUATION:
		return kh_headers(g, h, p, h->length);
	case H2_SETTINGS:
		return kh_settings(g, h, p);
	case H2_PING:
		if (h->length != 8)
			return client_fail(&g->err, -EPROTO, "a PING of %u bytes", h->length);
		return (h->flags & H2_FLAG_ACK) ? 0 : kh_send(g, out, h2_ping_write(out, p, true));
	case H2_WINDOW_UPDATE:
		if (h->length != 4)
			return client_fail(&g->err, -EPROTO, "a WINDOW_UPDATE of %u bytes",
					   h->length);
		if (!h->stream)
			g->conn_send_window += kh_get32(p) & 0x7fffffff;
		else if (st)
			st->send_window += kh_get32(p) & 0x7fffffff;
		return 0;
	case H2_RST_STREAM:
		if (st && h->length == 4) {
			st->reset = true;
			st->reset_code = kh_get32(p);
			kh_end(g, st);
		}
		return 0;
	case H2_GOAWAY:
		return client_fail(&g->err, -ECONNRESET, "the server sent GOAWAY (error %u)",
				   h->length >= 8 ? kh_get32(p + 4) : 0);
	case H2_PUSH_PROMISE:
		return client_fail(&g->err, -EPROTO, "a PUSH_PROMISE, with push disabled");
	default:
		return 0; /* PRIORITY, unknown types */
	}
}

/* Every whole frame in rbuf acted on. */
static int kh_frames(struct kserve_h2 *g)
{
	while (g->rlen >= H2_FRAME_HEADER) {
		struct h2_frame_header h;
		int r;

		h2_frame_header_read(g->rbuf + g->rpos, &h);
		if (h.length > H2_DEFAULT_MAX_FRAME)
			return client_fail(&g->err, -EPROTO, "a frame of %u bytes, over our 16384",
					   h.length);
		if (g->rlen < H2_FRAME_HEADER + h.length)
			break;
		g->rpos += H2_FRAME_HEADER + h.length;
		g->rlen -= H2_FRAME_HEADER + h.length;
		r = kh_frame(g, &h, g->rbuf + g->rpos - h.length);
		if (r)
			return r;
	}
	if (g->rpos) {
		memmove(g->rbuf, g->rbuf + g->rpos, g->rlen);
		g->rpos = 0;
	}
	return 0;
}

/*
 * What the socket holds read and acted on, waiting up to timeout_ms
 * (-1: for ever) for a first byte: 1 if bytes came, 0 if none, -errno.
 */
static int kh_read(struct kserve_h2 *g, int timeout_ms)
{
	struct pollfd pfd = { .fd = g->fd, .events = POLLIN };
	ssize_t n;
	int r;

	if (g->broken)
		return -EPIPE;
	if (timeout_ms) {
		r = poll(&pfd, 1, timeout_ms);
		if (r < 0)
			return errno == EINTR ?
				       0 :
				       client_fail(&g->err, -errno, "poll: %s", strerror(errno));
		if (!r)
			return 0;
	}
	n = recv(g->fd, g->rbuf + g->rlen, sizeof(g->rbuf) - g->rlen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		g->broken = true;
		return client_fail(&g->err, n ? -errno : -ECONNRESET,
				   "the server closed the connection");
	}
	g->rlen += (size_t)n;
	r = kh_frames(g);
	if (r)
		g->broken = true;
	return r ? r : 1;
}

/* Streams the server has not ended yet. */
static uint32_t kh_open_streams(const struct kserve_h2 *g)
{
	uint32_t n = 0;

	for (size_t i = 0; i < g->nr_streams; i++)
		n += g->streams[i].id && !g->streams[i].ended;
	return n;
}

/* One call's stream opened and its message sent, as the windows allow; its id in *out. */
static int kh_call(struct kserve_h2 *g, const char *path, const uint8_t *msg, size_t msg_len,
		   uint64_t tag, bool internal, uint32_t *out)
{
	uint8_t block[1024], hdr[H2_FRAME_HEADER];
	struct kh_stream *st;
	uint32_t id;
	size_t n = 0, off = 0;
	int r;

	/* no more streams open than the server's SETTINGS_MAX_CONCURRENT_STREAMS */
	while (kh_open_streams(g) >= g->peer.max_concurrent_streams) {
		r = kh_read(g, -1);
		if (r < 0)
			return r;
	}
	st = kh_stream_new(g);
	if (!st)
		return client_fail(&g->err, -ENOMEM, "out of memory");
#define KH_FIELD(name, value) \
	hpack_encode_field(block + n, sizeof(block) - n, name, strlen(name), value, strlen(value))
	n += KH_FIELD(":method", "POST");
	n += KH_FIELD(":scheme", "http");
	n += KH_FIELD(":path", path);
	n += KH_FIELD(":authority", g->authority);
	n += KH_FIELD("content-type", "application/grpc");
	n += KH_FIELD("te", "trailers");
#undef KH_FIELD
	memset(st, 0, sizeof(*st));
	st->id = id = g->next_stream;
	g->next_stream += 2;
	st->tag = tag;
	st->internal = internal;
	st->send_window = g->peer.initial_window_size;
	st->http_status = st->grpc_status = -1;
	h2_frame_header_write(hdr, (uint32_t)n, H2_HEADERS, H2_FLAG_END_HEADERS, id);
	{
		struct iovec iov[2] = { { hdr, sizeof(hdr) }, { block, n } };

		r = kh_sendv(g, iov, 2);
	}
	while (!r && off < msg_len) {
		/* the table may move as frames read meanwhile end other calls: by id */
		struct kh_stream *s = kh_stream(g, id);
		int64_t room;
		size_t chunk = msg_len - off;

		if (!s)
			break; /* answered (refused) before its message was all sent: no more of it */
		room = g->conn_send_window < s->send_window ? g->conn_send_window : s->send_window;
		if (room <= 0) {
			r = kh_read(g, -1);
			r = r < 0 ? r : 0;
			continue;
		}
		if (chunk > g->peer.max_frame_size)
			chunk = g->peer.max_frame_size;
		if ((int64_t)chunk > room)
			chunk = (size_t)room;
		h2_frame_header_write(hdr, (uint32_t)chunk, H2_DATA,
				      off + chunk == msg_len ? H2_FLAG_END_STREAM : 0, id);
		{
			struct iovec iov[2] = { { hdr, sizeof(hdr) },
						{ (void *)(msg + off), chunk } };

			r = kh_sendv(g, iov, 2);
		}
		off += chunk;
		g->conn_send_window -= (int64_t)chunk;
		s->send_window -= (int64_t)chunk;
	}
	if (!r && g->recv_unacked > KH_WINDOW_REFILL) {
		uint8_t wu[16];

		r = kh_send(g, wu, h2_window_update_write(wu, 0, (uint32_t)g->recv_unacked));
		g->recv_unacked = 0;
	}
	if (r)
		g->broken = true;
	*out = id;
	return r;
}

/* The call that ended first of those not yet taken (internal ones or not); or NULL. */
static struct kh_stream *kh_first_done(struct kserve_h2 *g, bool internal)
{
	struct kh_stream *best = NULL;

	for (size_t i = 0; i < g->nr_streams; i++) {
		struct kh_stream *s = &g->streams[i];

		if (s->id && s->ended && s->internal == internal &&
		    (!best || s->done_seq < best->done_seq))
			best = s;
	}
	return best;
}

static void kh_free(struct kh_stream *s)
{
	free(s->msg);
	memset(s, 0, sizeof(*s));
}

/* The answer's one message (after the 5-byte prefix), or NULL with g->err set. */
static const uint8_t *kh_message(struct kserve_h2 *g, const struct kh_stream *st, const char *what,
				 size_t *len)
{
	if (st->reset) {
		client_fail(&g->err, -EPROTO, "%s: the stream was reset (error %u)", what,
			    st->reset_code);
		return NULL;
	}
	if (st->http_status != 200 || st->grpc_status != 0) {
		client_fail(&g->err, -EPROTO, "%s: HTTP %d, grpc-status %d: %s", what,
			    st->http_status, st->grpc_status, st->grpc_message);
		return NULL;
	}
	if (st->msg_len < 5 || st->msg[0] || kh_get32(st->msg + 1) != st->msg_len - 5) {
		client_fail(&g->err, -EPROTO, "%s: not one uncompressed message (%zu bytes)", what,
			    st->msg_len);
		return NULL;
	}
	*len = st->msg_len - 5;
	return st->msg + 5;
}

/* Waits for the internal call id to end: its stream (taken by the caller, then kh_free). */
static int kh_wait(struct kserve_h2 *g, uint32_t id, struct kh_stream **out)
{
	for (;;) {
		struct kh_stream *s = kh_stream_any(g, id);
		int r;

		if (s && s->ended) {
			*out = s;
			return 0;
		}
		if (!s)
			return client_fail(&g->err, -EPROTO, "a call's stream went missing");
		r = kh_read(g, -1);
		if (r < 0)
			return r;
	}
}

/* The packed ModelInferRequest of model, its input in g->in_bytes and the request in g->req. */
static int kh_pack(struct kserve_h2 *g, const void *input, size_t len)
{
	Inference__ModelInferRequest rq = INFERENCE__MODEL_INFER_REQUEST__INIT;
	Inference__ModelInferRequest__InferInputTensor
		in = INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__INIT,
		*ins[1] = { &in };
	ProtobufCBinaryData raw = { len, (uint8_t *)input };
	size_t plen;

	rq.model_name = g->model;
	in.name = g->input;
	in.datatype = (char *)"FP32";
	in.n_shape = g->nr_dims;
	in.shape = g->shape;
	rq.n_inputs = 1;
	rq.inputs = ins;
	rq.n_raw_input_contents = 1;
	rq.raw_input_contents = &raw;
	plen = inference__model_infer_request__get_packed_size(&rq);
	free(g->req);
	g->req_len = 0;
	g->req = malloc(plen + 5);
	if (!g->req)
		return client_fail(&g->err, -ENOMEM, "out of memory");
	g->req[0] = 0;
	g->req[1] = (uint8_t)(plen >> 24);
	g->req[2] = (uint8_t)(plen >> 16);
	g->req[3] = (uint8_t)(plen >> 8);
	g->req[4] = (uint8_t)plen;
	inference__model_infer_request__pack(&rq, g->req + 5);
	g->req_len = plen + 5;
	return 0;
}

/* The model's input from ModelMetadata (one call, waited for), and the request packed. */
static int kh_model(struct kserve_h2 *g, const char *model, const void *input, size_t len)
{
	Inference__ModelMetadataRequest mq = INFERENCE__MODEL_METADATA_REQUEST__INIT;
	Inference__ModelMetadataResponse *resp;
	struct kh_stream *st = NULL;
	uint8_t mbuf[256];
	const uint8_t *m;
	uint32_t id;
	size_t ml;
	int r;

	if (strlen(model) >= sizeof(g->model))
		return client_fail(&g->err, -EINVAL, "a model name too long");
	mq.name = (char *)model;
	ml = inference__model_metadata_request__get_packed_size(&mq);
	if (ml + 5 > sizeof(mbuf))
		return client_fail(&g->err, -EINVAL, "a model name too long");
	mbuf[0] = 0;
	mbuf[1] = mbuf[2] = 0;
	mbuf[3] = (uint8_t)(ml >> 8);
	mbuf[4] = (uint8_t)ml;
	inference__model_metadata_request__pack(&mq, mbuf + 5);
	r = kh_call(g, KH_METHOD("ModelMetadata"), mbuf, ml + 5, 0, true, &id);
	if (!r)
		r = kh_wait(g, id, &st);
	if (r)
		return r;
	m = kh_message(g, st, "ModelMetadata", &ml);
	resp = m ? inference__model_metadata_response__unpack(NULL, ml, m) : NULL;
	kh_free(st);
	if (!m)
		return -EPROTO;
	if (!resp || resp->n_inputs != 1 || resp->inputs[0]->n_shape > KH_MAX_DIMS ||
	    strlen(resp->inputs[0]->name) >= sizeof(g->input)) {
		if (resp)
			inference__model_metadata_response__free_unpacked(resp, NULL);
		return client_fail(&g->err, -EINVAL, "ModelMetadata of %s: not one input to send",
				   model);
	}
	snprintf(g->model, sizeof(g->model), "%s", model);
	snprintf(g->input, sizeof(g->input), "%s", resp->inputs[0]->name);
	g->nr_dims = resp->inputs[0]->n_shape;
	memcpy(g->shape, resp->inputs[0]->shape, g->nr_dims * sizeof(int64_t));
	inference__model_metadata_response__free_unpacked(resp, NULL);
	g->in_bytes = 4;
	for (size_t i = 0; i < g->nr_dims; i++)
		g->in_bytes *= g->shape[i] > 0 ? (size_t)g->shape[i] : 0;
	if (len != g->in_bytes) {
		g->model[0] = 0;
		return client_fail(&g->err, -EINVAL, "model %s takes %zu input bytes, not %zu",
				   model, g->in_bytes, len);
	}
	return kh_pack(g, input, len);
}

int kserve_h2_connect(const char *target, struct kserve_h2 **out)
{
	static const uint16_t ids[3] = { H2_SET_ENABLE_PUSH, H2_SET_INITIAL_WINDOW_SIZE,
					 H2_SET_MAX_CONCURRENT_STREAMS };
	static const uint32_t values[3] = { 0, H2_MAX_WINDOW, 100 };
	struct kserve_h2 *g = calloc(1, sizeof(*g));
	uint8_t hello[128];
	size_t n;

	*out = g;
	if (!g)
		return -ENOMEM;
	g->fd = -1;
	g->next_stream = 1;
	h2_settings_default(&g->peer);
	g->conn_send_window = H2_DEFAULT_WINDOW;
	hpack_decoder_init(&g->dec, 4096);
	g->fd = kserve_tcp_connect(target, g->err.msg, sizeof(g->err.msg));
	if (g->fd < 0) {
		int r = g->fd;

		g->fd = -1;
		return r;
	}
	snprintf(g->authority, sizeof(g->authority), "%s", target);
	memcpy(hello, H2_PREFACE, 24);
	n = 24 + h2_settings_write(hello + 24, ids, values, 3);
	n += h2_window_update_write(hello + n, 0, H2_MAX_WINDOW - H2_DEFAULT_WINDOW);
	return kh_send(g, hello, n);
}

void kserve_h2_close(struct kserve_h2 *g)
{
	if (!g)
		return;
	if (g->fd >= 0)
		close(g->fd);
	hpack_decoder_free(&g->dec);
	for (size_t i = 0; i < g->nr_streams; i++)
		free(g->streams[i].msg);
	free(g->streams);
	free(g->block);
	free(g->req);
	free(g);
}

int kserve_h2_infer_send(struct kserve_h2 *g, const char *model, uint64_t tag, const void *input,
			 size_t len)
{
	uint32_t id;
	int r;

	if (g->broken) {
		char why[sizeof(g->err.msg)];

		/* not formatted into itself: vsnprintf's source and target may not overlap */
		snprintf(why, sizeof(why), "%s", g->err.msg);
		return client_fail(&g->err, -EPIPE, "the connection is lost: %.400s", why);
	}
	if (strcmp(g->model, model)) {
		r = kh_model(g, model, input, len);
		if (r)
			return r;
	} else if (g->req_len < len || memcmp(g->req + g->req_len - len, input, len)) {
		if (len != g->in_bytes)
			return client_fail(&g->err, -EINVAL,
					   "model %s takes %zu input bytes, not %zu", model,
					   g->in_bytes, len);
		r = kh_pack(g, input, len);
		if (r)
			return r;
	}
	return kh_call(g, KH_METHOD("ModelInfer"), g->req, g->req_len, tag, false, &id);
}

/* An ended call's answer into res and output; its slot freed. */
static int kh_answer(struct kserve_h2 *g, struct kh_stream *st, struct coloc_infer_result *res,
		     void *output, size_t out_cap)
{
	const uint8_t *m = NULL;
	size_t ml = 0;
	int r = 1;

	memset(res, 0, sizeof(*res));
	res->tag = st->tag;
	if (st->grpc_status <= 0) {
		m = kh_message(g, st, "ModelInfer", &ml);
		if (!m) {
			res->status = COLOC_INFER_FAILED;
			snprintf(res->error, sizeof(res->error), "%.200s", g->err.msg);
		}
	}
	if (m || st->grpc_status > 0) {
		r = kserve_grpc_answer(st->grpc_status > 0 ? st->grpc_status : 0, st->grpc_message,
				       m, ml, res, output, out_cap);
		res->tag = st->tag;
		if (r == -EMSGSIZE)
			client_fail(&g->err, r, "an answer was over %zu bytes", out_cap);
	}
	kh_free(st);
	return r;
}

int kserve_h2_infer_recv(struct kserve_h2 *g, struct coloc_infer_result *res, void *output,
			 size_t out_cap, int timeout_ms)
{
	for (;;) {
		struct kh_stream *st = kh_first_done(g, false);
		int r;

		if (st)
			return kh_answer(g, st, res, output, out_cap);
		r = kh_read(g, timeout_ms);
		if (r <= 0)
			return r;
		/* bytes came: look again, and read on without waiting */
		timeout_ms = 0;
	}
}

int kserve_h2_infer(struct kserve_h2 *g, const char *model, const void *input, size_t len,
		    void *output, size_t out_cap, struct coloc_infer_result *res)
{
	int r = kserve_h2_infer_send(g, model, 0, input, len);

	while (!r)
		r = kserve_h2_infer_recv(g, res, output, out_cap, -1);
	return r;
}
