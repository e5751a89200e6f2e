// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * bin/coloc-profile end to end: a run on a tiny model (written here in the
 * models/README.md format) yields a complete profile and reuses its cache,
 * measures in the executor's OpenMP environment, resumes where SIGINT
 * stopped it, and exits with a message on bad input. The profile library
 * itself: profile_test.c.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "binpath.h"
#include "coloc/shm.h"
#include "profile_fixture.h"
#include "testutil.h"
#include "model_open.h"
#include "profile_host.h"
#include "profile_tool.h"

static int tool_run(const char *bin, const char *const *args, struct tu_child *run)
{
	int ret = tu_child_start(bin, args, run);

	return ret ? ret : tu_child_finish(run);
}

/* profile_tool.h's tiny model behind a comment line (one test drops it) */
static const char tiny_model[] = "# four layers: two convolutions and a residual add\n"
	PROFILE_TINY_MODEL_TEXT;

static int nr_allowed_cpus(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) ? -1 : CPU_COUNT(&set);
}

static size_t nr_cells(const struct profile *p)
{
	size_t n = 0;

	for (int l = 0; l < p->nr_layers; l++)
		n += (size_t)p->layers[l].nr_versions * (size_t)p->nr_cores * (size_t)p->nr_levels;
	return n;
}

static bool same_bytes(const char *a, const char *b)
{
	size_t la, lb;
	char *x = tu_read_file(a, &la), *y = tu_read_file(b, &lb);
	bool same = x && y && la == lb && !memcmp(x, y, la);

	free(x);
	free(y);
	return same;
}

TEST_F_TIMEOUT(profile, coloc_profile__measures_every_cell_and_reuses_the_cache, 120)
{
	static const char *const names[] = { "data", "c1", "c2", "a" };
	char bin[PATH_MAX], model[160], out[160], cache[160], cached[PATH_MAX];
	/* --force: this test is about the cells and the cache, not about a quiet machine */
	const char *args[] = { model,	 "-o",		out,   "--iters", "1", "--levels",
			       "50,100", "--cache-dir", cache, "--force", NULL };
	struct profile_machine machine;
	struct tu_child run;
	struct profile *p;
	struct profile_key key;
	struct stat st;

	if (binpath_find("coloc-profile", bin, sizeof(bin)))
		SKIP(return, "bin/coloc-profile is not built (run make, or set COLOC_BIN)");
	snprintf(model, sizeof(model), "%s/tiny.model", self->dir);
	snprintf(out, sizeof(out), "%s/tiny.profile", self->dir);
	snprintf(cache, sizeof(cache), "%s/cache", self->dir);
	ASSERT_EQ(0, tu_write_file(model, tiny_model, strlen(tiny_model)));

	ASSERT_EQ(0, tool_run(bin, args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	p = profile_load(out, &self->err);
	ASSERT_NE(NULL, p) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, profile_nr_missing(p));
	ASSERT_STREQ("tiny", p->model_name);
	ASSERT_EQ(0, model_open_key(model, NULL, NULL, &key, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_TRUE(profile_key_equal(&key, &p->model_key));
	ASSERT_EQ(0, profile_machine_detect(&machine));
	ASSERT_TRUE(profile_machine_equal(&machine, &p->machine));
	ASSERT_EQ(nr_allowed_cpus(), p->nr_cores);
	ASSERT_EQ(3, p->nr_levels);
	ASSERT_EQ(0, p->levels[0]);
	ASSERT_EQ(50, p->levels[1]);
	ASSERT_EQ(100, p->levels[2]);
	ASSERT_EQ(1, p->iters);
	ASSERT_EQ(PROFILE_STRESS_LLC, p->stress_kind);
	ASSERT_EQ(4, p->nr_layers);
	for (int l = 0; l < 4; l++) {
		ASSERT_STREQ(names[l], p->layers[l].name);
		ASSERT_GE(p->layers[l].nr_versions, 1);
	}
	/* It prints the checks over every off-core row: versions x (cores - 1), or x 1 on one core. */
	{
		int rows = 0, printed_pass = -1, printed_rows = -1;
		struct profile_check ck;
		const char *line = strstr(run.output, "check tiny llc: ");

		for (int l = 0; l < 4; l++)
			rows += p->layers[l].nr_versions * (p->nr_cores > 1 ? p->nr_cores - 1 : 1);
		ASSERT_NE(NULL, line) TH_LOG("%s", run.output);
		ASSERT_EQ(2, sscanf(line, "check tiny llc: %d of %d rows pass", &printed_pass,
				    &printed_rows));
		profile_check(p, &ck);
		ASSERT_EQ(rows, printed_rows);
		ASSERT_EQ(ck.nr_pass, printed_pass);
		ASSERT_NE(NULL, strstr(run.output, "level  50: mean slowdown "));
		ASSERT_NE(NULL, strstr(run.output, "level 100: mean slowdown "));
	}
	/* The stressor ran at every level for every core count and reported its rate. */
	for (int c = 1; c <= p->nr_cores; c++)
		for (int k = 1; k < 3; k++)
			ASSERT_GE(p->stress_gbps[(c - 1) * 3 + k], 0);

	/* Stored in the cache under the model's hash and this machine, then reused from there. */
	ASSERT_EQ(0, profile_cache_path(cache, "tiny", &key, &machine, cached, sizeof(cached)));
	/* a folder only its user enters: a profile names a model's layers and confirms its bytes */
	ASSERT_EQ(0, stat(cache, &st));
	ASSERT_EQ(0700, st.st_mode & 07777);
	ASSERT_EQ(0, stat(cached, &st));
	ASSERT_EQ(0600, st.st_mode & 07777);
	ASSERT_TRUE(same_bytes(out, cached));
	ASSERT_EQ(0, unlink(out));
	ASSERT_EQ(0, tool_run(bin, args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "reused the cached profile")) TH_LOG("%s", run.output);
	ASSERT_TRUE(same_bytes(out, cached));

	/* A changed model file is a different key: measured again, not reused; an open cache said. */
	ASSERT_EQ(0, tu_write_file(model, strchr(tiny_model, '\n') + 1,
				strlen(strchr(tiny_model, '\n') + 1)));
	ASSERT_EQ(0, chmod(cache, 0755));
	ASSERT_EQ(0, tool_run(bin, args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_EQ(NULL, strstr(run.output, "reused")) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "is open to other users: chmod 700 it")) TH_LOG("%s", run.output);
	ASSERT_EQ(0, stat(cache, &st));
	ASSERT_EQ(0755, st.st_mode & 07777) TH_LOG("a folder that is there is left as it is");
	profile_free(p);
}

/* Whatever OpenMP environment it is started in, it measures in the executors' (shm.h). */
TEST_F_TIMEOUT(profile, coloc_profile__measures_in_the_executors_openmp_environment, 120)
{
	char bin[PATH_MAX], model[160], out[160], want[160];
	const char *args[] = { model, "-o",	    out,	 "--iters", "1", "--levels",
			       "50",  "--no-cache", "--verbose", "--force", NULL };
	struct tu_child run;

	if (binpath_find("coloc-profile", bin, sizeof(bin)))
		SKIP(return, "bin/coloc-profile is not built (run make, or set COLOC_BIN)");
	snprintf(model, sizeof(model), "%s/tiny.model", self->dir);
	snprintf(out, sizeof(out), "%s/tiny.profile", self->dir);
	ASSERT_EQ(0, tu_write_file(model, tiny_model, strlen(tiny_model)));
	/* the harness forks each test: the environment is this test's own */
	ASSERT_EQ(0, setenv("GOMP_SPINCOUNT", "7", 1));
	ASSERT_EQ(0, setenv("OMP_WAIT_POLICY", "passive", 1));

	ASSERT_EQ(0, tool_run(bin, args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	snprintf(want, sizeof(want),
		 "OpenMP as in colocd's executors: GOMP_SPINCOUNT=%s, OMP_WAIT_POLICY unset",
		 COLOC_EXECUTOR_GOMP_SPINCOUNT);
	ASSERT_NE(NULL, strstr(run.output, want)) TH_LOG("%s", run.output);
	ASSERT_EQ(0, access(out, R_OK));
}

TEST_F_TIMEOUT(profile, coloc_profile__resumes_where_sigint_stopped_it, 120)
{
	static const char small_model[] = "model small\n"
					  "seed 3\n"
					  "macs 15204352\n"
					  "params 14848\n"
					  "input data shape=1x16x32x32\n"
					  "conv c1 out=32 k=3 pad=1 act=relu\n"
					  "conv c2 out=32 k=3 pad=1 act=relu\n"
					  "conv c3 out=32 k=1\n"
					  "add a in=c3,c2\n"
					  "end\n";
	char bin[PATH_MAX], model[160], out[160], partial[176];
	const char *args[] = { model, "-o", out, "--iters", "20", "--no-cache", "--force", NULL };
	const char *again[] = { model,	      "-o",	 out,	     "--iters", "20",
				"--no-cache", "--force", "--resume", NULL };
	const char *other[] = { model,	      "-o",	  out,	      "--iters", "20",
				"--no-cache", "--resume", "--levels", "40",	 NULL };
	struct profile *half, *full;
	struct tu_child run;
	size_t measured;

	if (binpath_find("coloc-profile", bin, sizeof(bin)))
		SKIP(return, "bin/coloc-profile is not built (run make, or set COLOC_BIN)");
	snprintf(model, sizeof(model), "%s/small.model", self->dir);
	snprintf(out, sizeof(out), "%s/small.profile", self->dir);
	snprintf(partial, sizeof(partial), "%s.partial", out);
	ASSERT_EQ(0, tu_write_file(model, small_model, strlen(small_model)));

	/* Interrupt as soon as the first group is saved; seven stressed groups remain. */
	ASSERT_EQ(0, tu_child_start(bin, args, &run));
	for (int i = 0; i < 6000 && access(partial, F_OK); i++)
		usleep(10000);
	ASSERT_EQ(0, access(partial, F_OK));
	ASSERT_EQ(0, kill(run.pid, SIGINT));
	ASSERT_EQ(0, tu_child_finish(&run));
	ASSERT_TRUE(tu_child_exited_with(&run, 1)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "interrupted")) TH_LOG("%s", run.output);
	ASSERT_NE(0, access(out, F_OK));
	half = profile_load(partial, &self->err);
	ASSERT_NE(NULL, half) TH_LOG("%s", self->err.msg);
	measured = nr_cells(half) - profile_nr_missing(half);
	TH_LOG("interrupted with %zu of %zu cells measured", measured, nr_cells(half));
	ASSERT_GT(measured, 0);
	ASSERT_GT(profile_nr_missing(half), 0);

	/* --resume with other options refuses the partial and leaves it alone. */
	ASSERT_EQ(0, tool_run(bin, other, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 1)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "different")) TH_LOG("%s", run.output);
	ASSERT_EQ(0, access(partial, F_OK));

	/* The same command again with --resume continues and keeps every cell measured before. */
	ASSERT_EQ(0, tool_run(bin, again, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_NE(NULL, strstr(run.output, "resuming from")) TH_LOG("%s", run.output);
	ASSERT_NE(0, access(partial, F_OK));
	full = profile_load(out, &self->err);
	ASSERT_NE(NULL, full) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(0, profile_nr_missing(full));
	ASSERT_TRUE(profile_same_setup(half, full));
	ASSERT_STREQ(half->date, full->date);
	for (int l = 0; l < half->nr_layers; l++)
		for (int v = 0; v < half->layers[l].nr_versions; v++)
			for (int c = 1; c <= half->nr_cores; c++)
				for (int k = 0; k < half->nr_levels; k++) {
					uint64_t before = *profile_latency_cell(half, l, v, c, k);

					if (before)
						ASSERT_EQ(before,
							  *profile_latency_cell(full, l, v, c, k));
				}
	profile_free(half);
	profile_free(full);
}

TEST_F(profile, coloc_profile__bad_input_exits_with_a_message)
{
	static const char *const bad_args[][8] = {
		{ "m", "-o", "x", "--iters", "0", NULL },
		{ "m", "-o", "x", "--iters", "3x", NULL },
		{ "m", "-o", "x", "--levels", "60,30", NULL },
		{ "m", "-o", "x", "--levels", "0,50", NULL },
		{ "m", "-o", "x", "--levels", "50,", NULL },
		{ "m", "-o", "x", "--kind", "l2", NULL },
		{ "m", NULL },
		{ "m", "n", "-o", "x", NULL },
	};
	static const char bad_model[] = "model broken\nseed 1\nmacs 1\nparams 1\n"
					"input data shape=1x3x8x8\nfrobnicate f1 out=3\nend\n";
	char bin[PATH_MAX], model[160], out[160];
	const char *args[] = { model, "-o", out, NULL };
	struct tu_child run;

	if (binpath_find("coloc-profile", bin, sizeof(bin)))
		SKIP(return, "bin/coloc-profile is not built (run make, or set COLOC_BIN)");
	for (size_t i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++) {
		ASSERT_EQ(0, tool_run(bin, bad_args[i], &run));
		ASSERT_TRUE(tu_child_exited_with(&run, 2)) TH_LOG("case %zu: %s", i, run.output);
		ASSERT_NE(NULL, strstr(run.output, "coloc-profile: ")) TH_LOG("case %zu", i);
	}
	snprintf(model, sizeof(model), "%s/broken.model", self->dir);
	snprintf(out, sizeof(out), "%s/broken.profile", self->dir);
	ASSERT_EQ(0, tu_write_file(model, bad_model, strlen(bad_model)));
	ASSERT_EQ(0, tool_run(bin, args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 1)) TH_LOG("%s", run.output);
	/* The parser's FILE:LINE message, naming the unknown operation's line. */
	ASSERT_NE(NULL, strstr(run.output, "broken.model:6:")) TH_LOG("%s", run.output);
	ASSERT_NE(0, access(out, F_OK));
}

TEST_HARNESS_MAIN
