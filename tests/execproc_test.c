// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One tenant's executor process (bin/coloc-executor) driven through the
 * shared memory by daemon/execproc.c, with a real model: its outputs equal
 * the in-process executor's, block by block or whole; it runs as an
 * unprivileged user with no capabilities, no_new_privs, not dumpable and
 * with only the shared memory and the doorbell open; a SIGKILL mid-block is
 * noticed through the pidfd with the reason (the delay is printed, never
 * asserted); malformed commands are refused with a reason and the executor
 * keeps serving; a shared block (the os policy's) runs its team unpinned on
 * all its cores.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "execproc.h"
#include "executor.h"
#include "reference.h"
#include "testutil.h"

#define TOL 1e-3f /* relative to the output's magnitude; ~70 layers of fp32 sums */
#define READY_MS 120000
#define DONE_MS 60000

static void model_path(char *buf, size_t len, const char *name)
{
	const char *root = getenv("COLOC_ROOT");

	snprintf(buf, len, "%s/models/%s.model", root ? root : ".", name);
}

/* Spawns o's executor on the file at path, handed over by descriptor as colocd does. */
static int spawn_path(struct execproc_opts *o, const char *path, struct execproc **ep,
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

/* Every online CPU this test may run on, as the executor takes them by default. */
static void all_cpus(struct exec_cpuset *set)
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
		ASSERT_EQ(0, exec_query_read_output(self->q, io.outputs[i].layer,
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
static int run_block(struct execproc *ep, unsigned int slot, int first, int last,
		     const int *versions, const int *cpus, int nr_cpus, struct execproc_result *res,
		     struct coloc_err *err)
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

static void expect_output(struct __test_metadata *_metadata, FIXTURE_DATA(execproc) * self,
			  unsigned int slot, const char *what)
{
	const float *got = execproc_output(self->ep, slot);
	float max_err, max_ref;

	ref_compare(got, self->want, (int64_t)self->out_elems, &max_err, &max_ref);
	TH_LOG("%s: %zu outputs, max |error| %g, max |value| %g", what, self->out_elems, max_err,
	       max_ref);
	EXPECT_LE(max_err, TOL * (1.0f + max_ref));
}

TEST_F(execproc, submit_block__whole_model_matches_in_process)
{
	const struct coloc_shm_header *h = execproc_header(self->ep);
	struct execproc_result res;
	struct coloc_err err = { 0 };

	EXPECT_EQ(self->m->nr_layers, (int)h->nr_layers);
	EXPECT_EQ(self->in_elems * sizeof(float), h->in_bytes);
	EXPECT_EQ(self->out_elems * sizeof(float), h->out_bytes);
	memcpy(execproc_input(self->ep, 0), self->input, self->in_elems * sizeof(float));
	ASSERT_EQ(1, run_block(self->ep, 0, 0, self->m->nr_layers, NULL, self->cpus.cpus,
			       self->cpus.nr, &res, &err))
	TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(COLOC_SHM_DONE_OK, res.status) TH_LOG("%s", res.reason);
	EXPECT_EQ(0, res.error);
	EXPECT_GT(res.block_ns, 0);
	EXPECT_LE(res.block_ns, res.round_trip_ns);
	EXPECT_FALSE(res.clamped); /* an honest executor's times are never changed */
	expect_output(_metadata, self, 0, "one block in the executor vs in-process");
}

/*
 * Three blocks in slot 3, each on its own core set and with its own
 * versions (the last version of every layer in the middle block), equal the
 * in-process query run as one block at version 0.
 */
TEST_F(execproc, submit_block__blocks_with_versions_and_cores_equal_one_block)
{
	int n = self->m->nr_layers, bounds[4] = { 0, n / 3, 2 * n / 3, n };
	int one[1] = { self->cpus.cpus[0] }, other[1] = { self->cpus.cpus[self->cpus.nr - 1] };
	const int *sets[3] = { one, other, self->cpus.cpus };
	int nr[3] = { 1, 1, self->cpus.nr };
	int *versions = calloc((size_t)n, sizeof(int));
	struct execproc_result res;
	struct coloc_err err = { 0 };

	ASSERT_NE(NULL, versions);
	for (int li = bounds[1]; li < bounds[2]; li++)
		versions[li] = exec_layer_nr_versions(self->em, li) - 1;
	memcpy(execproc_input(self->ep, 3), self->input, self->in_elems * sizeof(float));
	for (int blk = 0; blk < 3; blk++) {
		ASSERT_EQ(1, run_block(self->ep, 3, bounds[blk], bounds[blk + 1],
				       versions + bounds[blk], sets[blk], nr[blk], &res, &err))
		TH_LOG("%s", coloc_err_str(&err));
		ASSERT_EQ(COLOC_SHM_DONE_OK, res.status) TH_LOG("%s", res.reason);
		EXPECT_EQ((unsigned int)bounds[blk], res.first);
		EXPECT_EQ((unsigned int)bounds[blk + 1], res.last);
	}
	expect_output(_metadata, self, 3, "three blocks in the executor vs one in-process");
	free(versions);
}

/*
 * The executor's threads by the size of their CPU mask: how many may run on
 * exactly one CPU, and how many on all nr_all; the total is returned.
 */
static int thread_masks(pid_t pid, int nr_all, int *single, int *all)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	*single = *all = 0;
	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		cpu_set_t set;

		if (de->d_name[0] == '.' || sched_getaffinity(atoi(de->d_name), sizeof(set), &set))
			continue;
		n++;
		*single += CPU_COUNT(&set) == 1;
		*all += CPU_COUNT(&set) == nr_all;
	}
	closedir(dir);
	return n;
}

/*
 * A block marked shared (the os policy's) leaves every thread of the
 * executor free to run on all the block's cores, and computes the same
 * outputs; a pinned block before and after it puts a team thread alone on
 * one core.
 */
TEST_F(execproc, submit_block__shared_runs_unpinned_on_all_cores_pinned_one_per_core)
{
	struct execproc_block b = { .first = 0,
				    .last = (unsigned int)self->m->nr_layers,
				    .cpus = self->cpus.cpus,
				    .nr_cpus = self->cpus.nr };
	pid_t pid = execproc_pid(self->ep);
	struct execproc_result res;
	struct coloc_err err = { 0 };
	int single, all, n;

	if (self->cpus.nr < 2)
		SKIP(return, "one CPU: pinned and shared are the same mask");
	for (int round = 0; round < 3; round++) {
		b.slot = (unsigned int)round;
		b.shared = round == 1;
		memcpy(execproc_input(self->ep, b.slot), self->input,
		       self->in_elems * sizeof(float));
		ASSERT_EQ(0, execproc_submit_block(self->ep, &b, &err))
		TH_LOG("%s", coloc_err_str(&err));
		ASSERT_EQ(1, execproc_wait_done(self->ep, &res, DONE_MS, &err))
		TH_LOG("%s", coloc_err_str(&err));
		ASSERT_EQ(COLOC_SHM_DONE_OK, res.status) TH_LOG("%s", res.reason);
		expect_output(_metadata, self, b.slot, b.shared ? "shared block" : "pinned block");
		n = thread_masks(pid, self->cpus.nr, &single, &all);
		TH_LOG("%s block: %d threads, %d on one CPU, %d on all %d",
		       b.shared ? "shared" : "pinned", n, single, all, self->cpus.nr);
		ASSERT_GT(n, 1);
		if (b.shared) {
			EXPECT_EQ(n, all);
			EXPECT_EQ(0, single);
		} else {
			EXPECT_GE(single, 1);
		}
	}
}

struct proc_creds {
	long uid[4], gid[4];
	unsigned long long cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
	int no_new_privs;
	long tgid;
};

static int read_creds(const char *status_path, struct proc_creds *c)
{
	char line[256];
	FILE *f = fopen(status_path, "r");
	int found = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		found += sscanf(line, "Uid: %ld %ld %ld %ld", &c->uid[0], &c->uid[1], &c->uid[2],
				&c->uid[3]) == 4;
		found += sscanf(line, "Gid: %ld %ld %ld %ld", &c->gid[0], &c->gid[1], &c->gid[2],
				&c->gid[3]) == 4;
		found += sscanf(line, "CapInh: %llx", &c->cap_inh);
		found += sscanf(line, "CapPrm: %llx", &c->cap_prm);
		found += sscanf(line, "CapEff: %llx", &c->cap_eff);
		found += sscanf(line, "CapBnd: %llx", &c->cap_bnd);
		found += sscanf(line, "CapAmb: %llx", &c->cap_amb);
		found += sscanf(line, "NoNewPrivs: %d", &c->no_new_privs);
		found += sscanf(line, "Tgid: %ld", &c->tgid);
	}
	fclose(f);
	return found == 9 ? 0 : -EINVAL;
}

/* In a child dropped to uid: can it read the executor's memory? 0 if every way was refused. */
static int peek_as(uid_t uid, gid_t gid, pid_t pid, void *addr)
{
	pid_t child = fork();
	int status;

	if (!child) {
		char path[64], byte;
		struct iovec local = { &byte, 1 }, remote = { addr, 1 };

		if (setgroups(0, NULL) || setgid(gid) || setuid(uid))
			_exit(3);
		snprintf(path, sizeof(path), "/proc/%d/mem", pid);
		if (open(path, O_RDONLY) >= 0)
			_exit(1);
		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) >= 0 || errno != EPERM)
			_exit(2);
		_exit(0);
	}
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

TEST_F(execproc, executor__unprivileged_no_caps_not_dumpable)
{
	pid_t pid = execproc_pid(self->ep);
	struct passwd *pw = getpwnam("coloc");
	const char *user = pw ? "coloc" : "nobody";
	char path[300];
	struct stat st;
	struct dirent *de;
	int nr_threads = 0, nr_fds = 0;
	DIR *dir;

	if (!pw)
		pw = getpwnam("nobody");
	ASSERT_NE(NULL, pw);
	EXPECT_EQ(pid, execproc_header(self->ep)->executor_pid);
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	ASSERT_NE(NULL, dir);
	/* every thread, the OpenMP team included: credentials are per thread */
	while ((de = readdir(dir))) {
		struct proc_creds c;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", pid, de->d_name);
		ASSERT_EQ(0, read_creds(path, &c));
		for (int i = 0; i < 4; i++) {
			EXPECT_EQ((long)pw->pw_uid, c.uid[i]) TH_LOG("thread %s", de->d_name);
			EXPECT_EQ((long)pw->pw_gid, c.gid[i]) TH_LOG("thread %s", de->d_name);
		}
		EXPECT_EQ(0, c.cap_inh | c.cap_prm | c.cap_eff | c.cap_amb);
		EXPECT_EQ(0, c.cap_bnd) TH_LOG("thread %s CapBnd %llx", de->d_name, c.cap_bnd);
		EXPECT_EQ(1, c.no_new_privs);
		EXPECT_EQ((long)pid, c.tgid);
		nr_threads++;
	}
	closedir(dir);
	TH_LOG("executor pid %d runs as %s (uid %d) with %d thread(s)", pid, user, pw->pw_uid,
	       nr_threads);
	/* a non-dumpable process's /proc files belong to root, not to its uid */
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0, st.st_uid);
	/* another process of the same user (another tenant) cannot read its memory */
	EXPECT_EQ(0, peek_as(pw->pw_uid, pw->pw_gid, pid, (void *)0x400000));
	/* open files: stdin, stdout, stderr, the shared memory and the doorbell, no more */
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	ASSERT_NE(NULL, dir);
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.') {
			EXPECT_LE(atoi(de->d_name), 4) TH_LOG("unexpected fd %s", de->d_name);
			nr_fds++;
		}
	closedir(dir);
	EXPECT_LE(nr_fds, 5);
}

/* SIGKILL from outside while a whole-model block runs on one core. */
TEST_F(execproc, kill__mid_block_noticed_through_pidfd_with_reason)
{
	struct execproc_block b = { .slot = 1,
				    .first = 0,
				    .last = (unsigned int)self->m->nr_layers,
				    .cpus = self->cpus.cpus,
				    .nr_cpus = 1 };
	struct execproc_result res;
	struct coloc_err err = { 0 };
	__u64 t0, t1;
	int ret;

	ASSERT_EQ(0, execproc_submit_block(self->ep, &b, &err));
	t0 = tu_now_ns();
	while (!execproc_started(self->ep) && tu_now_ns() - t0 < 10000000000ull)
		usleep(50);
	ASSERT_TRUE(execproc_started(self->ep));
	t0 = tu_now_ns();
	ASSERT_EQ(0, kill(execproc_pid(self->ep), SIGKILL));
	ret = execproc_wait_done(self->ep, &res, DONE_MS, &err);
	t1 = tu_now_ns();
	ASSERT_EQ(-EPIPE, ret) TH_LOG("the block completed before the kill (%d)", ret);
	TH_LOG("SIGKILL to detection: %.3f ms; reason: %s", (t1 - t0) / 1e6, coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(err.msg, "signal 9"));
	EXPECT_NE(NULL, strstr(err.msg, "while running layers [0, "));
	/* dead stays dead: the next submit says why, and nothing is left to reap */
	coloc_err_clear(&err);
	EXPECT_EQ(-EPIPE, execproc_submit_nop(self->ep, &err));
	EXPECT_NE(NULL, strstr(err.msg, "signal 9"));
	EXPECT_EQ(-1, waitpid(execproc_pid(self->ep), NULL, WNOHANG));
	EXPECT_EQ(ECHILD, errno);
}

TEST_F(execproc, submit_block__malformed_refused_and_executor_keeps_serving)
{
	int n = self->m->nr_layers, conv = -1, input_v1[1] = { 1 };
	int *bad_version = calloc((size_t)n, sizeof(int));
	int far_cpu[1] = { COLOC_MAX_CPUS - 1 };
	struct execproc_result res;
	struct coloc_err err = { 0 };
	pid_t pid = execproc_pid(self->ep);

	for (int li = 0; li < n && conv < 0; li++)
		if (exec_layer_nr_versions(self->em, li) > 1)
			conv = li;
	ASSERT_NE(NULL, bad_version);
	ASSERT_GE(conv, 1);
	ASSERT_FALSE(exec_cpu_online(far_cpu[0]));
	/* a fresh query: version 0 up to conv, then one past conv's count */
	bad_version[conv] = exec_layer_nr_versions(self->em, conv);
	struct {
		const char *what;
		int slot, first, last;
		const int *versions;
		const int *cpus;
		int nr_cpus;
		const char *says;
	} bad[] = {
		{ "past the last layer", 0, 0, n + 1, NULL, self->cpus.cpus, 1, "not a block" },
		{ "empty range", 0, 5, 5, NULL, self->cpus.cpus, 1, "not a block" },
		{ "reversed range", 0, 6, 5, NULL, self->cpus.cpus, 1, "not a block" },
		{ "activations never computed", 2, 10, 20, NULL, self->cpus.cpus, 1,
		  "never computed" },
		{ "version past the layer's count", 0, 0, conv + 1, bad_version, self->cpus.cpus, 1,
		  "version" },
		{ "version 1 of the input layer", 0, 0, 1, input_v1, self->cpus.cpus, 1,
		  "has 1 version;" },
		{ "no cores", 0, 0, n, NULL, self->cpus.cpus, 0, "no cores" },
		{ "a core not online", 0, 0, n, NULL, far_cpu, 1, "not one of the cores" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		coloc_err_clear(&err);
		ASSERT_EQ(1,
			  run_block(self->ep, (unsigned int)bad[i].slot, bad[i].first, bad[i].last,
				    bad[i].versions, bad[i].cpus, bad[i].nr_cpus, &res, &err))
		TH_LOG("%s: %s", bad[i].what, coloc_err_str(&err));
		EXPECT_EQ(COLOC_SHM_DONE_REFUSED, res.status) TH_LOG("%s", bad[i].what);
		EXPECT_EQ(-EINVAL, res.error);
		EXPECT_EQ(0, res.block_ns);
		EXPECT_NE(NULL, strstr(res.reason, bad[i].says))
		TH_LOG("%s: reason '%s'", bad[i].what, res.reason);
	}
	/* the driver refuses what the layout cannot carry, without a round trip */
	far_cpu[0] = COLOC_MAX_CPUS;
	coloc_err_clear(&err);
	EXPECT_EQ(-EINVAL, run_block(self->ep, 0, 0, n, NULL, far_cpu, 1, &res, &err));
	coloc_err_clear(&err);
	EXPECT_EQ(-EINVAL, run_block(self->ep, COLOC_SHM_NR_SLOTS, 0, n, NULL, self->cpus.cpus, 1,
				     &res, &err));
	/* still the same process, and it still computes the right answer */
	memcpy(execproc_input(self->ep, 2), self->input, self->in_elems * sizeof(float));
	ASSERT_EQ(1, run_block(self->ep, 2, 0, n, NULL, self->cpus.cpus, self->cpus.nr, &res, &err))
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(COLOC_SHM_DONE_OK, res.status) TH_LOG("%s", res.reason);
	EXPECT_EQ(pid, execproc_pid(self->ep));
	EXPECT_EQ(0, kill(pid, 0));
	expect_output(_metadata, self, 2, "after the refusals");
	free(bad_version);
}

/* Whether every thread of pid sleeps in futex(2); the count of threads in n. */
static bool all_threads_in_futex(pid_t pid, int *n)
{
	char path[300], buf[512];
	struct dirent *de;
	bool all = true;
	DIR *dir;

	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while ((de = readdir(dir))) {
		char state = '?';
		long nr = -1;
		char *paren;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		(*n)++;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid, de->d_name);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f) && (paren = strrchr(buf, ')')))
			state = paren[2];
		if (f)
			fclose(f);
		/* the syscall the thread is blocked in, by number */
		snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall", pid, de->d_name);
		f = fopen(path, "r");
		if (!f || fscanf(f, "%ld", &nr) != 1)
			nr = -1;
		if (f)
			fclose(f);
		all &= state == 'S' && nr == SYS_futex;
	}
	closedir(dir);
	return all && *n > 0;
}

/* After a block on every core, the executor's threads all sleep in futex: none spins. */
TEST_F(execproc, executor__idle_threads_sleep_in_futex)
{
	pid_t pid = execproc_pid(self->ep);
	struct execproc_result res;
	struct coloc_err err = { 0 };
	__u64 t0;
	bool asleep;
	int n;

	memcpy(execproc_input(self->ep, 0), self->input, self->in_elems * sizeof(float));
	ASSERT_EQ(1, run_block(self->ep, 0, 0, self->m->nr_layers, NULL, self->cpus.cpus,
			       self->cpus.nr, &res, &err))
	TH_LOG("%s", coloc_err_str(&err));
	t0 = tu_now_ns();
	while (!(asleep = all_threads_in_futex(pid, &n)) && tu_now_ns() - t0 < 5000000000ull)
		usleep(200);
	EXPECT_TRUE(asleep) TH_LOG("some of the %d threads still run 5 s after the block", n);
	TH_LOG("all %d threads asleep in futex %.3f ms after the completion was seen", n,
	       (tu_now_ns() - t0) / 1e6);
}

/* Polls (never blocking) until execproc_poll returns something other than 0, or timeout_ms. */
static int poll_until(struct execproc *ep, struct execproc_result *res, int timeout_ms,
		      struct coloc_err *err)
{
	__u64 end = tu_now_ns() + (__u64)timeout_ms * 1000000ull;
	int ret;

	while (!(ret = execproc_poll(ep, res, err)) && tu_now_ns() < end) {
		struct pollfd p[2] = { { .fd = execproc_done_fd(ep), .events = POLLIN },
				       { .fd = execproc_pidfd(ep), .events = POLLIN } };

		poll(p, 2, 10);
	}
	return ret;
}

/*
 * stop_begin asks an idle executor to exit and returns without waiting
 * for it: the process is reaped later, by a poll after its pidfd says so.
 */
TEST_F(execproc, stop_begin__asks_to_exit_and_the_exit_is_reaped_later)
{
	pid_t pid = execproc_pid(self->ep);
	struct coloc_err err = { 0 };

	execproc_stop_begin(self->ep);
	EXPECT_FALSE(execproc_reaped(self->ep)); /* nothing waited for */
	EXPECT_EQ(1, poll_until(self->ep, NULL, DONE_MS, &err)); /* the exit acknowledged */
	EXPECT_EQ(-EPIPE, poll_until(self->ep, NULL, DONE_MS, &err));
	EXPECT_TRUE(execproc_reaped(self->ep));
	EXPECT_NE(NULL, strstr(err.msg, "exited with status 0")) TH_LOG("%s", err.msg);
	EXPECT_EQ(-1, kill(pid, 0));
}

TEST_F(execproc, stop__exits_cleanly_when_asked)
{
	pid_t pid = execproc_pid(self->ep);
	struct coloc_err err = { 0 };

	ASSERT_EQ(0, execproc_stop(self->ep, DONE_MS, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* reaped through the pidfd: nothing left for waitpid */
	EXPECT_EQ(-1, waitpid(pid, NULL, WNOHANG));
	EXPECT_EQ(ECHILD, errno);
	EXPECT_EQ(-EPIPE, execproc_submit_nop(self->ep, &err));
	EXPECT_NE(NULL, strstr(err.msg, "exited with status 0")) TH_LOG("%s", err.msg);
}

/* The pids in the NSpid line of /proc/PID/status, outermost first; how many. */
static int read_nspid(pid_t pid, long *ids, int max)
{
	char path[64], line[256];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strlen("NSpid:"), *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		while (n < max) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			ids[n++] = v;
			p = end;
		}
	}
	fclose(f);
	return n;
}

static pid_t status_ppid(pid_t pid)
{
	char path[64], line[256];
	pid_t ppid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "PPid:", 5))
			ppid = (pid_t)atoi(line + 5);
	fclose(f);
	return ppid;
}

static ino_t ns_ino(pid_t pid, const char *ns)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, ns);
	return stat(path, &st) ? 0 : st.st_ino;
}

static ino_t pidns_ino(pid_t pid)
{
	return ns_ino(pid, "pid");
}

/* The processes a /proc lists (its numeric entries); the first few names in first. */
static int proc_pids(const char *proc, char *first, size_t len)
{
	DIR *dir = opendir(proc);
	struct dirent *de;
	size_t used = 0;
	int n = 0;

	if (!dir)
		return -errno;
	first[0] = '\0';
	while ((de = readdir(dir))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (used + strlen(de->d_name) + 2 < len)
			used += (size_t)snprintf(first + used, len - used, "%s ", de->d_name);
		n++;
	}
	closedir(dir);
	return n;
}

/*
 * From inside `inside`'s pid namespace (a child of this test that joins
 * it through the pidfd), can `target` (a host pid) be named? Returns the
 * errno kill(target, 0) and sched_getaffinity(target) fail with, 0 if
 * either succeeds, or -1 if the probe could not run.
 */
static int probe_from_ns(int inside_pidfd, pid_t target, bool *sees_own_pid1)
{
	int pipefd[2], res[2] = { -1, -1 };
	int home = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	pid_t probe = -1;

	if (home < 0)
		return -1;
	if (pipe(pipefd)) {
		close(home);
		return -1;
	}
	/* for children only: this test itself stays where it is */
	if (!setns(inside_pidfd, CLONE_NEWPID))
		probe = fork();
	if (!probe) {
		cpu_set_t set;
		int r[2];

		/* root here: only naming can fail, not permission */
		r[0] = kill(target, 0) ? errno : 0;
		if (!r[0])
			r[0] = sched_getaffinity(target, sizeof(set), &set) ? errno : 0;
		r[1] = kill(1, 0) ? errno : 0;
		_exit(write(pipefd[1], r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	/* back: later children of this test start in its own namespace */
	if (setns(home, CLONE_NEWPID))
		probe = -1;
	close(home);
	close(pipefd[1]);
	if (probe > 0 && read(pipefd[0], res, sizeof(res)) != sizeof(res))
		res[0] = -1;
	close(pipefd[0]);
	if (probe > 0)
		waitpid(probe, NULL, 0);
	*sees_own_pid1 = res[1] == 0;
	return probe > 0 ? res[0] : -1;
}

/*
 * Each executor is pid 1 of a pid namespace of its own (NSpid: its host
 * pid, then 1), not this test's, not the other tenant's; and from inside
 * one, the other tenant's executor cannot be named at all.
 */
TEST_F(execproc, spawn__each_executor_in_its_own_pid_namespace)
{
	char path[512], bin[512];
	struct execproc_opts o = { .tenant = "other", .weights_fd = -1 };
	struct coloc_err err = { 0 };
	pid_t pid = execproc_pid(self->ep), other_pid;
	int self_ns_fd;
	struct execproc *other;
	bool sees_pid1 = false;
	struct stat st;
	long ids[4];

	if (!execproc_own_pidns(self->ep))
		SKIP(return, "executor runs in colocd's pid namespace: %s",
			   execproc_isolation(self->ep));
	TH_LOG("%s", execproc_isolation(self->ep));
	ASSERT_EQ(2, read_nspid(pid, ids, 4));
	EXPECT_EQ(pid, ids[0]);
	EXPECT_EQ(1, ids[1]);
	EXPECT_NE(0, pidns_ino(pid));
	EXPECT_NE(pidns_ino(getpid()), pidns_ino(pid));
	/* still colocd's child, seen under its host pid */
	EXPECT_EQ(getpid(), status_ppid(pid));
	/* its /proc, seen through its root: itself, as pid 1, and nothing else */
	if (strstr(execproc_isolation(self->ep), "with a /proc of its own")) {
		char proc[64], names[128];

		EXPECT_NE(ns_ino(getpid(), "mnt"), ns_ino(pid, "mnt"));
		snprintf(proc, sizeof(proc), "/proc/%d/root/proc", pid);
		EXPECT_EQ(1, proc_pids(proc, names, sizeof(names)))
		TH_LOG("%s lists %s", proc, names);
		EXPECT_STREQ("1 ", names);
		/* the control: this test's /proc lists more than one process */
		EXPECT_LT(1, proc_pids("/proc", names, sizeof(names)));
	}

	model_path(path, sizeof(path), "mobilenet_v2");
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	ASSERT_EQ(0, spawn_path(&o, path, &other, &err)) TH_LOG("%s", coloc_err_str(&err));
	ASSERT_EQ(0, execproc_wait_ready(other, READY_MS, &err)) TH_LOG("%s", coloc_err_str(&err));
	other_pid = execproc_pid(other);
	ASSERT_EQ(2, read_nspid(other_pid, ids, 4));
	EXPECT_EQ(other_pid, ids[0]);
	EXPECT_EQ(1, ids[1]);
	EXPECT_NE(pidns_ino(pid), pidns_ino(other_pid));
	EXPECT_NE(pidns_ino(getpid()), pidns_ino(other_pid));

	/* a probe in the first tenant's namespace: the other executor has no pid there */
	EXPECT_EQ(ESRCH, probe_from_ns(execproc_pidfd(self->ep), other_pid, &sees_pid1));
	EXPECT_TRUE(sees_pid1); /* its own executor, as pid 1 */
	/* the control: from this test's namespace the same probe names it */
	self_ns_fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(self_ns_fd, 0);
	EXPECT_EQ(0, probe_from_ns(self_ns_fd, other_pid, &sees_pid1));
	close(self_ns_fd);
	/* and this test's next children are in its own namespace again */
	ASSERT_EQ(0, stat("/proc/self/ns/pid_for_children", &st));
	EXPECT_EQ(pidns_ino(getpid()), st.st_ino);
	execproc_free(other);
}

/* The executor's parent (colocd) dies: the executor is killed with it (PR_SET_PDEATHSIG). */
TEST(execproc_spawn__executor_dies_with_its_driver)
{
	char bin[512], path[512];
	struct execproc_opts o = { .tenant = "orphan", .weights_fd = -1 };
	struct pollfd p = { .events = POLLIN };
	int pipefd[2], ret;
	pid_t driver, executor = 0;
	__u64 t0;

	model_path(path, sizeof(path), "mobilenet_v2");
	if (access(path, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", path);
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	ASSERT_EQ(0, pipe(pipefd));
	driver = fork();
	ASSERT_GE(driver, 0);
	if (!driver) {
		struct coloc_err err = { 0 };
		struct execproc *ep;
		pid_t pid = -1;

		if (!spawn_path(&o, path, &ep, &err) && !execproc_wait_ready(ep, READY_MS, &err))
			pid = execproc_pid(ep);
		if (write(pipefd[1], &pid, sizeof(pid)) != sizeof(pid))
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ((ssize_t)sizeof(executor), read(pipefd[0], &executor, sizeof(executor)));
	close(pipefd[0]);
	ASSERT_GT(executor, 0);
	p.fd = pidfd_open(executor, 0);
	ASSERT_GE(p.fd, 0);
	t0 = tu_now_ns();
	ASSERT_EQ(0, kill(driver, SIGKILL));
	ASSERT_EQ(driver, waitpid(driver, NULL, 0));
	ret = poll(&p, 1, 10000);
	EXPECT_EQ(1, ret) TH_LOG("the executor outlived its driver by 10 s");
	TH_LOG("executor gone %.3f ms after its driver was killed", (tu_now_ns() - t0) / 1e6);
	close(p.fd);
	if (ret != 1)
		kill(executor, SIGKILL);
}

/* What a driver without CAP_SYS_ADMIN saw of its executor. */
struct fallback_seen {
	int spawn, ready, stop; /* the calls' returns */
	bool own_pidns;
	pid_t pid;
	int nspid; /* entries in its NSpid line */
	ino_t ns; /* its pid namespace */
	char isolation[COLOC_ERR_MSG_MAX];
};

/*
 * Where the kernel refuses the namespaces (here: a driver that dropped
 * CAP_SYS_ADMIN from its effective set, as in a nested container) and weak
 * isolation is accepted, the executor still starts, in the driver's pid
 * namespace, serves, stops, and execproc_isolation() says why.
 */
TEST(execproc_spawn__refused_namespace_falls_back_when_weak_allowed)
{
	char bin[512], path[512];
	struct execproc_opts o = { .tenant = "fallback",
				   .weights_fd = -1,
				   .allow_weak_isolation = true };
	struct fallback_seen *seen;
	int status;
	pid_t driver;

	model_path(path, sizeof(path), "mobilenet_v2");
	if (access(path, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", path);
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	seen = mmap(NULL, sizeof(*seen), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, seen);
	driver = fork();
	ASSERT_GE(driver, 0);
	if (!driver) {
		struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct d[2];
		struct coloc_err err = { 0 };
		struct execproc *ep = NULL;
		long ids[4];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (syscall(SYS_capget, &h, d))
			_exit(2);
		d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
		if (syscall(SYS_capset, &h, d))
			_exit(3);
		seen->spawn = spawn_path(&o, path, &ep, &err);
		if (seen->spawn)
			_exit(4);
		seen->own_pidns = execproc_own_pidns(ep);
		snprintf(seen->isolation, sizeof(seen->isolation), "%s", execproc_isolation(ep));
		seen->ready = execproc_wait_ready(ep, READY_MS, &err);
		seen->pid = execproc_pid(ep);
		seen->nspid = read_nspid(seen->pid, ids, 4);
		seen->ns = pidns_ino(seen->pid);
		seen->stop = execproc_stop(ep, DONE_MS, &err);
		execproc_free(ep);
		_exit(0);
	}
	ASSERT_EQ(driver, waitpid(driver, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	TH_LOG("%s", seen->isolation);
	EXPECT_EQ(0, seen->spawn);
	EXPECT_FALSE(seen->own_pidns);
	EXPECT_NE(NULL,
		  strstr(seen->isolation, "the kernel refused them: Operation not permitted"));
	EXPECT_EQ(0, seen->ready);
	EXPECT_GT(seen->pid, 1);
	EXPECT_EQ(1, seen->nspid); /* one level: the driver's (and this test's) namespace */
	EXPECT_EQ(pidns_ino(getpid()), seen->ns);
	EXPECT_EQ(0, seen->stop);
	munmap(seen, sizeof(*seen));
}

/*
 * Without weak isolation accepted, the same refusal is an error that names
 * the missing layer and the flag, and no executor is left behind; so is
 * turning the namespaces off (colocd --no-namespaces).
 */
struct refusal_seen {
	int spawn;
	bool got_handle, no_child;
	char msg[COLOC_ERR_MSG_MAX];
};

TEST(execproc_spawn__refused_namespace_is_an_error_unless_weak_allowed)
{
	char bin[512], path[512];
	struct execproc_opts o = { .tenant = "strict", .weights_fd = -1 };
	struct refusal_seen *seen;
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;
	int status;
	pid_t driver;

	model_path(path, sizeof(path), "mobilenet_v2");
	if (access(path, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", path);
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	seen = mmap(NULL, sizeof(*seen), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, seen);
	driver = fork();
	ASSERT_GE(driver, 0);
	if (!driver) {
		struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct d[2];
		struct coloc_err cerr = { 0 };
		struct execproc *cep = NULL;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (syscall(SYS_capget, &h, d))
			_exit(2);
		d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
		if (syscall(SYS_capset, &h, d))
			_exit(3);
		seen->spawn = spawn_path(&o, path, &cep, &cerr);
		snprintf(seen->msg, sizeof(seen->msg), "%s", coloc_err_str(&cerr));
		seen->got_handle = cep != NULL;
		/* no child of its own left: the refused spawn started none */
		seen->no_child = waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD;
		execproc_free(cep);
		_exit(0);
	}
	ASSERT_EQ(driver, waitpid(driver, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	TH_LOG("%s", seen->msg);
	EXPECT_EQ(-EPERM, seen->spawn);
	EXPECT_NE(NULL, strstr(seen->msg, "Operation not permitted"));
	EXPECT_NE(NULL, strstr(seen->msg, "--allow-weak-isolation"));
	EXPECT_FALSE(seen->got_handle);
	EXPECT_TRUE(seen->no_child);
	munmap(seen, sizeof(*seen));

	/* turned off on purpose: refused the same way, in this process */
	o.no_namespaces = true;
	EXPECT_EQ(-EPERM, spawn_path(&o, path, &ep, &err));
	EXPECT_EQ(NULL, ep);
	EXPECT_NE(NULL, strstr(coloc_err_str(&err), "turned off"))
	TH_LOG("%s", coloc_err_str(&err));
}

/*
 * An executor that lies about its model (a shell script writing the header
 * the way a compromised executor could: its pid, an input size past the
 * capacity, READY) is refused and killed; colocd never uses the size.
 */
TEST(execproc_spawn__lying_executor_is_killed)
{
	char script[] = "/tmp/coloc-execproc-liar-XXXXXX";
	struct execproc_opts o = { .tenant = "liar",
				   .weights_fd = -1,
				   .executor = script };
	struct coloc_err err = { 0 };
	struct execproc *ep;
	char text[1024];
	pid_t pid;
	int fd;

	snprintf(text, sizeof(text),
		 "#!/bin/sh\n"
		 "put() { printf \"$2\" | /bin/dd of=/proc/self/fd/3 bs=1 seek=$1 conv=notrunc "
		 "status=none; }\n"
		 "p=$$\n"
		 "put %zu \"$(printf '\\\\%%03o\\\\%%03o\\\\%%03o\\\\%%03o' $((p & 255)) "
		 "$((p >> 8 & 255)) $((p >> 16 & 255)) $((p >> 24 & 255)))\"\n"
		 "put %zu '\\377\\377\\377\\377\\377\\377\\377\\177'\n"
		 "put %zu '\\001'\n"
		 "printf '\\001\\0\\0\\0\\0\\0\\0\\0' >&4\n"
		 "exec /bin/sleep 60\n",
		 offsetof(struct coloc_shm, hdr.executor_pid),
		 offsetof(struct coloc_shm, hdr.in_bytes), offsetof(struct coloc_shm, hdr.state));
	fd = mkstemp(script);
	ASSERT_GE(fd, 0);
	ASSERT_EQ((ssize_t)strlen(text), write(fd, text, strlen(text)));
	ASSERT_EQ(0, fchmod(fd, 0755));
	close(fd);
	ASSERT_EQ(0, spawn_path(&o, "/dev/null", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	pid = execproc_pid(ep);
	EXPECT_EQ(-EPROTO, execproc_wait_ready(ep, READY_MS, &err));
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(err.msg, "described its model wrongly"));
	EXPECT_NE(NULL, strstr(err.msg, "(pid ")) TH_LOG("%s", err.msg);
	EXPECT_FALSE(execproc_ready(ep));
	EXPECT_EQ(0, execproc_header(ep)->in_bytes);
	EXPECT_EQ(-1, kill(pid, 0)); /* killed and reaped */
	execproc_free(ep);
	unlink(script);
}

/* tests/hostile_executor.c, built beside this test. */
static const char *hostile_bin(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n < 0)
		return NULL;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	snprintf(slash + 1, len - (size_t)(slash + 1 - buf), "hostile_executor");
	return buf;
}

/* A hostile executor (tenant hostile-MODE) on mobilenet_v2, waited for until ready. */
static int spawn_hostile(const char *mode, struct execproc **ep, struct coloc_err *err)
{
	char bin[512], path[512], tenant[64];
	struct execproc_opts o = { .tenant = tenant, .weights_fd = -1 };
	int ret;

	model_path(path, sizeof(path), "mobilenet_v2");
	snprintf(tenant, sizeof(tenant), "hostile-%s", mode);
	o.executor = hostile_bin(bin, sizeof(bin));
	ret = spawn_path(&o, path, ep, err);
	return ret ? ret : execproc_wait_ready(*ep, READY_MS, err);
}

/* The flags of fd in process pid (fdinfo), or -1. */
static long fd_flags(pid_t pid, int fd)
{
	char path[64], line[128];
	long flags = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags:", 6))
			flags = strtol(line + 6, NULL, 8);
	fclose(f);
	return flags;
}

static const int one_cpu[] = { 0 };

/*
 * An executor that makes its doorbell descriptor blocking (F_SETFL 0)
 * changes its own open file only: colocd's end keeps O_NONBLOCK, and a poll
 * with nothing to read returns at once (with a shared eventfd it blocked).
 */
TEST(execproc_doorbell__executor_cannot_make_colocds_end_blocking)
{
	struct execproc_result res;
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;
	struct execproc_block b = { .last = 1, .cpus = one_cpu, .nr_cpus = 1 };
	pid_t pid;

	ASSERT_EQ(0, spawn_hostile("flags", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	pid = execproc_pid(ep);
	ASSERT_EQ(0, execproc_submit_block(ep, &b, &err)) TH_LOG("%s", coloc_err_str(&err));
	/* it flips the flags before it takes a command: done by the time it refuses this one */
	ASSERT_EQ(1, execproc_wait_done(ep, &res, DONE_MS, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(COLOC_SHM_DONE_REFUSED, res.status);
	/* the attack happened: its own end is blocking (and write-only) */
	EXPECT_EQ(O_WRONLY, fd_flags(pid, 4) & (O_NONBLOCK | O_ACCMODE));
	EXPECT_EQ(O_NONBLOCK, fcntl(execproc_done_fd(ep), F_GETFL) & O_NONBLOCK);
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(0, execproc_poll(ep, NULL, &err)) TH_LOG("%s", coloc_err_str(&err));
	execproc_free(ep);
}

/*
 * Times out of bounds (~2^64, 0, 2^63 in turn) are clamped to colocd's own
 * round trip of the command and said so; the switch time to the block's.
 */
TEST(execproc_poll__reported_times_clamped_to_the_round_trip)
{
	struct execproc_result res;
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;
	struct execproc_block b = { .last = 1, .cpus = one_cpu, .nr_cpus = 1 };

	ASSERT_EQ(0, spawn_hostile("times", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, execproc_submit_block(ep, &b, &err)) TH_LOG("%s", coloc_err_str(&err));
		ASSERT_EQ(1, execproc_wait_done(ep, &res, DONE_MS, &err))
		TH_LOG("%s", coloc_err_str(&err));
		EXPECT_EQ(COLOC_SHM_DONE_OK, res.status);
		EXPECT_TRUE(res.clamped);
		EXPECT_GT(res.block_ns, 0);
		EXPECT_LE(res.block_ns, res.round_trip_ns);
		EXPECT_LE(res.switch_ns, res.block_ns);
		TH_LOG("block %d: reported times clamped to %llu ns (round trip %llu ns)", i,
		       res.block_ns, res.round_trip_ns);
	}
	execproc_free(ep);
}

/*
 * Each breach of the completion protocol gives the executor up: -EPROTO
 * with what it did, the process killed and reaped, and nothing of the
 * completion delivered.
 */
TEST(execproc_poll__malformed_completions_give_the_executor_up)
{
	static const struct {
		const char *mode, *says;
	} cases[] = {
		{ "status", "with status 77, which is none" },
		{ "reason", "without its end" },
		{ "echo", "the command was slot 2" },
		{ "unsent", "never sent" },
		{ "header", "rewrote the shared memory's header" },
		{ "twice", "rewrote its completion of command 1" },
	};
	struct execproc_block b = {
		.slot = 2, .first = 0, .last = 1, .query_id = 7, .cpus = one_cpu, .nr_cpus = 1
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct execproc_result res = { 0 };
		struct coloc_err err = { 0 };
		struct execproc *ep = NULL;
		pid_t pid;
		int ret;

		ASSERT_EQ(0, spawn_hostile(cases[i].mode, &ep, &err))
		TH_LOG("%s: %s", cases[i].mode, coloc_err_str(&err));
		pid = execproc_pid(ep);
		ASSERT_EQ(0, execproc_submit_block(ep, &b, &err)) TH_LOG("%s", coloc_err_str(&err));
		ret = execproc_wait_done(ep, &res, DONE_MS, &err);
		/* a completion rewritten after it was taken: the first one was fine */
		if (!strcmp(cases[i].mode, "twice")) {
			EXPECT_EQ(1, ret) TH_LOG("%s", coloc_err_str(&err));
			EXPECT_EQ(COLOC_SHM_DONE_REFUSED, res.status);
			ret = poll_until(ep, NULL, DONE_MS, &err);
		}
		EXPECT_EQ(-EPROTO, ret) TH_LOG("%s: %d %s", cases[i].mode, ret, err.msg);
		EXPECT_NE(NULL, strstr(err.msg, cases[i].says))
		TH_LOG("%s: %s", cases[i].mode, err.msg);
		TH_LOG("%s: %s", cases[i].mode, err.msg);
		/* given up for good, and gone */
		EXPECT_EQ(-EPROTO, execproc_submit_nop(ep, &err));
		EXPECT_EQ(0, execproc_kill(ep));
		EXPECT_TRUE(execproc_reaped(ep));
		EXPECT_EQ(-1, kill(pid, 0));
		execproc_free(ep);
	}
}

/* A doorbell rung without end, with nothing to report, gives the executor up. */
TEST(execproc_poll__doorbell_flood_gives_the_executor_up)
{
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;

	ASSERT_EQ(0, spawn_hostile("flood", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EPROTO, poll_until(ep, NULL, DONE_MS, &err));
	EXPECT_NE(NULL, strstr(err.msg, "rang its doorbell")) TH_LOG("%s", err.msg);
	execproc_free(ep);
}

/* An executor that closes its end of the doorbell and keeps running is killed. */
TEST(execproc_poll__closed_doorbell_kills_the_executor)
{
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;

	ASSERT_EQ(0, spawn_hostile("hangup", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EPIPE, poll_until(ep, NULL, DONE_MS, &err));
	EXPECT_NE(NULL, strstr(err.msg, "closed its end of the doorbell")) TH_LOG("%s", err.msg);
	EXPECT_TRUE(execproc_reaped(ep));
	execproc_free(ep);
}

/*
 * stop_begin never waits: an executor that ignores the exit command is
 * still running when it returns; SIGKILL (the caller's deadline) ends it,
 * and a poll reaps it.
 */
TEST(execproc_stop_begin__returns_at_once_and_the_kill_is_reaped_by_poll)
{
	struct coloc_err err = { 0 };
	struct execproc *ep = NULL;
	pid_t pid;

	ASSERT_EQ(0, spawn_hostile("silent", &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	pid = execproc_pid(ep);
	execproc_stop_begin(ep);
	EXPECT_EQ(0, kill(pid, 0)); /* not waited for, not killed */
	EXPECT_EQ(0, execproc_poll(ep, NULL, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(0, execproc_signal_kill(ep));
	EXPECT_FALSE(execproc_reaped(ep));
	EXPECT_EQ(-EPIPE, poll_until(ep, NULL, DONE_MS, &err));
	EXPECT_NE(NULL, strstr(err.msg, "killed by signal 9")) TH_LOG("%s", err.msg);
	EXPECT_TRUE(execproc_reaped(ep));
	EXPECT_EQ(-1, kill(pid, 0));
	execproc_free(ep);
}

TEST(execproc_spawn__bad_model_fails_with_the_parser_message)
{
	char bin[512], path[] = "/tmp/coloc-execproc-bad-XXXXXX";
	const char text[] = "model bad\nseed 1\nmacs 1\nparams 1\ninput x shape=1x4\nfrob y\n";
	struct execproc_opts o = { .tenant = "bad", .weights_fd = -1 };
	struct coloc_err err = { 0 };
	struct execproc *ep;
	int fd = mkstemp(path);

	ASSERT_GE(fd, 0);
	ASSERT_EQ((ssize_t)strlen(text), write(fd, text, strlen(text)));
	close(fd);
	o.executor = tu_bin("coloc-executor", bin, sizeof(bin));
	ASSERT_EQ(0, spawn_path(&o, path, &ep, &err)) TH_LOG("%s", coloc_err_str(&err));
	EXPECT_EQ(-EPIPE, execproc_wait_ready(ep, READY_MS, &err));
	TH_LOG("%s", coloc_err_str(&err));
	EXPECT_NE(NULL, strstr(err.msg, "exited with status 1 while loading its model"));
	EXPECT_NE(NULL, strstr(err.msg, ":6:")) TH_LOG("no FILE:LINE in '%s'", err.msg);
	EXPECT_EQ(COLOC_SHM_FAILED, execproc_header(ep)->state);
	execproc_free(ep);
	unlink(path);
}

TEST(execproc_spawn__missing_executor_is_an_error_at_once)
{
	struct execproc_opts o = { .tenant = "t",
				   .weights_fd = -1,
				   .executor = "/nonexistent/coloc-executor" };
	struct coloc_err err = { 0 };
	struct execproc *ep;

	EXPECT_EQ(-ENOENT, spawn_path(&o, "/dev/null", &ep, &err));
	EXPECT_EQ(NULL, ep);
	EXPECT_NE(NULL, strstr(err.msg, "/nonexistent/coloc-executor"));
}

TEST_HARNESS_MAIN
