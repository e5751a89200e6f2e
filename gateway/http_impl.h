/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The HTTP front door's insides (http.h), shared by its parts: http.c
 * (libmicrohttpd's daemon and its access handler, a request's lifetime),
 * http_body.c (a request's body and its share of the budget), http_route.c
 * (a path to its handler, the metadata and repository answers),
 * http_infer.c (an infer forwarded to colocd and answered) and
 * http_reply.c (an answer or a refusal queued).
 */
#ifndef COLOC_GATEWAY_HTTP_IMPL_H
#define COLOC_GATEWAY_HTTP_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <microhttpd.h>
#include "http.h"
#include "infer_request.h"

struct json_object;

struct gw_http {
	struct MHD_Daemon *d;
	struct gw_http_opts opts;
	struct gw_models *ms;
	struct gw_fwd *fw;
	struct gw_http_deadline *dl; /* NULL: no whole-request deadline */
	struct gw_http_conns *conns; /* connections per client (http_conns.h); NULL: no limit */
	atomic_bool stopping;
};

struct http_req {
	struct gw_http *h;
	struct MHD_Connection *conn;
	char *body;
	size_t len, cap;
	struct gw_memfd *body_memfd; /* an infer's body: body is its map, passed to colocd */
	bool too_large;
	size_t limit; /* the most bytes of body this path takes */
	size_t taken; /* of the budget, for the body's buffer */
	struct sockaddr_storage addr; /* the client's, the budget's key */
	pthread_mutex_t lock; /* guards answered */
	pthread_cond_t cond; /* answered became true */
	bool answered; /* the pool is done with job */
	uint64_t t_start;
	/* an infer's */
	struct gw_model_config cfg; /* a copy: the model may be reloaded meanwhile */
	struct gw_model_stats *stats;
	struct gw_infer_request ir;
	struct gw_job job;
	float *output;
};

/*
 * This connection's request is its last (http.c's HTTP_MAX_REQUESTS_PER_CONN):
 * its answer says Connection: close. A thread per connection: the thread's.
 */
extern __thread bool http_last_request;

/* http_reply.c: {"error":"..."} with status */
enum MHD_Result http_error(struct MHD_Connection *conn, unsigned int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* o as the body (o put) */
enum MHD_Result http_json(struct MHD_Connection *conn, unsigned int status, struct json_object *o);
enum MHD_Result http_empty(struct MHD_Connection *conn, unsigned int status);

/* http_route.c: the request, its body whole, answered by its path */
enum MHD_Result http_route(struct http_req *rq, const char *url, const char *method);

/* http_route.c: the ready model (gw_models_put it) of an infer's url, or NULL */
struct gw_model *http_infer_model(const struct gw_http *h, const char *url);

/* http_infer.c: an infer for m (put here) parsed, forwarded and answered */
enum MHD_Result http_infer_start(struct http_req *rq, struct gw_model *m);

/* http_body.c */
void http_free_body(struct http_req *rq);
bool http_is_infer(const char *url, const char *method);
size_t http_body_limit(const struct gw_http *h, const char *url, const char *method);
int http_take(struct http_req *rq, size_t want);
int http_alloc_body(struct http_req *rq, const char *url, const char *method, size_t v);
/* The budget charged for the body's first bytes (at most its buffer's): 0, -E2BIG or -ENOSPC. */
int http_charge(struct http_req *rq, size_t bytes);
enum MHD_Result http_refuse_body(struct http_req *rq, int r);

#endif /* COLOC_GATEWAY_HTTP_IMPL_H */
