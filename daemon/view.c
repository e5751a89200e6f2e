// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The rolling view. Each CPU and each tenant has a ring of VIEW_RING
 * windows indexed by window_id; a slot counts only if it holds the window
 * asked for, so a CPU that went silent (no record for a window) reads as
 * idle rather than repeating stale numbers. Tenant records from
 * different CPUs for one window are summed into one slot.
 */
#include <stdlib.h>
#include <string.h>
#include "view.h"

struct view_slot {
	__u64 window_id;
	__u32 live_mask;
	__u32 valid;
	__u64 time_ns; /* task clock (CPU) or on-CPU time (tenant) */
	struct coloc_counters counters;
};

struct view {
	int nr_cpus;
	int cpu_index[COLOC_MAX_CPUS]; /* OS CPU id -> index, or -1 */
	unsigned int window_ms;
	__u64 records, bad_records;
	struct view_slot (*cpu)[VIEW_RING];
	struct view_slot tenant[COLOC_MAX_TENANTS][VIEW_RING];
};

struct view *view_new(int nr_cpus, const int *cpus, unsigned int window_ms)
{
	struct view *v;

	if (nr_cpus <= 0 || nr_cpus > COLOC_MAX_CPUS || !window_ms)
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->cpu = calloc(nr_cpus, sizeof(*v->cpu));
	if (!v->cpu) {
		free(v);
		return NULL;
	}
	v->nr_cpus = nr_cpus;
	v->window_ms = window_ms;
	memset(v->cpu_index, -1, sizeof(v->cpu_index));
	for (int i = 0; i < nr_cpus; i++)
		if (cpus[i] >= 0 && cpus[i] < COLOC_MAX_CPUS)
			v->cpu_index[cpus[i]] = i;
	return v;
}

void view_free(struct view *v)
{
	if (!v)
		return;
	free(v->cpu);
	free(v);
}

static void view_slot_add(struct view_slot *slot, __u64 window_id, __u32 live, __u64 time_ns,
			  const struct coloc_counters *counters)
{
	if (!slot->valid || slot->window_id != window_id) {
		memset(slot, 0, sizeof(*slot));
		slot->window_id = window_id;
		slot->valid = 1;
	}
	slot->live_mask |= live;
	slot->time_ns += time_ns;
	for (int c = 0; c < COLOC_NR_COUNTERS; c++)
		*coloc_counter_at(&slot->counters, c) += coloc_counter_get(counters, c);
}

void view_add_record(struct view *v, const void *rec, size_t size)
{
	const struct coloc_cpu_window *cw = rec;
	const struct coloc_tenant_window *tw = rec;
	int idx;

	v->records++;
	if (size >= sizeof(*cw) && cw->type == COLOC_REC_CPU_WINDOW && cw->cpu < COLOC_MAX_CPUS &&
	    (idx = v->cpu_index[cw->cpu]) >= 0) {
		view_slot_add(&v->cpu[idx][cw->window_id % VIEW_RING], cw->window_id, cw->live_mask,
			      cw->task_clock_ns, &cw->counters);
		return;
	}
	if (size >= sizeof(*tw) && tw->type == COLOC_REC_TENANT_WINDOW &&
	    tw->tenant < COLOC_MAX_TENANTS) {
		view_slot_add(&v->tenant[tw->tenant][tw->window_id % VIEW_RING], tw->window_id,
			      tw->live_mask, tw->on_cpu_ns, &tw->counters);
		return;
	}
	v->bad_records++;
}

unsigned int view_span_windows(const struct view *v, unsigned int span_ms)
{
	unsigned int n = span_ms / v->window_ms;

	if (n < 1)
		n = 1;
	if (n > VIEW_RING - 2)
		n = VIEW_RING - 2;
	return n;
}

static double view_ratio(__u64 num, __u64 den)
{
	return den ? (double)num / (double)den : 0.0;
}

static void view_summarize(const struct view *v, const struct view_slot *ring, __u64 now_window,
			   unsigned int span, struct view_signals *out)
{
	struct view_slot sum = { 0 };
	double seconds = (double)span * v->window_ms / 1000.0;
	const struct coloc_counters *c = &sum.counters;

	memset(out, 0, sizeof(*out));
	for (unsigned int k = 1; k <= span && k <= now_window; k++) {
		const struct view_slot *slot = &ring[(now_window - k) % VIEW_RING];

		if (!slot->valid || slot->window_id != now_window - k)
			continue;
		out->windows++;
		view_slot_add(&sum, 0, slot->live_mask, slot->time_ns, &slot->counters);
	}
	out->live_mask = sum.live_mask;
	out->busy = (double)sum.time_ns / (seconds * 1e9);
	out->ipc = view_ratio(c->instructions, c->cycles);
	out->llc_mpki = 1000.0 * view_ratio(c->llc_misses, c->instructions);
	out->llc_miss_ratio = view_ratio(c->llc_misses, c->llc_refs);
	out->llc_misses_per_s = c->llc_misses / seconds;
	out->dram_gbps = c->dram_fills * (double)COLOC_DRAM_LINE_BYTES / seconds / 1e9;
	out->ctx_switches_per_s = c->ctx_switches / seconds;
	out->migrations_per_s = c->migrations / seconds;
	out->page_faults_per_s = c->page_faults / seconds;
}

void view_cpu(const struct view *v, int idx, __u64 now_window, unsigned int span,
	      struct view_signals *out)
{
	view_summarize(v, v->cpu[idx], now_window, span, out);
}

void view_tenant(const struct view *v, __u32 tenant, __u64 now_window, unsigned int span,
		 struct view_signals *out)
{
	view_summarize(v, v->tenant[tenant % COLOC_MAX_TENANTS], now_window, span, out);
}

void view_tenant_reset(struct view *v, __u32 tenant)
{
	if (tenant < COLOC_MAX_TENANTS)
		memset(v->tenant[tenant], 0, sizeof(v->tenant[tenant]));
}

__u64 view_bad_records(const struct view *v)
{
	return v->bad_records;
}

__u64 view_records(const struct view *v)
{
	return v->records;
}
