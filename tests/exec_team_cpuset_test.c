// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The executor's team in a cpuset that follows its blocks' cores, as
 * colocd keeps a tenant's cgroup (daemon/cgroup.h, written before each
 * block): after 1-core blocks on either core, a 2-core block's team
 * thread i may run on the block's core i and nowhere else. A child joins
 * a real tenant cgroup made with colocd's code and runs MobileNet-V2 with
 * the executor library, block after block, the cpuset written before
 * each as colocd does; the masks are read inside the team. Needs root and
 * a cpuset controller; skips otherwise.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "cgroup.h"
#include "cgroup_parents.h"
#include "cgroup_leaf.h"
#include "executor.h"
#include "model.h"

/*
 * colocd's walk over the two cores: every order of 1-core blocks between
 * 2-core ones, core 1 then core 0 among them (where main's executor left
 * the second thread on core 0).
 */
static const char *const walk[] = { "0-1", "1", "0",   "0-1", "0", "0-1", "1", "0-1",
				    "0",   "1", "0-1", "1",   "1", "0",	  "0", "0-1" };
#define WALK_LEN (int)(sizeof(walk) / sizeof(walk[0]))

/* What the child saw after block i: each team thread's mask (bit c: cpu c). */
struct walk_seen {
	int failed_at; /* -1, or the step whose block or cpuset write failed */
	unsigned long long mask[WALK_LEN][2];
};

static int cpus_of(const char *list, struct exec_cpuset *set)
{
	struct coloc_err err = { 0 };

	return exec_cpuset_parse(list, set, &err);
}

/* Joins tenant t as an executor does: v1 its hierarchies, v2 its leaf l only. */
static int join(const struct cgroup_root *r, const struct cgroup_tenant *t,
		const struct cgroup_leaf *l)
{
	if (r->mode == CGROUP_V1) {
		for (int i = 0; i < t->nr; i++)
			if (write(t->procs_fd[i], "0", 1) != 1)
				return -1;
		return 0;
	}
	return write(l->procs_fd, "0", 1) == 1 ? 0 : -1;
}

/* The child: blocks of the walk, each after its cpuset write; exits 0, or 2 before any block. */
static void run_walk(const char *model_path, struct cgroup_tenant *t, int out_fd)
{
	struct exec_options opts = { 0 };
	struct coloc_err err = { 0 };
	struct walk_seen seen = { .failed_at = -1 };
	struct model *m = model_load(model_path, &err);
	struct exec_model *em =
		m && !cpus_of("0-1", &opts.cpus) ? exec_model_load(m, &opts, &err) : NULL;
	struct exec_query *q = em ? exec_query_new(em) : NULL;

	if (!q) {
		fprintf(stderr, "cannot load %s: %s\n", model_path, coloc_err_str(&err));
		_exit(2);
	}
	for (int i = 0; i < WALK_LEN && seen.failed_at < 0; i++) {
		struct exec_cpuset set;

		if (cpus_of(walk[i], &set) || cgroup_tenant_set_cpus(t, walk[i], &err) < 0 ||
		    exec_run_block(em, q, 0, m->nr_layers, NULL, &set, NULL)) {
			seen.failed_at = i;
			break;
		}
		/* libgomp gives this region the block's pool threads, in the same order */
#pragma omp parallel num_threads(set.nr)
		{
			cpu_set_t mask;
			unsigned long long bits = 0;

			if (!sched_getaffinity(0, sizeof(mask), &mask))
				for (int c = 0; c < 64 && c < CPU_SETSIZE; c++)
					if (CPU_ISSET(c, &mask))
						bits |= 1ull << c;
			if (omp_get_thread_num() < 2)
				seen.mask[i][omp_get_thread_num()] = bits;
		}
	}
	_exit(write(out_fd, &seen, sizeof(seen)) == (ssize_t)sizeof(seen) ? 0 : 3);
}

TEST(exec_team__threads_keep_their_cores_as_the_cpuset_follows_the_blocks)
{
	const char *root = getenv("COLOC_ROOT");
	struct cgroup_leaf leaf;
	struct coloc_err err = { 0 };
	struct walk_seen seen;
	struct cgroup_root r;
	struct cgroup_tenant t;
	char base[64], model_path[512], bases[CGROUP_MAX_HIER + 1][PATH_MAX];
	int fds[2], status, nr_bases;
	pid_t pid;

	snprintf(model_path, sizeof(model_path), "%s/models/mobilenet_v2.model", root ? root : ".");
	if (access(model_path, R_OK))
		SKIP(return, "%s not found (set COLOC_ROOT to the repo root)", model_path);
	if (!exec_cpu_online(0) || !exec_cpu_online(1))
		SKIP(return, "needs CPUs 0 and 1 online");
	if (geteuid() != 0)
		SKIP(return, "needs root to make cgroups");
	snprintf(base, sizeof(base), "coloc-exec-team-test-%d", getpid());
	if (cgroup_root_open(&r, base, &err))
		SKIP(return, "no tenant cgroups here: %s", coloc_err_str(&err));
	cgroup_leaf_init(&leaf);
	ASSERT_EQ(0,
		  cgroup_tenant_create(&r, "walk", "0-1", &(struct cgroup_memory){ 0 }, &t, &err))
	TH_LOG("%s", coloc_err_str(&err));
	if (r.mode == CGROUP_V2) {
		ASSERT_EQ(0, cgroup_leaf_create(t.kill_dir, &leaf, &err))
		TH_LOG("%s", coloc_err_str(&err));
	}
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(fds[0]);
		if (join(&r, &t, &leaf))
			_exit(2);
		run_walk(model_path, &t, fds[1]);
	}
	close(fds[1]);
	memset(&seen, 0, sizeof(seen));
	seen.failed_at = -2;
	if (read(fds[0], &seen, sizeof(seen)) != (ssize_t)sizeof(seen))
		seen.failed_at = -2;
	close(fds[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	/* the child's leaf (v2), then the tenant and this test's folders */
	cgroup_leaf_remove(&leaf);
	cgroup_tenant_remove(&t);
	nr_bases = cgroup_root_parents(&r, bases);
	cgroup_root_close(&r);
	for (int i = 0; i < nr_bases; i++)
		rmdir(bases[i]);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
	TH_LOG("the child could not join the cgroup or load the model (status %#x)", status);
	ASSERT_EQ(-1, seen.failed_at) TH_LOG("step %d of the walk failed", seen.failed_at);
	for (int i = 0; i < WALK_LEN; i++) {
		struct exec_cpuset set;

		ASSERT_EQ(0, cpus_of(walk[i], &set));
		for (int k = 0; k < set.nr; k++) {
			EXPECT_EQ(1ull << set.cpus[k], seen.mask[i][k])
			TH_LOG("block %d on %s: team thread %d allowed on %#llx", i, walk[i], k,
			       seen.mask[i][k]);
		}
	}
}

TEST_HARNESS_MAIN
