// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The own gRPC server's reaper (grpc_h2.h): a thread that, ten times a
 * second, refuses the calls whose message did not come within
 * read_timeout_ms or their deadline or comes slower than min_rate, resets
 * the answers the client's windows held past their send deadline, and
 * sends away the connections that are stalled or idle, and dead ones a
 * second after their death; it also brings the listener back after a pause.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include "grpc_h2.h"
#include "mono_clock.h"

#define H2S_REAP_NS 100000000ull

/*
 * Under c->lock: the answers the client's windows held past their send
 * deadline reset (RST_STREAM CANCEL, each call freed and its slot with it).
 * True if one was late while the connection itself holds them (its window
 * spent, or its output past max_out): then the connection is stalled and
 * is sent away; a stream's own window holds up that stream alone.
 */
static bool reap_sending(struct h2s_conn *c, uint64_t now)
{
	const uint8_t *p;
	bool conn_held = c->h2.send_window <= 0 || h2_conn_out(&c->h2, &p) >= c->h2.lim.max_out;
	bool late = false;

	for (struct h2s_call *call = c->sending, *next; !c->closed && call; call = next) {
		next = call->snext;
		if (call->send_by_ns > now)
			continue;
		late = true;
		if (h2_conn_cancel(&c->h2, call->id)) /* stream gone already: not ours to keep */
			break;
	}
	return late && conn_held;
}

/*
 * Under c->lock: whether c is to be shut down because its output cannot
 * go: dead (a connection error) for H2S_DEAD_GRACE_NS, however its client
 * reads its last frames (a slow reader kept a dead connection, and what it
 * holds, for as long as it liked), or alive with output that has not moved
 * for the read timeout. Closing it ends every stream and frees their calls.
 */
static bool reap_stuck(struct h2s_conn *c, uint64_t now, uint64_t read_ns)
{
	const uint8_t *p;

	if (c->dead_ns && now > c->dead_ns + H2S_DEAD_GRACE_NS)
		return true;
	if (!h2_conn_out(&c->h2, &p)) {
		c->out_moved_ns = now; /* dead and empty: its EPOLLOUT closes it */
		return false;
	}
	return now > c->out_moved_ns + (c->h2.dead ? H2S_DEAD_GRACE_NS : read_ns);
}

/*
 * Under c->lock: the call whose DATA frame the bytes in c's socket not yet
 * read go to (SO_RCVLOWAT holds a frame's rest back until it is all
 * there), their count in *unread; NULL when none.
 */
static const struct h2s_call *reap_unread(struct h2s_conn *c, uint64_t *unread)
{
	void *st = NULL;
	int queued = 0;

	if (!h2_conn_data_next(&c->h2, &st, SIZE_MAX) || ioctl(c->fd, SIOCINQ, &queued) ||
	    queued <= 0)
		return NULL;
	*unread = (uint64_t)queued;
	return st;
}

/*
 * Whether call's message, not yet whole, is behind min_rate bytes a
 * second since the call opened, its first second given free (as HTTP's
 * requests, http_deadline.c); unread of its bytes are in the socket.
 */
static bool reap_too_slow(const struct h2_server *srv, const struct h2s_call *call, uint64_t now,
			  uint64_t unread)
{
	uint64_t took = now - call->pub.t_start, got = call->prefix_got + call->msg_got + unread;

	if (!srv->base.opts.min_rate || took <= H2S_RATE_GRACE_NS ||
	    (call->prefix_got == 5 && call->msg_got == call->msg_len))
		return false;
	return got < srv->base.opts.min_rate * ((took - H2S_RATE_GRACE_NS) / 1000000ull) / 1000ull;
}

/*
 * Under srv->lock: c's late calls refused, and those whose message comes
 * slower than the rate floor, c sent away when stalled, or idle:
 * no call open (a stream, or a call handled after its stream ended) for
 * idle_timeout_ms, whatever else it sends (PINGs do not keep it).
 */
static void reap_conn(struct h2_server *srv, struct h2s_conn *c, uint64_t now)
{
	uint64_t idle_ns = (uint64_t)srv->base.opts.idle_timeout_ms * 1000000ull;
	uint64_t read_ns = (uint64_t)srv->base.opts.read_timeout_ms * 1000000ull, unread = 0;
	const struct h2s_call *unread_by = NULL;

	pthread_mutex_lock(&c->lock);
	if (!c->closed && reap_stuck(c, now, read_ns)) {
		shutdown(c->fd, SHUT_RDWR); /* its thread sees the end and closes it */
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (!c->closed && reap_sending(c, now)) {
		h2_conn_goaway(&c->h2, H2_NO_ERROR);
		h2s_conn_flush(c);
		shutdown(c->fd, SHUT_RDWR); /* its thread sees the end and closes it */
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (!c->closed && c->reading && srv->base.opts.min_rate)
		unread_by = reap_unread(c, &unread);
	/* each call, not only the oldest: a grpc-timeout may end a later one first */
	for (struct h2s_call *call = c->reading, *next; !c->closed && call; call = next) {
		next = call->next;
		if (call->read_by_ns <= now) /* answered: call_close frees it */
			h2s_call_refuse(call, GW_GRPC_DEADLINE_EXCEEDED,
					"no request message within the gateway's read timeout "
					"or the call's deadline");
		else if (reap_too_slow(srv, call, now, call == unread_by ? unread : 0))
			h2s_call_refuse(call, GW_GRPC_DEADLINE_EXCEEDED,
					"the request message arrived slower than the gateway "
					"takes (--http-min-rate-bytes)");
	}
	if (!c->closed && idle_ns && !c->h2.nr_streams && !c->h2.held &&
	    atomic_load(&c->refs) == 1 && now > c->idle_since_ns + idle_ns) {
		h2_conn_goaway(&c->h2, H2_NO_ERROR);
		h2s_conn_flush(c);
		shutdown(c->fd, SHUT_RDWR); /* its thread sees the end and closes it */
	} else if (!c->closed) {
		h2s_conn_flush(c);
	}
	pthread_mutex_unlock(&c->lock);
}

void *h2s_reaper(void *arg)
{
	struct h2_server *srv = arg;

	pthread_mutex_lock(&srv->lock);
	while (!atomic_load(&srv->exiting)) {
		struct timespec ts;
		uint64_t now = coloc_now_ns();

		for (struct h2s_conn *c = srv->conns; c; c = c->next)
			reap_conn(srv, c, now);
		if (srv->listen_paused && now >= srv->listen_resume_ns)
			h2s_listen_resume(srv);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)H2S_REAP_NS;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&srv->cond, &srv->lock, &ts);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}
