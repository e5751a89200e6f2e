// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The rolling view's arithmetic, on records built by hand with numbers
 * whose rates and ratios are worked out here: spans, silence (a CPU that
 * sent nothing reads as idle), tenant records from several CPUs summed,
 * ring wrap-around and malformed records.
 */
#include <string.h>
#include "kselftest_harness.h"
#include "view.h"

static struct coloc_cpu_window cpu_rec(__u32 cpu, __u64 id, __u64 task_ns)
{
	struct coloc_cpu_window w = {
		.type = COLOC_REC_CPU_WINDOW,
		.cpu = cpu,
		.window_id = id,
		.window_ns = 10000000,
		.live_mask = COLOC_LIVE_TASK_CLOCK | (1u << COLOC_CTR_CTX_SWITCHES) |
			     (1u << COLOC_CTR_CYCLES) | (1u << COLOC_CTR_INSTRUCTIONS) |
			     (1u << COLOC_CTR_LLC_REFS) | (1u << COLOC_CTR_LLC_MISSES) |
			     (1u << COLOC_CTR_DRAM_FILLS),
		.task_clock_ns = task_ns,
		.counters = {
			.ctx_switches = 5,
			.cycles = 2000000,
			.instructions = 1000000,
			.llc_refs = 4000,
			.llc_misses = 1000,
			.dram_fills = 15625, /* 1 MB per 10 ms = 0.1 GB/s */
		},
	};

	return w;
}

FIXTURE(view)
{
	struct view *v;
};

FIXTURE_SETUP(view)
{
	int cpus[] = { 0, 3 };

	self->v = view_new(2, cpus, 10);
	ASSERT_NE(NULL, self->v);
}

FIXTURE_TEARDOWN(view)
{
	view_free(self->v);
}

TEST_F(view, cpu__rates_and_ratios_over_the_span)
{
	struct view_signals s;

	/* windows 100..109 on CPU 3 (index 1), each half busy */
	for (__u64 id = 100; id < 110; id++) {
		struct coloc_cpu_window w = cpu_rec(3, id, 5000000);

		view_add_record(self->v, &w, sizeof(w));
	}
	ASSERT_EQ(10, view_span_windows(self->v, 100));
	view_cpu(self->v, 1, 110, 10, &s);
	EXPECT_EQ(10, s.windows);
	EXPECT_TRUE(s.busy > 0.4999 && s.busy < 0.5001);
	EXPECT_TRUE(s.ipc > 0.4999 && s.ipc < 0.5001); /* 1e6 instr / 2e6 cycles */
	EXPECT_TRUE(s.llc_mpki > 0.9999 && s.llc_mpki < 1.0001); /* 1000 per 1e6 instr */
	EXPECT_TRUE(s.llc_miss_ratio > 0.2499 && s.llc_miss_ratio < 0.2501);
	EXPECT_TRUE(s.dram_gbps > 0.09999 && s.dram_gbps < 0.10001);
	EXPECT_TRUE(s.ctx_switches_per_s > 499.9 && s.ctx_switches_per_s < 500.1);
	EXPECT_TRUE(s.live_mask & COLOC_LIVE_TASK_CLOCK);

	/* the other CPU sent nothing: idle, not an error */
	view_cpu(self->v, 0, 110, 10, &s);
	EXPECT_EQ(0, s.windows);
	EXPECT_EQ(0.0, s.busy);
}

TEST_F(view, cpu__silence_after_activity_reads_as_idle)
{
	struct view_signals s;
	struct coloc_cpu_window w = cpu_rec(0, 100, 10000000);

	view_add_record(self->v, &w, sizeof(w));
	view_cpu(self->v, 0, 101, 1, &s);
	EXPECT_EQ(1, s.windows);
	EXPECT_TRUE(s.busy > 0.999);
	/* 200 windows later the slot is stale (ring wrapped): it must not count */
	view_cpu(self->v, 0, 101 + VIEW_RING, 1, &s);
	EXPECT_EQ(0, s.windows);
	EXPECT_EQ(0.0, s.busy);
}

TEST_F(view, tenant__records_from_several_cpus_are_summed)
{
	struct coloc_tenant_window t = {
		.type = COLOC_REC_TENANT_WINDOW,
		.tenant = 5,
		.live_mask = COLOC_LIVE_TASK_CLOCK,
		.on_cpu_ns = 7000000,
	};
	struct view_signals s;

	for (__u64 id = 10; id < 20; id++) {
		t.window_id = id;
		t.cpu = 0;
		view_add_record(self->v, &t, sizeof(t));
		t.cpu = 3;
		view_add_record(self->v, &t, sizeof(t));
	}
	view_tenant(self->v, 5, 20, 10, &s);
	EXPECT_EQ(10, s.windows);
	/* 2 CPUs x 7 ms per 10 ms = 1.4 CPUs' worth */
	EXPECT_TRUE(s.busy > 1.3999 && s.busy < 1.4001);
	view_tenant(self->v, 6, 20, 10, &s);
	EXPECT_EQ(0, s.windows);
}

TEST_F(view, add_record__short_or_unknown_records_are_counted_not_used)
{
	struct coloc_cpu_window w = cpu_rec(0, 1, 1);
	struct view_signals s;

	view_add_record(self->v, &w, sizeof(w) - 1);
	w.type = 99;
	view_add_record(self->v, &w, sizeof(w));
	w = cpu_rec(7, 1, 1); /* a CPU the view does not watch */
	view_add_record(self->v, &w, sizeof(w));
	EXPECT_EQ(3, view_bad_records(self->v));
	EXPECT_EQ(3, view_records(self->v));
	view_cpu(self->v, 0, 2, 1, &s);
	EXPECT_EQ(0, s.windows);
}

TEST(view_new__rejects_bad_arguments)
{
	int cpus[] = { 0 };

	EXPECT_EQ(NULL, view_new(0, cpus, 10));
	EXPECT_EQ(NULL, view_new(1, cpus, 0));
	EXPECT_EQ(NULL, view_new(COLOC_MAX_CPUS + 1, cpus, 10));
}

TEST_HARNESS_MAIN
