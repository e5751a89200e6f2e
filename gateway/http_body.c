// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A request's body over HTTP (http_impl.h): how much its path takes, its
 * buffer made at its whole size once (an infer's in a memfd it can be
 * passed to colocd in; its pages are made as the bytes are written), the
 * bytes charged to the budget of the client's address as they arrive, and
 * given back with the buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "http_impl.h"

/* a repository request's body (KServe's {"ready":...}, a load's parameters) */
#define HTTP_SMALL_BODY (64u << 10)
/* a body's first charge; then twice what is charged, or what arrived if more */
#define HTTP_FIRST_CHARGE (64u << 10)

/* The body's buffer back: its memfd to the pool, or freed. */
void http_free_body(struct http_req *rq)
{
	if (rq->body_memfd)
		gw_fwd_memfd_put(rq->h->fw, rq->body_memfd, &rq->job);
	else
		free(rq->body);
	rq->body_memfd = NULL;
	rq->body = NULL;
	gw_http_budget_give(rq->h->opts.budget, (struct sockaddr *)&rq->addr, rq->taken);
	rq->taken = 0;
}

bool http_is_infer(const char *url, const char *method)
{
	size_t n = strlen(url);

	return !strcmp(method, MHD_HTTP_METHOD_POST) && n >= 6 && !strcmp(url + n - 6, "/infer");
}

/*
 * The most bytes of body url takes: an infer's what its model's inputs
 * can need (a model not ready, or none, answers without one), a repository
 * request's few, else none; never over --max-body-bytes.
 */
size_t http_body_limit(const struct gw_http *h, const char *url, const char *method)
{
	size_t limit = HTTP_SMALL_BODY;

	if (http_is_infer(url, method)) {
		struct gw_model *m = http_infer_model(h, url);

		if (m) {
			limit = gw_infer_body_max(&m->cfg);
			gw_models_put(m);
		}
	} else if (strcmp(method, MHD_HTTP_METHOD_POST) || strncmp(url, "/v2/repository/", 15)) {
		return 0;
	}
	return limit < h->opts.max_body ? limit : h->opts.max_body;
}

/* Takes want - taken more bytes of the budget for rq's body: 0, -E2BIG or -ENOSPC. */
int http_take(struct http_req *rq, size_t want)
{
	int r;

	if (want <= rq->taken)
		return 0;
	r = gw_http_budget_take(rq->h->opts.budget, (struct sockaddr *)&rq->addr, want - rq->taken);
	if (!r)
		rq->taken = want;
	return r;
}

int http_charge(struct http_req *rq, size_t bytes)
{
	size_t step = rq->taken * 2 > bytes ? rq->taken * 2 : bytes;

	return bytes <= rq->taken ? 0 : http_take(rq, step < rq->cap ? step : rq->cap);
}

/*
 * Room for the body's v bytes, the first HTTP_FIRST_CHARGE of them taken
 * from the budget first (a declared length holds nothing until its bytes
 * come: one slow client behind a proxy's address would hold every client's
 * share): an infer's goes into a memfd it can be passed to colocd in (no
 * copy on the way), any other into memory. 0, -E2BIG, -ENOSPC or -ENOMEM.
 */
int http_alloc_body(struct http_req *rq, const char *url, const char *method, size_t v)
{
	int r = v > rq->h->opts.max_buffer_per_addr ?
			-E2BIG :
			http_take(rq, v < HTTP_FIRST_CHARGE ? v : HTTP_FIRST_CHARGE);

	if (r)
		return r;
	if (http_is_infer(url, method))
		rq->body_memfd = gw_fwd_memfd_get(rq->h->fw, v);
	if (rq->body_memfd) {
		rq->body = rq->body_memfd->map;
		rq->cap = rq->body_memfd->cap;
		return 0;
	}
	rq->body = malloc(v);
	rq->cap = v;
	return rq->body ? 0 : -ENOMEM;
}

/* The answer to a body refused by the budget (r from http_take), the connection closed after. */
enum MHD_Result http_refuse_body(struct http_req *rq, int r)
{
	rq->too_large = true;
	http_free_body(rq);
	if (r == -E2BIG)
		return http_error(rq->conn, MHD_HTTP_CONTENT_TOO_LARGE,
				  "the body is over what one client address may send at once "
				  "(%zu bytes of the gateway's --http-max-buffer-bytes %zu)",
				  rq->h->opts.max_buffer_per_addr, rq->h->opts.max_buffer);
	if (r == -ENOSPC)
		return http_error(rq->conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "the gateway holds as many request bodies as it may "
				  "(--http-max-buffer-bytes, or this address's share of it); "
				  "retry later");
	return MHD_NO;
}
