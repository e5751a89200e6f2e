// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The gRPC server on gRPC's C core (grpc_server.h, --grpc-server core): one
 * completion queue polled by a few threads, a number of calls requested
 * ahead of clients, and each call a small state machine whose tag is the
 * call itself:
 *
 *   NEW   gRPC handed us a call: request the next one; refuse it at once
 *         (RESOURCE_EXHAUSTED) when max_calls are under way or its client
 *         address (a trusted proxy's: the one x-forwarded-for names) has
 *         max_waiting_per_ip calls waiting for their message (the health
 *         methods are counted in neither: a flood of calls cannot make
 *         the gateway look dead), else read its one message, which must
 *         come within the read deadline (grpc_core_bounds.h): a reaper
 *         thread cancels the calls still waiting for theirs
 *         (DEADLINE_EXCEEDED), so streams opened and never sent on do not
 *         hold max_calls; one connection has at most max_streams calls at
 *         once
 *   READ  the message is here: the method named by its path runs
 *         (grpc_api.c) and answers now (an infer: after waiting for colocd
 *         on this thread while another thread is left to poll) or from the
 *         forwarding pool's thread
 *   SENT  initial metadata, the message and the status went out and the
 *         client side closed: the call is freed
 *
 * gRPC enforces the message size limit (a channel argument: what the
 * widest model of the repository at start can need) before a byte
 * reaches us, and cancels a call past its deadline on its own; we
 * pass the deadline on to the forwarded query so that it is not waited
 * for longer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/support/alloc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <grpc/grpc.h>
#include "addr.h"
#include "client_key.h"
#include "grpc_core_bounds.h"
#include "grpc_server_impl.h"
#include "mono_clock.h"

#define GRPC_MAX_THREADS 64
#define GRPC_CALLS_AHEAD 16 /* calls requested from gRPC before clients make them */
#define GRPC_STREAM_WINDOW (8 << 20)
#define CORE_XFF_MAX 256 /* of a call's x-forwarded-for, its end kept (as the own server) */

enum { CALL_NEW, CALL_READ, CALL_SENT };

/* A call: what the methods see, then gRPC's state of it */
struct core_call {
	struct gw_grpc_call pub;
	struct core *g;
	int phase;
	grpc_call *call;
	grpc_call_details details;
	grpc_metadata_array metadata;
	grpc_byte_buffer *payload, *reply;
	grpc_slice msg; /* the request message's bytes, in one piece (or in pub.msg_memfd) */
	grpc_slice status_details;
	int cancelled;
	bool counted;
	struct gw_client_key client; /* of pub.client */
	uint64_t read_by_ns; /* coloc_now_ns() when its message must have come */
	struct core_call *read_prev, *read_next; /* on the server's list while reading */
	bool reading;
};

struct core {
	struct gw_grpc base;
	struct gw_grpc_core_bounds bounds;
	grpc_server *server;
	grpc_completion_queue *cq;
	int port;
	int nr_threads;
	pthread_t threads[GRPC_MAX_THREADS];
	atomic_int calls; /* read or being answered */
	atomic_bool stopping;
	bool shut; /* shutdown_and_notify called */
	pthread_t reaper;
	bool reaper_started, reaper_quit; /* reaper_quit under read_lock */
	pthread_mutex_t read_lock;
	pthread_cond_t read_cond; /* CLOCK_MONOTONIC */
	struct core_call *read_head, *read_tail; /* calls waiting for their message, oldest first */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool shutdown_done; /* its tag came back */
	char shutdown_tag;
};

/* Off the list of calls waiting for their message (if on it). */
static void grpc_reading_end(struct core_call *c)
{
	struct core *g = c->g;

	pthread_mutex_lock(&g->read_lock);
	if (c->reading) {
		*(c->read_prev ? &c->read_prev->read_next : &g->read_head) = c->read_next;
		*(c->read_next ? &c->read_next->read_prev : &g->read_tail) = c->read_prev;
		c->reading = false;
	}
	pthread_mutex_unlock(&g->read_lock);
}

/* Under read_lock: the counted calls on the list from c's client address. */
static int grpc_reading_from(const struct core_call *c)
{
	int n = 0;

	for (const struct core_call *o = c->g->read_head; o; o = o->read_next)
		n += o->counted && gw_client_key_eq(&o->client, &c->client);
	return n;
}

/*
 * On the list, due by now + the read deadline: the latest, so the list
 * stays in order. False, not on it, when c is counted and its address has
 * max_waiting_per_ip calls on it already.
 */
static bool grpc_reading_begin(struct core_call *c)
{
	struct core *g = c->g;
	int max_waiting = g->base.opts.max_waiting_per_ip;

	pthread_mutex_lock(&g->read_lock);
	if (c->counted && max_waiting > 0 && grpc_reading_from(c) >= max_waiting) {
		pthread_mutex_unlock(&g->read_lock);
		return false;
	}
	c->read_by_ns = coloc_now_ns() + g->bounds.read_ns;
	c->read_prev = g->read_tail;
	c->read_next = NULL;
	*(g->read_tail ? &g->read_tail->read_next : &g->read_head) = c;
	g->read_tail = c;
	c->reading = true;
	if (c->read_prev == NULL)
		pthread_cond_signal(&g->read_cond);
	pthread_mutex_unlock(&g->read_lock);
	return true;
}

/* Cancels each call whose message did not come in time; sleeps until the next is due. */
static void *grpc_reaper(void *arg)
{
	struct core *g = arg;

	pthread_mutex_lock(&g->read_lock);
	while (!g->reaper_quit) {
		struct core_call *c = g->read_head;
		uint64_t now = coloc_now_ns();
		struct timespec ts;

		if (c && c->read_by_ns <= now) {
			/* its RECV_MESSAGE completes, and the call ends, on a queue thread */
			*(c->read_next ? &c->read_next->read_prev : &g->read_tail) = NULL;
			g->read_head = c->read_next;
			c->reading = false;
			grpc_call_cancel_with_status(c->call, GRPC_STATUS_DEADLINE_EXCEEDED,
						     "no request message within the gateway's "
						     "read timeout (or its rate floor)",
						     NULL);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (c) {
			uint64_t at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
				      (c->read_by_ns - now);

			ts.tv_sec = (time_t)(at / 1000000000ull);
			ts.tv_nsec = (long)(at % 1000000000ull);
			pthread_cond_timedwait(&g->read_cond, &g->read_lock, &ts);
		} else {
			pthread_cond_wait(&g->read_cond, &g->read_lock);
		}
	}
	pthread_mutex_unlock(&g->read_lock);
	return NULL;
}

static void grpc_reaper_stop(struct core *g)
{
	if (!g->reaper_started)
		return;
	pthread_mutex_lock(&g->read_lock);
	g->reaper_quit = true;
	pthread_cond_signal(&g->read_cond);
	pthread_mutex_unlock(&g->read_lock);
	pthread_join(g->reaper, NULL);
	g->reaper_started = false;
}

static void grpc_call_free(struct core_call *c)
{
	grpc_reading_end(c);
	if (c->pub.ctx_free)
		c->pub.ctx_free(c->pub.ctx);
	if (c->call)
		grpc_call_unref(c->call);
	grpc_call_details_destroy(&c->details);
	grpc_metadata_array_destroy(&c->metadata);
	if (c->payload)
		grpc_byte_buffer_destroy(c->payload);
	if (c->reply)
		grpc_byte_buffer_destroy(c->reply);
	grpc_slice_unref(c->status_details);
	grpc_slice_unref(c->msg);
	gw_fwd_memfd_put(c->pub.fw, c->pub.msg_memfd, NULL);
	if (c->counted)
		atomic_fetch_sub(&c->g->calls, 1);
	free(c);
}

/* Asks gRPC for the next call; false when the server is going. */
static bool grpc_request_next(struct core *g)
{
	struct core_call *c = calloc(1, sizeof(*c));

	if (!c)
		return false;
	c->g = g;
	c->pub.g = &g->base;
	c->pub.ms = g->base.ms;
	c->pub.fw = g->base.fw;
	c->phase = CALL_NEW;
	c->status_details = grpc_empty_slice();
	c->msg = grpc_empty_slice();
	grpc_call_details_init(&c->details);
	grpc_metadata_array_init(&c->metadata);
	if (grpc_server_request_call(g->server, &c->call, &c->details, &c->metadata, g->cq, g->cq,
				     c) != GRPC_CALL_OK) {
		grpc_call_free(c);
		return false;
	}
	return true;
}

/* The last batch: metadata, the reply if any, the status; then wait for the close. */
static void grpc_send(struct core_call *c, grpc_status_code code)
{
	grpc_op ops[4];
	size_t n = 0;

	memset(ops, 0, sizeof(ops));
	ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (c->reply) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = c->reply;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = code;
	ops[n++].data.send_status_from_server.status_details = &c->status_details;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
	c->phase = CALL_SENT;
	if (grpc_call_start_batch(c->call, ops, n, c, NULL) != GRPC_CALL_OK)
		grpc_call_free(c);
}

/* The server's answer (grpc_server_impl.h): the status, and the message if any. */
static void core_answer(struct gw_grpc_call *pub, enum gw_grpc_status code, const char *why,
			uint8_t *msg, size_t len)
{
	struct core_call *c = (struct core_call *)pub;

	if (msg) {
		grpc_slice s = grpc_slice_new_with_user_data(msg + GW_GRPC_HEADROOM, len, free, msg);

		c->reply = grpc_raw_byte_buffer_create(&s, 1);
		grpc_slice_unref(s);
	}
	grpc_slice_unref(c->status_details);
	c->status_details = grpc_slice_from_copied_string(why);
	grpc_send(c, (grpc_status_code)code);
}

/* A refusal of the server's own (the methods' go through grpc_server.c). */
static void core_fail(struct core_call *c, grpc_status_code code, const char *why)
{
	core_answer(&c->pub, (enum gw_grpc_status)code, why, NULL, 0);
}

/* The client's deadline in CLOCK_MONOTONIC ns (coloc_now_ns), or 0 for none. */
static uint64_t grpc_deadline_ns(gpr_timespec deadline)
{
	gpr_timespec now = gpr_now(deadline.clock_type);
	int64_t left_ms;

	if (!gpr_time_cmp(deadline, gpr_inf_future(deadline.clock_type)) ||
	    deadline.tv_sec > INT64_MAX / 2000)
		return 0;
	left_ms = gpr_time_to_millis(gpr_time_sub(deadline, now));
	return coloc_now_ns() + (uint64_t)(left_ms > 0 ? left_ms : 0) * 1000000ull;
}

/* Whether c is one of the health methods, which max_calls does not count. */
static bool grpc_is_health(const struct core_call *c)
{
	static const char *const health[] = { "/inference.GRPCInferenceService/ServerLive",
					      "/inference.GRPCInferenceService/ServerReady",
					      "/inference.GRPCInferenceService/ModelReady" };

	for (size_t i = 0; i < sizeof(health) / sizeof(*health); i++)
		if (!grpc_slice_str_cmp(c->details.method, health[i]))
			return true;
	return false;
}

/*
 * The client's address from gRPC's peer string ("ipv4:1.2.3.4:5",
 * "ipv6:[::1]:5", the brackets percent-encoded by newer gRPCs); of
 * another kind (unix:), family 0: the answer budget's one key for those.
 */
static void grpc_client_addr(grpc_call *call, struct sockaddr_storage *ss)
{
	char *peer = grpc_call_get_peer(call), addr[80];
	socklen_t len;
	size_t n = 0;

	memset(ss, 0, sizeof(*ss));
	if (!peer)
		return;
	if (!strncmp(peer, "ipv4:", 5) || !strncmp(peer, "ipv6:", 5)) {
		for (const char *p = peer + 5; *p && n + 1 < sizeof(addr); p++) {
			if (!strncmp(p, "%5B", 3) || !strncmp(p, "%5D", 3)) {
				addr[n++] = p[2] == 'B' ? '[' : ']';
				p += 2;
			} else {
				addr[n++] = *p;
			}
		}
		addr[n] = '\0';
		gw_parse_addr(addr, ss, &len, 1); /* all zero when it is not one */
	}
	gpr_free(peer);
}

/*
 * From a trusted proxy (trusted_proxy.h), the call's client is the one its
 * x-forwarded-for names (the last such field), as on the own server.
 */
static void grpc_client_forwarded(struct core_call *c)
{
	const struct gw_trusted_proxies *tp = c->g->base.opts.trusted;
	struct sockaddr_storage client;
	char xff[CORE_XFF_MAX] = "";

	if (!gw_trusted_proxies_has(tp, (struct sockaddr *)&c->pub.client))
		return;
	for (size_t i = 0; i < c->metadata.count; i++)
		if (!grpc_slice_str_cmp(c->metadata.metadata[i].key, "x-forwarded-for"))
			gw_trusted_proxies_xff_tail(
				xff, sizeof(xff),
				(const char *)GRPC_SLICE_START_PTR(c->metadata.metadata[i].value),
				GRPC_SLICE_LENGTH(c->metadata.metadata[i].value));
	if (xff[0] && !gw_trusted_proxies_client(tp, xff, &client))
		c->pub.client = client;
}

static void grpc_call_arrived(struct core_call *c)
{
	struct core *g = c->g;
	uint64_t client = grpc_deadline_ns(c->details.deadline);
	grpc_op op;

	c->pub.t_start = coloc_now_ns();
	grpc_client_addr(c->call, &c->pub.client);
	grpc_client_forwarded(c);
	c->client = gw_client_key_of((struct sockaddr *)&c->pub.client);
	c->pub.deadline_ns = c->pub.t_start + (uint64_t)g->base.opts.timeout_ms * 1000000ull;
	if (client && client < c->pub.deadline_ns)
		c->pub.deadline_ns = client;
	if (!atomic_load(&g->stopping))
		grpc_request_next(g);
	c->counted = !grpc_is_health(c);
	if (c->counted && atomic_fetch_add(&g->calls, 1) >= g->base.opts.max_calls) {
		char why[128];

		snprintf(why, sizeof(why), "the gateway is answering %d calls already; retry later",
			 g->base.opts.max_calls);
		core_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, why);
		return;
	}
	if (atomic_load(&g->stopping)) {
		core_fail(c, GRPC_STATUS_UNAVAILABLE, "the gateway is stopping");
		return;
	}
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &c->payload;
	c->phase = CALL_READ;
	if (!grpc_reading_begin(c)) {
		char why[160];

		snprintf(why, sizeof(why),
			 "this client address has %d calls waiting for their request message "
			 "(--grpc-max-waiting-per-ip); retry later",
			 g->base.opts.max_waiting_per_ip);
		core_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, why);
		return;
	}
	if (grpc_call_start_batch(c->call, &op, 1, c, NULL) != GRPC_CALL_OK)
		grpc_call_free(c);
}

/*
 * The message's slices copied into one of the forwarding pool's memfds
 * (c->pub.msg_memfd); false, with none kept, when none could be had.
 */
static bool grpc_message_into_memfd(struct core_call *c, grpc_byte_buffer_reader *reader,
				    size_t len)
{
	struct gw_memfd *m = len ? gw_fwd_memfd_get(c->pub.fw, len) : NULL;
	size_t at = 0;
	grpc_slice s;

	if (!m)
		return false;
	while (grpc_byte_buffer_reader_next(reader, &s)) {
		size_t n = GRPC_SLICE_LENGTH(s);

		if (at <= len && n <= len - at)
			memcpy((char *)m->map + at, GRPC_SLICE_START_PTR(s), n);
		at += n;
		grpc_slice_unref(s);
	}
	if (at != len) {
		gw_fwd_memfd_put(c->pub.fw, m, NULL);
		return false;
	}
	c->pub.msg_memfd = m;
	return true;
}

static void grpc_message_read(struct core_call *c)
{
	const struct gw_grpc_method *method = NULL;
	grpc_byte_buffer_reader reader;
	const uint8_t *msg;
	size_t len;

	if (!c->payload) {
		core_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "the call carried no message");
		return;
	}
	if (!grpc_byte_buffer_reader_init(&reader, c->payload)) {
		core_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "the message cannot be read");
		return;
	}
	for (size_t i = 0; i < gw_grpc_nr_methods && !method; i++)
		if (!grpc_slice_str_cmp(c->details.method, gw_grpc_methods[i].path))
			method = &gw_grpc_methods[i];
	/* the reader's buffer_out: the message decompressed, as the reader reads it */
	len = grpc_byte_buffer_length(reader.buffer_out);
	if (method && method->into_memfd && grpc_message_into_memfd(c, &reader, len)) {
		msg = (const uint8_t *)c->pub.msg_memfd->map;
	} else {
		grpc_byte_buffer_reader_destroy(&reader);
		if (!grpc_byte_buffer_reader_init(&reader, c->payload)) {
			core_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "the message cannot be read");
			return;
		}
		c->msg = grpc_byte_buffer_reader_readall(&reader);
		msg = GRPC_SLICE_START_PTR(c->msg);
		len = GRPC_SLICE_LENGTH(c->msg);
	}
	grpc_byte_buffer_reader_destroy(&reader);
	grpc_byte_buffer_destroy(c->payload);
	c->payload = NULL;
	if (method)
		method->handle(&c->pub, msg, len);
	else
		core_fail(c, GRPC_STATUS_UNIMPLEMENTED, "no such method");
}

static void *grpc_thread(void *arg)
{
	struct core *g = arg;

	for (;;) {
		grpc_event ev =
			grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		struct core_call *c = ev.tag;

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		if (ev.tag == &g->shutdown_tag) {
			pthread_mutex_lock(&g->lock);
			g->shutdown_done = true;
			pthread_cond_broadcast(&g->cond);
			pthread_mutex_unlock(&g->lock);
			continue;
		}
		if (c->phase == CALL_READ)
			grpc_reading_end(c);
		if (c->phase == CALL_SENT || !ev.success) {
			/* answered, or gRPC gave up on the call (the server is stopping) */
			if (c->phase == CALL_READ && c->call)
				core_fail(c, GRPC_STATUS_CANCELLED, "the call was cancelled");
			else
				grpc_call_free(c);
			continue;
		}
		if (c->phase == CALL_NEW)
			grpc_call_arrived(c);
		else
			grpc_message_read(c);
	}
	return NULL;
}

/* The server's own state, once its threads are gone; gRPC's last user shuts it down. */
static void core_free(struct core *g)
{
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->read_lock);
	pthread_cond_destroy(&g->read_cond);
	free(g);
	grpc_shutdown();
}

static int grpc_fail_start(struct core *g, struct coloc_err *err, int code, const char *why)
{
	if (g->server)
		grpc_server_destroy(g->server);
	if (g->cq) {
		grpc_completion_queue_shutdown(g->cq);
		while (grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
			       .type != GRPC_QUEUE_SHUTDOWN)
			;
		grpc_completion_queue_destroy(g->cq);
	}
	core_free(g);
	return coloc_err_set(err, code, "%s", why);
}

static int core_port(struct gw_grpc *base);
static void core_quiesce(struct gw_grpc *base);
static void core_stop(struct gw_grpc *base);

static const struct gw_grpc_ops core_ops = {
	.port = core_port,
	.quiesce = core_quiesce,
	.stop = core_stop,
	.answer = core_answer,
};

int gw_grpc_core_start(const struct gw_grpc_opts *opts, struct gw_models *ms, struct gw_fwd *fw,
		       struct gw_grpc **out, struct coloc_err *err)
{
	struct core *g = calloc(1, sizeof(*g));
	struct gw_grpc_core_bounds bounds = gw_grpc_core_bounds_of(opts, ms);
	grpc_arg args[] = {
		{ .type = GRPC_ARG_INTEGER,
		  .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
		  .value.integer =
			  bounds.message_max > INT32_MAX ? INT32_MAX : (int)bounds.message_max },
		{ .type = GRPC_ARG_INTEGER,
		  .key = (char *)GRPC_ARG_MAX_CONNECTION_IDLE_MS,
		  .value.integer = opts->idle_timeout_ms ? opts->idle_timeout_ms : INT_MAX },
		/* a stream's window: a whole tensor in one flight, not 64 KB at a time */
		{ .type = GRPC_ARG_INTEGER,
		  .key = (char *)GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES,
		  .value.integer = GRPC_STREAM_WINDOW },
		/* streams held open on one connection cannot take every call */
		{ .type = GRPC_ARG_INTEGER,
		  .key = (char *)GRPC_ARG_MAX_CONCURRENT_STREAMS,
		  .value.integer = opts->max_streams },
		/* a port already taken is an error, not a port shared with another server */
		{ .type = GRPC_ARG_INTEGER,
		  .key = (char *)GRPC_ARG_ALLOW_REUSEPORT,
		  .value.integer = 0 },
	};
	grpc_channel_args cargs = { sizeof(args) / sizeof(*args), args };
	grpc_server_credentials *creds;

	*out = NULL;
	if (!g)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	grpc_init();
	g->bounds = bounds;
	g->base.ops = &core_ops;
	g->base.opts = *opts;
	g->base.ms = ms;
	g->base.fw = fw;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	pthread_mutex_init(&g->read_lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&g->read_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	g->cq = grpc_completion_queue_create_for_next(NULL);
	g->server = grpc_server_create(&cargs, NULL);
	if (!g->cq || !g->server)
		return grpc_fail_start(g, err, -ENOMEM, "cannot create the gRPC server");
	grpc_server_register_completion_queue(g->server, g->cq, NULL);
	creds = grpc_insecure_server_credentials_create();
	g->port = grpc_server_add_http2_port(g->server, opts->addr, creds);
	grpc_server_credentials_release(creds);
	if (g->port <= 0)
		return grpc_fail_start(g, err, -EADDRINUSE,
				       "cannot listen for gRPC (address in use or not this "
				       "machine's?)");
	grpc_server_start(g->server);
	g->reaper_started = !pthread_create(&g->reaper, NULL, grpc_reaper, g);
	if (!g->reaper_started) {
		core_stop(&g->base);
		return coloc_err_set(err, -EAGAIN, "cannot start the gRPC read-timeout thread");
	}
	for (int i = 0; i < GRPC_CALLS_AHEAD + opts->threads; i++)
		grpc_request_next(g);
	for (int i = 0; i < opts->threads && i < GRPC_MAX_THREADS; i++) {
		if (pthread_create(&g->threads[i], NULL, grpc_thread, g))
			break;
		g->nr_threads++;
	}
	if (!g->nr_threads) {
		core_stop(&g->base);
		return coloc_err_set(err, -EAGAIN, "cannot start the gRPC threads");
	}
	*out = &g->base;
	return 0;
}

static int core_port(struct gw_grpc *base)
{
	struct core *g = (struct core *)base;

	return g->port;
}

static void core_quiesce(struct gw_grpc *base)
{
	struct core *g = (struct core *)base;

	if (g->shut)
		return;
	atomic_store(&g->stopping, true);
	g->shut = true;
	grpc_server_shutdown_and_notify(g->server, g->cq, &g->shutdown_tag);
}

static void core_stop(struct gw_grpc *base)
{
	struct core *g = (struct core *)base;

	core_quiesce(base);
	grpc_server_cancel_all_calls(g->server);
	/* without a thread (none could start) the only calls are the requested ones */
	while (!g->nr_threads && !g->shutdown_done) {
		grpc_event ev =
			grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.tag == &g->shutdown_tag)
			g->shutdown_done = true;
		else if (ev.type == GRPC_OP_COMPLETE)
			grpc_call_free(ev.tag);
	}
	pthread_mutex_lock(&g->lock);
	while (!g->shutdown_done)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
	grpc_completion_queue_shutdown(g->cq);
	for (int i = 0; i < g->nr_threads; i++)
		pthread_join(g->threads[i], NULL);
	grpc_reaper_stop(g);
	grpc_server_destroy(g->server);
	grpc_completion_queue_destroy(g->cq);
	core_free(g);
}
