// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Interference sensing, kernel side.
 *
 * Two programs keep, per CPU, an open window of counter deltas and task time:
 * a perf_event program fired periodically on every CPU (the daemon attaches
 * it to a cpu-clock software event, default 1 kHz), and a tp_btf program on
 * sched_switch. Both call sensor_account(), which reads every counter slot
 * of this CPU from the PERF_EVENT_ARRAY `counters` with
 * bpf_perf_event_read_value(), charges the deltas since the last call to the
 * CPU's window and to the tenant that was running, and closes the window
 * when the clock has crossed into the next one: a coloc_cpu_window record,
 * plus one coloc_tenant_window per tenant seen, go to the ring buffer, and
 * the CPU's last window is kept in the pinned array `cpu_live`.
 *
 * Reading at each context switch is what makes per-tenant attribution exact
 * at switch granularity; the periodic trigger bounds how stale a window gets
 * on a CPU that does not switch. Which counter slots hold an event is the
 * daemon's choice (hardware ones only where there is a PMU); a slot without
 * an event simply fails to read and its live bit stays clear.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "coloc/sensor.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 window_ns = 10 * 1000 * 1000;

struct cpu_state {
	__u64 last_ns; /* time of the last sensor_account() on this CPU */
	__u64 prev[COLOC_NR_COUNTERS]; /* scaled counter values at last_ns */
	__u32 prev_valid; /* bit n: prev[n] holds a reading */
	__u32 cur_tenant; /* tenant running since last_ns, or COLOC_NO_TENANT */
	__u32 cur_idle; /* the idle task runs since last_ns */
	__u32 pad;
	__u64 tenant_mask; /* tenants charged in the open window */
	struct coloc_cpu_window win; /* the open window */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, COLOC_MAX_CPUS * COLOC_NR_COUNTERS);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} cpu_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COLOC_MAX_TENANTS);
	__type(key, __u32);
	__type(value, struct coloc_tenant_window);
} tenant_window_acc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, COLOC_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct coloc_cpu_window);
} cpu_live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COLOC_MAX_TENANTS);
	__type(key, __u32);
	__type(value, struct coloc_tenant_total);
} tenant_totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32); /* tgid */
	__type(value, __u32); /* tenant */
} tenant_by_tgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* cgroup v2 id */
	__type(value, __u32); /* tenant */
} tenant_by_cgroup SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct coloc_sensor_stats);
} sensor_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 2 * 1024 * 1024);
} records SEC(".maps");

static __u32 sensor_tenant_of(struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 *tenant;
	__u64 cgid;

	tenant = bpf_map_lookup_elem(&tenant_by_tgid, &tgid);
	if (tenant)
		return *tenant;
	cgid = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
	tenant = bpf_map_lookup_elem(&tenant_by_cgroup, &cgid);
	return tenant ? *tenant : COLOC_NO_TENANT;
}

static void sensor_set_running(struct cpu_state *st, struct task_struct *task)
{
	st->cur_idle = BPF_CORE_READ(task, pid) == 0;
	st->cur_tenant = st->cur_idle ? COLOC_NO_TENANT : sensor_tenant_of(task);
}

/* Reads this CPU's counter slots; returns the live mask, deltas in d[]. */
static __u32 sensor_read_counters(struct cpu_state *st, __u32 cpu, __u64 *d)
{
	struct bpf_perf_event_value v;
	__u32 live = 0;

	for (__u32 i = 0; i < COLOC_NR_COUNTERS; i++) {
		__u64 val;

		d[i] = 0;
		if (bpf_perf_event_read_value(&counters, cpu * COLOC_NR_COUNTERS + i, &v,
					      sizeof(v)))
			continue;
		val = v.counter;
		/* multiplexed with other events: scale to the full enabled time */
		if (v.running && v.running < v.enabled)
			val = val * v.enabled / v.running;
		if ((st->prev_valid & (1u << i)) && val >= st->prev[i])
			d[i] = val - st->prev[i];
		st->prev[i] = val;
		st->prev_valid |= 1u << i;
		live |= 1u << i;
	}
	return live;
}

static void sensor_emit_tenants(struct cpu_state *st, __u32 cpu, struct coloc_sensor_stats *stats)
{
	for (__u32 t = 0; t < COLOC_MAX_TENANTS; t++) {
		struct coloc_tenant_window *acc, *rec;
		__u32 key = t;

		if (!(st->tenant_mask & (1ull << t)))
			continue;
		acc = bpf_map_lookup_elem(&tenant_window_acc, &key);
		if (!acc)
			continue;
		rec = bpf_ringbuf_reserve(&records, sizeof(*rec), 0);
		if (rec) {
			*rec = *acc;
			rec->type = COLOC_REC_TENANT_WINDOW;
			rec->cpu = cpu;
			rec->window_id = st->win.window_id;
			rec->tenant = t;
			bpf_ringbuf_submit(rec, 0);
			stats->records++;
		} else {
			stats->drops++;
		}
		__builtin_memset(acc, 0, sizeof(*acc));
	}
	st->tenant_mask = 0;
}

static void sensor_close_window(struct cpu_state *st, __u32 cpu, __u64 new_id,
				struct coloc_sensor_stats *stats)
{
	struct coloc_cpu_window *rec;

	st->win.type = COLOC_REC_CPU_WINDOW;
	st->win.cpu = cpu;
	st->win.window_ns = window_ns;
	bpf_map_update_elem(&cpu_live, &cpu, &st->win, BPF_ANY);
	rec = bpf_ringbuf_reserve(&records, sizeof(*rec), 0);
	if (rec) {
		*rec = st->win;
		bpf_ringbuf_submit(rec, 0);
		stats->records++;
	} else {
		stats->drops++;
	}
	sensor_emit_tenants(st, cpu, stats);
	__builtin_memset(&st->win, 0, sizeof(st->win));
	st->win.window_id = new_id;
}

static void sensor_charge(struct cpu_state *st, __u64 dt, __u64 *d, __u32 live)
{
	struct coloc_tenant_window *acc;
	struct coloc_tenant_total *tot;
	__u32 t = st->cur_tenant;

	st->win.live_mask |= live;
	if (!st->cur_idle)
		st->win.task_clock_ns += dt;
	for (__u32 i = 0; i < COLOC_NR_COUNTERS; i++)
		st->win.counters[i] += d[i];

	if (t >= COLOC_MAX_TENANTS)
		return;
	acc = bpf_map_lookup_elem(&tenant_window_acc, &t);
	tot = bpf_map_lookup_elem(&tenant_totals, &t);
	if (!acc || !tot)
		return;
	st->tenant_mask |= 1ull << t;
	acc->live_mask |= live | COLOC_LIVE_TASK_CLOCK;
	acc->on_cpu_ns += dt;
	tot->on_cpu_ns += dt;
	for (__u32 i = 0; i < COLOC_NR_COUNTERS; i++) {
		acc->counters[i] += d[i];
		tot->counters[i] += d[i];
	}
}

/*
 * Charges everything since the last call on this CPU to the task that ran
 * (st->cur_*), splitting at a window boundary: time exactly, counter deltas
 * in proportion to time.
 */
static void sensor_account(struct cpu_state *st, struct coloc_sensor_stats *stats)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 id = now / window_ns;
	__u64 d[COLOC_NR_COUNTERS];
	__u64 dt, before;
	__u32 live;

	live = sensor_read_counters(st, cpu, d);
	if (!st->last_ns) {
		st->last_ns = now;
		st->win.window_id = id;
		return;
	}
	dt = now - st->last_ns;
	st->last_ns = now;

	if (id != st->win.window_id) {
		__u64 d_before[COLOC_NR_COUNTERS];

		__u64 into_new = now - id * window_ns;

		before = into_new < dt ? dt - into_new : 0;
		for (__u32 i = 0; i < COLOC_NR_COUNTERS; i++) {
			d_before[i] = dt ? d[i] * before / dt : 0;
			d[i] -= d_before[i];
		}
		sensor_charge(st, before > window_ns ? window_ns : before, d_before, live);
		sensor_close_window(st, cpu, id, stats);
		dt -= before;
	}
	sensor_charge(st, dt, d, live);
}

static struct cpu_state *sensor_this_cpu(struct coloc_sensor_stats **stats)
{
	__u32 zero = 0;

	*stats = bpf_map_lookup_elem(&sensor_stats, &zero);
	if (!*stats)
		return NULL;
	return bpf_map_lookup_elem(&cpu_state, &zero);
}

SEC("perf_event")
int coloc_sample(struct bpf_perf_event_data *ctx)
{
	struct coloc_sensor_stats *stats;
	struct cpu_state *st = sensor_this_cpu(&stats);

	if (!st)
		return 0;
	/* whoever is interrupted has been running since the last event */
	sensor_set_running(st, bpf_get_current_task_btf());
	sensor_account(st, stats);
	st->win.nr_samples++;
	stats->samples++;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(coloc_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct coloc_sensor_stats *stats;
	struct cpu_state *st = sensor_this_cpu(&stats);

	if (!st)
		return 0;
	sensor_set_running(st, prev);
	sensor_account(st, stats);
	sensor_set_running(st, next);
	stats->switches++;
	return 0;
}
