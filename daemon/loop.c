// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The event loop (loop.h) on liburing. Each poll source is one one-shot
 * IORING_OP_POLL_ADD whose user_data is the source, re-armed at the top of
 * the next iteration: io_uring checks readiness when a poll is armed, so
 * sources are level-triggered like poll(2), and a source is never armed
 * twice. Timers live in user space; the wait for completions is bounded by
 * the nearest deadline (io_uring_submit_and_wait_timeout). Signals are read
 * from one signalfd, itself an internal poll source.
 *
 * A removed source is only marked: its callback is never called again, a
 * POLL_REMOVE cancels its armed poll, and it is freed at the end of an
 * iteration once no completion can name it, so callbacks may remove any
 * source, their own included.
 *
 * Prepare hooks keep a list of their own, in the order added. They run
 * before the iteration's number is advanced, so a timer a hook sets counts
 * as set in the previous iteration: it bounds this wait and fires in it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#include "loop.h"
#include "mono_clock.h"

#define LOOP_QUEUE_DEPTH 256
/* user_data of the POLL_REMOVE requests themselves: their completions carry nothing */
#define LOOP_TAG_NONE 0

enum loop_kind { LOOP_POLL, LOOP_TIMER, LOOP_SIGNAL, LOOP_PREPARE };

struct loop_source {
	struct loop *loop;
	struct loop_source *next;
	enum loop_kind kind;
	bool removed;
	bool armed; /* a POLL_ADD naming this source is in flight */
	void *ctx;
	/* the iteration it was (re)armed in: it first fires in a later one */
	__u64 since_iter;
	union {
		struct {
			int fd;
			unsigned int events;
			unsigned int armed_events;
			loop_poll_fn cb;
		} poll;
		struct {
			bool active;
			__u64 deadline_ns, interval_ns;
			loop_timer_fn cb;
		} timer;
		struct {
			int signo;
			loop_signal_fn cb;
		} sig;
		struct {
			loop_prepare_fn cb;
		} prepare;
	};
};

struct loop {
	struct io_uring ring;
	struct loop_source *sources;
	struct loop_source *prepares; /* the prepare hooks, oldest first */
	__u64 iter;
	__u64 woke_ns; /* the last wait's return (loop_woke_ns) */
	bool exiting;
	int exit_code;
	int sig_fd;
	sigset_t sig_mask;
	struct loop_source *sig_poll; /* the signalfd's own poll source */
	struct loop_source *by_signal[_NSIG];
};

int loop_new(struct loop **out, struct coloc_err *err)
{
	struct loop *l = calloc(1, sizeof(*l));
	int ret;

	if (!l)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	ret = io_uring_queue_init(LOOP_QUEUE_DEPTH, &l->ring, 0);
	if (ret) {
		free(l);
		return coloc_err_set(err, ret, "io_uring unavailable: %s", strerror(-ret));
	}
	l->sig_fd = -1;
	sigemptyset(&l->sig_mask);
	*out = l;
	return 0;
}

static void loop_free_list(struct loop_source *s)
{
	while (s) {
		struct loop_source *next = s->next;

		free(s);
		s = next;
	}
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	io_uring_queue_exit(&l->ring);
	loop_free_list(l->sources);
	loop_free_list(l->prepares);
	if (l->sig_fd >= 0)
		close(l->sig_fd);
	free(l);
}

static struct io_uring_sqe *loop_sqe(struct loop *l)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);

	if (!sqe) {
		io_uring_submit(&l->ring);
		sqe = io_uring_get_sqe(&l->ring);
	}
	return sqe;
}

static struct loop_source *loop_source_alloc(struct loop *l, enum loop_kind kind, void *ctx)
{
	struct loop_source *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->loop = l;
	s->kind = kind;
	s->ctx = ctx;
	s->since_iter = l->iter;
	return s;
}

static struct loop_source *loop_source_new(struct loop *l, enum loop_kind kind, void *ctx)
{
	struct loop_source *s = loop_source_alloc(l, kind, ctx);

	if (s) {
		s->next = l->sources;
		l->sources = s;
	}
	return s;
}

/* Cancels an armed poll; its completion (-ECANCELED or a last event) clears armed. */
static void loop_cancel_poll(struct loop_source *s)
{
	struct io_uring_sqe *sqe;

	if (!s->armed)
		return;
	sqe = loop_sqe(s->loop);
	if (!sqe)
		return;
	io_uring_prep_poll_remove(sqe, (__u64)(uintptr_t)s);
	io_uring_sqe_set_data64(sqe, LOOP_TAG_NONE);
}

int loop_add_poll(struct loop *l, struct loop_source **src, int fd, unsigned int events,
		  loop_poll_fn cb, void *ctx)
{
	struct loop_source *s;

	if (fd < 0 || !cb)
		return -EINVAL;
	s = loop_source_new(l, LOOP_POLL, ctx);
	if (!s)
		return -ENOMEM;
	s->poll.fd = fd;
	s->poll.events = events;
	s->poll.cb = cb;
	if (src)
		*src = s;
	return 0;
}

void loop_poll_set_events(struct loop_source *s, unsigned int events)
{
	if (s->removed || s->poll.events == events)
		return;
	s->poll.events = events;
	/* re-armed with the new events once the old poll is gone */
	if (s->armed && s->poll.armed_events != events)
		loop_cancel_poll(s);
}

void loop_timer_set(struct loop_source *s, __u64 first_ns, __u64 interval_ns)
{
	s->timer.active = true;
	s->timer.deadline_ns = coloc_now_ns() + first_ns;
	s->timer.interval_ns = interval_ns;
	s->since_iter = s->loop->iter;
}

int loop_add_timer(struct loop *l, struct loop_source **src, __u64 first_ns, __u64 interval_ns,
		   loop_timer_fn cb, void *ctx)
{
	struct loop_source *s;

	if (!cb)
		return -EINVAL;
	s = loop_source_new(l, LOOP_TIMER, ctx);
	if (!s)
		return -ENOMEM;
	s->timer.cb = cb;
	loop_timer_set(s, first_ns, interval_ns);
	if (src)
		*src = s;
	return 0;
}

static void loop_on_signalfd(struct loop_source *src, int fd, unsigned int revents, void *ctx)
{
	struct loop *l = ctx;
	struct signalfd_siginfo si;

	(void)src;
	(void)revents;
	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		struct loop_source *s;

		if (si.ssi_signo >= _NSIG)
			continue;
		s = l->by_signal[si.ssi_signo];
		if (s && !s->removed)
			s->sig.cb(s, &si, s->ctx);
		if (l->exiting)
			return;
	}
}

static int loop_update_signalfd(struct loop *l)
{
	int fd = signalfd(l->sig_fd, &l->sig_mask, SFD_NONBLOCK | SFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	l->sig_fd = fd;
	if (!l->sig_poll)
		return loop_add_poll(l, &l->sig_poll, fd, POLLIN, loop_on_signalfd, l);
	return 0;
}

int loop_add_prepare(struct loop *l, struct loop_source **src, loop_prepare_fn cb, void *ctx)
{
	struct loop_source *s, **tail = &l->prepares;

	if (!cb)
		return -EINVAL;
	s = loop_source_alloc(l, LOOP_PREPARE, ctx);
	if (!s)
		return -ENOMEM;
	s->prepare.cb = cb;
	while (*tail)
		tail = &(*tail)->next;
	*tail = s;
	if (src)
		*src = s;
	return 0;
}

int loop_add_signal(struct loop *l, struct loop_source **src, int signo, loop_signal_fn cb,
		    void *ctx)
{
	struct loop_source *s;
	sigset_t one;
	int ret;

	if (signo <= 0 || signo >= _NSIG || !cb)
		return -EINVAL;
	if (l->by_signal[signo])
		return -EBUSY;
	s = loop_source_new(l, LOOP_SIGNAL, ctx);
	if (!s)
		return -ENOMEM;
	s->sig.signo = signo;
	s->sig.cb = cb;
	sigemptyset(&one);
	sigaddset(&one, signo);
	/* blocked first, so the signal waits in the signalfd instead of killing us */
	sigprocmask(SIG_BLOCK, &one, NULL);
	sigaddset(&l->sig_mask, signo);
	ret = loop_update_signalfd(l);
	if (ret) {
		s->removed = true;
		return ret;
	}
	l->by_signal[signo] = s;
	if (src)
		*src = s;
	return 0;
}

void loop_source_remove(struct loop_source *s)
{
	sigset_t one;

	if (!s || s->removed)
		return;
	s->removed = true;
	switch (s->kind) {
	case LOOP_POLL:
		loop_cancel_poll(s);
		break;
	case LOOP_TIMER:
		s->timer.active = false;
		break;
	case LOOP_PREPARE:
		break;
	case LOOP_SIGNAL:
		s->loop->by_signal[s->sig.signo] = NULL;
		sigdelset(&s->loop->sig_mask, s->sig.signo);
		loop_update_signalfd(s->loop);
		sigemptyset(&one);
		sigaddset(&one, s->sig.signo);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		break;
	}
}

void loop_exit(struct loop *l, int code)
{
	l->exiting = true;
	l->exit_code = code;
}

static void loop_arm_polls(struct loop *l)
{
	for (struct loop_source *s = l->sources; s; s = s->next) {
		struct io_uring_sqe *sqe;

		if (s->kind != LOOP_POLL || s->removed || s->armed)
			continue;
		sqe = loop_sqe(l);
		if (!sqe)
			return;
		io_uring_prep_poll_add(sqe, s->poll.fd, s->poll.events);
		io_uring_sqe_set_data64(sqe, (__u64)(uintptr_t)s);
		s->armed = true;
		s->poll.armed_events = s->poll.events;
	}
}

/* The nearest deadline of an active timer, or UINT64_MAX. */
static __u64 loop_next_deadline(struct loop *l)
{
	__u64 next = UINT64_MAX;

	for (struct loop_source *s = l->sources; s; s = s->next)
		if (s->kind == LOOP_TIMER && !s->removed && s->timer.active &&
		    s->timer.deadline_ns < next)
			next = s->timer.deadline_ns;
	return next;
}

static void loop_dispatch_cqe(struct loop *l, struct io_uring_cqe *cqe)
{
	__u64 tag = io_uring_cqe_get_data64(cqe);
	struct loop_source *s = (struct loop_source *)(uintptr_t)tag;
	unsigned int revents;

	(void)l;
	if (tag == LOOP_TAG_NONE)
		return;
	s->armed = false;
	if (s->removed || cqe->res == -ECANCELED)
		return;
	/* an fd closed under its source: reported once per iteration, as poll(2) would */
	revents = cqe->res < 0 ? POLLNVAL : (unsigned int)cqe->res;
	s->poll.cb(s, s->poll.fd, revents, s->ctx);
}

/* Fires due timers earliest first, each at most once per iteration. */
static void loop_fire_timers(struct loop *l)
{
	__u64 now = coloc_now_ns();

	while (!l->exiting) {
		struct loop_source *due = NULL;

		for (struct loop_source *s = l->sources; s; s = s->next)
			if (s->kind == LOOP_TIMER && !s->removed && s->timer.active &&
			    s->since_iter < l->iter && s->timer.deadline_ns <= now &&
			    (!due || s->timer.deadline_ns < due->timer.deadline_ns))
				due = s;
		if (!due)
			return;
		if (due->timer.interval_ns) {
			due->timer.deadline_ns += due->timer.interval_ns;
			if (due->timer.deadline_ns <= now)
				due->timer.deadline_ns = now + due->timer.interval_ns;
		} else {
			due->timer.active = false;
		}
		/* fires again in a later iteration only, even when already due */
		due->since_iter = l->iter;
		due->timer.cb(due, now, due->ctx);
	}
}

/* Runs the hooks there were when it started, in order, until one ends the loop. */
static void loop_prepare(struct loop *l)
{
	struct loop_source *last = l->prepares;

	while (last && last->next)
		last = last->next;
	for (struct loop_source *s = l->prepares; s && !l->exiting; s = s->next) {
		if (!s->removed)
			s->prepare.cb(s, s->ctx);
		if (s == last)
			break;
	}
}

static void loop_sweep_list(struct loop_source **pp)
{
	while (*pp) {
		struct loop_source *s = *pp;

		if (s->removed && !s->armed) {
			*pp = s->next;
			free(s);
		} else {
			pp = &s->next;
		}
	}
}

static void loop_sweep(struct loop *l)
{
	loop_sweep_list(&l->sources);
	loop_sweep_list(&l->prepares);
}

__u64 loop_woke_ns(const struct loop *l)
{
	return l->woke_ns;
}

int loop_run(struct loop *l, struct coloc_err *err)
{
	l->exiting = false;
	while (!l->exiting) {
		struct __kernel_timespec ts, *tsp = NULL;
		struct io_uring_cqe *cqe;
		__u64 next, now;
		int ret;

		loop_prepare(l);
		if (l->exiting)
			break;
		l->iter++;
		loop_arm_polls(l);
		next = loop_next_deadline(l);
		if (next != UINT64_MAX) {
			now = coloc_now_ns();
			next = next > now ? next - now : 0;
			ts.tv_sec = (long long)(next / 1000000000ull);
			ts.tv_nsec = (long long)(next % 1000000000ull);
			tsp = &ts;
		}
		ret = io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1, tsp, NULL);
		l->woke_ns = coloc_now_ns();
		if (ret < 0 && ret != -ETIME && ret != -EINTR)
			return coloc_err_set(err, ret, "event loop failed: %s", strerror(-ret));
		while (!l->exiting && io_uring_peek_cqe(&l->ring, &cqe) == 0) {
			loop_dispatch_cqe(l, cqe);
			io_uring_cqe_seen(&l->ring, cqe);
		}
		loop_fire_timers(l);
		loop_sweep(l);
	}
	return l->exit_code;
}
