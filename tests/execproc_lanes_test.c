// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One executor process serving two lanes (execproc_spawn_lanes,
 * docs/design/lanes.md): both lanes are the same process and describe the
 * same model; a block on each lane, on cores of their own, runs at the same
 * time as the other's (the executor's own start and end stamps, in
 * colocd's clock, overlap) and both outputs equal the in-process
 * executor's; the lane that ran last keeps its OpenMP team parked and the
 * other lane's team ends (never both); a SIGKILL through one lane
 * ends both; an exit command on one lane ends the process with status 0
 * and the other lane sees it gone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "execproc.h"
#include "executor.h"
#include "reference.h"
#include "testutil.h"
#include "mono_clock.h"
#include "proc_tasks.h"

#define TOL 1e-3f /* relative to the output's magnitude, as tests/execproc_test.c */
#define READY_MS 120000
#define DONE_MS 60000
#define ROUNDS 20

FIXTURE(execproc_lanes)
{
	struct execproc *ep[2];
	struct model *m;
	int cpus[2];
	float *input, *want;
	size_t in_bytes, out_bytes;
};

/* The in-process executor's outputs for the input fill_inputs writes (seed 7). */
static int reference(FIXTURE_DATA(execproc_lanes) * self, struct coloc_err *err)
{
	struct exec_model *em = exec_model_load(self->m, NULL, err);
	struct model_io_layout io;
	struct exec_query *q;
	int ret = -ENOMEM;

	if (!em)
		return -EINVAL;
	q = exec_query_new(em);
	if (q && !model_io_layout(self->m, &io, err)) {
		self->in_bytes = io.in_bytes;
		self->out_bytes = io.out_bytes;
		self->input = malloc(io.in_bytes);
		self->want = malloc(io.out_bytes);
		exec_query_fill_inputs(q, self->m, 7);
		ret = self->input && self->want ? 0 : -ENOMEM;
		for (int i = 0; i < io.nr_inputs && !ret; i++)
			memcpy((char *)self->input + io.inputs[i].offset,
			       exec_query_input(q, io.inputs[i].layer), io.inputs[i].bytes);
		if (!ret)
			ret = exec_run_block(em, q, 0, self->m->nr_layers, NULL,
					     &(struct exec_cpuset){ .nr = 1,
								    .cpus = { self->cpus[0] } },
					     NULL);
		for (int i = 0; i < io.nr_outputs && !ret; i++)
			ret = exec_query_read_output(q, io.outputs[i].layer,
						     self->want + io.outputs[i].offset / sizeof(float),
						     io.outputs[i].bytes / sizeof(float));
		model_io_layout_free(&io);
	}
	exec_query_free(q);
	exec_model_free(em);
	return ret;
}

FIXTURE_SETUP(execproc_lanes)
{
	struct execproc_opts o = { .tenant = "lanes", .weights_fd = -1 };
	struct coloc_err err = { 0 };
	const char *root = getenv("COLOC_ROOT");
	char path[512], bin[512];
	int n = 0, fd;

	for (int c = 0; c < EXEC_MAX_CPUS && n < 2; c++)
		if (exec_cpu_online(c))
			self->cpus[n++] = c;
	if (n < 2)
		SKIP(return, "two lanes on cores of their own need two online CPUs");
	snprintf(path, sizeof(path), "%s/models/mobilenet_v2.model", root ? root : ".");
	self->m = model_load(path, &err);
	ASSERT_NE(NULL, self->m) TH_LOG("%s", coloc_err_str(&err));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	o.model_fd = fd;
	o.model_name = path;
	ASSERT_EQ(0, execproc_spawn_lanes(&o, 2, self->ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	close(fd);
	/* after the spawn: the reference's run pins this thread, which a child would inherit */
	ASSERT_EQ(0, reference(self, &err)) TH_LOG("%s", coloc_err_str(&err));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, execproc_wait_ready(self->ep[i], READY_MS, &err))
		TH_LOG("lane %d: %s", i, coloc_err_str(&err));
	}
}

FIXTURE_TEARDOWN(execproc_lanes)
{
	/* lane 0 last: it reaps the process */
	execproc_free(self->ep[1]);
	execproc_free(self->ep[0]);
	model_free(self->m);
	free(self->input);
	free(self->want);
}

TEST_F(execproc_lanes, spawn_lanes__two_lanes_of_one_process_run_blocks_at_once)
{
	const struct coloc_shm_header *h[2] = { execproc_header(self->ep[0]),
						execproc_header(self->ep[1]) };
	struct execproc_result res[2];
	struct coloc_err err = { 0 };
	int overlaps = 0, rounds = 0;

	ASSERT_EQ(execproc_pid(self->ep[0]), execproc_pid(self->ep[1]));
	ASSERT_NE(execproc_pidfd(self->ep[0]), execproc_pidfd(self->ep[1]));
	ASSERT_EQ(h[0]->nr_layers, h[1]->nr_layers);
	ASSERT_EQ(self->out_bytes, h[1]->out_bytes);
	for (; rounds < ROUNDS && !overlaps; rounds++) {
		uint64_t submit[2], start[2], end[2];

		for (int i = 0; i < 2; i++) {
			struct execproc_block b = { .slot = (unsigned int)i,
						    .first = 0,
						    .last = h[i]->nr_layers,
						    .query_id = (unsigned int)(100 * rounds + i),
						    .cpus = &self->cpus[i],
						    .nr_cpus = 1 };

			memcpy(execproc_input(self->ep[i], (unsigned int)i), self->input,
			       self->in_bytes);
			submit[i] = coloc_now_ns();
			ASSERT_EQ(0, execproc_submit_block(self->ep[i], &b, &err))
			TH_LOG("lane %d: %s", i, coloc_err_str(&err));
		}
		for (int i = 0; i < 2; i++) {
			float max_err, max_ref;

			ASSERT_EQ(1, execproc_wait_done(self->ep[i], &res[i], DONE_MS, &err))
			TH_LOG("lane %d: %s", i, coloc_err_str(&err));
			ASSERT_EQ(COLOC_SHM_DONE_OK, res[i].status) TH_LOG("%s", res[i].reason);
			ref_compare(execproc_output(self->ep[i], (unsigned int)i), self->want,
				    (int64_t)(self->out_bytes / sizeof(float)), &max_err, &max_ref);
			ASSERT_LE(max_err, TOL * (1.0f + max_ref))
			TH_LOG("lane %d: max |error| %g, max |value| %g", i, max_err, max_ref);
			/* the executor's stamps, clamped into colocd's round trip */
			start[i] = submit[i] + res[i].dispatch_ns;
			end[i] = start[i] + res[i].run_ns;
		}
		overlaps += start[0] < end[1] && start[1] < end[0];
	}
	TH_LOG("two lanes' blocks overlapped in round %d of %d", rounds, ROUNDS);
	EXPECT_GT(overlaps, 0) TH_LOG("the two lanes never ran a block at the same time");
}

/* Lane i runs a whole query on both cores; 0 or -1 (the harness has said why). */
static int run_on_both_cores(struct __test_metadata *_metadata, FIXTURE_DATA(execproc_lanes) *self,
			     int i)
{
	const struct coloc_shm_header *h = execproc_header(self->ep[i]);
	struct execproc_block b = { .slot = 0,
				    .first = 0,
				    .last = h->nr_layers,
				    .query_id = (unsigned int)i,
				    .cpus = self->cpus,
				    .nr_cpus = 2 };
	struct execproc_result res;
	struct coloc_err err = { 0 };

	memcpy(execproc_input(self->ep[i], 0), self->input, self->in_bytes);
	ASSERT_EQ(0, execproc_submit_block(self->ep[i], &b, &err))
	TH_LOG("lane %d: %s", i, coloc_err_str(&err));
	ASSERT_EQ(1, execproc_wait_done(self->ep[i], &res, DONE_MS, &err))
	TH_LOG("lane %d: %s", i, coloc_err_str(&err));
	ASSERT_EQ(COLOC_SHM_DONE_OK, res.status) TH_LOG("%s", res.reason);
	return 0;
}

/*
 * Waits (up to 5 s) until process pid has had want threads for 200 ms on
 * end (a thread about to end is still counted); the last count.
 */
static int wait_threads(pid_t pid, int want)
{
	int n = -1, same = 0;

	for (int i = 0; i < 500 && same < 20; i++) {
		n = tu_tasks_each(pid, NULL, NULL);
		same = n == want ? same + 1 : 0;
		usleep(10000);
	}
	return n;
}

/*
 * Between commands a lane keeps its OpenMP team parked, as a process of one
 * lane does, until another lane's block needs the threads: libgomp counts
 * every pool thread of the process and past its CPUs throttles every
 * team's spin between layers (exec_team_turns.c). So after blocks on both
 * cores, the process is its two lanes' threads and the team of the lane
 * that ran last (one thread), whichever lane that was; never both teams.
 */
TEST_F(execproc_lanes, spawn_lanes__the_last_lane_to_run_keeps_its_team)
{
	pid_t pid = execproc_pid(self->ep[0]);
	int order[] = { 0, 1, 1, 0 };

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		int n;

		ASSERT_EQ(0, run_on_both_cores(_metadata, self, order[k]));
		/* the other lane's team ends when asked; this lane's parks on its doorbell */
		n = wait_threads(pid, 3);
		EXPECT_EQ(3, n)
		TH_LOG("after lane %d's block the executor of two lanes has %d threads", order[k],
		       n);
	}
}

/* Waits for lane i's process to be gone as seen from that lane; its poll's answer. */
static int wait_gone(struct execproc *ep, struct coloc_err *err)
{
	struct pollfd p = { .fd = execproc_pidfd(ep), .events = POLLIN };
	int ret = 0;

	for (int i = 0; i < 100 && !ret; i++) {
		if (poll(&p, 1, 1000) < 0)
			return -errno;
		ret = execproc_poll(ep, NULL, err);
	}
	return ret;
}

TEST_F(execproc_lanes, spawn_lanes__a_killed_lane_ends_every_lane)
{
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, execproc_signal_kill(self->ep[1]));
	/* the first lane reaps it, the second learns it from its own pidfd */
	EXPECT_GT(0, wait_gone(self->ep[0], &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "killed by signal 9"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_TRUE(execproc_reaped(self->ep[0]));
	EXPECT_GT(0, wait_gone(self->ep[1], &err));
	EXPECT_TRUE(execproc_reaped(self->ep[1]));
}

TEST_F(execproc_lanes, spawn_lanes__exit_on_one_lane_ends_the_process)
{
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, execproc_stop(self->ep[1], DONE_MS, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_GT(0, wait_gone(self->ep[0], &err));
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "exited with status 0"))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_TRUE(execproc_reaped(self->ep[0]));
}

TEST_HARNESS_MAIN
