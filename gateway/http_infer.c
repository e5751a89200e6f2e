// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An infer over HTTP (http_impl.h): the body parsed (infer_request.c) with
 * its tensor and answer charged to the budget first, the query sent to
 * colocd from the connection's own thread on a borrowed connection
 * (gw_fwd_run), or queued to the forwarding pool and waited for, and the
 * answer written as JSON or binary tensor data.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "http_impl.h"
#include "parse_gate.h"

static void http_job_done(struct gw_job *job)
{
	struct http_req *rq = job->arg;

	pthread_mutex_lock(&rq->lock);
	rq->answered = true;
	pthread_cond_signal(&rq->cond);
	pthread_mutex_unlock(&rq->lock);
}

static enum MHD_Result http_infer_answer(struct http_req *rq);

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

enum MHD_Result http_infer_start(struct http_req *rq, struct gw_model *m)
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
	rq->job.tenant = rq->cfg.tenant;
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
	char *body, hl[32], why[128];
	enum gw_outcome outcome = gw_job_outcome(job);
	enum MHD_Result r;

	gw_model_stats_count(st, job, rq->t_start);
	if (outcome != GW_OK) {
		gw_job_client_why(job, why, sizeof(why));
		return http_error(rq->conn, http_outcome_status[outcome], "%s", why);
	}
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
