/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's rolling view of interference: the ring-buffer records of the last
 * second or so, per CPU and per tenant, turned into rates and ratios. Pure:
 * no I/O and no clock of its own (the caller says which window is "now").
 */
#ifndef COLOC_DAEMON_VIEW_H
#define COLOC_DAEMON_VIEW_H

#include <stddef.h>
#include <linux/types.h>
#include "coloc/sensor.h"

#define VIEW_RING 128 /* windows remembered per CPU and per tenant */

/* Derived signals over a span of windows; a value is meaningful only if live. */
struct view_signals {
	__u32 live_mask; /* COLOC_CTR_* bits and COLOC_LIVE_TASK_CLOCK */
	unsigned int windows; /* windows in the span that had a record */
	double busy; /* CPUs' worth of task time: 0..1 per CPU, sum for a tenant */
	double ipc; /* instructions / cycles */
	double llc_mpki; /* LLC misses per kilo-instruction */
	double llc_miss_ratio; /* misses / references */
	double llc_misses_per_s;
	double dram_gbps; /* DRAM fills * 64 B, per second, in 1e9 B/s */
	double ctx_switches_per_s;
	double migrations_per_s;
	double page_faults_per_s;
};

struct view;

struct view *view_new(int nr_cpus, const int *cpus, unsigned int window_ms);
void view_free(struct view *v);
/* Takes one ring-buffer record; unknown or short records are counted and ignored. */
void view_add_record(struct view *v, const void *rec, size_t size);
/* Windows in a span of about span_ms (at least 1, at most VIEW_RING - 2). */
unsigned int view_span_windows(const struct view *v, unsigned int span_ms);
/*
 * Signals of the CPU at index idx (or tenant) over the `span` closed
 * windows before now_window (the window that is still open).
 */
void view_cpu(const struct view *v, int idx, __u64 now_window, unsigned int span,
	      struct view_signals *out);
void view_tenant(const struct view *v, __u32 tenant, __u64 now_window, unsigned int span,
		 struct view_signals *out);
/* Forgets a tenant's windows: its slot is about to serve another tenant. */
void view_tenant_reset(struct view *v, __u32 tenant);
__u64 view_bad_records(const struct view *v);
__u64 view_records(const struct view *v);

#endif /* COLOC_DAEMON_VIEW_H */
