// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of colocd's level source (daemon/level_source.c) and of its hook in
 * the serving core (daemon/serving_signal.c): which source is chosen for
 * each PMU description and model file, and the start line that says so; a
 * CPU window record mapped to LLC, DRAM and level signals, worked out by
 * hand; a core whose level came from the model is left alone by the block
 * slowdown estimate while another core still follows its blocks; and colocd
 * itself, which here (no PMU) must say it uses the block slowdown, and with
 * a PMU must load a model put in its cache (SKIPped without one).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "testutil.h"
#include "level_source.h"
#include "pmu.h"
#include "profile_host.h"
#include "serving_internal.h"
#include "mono_clock.h"

#define HW_LLC ((1u << COLOC_CTR_LLC_REFS) | (1u << COLOC_CTR_LLC_MISSES))

FIXTURE(level_source)
{
	char dir[64];
	struct level_model model;
	struct pmu_info pmu;
	struct coloc_err err;
};

FIXTURE_SETUP(level_source)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/level-source-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	self->model = (struct level_model){
		.terms = LEVEL_TERMS_ALL,
		.c0 = 0.8,
		.coef = { 1.0, 0.001, 0.05 },
		.nr_points = 30,
		.r2 = 0.934,
		.rms = 0.03,
		.machine = 0x1234,
	};
	memset(&self->pmu, 0, sizeof(self->pmu));
	self->pmu.present = true;
	self->pmu.available_mask = COLOC_HW_COUNTER_MASK;
	memset(&self->err, 0, sizeof(self->err));
}

FIXTURE_TEARDOWN(level_source)
{
	tu_remove_tree(self->dir);
}

static void describe(const struct level_source *ls, char *buf, size_t len)
{
	level_source_describe(ls, buf, len);
}

TEST_F(level_source, decide__no_pmu_keeps_block_slowdown)
{
	struct profile_machine machine;
	struct level_source ls;
	char line[1024];

	self->pmu.present = false;
	self->pmu.available_mask = 0;
	/* even a valid model for this machine is not used without a PMU */
	level_source_decide(&ls, &self->pmu, 0x1234, "/c/level.model", 0, &self->err, &self->model);
	ASSERT_FALSE(ls.pmu_model);
	ASSERT_FALSE(ls.pmu_signals);
	describe(&ls, line, sizeof(line));
	ASSERT_STREQ("level: measured block slowdown (no PMU)", line);
	ASSERT_EQ(0, profile_machine_detect(&machine));
	ASSERT_EQ(0, level_source_open(&ls, &self->pmu, self->dir, &machine));
	describe(&ls, line, sizeof(line));
	ASSERT_STREQ("level: measured block slowdown (no PMU)", line);
}

TEST_F(level_source, decide__each_reason_to_fall_back_is_said)
{
	struct level_source ls;
	char line[1024];

	self->pmu.available_mask = COLOC_HW_COUNTER_MASK & ~(1u << COLOC_CTR_LLC_MISSES);
	level_source_decide(&ls, &self->pmu, 0x1234, "/c/m", 0, &self->err, &self->model);
	describe(&ls, line, sizeof(line));
	ASSERT_STREQ("level: measured block slowdown (the PMU counts no LLC references and misses)",
		     line);

	self->pmu.available_mask = COLOC_HW_COUNTER_MASK;
	level_source_decide(&ls, &self->pmu, 0x1234, "/c/m", -ENOENT, &self->err, &self->model);
	ASSERT_FALSE(ls.pmu_model);
	ASSERT_TRUE(ls.pmu_signals);
	describe(&ls, line, sizeof(line));
	ASSERT_STREQ("level: measured block slowdown (no level model /c/m: make one with "
		     "coloc-calibrate-level)",
		     line);

	level_source_decide(&ls, &self->pmu, 0x9999, "/c/m", 0, &self->err, &self->model);
	describe(&ls, line, sizeof(line));
	ASSERT_STREQ("level: measured block slowdown (level model /c/m was fitted on another "
		     "machine (0000000000001234, this is 0000000000009999))",
		     line);

	self->pmu.available_mask = HW_LLC;
	level_source_decide(&ls, &self->pmu, 0x1234, "/c/m", 0, &self->err, &self->model);
	describe(&ls, line, sizeof(line));
	ASSERT_STREQ("level: measured block slowdown (level model /c/m needs dram_fills, which "
		     "this PMU does not count)",
		     line);

	/* a model without the DRAM term is fine on that PMU */
	self->model.terms &= ~(1u << LEVEL_TERM_DRAM_GBPS);
	level_source_decide(&ls, &self->pmu, 0x1234, "/c/m", 0, &self->err, &self->model);
	ASSERT_TRUE(ls.pmu_model);
	describe(&ls, line, sizeof(line));
	ASSERT_STREQ("level: PMU model /c/m (R² 0.93)", line);
}

TEST_F(level_source, decide__a_malformed_file_is_said_with_its_line)
{
	struct level_model m = { 0 };
	struct level_source ls;
	char path[128], line[1024];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/level.model", self->dir);
	ASSERT_EQ(0, level_model_save(&self->model, path, &self->err)) TH_LOG("%s", self->err.msg);
	ret = level_model_load(path, &m, &self->err);
	level_source_decide(&ls, &self->pmu, 0x1234, path, ret, &self->err, &m);
	ASSERT_TRUE(ls.pmu_model);
	ASSERT_EQ(self->model.c0, ls.model.c0);

	f = fopen(path, "a");
	ASSERT_NE(NULL, f);
	fputs("c0 = 2\n", f);
	fclose(f);
	coloc_err_clear(&self->err);
	ret = level_model_load(path, &m, &self->err);
	ASSERT_EQ(-EINVAL, ret);
	level_source_decide(&ls, &self->pmu, 0x1234, path, ret, &self->err, &m);
	ASSERT_FALSE(ls.pmu_model);
	describe(&ls, line, sizeof(line));
	/* 3 header lines, then 9 keys (c0 on line 7, three terms): the appended line is 13 */
	ASSERT_NE(NULL, strstr(line, ":13: c0 given twice (first on line 7))")) TH_LOG("%s", line);
}

/* A window of 10 ms, 5 ms of it busy, with every hardware counter live. */
static struct coloc_cpu_window sample_window(void)
{
	struct coloc_cpu_window w = {
		.type = COLOC_REC_CPU_WINDOW,
		.cpu = 1,
		.window_id = 7,
		.window_ns = 10000000,
		.live_mask = COLOC_HW_COUNTER_MASK | COLOC_LIVE_TASK_CLOCK,
		.task_clock_ns = 5000000,
	};

	w.counters.llc_refs = 1000000;
	w.counters.llc_misses = 250000;
	w.counters.dram_fills = 500000;
	return w;
}

/*
 * By hand: miss ratio 250000 / 1000000 = 0.25; references 1000000 per
 * 5000 us busy = 200 /us; DRAM 500000 * 64 B / 5000000 ns = 6.4 GB/s;
 * misses 250000 / 0.01 s = 2.5e7 /s. Level 0.8 + 0.25 + 0.001 * 200 +
 * 0.05 * 6.4 = 1.57.
 */
TEST_F(level_source, window_signal__maps_counters_to_signals_and_level)
{
	struct coloc_cpu_window w = sample_window();
	struct policy_signal sig;
	struct level_source ls;

	level_source_decide(&ls, &self->pmu, 0x1234, "/c/m", 0, &self->err, &self->model);
	ASSERT_EQ(POLICY_SIG_LLC | POLICY_SIG_DRAM | POLICY_SIG_SLOWDOWN | POLICY_SIG_LEVEL_PMU,
		  level_source_window_signal(&ls, &w, &sig));
	ASSERT_LT(fabs(sig.llc_miss_ratio - 0.25), 1e-15);
	ASSERT_LT(fabs(sig.llc_misses_per_s - 2.5e7), 1e-6);
	ASSERT_LT(fabs(sig.dram_gbps - 6.4), 1e-12);
	ASSERT_LT(fabs(sig.slowdown - 1.57), 1e-12);

	/* no model: the signals, not the level */
	level_source_decide(&ls, &self->pmu, 0x1234, "/c/m", -ENOENT, &self->err, &self->model);
	ASSERT_EQ(POLICY_SIG_LLC | POLICY_SIG_DRAM, level_source_window_signal(&ls, &w, &sig));
	ASSERT_EQ(0.0, sig.slowdown);

	/* the DRAM counter multiplexed out of this window: the model cannot say */
	level_source_decide(&ls, &self->pmu, 0x1234, "/c/m", 0, &self->err, &self->model);
	w.live_mask &= ~(1u << COLOC_CTR_DRAM_FILLS);
	ASSERT_EQ(POLICY_SIG_LLC, level_source_window_signal(&ls, &w, &sig));

	/* an idle core says nothing; nor does a tenant window */
	w = sample_window();
	w.task_clock_ns = 0;
	ASSERT_EQ(0u, level_source_window_signal(&ls, &w, &sig));
	w = sample_window();
	w.type = COLOC_REC_TENANT_WINDOW;
	ASSERT_EQ(0u, level_source_window_signal(&ls, &w, &sig));
}

TEST_F(level_source, window_signal__no_pmu_record_sets_nothing)
{
	struct coloc_cpu_window w = sample_window();
	struct policy_signal sig;
	struct level_source ls;

	self->pmu.present = false;
	level_source_decide(&ls, &self->pmu, 0, "", -ENOENT, &self->err, &self->model);
	/* what a record here carries: task clock and software counters */
	w.live_mask = 0x800000e0;
	ASSERT_EQ(0u, level_source_window_signal(&ls, &w, &sig));
	ASSERT_EQ(0u, sig.live);
}

static int make_serving(struct serving **s, const char *cache, struct coloc_err *err)
{
	char bin[512];
	struct serving_config cfg = {
		.executor = tu_bin("coloc-executor", bin, sizeof(bin)),
		.cache_dir = cache,
		.cores = "0",
	};

	return serving_create(&cfg, s, err);
}

/*
 * Core 0's level after 20 blocks of a tenant alone at lo and hi times its
 * alone latency in turn, then 5 blocks at 3x with another tenant's beside
 * them; *unfloored: the same level tested against the core's own spread
 * only.
 */
static double level_after_slow_blocks(struct serving *s, double lo, double hi, double *unfloored)
{
	struct policy_decision d = { .alone_ns = 1000000000 };
	struct sv_tenant t = { 0 };
	uint64_t now;
	double n;

	policy_cpuset_set(&d.cores, 0);
	for (int i = 0; i < 20; i++)
		sv_update_slowdown(s, &t, &d, (uint64_t)((i % 2 ? hi : lo) * 1e9), true);
	for (int i = 0; i < 5; i++)
		sv_update_slowdown(s, &t, &d, 3000000000ull, false);
	now = coloc_now_ns();
	n = s->core_level[0].weight_sum;
	*unfloored =
		policy_level_beyond_noise(policy_level_core_aged(&s->core_level[0], now),
					  s->core_level[0].var / n, 0, POLICY_LEVEL_CORE_WEIGHT);
	return sv_core_level(s, 0, now);
}

/*
 * After a tenant whose blocks alone run 1x every time, five 3x blocks are
 * a level; after one whose blocks alone alternate 1x and 3x (its own
 * noise), the same five are not: against the core's own spread they would
 * be, against the tenant's they are within it, and the level stays 1.0.
 */
TEST_F(level_source, serving_level__a_tenants_alone_noise_is_no_level_on_its_cores)
{
	double quiet, noisy, quiet_core, noisy_core;
	struct serving *s;

	ASSERT_EQ(0, make_serving(&s, self->dir, &self->err)) TH_LOG("%s", self->err.msg);
	quiet = level_after_slow_blocks(s, 1.0, 1.0, &quiet_core);
	serving_destroy(s);
	ASSERT_EQ(0, make_serving(&s, self->dir, &self->err)) TH_LOG("%s", self->err.msg);
	noisy = level_after_slow_blocks(s, 1.0, 3.0, &noisy_core);
	serving_destroy(s);
	TH_LOG("level after five 3x blocks: %.4f (quiet tenant), %.4f (noisy tenant, %.4f against "
	       "the core's spread only)",
	       quiet, noisy, noisy_core);
	EXPECT_GT(quiet, 1.0);
	EXPECT_EQ(quiet_core, quiet);
	EXPECT_GT(noisy_core, 1.0);
	EXPECT_EQ(1.0, noisy);
}

/*
 * Core 0 gets its level from the model, core 1 does not: after the
 * tenant's blocks alone (no level), a block beside another tenant's of 3x
 * its alone time on both moves only core 1, by the weight serving.c gives
 * a first block (POLICY_LEVEL_CORE_WEIGHT * w from the prior 1.0).
 */
TEST_F(level_source, serving_hook__block_slowdown_leaves_a_pmu_core_alone)
{
	struct policy_signal sig = { .live = POLICY_SIG_LLC | POLICY_SIG_SLOWDOWN |
					     POLICY_SIG_LEVEL_PMU,
				     .slowdown = 1.4,
				     .llc_miss_ratio = 0.3 };
	struct policy_decision d = { .alone_ns = 1000000 };
	struct sv_tenant *t;
	struct serving *s;
	double w;

	ASSERT_EQ(0, make_serving(&s, self->dir, &self->err)) TH_LOG("%s", self->err.msg);
	t = calloc(1, sizeof(*t));
	ASSERT_NE(NULL, t);
	ASSERT_EQ(-EINVAL, serving_set_core_signal(s, POLICY_MAX_CPUS, &sig));
	ASSERT_EQ(0, serving_set_core_signal(s, 0, &sig));
	ASSERT_EQ(POLICY_SIG_LLC | POLICY_SIG_SLOWDOWN | POLICY_SIG_LEVEL_PMU, s->core_sig[0].live);
	ASSERT_EQ(0.3, s->core_sig[0].llc_miss_ratio);

	policy_cpuset_set(&d.cores, 0);
	policy_cpuset_set(&d.cores, 1);
	d.nr_cores = 2;
	/* its noise alone first, none: the norm 1.0 */
	for (int i = 0; i < POLICY_LEVEL_MIN_ALONE; i++)
		sv_update_slowdown(s, t, &d, d.alone_ns, true);
	ASSERT_FALSE(s->core_level[1].live);
	sv_update_slowdown(s, t, &d, 3 * d.alone_ns, false);
	w = (double)d.alone_ns / ((double)d.alone_ns + POLICY_LEVEL_SMALL_BLOCK_NS);
	/* core 0: the model's 1.4, aged by the microseconds since it was set */
	ASSERT_LT(fabs(s->core_level[0].slowdown - 1.4), 1e-12);
	ASSERT_LT(fabs(s->core_level[1].slowdown - (1.0 + POLICY_LEVEL_CORE_WEIGHT * w * 2.0)),
		  1e-12);
	ASSERT_FALSE(s->core_sig[1].live & POLICY_SIG_LEVEL_PMU);
	free(t);
	serving_destroy(s);
}

/*
 * A tenant's attributed signal reaches its slot with only the LLC and DRAM
 * fields (a level is a core's, never a tenant's); a name not served is
 * -ENOENT. The slot is marked used by hand: admitting needs a profile.
 */
TEST_F(level_source, serving_hook__tenant_signal_keeps_llc_and_dram_only)
{
	struct policy_signal sig = { .live = POLICY_SIG_LLC | POLICY_SIG_DRAM |
					     POLICY_SIG_SLOWDOWN | POLICY_SIG_LEVEL_PMU,
				     .slowdown = 1.4,
				     .llc_misses_per_s = 5e7,
				     .dram_gbps = 7.5 };
	struct serving *s;

	ASSERT_EQ(0, make_serving(&s, self->dir, &self->err)) TH_LOG("%s", self->err.msg);
	ASSERT_EQ(-ENOENT, serving_set_tenant_signal(s, "nobody", &sig));
	s->tenants[3].used = true;
	snprintf(s->tenants[3].name, sizeof(s->tenants[3].name), "heavy");
	ASSERT_EQ(0, serving_set_tenant_signal(s, "heavy", &sig));
	EXPECT_EQ(POLICY_SIG_LLC | POLICY_SIG_DRAM, s->tenants[3].sig.live);
	EXPECT_EQ(5e7, s->tenants[3].sig.llc_misses_per_s);
	EXPECT_EQ(7.5, s->tenants[3].sig.dram_gbps);
	s->tenants[3].used = false;
	serving_destroy(s);
}

TEST_F(level_source, colocd__start_line_names_the_level_source)
{
	struct profile_machine machine;
	char sock[128], log[128], path[256], cmd[512], out[8192];
	const char *extra[] = { "--cache-dir", self->dir, NULL };
	struct pmu_info pmu;
	pid_t pid;

	ASSERT_EQ(0, pmu_detect(&pmu));
	ASSERT_EQ(0, profile_machine_detect(&machine));
	self->model.machine = profile_machine_hash(&machine);
	ASSERT_EQ(0, level_model_cache_path(self->dir, self->model.machine, path, sizeof(path)));
	ASSERT_EQ(0, level_model_save(&self->model, path, &self->err)) TH_LOG("%s", self->err.msg);
	snprintf(sock, sizeof(sock), "%s/colocd.sock", self->dir);
	snprintf(log, sizeof(log), "%s/colocd.log", self->dir);
	snprintf(cmd, sizeof(cmd), "/sys/fs/bpf/coloc-level-test-%d", getpid());
	pid = tu_start_colocd_with(sock, cmd, log, extra);
	ASSERT_GT(pid, 0);
	tu_stop_colocd(pid);
	snprintf(cmd, sizeof(cmd), "cat %s", log);
	ASSERT_EQ(0, tu_run(cmd, out, sizeof(out)));
	if (!pmu.present) {
		/* a model for this machine is in the cache, and still not used */
		ASSERT_NE(NULL, strstr(out, "level: measured block slowdown (no PMU)"))
		TH_LOG("%s", out);
		SKIP(return,
			   "no hardware PMU (perf_event_open: %s): colocd cannot load the level "
			   "model here, only say it uses the block slowdown",
			   strerror(pmu.open_errno));
	}
	if ((pmu.available_mask & COLOC_HW_COUNTER_MASK) != COLOC_HW_COUNTER_MASK)
		SKIP(return, "this PMU lacks a counter the test model needs (mask %#x)",
			   pmu.available_mask);
	snprintf(cmd, sizeof(cmd), "level: PMU model %s (R² 0.93)", path);
	ASSERT_NE(NULL, strstr(out, cmd)) TH_LOG("%s", out);
}

TEST_HARNESS_MAIN
