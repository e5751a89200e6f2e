/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the tests of daemon/execproc.c share (execproc_test.c,
 * execproc_isolation_test.c, execproc_hostile_test.c): a real executor
 * (bin/coloc-executor) spawned on models/mobilenet_v2.model as colocd does,
 * the same model run in this process as the reference its outputs must
 * match, and the calls that submit a block and wait for its completion.
 * Include it after kselftest_harness.h.
 */
#ifndef COLOC_TESTS_EXECPROC_FIXTURE_H
#define COLOC_TESTS_EXECPROC_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "execproc.h"
#include "executor.h"
#include "reference.h"
#include "testutil.h"

#define TOL 1e-3f /* relative to the output's magnitude; ~70 layers of fp32 sums */
#define READY_MS 120000
#define DONE_MS 60000

static inline void model_path(char *buf, size_t len, const char *name)
{
	const char *root = getenv("COLOC_ROOT");

	snprintf(buf, len, "%s/models/%s.model", root ? root : ".", name);
}

/* Spawns o's executor on the file at path, handed over by descriptor as colocd does. */
static inline int spawn_path(struct execproc_opts *o, const char *path, struct execproc **ep,
			     struct coloc_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return coloc_err_set(err, -errno, "%s: %s", path, strerror(errno));
	o->model_fd = fd;
	o->model_name = path;
	ret = execproc_spawn(o, ep, err);
	close(fd);
	return ret;
}

/*
 * Size and Rss (kB) of pid's mapping of tenant's shared memory (named
 * coloc-shm:TENANT), from /proc/PID/smaps.
 */
static inline bool shm_mapping_kb(pid_t pid, const char *tenant, long *size_kb, long *rss_kb)
{
	char path[64], line[512], name[128];
	bool in = false, found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	snprintf(name, sizeof(name), "coloc-shm:%s ", tenant);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = !found && strstr(line, name);
		else if (in && sscanf(line, "Size: %ld kB", size_kb) == 1)
			continue;
		else if (in && sscanf(line, "Rss: %ld kB", rss_kb) == 1)
			found = true;
	}
	fclose(f);
	return found;
}

/* Every online CPU this test may run on, as the executor takes them by default. */
static inline void all_cpus(struct exec_cpuset *set)
{
	cpu_set_t mask;

	set->nr = 0;
	sched_getaffinity(0, sizeof(mask), &mask);
	for (int cpu = 0; cpu < EXEC_MAX_CPUS && cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &mask) && exec_cpu_online(cpu))
			set->cpus[set->nr++] = cpu;
}

FIXTURE(execproc)
{
	struct execproc *ep;
	struct model *m;
	struct exec_model *em;
	struct exec_query *q;
	struct exec_cpuset cpus;
	float *input, *want; /* the query's input and the in-process outputs, concatenated */
	size_t in_elems, out_elems;
};

FIXTURE_SETUP(execproc)
{
	char path[512], bin[512];
	struct execproc_opts o = { .tenant = "mnv2", .weights_fd = -1 };
	struct coloc_err cerr = { 0 };
	struct model_io_layout io;

	model_path(path, sizeof(path), "mobilenet_v2");
	if (access(path, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", path);
	all_cpus(&self->cpus);
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	o.weights_fd = -1;
	ASSERT_EQ(0, spawn_path(&o, path, &self->ep, &cerr))
	TH_LOG("%s", coloc_err_str(&cerr));

	/* the same model in this process: the reference the executor must match */
	self->m = model_load(path, &cerr);
	ASSERT_NE(NULL, self->m) TH_LOG("%s", coloc_err_str(&cerr));
	self->em = exec_model_load(self->m, &(struct exec_options){ .cpus = self->cpus }, &cerr);
	ASSERT_NE(NULL, self->em) TH_LOG("%s", coloc_err_str(&cerr));
	self->q = exec_query_new(self->em);
	ASSERT_NE(NULL, self->q);
	exec_query_fill_inputs(self->q, self->m, 7);
	ASSERT_EQ(0, model_io_layout(self->m, &io, &cerr)) TH_LOG("%s", coloc_err_str(&cerr));
	self->in_elems = io.in_bytes / sizeof(float);
	self->out_elems = io.out_bytes / sizeof(float);
	self->input = malloc(io.in_bytes);
	self->want = malloc(io.out_bytes);
	ASSERT_TRUE(self->input && self->want);
	for (int i = 0; i < io.nr_inputs; i++)
		memcpy((char *)self->input + io.inputs[i].offset,
		       exec_query_input(self->q, io.inputs[i].layer), io.inputs[i].bytes);
	ASSERT_EQ(0, exec_run_block(self->em, self->q, 0, self->m->nr_layers, NULL, &self->cpus,
				    NULL));
	for (int i = 0; i < io.nr_outputs; i++)
		ASSERT_EQ(0,
			  exec_query_read_output(self->q, io.outputs[i].layer,
						 self->want + io.outputs[i].offset / sizeof(float),
						 io.outputs[i].bytes / sizeof(float)));
	model_io_layout_free(&io);
	ASSERT_EQ(0, execproc_wait_ready(self->ep, READY_MS, &cerr))
	TH_LOG("%s", coloc_err_str(&cerr));
}

FIXTURE_TEARDOWN(execproc)
{
	execproc_free(self->ep);
	free(self->input);
	free(self->want);
	exec_query_free(self->q);
	exec_model_free(self->em);
	model_free(self->m);
}

/* Submits a block and waits for its completion; returns execproc_wait_done's value. */
static inline int run_block(struct execproc *ep, unsigned int slot, int first, int last,
			    const int *versions, const int *cpus, int nr_cpus,
			    struct execproc_result *res, struct coloc_err *err)
{
	struct execproc_block b = { .slot = slot,
				    .first = (unsigned int)first,
				    .last = (unsigned int)last,
				    .versions = versions,
				    .cpus = cpus,
				    .nr_cpus = nr_cpus };
	int ret = execproc_submit_block(ep, &b, err);

	return ret ? ret : execproc_wait_done(ep, res, DONE_MS, err);
}

static inline void expect_output(struct __test_metadata *_metadata, FIXTURE_DATA(execproc) * self,
				 unsigned int slot, const char *what)
{
	const float *got = execproc_output(self->ep, slot);
	float max_err, max_ref;

	ref_compare(got, self->want, (int64_t)self->out_elems, &max_err, &max_ref);
	TH_LOG("%s: %zu outputs, max |error| %g, max |value| %g", what, self->out_elems, max_err,
	       max_ref);
	EXPECT_LE(max_err, TOL * (1.0f + max_ref));
}

/* Polls (never blocking) until execproc_poll returns something other than 0, or timeout_ms. */
static inline int poll_until(struct execproc *ep, struct execproc_result *res, int timeout_ms,
			     struct coloc_err *err)
{
	__u64 end = coloc_now_ns() + (__u64)timeout_ms * 1000000ull;
	int ret;

	while (!(ret = execproc_poll(ep, res, err)) && coloc_now_ns() < end) {
		struct pollfd p[2] = { { .fd = execproc_done_fd(ep), .events = POLLIN },
				       { .fd = execproc_pidfd(ep), .events = POLLIN } };

		poll(p, 2, 10);
	}
	return ret;
}

#endif
