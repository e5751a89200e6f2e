// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of bin/coloc-calibrate-level and of the stressor control it uses
 * (executor/stress_ctl.c): a real coloc-stress answers each level and
 * reports a rate for the levels it ran; the tool refuses bad usage with 2;
 * without a PMU it exits 1 saying so and writes no model; with one it
 * writes a model for this machine that the reader accepts (SKIPped without
 * a PMU: nothing can be counted here, and nothing is faked).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "testutil.h"
#include "level_model.h"
#include "pmu.h"
#include "profile_host.h"
#include "stress_ctl.h"

FIXTURE(calibrate)
{
	char dir[64];
	char bin[512];
	struct pmu_info pmu;
};

FIXTURE_SETUP(calibrate)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/calibrate-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_NE(NULL, tu_bin("coloc-calibrate-level", self->bin, sizeof(self->bin)));
	ASSERT_EQ(0, pmu_detect(&self->pmu));
}

FIXTURE_TEARDOWN(calibrate)
{
	tu_remove_tree(self->dir);
}

/* How many of the stressor's lines of each kind stress_ctl passed on. */
struct seen_lines {
	int banner, running, acks, rates_at_60;
};

static void seen_line(void *ctx, const char *line)
{
	struct seen_lines *seen = ctx;

	seen->banner += !strncmp(line, "coloc-stress: kind=membw level=0% ", 34);
	seen->running += !strncmp(line, "coloc-stress: running", 21);
	seen->acks += !strcmp(line, "level 60\n");
	seen->rates_at_60 += !strncmp(line, "level 60: ", 10);
}

TEST_F(calibrate, stress_ctl__levels_acknowledged_and_rates_reported)
{
	struct timespec run = { 0, 50000000 };
	struct coloc_err err = { 0 };
	struct seen_lines seen = { 0 };
	struct stress_ctl s;
	char stress[512];

	ASSERT_NE(NULL, tu_bin("coloc-stress", stress, sizeof(stress)));
	ASSERT_EQ(0, stress_ctl_start(&s, stress, "0", "membw", "sleep", seen_line, &seen, &err))
	TH_LOG("%s", err.msg);
	ASSERT_EQ(0, stress_ctl_set_level(&s, 60, &err)) TH_LOG("%s", err.msg);
	nanosleep(&run, NULL);
	ASSERT_EQ(-EINVAL, stress_ctl_set_level(&s, 101, &err));
	ASSERT_EQ(0, stress_ctl_stop(&s, &err)) TH_LOG("%s", err.msg);
	/* 60 % of 50 ms streaming through memory moves bytes; 37 never ran */
	ASSERT_GT(s.gbps[60], 0.0);
	ASSERT_LT(s.gbps[37], 0.0);
	/* its banner and its report reach on_line; the acknowledgement is stress_ctl's own */
	ASSERT_EQ(1, seen.banner);
	ASSERT_EQ(1, seen.running);
	ASSERT_EQ(0, seen.acks);
	ASSERT_EQ(1, seen.rates_at_60);
	ASSERT_EQ(-ECHILD, stress_ctl_stop(&s, &err));
	/* pinned elsewhere, as after an executor block: the stressor still gets its core */
	if (tu_nr_online_cpus() > 1) {
		char last[16];

		snprintf(last, sizeof(last), "%d", tu_nr_online_cpus() - 1);
		ASSERT_EQ(0, tu_pin_self(0));
		coloc_err_clear(&err);
		ASSERT_EQ(0, stress_ctl_start(&s, stress, last, "llc", "spin", NULL, NULL, &err))
		TH_LOG("%s", err.msg);
		ASSERT_EQ(0, stress_ctl_stop(&s, &err)) TH_LOG("%s", err.msg);
	}
	coloc_err_clear(&err);
	ASSERT_EQ(-EINVAL, stress_ctl_start(&s, stress, "3-1", "llc", "spin", NULL, NULL, &err));
	coloc_err_clear(&err);
	ASSERT_EQ(-ECHILD, stress_ctl_start(&s, "/nonexistent/coloc-stress", "0", "llc", "spin",
					    NULL, NULL, &err));
	ASSERT_NE(NULL, strstr(err.msg, "exited before its load began")) TH_LOG("%s", err.msg);
}

TEST_F(calibrate, cli__bad_usage_exits_2)
{
	char cmd[1024], out[4096];

	snprintf(cmd, sizeof(cmd), "%s", self->bin);
	ASSERT_EQ(2, tu_run(cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "want exactly one MODEL")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s --levels 50,20 x.model", self->bin);
	ASSERT_EQ(2, tu_run(cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "--levels: want up to 8 increasing")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "%s --help", self->bin);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "c0 + c1 * llc_miss_ratio")) TH_LOG("%s", out);
}

TEST_F(calibrate, no_pmu__exits_1_and_writes_no_model)
{
	char cmd[1024], out[4096];

	if (self->pmu.present)
		SKIP(return, "this machine has a PMU (%s): the no-PMU refusal does not run here",
			   self->pmu.table);
	snprintf(cmd, sizeof(cmd), "%s --cache-dir %s %s/models/mobilenet_v2.model", self->bin,
		 self->dir, getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".");
	ASSERT_EQ(1, tu_run(cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "no hardware PMU (perf_event_open of cycles: "))
	TH_LOG("%s", out);
	/* one line, the reason (the errno pmu_detect saw) in it */
	ASSERT_NE(NULL, strstr(out, strerror(self->pmu.open_errno))) TH_LOG("%s", out);
	ASSERT_EQ(out + strlen(out) - 1, strchr(out, '\n'));
	ASSERT_EQ(0, tu_nr_dir_entries(self->dir));
}

TEST_F(calibrate, with_pmu__writes_a_model_for_this_machine)
{
	struct profile_machine machine;
	struct coloc_err err = { 0 };
	struct level_model m;
	char cmd[1024], out[16384], path[256];

	if (!self->pmu.present)
		SKIP(return,
			   "no hardware PMU (perf_event_open: %s): LLC events cannot be counted, "
			   "so no level model can be calibrated here",
			   strerror(self->pmu.open_errno));
	ASSERT_EQ(0, profile_machine_detect(&machine));
	snprintf(cmd, sizeof(cmd),
		 "%s --cache-dir %s --levels 50,100 --rounds 2 --runs 3 "
		 "%s/models/mobilenet_v2.model",
		 self->bin, self->dir, getenv("COLOC_ROOT") ? getenv("COLOC_ROOT") : ".");
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(0, level_model_cache_path(self->dir, profile_machine_hash(&machine), path,
					    sizeof(path)));
	ASSERT_EQ(0, level_model_load(path, &m, &err)) TH_LOG("%s", err.msg);
	/* two kinds x two rounds x levels 0, 50, 100 */
	ASSERT_EQ(12, m.nr_points);
	ASSERT_EQ(profile_machine_hash(&machine), m.machine);
	ASSERT_NE(0u,
		  m.terms & (1u << LEVEL_TERM_LLC_MISS_RATIO | 1u << LEVEL_TERM_LLC_REFS_PER_US));
}

TEST_HARNESS_MAIN
