/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The user side of interference sensing: loads bpf/sensor.bpf.c, fills its
 * counter slots with this machine's perf events, attaches the periodic
 * trigger (the scheduler tick, or a cpu-clock timer on every online CPU) and
 * sched_switch, pins the maps for bpftool, and hands ring-buffer records to
 * a callback.
 */
#ifndef COLOC_DAEMON_SENSOR_H
#define COLOC_DAEMON_SENSOR_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "coloc/sensor.h"
#include "error.h"
#include "pmu.h"

struct sensor;

/* Called for each ring-buffer record (a coloc_cpu_window or coloc_tenant_window). */
typedef void (*sensor_record_fn)(void *ctx, const void *rec, size_t size);

/*
 * The rate of the cpu-clock timer used where the scheduler tick cannot be
 * (CONFIG_HZ=250 is the common tick rate, so windows see about as many samples).
 */
#define SENSOR_FALLBACK_HZ 250
/* The shortest window in tick mode: a tick every 10 ms even at CONFIG_HZ=100. */
#define SENSOR_TICK_MIN_WINDOW_MS 10

struct topology;
struct bpffs_dir;

struct sensor_config {
	/*
	 * 0: sample on the scheduler tick (no interrupt of our own), falling
	 * back to a SENSOR_FALLBACK_HZ timer where fentry on sched_tick is not
	 * available. N: a cpu-clock timer at N Hz per CPU.
	 */
	unsigned int sample_hz;
	/* record window; with a timer sample_hz * window_ms >= 1000, with the tick >= 10 ms */
	unsigned int window_ms;
	const char *pin_dir; /* NULL: do not pin */
	const struct topology *topo; /* the CPUs to watch; NULL: read it here */
	bool verbose; /* libbpf's messages */
	sensor_record_fn on_record;
	void *ctx;
};

/* On failure returns a negative errno and says why in err (which may be NULL). */
int sensor_open(struct sensor **out, const struct sensor_config *cfg, struct coloc_err *err);
/* Detaches everything, unpins and removes the pin dir. NULL is fine. */
void sensor_close(struct sensor *s);

const struct pmu_info *sensor_pmu(const struct sensor *s);
int sensor_nr_cpus(const struct sensor *s);
/* OS ids of the online CPUs the sensor watches, sorted. */
const int *sensor_cpus(const struct sensor *s);
/*
 * How samples are taken, in words for a log line: "the scheduler tick" or
 * "a 250 Hz timer", with the reason when the tick was wanted but unavailable.
 */
const char *sensor_trigger_desc(const struct sensor *s);
/* Live mask of the counters opened on every watched CPU. */
__u32 sensor_live_mask(const struct sensor *s);

/* An fd that is readable when records wait; then call sensor_consume(). */
int sensor_epoll_fd(const struct sensor *s);
int sensor_consume(struct sensor *s);

/* Attribute a process (all its threads) or a cgroup v2 (by id) to a tenant slot. */
int sensor_tenant_add_pid(struct sensor *s, __u32 tenant, __u32 tgid);
int sensor_tenant_add_cgroup(struct sensor *s, __u32 tenant, __u64 cgroup_id);
/* Forget one process (it exited). */
int sensor_tenant_remove_pid(struct sensor *s, __u32 tgid);
/* Forget every pid and cgroup of the tenant and zero its totals and open windows. */
int sensor_tenant_clear(struct sensor *s, __u32 tenant);
/* Cumulative totals of a tenant, summed over CPUs. */
int sensor_tenant_total(struct sensor *s, __u32 tenant, struct coloc_tenant_total *sum);
int sensor_stats(struct sensor *s, struct coloc_sensor_stats *sum);

/*
 * Count the tasks of real uid `uid` that are of no tenant (uid_totals),
 * from now on, as its tenants' own in sensor_others_ns. Kept once added.
 */
int sensor_owner_add(struct sensor *s, __u32 uid);
/*
 * The time tasks of neither tenant nor (unless 0) of uid owner (added with
 * sensor_owner_add; in any tenant) ran on cpus[0..nr), summed, a running
 * total (cpu_totals less tenant_totals and what uid_totals has outside
 * the tenant, its owners_ns): what it grew by between
 * two reads is what they ran in between. -ENOENT: the tenant has no
 * totals (nothing attributed to it, or cleared); -EINVAL: a tenant or CPU
 * outside range.
 */
int sensor_others_ns(struct sensor *s, __u32 tenant, __u32 owner, const int *cpus, int nr,
		     __u64 *ns);
/*
 * The same per CPU, in one read of each map: others[i] on cpus[i], and
 * (own not NULL) own[i] the time the tenant's tasks ran there (tenant_totals).
 */
int sensor_cpu_times(struct sensor *s, __u32 tenant, __u32 owner, const int *cpus, int nr,
		     uint64_t *others, uint64_t *own);

/*
 * Core ownership, in the pinned array `core_owner` (struct coloc_core_owner
 * per OS CPU id): set when a tenant's block [first_layer, last_layer] of
 * query `query` gets the core, cleared when the core is free again. Both
 * stamp since_ns with CLOCK_MONOTONIC. -EINVAL for a CPU outside the
 * machine, a tenant id >= COLOC_MAX_TENANTS, a negative first layer or a
 * last layer before the first; otherwise what the map update returns.
 */
int sensor_core_owner_set(struct sensor *s, int cpu, __u32 tenant_id, __u64 query, int first_layer,
			  int last_layer);
int sensor_core_owner_clear(struct sensor *s, int cpu);

/* The pin dir and what preparing it did (a bpffs mount, stale pins removed); NULL if unpinned. */
const struct bpffs_dir *sensor_pin_dir(const struct sensor *s);

#endif /* COLOC_DAEMON_SENSOR_H */
