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
 * not live is absent, never zero-by-default. Values travel in a
 * struct coloc_counters, whose fields carry the names, so that bpftool's
 * dump of a pinned map reads without this header.
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

/*
 * live_mask bit for the task clock (time from sched_switch and the periodic
 * trigger): set in every record, CPU and tenant windows alike, since time
 * is always measured. A machine without a PMU has records with live_mask
 * 0x800000e0: task clock, context switches, migrations, page faults.
 */
#define COLOC_LIVE_TASK_CLOCK (1u << 31)

/* live_mask's bits by name: bpftool shows them, code uses the mask. */
struct coloc_live {
	__u32 cycles : 1, instructions : 1, llc_refs : 1, llc_misses : 1, dram_fills : 1,
		ctx_switches : 1, migrations : 1, page_faults : 1, : 23, task_clock : 1;
};

/*
 * Counter deltas, one named field per enum coloc_counter, in enum order:
 * code that loops over counters indexes it through coloc_counter_at().
 */
struct coloc_counters {
	__u64 cycles;
	__u64 instructions;
	__u64 llc_refs;
	__u64 llc_misses;
	__u64 dram_fills; /* 64-byte lines filled from DRAM */
	__u64 ctx_switches;
	__u64 migrations;
	__u64 page_faults;
};

#define COLOC_COUNTER_AT(field, ctr)                                                \
	_Static_assert(__builtin_offsetof(struct coloc_counters, field) == (ctr)*8, \
		       #field " is not at its enum coloc_counter index")
COLOC_COUNTER_AT(cycles, COLOC_CTR_CYCLES);
COLOC_COUNTER_AT(instructions, COLOC_CTR_INSTRUCTIONS);
COLOC_COUNTER_AT(llc_refs, COLOC_CTR_LLC_REFS);
COLOC_COUNTER_AT(llc_misses, COLOC_CTR_LLC_MISSES);
COLOC_COUNTER_AT(dram_fills, COLOC_CTR_DRAM_FILLS);
COLOC_COUNTER_AT(ctx_switches, COLOC_CTR_CTX_SWITCHES);
COLOC_COUNTER_AT(migrations, COLOC_CTR_MIGRATIONS);
COLOC_COUNTER_AT(page_faults, COLOC_CTR_PAGE_FAULTS);
_Static_assert(sizeof(struct coloc_counters) == COLOC_NR_COUNTERS * 8,
	       "struct coloc_counters has one __u64 per enum coloc_counter");
#undef COLOC_COUNTER_AT

/* The counter ctr (an enum coloc_counter) of c. */
static inline __u64 *coloc_counter_at(struct coloc_counters *c, unsigned int ctr)
{
	return (__u64 *)c + ctr;
}

static inline __u64 coloc_counter_get(const struct coloc_counters *c, unsigned int ctr)
{
	return ((const __u64 *)c)[ctr];
}

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
	union {
		__u32 live_mask; /* bit n: counter n was read; COLOC_LIVE_TASK_CLOCK */
		struct coloc_live live; /* the same bits by name, for bpftool */
	};
	__u32 nr_samples; /* periodic trigger firings in this window */
	__u64 task_clock_ns;
	struct coloc_counters counters; /* deltas over the window */
};

/* What one tenant did on one CPU during one window. */
struct coloc_tenant_window {
	__u32 type; /* COLOC_REC_TENANT_WINDOW */
	__u32 cpu;
	__u64 window_id;
	__u32 tenant;
	union {
		__u32 live_mask;
		struct coloc_live live;
	};
	__u64 on_cpu_ns;
	struct coloc_counters counters;
};

/*
 * Per-CPU value of the pinned map `tenant_totals`: cumulative since attach.
 * owners_ns: the part of on_cpu_ns its tasks ran under the real uid of a
 * tenant's owner (a uid in uid_totals), counted there too.
 */
struct coloc_tenant_total {
	__u64 on_cpu_ns;
	struct coloc_counters counters;
	__u64 owners_ns;
};

/*
 * Per-CPU value of the pinned array `cpu_totals` (one entry): time non-idle
 * tasks ran on the CPU since attach. Less a tenant's own (tenant_totals)
 * and its owner's (uid_totals), the time others had the CPU (colocd's
 * CPU-wait excuse, docs/design/sensing.md).
 */
struct coloc_cpu_total {
	__u64 busy_ns;
};

/*
 * Per-CPU value of the pinned map `uid_totals`, keyed by the real uid of a
 * tenant's owner (a member): the time its tasks ran on the CPU since the
 * uid was added, of a tenant or of none (an owner's task that one of its
 * tenants holds is its owner's all the same).
 */
struct coloc_uid_total {
	__u64 on_cpu_ns;
};

/* Per-CPU value of the pinned map `sensor_stats`: how the sensor itself is doing. */
struct coloc_sensor_stats {
	__u64 samples; /* periodic trigger firings */
	__u64 switches; /* sched_switch events seen */
	__u64 records; /* records written to the ring buffer */
	__u64 drops; /* records lost because the ring buffer was full */
};

/* Whether a core is held by a tenant's layer block (the `state` of struct coloc_core_owner). */
enum coloc_core_state {
	COLOC_CORE_FREE = 0,
	COLOC_CORE_OWNED = 1,
};
_Static_assert(sizeof(enum coloc_core_state) == 4, "enum coloc_core_state is a __u32 in maps");

/*
 * Value of the pinned array `core_owner`, indexed by OS CPU id: which
 * tenant's layer block holds the core now. colocd writes it when it gives a
 * block its cores and when it takes them back; a core that was never given,
 * or was given back, is COLOC_CORE_FREE with tenant_id COLOC_NO_TENANT.
 * bpftool shows the state by its enum name.
 */
struct coloc_core_owner {
	__u32 tenant_id; /* COLOC_NO_TENANT when free */
	enum coloc_core_state state;
	__u64 query; /* the query whose block runs here */
	__u32 first_layer; /* the block's first layer */
	__u32 last_layer; /* and its last, as given by colocd */
	__u64 since_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) when this state began */
};

#endif /* COLOC_SENSOR_H */
