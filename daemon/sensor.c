// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Interference sensing, user side: the libbpf-bootstrap lifecycle for
 * bpf/sensor.bpf.c. Open the skeleton, set the window length in rodata,
 * load; then for every online CPU (from hwloc) open each counter this
 * machine has (pmu.c decides: hardware ones only with a PMU, software ones
 * always) into its slot of the PERF_EVENT_ARRAY, and attach the perf_event
 * trigger to a per-CPU cpu-clock event (skeleton attach skips perf_event
 * programs, so they are attached by hand). sched_switch is attached through
 * the skeleton. Maps worth inspecting are pinned under the pin dir; closing
 * undoes everything in reverse order and removes the dir.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include <hwloc.h>
#include "sensor.skel.h"
#include "sensor.h"
#include "bpffs.h"

struct sensor {
	struct sensor_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *switch_link;
	struct pmu_info pmu;
	int nr_cpus;
	int cpus[COLOC_MAX_CPUS];
	int counter_fds[COLOC_MAX_CPUS][COLOC_NR_COUNTERS];
	int trigger_fds[COLOC_MAX_CPUS];
	struct bpf_link *trigger_links[COLOC_MAX_CPUS];
	__u32 live_mask;
	int nr_possible;
	char pin_dir[256];
	bool pinned;
	sensor_record_fn on_record;
	void *ctx;
};

/* The maps an operator inspects with `bpftool map dump pinned DIR/NAME`. */
static struct bpf_map *sensor_pinned_map(struct sensor_bpf *skel, int i)
{
	struct bpf_map *maps[] = {
		skel->maps.cpu_live,	     skel->maps.tenant_totals, skel->maps.tenant_by_tgid,
		skel->maps.tenant_by_cgroup, skel->maps.sensor_stats,
	};

	return i < (int)(sizeof(maps) / sizeof(maps[0])) ? maps[i] : NULL;
}

static bool sensor_verbose;

static int sensor_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG || !sensor_verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static int sensor_find_cpus(struct sensor *s)
{
	hwloc_topology_t topo;
	int n, err = 0;

	if (hwloc_topology_init(&topo) || hwloc_topology_load(topo))
		return -ENODEV;
	n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
	for (int i = 0; i < n; i++) {
		hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, i);

		if (pu->os_index >= COLOC_MAX_CPUS) {
			fprintf(stderr, "colocd: CPU %u is beyond the %d CPUs coloc supports\n",
				pu->os_index, COLOC_MAX_CPUS);
			err = -E2BIG;
			break;
		}
		s->cpus[s->nr_cpus++] = (int)pu->os_index;
	}
	hwloc_topology_destroy(topo);
	return s->nr_cpus ? err : -ENODEV;
}

static int sensor_open_trigger(int cpu, unsigned int hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000000ull / hz, /* cpu-clock counts nanoseconds */
	};
	int fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Fills the counter slots of one CPU; returns the mask of counters opened. */
static __u32 sensor_open_counters(struct sensor *s, int idx)
{
	int map_fd = bpf_map__fd(s->skel->maps.counters);
	int cpu = s->cpus[idx];
	__u32 opened = 0;

	for (int c = 0; c < COLOC_NR_COUNTERS; c++) {
		__u32 key = (__u32)(cpu * COLOC_NR_COUNTERS + c);
		int fd;

		if (!(s->pmu.available_mask & (1u << c)))
			continue;
		fd = pmu_open_counter(&s->pmu, c, cpu);
		if (fd < 0)
			continue;
		if (bpf_map_update_elem(map_fd, &key, &fd, BPF_ANY)) {
			close(fd);
			continue;
		}
		s->counter_fds[idx][c] = fd;
		opened |= 1u << c;
	}
	return opened;
}

static int sensor_handle_record(void *ctx, void *data, size_t size)
{
	struct sensor *s = ctx;

	if (s->on_record)
		s->on_record(s->ctx, data, size);
	return 0;
}

static int sensor_pin(struct sensor *s, const char *dir)
{
	struct bpf_map *map;
	char path[512];
	int err;

	err = bpffs_prepare_dir(dir);
	if (err)
		return err;
	snprintf(s->pin_dir, sizeof(s->pin_dir), "%s", dir);
	s->pinned = true;
	for (int i = 0; (map = sensor_pinned_map(s->skel, i)); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
		err = bpf_map__pin(map, path);
		if (err) {
			fprintf(stderr, "colocd: cannot pin map at %s: %s\n", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

int sensor_open(struct sensor **out, const struct sensor_config *cfg)
{
	struct sensor *s;
	int err;

	if (!cfg->sample_hz || cfg->sample_hz > 100000 || !cfg->window_ms)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s->counter_fds, -1, sizeof(s->counter_fds));
	memset(s->trigger_fds, -1, sizeof(s->trigger_fds));
	s->on_record = cfg->on_record;
	s->ctx = cfg->ctx;
	sensor_verbose = cfg->verbose;
	libbpf_set_print(sensor_libbpf_print);

	err = pmu_detect(&s->pmu);
	if (err)
		goto fail;
	err = sensor_find_cpus(s);
	if (err)
		goto fail;
	s->nr_possible = libbpf_num_possible_cpus();
	if (s->nr_possible <= 0) {
		err = s->nr_possible ? s->nr_possible : -ENODEV;
		goto fail;
	}

	s->skel = sensor_bpf__open();
	if (!s->skel) {
		err = -errno;
		goto fail;
	}
	s->skel->rodata->window_ns = (__u64)cfg->window_ms * 1000000ull;
	err = sensor_bpf__load(s->skel);
	if (err)
		goto fail;

	s->live_mask = ~0u;
	for (int i = 0; i < s->nr_cpus; i++)
		s->live_mask &= sensor_open_counters(s, i);

	s->switch_link = bpf_program__attach(s->skel->progs.coloc_switch);
	if (!s->switch_link) {
		err = -errno;
		goto fail;
	}
	for (int i = 0; i < s->nr_cpus; i++) {
		s->trigger_fds[i] = sensor_open_trigger(s->cpus[i], cfg->sample_hz);
		if (s->trigger_fds[i] < 0) {
			err = s->trigger_fds[i];
			fprintf(stderr, "colocd: cannot open the sampling event on CPU %d: %s\n",
				s->cpus[i], strerror(-err));
			goto fail;
		}
		s->trigger_links[i] =
			bpf_program__attach_perf_event(s->skel->progs.coloc_sample, s->trigger_fds[i]);
		if (!s->trigger_links[i]) {
			err = -errno;
			goto fail;
		}
	}

	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.records), sensor_handle_record, s, NULL);
	if (!s->rb) {
		err = -errno;
		goto fail;
	}
	if (cfg->pin_dir) {
		err = sensor_pin(s, cfg->pin_dir);
		if (err)
			goto fail;
	}
	*out = s;
	return 0;
fail:
	sensor_close(s);
	return err < 0 ? err : -EINVAL;
}

void sensor_close(struct sensor *s)
{
	struct bpf_map *map;
	char path[512];

	if (!s)
		return;
	if (s->pinned) {
		for (int i = 0; s->skel && (map = sensor_pinned_map(s->skel, i)); i++) {
			snprintf(path, sizeof(path), "%s/%s", s->pin_dir, bpf_map__name(map));
			bpf_map__unpin(map, path);
		}
		bpffs_remove_dir(s->pin_dir);
	}
	ring_buffer__free(s->rb);
	for (int i = 0; i < s->nr_cpus; i++) {
		bpf_link__destroy(s->trigger_links[i]);
		if (s->trigger_fds[i] >= 0)
			close(s->trigger_fds[i]);
		for (int c = 0; c < COLOC_NR_COUNTERS; c++)
			if (s->counter_fds[i][c] >= 0)
				close(s->counter_fds[i][c]);
	}
	bpf_link__destroy(s->switch_link);
	sensor_bpf__destroy(s->skel);
	free(s);
}

const struct pmu_info *sensor_pmu(const struct sensor *s)
{
	return &s->pmu;
}

int sensor_nr_cpus(const struct sensor *s)
{
	return s->nr_cpus;
}

const int *sensor_cpus(const struct sensor *s)
{
	return s->cpus;
}

__u32 sensor_live_mask(const struct sensor *s)
{
	return s->live_mask;
}

int sensor_epoll_fd(const struct sensor *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

int sensor_consume(struct sensor *s)
{
	return ring_buffer__consume(s->rb);
}

int sensor_tenant_add_pid(struct sensor *s, __u32 tenant, __u32 tgid)
{
	if (tenant >= COLOC_MAX_TENANTS)
		return -EINVAL;
	return bpf_map__update_elem(s->skel->maps.tenant_by_tgid, &tgid, sizeof(tgid), &tenant,
				    sizeof(tenant), BPF_ANY);
}

int sensor_tenant_add_cgroup(struct sensor *s, __u32 tenant, __u64 cgroup_id)
{
	if (tenant >= COLOC_MAX_TENANTS)
		return -EINVAL;
	return bpf_map__update_elem(s->skel->maps.tenant_by_cgroup, &cgroup_id, sizeof(cgroup_id),
				    &tenant, sizeof(tenant), BPF_ANY);
}

/* Deletes every key of a hash map whose value is `tenant`. */
static void sensor_forget_keys(struct bpf_map *map, size_t key_size, __u32 tenant)
{
	__u64 key, next;
	void *prev = NULL;
	__u32 val;

	while (!bpf_map__get_next_key(map, prev, &next, key_size)) {
		if (!bpf_map__lookup_elem(map, &next, key_size, &val, sizeof(val), 0) &&
		    val == tenant) {
			bpf_map__delete_elem(map, &next, key_size, 0);
			/* the iteration restarts: deleting invalidates `prev` */
			prev = NULL;
			continue;
		}
		key = next;
		prev = &key;
	}
}

int sensor_tenant_clear(struct sensor *s, __u32 tenant)
{
	struct coloc_tenant_total *zero;
	int err;

	if (tenant >= COLOC_MAX_TENANTS)
		return -EINVAL;
	sensor_forget_keys(s->skel->maps.tenant_by_tgid, sizeof(__u32), tenant);
	sensor_forget_keys(s->skel->maps.tenant_by_cgroup, sizeof(__u64), tenant);
	zero = calloc(s->nr_possible, sizeof(*zero));
	if (!zero)
		return -ENOMEM;
	err = bpf_map__update_elem(s->skel->maps.tenant_totals, &tenant, sizeof(tenant), zero,
				   s->nr_possible * sizeof(*zero), BPF_ANY);
	free(zero);
	return err;
}

int sensor_tenant_total(struct sensor *s, __u32 tenant, struct coloc_tenant_total *sum)
{
	struct coloc_tenant_total *per_cpu;
	int err;

	if (tenant >= COLOC_MAX_TENANTS)
		return -EINVAL;
	per_cpu = calloc(s->nr_possible, sizeof(*per_cpu));
	if (!per_cpu)
		return -ENOMEM;
	err = bpf_map__lookup_elem(s->skel->maps.tenant_totals, &tenant, sizeof(tenant), per_cpu,
				   s->nr_possible * sizeof(*per_cpu), 0);
	memset(sum, 0, sizeof(*sum));
	for (int i = 0; !err && i < s->nr_possible; i++) {
		sum->on_cpu_ns += per_cpu[i].on_cpu_ns;
		for (int c = 0; c < COLOC_NR_COUNTERS; c++)
			sum->counters[c] += per_cpu[i].counters[c];
	}
	free(per_cpu);
	return err;
}

int sensor_stats(struct sensor *s, struct coloc_sensor_stats *sum)
{
	struct coloc_sensor_stats *per_cpu;
	__u32 zero = 0;
	int err;

	per_cpu = calloc(s->nr_possible, sizeof(*per_cpu));
	if (!per_cpu)
		return -ENOMEM;
	err = bpf_map__lookup_elem(s->skel->maps.sensor_stats, &zero, sizeof(zero), per_cpu,
				   s->nr_possible * sizeof(*per_cpu), 0);
	memset(sum, 0, sizeof(*sum));
	for (int i = 0; !err && i < s->nr_possible; i++) {
		sum->samples += per_cpu[i].samples;
		sum->switches += per_cpu[i].switches;
		sum->records += per_cpu[i].records;
		sum->drops += per_cpu[i].drops;
	}
	free(per_cpu);
	return err;
}
