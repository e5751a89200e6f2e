// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * KServe v2 over HTTP (http.h): libmicrohttpd's access handler gathers a
 * request's body (bounded by max_body), routes it by path, and answers;
 * an infer is forwarded to colocd from the connection's own thread, which
 * waits for the answer (on a borrowed colocd connection when one is idle,
 * else through the forwarding pool's queue). Handlers only translate: the
 * models' state lives in models.c, the bodies' format in infer_request.c,
 * the queries in forward.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include "cli.h"
#include "version.h"
#include "http.h"
#include "http_conns.h"
#include "http_deadline.h"
#include "infer_request.h"
#include "mono_clock.h"
#include "parse_gate.h"
#include "send_buffer.h"

#define HTTP_PATH_MAX 512
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
/* a repository request's body (KServe's {"ready":...}, a load's parameters) */
#define HTTP_SMALL_BODY (64u << 10)

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
 * This connection's request is its last (HTTP_MAX_REQUESTS_PER_CONN): its
 * answer says Connection: close. A thread per connection: the thread's.
 */
static __thread bool http_last_request;

static enum MHD_Result http_send(struct MHD_Connection *conn, unsigned int status, char *body,
				 size_t len, const char *type)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body ? body : (char *)"",
								    body ? MHD_RESPMEM_MUST_FREE :
									   MHD_RESPMEM_PERSISTENT);
	enum MHD_Result r;

	if (!resp) {
		free(body);
		return MHD_NO;
	}
	if (type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (http_last_request)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result http_error(struct MHD_Connection *conn, unsigned int status, const char *fmt,
				  ...) __attribute__((format(printf, 3, 4)));

static enum MHD_Result http_error(struct MHD_Connection *conn, unsigned int status, const char *fmt,
				  ...)
{
	char why[768];
	va_list ap;
	char *body;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	body = gw_error_json(why);
	return http_send(conn, status, body, body ? strlen(body) : 0, "application/json");
}

static enum MHD_Result http_json(struct MHD_Connection *conn, unsigned int status,
				 struct json_object *o)
{
	char *body = strdup(json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));

	json_object_put(o);
	return http_send(conn, status, body, body ? strlen(body) : 0, "application/json");
}

static enum MHD_Result http_empty(struct MHD_Connection *conn, unsigned int status)
{
	return http_send(conn, status, NULL, 0, NULL);
}

/* ---- the path ----------------------------------------------------------------- */

#define HTTP_MAX_SEGS 8

struct http_path {
	int n;
	const char *seg[HTTP_MAX_SEGS];
	char buf[HTTP_PATH_MAX];
};

/* Splits url on '/' (empty segments dropped); -1 when too long or too deep. */
static int http_split(const char *url, struct http_path *p)
{
	char *save = NULL, *s;

	p->n = 0;
	if (strlen(url) >= sizeof(p->buf))
		return -1;
	snprintf(p->buf, sizeof(p->buf), "%s", url);
	for (s = strtok_r(p->buf, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
		if (p->n == HTTP_MAX_SEGS)
			return -1;
		p->seg[p->n++] = s;
	}
	return 0;
}

static bool http_is(const struct http_path *p, int i, const char *s)
{
	return i < p->n && !strcmp(p->seg[i], s);
}

/* ---- server and model metadata ---------------------------------------------------- */

static enum MHD_Result http_server_metadata(struct MHD_Connection *conn)
{
	struct json_object *o = json_object_new_object(), *ext = json_object_new_array();

	json_object_object_add(o, "name", json_object_new_string("coloc-gateway"));
	json_object_object_add(o, "version", json_object_new_string(COLOC_VERSION));
	json_object_array_add(ext, json_object_new_string("binary_tensor_data"));
	json_object_array_add(ext, json_object_new_string("model_repository"));
	json_object_object_add(o, "extensions", ext);
	return http_json(conn, MHD_HTTP_OK, o);
}

static struct json_object *http_tensors(const struct gw_tensor *t, int n)
{
	struct json_object *arr = json_object_new_array();

	for (int i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object(), *shape = json_object_new_array();

		json_object_object_add(o, "name", json_object_new_string(t[i].name));
		json_object_object_add(o, "datatype", json_object_new_string("FP32"));
		for (int d = 0; d < t[i].nr_dims; d++)
			json_object_array_add(shape, json_object_new_int64(t[i].dims[d]));
		json_object_object_add(o, "shape", shape);
		json_object_array_add(arr, o);
	}
	return arr;
}

static enum MHD_Result http_model_metadata(struct MHD_Connection *conn, const struct gw_model *m)
{
	struct json_object *o = json_object_new_object(), *versions = json_object_new_array();

	json_object_object_add(o, "name", json_object_new_string(m->cfg.name));
	json_object_array_add(versions, json_object_new_string(m->cfg.version));
	json_object_object_add(o, "versions", versions);
	json_object_object_add(o, "platform", json_object_new_string("coloc"));
	json_object_object_add(o, "inputs", http_tensors(m->cfg.inputs, m->cfg.nr_inputs));
	json_object_object_add(o, "outputs", http_tensors(m->cfg.outputs, m->cfg.nr_outputs));
	return http_json(conn, MHD_HTTP_OK, o);
}

/* ---- infer ---------------------------------------------------------------------- */

static void http_job_done(struct gw_job *job)
{
	struct http_req *rq = job->arg;

	pthread_mutex_lock(&rq->lock);
	rq->answered = true;
	pthread_cond_signal(&rq->cond);
	pthread_mutex_unlock(&rq->lock);
}

static enum MHD_Result http_infer_answer(struct http_req *rq);
static int http_take(struct http_req *rq, size_t want);

/*
 * Forwards rq's job from this connection's thread and answers it: on a
 * borrowed colocd connection, or queued to the pool and waited for.
 */
static enum MHD_Result http_infer_forward(struct http_req *rq)
{
	int r = gw_fwd_run(rq->h->fw, &rq->job);

	if (r == -EBUSY) {
		r = gw_fwd_submit(rq->h->fw, &rq->job);
		pthread_mutex_lock(&rq->lock);
		while (!r && !rq->answered)
			pthread_cond_wait(&rq->cond, &rq->lock);
		pthread_mutex_unlock(&rq->lock);
	}
	if (!r)
		return http_infer_answer(rq);
	if (r == -EAGAIN) {
		atomic_fetch_add(&rq->stats->refused_full, 1);
		return http_error(rq->conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "the gateway's queue is full (%d queries waiting or in flight); "
				  "retry later",
				  gw_fwd_pending(rq->h->fw));
	}
	return http_error(rq->conn, MHD_HTTP_SERVICE_UNAVAILABLE, "the gateway is stopping");
}

/* The answer to a query whose answer (bytes) the budget refused (r from http_take). */
static enum MHD_Result http_refuse_answer(struct http_req *rq, int r, size_t bytes)
{
	atomic_fetch_add(&rq->stats->refused_full, 1);
	if (r == -E2BIG)
		return http_error(rq->conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "this answer (%zu bytes) and its request are over what one "
				  "client address may hold (%zu bytes of --http-max-buffer-bytes); "
				  "ask for binary outputs",
				  bytes, rq->h->opts.max_buffer_per_addr);
	return http_error(rq->conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			  "the gateway holds as many requests and answers as it may "
			  "(--http-max-buffer-bytes, or this address's share of it); retry later");
}

static enum MHD_Result http_infer_start(struct http_req *rq, struct gw_model *m)
{
	struct MHD_Connection *conn = rq->conn;
	const char *hlen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						       "Inference-Header-Content-Length");
	size_t header_len = (size_t)-1, answer;
	char why[512];
	long v;
	int r;

	rq->cfg = m->cfg;
	rq->stats = &m->stats;
	atomic_fetch_add(&m->stats.requests_http, 1);
	rq->job.input_bytes = m->input_bytes;
	rq->job.output_cap = m->output_bytes;
	gw_models_put(m);
	if (hlen) {
		if (cli_parse_long(hlen, 0, (long)rq->len, &v)) {
			atomic_fetch_add(&rq->stats->refused_bad_request, 1);
			return http_error(conn, MHD_HTTP_BAD_REQUEST,
					  "Inference-Header-Content-Length must be a whole number "
					  "from 0 to the body's length (%zu)",
					  rq->len);
		}
		header_len = (size_t)v;
	}
	/* a JSON input's tensor is held as long as the body: charged alike, before it is made */
	if (http_take(rq, rq->taken + gw_infer_tensor_bound(&rq->cfg, rq->len, header_len)))
		return http_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "the gateway holds as many request bodies and tensors as it may "
				  "(--http-max-buffer-bytes, or this address's share of it); "
				  "retry later");
	if (gw_parse_gate_enter(rq->t_start + (uint64_t)rq->h->opts.timeout_ms * 1000000ull))
		return http_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "the gateway is parsing as many bodies as it may; retry later");
	r = gw_infer_parse(&rq->cfg, rq->body ? rq->body : "", rq->len, header_len, &rq->ir, why,
			   sizeof(why));
	gw_parse_gate_leave();
	if (!r && rq->ir.input_bytes != rq->job.input_bytes) {
		snprintf(why, sizeof(why), "model %s: its inputs and colocd's sizes disagree",
			 rq->cfg.name);
		r = MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	if (r) {
		atomic_fetch_add(&rq->stats->refused_bad_request, 1);
		return http_error(conn, (unsigned int)r, "%s", why);
	}
	/* the answer, colocd's output and its text, held until it is sent (http_completed) */
	answer = rq->job.output_cap + gw_infer_answer_bytes(&rq->cfg, &rq->ir);
	r = http_take(rq, rq->taken + answer);
	if (r)
		return http_refuse_answer(rq, r, answer);
	rq->output = malloc(rq->job.output_cap ? rq->job.output_cap : 1);
	if (!rq->output)
		return http_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	rq->job.tenant = rq->cfg.name;
	rq->job.input = rq->ir.input;
	/* a binary tensor still in the body's memfd goes to colocd as it lies there */
	if (rq->body_memfd && (const char *)rq->ir.input >= rq->body &&
	    (const char *)rq->ir.input + rq->ir.input_bytes <= rq->body + rq->len) {
		rq->job.input_memfd = rq->body_memfd;
		rq->job.input_offset = (size_t)((const char *)rq->ir.input - rq->body);
	}
	rq->job.output = rq->output;
	rq->job.deadline_ns = rq->t_start + (uint64_t)rq->h->opts.timeout_ms * 1000000ull;
	rq->job.done = http_job_done;
	rq->job.arg = rq;
	if (atomic_load(&rq->h->stopping))
		return http_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "the gateway is stopping");
	return http_infer_forward(rq);
}

/* The HTTP status for each way a job ends (forward.h). */
static const unsigned int http_outcome_status[] = {
	[GW_OK] = MHD_HTTP_OK,
	[GW_TIMEOUT] = MHD_HTTP_GATEWAY_TIMEOUT,
	[GW_UNREACHABLE] = MHD_HTTP_BAD_GATEWAY,
	[GW_STOPPING] = MHD_HTTP_SERVICE_UNAVAILABLE,
	[GW_REJECTED] = MHD_HTTP_SERVICE_UNAVAILABLE,
	[GW_FAILED] = MHD_HTTP_INTERNAL_SERVER_ERROR,
};

static enum MHD_Result http_infer_answer(struct http_req *rq)
{
	struct gw_model_stats *st = rq->stats;
	const struct gw_job *job = &rq->job;
	struct MHD_Response *resp;
	size_t len, header_len;
	char *body, hl[32];
	enum gw_outcome outcome = gw_job_outcome(job);
	enum MHD_Result r;

	gw_model_stats_count(st, job, rq->t_start);
	if (outcome != GW_OK)
		return http_error(rq->conn, http_outcome_status[outcome], "%s",
				  job->result ? job->why : job->res.error);
	if (job->res.output_bytes != job->output_cap)
		return http_error(rq->conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "colocd returned %zu output bytes, the model has %zu",
				  job->res.output_bytes, job->output_cap);
	if (gw_infer_response(&rq->cfg, &rq->ir, rq->output, job->res.latency_ns, job->res.exec_ns,
			      &body, &len, &header_len))
		return http_error(rq->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	if (header_len != len) {
		snprintf(hl, sizeof(hl), "%zu", header_len);
		MHD_add_response_header(resp, "Inference-Header-Content-Length", hl);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
					"application/octet-stream");
	} else {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	}
	if (http_last_request)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	r = MHD_queue_response(rq->conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return r;
}

/* ---- routing -------------------------------------------------------------------- */

static enum MHD_Result http_wrong_method(struct MHD_Connection *conn, const char *want)
{
	return http_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "this path takes %s", want);
}

/* /v2/models/NAME[/versions/V][/ready|/infer] */
static enum MHD_Result http_models(struct http_req *rq, const struct http_path *p, bool get,
				   bool post)
{
	struct MHD_Connection *conn = rq->conn;
	const char *name = p->seg[2], *version = NULL, *action = NULL;
	struct gw_model *m;
	bool infer;
	int i = 3;

	if (http_is(p, i, "versions") && i + 1 < p->n) {
		version = p->seg[i + 1];
		i += 2;
	}
	if (i < p->n)
		action = p->seg[i++];
	if (i != p->n || (action && strcmp(action, "ready") && strcmp(action, "infer")))
		return http_error(conn, MHD_HTTP_NOT_FOUND, "no such path");
	infer = action && !strcmp(action, "infer");
	if (infer ? !post : !get)
		return http_wrong_method(conn, infer ? "POST" : "GET");
	m = gw_models_get(rq->h->ms, name);
	if (!m)
		return http_error(conn, MHD_HTTP_NOT_FOUND, "unknown model '%.64s'", name);
	if (version && m->cfg.version[0] && strcmp(version, m->cfg.version)) {
		gw_models_put(m);
		return http_error(conn, MHD_HTTP_NOT_FOUND,
				  "model %s has no version '%.32s' (it serves %s)", name, version,
				  m->cfg.version);
	}
	if (atomic_load(&m->state) != GW_MODEL_READY) {
		char reason[512];
		enum gw_model_state s = atomic_load(&m->state);

		snprintf(reason, sizeof(reason), "%s", m->reason);
		if (infer)
			atomic_fetch_add(&m->stats.refused_not_ready, 1);
		gw_models_put(m);
		return http_error(conn, infer ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_BAD_REQUEST,
				  "model %s is not ready (%s%s%s)", name, gw_model_state_name(s),
				  reason[0] ? ": " : "", reason);
	}
	if (!action) {
		enum MHD_Result r = http_model_metadata(conn, m);

		gw_models_put(m);
		return r;
	}
	if (!strcmp(action, "ready")) {
		gw_models_put(m);
		return http_empty(conn, MHD_HTTP_OK);
	}
	return http_infer_start(rq, m); /* puts m */
}

/* /v2/repository/index, /v2/repository/models/NAME/load|unload */
static enum MHD_Result http_repository(struct http_req *rq, const struct http_path *p)
{
	struct coloc_err err = { 0 };
	int r;

	if (p->n == 3 && http_is(p, 2, "index"))
		return http_json(rq->conn, MHD_HTTP_OK, gw_models_index(rq->h->ms));
	if (p->n != 5 || !http_is(p, 2, "models") ||
	    !(http_is(p, 4, "load") || http_is(p, 4, "unload")))
		return http_error(rq->conn, MHD_HTTP_NOT_FOUND, "no such path");
	if (!rq->h->opts.model_control)
		return http_error(rq->conn, MHD_HTTP_FORBIDDEN, "%s", GW_MODEL_CONTROL_OFF);
	if (!gw_repo_name_ok(p->seg[3]))
		return http_error(rq->conn, MHD_HTTP_BAD_REQUEST,
				  "model names are 1..63 of [A-Za-z0-9_.-]");
	if (http_is(p, 4, "load"))
		r = gw_models_load(rq->h->ms, p->seg[3], false, &err);
	else
		r = gw_models_unload(rq->h->ms, p->seg[3], &err);
	if (r)
		return http_error(rq->conn,
				  r == -ENOENT ? MHD_HTTP_NOT_FOUND :
				  r == -EBUSY  ? MHD_HTTP_CONFLICT :
						 MHD_HTTP_BAD_REQUEST,
				  "%s", coloc_err_str(&err));
	return http_empty(rq->conn, MHD_HTTP_OK);
}

static enum MHD_Result http_route(struct http_req *rq, const char *url, const char *method)
{
	struct MHD_Connection *conn = rq->conn;
	bool get = !strcmp(method, MHD_HTTP_METHOD_GET);
	bool post = !strcmp(method, MHD_HTTP_METHOD_POST);
	struct http_path p;

	if (http_split(url, &p) || !http_is(&p, 0, "v2"))
		return http_error(conn, MHD_HTTP_NOT_FOUND, "no such path (the API is under /v2)");
	if (p.n == 1)
		return get ? http_server_metadata(conn) : http_wrong_method(conn, "GET");
	if (http_is(&p, 1, "health") && p.n == 3 &&
	    (http_is(&p, 2, "live") || http_is(&p, 2, "ready"))) {
		if (!get)
			return http_wrong_method(conn, "GET");
		if (http_is(&p, 2, "live") || gw_models_server_ready(rq->h->ms))
			return http_empty(conn, MHD_HTTP_OK);
		return http_error(conn, MHD_HTTP_BAD_REQUEST,
				  "not ready: models are loading or one is not ready (see POST "
				  "/v2/repository/index)");
	}
	if (http_is(&p, 1, "models") && p.n >= 3)
		return http_models(rq, &p, get, post);
	if (http_is(&p, 1, "repository"))
		return post ? http_repository(rq, &p) : http_wrong_method(conn, "POST");
	return http_error(conn, MHD_HTTP_NOT_FOUND, "no such path");
}

/* ---- the access handler and the connection's lifetime -------------------------------- */

/* The body's buffer back: its memfd to the pool, or freed. */
static void http_free_body(struct http_req *rq)
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

/* The most bytes of body url takes: an infer's, a repository request's few, else none. */
static size_t http_body_limit(const struct gw_http *h, const char *url, const char *method)
{
	size_t n = strlen(url);

	if (strcmp(method, MHD_HTTP_METHOD_POST))
		return 0;
	if (n >= 6 && !strcmp(url + n - 6, "/infer"))
		return h->opts.max_body;
	if (!strncmp(url, "/v2/repository/", 15))
		return HTTP_SMALL_BODY < h->opts.max_body ? HTTP_SMALL_BODY : h->opts.max_body;
	return 0;
}

/* Takes want - taken more bytes of the budget for rq's body: 0, -E2BIG or -ENOSPC. */
static int http_take(struct http_req *rq, size_t want)
{
	int r;

	if (want <= rq->taken)
		return 0;
	r = gw_http_budget_take(rq->h->opts.budget, (struct sockaddr *)&rq->addr, want - rq->taken);
	if (!r)
		rq->taken = want;
	return r;
}

/*
 * Room for the body's v bytes, taken from the budget first: an infer's
 * goes into a memfd it can be passed to colocd in (no copy on the way),
 * any other into memory. 0, -E2BIG, -ENOSPC or -ENOMEM.
 */
static int http_alloc_body(struct http_req *rq, const char *url, const char *method, size_t v)
{
	size_t n = strlen(url);
	int r = http_take(rq, v);

	if (r)
		return r;
	if (!strcmp(method, "POST") && n >= 6 && !strcmp(url + n - 6, "/infer"))
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
static enum MHD_Result http_refuse_body(struct http_req *rq, int r)
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
		if (ci && ci->client_addr)
			memcpy(&rq->addr, ci->client_addr,
			       ci->client_addr->sa_family == AF_INET6 ?
				       sizeof(struct sockaddr_in6) :
				       sizeof(struct sockaddr_in));
		pthread_mutex_init(&rq->lock, NULL);
		pthread_cond_init(&rq->cond, NULL);
		*con_cls = rq;
		rq->limit = http_body_limit(h, url, method);
		if ((cl && cli_parse_long(cl, 0, (long)h->opts.max_body, &v)) ||
		    (rq->limit && (size_t)v > rq->limit)) {
			rq->too_large = true;
			return http_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
					  "the body is over the limit of %zu bytes",
					  rq->limit ? rq->limit : h->opts.max_body);
		}
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
			if (http_take(rq, cap)) {
				/* no answer can be queued mid-body: the connection is closed */
				rq->too_large = true;
				http_free_body(rq);
				rq->len = rq->cap = 0;
				return MHD_NO;
			}
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
		memcpy(rq->body + rq->len, upload, n);
		rq->len += n;
		return MHD_YES;
	}
	/* its answer made within --timeout-ms and sent within the deadline after */
	http_last_request = h->dl && gw_http_deadline_received(
					     conn, (uint64_t)h->opts.timeout_ms * 1000000ull) >=
					     HTTP_MAX_REQUESTS_PER_CONN;
	if (rq->too_large)
		return http_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
				  "the body is over the limit of %zu bytes", rq->limit);
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
		h->conns = gw_http_conns_create(opts->max_conns_per_ip);
	if (opts->max_conns_per_ip > 0 && !h->conns) {
		r = coloc_err_set(err, -ENOMEM, "out of memory");
		goto cleanup;
	}
	if (opts->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (opts->request_timeout_ms > 0) {
		r = gw_http_deadline_start(opts->request_timeout_ms, &h->dl, err);
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
