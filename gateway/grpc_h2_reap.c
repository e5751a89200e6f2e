// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The own gRPC server's reaper (grpc_h2.h): a thread that, ten times a
 * second, refuses the calls whose message did not come within
 * read_timeout_ms or their deadline, resets the answers the client's
 * windows held past their send deadline, and sends away the connections
 * that are stalled or idle; it also brings the listener back after a pause.
 */
#define _GNU_SOURCE
#include <time.h>
#include <sys/socket.h>
#include "grpc_h2.h"
#include "mono_clock.h"

#define H2S_REAP_NS 100000000ull
#define H2S_DEAD_GRACE_NS 1000000000ull /* a dead connection's last frames: this long to go */

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
 * go: dead (a connection error) with its last frames unsent for
 * H2S_DEAD_GRACE_NS, or alive with output that has not moved for the read
 * timeout. Closing it ends every stream and frees their calls.
 */
static bool reap_stuck(struct h2s_conn *c, uint64_t now, uint64_t read_ns)
{
	const uint8_t *p;

	if (!h2_conn_out(&c->h2, &p)) {
		c->out_moved_ns = now; /* dead and empty: its EPOLLOUT closes it */
		return false;
	}
	return now > c->out_moved_ns + (c->h2.dead ? H2S_DEAD_GRACE_NS : read_ns);
}

/*
 * Under srv->lock: c's late calls refused, c sent away when stalled, or idle:
 * no call open (a stream, or a call handled after its stream ended) for
 * idle_timeout_ms, whatever else it sends (PINGs do not keep it).
 */
static void reap_conn(struct h2_server *srv, struct h2s_conn *c, uint64_t now)
{
	uint64_t idle_ns = (uint64_t)srv->base.opts.idle_timeout_ms * 1000000ull;
	uint64_t read_ns = (uint64_t)srv->base.opts.read_timeout_ms * 1000000ull;

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
	/* each call, not only the oldest: a grpc-timeout may end a later one first */
	for (struct h2s_call *call = c->reading, *next; !c->closed && call; call = next) {
		next = call->next;
		if (call->read_by_ns <= now) /* answered: call_close frees it */
			h2s_call_refuse(call, GW_GRPC_DEADLINE_EXCEEDED,
					"no request message within the gateway's read timeout "
					"or the call's deadline");
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
