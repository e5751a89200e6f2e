// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Interference sensing, kernel side.
 *
 * Two programs keep, per CPU, an open window of counter deltas and task time:
 * a periodic trigger and a tp_btf program on sched_switch. The trigger is,
 * by default, an fentry program on sched_tick(): the scheduler tick the
 * kernel takes anyway (CONFIG_HZ per busy CPU, none on an idle tickless
 * one), so sensing adds no interrupt of its own. Where fentry is refused,
 * the tick is caught as one of the hrtimers the kernel expires anyway
 * (tp_btf/hrtimer_expire_entry, at most one sample per min_trigger_gap_ns so
 * that a storm of short timers does not multiply the cost). When asked for a
 * rate, the daemon attaches the perf_event program to a per-CPU cpu-clock
 * software event instead: a timer interrupt per sample, and in a VM an exit
 * too. The trigger and the switch program both call sensor_account(),
 * which reads every counter slot of this CPU from the PERF_EVENT_ARRAY
 * `counters` with bpf_perf_event_read_value(), charges the deltas since
 * the last call to the CPU's window and to the tenant that was running, and
 * closes the window when the clock has crossed into the next one: a
 * coloc_cpu_window record, plus one coloc_tenant_window per tenant seen, go
 * to the ring buffer, and the CPU's last window is kept in the pinned array
 * `cpu_live`.
 *
 * The same accounting keeps running totals that never close: per CPU the
 * time any task ran (`cpu_totals`), and per real uid of a tenant's owner
 * (`uid_totals`) the time its tasks ran, of a tenant or not; with each tenant's
 * own (`tenant_totals`: every thread of its processes, those that come and
 * go between colocd's looks too) colocd excuses a late command's wait for
 * a CPU only up to what tasks of neither ran on its cores
 * (daemon/serving_cpu_wait.c).
 *
 * Reading at each context switch is what makes per-tenant attribution exact
 * at switch granularity; the periodic trigger bounds how stale a window gets
 * on a CPU that does not switch. A CPU that gets neither (idle, tickless)
 * runs nothing to account: its open window is closed by its next event, and
 * the windows it skipped have no record. Which counter slots hold an event
 * is the daemon's choice (hardware ones only where there is a PMU); a slot
 * without an event, or whose event never got a hardware counter during the
 * interval, fails to read and its live bit stays clear: nothing is invented.
 *
 * Records are submitted without waking the reader unless a lot is pending:
 * colocd drains the ring on a timer, so the cost is not one wakeup per
 * record per CPU.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "coloc/sensor.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 window_ns = 10 * 1000 * 1000;
/*
 * Counters read at every context switch: those per-tenant attribution needs
 * (the hardware ones the machine has). The others are read by the periodic
 * trigger, and by a switch only when none was read for a sample period: an
 * idle CPU may get no trigger for a long time (tickless idle), yet a switch
 * must stay cheap.
 */
const volatile __u32 switch_counter_mask = COLOC_HW_COUNTER_MASK;
/* The slots that hold an event on this machine: the others are never read. */
const volatile __u32 present_counter_mask = ~0u;
/* How often the periodic trigger fires on a busy CPU (the tick or the timer). */
const volatile __u64 sample_period_ns = 4 * 1000 * 1000;
/*
 * The hrtimer trigger's shortest gap between samples on a CPU: below the
 * tick period (4 ms at CONFIG_HZ=250) by enough that a late tick is not
 * skipped, so every tick is a sample; other timers in between are not.
 */
const volatile __u64 min_trigger_gap_ns = 2 * 1000 * 1000;
/* Set by the daemon when a tenant is keyed by cgroup: only then walk cgroups. */
volatile __u32 nr_cgroup_tenants;

#define SENSOR_CGROUP_DEPTH 32 /* ancestors searched for a tenant's cgroup (protocol.h) */
#define SENSOR_WAKEUP_BYTES (256 * 1024) /* wake the reader only past this backlog */

struct counter_reading {
	__u64 counter, enabled, running;
};

struct cpu_state {
	__u64 last_ns; /* time of the last sensor_account() on this CPU */
	__u64 last_full_read_ns; /* time every counter was last read */
	__u64 last_trigger_ns; /* time of the last periodic sample */
	struct counter_reading prev[COLOC_NR_COUNTERS]; /* raw readings at last_ns */
	__u32 prev_valid; /* bit n: prev[n] holds a reading */
	__u32 cur_tenant; /* tenant running since last_ns, or COLOC_NO_TENANT */
	__u32 cur_idle; /* the idle task runs since last_ns */
	__u32 cur_uid; /* its real uid */
	__u32 cur_by_owner; /* it is a tenant's and cur_uid owns one (uid_totals) */
	__u64 tenant_mask; /* tenants charged in the open window */
	struct coloc_cpu_window win; /* the open window */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, COLOC_MAX_CPUS *COLOC_NR_COUNTERS); /* sized to the machine at load */
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
	__uint(max_entries, COLOC_MAX_CPUS); /* sized to the machine at load */
	__type(key, __u32);
	__type(value, struct coloc_cpu_window);
} cpu_live SEC(".maps");

/*
 * Which tenant's block holds each core: written by colocd only, pinned so
 * that an operator sees it with bpftool.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, COLOC_MAX_CPUS); /* sized to the machine at load */
	__type(key, __u32);
	__type(value, struct coloc_core_owner);
} core_owner SEC(".maps");

/*
 * A hash, so that only the tenants in use have an entry (a dump shows
 * them, not 64 slots): the daemon creates the entry when it gives a tenant
 * its first process or cgroup and deletes it when it clears the tenant.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, COLOC_MAX_TENANTS);
	__type(key, __u32); /* tenant */
	__type(value, struct coloc_tenant_total);
} tenant_totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* COLOC_MAX_TENANTS x TENANT_MAX_PIDS */
	__type(key, __u32); /* tgid */
	__type(value, __u32); /* tenant */
} tenant_by_tgid SEC(".maps");

/* Added by the daemon only, for the owners of tenants (a few in use: not preallocated). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32); /* real uid */
	__type(value, struct coloc_uid_total);
} uid_totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct coloc_cpu_total);
} cpu_totals SEC(".maps");

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

/* The tenant of a task: by its process, else by its cgroup v2 or an ancestor. */
static __u32 sensor_tenant_of(struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	struct cgroup *cgrp;
	__u32 *tenant;

	tenant = bpf_map_lookup_elem(&tenant_by_tgid, &tgid);
	if (tenant)
		return *tenant;
	if (!nr_cgroup_tenants)
		return COLOC_NO_TENANT;
	cgrp = BPF_CORE_READ(task, cgroups, dfl_cgrp);
	for (int depth = 0; depth < SENSOR_CGROUP_DEPTH && cgrp; depth++) {
		__u64 cgid = BPF_CORE_READ(cgrp, kn, id);
		struct cgroup_subsys_state *parent;

		tenant = bpf_map_lookup_elem(&tenant_by_cgroup, &cgid);
		if (tenant)
			return *tenant;
		parent = BPF_CORE_READ(cgrp, self.parent);
		cgrp = parent ? BPF_CORE_READ(parent, cgroup) : NULL;
	}
	return COLOC_NO_TENANT;
}

static void sensor_set_running(struct cpu_state *st, struct task_struct *task)
{
	st->cur_idle = BPF_CORE_READ(task, pid) == 0;
	st->cur_tenant = st->cur_idle ? COLOC_NO_TENANT : sensor_tenant_of(task);
	st->cur_uid = BPF_CORE_READ(task, real_cred, uid.val);
}

/*
 * The running totals that are not a tenant's (sensor_charge keeps those):
 * dt to this CPU's busy time and, for a task whose uid owns a tenant, to
 * that uid's, whatever tenant holds the task: a member that attributes its
 * own task to another tenant of its own keeps it its own (s27 attack5 F2).
 * True where the task is also a tenant's (its owners_ns then gets dt,
 * st->cur_by_owner).
 */
static bool sensor_charge_totals(struct cpu_state *st, __u64 dt)
{
	struct coloc_cpu_total *cpu;
	struct coloc_uid_total *uid;
	__u32 zero = 0;

	if (st->cur_idle)
		return false;
	cpu = bpf_map_lookup_elem(&cpu_totals, &zero);
	if (cpu)
		cpu->busy_ns += dt;
	uid = bpf_map_lookup_elem(&uid_totals, &st->cur_uid);
	if (!uid)
		return false;
	uid->on_cpu_ns += dt;
	return st->cur_tenant != COLOC_NO_TENANT;
}

/*
 * Scales a counter delta to the time its event was enabled, when it only ran
 * part of it (multiplexed with other events). Ratios are computed on the
 * interval's deltas, with enabled/running reduced to 32 bits first so that
 * nothing overflows.
 */
static __u64 sensor_scale(__u64 dc, __u64 de, __u64 dr)
{
	__u64 ratio;

	if (dr >= de)
		return dc;
	while (de > 0xffffffffull) {
		de >>= 1;
		dr >>= 1;
	}
	if (!dr)
		return dc;
	ratio = (de << 10) / dr; /* enabled/running in 1/1024ths */
	return (dc >> 10) * ratio + ((dc & 1023) * ratio >> 10);
}

/*
 * Reads the counter slots of this CPU in mask; returns the live mask, deltas
 * in d[]. A slot is live when it reads and its event ran on the PMU during
 * the interval (running advanced); otherwise its delta stays 0 and unlive.
 * A slot not read keeps its last reading, so the next read has the delta.
 */
static __u32 sensor_read_counters(struct cpu_state *st, __u32 cpu, __u32 mask,
				  struct coloc_counters *deltas)
{
	__u64 *d = coloc_counter_at(deltas, 0);
	struct bpf_perf_event_value v;
	__u32 live = 0;

	for (__u32 i = 0; i < COLOC_NR_COUNTERS; i++) {
		struct counter_reading *prev = &st->prev[i];
		bool had = st->prev_valid & (1u << i);

		d[i] = 0;
		if (!(mask & (1u << i)))
			continue;
		if (bpf_perf_event_read_value(&counters, cpu * COLOC_NR_COUNTERS + i, &v,
					      sizeof(v))) {
			st->prev_valid &= ~(1u << i);
			continue;
		}
		if (had && v.counter >= prev->counter && v.running > prev->running) {
			d[i] = sensor_scale(v.counter - prev->counter, v.enabled - prev->enabled,
					    v.running - prev->running);
			live |= 1u << i;
		}
		prev->counter = v.counter;
		prev->enabled = v.enabled;
		prev->running = v.running;
		st->prev_valid |= 1u << i;
	}
	return live;
}

static __u64 sensor_wakeup_flag(void)
{
	return bpf_ringbuf_query(&records, BPF_RB_AVAIL_DATA) > SENSOR_WAKEUP_BYTES ?
		       0 :
		       BPF_RB_NO_WAKEUP;
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
			bpf_ringbuf_submit(rec, sensor_wakeup_flag());
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
		bpf_ringbuf_submit(rec, sensor_wakeup_flag());
		stats->records++;
	} else {
		stats->drops++;
	}
	sensor_emit_tenants(st, cpu, stats);
	__builtin_memset(&st->win, 0, sizeof(st->win));
	st->win.live_mask = COLOC_LIVE_TASK_CLOCK;
	st->win.window_id = new_id;
}

/*
 * Charges dt and counter deltas d to the running tenant's totals and, when
 * in_window, to the open window of the CPU and of the tenant. Time in
 * windows that were skipped entirely (no event on this CPU for a whole
 * window) only reaches the totals: those windows have no record.
 */
static void sensor_add(struct coloc_counters *to, const struct coloc_counters *d)
{
	for (__u32 i = 0; i < COLOC_NR_COUNTERS; i++)
		*coloc_counter_at(to, i) += coloc_counter_get(d, i);
}

static void sensor_charge(struct cpu_state *st, __u64 dt, const struct coloc_counters *d,
			  __u32 live, bool in_window)
{
	struct coloc_tenant_window *acc;
	struct coloc_tenant_total *tot;
	__u32 t = st->cur_tenant;

	if (in_window) {
		st->win.live_mask |= live | COLOC_LIVE_TASK_CLOCK;
		if (!st->cur_idle)
			st->win.task_clock_ns += dt;
		sensor_add(&st->win.counters, d);
	}
	if (t >= COLOC_MAX_TENANTS)
		return;
	acc = bpf_map_lookup_elem(&tenant_window_acc, &t);
	tot = bpf_map_lookup_elem(&tenant_totals, &t);
	if (!acc || !tot)
		return;
	tot->on_cpu_ns += dt;
	if (st->cur_by_owner)
		tot->owners_ns += dt;
	sensor_add(&tot->counters, d);
	if (!in_window)
		return;
	st->tenant_mask |= 1ull << t;
	acc->live_mask |= live | COLOC_LIVE_TASK_CLOCK;
	acc->on_cpu_ns += dt;
	sensor_add(&acc->counters, d);
}

/* d * num / den for num <= den, without overflowing 64 bits. */
static __u64 sensor_part(__u64 d, __u64 num, __u64 den)
{
	if (!den)
		return 0;
	while (den > 0x7fffffffull) {
		den >>= 1;
		num >>= 1;
	}
	if (!den)
		return 0;
	return d / den * num + d % den * num / den;
}

/* Moves the share num/den of every counter in d to part. */
static void sensor_split(struct coloc_counters *d, struct coloc_counters *part, __u64 num,
			 __u64 den)
{
	for (__u32 i = 0; i < COLOC_NR_COUNTERS; i++) {
		__u64 *from = coloc_counter_at(d, i), *to = coloc_counter_at(part, i);

		*to = sensor_part(*from, num, den);
		*from -= *to;
	}
}

/*
 * Charges everything since the last call on this CPU to the task that ran
 * (st->cur_*). When the clock crossed into a later window, the interval is
 * split: the rest of the open window, whole windows skipped in between, and
 * the start of the current one; time exactly, counter deltas in proportion.
 */
static void sensor_account(struct cpu_state *st, __u32 mask, struct coloc_sensor_stats *stats)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 id = now / window_ns;
	struct coloc_counters d, part;
	__u64 dt, in_old, in_new, gap, old_end;
	__u32 live;

	if (now - st->last_full_read_ns >= sample_period_ns)
		mask = ~0u;
	if (mask == ~0u)
		st->last_full_read_ns = now;
	live = sensor_read_counters(st, cpu, mask & present_counter_mask, &d);
	if (!st->last_ns) {
		st->last_ns = now;
		st->win.window_id = id;
		st->win.live_mask = COLOC_LIVE_TASK_CLOCK;
		return;
	}
	dt = now - st->last_ns;
	st->cur_by_owner = sensor_charge_totals(st, dt);
	if (id == st->win.window_id) {
		st->last_ns = now;
		sensor_charge(st, dt, &d, live, true);
		return;
	}

	old_end = (st->win.window_id + 1) * window_ns;
	in_old = old_end > st->last_ns ? old_end - st->last_ns : 0;
	if (in_old > dt)
		in_old = dt;
	in_new = now - id * window_ns;
	if (in_new > dt - in_old)
		in_new = dt - in_old;
	gap = dt - in_old - in_new;
	st->last_ns = now;

	sensor_split(&d, &part, in_old, dt);
	sensor_charge(st, in_old, &part, live, true);
	sensor_split(&d, &part, gap, gap + in_new);
	sensor_charge(st, gap, &part, live, false);
	sensor_close_window(st, cpu, id, stats);
	sensor_charge(st, in_new, &d, live, true);
}

static struct cpu_state *sensor_this_cpu(struct coloc_sensor_stats **stats)
{
	__u32 zero = 0;

	*stats = bpf_map_lookup_elem(&sensor_stats, &zero);
	if (!*stats)
		return NULL;
	return bpf_map_lookup_elem(&cpu_state, &zero);
}

static void sensor_on_trigger(__u64 min_gap_ns)
{
	struct coloc_sensor_stats *stats;
	struct cpu_state *st = sensor_this_cpu(&stats);
	__u64 now = bpf_ktime_get_ns();

	if (!st || now - st->last_trigger_ns < min_gap_ns)
		return;
	st->last_trigger_ns = now;
	/* whoever is interrupted has been running since the last event */
	sensor_set_running(st, bpf_get_current_task_btf());
	sensor_account(st, ~0u, stats);
	st->win.nr_samples++;
	stats->samples++;
}

/* The default trigger: the scheduler tick, which runs whether we watch or not. */
SEC("fentry/sched_tick")
int BPF_PROG(coloc_tick)
{
	sensor_on_trigger(0);
	return 0;
}

/* Where fentry is refused: the timer interrupts the kernel takes anyway, the tick among them. */
SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(coloc_hrtimer)
{
	sensor_on_trigger(min_trigger_gap_ns);
	return 0;
}

/* The timer trigger: a cpu-clock software event at the rate asked for. */
SEC("perf_event")
int coloc_sample(struct bpf_perf_event_data *ctx)
{
	sensor_on_trigger(0);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(coloc_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct coloc_sensor_stats *stats;
	struct cpu_state *st = sensor_this_cpu(&stats);

	if (!st)
		return 0;
	/*
	 * prev ran since the last event. Who runs next is learnt at the next
	 * event (a switch names it prev, the trigger finds it current), so it
	 * is not looked up here: a switch stays cheap.
	 */
	sensor_set_running(st, prev);
	sensor_account(st, switch_counter_mask, stats);
	stats->switches++;
	return 0;
}
