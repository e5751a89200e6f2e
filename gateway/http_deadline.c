// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The whole-request deadline of HTTP connections (http_deadline.h): each
 * connection's deadline in a list, a reaper thread that sleeps until the
 * earliest one (or a rate's next look) and shuts a late connection's
 * socket down, or a slow one's after a 408. The list's
 * lock is also what libmicrohttpd's close waits on (its CLOSED
 * notification comes before it closes the socket), so the reaper never
 * shuts down a descriptor number that another connection has taken since.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include "http_deadline.h"
#include "mono_clock.h"

/* after a request's first byte, the time it has before its rate counts */
#define DL_RATE_GRACE_NS 1000000000ull
/* how often the reaper looks at the rates */
#define DL_RATE_PERIOD_NS 250000000ull

/* Where a connection is: which of the reaper and its own thread has it next. */
enum dl_phase {
	DL_WAITING, /* for a request; no byte of it seen by the reaper yet */
	DL_RECEIVING, /* its request under way, its rate watched by the reaper */
	DL_ANSWERING, /* the request arrived whole */
	DL_TOO_SLOW, /* cut by the reaper for its rate, 408 sent */
};

struct dl_conn {
	struct dl_conn *prev, *next;
	int fd;
	bool cut;
	uint64_t timeout_ns;
	_Atomic uint64_t by_ns; /* CLOCK_MONOTONIC */
	_Atomic int phase; /* enum dl_phase */
	unsigned long requests; /* arrived whole on it; its own thread's */
	struct gw_http_deadline *dl;
	/*
	 * under dl->lock: the bytes received before its next request (0 at the
	 * accept, the count at each answer), when it was last seen without a
	 * byte past them (the accept, the answer, or a look), and when its
	 * request began (that time, once a look sees bytes past them; 0: none)
	 */
	uint64_t rate_base, idle_ns, rate_from_ns;
};

struct gw_http_deadline {
	uint64_t timeout_ns;
	uint64_t min_rate; /* bytes a second; 0: none */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t reaper;
	bool stop;
	struct dl_conn *head;
	atomic_ulong cut;
};

/*
 * Under dl->lock: c's socket shut down; libmicrohttpd's thread sees the
 * end and closes it, with a reset, not a FIN behind an answer its client
 * does not read (which would keep it open).
 */
static void dl_cut(struct gw_http_deadline *dl, struct dl_conn *c)
{
	struct linger abort = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
	shutdown(c->fd, SHUT_RDWR);
	c->cut = true;
	atomic_fetch_add(&dl->cut, 1);
}

/* The bytes fd's connection has received in all (TCP_INFO), or UINT64_MAX. */
static uint64_t dl_bytes_received(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
		return UINT64_MAX;
	return ti.tcpi_bytes_received;
}

/*
 * Under dl->lock: whether c's request, under way, is behind min_rate
 * bytes a second since it began, the grace given free. It began after
 * the last time c was seen without a byte of it: its bytes may all have
 * come before any look (one write, then nothing), and still count from
 * there. The socket's own count is read, headers and body alike.
 */
static bool dl_too_slow(struct gw_http_deadline *dl, struct dl_conn *c, uint64_t now)
{
	int waiting = DL_WAITING;
	uint64_t got = dl_bytes_received(c->fd), took;

	if (got == UINT64_MAX)
		return false;
	if (!c->rate_from_ns) {
		if (got <= c->rate_base) {
			c->idle_ns = now;
			return false;
		}
		if (!atomic_compare_exchange_strong(&c->phase, &waiting, DL_RECEIVING))
			return false;
		c->rate_from_ns = c->idle_ns;
	}
	took = now - c->rate_from_ns;
	return took > DL_RATE_GRACE_NS &&
	       got - c->rate_base < dl->min_rate * ((took - DL_RATE_GRACE_NS) / 1000000ull) / 1000ull;
}

/*
 * Under dl->lock: c cut for its rate with 408 if its request is still
 * under way (else its thread has it), the answer sent before the end.
 */
static void dl_cut_slow(struct gw_http_deadline *dl, struct dl_conn *c)
{
	static const char body[] = "{\"error\":\"the request arrived slower than the gateway "
				   "takes\"}";
	int receiving = DL_RECEIVING, n;
	char answer[256];

	if (!atomic_compare_exchange_strong(&c->phase, &receiving, DL_TOO_SLOW))
		return;
	n = snprintf(answer, sizeof(answer),
		     "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: "
		     "application/json\r\nContent-Length: %zu\r\n\r\n%s",
		     sizeof(body) - 1, body);
	send(c->fd, answer, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	shutdown(c->fd, SHUT_RDWR);
	c->cut = true;
	atomic_fetch_add(&dl->cut, 1);
}

static void *dl_reaper(void *arg)
{
	struct gw_http_deadline *dl = arg;

	pthread_mutex_lock(&dl->lock);
	while (!dl->stop) {
		uint64_t now = coloc_now_ns(), next = now + dl->timeout_ns;
		struct timespec ts;

		if (dl->min_rate && next > now + DL_RATE_PERIOD_NS)
			next = now + DL_RATE_PERIOD_NS;
		for (struct dl_conn *c = dl->head; c; c = c->next) {
			uint64_t by = atomic_load(&c->by_ns);

			if (!by || c->cut)
				continue;
			if (by <= now)
				dl_cut(dl, c);
			else if (dl->min_rate && atomic_load(&c->phase) != DL_ANSWERING &&
				 dl_too_slow(dl, c, now))
				dl_cut_slow(dl, c);
			else if (by < next)
				next = by;
		}
		/* a deadline set meanwhile is now + timeout: not before next */
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		pthread_cond_timedwait(&dl->wake, &dl->lock, &ts);
	}
	pthread_mutex_unlock(&dl->lock);
	return NULL;
}

int gw_http_deadline_start(int timeout_ms, uint64_t min_rate, struct gw_http_deadline **out,
			   struct coloc_err *err)
{
	struct gw_http_deadline *dl = calloc(1, sizeof(*dl));
	pthread_condattr_t ca;
	int r;

	*out = NULL;
	if (!dl)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	dl->timeout_ns = (uint64_t)timeout_ms * 1000000ull;
	dl->min_rate = min_rate;
	pthread_mutex_init(&dl->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dl->wake, &ca);
	pthread_condattr_destroy(&ca);
	r = pthread_create(&dl->reaper, NULL, dl_reaper, dl);
	if (r) {
		pthread_cond_destroy(&dl->wake);
		pthread_mutex_destroy(&dl->lock);
		free(dl);
		return coloc_err_set(err, -r, "cannot start the HTTP deadline thread: %s",
				     strerror(r));
	}
	*out = dl;
	return 0;
}

void gw_http_deadline_stop(struct gw_http_deadline *dl)
{
	if (!dl)
		return;
	pthread_mutex_lock(&dl->lock);
	dl->stop = true;
	pthread_cond_signal(&dl->wake);
	pthread_mutex_unlock(&dl->lock);
	pthread_join(dl->reaper, NULL);
	while (dl->head) {
		struct dl_conn *c = dl->head;

		dl->head = c->next;
		free(c);
	}
	pthread_cond_destroy(&dl->wake);
	pthread_mutex_destroy(&dl->lock);
	free(dl);
}

void gw_http_deadline_notify(void *arg, struct MHD_Connection *conn, void **socket_context,
			     enum MHD_ConnectionNotificationCode code)
{
	struct gw_http_deadline *dl = arg;
	struct dl_conn *c = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		c = fd ? calloc(1, sizeof(*c)) : NULL;
		if (!c)
			return; /* untracked: only its idle timeout holds */
		c->fd = fd->connect_fd;
		c->dl = dl;
		c->timeout_ns = dl->timeout_ns;
		c->idle_ns = coloc_now_ns();
		atomic_store(&c->by_ns, c->idle_ns + dl->timeout_ns);
		pthread_mutex_lock(&dl->lock);
		c->next = dl->head;
		if (dl->head)
			dl->head->prev = c;
		dl->head = c;
		pthread_mutex_unlock(&dl->lock);
		*socket_context = c;
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED || !c)
		return;
	pthread_mutex_lock(&dl->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		dl->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&dl->lock);
	free(c);
	*socket_context = NULL;
}

/* conn's entry, or NULL when it is not tracked (no deadline). */
static struct dl_conn *dl_conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return i ? i->socket_context : NULL;
}

void gw_http_deadline_begun(struct MHD_Connection *conn)
{
	struct dl_conn *c = dl_conn_of(conn);
	int waiting = DL_WAITING;

	if (!c)
		return;
	pthread_mutex_lock(&c->dl->lock);
	if (!c->rate_from_ns && atomic_compare_exchange_strong(&c->phase, &waiting, DL_RECEIVING))
		c->rate_from_ns = c->idle_ns;
	pthread_mutex_unlock(&c->dl->lock);
}

unsigned long gw_http_deadline_received(struct MHD_Connection *conn, uint64_t answer_ns)
{
	struct dl_conn *c = dl_conn_of(conn);
	int phase;

	if (!c)
		return 0;
	atomic_store(&c->by_ns, coloc_now_ns() + answer_ns + c->timeout_ns);
	phase = atomic_load(&c->phase);
	while (phase != DL_TOO_SLOW &&
	       !atomic_compare_exchange_weak(&c->phase, &phase, DL_ANSWERING))
		;
	return ++c->requests;
}

void gw_http_deadline_answered(struct MHD_Connection *conn)
{
	struct dl_conn *c = dl_conn_of(conn);

	if (!c)
		return;
	pthread_mutex_lock(&c->dl->lock);
	c->rate_base = dl_bytes_received(c->fd);
	if (c->rate_base == UINT64_MAX)
		c->rate_base = 0;
	c->idle_ns = coloc_now_ns();
	c->rate_from_ns = 0;
	atomic_store(&c->by_ns, c->idle_ns + c->timeout_ns);
	atomic_store(&c->phase, DL_WAITING);
	pthread_mutex_unlock(&c->dl->lock);
}

bool gw_http_deadline_cut_soonest(struct gw_http_deadline *dl)
{
	struct dl_conn *soonest = NULL;

	pthread_mutex_lock(&dl->lock);
	for (struct dl_conn *c = dl->head; c; c = c->next)
		if (!c->cut && (!soonest || atomic_load(&c->by_ns) < atomic_load(&soonest->by_ns)))
			soonest = c;
	if (soonest)
		dl_cut(dl, soonest);
	pthread_mutex_unlock(&dl->lock);
	return soonest;
}

unsigned long gw_http_deadline_cut(struct gw_http_deadline *dl)
{
	return dl ? atomic_load(&dl->cut) : 0;
}
