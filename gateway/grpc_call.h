/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Between the gRPC server's machinery (grpc_server.c: the completion
 * queue, each call's reading and answering) and its methods (grpc_api.c:
 * messages in, a call into models.h or forward.h, a message out).
 *
 * A method gets the request message's bytes, which stay put until the
 * call is over (a query's input is sent to colocd from where it lies), and
 * answers the call exactly once, then or later from any thread:
 * gw_grpc_reply (OK and a message) or gw_grpc_fail (a status and why).
 * State it keeps until then goes in ctx; ctx_free(ctx) runs when the call
 * is over, before the message's bytes are released. A method marked
 * into_memfd gets its message in msg_memfd's map (one of the forwarding
 * pool's, gw_fwd_memfd_get) when one could be had, so that a query's input
 * goes to colocd in it without another copy; it may take msg_memfd over
 * (and set it NULL) to give it back itself with the job it went with.
 */
#ifndef COLOC_GATEWAY_GRPC_CALL_H
#define COLOC_GATEWAY_GRPC_CALL_H

#include <stdint.h>
#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>
#include "grpc_server.h"

struct gw_grpc_call {
	struct gw_grpc *g;
	struct gw_models *ms;
	struct gw_fwd *fw;
	uint64_t t_start; /* gw_now_ns() at arrival */
	uint64_t deadline_ns; /* the client's deadline or the gateway's timeout, the earlier */
	void *ctx;
	void (*ctx_free)(void *ctx);
	/* the server's */
	int phase;
	grpc_call *call;
	grpc_call_details details;
	grpc_metadata_array metadata;
	grpc_byte_buffer *payload, *reply;
	grpc_slice msg; /* the request message's bytes, in one piece; or */
	struct gw_memfd *msg_memfd; /* they are in its map (into_memfd) */
	grpc_slice status_details;
	int cancelled;
	bool counted;
	uint64_t read_by_ns; /* gw_now_ns() when its message must have come */
	struct gw_grpc_call *read_prev, *read_next; /* on the server's list while reading */
	bool reading;
};

struct gw_grpc_method {
	const char *path; /* "/inference.GRPCInferenceService/NAME" */
	void (*handle)(struct gw_grpc_call *c, const uint8_t *msg, size_t len);
	bool into_memfd; /* its message read into a memfd (msg_memfd) */
};

extern const struct gw_grpc_method gw_grpc_methods[];
extern const size_t gw_grpc_nr_methods;

/* Answers OK with m packed (buf: with its bytes, malloc'd, taken over). */
void gw_grpc_reply(struct gw_grpc_call *c, const ProtobufCMessage *m);
void gw_grpc_reply_packed(struct gw_grpc_call *c, uint8_t *buf, size_t len);
void gw_grpc_fail(struct gw_grpc_call *c, grpc_status_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Whether the calling thread may block in a query of its own (forward.h's
 * gw_fwd_run): true while another of the completion queue's threads is left
 * to poll; then gw_grpc_block_end when done.
 */
bool gw_grpc_block_begin(struct gw_grpc *g);
/* Whether the repository's load and unload are allowed (--model-control). */
bool gw_grpc_model_control(const struct gw_grpc *g);
void gw_grpc_block_end(struct gw_grpc *g);

#endif /* COLOC_GATEWAY_GRPC_CALL_H */
