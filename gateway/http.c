// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * KServe v2 over HTTP (http.h): libmicrohttpd's access handler gathers a
 * request's body (bounded by max_body), routes it by path, and answers;
 * an infer is forwarded to colocd from the connection's own thread, which
 * waits for the answer (on a borrowed colocd connection when one is idle,
 * else through the forwarding pool's queue). Handlers only translate: the
 * models' state lives in models.c, the bodies' format in infer_request.c,
 * the queries in forward.c. Here: the daemon started and stopped, and the
 * access handler that gathers a request's body (http_body.c) and hands the
 * whole request to its path's handler (http_route.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include "cli.h"
#include "http_conns.h"
#include "http_deadline.h"
#include "http_impl.h"
#include "mono_clock.h"
#include "send_buffer.h"

/*
 * A connection's buffer: MHD reads a body in pieces of up to half of it, so
 * a 600 KB tensor takes ten reads, not forty; but MHD clears all of it for
 * each request, so a larger one costs CPU on every query
 * (docs/measurements/gateway.md, 2026-12-05).
 */
#define HTTP_CONN_MEMORY (128u << 10)
#define HTTP_CONN_INCREMENT (64u << 10)
/* requests on one connection: the last one's answer closes it (nginx's keepalive_requests) */
#define HTTP_MAX_REQUESTS_PER_CONN 1000u

__thread bool http_last_request;

/* A body refused mid-way: no answer can be queued then, so the connection is closed. */
static enum MHD_Result http_cut_body(struct http_req *rq)
{
	rq->too_large = true;
	http_free_body(rq);
	rq->len = rq->cap = 0;
	return MHD_NO;
}

/*
 * The answer to a body over its path's limit: an infer's from its path
 * (404 for no such model, 503 not ready, else 413 with what the model's
 * inputs can need), from its headers when its Content-Length says so.
 */
static enum MHD_Result http_too_large(struct http_req *rq, const char *url, const char *method)
{
	rq->too_large = true;
	if (http_is_infer(url, method))
		return http_route(rq, url, method);
	return http_error(rq->conn, MHD_HTTP_CONTENT_TOO_LARGE,
			  "the body is over the limit of %zu bytes",
			  rq->limit ? rq->limit : rq->h->opts.max_body);
}

/* MHD_get_connection_values' iterator: the last X-Forwarded-For's value in *cls. */
static enum MHD_Result http_last_xff(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	(void)kind;
	if (key && value && !strcasecmp(key, "X-Forwarded-For"))
		*(const char **)cls = value;
	return MHD_YES;
}

/*
 * The client's address, the budget's key: the connection's, or from a
 * trusted proxy (--trusted-proxy) the client its X-Forwarded-For names.
 */
static void http_client_addr(struct http_req *rq, const struct sockaddr *peer)
{
	const char *xff = NULL;

	if (!peer)
		return;
	memcpy(&rq->addr, peer,
	       peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					     sizeof(struct sockaddr_in));
	if (!gw_trusted_proxies_has(rq->h->opts.trusted, peer))
		return;
	MHD_get_connection_values(rq->conn, MHD_HEADER_KIND, http_last_xff, &xff);
	if (xff)
		gw_trusted_proxies_client(rq->h->opts.trusted, xff, &rq->addr);
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *conn, const char *url,
				   const char *method, const char *version, const char *upload,
				   size_t *upload_size, void **con_cls)
{
	struct gw_http *h = cls;
	struct http_req *rq = *con_cls;

	(void)version;
	if (!rq) {
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_TRANSFER_ENCODING);
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		long v = 0;
		int r;

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		rq->h = h;
		rq->conn = conn;
		rq->t_start = coloc_now_ns();
		http_client_addr(rq, ci ? ci->client_addr : NULL);
		pthread_mutex_init(&rq->lock, NULL);
		pthread_cond_init(&rq->cond, NULL);
		*con_cls = rq;
		rq->limit = http_body_limit(h, url, method);
		if ((cl && cli_parse_long(cl, 0, (long)h->opts.max_body, &v)) ||
		    (rq->limit && (size_t)v > rq->limit))
			return http_too_large(rq, url, method);
		if (!rq->limit && (v > 0 || (!cl && te))) {
			rq->too_large = true;
			return http_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
					  "%s %.64s takes no body", method, url);
		}
		/* the body's whole size, once: no copies as it grows */
		if (v > 0) {
			r = http_alloc_body(rq, url, method, (size_t)v);
			if (r)
				return http_refuse_body(rq, r);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (rq->too_large)
			return MHD_YES;
		if (n > rq->limit - rq->len) {
			rq->too_large = true;
			http_free_body(rq);
			rq->len = rq->cap = 0;
			return MHD_YES;
		}
		if (rq->len + n > rq->cap) {
			size_t cap = rq->cap ? rq->cap : 4096;
			char *b;

			while (cap < rq->len + n)
				cap *= 2;
			if (cap > rq->limit)
				cap = rq->limit;
			/* a chunked body, or more than Content-Length said: taken as it grows */
			if (http_take(rq, cap))
				return http_cut_body(rq);
			/* more than Content-Length said: out of the memfd, into memory */
			b = realloc(rq->body_memfd ? NULL : rq->body, cap);
			if (!b)
				return MHD_NO;
			if (rq->body_memfd) {
				struct gw_memfd *m = rq->body_memfd;

				memcpy(b, rq->body, rq->len);
				rq->body_memfd = NULL;
				gw_fwd_memfd_put(rq->h->fw, m, &rq->job);
			}
			rq->body = b;
			rq->cap = cap;
		}
		if (http_charge(rq, rq->len + n))
			return http_cut_body(rq);
		memcpy(rq->body + rq->len, upload, n);
		rq->len += n;
		return MHD_YES;
	}
	/* its answer made within --timeout-ms and sent within the deadline after */
	http_last_request = h->dl && gw_http_deadline_received(
					     conn, (uint64_t)h->opts.timeout_ms * 1000000ull) >=
					     HTTP_MAX_REQUESTS_PER_CONN;
	if (rq->too_large)
		return http_too_large(rq, url, method);
	return http_route(rq, url, method);
}

static void http_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			   enum MHD_RequestTerminationCode toe)
{
	struct http_req *rq = *con_cls;
	struct gw_http *h = cls;

	(void)toe;
	if (h->dl)
		gw_http_deadline_answered(conn);
	if (!rq)
		return;
	gw_infer_request_free(&rq->ir);
	free(rq->output);
	http_free_body(rq);
	pthread_mutex_destroy(&rq->lock);
	pthread_cond_destroy(&rq->cond);
	free(rq);
	*con_cls = NULL;
}

/*
 * MHD_OPTION_URI_LOG_CALLBACK's: a request's first line parsed, before its
 * header lines, so a pipelined request stalled inside them is held to the
 * rate floor too (http_deadline.h). NULL: the access handler's first call
 * makes the request's state.
 */
static void *http_request_line(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct gw_http *h = cls;

	(void)uri;
	if (h->dl)
		gw_http_deadline_begun(conn);
	return NULL;
}

/* MHD_OPTION_NOTIFY_CONNECTION's callback: the deadline's and the per-client count's. */
static void http_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	struct gw_http *h = cls;

	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		gw_send_buffer_cap_mhd(conn, GW_SEND_BUFFER_BYTES);
	if (h->dl)
		gw_http_deadline_notify(h->dl, conn, socket_context, code);
	if (h->conns)
		gw_http_conns_notify(h->conns, conn, code);
}

static void http_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	fprintf(stderr, "coloc-gateway: http: ");
	vfprintf(stderr, fmt, ap);
}

/* What gw_http_start made, beside the daemon, released. */
static void http_free(struct gw_http *h)
{
	gw_http_deadline_stop(h->dl);
	gw_http_conns_destroy(h->conns);
	free(h);
}

int gw_http_start(const struct gw_http_opts *opts, struct gw_models *ms, struct gw_fwd *fw,
		  struct gw_http **out, struct coloc_err *err)
{
	struct gw_http *h = calloc(1, sizeof(*h));
	/* a thread per connection: an infer blocks it, not other connections */
	unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			     MHD_USE_POLL | MHD_USE_ERROR_LOG;
	int r;

	*out = NULL;
	if (!h)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	h->opts = *opts;
	h->ms = ms;
	h->fw = fw;
	if (opts->max_conns_per_ip > 0)
		h->conns = gw_http_conns_create(opts->max_conns_per_ip, opts->trusted);
	if (opts->max_conns_per_ip > 0 && !h->conns) {
		r = coloc_err_set(err, -ENOMEM, "out of memory");
		goto cleanup;
	}
	if (opts->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (opts->request_timeout_ms > 0) {
		r = gw_http_deadline_start(opts->request_timeout_ms, opts->min_rate, &h->dl, err);
		if (r)
			goto cleanup;
	}
	h->d = MHD_start_daemon(flags, 0, h->conns ? gw_http_conns_accept : NULL, h->conns,
				http_access, h, MHD_OPTION_EXTERNAL_LOGGER, http_log, h,
				MHD_OPTION_SOCK_ADDR, &h->opts.addr, MHD_OPTION_CONNECTION_LIMIT,
				(unsigned int)opts->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned int)opts->idle_timeout_s,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
				MHD_OPTION_CONNECTION_MEMORY_INCREMENT, (size_t)HTTP_CONN_INCREMENT,
				MHD_OPTION_NOTIFY_COMPLETED, http_completed, h,
				MHD_OPTION_URI_LOG_CALLBACK, http_request_line, h,
				MHD_OPTION_NOTIFY_CONNECTION, http_notify, h, MHD_OPTION_END);
	if (!h->d) {
		r = coloc_err_set(err, -EADDRINUSE,
				  "cannot listen for HTTP (address in use or not this machine's?)");
		goto cleanup;
	}
	*out = h;
	return 0;
cleanup:
	http_free(h);
	return r;
}

int gw_http_port(struct gw_http *h)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);

	return info ? info->port : -1;
}

void gw_http_quiesce(struct gw_http *h)
{
	atomic_store(&h->stopping, true);
}

void gw_http_stop(struct gw_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	http_free(h);
}
