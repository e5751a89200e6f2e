/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What crosses the kernel/user boundary for interference sensing: the
 * records bpf/sensor.bpf.c writes to its ring buffer and the values of its
 * pinned maps. Included by the BPF program (after vmlinux.h) and by user
 * space (after <linux/types.h>); defined nowhere else.
 *
 * Counters are per CPU. Each has a slot in the PERF_EVENT_ARRAY `counters`
 * at index cpu * COLOC_NR_COUNTERS + counter. The daemon fills the slots the
 * machine can count (hardware ones only where a PMU exists); a record's
 * live_mask says which counters were read in that window, so a field that is
 * not live is absent, never zero-by-default.
 */
#ifndef COLOC_SENSOR_H
#define COLOC_SENSOR_H

#include "coloc/limits.h"

#define COLOC_MAX_TENANTS 64
#define COLOC_NO_TENANT 0xffffffffu

enum coloc_counter {
	/* hardware (PMU) */
	COLOC_CTR_CYCLES = 0,
	COLOC_CTR_INSTRUCTIONS,
	COLOC_CTR_LLC_REFS,
	COLOC_CTR_LLC_MISSES,
	COLOC_CTR_DRAM_FILLS, /* 64-byte lines filled from DRAM */
	/* software, present on every machine */
	COLOC_CTR_CTX_SWITCHES,
	COLOC_CTR_MIGRATIONS,
	COLOC_CTR_PAGE_FAULTS,
	COLOC_NR_COUNTERS,
};

#define COLOC_HW_COUNTER_MASK                                                                     \
	((1u << COLOC_CTR_CYCLES) | (1u << COLOC_CTR_INSTRUCTIONS) | (1u << COLOC_CTR_LLC_REFS) | \
	 (1u << COLOC_CTR_LLC_MISSES) | (1u << COLOC_CTR_DRAM_FILLS))

/* live_mask bit for the sched_switch-derived task clock (always live). */
#define COLOC_LIVE_TASK_CLOCK (1u << 31)

#define COLOC_DRAM_LINE_BYTES 64

enum coloc_record_type {
	COLOC_REC_CPU_WINDOW = 1,
	COLOC_REC_TENANT_WINDOW = 2,
};

/*
 * One CPU's window. Windows are aligned to CLOCK_MONOTONIC multiples of the
 * window length, so records of different CPUs with one window_id cover the
 * same interval. task_clock_ns is the time non-idle tasks ran on the CPU.
 */
struct coloc_cpu_window {
	__u32 type; /* COLOC_REC_CPU_WINDOW */
	__u32 cpu;
	__u64 window_id;
	__u64 window_ns;
	__u32 live_mask; /* bit n: counters[n] was read; COLOC_LIVE_TASK_CLOCK */
	__u32 nr_samples; /* periodic trigger firings in this window */
	__u64 task_clock_ns;
	__u64 counters[COLOC_NR_COUNTERS]; /* deltas over the window */
};

/* What one tenant did on one CPU during one window. */
struct coloc_tenant_window {
	__u32 type; /* COLOC_REC_TENANT_WINDOW */
	__u32 cpu;
	__u64 window_id;
	__u32 tenant;
	__u32 live_mask;
	__u64 on_cpu_ns;
	__u64 counters[COLOC_NR_COUNTERS];
};

/* Per-CPU value of the pinned map `tenant_totals`: cumulative since attach. */
struct coloc_tenant_total {
	__u64 on_cpu_ns;
	__u64 counters[COLOC_NR_COUNTERS];
};

/* Per-CPU value of the pinned map `sensor_stats`: how the sensor itself is doing. */
struct coloc_sensor_stats {
	__u64 samples; /* periodic trigger firings */
	__u64 switches; /* sched_switch events seen */
	__u64 records; /* records written to the ring buffer */
	__u64 drops; /* records lost because the ring buffer was full */
};

#endif /* COLOC_SENSOR_H */
