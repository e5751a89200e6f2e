// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's event loop (daemon/loop.h) driven directly: real pipes, real
 * timers on CLOCK_MONOTONIC, a real signal. Every test ends the loop from a
 * callback; the order and count of callbacks are the expectations, never a
 * duration.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "loop.h"
#include "mono_clock.h"

#define MS 1000000ull

struct trace {
	struct loop *loop;
	int order[16];
	int n;
	struct loop_source *other;
	int fd;
};

static void trace_add(struct trace *t, int id)
{
	if (t->n < 16)
		t->order[t->n++] = id;
}

FIXTURE(loop)
{
	struct loop *loop;
	int pipe_a[2], pipe_b[2];
	struct trace t;
};

FIXTURE_SETUP(loop)
{
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, loop_new(&self->loop, &err));
	ASSERT_EQ(0, pipe2(self->pipe_a, O_CLOEXEC | O_NONBLOCK));
	ASSERT_EQ(0, pipe2(self->pipe_b, O_CLOEXEC | O_NONBLOCK));
	memset(&self->t, 0, sizeof(self->t));
	self->t.loop = self->loop;
}

FIXTURE_TEARDOWN(loop)
{
	loop_free(self->loop);
	for (int i = 0; i < 2; i++) {
		close(self->pipe_a[i]);
		close(self->pipe_b[i]);
	}
}

static void on_readable_read_and_exit(struct loop_source *src, int fd, unsigned int revents,
				      void *ctx)
{
	struct trace *t = ctx;
	char c;

	(void)src;
	if ((revents & POLLIN) && read(fd, &c, 1) == 1)
		trace_add(t, c);
	loop_exit(t->loop, 7);
}

TEST_F(loop, add_poll__fires_with_the_byte_waiting)
{
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, loop_add_poll(self->loop, NULL, self->pipe_a[0], POLLIN,
				   on_readable_read_and_exit, &self->t));
	ASSERT_EQ(1, write(self->pipe_a[1], "x", 1));
	EXPECT_EQ(7, loop_run(self->loop, &err));
	ASSERT_EQ(1, self->t.n);
	EXPECT_EQ('x', self->t.order[0]);
}

struct timer_case {
	struct trace *t;
	struct loop_source *src[3];
};

static struct timer_case timer_case;

static void on_timer_record(struct loop_source *src, __u64 now, void *ctx)
{
	struct timer_case *tc = ctx;

	(void)now;
	for (int i = 0; i < 3; i++)
		if (tc->src[i] == src)
			trace_add(tc->t, i);
	if (tc->t->n == 3)
		loop_exit(tc->t->loop, 0);
}

TEST_F(loop, add_timer__due_timers_fire_earliest_deadline_first)
{
	struct coloc_err err = { 0 };
	/* added in another order than they are due: 30, 10, 20 ms */
	const __u64 first[3] = { 30 * MS, 10 * MS, 20 * MS };

	timer_case.t = &self->t;
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, loop_add_timer(self->loop, &timer_case.src[i], first[i], 0,
					    on_timer_record, &timer_case));
	/* all three are due by the time the loop first looks: the order must still hold */
	usleep(40000);
	ASSERT_EQ(0, loop_run(self->loop, &err));
	ASSERT_EQ(3, self->t.n);
	EXPECT_EQ(1, self->t.order[0]);
	EXPECT_EQ(2, self->t.order[1]);
	EXPECT_EQ(0, self->t.order[2]);
}

static __u64 periodic_start_ns;

static void on_periodic_count(struct loop_source *src, __u64 now, void *ctx)
{
	struct trace *t = ctx;

	(void)src;
	trace_add(t, (int)((now - periodic_start_ns) / 1000));
	if (t->n == 3)
		loop_exit(t->loop, 0);
}

TEST_F(loop, add_timer__periodic_timer_keeps_its_schedule)
{
	struct coloc_err err = { 0 };

	periodic_start_ns = coloc_now_ns();
	ASSERT_EQ(0, loop_add_timer(self->loop, NULL, 2 * MS, 2 * MS, on_periodic_count, &self->t));
	ASSERT_EQ(0, loop_run(self->loop, &err));
	ASSERT_EQ(3, self->t.n);
	/* firing k is never before its deadline, k intervals of 2 ms after the start */
	for (int k = 0; k < 3; k++)
		EXPECT_GE(self->t.order[k], (k + 1) * 2000);
}

struct pair {
	struct trace *t;
	struct loop_source *other;
};

/* Whichever of two ready sources runs first removes the other. */
static void on_readable_remove_other(struct loop_source *src, int fd, unsigned int revents,
				     void *ctx)
{
	struct pair *p = ctx;

	(void)src;
	(void)revents;
	trace_add(p->t, fd);
	/* a removed source is freed by the loop: it is removed once, then forgotten */
	loop_source_remove(p->other);
	p->other = NULL;
}

static void on_timer_exit(struct loop_source *src, __u64 now, void *ctx)
{
	struct trace *t = ctx;

	(void)src;
	(void)now;
	loop_exit(t->loop, 0);
}

TEST_F(loop, source_remove__a_removed_source_never_fires_even_when_ready)
{
	struct coloc_err err = { 0 };
	struct pair pa = { &self->t, NULL }, pb = { &self->t, NULL };
	char c;

	ASSERT_EQ(0, loop_add_poll(self->loop, &pb.other, self->pipe_a[0], POLLIN,
				   on_readable_remove_other, &pa));
	ASSERT_EQ(0, loop_add_poll(self->loop, &pa.other, self->pipe_b[0], POLLIN,
				   on_readable_remove_other, &pb));
	/* both ready before the loop runs: both completions arrive in one batch */
	ASSERT_EQ(1, write(self->pipe_a[1], "a", 1));
	ASSERT_EQ(1, write(self->pipe_b[1], "b", 1));
	ASSERT_EQ(0, loop_add_timer(self->loop, NULL, 20 * MS, 0, on_timer_exit, &self->t));
	ASSERT_EQ(0, loop_run(self->loop, &err));
	/* the survivor fires every iteration (its byte stays unread); the removed one never */
	ASSERT_GE(self->t.n, 1);
	for (int i = 1; i < self->t.n; i++)
		EXPECT_EQ(self->t.order[0], self->t.order[i]);
	/* and both bytes are still there: nothing read on the loop's behalf */
	EXPECT_EQ(1, read(self->pipe_a[0], &c, 1));
	EXPECT_EQ(1, read(self->pipe_b[0], &c, 1));
}

static void on_readable_replace_by_timer(struct loop_source *src, int fd, unsigned int revents,
					 void *ctx)
{
	struct trace *t = ctx;

	(void)revents;
	trace_add(t, fd);
	/* left unread: only the removal keeps this source from firing again */
	loop_source_remove(src);
	loop_add_timer(t->loop, NULL, 5 * MS, 0, on_timer_exit, t);
}

TEST_F(loop, callback__may_remove_itself_and_add_another_source)
{
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, loop_add_poll(self->loop, NULL, self->pipe_a[0], POLLIN,
				   on_readable_replace_by_timer, &self->t));
	ASSERT_EQ(1, write(self->pipe_a[1], "a", 1));
	ASSERT_EQ(0, loop_run(self->loop, &err));
	EXPECT_EQ(1, self->t.n);
	EXPECT_EQ(self->pipe_a[0], self->t.order[0]);
}

static void on_readable_count_unread(struct loop_source *src, int fd, unsigned int revents,
				     void *ctx)
{
	struct trace *t = ctx;

	(void)src;
	(void)revents;
	trace_add(t, fd);
	if (t->n == 3)
		loop_exit(t->loop, 0);
}

TEST_F(loop, add_poll__is_level_triggered_while_data_stays_unread)
{
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, loop_add_poll(self->loop, NULL, self->pipe_a[0], POLLIN,
				   on_readable_count_unread, &self->t));
	ASSERT_EQ(1, write(self->pipe_a[1], "a", 1));
	ASSERT_EQ(0, loop_run(self->loop, &err));
	EXPECT_EQ(3, self->t.n);
}

static void on_sigusr1(struct loop_source *src, const struct signalfd_siginfo *si, void *ctx)
{
	struct trace *t = ctx;

	(void)src;
	trace_add(t, (int)si->ssi_signo);
	trace_add(t, (int)si->ssi_pid);
	loop_exit(t->loop, 0);
}

TEST_F(loop, add_signal__delivers_the_signal_with_its_sender)
{
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, loop_add_signal(self->loop, NULL, SIGUSR1, on_sigusr1, &self->t));
	EXPECT_EQ(-EBUSY, loop_add_signal(self->loop, NULL, SIGUSR1, on_sigusr1, &self->t));
	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	ASSERT_EQ(0, loop_run(self->loop, &err));
	ASSERT_EQ(2, self->t.n);
	EXPECT_EQ(SIGUSR1, self->t.order[0]);
	EXPECT_EQ(getpid(), self->t.order[1]);
}

static void on_readable_switch_to_out(struct loop_source *src, int fd, unsigned int revents,
				      void *ctx)
{
	struct trace *t = ctx;

	(void)revents;
	trace_add(t, fd);
	/* a pipe's read end is never writable: with POLLOUT only, it must go quiet */
	loop_poll_set_events(src, POLLOUT);
	if (t->n == 1)
		loop_add_timer(t->loop, NULL, 20 * MS, 0, on_timer_exit, t);
}

TEST_F(loop, poll_set_events__waits_for_the_new_events_only)
{
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, loop_add_poll(self->loop, NULL, self->pipe_a[0], POLLIN,
				   on_readable_switch_to_out, &self->t));
	ASSERT_EQ(1, write(self->pipe_a[1], "a", 1));
	ASSERT_EQ(0, loop_run(self->loop, &err));
	EXPECT_EQ(1, self->t.n);
}

/* ---- prepare hooks ------------------------------------------------------ */

#define HOOK_A 'A'
#define HOOK_B 'B'
#define HOOK_C 'C'
#define POLLED 'P'
#define TIMED 'T'
#define WATCHDOG 'W'

/* One hook's identity and what it may do on its first call. */
struct hook {
	struct trace *t;
	int id;
	int calls;
	struct loop_source *timer; /* set to first_ns on the first call, when not NULL */
	__u64 first_ns;
	struct hook *adds; /* added on the first call */
	struct loop_source *removes; /* removed on the first call */
	int exit_code; /* loop_exit() on the first call, when not 0 */
};

static void on_prepare_record(struct loop_source *src, void *ctx);

static void hook_first_call(struct hook *h)
{
	if (h->timer)
		loop_timer_set(h->timer, h->first_ns, 0);
	if (h->adds)
		loop_add_prepare(h->t->loop, NULL, on_prepare_record, h->adds);
	if (h->removes)
		loop_source_remove(h->removes);
	if (h->exit_code)
		loop_exit(h->t->loop, h->exit_code);
}

static void on_prepare_record(struct loop_source *src, void *ctx)
{
	struct hook *h = ctx;

	(void)src;
	trace_add(h->t, h->id);
	if (h->calls++ == 0)
		hook_first_call(h);
}

/* A level-triggered source: its byte stays unread, so every iteration has one wait and one call. */
static void on_readable_mark(struct loop_source *src, int fd, unsigned int revents, void *ctx)
{
	struct trace *t = ctx;
	int polled = 0;

	(void)src;
	(void)fd;
	(void)revents;
	trace_add(t, POLLED);
	for (int i = 0; i < t->n; i++)
		polled += t->order[i] == POLLED;
	if (polled == 3)
		loop_exit(t->loop, 0);
}

static void on_timer_mark_exit(struct loop_source *src, __u64 now, void *ctx)
{
	struct trace *t = ctx;

	(void)now;
	trace_add(t, t->other == src ? WATCHDOG : TIMED);
	loop_exit(t->loop, t->other == src ? 2 : 1);
}

static void expect_trace(struct __test_metadata *_metadata, const struct trace *t,
			 const char *want)
{
	char got[17] = { 0 };

	for (int i = 0; i < t->n; i++)
		got[i] = (char)t->order[i];
	EXPECT_STREQ(want, got);
}

TEST_F(loop, add_prepare__runs_once_before_each_wait)
{
	struct coloc_err err = { 0 };
	struct hook a = { .t = &self->t, .id = HOOK_A };

	ASSERT_EQ(0, loop_add_poll(self->loop, NULL, self->pipe_a[0], POLLIN, on_readable_mark,
				   &self->t));
	ASSERT_EQ(0, loop_add_prepare(self->loop, NULL, on_prepare_record, &a));
	ASSERT_EQ(1, write(self->pipe_a[1], "a", 1));
	ASSERT_EQ(0, loop_run(self->loop, &err));
	expect_trace(_metadata, &self->t, "APAPAP");
}

TEST_F(loop, add_prepare__hooks_run_in_the_order_added)
{
	struct coloc_err err = { 0 };
	struct hook h[3] = { { .t = &self->t, .id = HOOK_A },
			     { .t = &self->t, .id = HOOK_B },
			     { .t = &self->t, .id = HOOK_C } };

	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, loop_add_prepare(self->loop, NULL, on_prepare_record, &h[i]));
	ASSERT_EQ(0, loop_add_poll(self->loop, NULL, self->pipe_a[0], POLLIN, on_readable_mark,
				   &self->t));
	ASSERT_EQ(1, write(self->pipe_a[1], "a", 1));
	ASSERT_EQ(0, loop_run(self->loop, &err));
	expect_trace(_metadata, &self->t, "ABCPABCPABCP");
}

TEST_F(loop, add_prepare__a_timer_the_hook_makes_due_fires_before_the_hook_runs_again)
{
	struct coloc_err err = { 0 };
	struct hook a = { .t = &self->t, .id = HOOK_A, .first_ns = 0 };

	/* due in an hour until the hook says now; the watchdog ends a loop that missed it */
	ASSERT_EQ(0, loop_add_timer(self->loop, &a.timer, 3600000 * MS, 0, on_timer_mark_exit,
				    &self->t));
	ASSERT_EQ(0, loop_add_timer(self->loop, &self->t.other, 5000 * MS, 0, on_timer_mark_exit,
				    &self->t));
	ASSERT_EQ(0, loop_add_prepare(self->loop, NULL, on_prepare_record, &a));
	EXPECT_EQ(1, loop_run(self->loop, &err));
	expect_trace(_metadata, &self->t, "AT");
}

TEST_F(loop, add_prepare__a_timer_the_hook_brings_forward_bounds_the_same_wait)
{
	struct coloc_err err = { 0 };
	struct hook a = { .t = &self->t, .id = HOOK_A, .first_ns = 20 * MS };

	ASSERT_EQ(0, loop_add_timer(self->loop, &a.timer, 3600000 * MS, 0, on_timer_mark_exit,
				    &self->t));
	ASSERT_EQ(0, loop_add_timer(self->loop, &self->t.other, 5000 * MS, 0, on_timer_mark_exit,
				    &self->t));
	ASSERT_EQ(0, loop_add_prepare(self->loop, NULL, on_prepare_record, &a));
	/* the wait ends at the hook's 20 ms, not at the watchdog's 5 s nor the hour */
	EXPECT_EQ(1, loop_run(self->loop, &err));
	ASSERT_GE(self->t.n, 2);
	EXPECT_EQ(HOOK_A, self->t.order[0]);
	EXPECT_EQ(TIMED, self->t.order[self->t.n - 1]);
}

TEST_F(loop, add_prepare__a_hook_added_by_a_hook_runs_next_iteration_and_a_removed_one_never)
{
	struct coloc_err err = { 0 };
	struct hook b = { .t = &self->t, .id = HOOK_B };
	struct hook c = { .t = &self->t, .id = HOOK_C };
	struct hook a = { .t = &self->t, .id = HOOK_A, .adds = &b };

	ASSERT_EQ(0, loop_add_prepare(self->loop, NULL, on_prepare_record, &a));
	/* C comes after A: A removes it before its turn in the first iteration */
	ASSERT_EQ(0, loop_add_prepare(self->loop, &a.removes, on_prepare_record, &c));
	ASSERT_EQ(0, loop_add_poll(self->loop, NULL, self->pipe_a[0], POLLIN, on_readable_mark,
				   &self->t));
	ASSERT_EQ(1, write(self->pipe_a[1], "a", 1));
	ASSERT_EQ(0, loop_run(self->loop, &err));
	expect_trace(_metadata, &self->t, "APABPABP");
	EXPECT_EQ(0, c.calls);
}

TEST_F(loop, add_prepare__a_hook_that_exits_ends_the_loop_before_the_wait)
{
	struct coloc_err err = { 0 };
	struct hook a = { .t = &self->t, .id = HOOK_A, .exit_code = 5 };
	struct hook b = { .t = &self->t, .id = HOOK_B };

	/* nothing else would end the wait for 5 s: the byte is ready but must not be seen */
	ASSERT_EQ(0, loop_add_timer(self->loop, &self->t.other, 5000 * MS, 0, on_timer_mark_exit,
				    &self->t));
	ASSERT_EQ(0, loop_add_poll(self->loop, NULL, self->pipe_a[0], POLLIN, on_readable_mark,
				   &self->t));
	ASSERT_EQ(1, write(self->pipe_a[1], "a", 1));
	ASSERT_EQ(0, loop_add_prepare(self->loop, NULL, on_prepare_record, &a));
	ASSERT_EQ(0, loop_add_prepare(self->loop, NULL, on_prepare_record, &b));
	EXPECT_EQ(5, loop_run(self->loop, &err));
	expect_trace(_metadata, &self->t, "A");
}

TEST_HARNESS_MAIN
