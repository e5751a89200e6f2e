/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's event loop, in the shape of sd-event: modules register their own
 * sources (an fd to poll, a timer, a signal) with a callback and a context,
 * and the loop only dispatches. It knows nothing of its users, so a new
 * source (an executor's pidfd, a shared-memory doorbell) is one call in the
 * module that owns it.
 *
 * Semantics:
 *   - poll sources are level-triggered: a callback that leaves data unread
 *     is called again on the next iteration;
 *   - timers run on CLOCK_MONOTONIC; due timers fire earliest deadline
 *     first; a periodic timer that fell behind skips the missed periods;
 *   - a removed source never fires again, even when its event is already
 *     queued in the same iteration; a callback may remove its own source or
 *     any other, and add new ones (those first fire on a later iteration);
 *   - prepare hooks (as sd-event's) run once per iteration, before the wait,
 *     in the order they were added: the place to bring a timer in line with
 *     state that any callback may have changed. A timer a hook sets bounds
 *     this iteration's wait and fires in it when due; a hook added by a hook
 *     first runs on the next iteration; a hook that calls loop_exit() ends
 *     the loop before the wait;
 *   - everything runs on the thread that calls loop_run().
 */
#ifndef COLOC_DAEMON_LOOP_H
#define COLOC_DAEMON_LOOP_H

#include <sys/signalfd.h>
#include <linux/types.h>
#include "error.h"

struct loop;
struct loop_source;

/* revents: the poll(2) bits that are set (POLLIN, POLLOUT, POLLHUP, POLLERR, ...). */
typedef void (*loop_poll_fn)(struct loop_source *src, int fd, unsigned int revents, void *ctx);
/* now_ns: CLOCK_MONOTONIC when the timer was dispatched. */
typedef void (*loop_timer_fn)(struct loop_source *src, __u64 now_ns, void *ctx);
typedef void (*loop_signal_fn)(struct loop_source *src, const struct signalfd_siginfo *si,
			       void *ctx);
typedef void (*loop_prepare_fn)(struct loop_source *src, void *ctx);

/* 0, or a negative errno with err saying why (io_uring unavailable, ...). */
int loop_new(struct loop **out, struct coloc_err *err);
/* Frees every source still registered (closing no fd of theirs). NULL is fine. */
void loop_free(struct loop *l);

/*
 * Calls cb whenever fd has any of events (POLLIN, POLLOUT, ...; POLLHUP and
 * POLLERR are always reported). The caller keeps the fd: remove the source
 * before closing it. src may be NULL when the caller never removes it.
 */
int loop_add_poll(struct loop *l, struct loop_source **src, int fd, unsigned int events,
		  loop_poll_fn cb, void *ctx);
/* Changes the events a poll source waits for, from the next iteration on. */
void loop_poll_set_events(struct loop_source *src, unsigned int events);
/*
 * Calls cb first after first_ns, then every interval_ns (0: once; a one-shot
 * timer stays registered, inert, until removed or re-set).
 */
int loop_add_timer(struct loop *l, struct loop_source **src, __u64 first_ns, __u64 interval_ns,
		   loop_timer_fn cb, void *ctx);
/* Re-arms a timer: first after first_ns from now, then every interval_ns (0: once). */
void loop_timer_set(struct loop_source *src, __u64 first_ns, __u64 interval_ns);
/*
 * Blocks signo for the process and calls cb each time it arrives (read from
 * one signalfd). One source per signal: a second one is -EBUSY.
 */
int loop_add_signal(struct loop *l, struct loop_source **src, int signo, loop_signal_fn cb,
		    void *ctx);
/*
 * Calls cb once per iteration, before the loop waits, after the hooks added
 * before it. Remove it like any source.
 */
int loop_add_prepare(struct loop *l, struct loop_source **src, loop_prepare_fn cb, void *ctx);
/*
 * Unregisters a source: its callback never runs again. Safe inside any
 * callback. The loop frees the source after the current iteration, so the
 * caller forgets src here (NULL is fine and does nothing).
 */
void loop_source_remove(struct loop_source *src);

/*
 * CLOCK_MONOTONIC as this iteration's wait returned (0 before the first):
 * a callback's event was seen no earlier, so the time from its cause to
 * this is the loop's wake-up, and from this to now its own work.
 */
__u64 loop_woke_ns(const struct loop *l);
/* Dispatches until loop_exit(); returns its code, or a negative errno with err set. */
int loop_run(struct loop *l, struct coloc_err *err);
/* Makes loop_run() return code once the current callback returns. */
void loop_exit(struct loop *l, int code);

#endif /* COLOC_DAEMON_LOOP_H */
