// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-bench-gateway's raw gRPC client (grpc_raw.h): one TCP connection
 * (TCP_NODELAY), the HTTP/2 preface and our SETTINGS (no push, the largest
 * stream window, and the connection's window opened as far), then each
 * call one stream: a HEADERS frame of fields encoded once, the message in
 * DATA frames of the peer's largest size as its windows allow, and frames
 * read until the trailers' END_STREAM, answering PING and SETTINGS on the
 * way. Response headers and trailers go through the gateway's own HPACK
 * decoder (gateway/hpack.c), frames through gateway/h2_frame.c. One call
 * at a time: the benchmark's queries are sequential.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "cli.h"
#include "coloc/kserve.h"
#include "grpc_raw.h"
#include "grpc_service.pb-c.h"
#include "h2_frame.h"
#include "hpack.h"

#define GR_METHOD(name) "/inference.GRPCInferenceService/" name
#define GR_MAX_DIMS 8
#define GR_READ_BUF (4 * H2_DEFAULT_MAX_FRAME)
#define GR_WINDOW_REFILL (1u << 30) /* the connection's window given back past this */
#define GR_MESSAGE_MAX (256u << 20)

/* The stream in flight. */
struct gr_stream {
	uint32_t id;
	int64_t send_window;
	bool ended, reset, end_after_headers;
	uint32_t reset_code;
	int http_status, grpc_status;
	char grpc_message[256];
	uint8_t *block; /* a header block being assembled from CONTINUATIONs */
	size_t block_len, block_cap;
	uint8_t *msg; /* the DATA frames' content */
	size_t msg_len, msg_cap;
};

struct grpc_raw {
	int fd;
	char authority[128];
	struct h2_settings peer;
	int64_t conn_send_window;
	uint64_t recv_unacked;
	uint32_t next_stream;
	struct hpack_decoder dec;
	uint8_t rbuf[GR_READ_BUF];
	size_t rpos, rlen;
	struct gr_stream st;
	char model[64], input[64];
	int64_t shape[GR_MAX_DIMS];
	size_t nr_dims, in_bytes;
	uint8_t *req; /* the 5-byte gRPC prefix and the packed ModelInferRequest */
	size_t req_len;
	char err[512];
};

static int gr_fail(struct grpc_raw *g, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int gr_fail(struct grpc_raw *g, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->err, sizeof(g->err), fmt, ap);
	va_end(ap);
	return code;
}

const char *grpc_raw_error(const struct grpc_raw *g)
{
	return g->err;
}

static int gr_sendv(struct grpc_raw *g, struct iovec *iov, int n)
{
	while (n) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg(g->fd, &mh, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return gr_fail(g, -errno, "send: %s", strerror(errno));
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

static int gr_send(struct grpc_raw *g, const void *p, size_t len)
{
	struct iovec iov = { (void *)p, len };

	return gr_sendv(g, &iov, 1);
}

static int gr_append(uint8_t **buf, size_t *len, size_t *cap, const uint8_t *p, size_t n)
{
	if (*len + n > GR_MESSAGE_MAX)
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

/* The next whole frame in rbuf (read as needed): its header, and its payload at *p. */
static int gr_read_frame(struct grpc_raw *g, struct h2_frame_header *h, const uint8_t **p)
{
	for (;;) {
		ssize_t n;

		if (g->rlen >= H2_FRAME_HEADER) {
			h2_frame_header_read(g->rbuf + g->rpos, h);
			if (h->length > H2_DEFAULT_MAX_FRAME)
				return gr_fail(g, -EPROTO, "a frame of %u bytes, over our 16384",
					       h->length);
			if (g->rlen >= H2_FRAME_HEADER + h->length) {
				*p = g->rbuf + g->rpos + H2_FRAME_HEADER;
				g->rpos += H2_FRAME_HEADER + h->length;
				g->rlen -= H2_FRAME_HEADER + h->length;
				return 0;
			}
		}
		if (g->rpos) {
			memmove(g->rbuf, g->rbuf + g->rpos, g->rlen);
			g->rpos = 0;
		}
		n = recv(g->fd, g->rbuf + g->rlen, sizeof(g->rbuf) - g->rlen, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return gr_fail(g, n ? -errno : -ECONNRESET,
				       "the server closed the connection");
		g->rlen += (size_t)n;
	}
}

static uint32_t gr_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int gr_field(void *ctx, const char *name, size_t name_len, const char *value,
		    size_t value_len)
{
	struct gr_stream *st = ctx;
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
static int gr_headers(struct grpc_raw *g, const struct h2_frame_header *h, const uint8_t *frag,
		      size_t len, bool ours)
{
	struct gr_stream *st = &g->st;
	int r;

	if (gr_append(&st->block, &st->block_len, &st->block_cap, frag, len))
		return gr_fail(g, -ENOMEM, "a header block too large");
	if (!(h->flags & H2_FLAG_END_HEADERS))
		return 0;
	r = hpack_decode(&g->dec, st->block, st->block_len, 1 << 20, ours ? gr_field : NULL, st);
	st->block_len = 0;
	if (r == HPACK_ERR_COMPRESSION || r == HPACK_ERR_NO_MEMORY)
		return gr_fail(g, -EPROTO, "the server's header block does not decode (%d)", r);
	if (ours && st->end_after_headers)
		st->ended = true;
	return 0;
}

static int gr_settings(struct grpc_raw *g, const struct h2_frame_header *h, const uint8_t *p)
{
	uint32_t old = g->peer.initial_window_size;
	uint8_t ack[H2_FRAME_HEADER];
	int r;

	if (h->flags & H2_FLAG_ACK)
		return 0;
	r = h2_settings_apply(&g->peer, p, h->length);
	if (r)
		return gr_fail(g, -EPROTO, "the server's SETTINGS are refused (error %d)", r);
	g->st.send_window += (int64_t)g->peer.initial_window_size - old;
	return gr_send(g, ack, h2_settings_ack_write(ack));
}

/* One frame read and acted on. */
static int gr_step(struct grpc_raw *g)
{
	struct gr_stream *st = &g->st;
	struct h2_frame_header h;
	const uint8_t *p = NULL, *c;
	uint8_t out[32];
	size_t cl;
	bool ours;
	int r = gr_read_frame(g, &h, &p);

	if (r)
		return r;
	ours = h.stream && h.stream == st->id && !st->ended;
	switch (h.type) {
	case H2_DATA:
		g->recv_unacked += h.length;
		if (h2_frame_content(&h, p, &c, &cl))
			return gr_fail(g, -EPROTO, "a DATA frame's padding is wrong");
		if (ours && gr_append(&st->msg, &st->msg_len, &st->msg_cap, c, cl))
			return gr_fail(g, -EMSGSIZE, "an answer over 256 MiB");
		if (ours && (h.flags & H2_FLAG_END_STREAM))
			st->ended = true;
		return 0;
	case H2_HEADERS:
		if (h2_frame_content(&h, p, &c, &cl))
			return gr_fail(g, -EPROTO, "a HEADERS frame's padding is wrong");
		st->end_after_headers = h.flags & H2_FLAG_END_STREAM;
		return gr_headers(g, &h, c, cl, ours);
	case H2_CONTINUATION:
		return gr_headers(g, &h, p, h.length, ours);
	case H2_SETTINGS:
		return gr_settings(g, &h, p);
	case H2_PING:
		if (h.length != 8)
			return gr_fail(g, -EPROTO, "a PING of %u bytes", h.length);
		return (h.flags & H2_FLAG_ACK) ? 0 : gr_send(g, out, h2_ping_write(out, p, true));
	case H2_WINDOW_UPDATE:
		if (h.length != 4)
			return gr_fail(g, -EPROTO, "a WINDOW_UPDATE of %u bytes", h.length);
		if (!h.stream)
			g->conn_send_window += gr_get32(p) & 0x7fffffff;
		else if (ours)
			st->send_window += gr_get32(p) & 0x7fffffff;
		return 0;
	case H2_RST_STREAM:
		if (ours && h.length == 4) {
			st->reset = st->ended = true;
			st->reset_code = gr_get32(p);
		}
		return 0;
	case H2_GOAWAY:
		return gr_fail(g, -ECONNRESET, "the server sent GOAWAY (error %u)",
			       h.length >= 8 ? gr_get32(p + 4) : 0);
	case H2_PUSH_PROMISE:
		return gr_fail(g, -EPROTO, "a PUSH_PROMISE, with push disabled");
	default:
		return 0; /* PRIORITY, unknown types */
	}
}

/* One unary call: path's stream, msg sent, the answer's message in g->st.msg (prefix kept). */
static int gr_call(struct grpc_raw *g, const char *path, const uint8_t *msg, size_t msg_len)
{
	struct gr_stream *st = &g->st;
	uint8_t block[1024], hdr[H2_FRAME_HEADER];
	size_t n = 0, off = 0;
	int r;

#define GR_FIELD(name, value) \
	hpack_encode_field(block + n, sizeof(block) - n, name, strlen(name), value, strlen(value))
	n += GR_FIELD(":method", "POST");
	n += GR_FIELD(":scheme", "http");
	n += GR_FIELD(":path", path);
	n += GR_FIELD(":authority", g->authority);
	n += GR_FIELD("content-type", "application/grpc");
	n += GR_FIELD("te", "trailers");
#undef GR_FIELD
	st->id = g->next_stream;
	g->next_stream += 2;
	st->send_window = g->peer.initial_window_size;
	st->ended = st->reset = st->end_after_headers = false;
	st->http_status = st->grpc_status = -1;
	st->grpc_message[0] = 0;
	st->msg_len = st->block_len = 0;
	h2_frame_header_write(hdr, (uint32_t)n, H2_HEADERS, H2_FLAG_END_HEADERS, st->id);
	{
		struct iovec iov[2] = { { hdr, sizeof(hdr) }, { block, n } };

		r = gr_sendv(g, iov, 2);
	}
	while (!r && off < msg_len) {
		int64_t room = g->conn_send_window < st->send_window ? g->conn_send_window :
								       st->send_window;
		size_t chunk = msg_len - off;

		if (room <= 0) {
			r = gr_step(g);
			continue;
		}
		if (chunk > g->peer.max_frame_size)
			chunk = g->peer.max_frame_size;
		if ((int64_t)chunk > room)
			chunk = (size_t)room;
		h2_frame_header_write(hdr, (uint32_t)chunk, H2_DATA,
				      off + chunk == msg_len ? H2_FLAG_END_STREAM : 0, st->id);
		{
			struct iovec iov[2] = { { hdr, sizeof(hdr) },
						{ (void *)(msg + off), chunk } };

			r = gr_sendv(g, iov, 2);
		}
		off += chunk;
		g->conn_send_window -= (int64_t)chunk;
		st->send_window -= (int64_t)chunk;
	}
	while (!r && !st->ended)
		r = gr_step(g);
	if (!r && g->recv_unacked > GR_WINDOW_REFILL) {
		uint8_t wu[16];

		r = gr_send(g, wu, h2_window_update_write(wu, 0, (uint32_t)g->recv_unacked));
		g->recv_unacked = 0;
	}
	return r;
}

int grpc_raw_connect(const char *target, struct grpc_raw **out)
{
	static const uint16_t ids[3] = { H2_SET_ENABLE_PUSH, H2_SET_INITIAL_WINDOW_SIZE,
					 H2_SET_MAX_CONCURRENT_STREAMS };
	static const uint32_t values[3] = { 0, H2_MAX_WINDOW, 100 };
	struct sockaddr_in a = { .sin_family = AF_INET };
	const char *colon = strrchr(target, ':');
	struct grpc_raw *g = calloc(1, sizeof(*g));
	uint8_t hello[128];
	size_t n;
	long port;
	int one = 1;

	*out = g;
	if (!g)
		return -ENOMEM;
	g->fd = -1;
	g->next_stream = 1;
	h2_settings_default(&g->peer);
	g->conn_send_window = H2_DEFAULT_WINDOW;
	hpack_decoder_init(&g->dec, 4096);
	if (!colon || (size_t)(colon - target) >= 64 || cli_parse_long(colon + 1, 1, 65535, &port))
		return gr_fail(g, -EINVAL, "%s is not HOST:PORT", target);
	snprintf(g->authority, sizeof(g->authority), "%s", target);
	{
		char host[64];

		memcpy(host, target, (size_t)(colon - target));
		host[colon - target] = 0;
		if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
			return gr_fail(g, -EINVAL, "%s is not an IPv4 address", host);
	}
	a.sin_port = htons((uint16_t)port);
	g->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (g->fd < 0 || connect(g->fd, (struct sockaddr *)&a, sizeof(a)))
		return gr_fail(g, -errno, "connect to %s: %s", target, strerror(errno));
	setsockopt(g->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memcpy(hello, H2_PREFACE, 24);
	n = 24 + h2_settings_write(hello + 24, ids, values, 3);
	n += h2_window_update_write(hello + n, 0, H2_MAX_WINDOW - H2_DEFAULT_WINDOW);
	return gr_send(g, hello, n);
}

void grpc_raw_close(struct grpc_raw *g)
{
	if (!g)
		return;
	if (g->fd >= 0)
		close(g->fd);
	hpack_decoder_free(&g->dec);
	free(g->st.block);
	free(g->st.msg);
	free(g->req);
	free(g);
}

/* The answer's one message (after the 5-byte prefix), or NULL with g->err set. */
static const uint8_t *gr_message(struct grpc_raw *g, const char *what, size_t *len)
{
	struct gr_stream *st = &g->st;

	if (st->reset) {
		gr_fail(g, -EPROTO, "%s: the stream was reset (error %u)", what, st->reset_code);
		return NULL;
	}
	if (st->http_status != 200 || st->grpc_status != 0) {
		gr_fail(g, -EPROTO, "%s: HTTP %d, grpc-status %d: %s", what, st->http_status,
			st->grpc_status, st->grpc_message);
		return NULL;
	}
	if (st->msg_len < 5 || st->msg[0] || gr_get32(st->msg + 1) != st->msg_len - 5) {
		gr_fail(g, -EPROTO, "%s: not one uncompressed message (%zu bytes)", what,
			st->msg_len);
		return NULL;
	}
	*len = st->msg_len - 5;
	return st->msg + 5;
}

/* The model's input from ModelMetadata, and the request packed once. */
static int gr_model(struct grpc_raw *g, const char *model, const void *input, size_t len)
{
	Inference__ModelMetadataRequest mq = INFERENCE__MODEL_METADATA_REQUEST__INIT;
	Inference__ModelMetadataResponse *resp;
	uint8_t mbuf[256];
	const uint8_t *m;
	size_t ml;
	int r;

	if (strlen(model) >= sizeof(g->model))
		return gr_fail(g, -EINVAL, "a model name too long");
	mq.name = (char *)model;
	ml = inference__model_metadata_request__get_packed_size(&mq);
	if (ml + 5 > sizeof(mbuf))
		return gr_fail(g, -EINVAL, "a model name too long");
	mbuf[0] = 0;
	mbuf[1] = mbuf[2] = 0;
	mbuf[3] = (uint8_t)(ml >> 8);
	mbuf[4] = (uint8_t)ml;
	inference__model_metadata_request__pack(&mq, mbuf + 5);
	r = gr_call(g, GR_METHOD("ModelMetadata"), mbuf, ml + 5);
	if (r)
		return r;
	m = gr_message(g, "ModelMetadata", &ml);
	if (!m)
		return -EPROTO;
	resp = inference__model_metadata_response__unpack(NULL, ml, m);
	if (!resp || resp->n_inputs != 1 || resp->inputs[0]->n_shape > GR_MAX_DIMS ||
	    strlen(resp->inputs[0]->name) >= sizeof(g->input)) {
		if (resp)
			inference__model_metadata_response__free_unpacked(resp, NULL);
		return gr_fail(g, -EINVAL, "ModelMetadata of %s: not one input to send", model);
	}
	snprintf(g->model, sizeof(g->model), "%s", model);
	snprintf(g->input, sizeof(g->input), "%s", resp->inputs[0]->name);
	g->nr_dims = resp->inputs[0]->n_shape;
	memcpy(g->shape, resp->inputs[0]->shape, g->nr_dims * sizeof(int64_t));
	inference__model_metadata_response__free_unpacked(resp, NULL);
	g->in_bytes = 4;
	for (size_t i = 0; i < g->nr_dims; i++)
		g->in_bytes *= g->shape[i] > 0 ? (size_t)g->shape[i] : 0;
	if (len != g->in_bytes)
		return gr_fail(g, -EINVAL, "model %s takes %zu input bytes, not %zu", model,
			       g->in_bytes, len);
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
		g->req = malloc(plen + 5);
		if (!g->req)
			return gr_fail(g, -ENOMEM, "out of memory");
		g->req[0] = 0;
		g->req[1] = (uint8_t)(plen >> 24);
		g->req[2] = (uint8_t)(plen >> 16);
		g->req[3] = (uint8_t)(plen >> 8);
		g->req[4] = (uint8_t)plen;
		inference__model_infer_request__pack(&rq, g->req + 5);
		g->req_len = plen + 5;
	}
	return 0;
}

static int gr_answer(struct grpc_raw *g, struct coloc_infer_result *res, void *output,
		     size_t out_cap)
{
	const uint8_t *m = NULL;
	size_t ml = 0;
	int r;

	if (g->st.grpc_status <= 0) {
		m = gr_message(g, "ModelInfer", &ml);
		if (!m) {
			res->status = COLOC_INFER_FAILED;
			snprintf(res->error, sizeof(res->error), "%.200s", g->err);
			return 1;
		}
	}
	r = kserve_grpc_answer(g->st.grpc_status > 0 ? g->st.grpc_status : 0, g->st.grpc_message,
			       m, ml, res, output, out_cap);
	if (r == -EMSGSIZE)
		gr_fail(g, r, "an answer was over %zu bytes", out_cap);
	return r;
}

int grpc_raw_infer(struct grpc_raw *g, const char *model, const void *input, size_t len,
		   void *output, size_t out_cap, struct coloc_infer_result *res)
{
	int r;

	memset(res, 0, sizeof(*res));
	if (strcmp(g->model, model) || g->req_len < len ||
	    memcmp(g->req + g->req_len - len, input, len)) {
		r = gr_model(g, model, input, len);
		if (r)
			return r;
	}
	r = gr_call(g, GR_METHOD("ModelInfer"), g->req, g->req_len);
	return r ? r : gr_answer(g, res, output, out_cap);
}
