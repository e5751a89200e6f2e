// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A gRPC call on the own server (grpc_h2.h): h2_conn's callbacks for one
 * stream in gRPC's terms. Its request headers (:method POST, content-type
 * application/grpc*, :path one of gw_grpc_methods, grpc-timeout the
 * deadline), then its one message: the 5-byte prefix read first (the
 * compressed flag refused, the length held to max_message and an infer's
 * to the widest model's need), its bytes, charged to the budget as they
 * come, into a buffer of that length (an into_memfd
 * method's: one of the forwarding pool's memfds, read straight into by
 * grpc_h2.c). At the client's END_STREAM the call is ready for its method.
 * The answer: HEADERS (:status 200), DATA (the message), HEADERS (trailers
 * grpc-status, grpc-message percent-encoded); a refusal before a message
 * is one trailers-only HEADERS.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grpc_h2.h"
#include "infer_request.h"
#include "mono_clock.h"

static bool str_is(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(s, lit, n);
}

uint64_t h2s_grpc_timeout_ns(const char *v, size_t n)
{
	static const struct {
		char unit;
		uint64_t ns;
	} units[] = { { 'H', 3600000000000ull }, { 'M', 60000000000ull }, { 'S', 1000000000ull },
		      { 'm', 1000000ull },	 { 'u', 1000ull },	  { 'n', 1ull } };
	uint64_t x = 0;

	if (n < 2 || n > 9)
		return 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return 0;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(*units); i++) {
		if (v[n - 1] != units[i].unit)
			continue;
		if (!x)
			return 1; /* already past */
		/* 99999999H is 3.6e20 ns: past 2^64, so no deadline at all */
		return x > UINT64_MAX / units[i].ns ? UINT64_MAX : x * units[i].ns;
	}
	return 0;
}

/* ---- h2_conn's callbacks (under the connection's lock) ---------------------------------- */

static void *call_open(void *arg, uint32_t id)
{
	struct h2s_conn *conn = arg;
	struct h2_server *srv = conn->srv;
	struct h2s_call *call = calloc(1, sizeof(*call));
	uint64_t now = coloc_now_ns();

	if (!call)
		return NULL;
	call->pub.g = &srv->base;
	call->pub.ms = srv->base.ms;
	call->pub.fw = srv->base.fw;
	call->pub.t_start = now;
	call->pub.client = conn->addr;
	call->conn = conn;
	call->peer = conn->peer;
	h2s_peer_hold(srv, call->peer);
	call->id = id;
	call->state = H2S_READING;
	call->read_by_ns = now + (uint64_t)srv->base.opts.read_timeout_ms * 1000000ull;
	conn->idle_since_ns = now;
	/* on the reading list, latest last */
	if (conn->reading) {
		struct h2s_call *last = conn->reading->prev;

		call->prev = last;
		last->next = call;
		conn->reading->prev = call;
	} else {
		call->prev = call;
		conn->reading = call;
	}
	return call;
}

static void call_unlink_reading(struct h2s_call *call)
{
	struct h2s_conn *conn = call->conn;

	if (call->state != H2S_READING || !call->prev)
		return;
	if (conn->reading == call) {
		conn->reading = call->next;
		if (call->next)
			call->next->prev = call->prev;
	} else {
		call->prev->next = call->next;
		if (call->next)
			call->next->prev = call->prev;
		else
			conn->reading->prev = call->prev;
	}
	call->prev = call->next = NULL;
}

/* Under the connection's lock: off the sending list, if on it. */
static void call_unlink_sending(struct h2s_call *call)
{
	struct h2s_conn *conn = call->conn;

	if (!call->send_by_ns)
		return;
	*(call->sprev ? &call->sprev->snext : &conn->sending) = call->snext;
	if (call->snext)
		call->snext->sprev = call->sprev;
	call->sprev = call->snext = NULL;
	call->send_by_ns = 0;
}

/* Its message whole, or the call over: no longer one of its address's waiting calls. */
static void call_unwait(struct h2s_call *call)
{
	if (call->waiting)
		atomic_fetch_sub(&call->peer->waiting, 1);
	if (call->memfd_counted)
		atomic_fetch_sub(&call->conn->srv->memfds, 1);
	if (call->peer_reserved) /* the server's budget keeps it until the call ends */
		atomic_fetch_sub(&call->peer->buf_bytes, call->peer_reserved);
	call->waiting = call->memfd_counted = false;
	call->peer_reserved = 0;
}

/*
 * Its request done with (its method answered, or the call over): the
 * message, its memfd and budget, and its max_calls or health pool slot
 * given back.
 */
static void call_release(struct h2s_call *call)
{
	struct h2_server *srv = call->conn->srv;

	if (call->msg_malloced)
		free(call->msg);
	gw_fwd_memfd_put(call->pub.fw, call->pub.msg_memfd, NULL);
	call->pub.msg_memfd = NULL;
	call->msg = NULL;
	call->msg_malloced = false;
	call_unwait(call);
	if (call->counted)
		atomic_fetch_sub(&srv->calls, 1);
	if (call->health_pooled)
		atomic_fetch_sub(&srv->health_calls, 1);
	if (call->buf_reserved)
		atomic_fetch_sub(call->health ? &srv->health_bytes : &srv->buf_bytes,
				 call->buf_reserved);
	call->counted = call->health_pooled = false;
	call->buf_reserved = 0;
}

void h2s_call_unsent_drop(struct h2s_call *call)
{
	struct h2_server *srv = call->conn->srv;
	struct h2s_peer *peer = call->peer;

	if (!call->unsent)
		return;
	atomic_fetch_sub(&srv->unsent, 1);
	atomic_fetch_sub(&peer->unsent, 1);
	atomic_fetch_sub(&srv->unsent_bytes, call->unsent_bytes);
	atomic_fetch_sub(&peer->unsent_bytes, call->unsent_bytes);
	call->unsent = false;
	call->unsent_bytes = 0;
}

static void call_free(struct h2s_call *call)
{
	struct h2_server *srv = call->conn->srv;
	struct h2s_peer *peer = call->peer;

	call_unlink_sending(call);
	if (call->pub.ctx_free)
		call->pub.ctx_free(call->pub.ctx);
	call_release(call);
	if (call->health_counted)
		atomic_fetch_sub(&peer->health, 1);
	h2s_call_unsent_drop(call);
	h2s_peer_put(srv, peer);
	call->conn->idle_since_ns = coloc_now_ns();
	free(call);
}

static int call_field(void *arg, void *st, const char *name, size_t name_len, const char *value,
		      size_t value_len)
{
	struct h2s_call *call = st;

	(void)arg;
	if (str_is(name, name_len, ":method")) {
		call->post = str_is(value, value_len, "POST");
	} else if (str_is(name, name_len, ":path")) {
		call->method = gw_grpc_method_find(value, value_len);
		call->health = gw_grpc_is_health(value, value_len);
		call->path_known = true;
	} else if (str_is(name, name_len, "content-type")) {
		call->grpc_type = value_len >= 16 && !memcmp(value, "application/grpc", 16) &&
				  (value_len == 16 || value[16] == '+' || value[16] == ';');
	} else if (str_is(name, name_len, "grpc-timeout")) {
		call->client_timeout_ns = h2s_grpc_timeout_ns(value, value_len);
	} else if (call->conn->trusted && str_is(name, name_len, "x-forwarded-for")) {
		/* the last one wins */
		gw_trusted_proxies_xff_tail(call->xff, sizeof(call->xff), value, value_len);
	}
	return 0;
}

/*
 * From a trusted proxy, the call's client is the one its x-forwarded-for
 * names (trusted_proxy.h): that address's record replaces the
 * connection's, for each per-address bound and for its answer's share.
 */
static void call_client(struct h2s_call *call)
{
	struct h2_server *srv = call->conn->srv;
	struct sockaddr_storage client;
	struct h2s_peer *p;

	if (!call->xff[0] ||
	    gw_trusted_proxies_client(srv->base.opts.trusted, call->xff, &client))
		return;
	p = h2s_peer_get(srv, &client);
	if (!p)
		return;
	h2s_peer_put(srv, call->peer);
	call->peer = p;
	call->pub.client = client;
}

static void call_headers(void *arg, void *st, int result)
{
	struct h2s_conn *conn = arg;
	struct h2_server *srv = conn->srv;
	struct h2s_call *call = st;
	uint64_t limit = call->pub.t_start + (uint64_t)srv->base.opts.timeout_ms * 1000000ull;
	int max_waiting =
		srv->base.opts.max_waiting_per_ip > 0 ? srv->base.opts.max_waiting_per_ip : INT_MAX;
	char why[160];

	call->pub.deadline_ns = limit;
	if (call->client_timeout_ns && call->client_timeout_ns < limit - call->pub.t_start)
		call->pub.deadline_ns = call->pub.t_start + call->client_timeout_ns;
	if (call->pub.deadline_ns < call->read_by_ns)
		call->read_by_ns = call->pub.deadline_ns;
	if (result == HPACK_ERR_LIST_TOO_LARGE) {
		h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED,
				"the request's headers are over 16 KiB");
		return;
	}
	if (!call->post || !call->grpc_type || !call->path_known) {
		h2s_call_refuse(call, GW_GRPC_INVALID_ARGUMENT,
				"not a gRPC request (POST, content-type application/grpc, :path)");
		return;
	}
	if (!call->method) {
		h2s_call_refuse(call, GW_GRPC_UNIMPLEMENTED, "no such method");
		return;
	}
	call_client(call);
	if (call->health) {
		/*
		 * max_calls does not count them: H2S_HEALTH_PER_PEER open from one
		 * address, their small message within H2S_HEALTH_READ_NS; a pool of
		 * their own once it is whole (call_end)
		 */
		if (!h2s_take(&call->peer->health, H2S_HEALTH_PER_PEER)) {
			h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED,
					"this client address has too many health calls open; "
					"retry later");
			return;
		}
		call->health_counted = true;
		if (call->read_by_ns > call->pub.t_start + H2S_HEALTH_READ_NS)
			call->read_by_ns = call->pub.t_start + H2S_HEALTH_READ_NS;
	} else if (!h2s_take(&call->peer->waiting, max_waiting)) {
		/* max_calls counts it once its message is whole: until then, its address's */
		snprintf(why, sizeof(why),
			 "this client address has %d calls waiting for their request message "
			 "(--grpc-max-waiting-per-ip); retry later",
			 max_waiting);
		h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED, why);
		return;
	} else {
		call->waiting = true;
	}
	if (atomic_load(&srv->stopping))
		h2s_call_refuse(call, GW_GRPC_UNAVAILABLE, "the gateway is stopping");
}

/*
 * Under the connection's lock: need more bytes of message buffer taken
 * from the health calls' own bytes, or from the
 * server's budget and its client address's share of it; or the call
 * refused (RESOURCE_EXHAUSTED) when they are spent.
 */
static bool call_budget(struct h2s_call *call, size_t need)
{
	struct h2s_peer *peer = call->peer;
	struct h2_server *srv = call->conn->srv;

	if (call->health) {
		if (atomic_fetch_add(&srv->health_bytes, need) + need > srv->health_max) {
			atomic_fetch_sub(&srv->health_bytes, need);
			h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED,
					"the gateway's health calls' messages are over their "
					"budget; retry later");
			return false;
		}
	} else if (atomic_fetch_add(&peer->buf_bytes, need) + need > srv->peer_buf_max) {
		atomic_fetch_sub(&peer->buf_bytes, need);
		h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED,
				"this client address's request messages are over its share of "
				"the gateway's budget (--grpc-max-buffer-bytes / 8); retry later");
		return false;
	} else if (atomic_fetch_add(&srv->buf_bytes, need) + need > srv->buf_max) {
		atomic_fetch_sub(&srv->buf_bytes, need);
		atomic_fetch_sub(&peer->buf_bytes, need);
		h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED,
				"the gateway's request messages are over its budget "
				"(--grpc-max-buffer-bytes); retry later");
		return false;
	}
	call->buf_reserved += need;
	call->peer_reserved += call->health ? 0 : need;
	return true;
}

/* In H2S_CHARGE_STEP steps, at most the message's length: charged as its bytes come. */
bool h2s_call_charge(struct h2s_call *call, size_t upto)
{
	size_t want = (upto + H2S_CHARGE_STEP - 1) / H2S_CHARGE_STEP * H2S_CHARGE_STEP;

	if (want > call->msg_len)
		want = call->msg_len;
	return want <= call->buf_reserved || call_budget(call, want - call->buf_reserved);
}

static void widest_model(struct gw_model *m, void *arg)
{
	size_t *widest = arg, need = gw_infer_body_max(&m->cfg);

	if (need > *widest)
		*widest = need;
}

/*
 * The prefix is whole: the message's buffer, or the call refused. An
 * infer's message is held to what the widest model this gateway serves
 * can need, as HTTP's body is to its model's (the model is named inside
 * the message, read once it is whole).
 */
static bool call_message_begin(struct h2s_call *call)
{
	struct h2_server *srv = call->conn->srv;
	size_t max = !call->health ? srv->base.opts.max_message : H2S_HEALTH_MAX_MESSAGE;
	size_t len = (size_t)call->prefix[1] << 24 | (size_t)call->prefix[2] << 16 |
		     (size_t)call->prefix[3] << 8 | call->prefix[4];
	size_t widest = 0;
	const char *by = "the gateway's --max-body-bytes";
	char why[160];

	if (call->prefix[0]) {
		h2s_call_refuse(call, GW_GRPC_UNIMPLEMENTED,
				"a compressed message: the gateway takes none (grpc-encoding "
				"identity)");
		return false;
	}
	if (call->method->into_memfd) {
		gw_models_each(call->pub.ms, widest_model, &widest);
		if (widest < max) {
			max = widest;
			by = "what the inputs of the widest model served can need";
		}
	}
	if (len > max) {
		snprintf(why, sizeof(why), "Received message larger than max (%zu vs. %zu): %s",
			 len, max, by);
		h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED, why);
		return false;
	}
	call->msg_len = len;
	/* memfds (files) held by waiting calls: max_calls at most, the rest in the heap */
	if (len && call->method->into_memfd && h2s_take(&srv->memfds, srv->base.opts.max_calls)) {
		call->memfd_counted = true;
		call->pub.msg_memfd = gw_fwd_memfd_get(call->pub.fw, len);
	}
	if (call->pub.msg_memfd) {
		call->msg = (uint8_t *)call->pub.msg_memfd->map;
	} else {
		call->msg = malloc(len ? len : 1);
		call->msg_malloced = true;
		if (!call->msg) {
			h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED, "out of memory");
			return false;
		}
	}
	return true;
}

static void call_data(void *arg, void *st, const uint8_t *p, size_t n)
{
	struct h2s_call *call = st;

	(void)arg;
	while (n) {
		size_t k;

		if (call->prefix_got < 5) {
			k = n < 5 - call->prefix_got ? n : 5 - call->prefix_got;
			memcpy(call->prefix + call->prefix_got, p, k);
			call->prefix_got += k;
			if (call->prefix_got == 5 && !call_message_begin(call))
				return;
		} else if (call->msg_got < call->msg_len) {
			k = n < call->msg_len - call->msg_got ? n : call->msg_len - call->msg_got;
			if (!h2s_call_charge(call, call->msg_got + k))
				return;
			memcpy(call->msg + call->msg_got, p, k);
			call->msg_got += k;
		} else {
			h2s_call_refuse(call, GW_GRPC_INVALID_ARGUMENT,
					"more than one request message in a unary call");
			return;
		}
		p += k;
		n -= k;
	}
}

static void call_end(void *arg, void *st)
{
	struct h2s_conn *conn = arg;
	struct h2_server *srv = conn->srv;
	struct h2s_call *call = st;
	char why[96];

	if (!call->prefix_got) {
		h2s_call_refuse(call, GW_GRPC_INVALID_ARGUMENT, "the call carried no message");
		return;
	}
	if (call->prefix_got < 5 || call->msg_got < call->msg_len) {
		h2s_call_refuse(call, GW_GRPC_INVALID_ARGUMENT, "the message was cut short");
		return;
	}
	call_unwait(call);
	if (call->health) {
		if (!h2s_take(&srv->health_calls, H2S_HEALTH_CALLS)) {
			h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED,
					"the gateway is answering too many health calls; retry "
					"later");
			return;
		}
		call->health_pooled = true;
	} else { /* one of max_calls now, and until it is answered */
		struct h2s_peer *peer = call->peer;

		/* all clients' unsent answers make room instead (h2s_unsent_room) */
		if (atomic_load(&peer->unsent) >= srv->peer_unsent_max ||
		    atomic_load(&peer->unsent_bytes) >= srv->peer_buf_max) {
			h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED,
					"too many answers wait for this client address's "
					"flow-control windows; retry later");
			return;
		}
		if (!h2s_take(&srv->calls, srv->base.opts.max_calls)) {
			snprintf(why, sizeof(why),
				 "the gateway is answering %d calls already; retry later",
				 srv->base.opts.max_calls);
			h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED, why);
			return;
		}
		call->counted = true;
	}
	call_unlink_reading(call);
	call->state = H2S_HANDLING;
	call->next = NULL;
	*conn->ready_tail = call;
	conn->ready_tail = &call->next;
	atomic_fetch_add(&conn->refs, 1);
}

static void call_close(void *arg, void *st, uint32_t error)
{
	struct h2s_call *call = st;

	(void)arg, (void)error;
	if (call->state == H2S_HANDLING) {
		/* freed when its method answers; until then it counts as an open stream */
		call->stream_gone = true;
		h2_conn_hold(&call->conn->h2, true);
		return;
	}
	call_unlink_reading(call);
	call_free(call);
}

const struct h2_conn_cb h2s_call_cb = {
	.open = call_open,
	.field = call_field,
	.headers = call_headers,
	.data = call_data,
	.end = call_end,
	.close = call_close,
};

/* ---- answers -------------------------------------------------------------------------- */

/* grpc-status and grpc-message (percent-encoded, gRPC's HTTP/2 spec) at out. */
static size_t trailers_encode(uint8_t *out, size_t cap, enum gw_grpc_status code, const char *why)
{
	char status[12], msg[768 * 3 + 1];
	size_t n, m = 0;

	snprintf(status, sizeof(status), "%d", (int)code);
	n = hpack_encode_field(out, cap, "grpc-status", 11, status, strlen(status));
	for (const unsigned char *p = (const unsigned char *)why; *p && m + 4 < sizeof(msg); p++) {
		if (*p >= 0x20 && *p <= 0x7e && *p != '%')
			msg[m++] = (char)*p;
		else
			m += (size_t)snprintf(msg + m, 4, "%%%02X", *p);
	}
	if (m)
		n += hpack_encode_field(out + n, cap - n, "grpc-message", 12, msg, m);
	return n;
}

void h2s_call_refuse(struct h2s_call *call, enum gw_grpc_status code, const char *why)
{
	struct h2_server *srv = call->conn->srv;
	uint8_t block[64 + 768 * 3 + 64];
	size_t n = srv->hdr_ok_len;

	memcpy(block, srv->hdr_ok, n);
	n += trailers_encode(block + n, sizeof(block) - n, code, why);
	/* trailers-only: the stream is over, call_close frees the call */
	h2_conn_respond(&call->conn->h2, call->id, block, n, NULL, 0, NULL, 0);
}

/* An answer body of len bytes counted as unsent (true), or over its address's share or all. */
static bool answer_fits(struct h2s_call *call, size_t len)
{
	struct h2s_peer *peer = call->peer;
	struct h2_server *srv = call->conn->srv;

	if (atomic_fetch_add(&peer->unsent_bytes, len) + len > srv->peer_buf_max) {
		atomic_fetch_sub(&peer->unsent_bytes, len);
		return false;
	}
	if (atomic_fetch_add(&srv->unsent_bytes, len) + len > srv->buf_max) {
		atomic_fetch_sub(&srv->unsent_bytes, len);
		atomic_fetch_sub(&peer->unsent_bytes, len);
		return false;
	}
	atomic_fetch_add(&srv->unsent, 1);
	atomic_fetch_add(&peer->unsent, 1);
	call->unsent = true;
	call->unsent_bytes = len;
	return true;
}

/* Whether conn has had a connection error (its answers can never go). */
static bool conn_dead(struct h2s_conn *conn)
{
	bool dead;

	pthread_mutex_lock(&conn->lock);
	dead = conn->h2.dead;
	pthread_mutex_unlock(&conn->lock);
	return dead;
}

void h2s_answer(struct gw_grpc_call *pub, enum gw_grpc_status code, const char *why, uint8_t *msg,
		size_t len)
{
	struct h2s_call *call = (struct h2s_call *)pub;
	struct h2s_conn *conn = call->conn;
	struct h2_server *srv = conn->srv;
	uint8_t trl[768 * 3 + 64];
	uint8_t *body = msg; /* the message's gRPC prefix in its headroom */

	if (body) {
		body[0] = 0;
		body[1] = (uint8_t)(len >> 24);
		body[2] = (uint8_t)(len >> 16);
		body[3] = (uint8_t)(len >> 8);
		body[4] = (uint8_t)len;
	}
	if (body && !conn_dead(conn))
		h2s_unsent_room(srv, len + 5);
	pthread_mutex_lock(&conn->lock);
	call->state = H2S_ANSWERED;
	if (call->stream_gone) {
		h2_conn_hold(&conn->h2, false);
		free(body);
		call_free(call);
	} else if (conn->h2.dead) {
		/*
		 * a connection error: no answer can go, so none is counted as
		 * unsent; the call is freed as the connection closes (its
		 * stream ended then), H2S_DEAD_GRACE_NS at most from now
		 */
		free(body);
		call_release(call);
		h2s_conn_flush(conn);
	} else if (body && !answer_fits(call, len + 5)) {
		free(body);
		call_release(call);
		h2s_call_refuse(call, GW_GRPC_RESOURCE_EXHAUSTED,
				"the answers waiting for the client's flow-control windows are over "
				"this client address's share of --grpc-max-buffer-bytes; retry later");
		h2s_conn_flush(conn);
	} else if (body) {
		size_t n = trailers_encode(trl, sizeof(trl), code, why);

		/*
		 * the request is done with: its message, budget and max_calls (or
		 * health pool) slot go back now. call_close frees the call once the answer is out;
		 * until then it is one of the unsent answers (bounded by address and
		 * in all) on the sending list, reset by the reaper past the read
		 * timeout from now: a client that opens no window holds little, briefly
		 */
		call_release(call);
		call->send_by_ns =
			coloc_now_ns() + (uint64_t)srv->base.opts.read_timeout_ms * 1000000ull;
		call->sprev = NULL;
		call->snext = conn->sending;
		if (conn->sending)
			conn->sending->sprev = call;
		conn->sending = call;
		h2_conn_respond(&conn->h2, call->id, srv->hdr_ok, srv->hdr_ok_len, body, len + 5,
				trl, n);
		h2s_conn_flush(conn);
	} else {
		call_release(call);
		h2s_call_refuse(call, code, why);
		h2s_conn_flush(conn);
	}
	pthread_mutex_unlock(&conn->lock);
	h2s_conn_put(conn);
}

void h2s_call_handle(struct h2s_call *call)
{
	call->method->handle(&call->pub, call->msg, call->msg_len);
}
