/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The gateway's HTTP/REST front door: KServe v2 (the Open Inference
 * Protocol) on libmicrohttpd, a thread per connection (at most
 * max_connections).
 *
 *   GET  /v2                                  server metadata
 *   GET  /v2/health/live | /v2/health/ready   200, or 400 when not
 *   GET  /v2/models/NAME[/versions/V]         model metadata
 *   GET  /v2/models/NAME[/versions/V]/ready   200, or 400 when not
 *   POST /v2/models/NAME[/versions/V]/infer   infer_request.h's bodies
 *   POST /v2/repository/index                 [{"name","version","state","reason"}]
 *   POST /v2/repository/models/NAME/load | /unload
 *
 * An infer is parsed on its connection's thread, which sends it to colocd
 * and reads the answer itself on a borrowed connection (gw_fwd_run), or,
 * with none idle, queues it to the forwarding pool (forward.h) and waits;
 * the answer is written from the same thread. Refusals, with
 * {"error":"..."}: 400 bad request, 404 no such model or version, 405
 * wrong method, 413 body over max_body (or over an address's share of
 * max_buffer, or a body on a path that takes none: any but an infer's and
 * the repository's), 503 model not ready or queue full or max_buffer held
 * (Retry-After: 1) or colocd refused the query, 409 a repository load
 * or unload while another is under way, 504 past the timeout, colocd
 * stalled mid-query (forward.h's I/O timeout) or dropped by colocd past
 * its deadline, 502 colocd unreachable, 500 the executor failed.
 */
#ifndef COLOC_GATEWAY_HTTP_H
#define COLOC_GATEWAY_HTTP_H

#include <stddef.h>
#include <sys/socket.h>
#include "error.h"
#include "forward.h"
#include "http_budget.h"
#include "models.h"
#include "trusted_proxy.h"

struct gw_http_opts {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	int max_connections;
	int max_conns_per_ip; /* from one client address; 0: no limit */
	int request_timeout_ms; /* a request's arrival, whole (http_deadline.h); 0: none */
	/* bytes a second a request must arrive at, after its first second (with the above); 0: none */
	size_t min_rate;
	size_t max_body; /* bytes of one request body */
	size_t max_buffer; /* bytes of request bodies held at once, in all (http_budget.h) */
	size_t max_buffer_per_addr; /* of them, from one client address */
	/*
	 * The budget of those two numbers, the caller's: the gRPC side's
	 * answers are charged to it too (grpc_server.h), one share an address
	 */
	struct gw_http_budget *budget;
	int timeout_ms; /* of one infer, from arrival */
	int idle_timeout_s; /* of a connection */
	bool model_control; /* the repository's load and unload allowed (else 403) */
	/* proxies whose X-Forwarded-For names the client (trusted_proxy.h); NULL: none */
	const struct gw_trusted_proxies *trusted;
};

struct gw_http;

int gw_http_start(const struct gw_http_opts *opts, struct gw_models *ms, struct gw_fwd *fw,
		  struct gw_http **out, struct coloc_err *err);
/* The port it listens on (the one the kernel chose for port 0). */
int gw_http_port(struct gw_http *h);
/* Stops taking connections (the pool is stopped next, then gw_http_stop). */
void gw_http_quiesce(struct gw_http *h);
void gw_http_stop(struct gw_http *h);

#endif /* COLOC_GATEWAY_HTTP_H */
