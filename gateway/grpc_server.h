/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The gateway's gRPC front door: the KServe v2 / Open Inference Protocol's
 * inference.GRPCInferenceService (gateway/proto/grpc_service.proto) on a
 * server of our own over HTTP/2 (grpc_h2.c, h2_conn.h; cleartext with prior
 * knowledge, as gRPC's insecure channels speak; the default) or on Debian's
 * gRPC C core (grpc_core.c, --grpc-server core); messages by protobuf-c.
 *
 *   ServerLive, ServerReady, ServerMetadata, ModelReady, ModelMetadata,
 *   ModelInfer (infer_proto.h's messages), RepositoryIndex,
 *   RepositoryModelLoad, RepositoryModelUnload
 *
 * A ModelInfer is checked as on HTTP and handed to the same forwarding
 * pool (forward.h); the pool's callback sends the answer. Refusals carry
 * the protocol's status codes and a message saying why: INVALID_ARGUMENT
 * a bad request, NOT_FOUND no such model or version, UNAVAILABLE model not
 * ready, colocd refused or unreachable, the gateway stopping;
 * RESOURCE_EXHAUSTED the queue full, more than max_calls calls at once,
 * a message over max_message (checked from its prefix, before it is read),
 * or an infer's output and answer over its address's share of answers;
 * DEADLINE_EXCEEDED past the client's deadline or timeout_ms, colocd
 * stalled mid-query (forward.h's I/O timeout), or dropped by colocd; ABORTED a repository load or unload while another is under
 * way; INTERNAL the executor failed; UNIMPLEMENTED another method.
 *
 * Own server: a connection over max_conns, or over max_conns_per_ip from one
 * address, is closed at once; each connection is held to the HTTP/2 bounds
 * of h2_conn.h (rapid reset and resets it is made to make, CONTINUATION and
 * control-frame floods, flow control, malformed requests), one that does
 * not read its answers is not read from, one with no call open for
 * idle_timeout_ms is sent away. A call counts against max_calls once its
 * message is whole; until then it waits, at most max_waiting_per_ip from
 * one address. Request messages' buffers come out of max_buffer_bytes, of
 * which 256 x 64 KiB are kept for the health calls and one address takes
 * at most an eighth of the rest (or one max_message, if larger).
 *
 * Threads: `threads` poll one completion queue (own server: one epoll set,
 * each connection served by one thread at a time); a repository load blocks
 * the thread that took it, and so does an infer while colocd answers it on
 * a borrowed connection (gw_fwd_run), as long as one thread is left to
 * poll; otherwise it goes through the pool's queue. Order at exit:
 * gw_grpc_quiesce (no new calls), gw_fwd_stop (every forwarded call
 * answered), gw_grpc_stop.
 */
#ifndef COLOC_GATEWAY_GRPC_SERVER_H
#define COLOC_GATEWAY_GRPC_SERVER_H

#include <stddef.h>
#include "error.h"
#include "forward.h"
#include "http_budget.h"
#include "models.h"
#include "trusted_proxy.h"

enum gw_grpc_server { GW_GRPC_SERVER_CORE, GW_GRPC_SERVER_OWN };

struct gw_grpc_opts {
	enum gw_grpc_server server;
	const char *addr; /* ADDR:PORT as gRPC takes it (checked by gw_parse_addr first) */
	int threads;
	int max_calls; /* calls at once, of any method but the health ones */
	int read_timeout_ms; /* from a call's arrival to its message, then it is cancelled */
	int max_streams; /* calls at once on one connection (HTTP/2 concurrent streams) */
	size_t max_message; /* bytes of one request message */
	size_t min_rate; /* bytes a second a call's message comes at after its first (0: any) */
	int timeout_ms; /* of one infer, from arrival, when the client's deadline is later */
	int idle_timeout_ms; /* a connection with no call open this long is sent away (0: never) */
	bool model_control; /* the repository's load and unload allowed (else PERMISSION_DENIED) */
	int max_conns; /* own server: connections at once */
	int max_conns_per_ip; /* own server: from one client address (0: no limit) */
	int max_waiting_per_ip; /* own server: calls waiting for their message from one (0: any) */
	size_t max_buffer_bytes; /* own server: request messages' buffers, in all */
	/*
	 * A ModelInfer's output and answer, charged to its client address's
	 * share before the query is sent: the HTTP side's budget (http.h)
	 */
	struct gw_http_budget *answers;
	/*
	 * own server: proxies whose x-forwarded-for names a call's client for
	 * the per-address bounds, their connections not counted per address
	 * (trusted_proxy.h); NULL: none
	 */
	const struct gw_trusted_proxies *trusted;
};

struct gw_grpc;

int gw_grpc_start(const struct gw_grpc_opts *opts, struct gw_models *ms, struct gw_fwd *fw,
		  struct gw_grpc **out, struct coloc_err *err);
/* The port it listens on (the one the kernel chose for port 0). */
int gw_grpc_port(struct gw_grpc *g);
void gw_grpc_quiesce(struct gw_grpc *g);
void gw_grpc_stop(struct gw_grpc *g);

#endif /* COLOC_GATEWAY_GRPC_SERVER_H */
