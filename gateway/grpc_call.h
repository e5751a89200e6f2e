/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Between a gRPC server's machinery (grpc_h2.c, our own HTTP/2 server, or
 * grpc_core.c, gRPC's C core: each call's reading and answering) and the
 * methods (grpc_api.c: messages in, a call into models.h or forward.h, a
 * message out).
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
#include <sys/socket.h>
#include <protobuf-c/protobuf-c.h>
#include "grpc_server.h"

/* gRPC's status codes, by their numbers (grpc/doc/statuscodes.md) */
enum gw_grpc_status {
	GW_GRPC_OK = 0,
	GW_GRPC_CANCELLED = 1,
	GW_GRPC_UNKNOWN = 2,
	GW_GRPC_INVALID_ARGUMENT = 3,
	GW_GRPC_DEADLINE_EXCEEDED = 4,
	GW_GRPC_NOT_FOUND = 5,
	GW_GRPC_ALREADY_EXISTS = 6,
	GW_GRPC_PERMISSION_DENIED = 7,
	GW_GRPC_RESOURCE_EXHAUSTED = 8,
	GW_GRPC_FAILED_PRECONDITION = 9,
	GW_GRPC_ABORTED = 10,
	GW_GRPC_OUT_OF_RANGE = 11,
	GW_GRPC_UNIMPLEMENTED = 12,
	GW_GRPC_INTERNAL = 13,
	GW_GRPC_UNAVAILABLE = 14,
	GW_GRPC_DATA_LOSS = 15,
	GW_GRPC_UNAUTHENTICATED = 16,
};

/* A call as the methods see it; each server's own state follows it (grpc_server_impl.h). */
struct gw_grpc_call {
	struct gw_grpc *g;
	struct gw_models *ms;
	struct gw_fwd *fw;
	uint64_t t_start; /* coloc_now_ns() at arrival */
	uint64_t deadline_ns; /* the client's deadline or the gateway's timeout, the earlier */
	void *ctx;
	void (*ctx_free)(void *ctx);
	struct gw_memfd *msg_memfd; /* into_memfd: the message is in its map */
	struct sockaddr_storage client; /* the client's address: its share of the answer budget */
};

struct gw_grpc_method {
	const char *path; /* "/inference.GRPCInferenceService/NAME" */
	void (*handle)(struct gw_grpc_call *c, const uint8_t *msg, size_t len);
	bool into_memfd; /* its message read into a memfd (msg_memfd) */
};

extern const struct gw_grpc_method gw_grpc_methods[];
extern const size_t gw_grpc_nr_methods;

/*
 * Bytes a packed answer leaves free before its message, for the server's
 * framing (the own server's 5-byte gRPC prefix) without a copy.
 */
#define GW_GRPC_HEADROOM 5

/*
 * Answers OK with m packed; or with the len bytes at buf +
 * GW_GRPC_HEADROOM (buf malloc'd, taken over).
 */
void gw_grpc_reply(struct gw_grpc_call *c, const ProtobufCMessage *m);
void gw_grpc_reply_packed(struct gw_grpc_call *c, uint8_t *buf, size_t len);
void gw_grpc_fail(struct gw_grpc_call *c, enum gw_grpc_status code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Whether the calling thread may block in a query of its own (forward.h's
 * gw_fwd_run): true while another of the server's threads is left to
 * poll; then gw_grpc_block_end when done.
 */
bool gw_grpc_block_begin(struct gw_grpc *g);
/*
 * bytes taken from, or given back to, c's client address's share of the
 * answers' budget (gw_grpc_opts.answers): 0, -E2BIG (more than a share),
 * -ENOSPC (the budget or the share held now).
 */
int gw_grpc_answer_take(struct gw_grpc_call *c, size_t bytes);
void gw_grpc_answer_give(struct gw_grpc_call *c, size_t bytes);
/* Whether the repository's load and unload are allowed (--model-control). */
bool gw_grpc_model_control(const struct gw_grpc *g);
void gw_grpc_block_end(struct gw_grpc *g);
/* The method whose path is the n bytes at path, or NULL. */
const struct gw_grpc_method *gw_grpc_method_find(const char *path, size_t n);
/* Whether path (n bytes) is a health method, which max_calls does not count. */
bool gw_grpc_is_health(const char *path, size_t n);

#endif /* COLOC_GATEWAY_GRPC_CALL_H */
