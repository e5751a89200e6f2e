// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving core (daemon/serving_tenant.c) when starting a tenant's executors
 * fails part-way, in process mode: the executors already started are
 * killed and left to the event loop to reap (their pidfds watched), never
 * waited for inside the call. The failure is real: the descriptor limit
 * (RLIMIT_NOFILE) is raised one at a time until the first of two
 * executors starts and the second cannot. The executor left over is
 * reaped even when its pidfd cannot be watched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "serving.h"
#include "testutil.h"

#define TRIES 64 /* descriptor limits tried above what is open */

struct watched {
	int fds[16];
	int nr;
	bool refuse; /* every watch fails, as the loop's would out of memory */
};

static int on_watch(void *ctx, int fd, bool add)
{
	struct watched *w = ctx;

	if (add) {
		if (w->refuse)
			return -ENOMEM;
		if (w->nr >= 16)
			return -ENOSPC;
		w->fds[w->nr++] = fd;
		return 0;
	}
	for (int i = 0; i < w->nr; i++)
		if (w->fds[i] == fd) {
			w->fds[i] = w->fds[--w->nr];
			break;
		}
	return 0;
}

/* Whether a child of this process is not reaped yet (alive or a zombie); reaps none. */
static bool child_left(void)
{
	siginfo_t si = { 0 };

	/* ECHILD when there is none at all */
	return !waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT);
}

static int open_fds(void)
{
	return tu_nr_dir_entries("/proc/self/fd");
}

FIXTURE(spawn)
{
	struct serving *s;
	struct watched w;
	char model[512];
	struct rlimit saved;
};

FIXTURE_SETUP(spawn)
{
	const char *root = getenv("COLOC_ROOT");
	struct coloc_err err = { 0 };
	char bin[512];
	struct serving_config cfg = { .executor = tu_bin("coloc-executor", bin, sizeof(bin)),
				      .watch = on_watch,
				      .ctx = &self->w };

	self->s = NULL;
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &self->saved));
	snprintf(self->model, sizeof(self->model), "%s/models/mobilenet_v2.model",
		 root ? root : ".");
	if (access(self->model, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", self->model);
	ASSERT_EQ(0, serving_create(&cfg, &self->s, &err)) TH_LOG("%s", coloc_err_str(&err));
}

FIXTURE_TEARDOWN(spawn)
{
	setrlimit(RLIMIT_NOFILE, &self->saved);
	serving_destroy(self->s);
}

/*
 * Runs the core as serving.h asks of an event loop, no more: polls the
 * watched fds, and ticks only when serving_next_timeout_ms says, until no
 * child is left or timeout_ms.
 */
static bool pump_until_reaped(FIXTURE_DATA(spawn) * self, int timeout_ms)
{
	uint64_t end = coloc_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	while (child_left()) {
		int n = self->w.nr, next = serving_next_timeout_ms(self->s), wait;
		uint64_t now = coloc_now_ns();
		struct pollfd pfd[16];

		if (now >= end)
			return false;
		wait = (int)((end - now) / 1000000ull) + 1;
		if (next >= 0 && next < wait)
			wait = next;
		for (int i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = self->w.fds[i], .events = POLLIN };
		if (poll(pfd, (nfds_t)n, wait) <= 0) {
			if (next >= 0)
				serving_tick(self->s);
			continue;
		}
		for (int i = 0; i < n; i++)
			if (pfd[i].revents)
				serving_handle_fd(self->s, pfd[i].fd);
	}
	return true;
}

/*
 * Admits a tenant of two executors under descriptor limits a step higher
 * each time until the first executor starts and the second cannot; each
 * executor a failure leaves must be reaped through the loop. Returns the
 * limit that left one, or 0.
 */
static int admit_until_one_is_left(FIXTURE_DATA(spawn) * self, struct __test_metadata *_metadata)
{
	int model_fd = tu_sealed_copy(self->model), base, found = 0;
	struct serving_tenant_spec spec = { .name = "t",
					    .model_name = self->model,
					    .model_fd = model_fd,
					    .weights_fd = -1,
					    .qos_ns = 60000000000ull,
					    .executors = 2 };

	ASSERT_LE(0, model_fd);
	ASSERT_FALSE(child_left());
	base = open_fds();
	for (int extra = 1; extra <= TRIES && !found; extra++) {
		struct rlimit lim = { .rlim_cur = (rlim_t)(base + extra),
				      .rlim_max = self->saved.rlim_max };
		struct coloc_err err = { 0 };
		int ret;

		ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &lim));
		ret = serving_admit(self->s, &spec, &err);
		ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &self->saved));
		if (!ret) {
			TH_LOG("both executors started with %d descriptors", base + extra);
			break;
		}
		/* the first started and the second did not: it is left for the loop */
		if (child_left()) {
			found = base + extra;
			TH_LOG("with %d descriptors: %s", found, coloc_err_str(&err));
		}
		ASSERT_TRUE(pump_until_reaped(self, 20000))
		TH_LOG("an executor left by a failed start was not reaped through the loop");
	}
	close(model_fd);
	return found;
}

TEST_F_TIMEOUT(spawn, admit__executors_started_before_a_spawn_fails_are_reaped_by_the_loop, 300)
{
	EXPECT_NE(0, admit_until_one_is_left(self, _metadata))
	TH_LOG("no descriptor limit left a started executor to the loop: either none "
	       "started before the failure, or the failed start waited for it");
}

TEST_F_TIMEOUT(spawn, admit__an_executor_whose_pidfd_cannot_be_watched_is_reaped, 300)
{
	self->w.refuse = true;
	EXPECT_NE(0, admit_until_one_is_left(self, _metadata))
	TH_LOG("no descriptor limit left a started executor to the loop");
}

TEST_HARNESS_MAIN
