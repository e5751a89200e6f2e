// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The serving core (daemon/serving.c) when starting a tenant's executors
 * fails part-way, in process mode: the executors already started are
 * killed and left to the event loop to reap (their pidfds watched), never
 * waited for inside the call. The failure is real: the descriptor limit
 * (RLIMIT_NOFILE) is raised one at a time until the first of two
 * executors starts and the second cannot.
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
};

static int on_watch(void *ctx, int fd, bool add)
{
	struct watched *w = ctx;

	if (add) {
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

/* Runs the core as an event loop would, until no child is left or timeout_ms. */
static bool pump_until_reaped(FIXTURE_DATA(spawn) * self, int timeout_ms)
{
	uint64_t end = tu_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	while (child_left()) {
		struct pollfd pfd[16];
		int n = self->w.nr;

		if (tu_now_ns() >= end)
			return false;
		for (int i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = self->w.fds[i], .events = POLLIN };
		if (poll(pfd, (nfds_t)n, 50) <= 0) {
			serving_tick(self->s);
			continue;
		}
		for (int i = 0; i < n; i++)
			if (pfd[i].revents)
				serving_handle_fd(self->s, pfd[i].fd);
	}
	return true;
}

TEST_F_TIMEOUT(spawn, admit__executors_started_before_a_spawn_fails_are_reaped_by_the_loop, 300)
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
		ASSERT_TRUE(pump_until_reaped(self, 30000))
		TH_LOG("an executor left by a failed start was not reaped through the loop");
	}
	EXPECT_NE(0, found)
	TH_LOG("no descriptor limit left a started executor to the loop: either none "
	       "started before the failure, or the failed start waited for it");
	close(model_fd);
}

TEST_HARNESS_MAIN
