// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Interference sensing, user side: the libbpf-bootstrap lifecycle for
 * bpf/sensor.bpf.c. Open the skeleton, set the window length in rodata and
 * size the per-CPU maps to this machine, load; then for every online CPU
 * (from the topology) open each counter this machine has (pmu.c decides: hardware
 * ones only with a PMU, software ones always) into its slot of the
 * PERF_EVENT_ARRAY, and attach the periodic trigger. By default that is
 * fentry on sched_tick (no interrupt of our own); where fentry is refused,
 * the hrtimer expiry tracepoint (still no interrupt of our own); where that
 * fails too, or when a rate is asked for, the perf_event program on a
 * per-CPU cpu-clock event (skeleton attach skips perf_event programs, so
 * they are attached by hand).
 * sched_switch is attached through the skeleton. Maps worth inspecting are
 * pinned under the pin dir; closing undoes everything in reverse order and
 * removes the dir.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "sensor.skel.h"
#include "sensor.h"
#include "topology.h"
#include "bpffs.h"
#include "mono_clock.h"

struct sensor {
	struct sensor_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *switch_link;
	struct bpf_link *trigger_link; /* the tick or hrtimer trigger */
	struct pmu_info pmu;
	int nr_cpus;
	int cpus[COLOC_MAX_CPUS];
	struct bpf_link *trigger_links[COLOC_MAX_CPUS];
	__u32 live_mask;
	int nr_possible;
	struct bpffs_dir pin_dir;
	bool pinned;
	sensor_record_fn on_record;
	void *ctx;
	char trigger_desc[2 * COLOC_ERR_MSG_MAX + 128];
};

/* The maps an operator inspects with `bpftool map dump pinned DIR/NAME`. */
static const char *const sensor_pin_names[] = {
	"cpu_live",	    "tenant_totals", "tenant_by_tgid",
	"tenant_by_cgroup", "sensor_stats",  "core_owner",
	"cpu_totals",	    "uid_totals",
};
#define SENSOR_NR_PINS ((int)(sizeof(sensor_pin_names) / sizeof(sensor_pin_names[0])))

static bool sensor_verbose;

static int sensor_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG || !sensor_verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

/* Every CPU of the machine, also those outside colocd's own cpuset (topology.h). */
static int sensor_find_cpus(struct sensor *s, const struct topology *topo, struct coloc_err *err)
{
	struct topology *own = NULL;
	int ret;

	if (!topo) {
		ret = topology_open(NULL, &own, err);
		if (ret)
			return ret;
		topo = own;
	}
	s->nr_cpus = topology_nr_cpus(topo);
	memcpy(s->cpus, topology_cpus(topo), (size_t)s->nr_cpus * sizeof(s->cpus[0]));
	topology_close(own);
	if (!s->nr_cpus)
		return coloc_err_set(err, -ENODEV, "the topology shows no CPU on this machine");
	return 0;
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

/*
 * Fills the counter slots of one CPU; returns the mask of counters opened.
 * A counter that does not open is left out of the mask (the live mask and
 * colocd's signals line then show it absent). The map keeps each event
 * alive while the skeleton holds the map, so the fds are closed at once: a
 * big machine would otherwise run out of them.
 */
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
		if (!bpf_map_update_elem(map_fd, &key, &fd, BPF_ANY))
			opened |= 1u << c;
		close(fd);
	}
	return opened;
}

/* Each CPU holds a few perf fds while attaching: use the hard limit. */
static void sensor_raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int sensor_handle_record(void *ctx, void *data, size_t size)
{
	struct sensor *s = ctx;

	if (s->on_record)
		s->on_record(s->ctx, data, size);
	return 0;
}

static int sensor_pin(struct sensor *s, const char *dir, struct coloc_err *err)
{
	char path[BPFFS_PATH_MAX + 64];
	int ret;

	ret = bpffs_open_dir(&s->pin_dir, dir, sensor_pin_names, SENSOR_NR_PINS, err);
	if (ret)
		return ret;
	s->pinned = true;
	for (int i = 0; i < SENSOR_NR_PINS; i++) {
		struct bpf_map *map =
			bpf_object__find_map_by_name(s->skel->obj, sensor_pin_names[i]);

		snprintf(path, sizeof(path), "%s/%s", dir, sensor_pin_names[i]);
		ret = map ? bpf_map__pin(map, path) : -ENOENT;
		if (ret)
			return coloc_err_set(err, ret, "cannot pin map at %s: %s", path,
					     strerror(-ret));
	}
	return 0;
}

/* Detaches the triggers and sched_switch and frees the BPF object. */
static void sensor_unload(struct sensor *s)
{
	for (int i = 0; i < s->nr_cpus; i++) {
		bpf_link__destroy(s->trigger_links[i]);
		s->trigger_links[i] = NULL;
	}
	bpf_link__destroy(s->trigger_link);
	bpf_link__destroy(s->switch_link);
	sensor_bpf__destroy(s->skel);
	s->trigger_link = NULL;
	s->switch_link = NULL;
	s->skel = NULL;
}

static int sensor_attach_timer(struct sensor *s, unsigned int hz, struct coloc_err *err)
{
	for (int i = 0; i < s->nr_cpus; i++) {
		int fd = sensor_open_trigger(s->cpus[i], hz);

		if (fd < 0)
			return coloc_err_set(err, fd,
					     "cannot open the %u Hz sampling event on CPU %d: %s",
					     hz, s->cpus[i], strerror(-fd));
		/* on success the link owns fd and closes it when destroyed */
		s->trigger_links[i] =
			bpf_program__attach_perf_event(s->skel->progs.coloc_sample, fd);
		if (!s->trigger_links[i]) {
			int ret = -errno;

			close(fd);
			return coloc_err_set(err, ret,
					     "cannot attach the sampling program on CPU %d: %s",
					     s->cpus[i], strerror(-ret));
		}
	}
	return 0;
}

enum sensor_trigger {
	SENSOR_TRIGGER_TICK, /* fentry on sched_tick */
	SENSOR_TRIGGER_HRTIMER, /* tp_btf on hrtimer_expire_entry */
	SENSOR_TRIGGER_TIMER, /* a cpu-clock perf event per CPU */
};

static struct bpf_program *sensor_trigger_prog(struct sensor_bpf *skel, enum sensor_trigger t)
{
	struct bpf_program *progs[] = {
		[SENSOR_TRIGGER_TICK] = skel->progs.coloc_tick,
		[SENSOR_TRIGGER_HRTIMER] = skel->progs.coloc_hrtimer,
		[SENSOR_TRIGGER_TIMER] = skel->progs.coloc_sample,
	};

	return progs[t];
}

/*
 * Opens, sizes, loads and attaches the BPF side with one trigger (hz is the
 * timer's rate).
 */
static int sensor_load(struct sensor *s, enum sensor_trigger trigger, unsigned int hz,
		       unsigned int window_ms, struct coloc_err *err)
{
	struct sensor_bpf *skel;
	int ret;

	skel = s->skel = sensor_bpf__open();
	if (!skel)
		return coloc_err_set(err, -errno, "cannot open the BPF object: %s",
				     strerror(errno));
	skel->rodata->window_ns = (__u64)window_ms * 1000000ull;
	skel->rodata->switch_counter_mask = s->pmu.available_mask & COLOC_HW_COUNTER_MASK;
	skel->rodata->sample_period_ns =
		1000000000ull / (trigger == SENSOR_TRIGGER_TIMER ? hz : SENSOR_FALLBACK_HZ);
	skel->rodata->present_counter_mask = s->pmu.available_mask;
	/* indexed by OS CPU id, which is below the number of possible CPUs */
	bpf_map__set_max_entries(skel->maps.counters, s->nr_possible * COLOC_NR_COUNTERS);
	bpf_map__set_max_entries(skel->maps.cpu_live, s->nr_possible);
	bpf_map__set_max_entries(skel->maps.core_owner, s->nr_possible);
	/* only the trigger used is loaded: a kernel may refuse the others */
	bpf_program__set_autoload(skel->progs.coloc_tick, trigger == SENSOR_TRIGGER_TICK);
	bpf_program__set_autoload(skel->progs.coloc_hrtimer, trigger == SENSOR_TRIGGER_HRTIMER);
	bpf_program__set_autoload(skel->progs.coloc_sample, trigger == SENSOR_TRIGGER_TIMER);
	ret = sensor_bpf__load(skel);
	if (ret)
		return coloc_err_set(err, ret, "cannot load the BPF programs: %s%s", strerror(-ret),
				     sensor_verbose ? "" : " (run with -v for libbpf's messages)");

	for (int cpu = 0; cpu < s->nr_possible; cpu++) {
		ret = sensor_core_owner_clear(s, cpu);
		if (ret)
			return coloc_err_set(err, ret, "cannot mark CPU %d free in core_owner: %s",
					     cpu, strerror(-ret));
	}

	s->live_mask = ~0u;
	for (int i = 0; i < s->nr_cpus; i++)
		s->live_mask &= sensor_open_counters(s, i);

	s->switch_link = bpf_program__attach(skel->progs.coloc_switch);
	if (!s->switch_link)
		return coloc_err_set(err, -errno, "cannot attach to sched_switch: %s",
				     strerror(errno));
	if (trigger == SENSOR_TRIGGER_TIMER)
		return sensor_attach_timer(s, hz, err);
	s->trigger_link = bpf_program__attach(sensor_trigger_prog(skel, trigger));
	if (!s->trigger_link)
		return coloc_err_set(err, -errno, "cannot attach %s: %s",
				     bpf_program__section_name(sensor_trigger_prog(skel, trigger)),
				     strerror(errno));
	return 0;
}

/*
 * Samples on the tick where fentry is allowed, else on the hrtimer expiries
 * (the tick among them), else on a timer of our own; the description says
 * which, and why the tick was not used.
 */
static int sensor_load_default(struct sensor *s, unsigned int window_ms, struct coloc_err *err)
{
	struct coloc_err why_not_tick = { 0 }, why_not_hrtimer = { 0 };

	if (!sensor_load(s, SENSOR_TRIGGER_TICK, 0, window_ms, &why_not_tick)) {
		snprintf(s->trigger_desc, sizeof(s->trigger_desc),
			 "the scheduler tick (fentry/sched_tick)");
		return 0;
	}
	sensor_unload(s);
	if (!sensor_load(s, SENSOR_TRIGGER_HRTIMER, 0, window_ms, &why_not_hrtimer)) {
		snprintf(s->trigger_desc, sizeof(s->trigger_desc),
			 "the kernel's timer interrupts, the tick among them "
			 "(tp_btf/hrtimer_expire_entry; fentry/sched_tick refused: %s)",
			 coloc_err_str(&why_not_tick));
		return 0;
	}
	sensor_unload(s);
	snprintf(s->trigger_desc, sizeof(s->trigger_desc),
		 "a %u Hz timer (the scheduler tick cannot be traced here: fentry/sched_tick: %s; "
		 "tp_btf/hrtimer_expire_entry: %s)",
		 SENSOR_FALLBACK_HZ, coloc_err_str(&why_not_tick), coloc_err_str(&why_not_hrtimer));
	return sensor_load(s, SENSOR_TRIGGER_TIMER, SENSOR_FALLBACK_HZ, window_ms, err);
}

int sensor_open(struct sensor **out, const struct sensor_config *cfg, struct coloc_err *err)
{
	struct sensor *s;
	int ret;

	*out = NULL;
	if (!cfg->window_ms)
		return coloc_err_set(err, -EINVAL, "the window length must be at least 1 ms");
	if (cfg->sample_hz > 100000)
		return coloc_err_set(err, -EINVAL, "a sampling rate of %u Hz is above 100000 Hz",
				     cfg->sample_hz);
	/* at least one periodic sample per window, or windows go missing */
	if (cfg->sample_hz && (__u64)cfg->sample_hz * cfg->window_ms < 1000)
		return coloc_err_set(err, -EINVAL,
				     "%u Hz gives less than one sample per %u ms window",
				     cfg->sample_hz, cfg->window_ms);
	if (!cfg->sample_hz && cfg->window_ms < SENSOR_TICK_MIN_WINDOW_MS)
		return coloc_err_set(err, -EINVAL,
				     "%u ms windows are shorter than the scheduler tick may be "
				     "(%d ms at CONFIG_HZ=100); use a timer rate or longer windows",
				     cfg->window_ms, SENSOR_TICK_MIN_WINDOW_MS);
	s = calloc(1, sizeof(*s));
	if (!s)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	s->pin_dir.lock_fd = -1;
	sensor_raise_fd_limit();
	s->on_record = cfg->on_record;
	s->ctx = cfg->ctx;
	sensor_verbose = cfg->verbose;
	libbpf_set_print(sensor_libbpf_print);

	ret = pmu_detect(&s->pmu);
	if (ret) {
		coloc_err_set(err, ret, "cannot probe the perf events: %s", strerror(-ret));
		goto fail;
	}
	ret = sensor_find_cpus(s, cfg->topo, err);
	if (ret)
		goto fail;
	s->nr_possible = libbpf_num_possible_cpus();
	if (s->nr_possible <= 0) {
		ret = coloc_err_set(err, s->nr_possible ? s->nr_possible : -ENODEV,
				    "cannot read the number of possible CPUs");
		goto fail;
	}
	if (s->cpus[s->nr_cpus - 1] >= s->nr_possible) {
		ret = coloc_err_set(err, -ERANGE, "CPU %d is beyond the %d possible CPUs",
				    s->cpus[s->nr_cpus - 1], s->nr_possible);
		goto fail;
	}

	if (cfg->sample_hz) {
		snprintf(s->trigger_desc, sizeof(s->trigger_desc), "a %u Hz timer", cfg->sample_hz);
		ret = sensor_load(s, SENSOR_TRIGGER_TIMER, cfg->sample_hz, cfg->window_ms, err);
	} else {
		ret = sensor_load_default(s, cfg->window_ms, err);
	}
	if (ret)
		goto fail;

	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.records), sensor_handle_record, s, NULL);
	if (!s->rb) {
		ret = coloc_err_set(err, -errno, "cannot map the ring buffer: %s", strerror(errno));
		goto fail;
	}
	if (cfg->pin_dir) {
		ret = sensor_pin(s, cfg->pin_dir, err);
		if (ret)
			goto fail;
	}
	*out = s;
	return 0;
fail:
	sensor_close(s);
	return ret < 0 ? ret : -EINVAL;
}

void sensor_close(struct sensor *s)
{
	char path[BPFFS_PATH_MAX + 64];

	if (!s)
		return;
	if (s->pinned) {
		/* unlink by name: a pin that failed half-way is not in the map's state */
		for (int i = 0; i < SENSOR_NR_PINS; i++) {
			snprintf(path, sizeof(path), "%s/%s", s->pin_dir.path, sensor_pin_names[i]);
			unlink(path);
		}
		bpffs_close_dir(&s->pin_dir);
	}
	ring_buffer__free(s->rb);
	sensor_unload(s);
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

const char *sensor_trigger_desc(const struct sensor *s)
{
	return s->trigger_desc;
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

/*
 * Gives the tenant its (zero) entry in tenant_totals, where the BPF side
 * charges it; -EINVAL for a tenant number out of range.
 */
static int sensor_tenant_open_totals(struct sensor *s, __u32 tenant)
{
	struct coloc_tenant_total *zero;
	int err;

	if (tenant >= COLOC_MAX_TENANTS)
		return -EINVAL;
	zero = calloc(s->nr_possible, sizeof(*zero));
	if (!zero)
		return -ENOMEM;
	err = bpf_map__update_elem(s->skel->maps.tenant_totals, &tenant, sizeof(tenant), zero,
				   s->nr_possible * sizeof(*zero), BPF_NOEXIST);
	free(zero);
	return err == -EEXIST ? 0 : err;
}

int sensor_owner_add(struct sensor *s, __u32 uid)
{
	struct coloc_uid_total *zero = calloc(s->nr_possible, sizeof(*zero));
	int err;

	if (!zero)
		return -ENOMEM;
	err = bpf_map__update_elem(s->skel->maps.uid_totals, &uid, sizeof(uid), zero,
				   s->nr_possible * sizeof(*zero), BPF_NOEXIST);
	free(zero);
	return err == -EEXIST ? 0 : err;
}

int sensor_tenant_add_pid(struct sensor *s, __u32 tenant, __u32 tgid)
{
	int err = sensor_tenant_open_totals(s, tenant);

	if (err)
		return err;
	return bpf_map__update_elem(s->skel->maps.tenant_by_tgid, &tgid, sizeof(tgid), &tenant,
				    sizeof(tenant), BPF_ANY);
}

/* Tells the BPF side whether any tenant is keyed by cgroup (the walk costs). */
static void sensor_count_cgroups(struct sensor *s)
{
	__u64 key, next;
	void *prev = NULL;
	__u32 n = 0;

	while (!bpf_map__get_next_key(s->skel->maps.tenant_by_cgroup, prev, &next, sizeof(next))) {
		n++;
		key = next;
		prev = &key;
	}
	s->skel->bss->nr_cgroup_tenants = n;
}

int sensor_tenant_add_cgroup(struct sensor *s, __u32 tenant, __u64 cgroup_id)
{
	int err = sensor_tenant_open_totals(s, tenant);

	if (err)
		return err;
	err = bpf_map__update_elem(s->skel->maps.tenant_by_cgroup, &cgroup_id, sizeof(cgroup_id),
				   &tenant, sizeof(tenant), BPF_ANY);
	sensor_count_cgroups(s);
	return err;
}

/*
 * Deletes every key of a hash map whose value is `tenant`: the whole map is
 * read in one batch and the tenant's keys deleted in another, a few
 * syscalls whatever the map holds (deleting while walking key by key made
 * the walk restart after every delete, quadratic in the map's size).
 */
static void sensor_forget_keys(struct bpf_map *map, size_t key_size, __u32 tenant)
{
	__u32 max = bpf_map__max_entries(map), got = 0, nr_del = 0, count;
	char *keys = calloc(max, key_size), *del = calloc(max, key_size);
	__u32 *vals = calloc(max, sizeof(*vals));
	int fd = bpf_map__fd(map), err = 0;
	__u64 batch;
	void *from = NULL; /* NULL: from the start */

	while (keys && del && vals && !err && got < max) {
		count = max - got;
		err = bpf_map_lookup_batch(fd, from, &batch, keys + got * key_size, vals + got,
					   &count, NULL);
		got += count;
		from = &batch;
	}
	for (__u32 i = 0; keys && del && vals && i < got; i++)
		if (vals[i] == tenant)
			memcpy(del + nr_del++ * key_size, keys + i * key_size, key_size);
	if (nr_del)
		bpf_map_delete_batch(fd, del, &nr_del, NULL);
	free(keys);
	free(del);
	free(vals);
}

int sensor_tenant_remove_pid(struct sensor *s, __u32 tgid)
{
	return bpf_map__delete_elem(s->skel->maps.tenant_by_tgid, &tgid, sizeof(tgid), 0);
}

int sensor_tenant_clear(struct sensor *s, __u32 tenant)
{
	struct coloc_tenant_window *zero;
	int err;

	if (tenant >= COLOC_MAX_TENANTS)
		return -EINVAL;
	sensor_forget_keys(s->skel->maps.tenant_by_tgid, sizeof(__u32), tenant);
	sensor_forget_keys(s->skel->maps.tenant_by_cgroup, sizeof(__u64), tenant);
	sensor_count_cgroups(s);
	err = bpf_map__delete_elem(s->skel->maps.tenant_totals, &tenant, sizeof(tenant), 0);
	if (err && err != -ENOENT)
		return err;
	zero = calloc(s->nr_possible, sizeof(*zero));
	if (!zero)
		return -ENOMEM;
	err = bpf_map__update_elem(s->skel->maps.tenant_window_acc, &tenant, sizeof(tenant), zero,
				   s->nr_possible * sizeof(*zero), BPF_ANY);
	free(zero);
	return err;
}

/* A tenant without an entry in tenant_totals (none given, or cleared) has done nothing. */
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
	if (err == -ENOENT)
		err = 0;
	memset(sum, 0, sizeof(*sum));
	for (int i = 0; !err && i < s->nr_possible; i++) {
		sum->on_cpu_ns += per_cpu[i].on_cpu_ns;
		for (int c = 0; c < COLOC_NR_COUNTERS; c++)
			*coloc_counter_at(&sum->counters, c) +=
				coloc_counter_get(&per_cpu[i].counters, c);
	}
	free(per_cpu);
	return err;
}

int sensor_cpu_times(struct sensor *s, __u32 tenant, __u32 owner, const int *cpus, int nr,
		     uint64_t *others, uint64_t *own)
{
	struct coloc_cpu_total *busy = calloc(s->nr_possible, sizeof(*busy));
	struct coloc_tenant_total *mine = calloc(s->nr_possible, sizeof(*mine));
	struct coloc_uid_total *user = calloc(s->nr_possible, sizeof(*user));
	__u32 zero = 0;
	int err = busy && mine && user ? 0 : -ENOMEM;

	if (!err && tenant >= COLOC_MAX_TENANTS)
		err = -EINVAL;
	for (int i = 0; !err && i < nr; i++)
		if (cpus[i] < 0 || cpus[i] >= s->nr_possible)
			err = -EINVAL;
	/* busy first: a task's time charged between the reads lowers others', never raises it */
	if (!err)
		err = bpf_map__lookup_elem(s->skel->maps.cpu_totals, &zero, sizeof(zero), busy,
					   s->nr_possible * sizeof(*busy), 0);
	if (!err)
		err = bpf_map__lookup_elem(s->skel->maps.tenant_totals, &tenant, sizeof(tenant),
					   mine, s->nr_possible * sizeof(*mine), 0);
	/* root's tasks are not its tenants' own: a root tenant waits for them like any other */
	if (!err && owner &&
	    bpf_map__lookup_elem(s->skel->maps.uid_totals, &owner, sizeof(owner), user,
				 s->nr_possible * sizeof(*user), 0))
		owner = 0;
	for (int i = 0; !err && i < nr; i++) {
		__u64 b = busy[cpus[i]].busy_ns, o = mine[cpus[i]].on_cpu_ns;

		/* its owner's tasks in any tenant, those of this one counted once */
		if (owner) {
			__u64 u = user[cpus[i]].on_cpu_ns, both = mine[cpus[i]].owners_ns;

			o += u > both ? u - both : 0;
		}

		others[i] = b > o ? b - o : 0;
		if (own)
			own[i] = mine[cpus[i]].on_cpu_ns;
	}
	free(busy);
	free(mine);
	free(user);
	return err;
}

int sensor_others_ns(struct sensor *s, __u32 tenant, __u32 owner, const int *cpus, int nr,
		     __u64 *ns)
{
	uint64_t *per_cpu = calloc(nr > 0 ? (size_t)nr : 1, sizeof(*per_cpu));
	int err = per_cpu ? sensor_cpu_times(s, tenant, owner, cpus, nr, per_cpu, NULL) : -ENOMEM;

	*ns = 0;
	for (int i = 0; !err && i < nr; i++)
		*ns += per_cpu[i];
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

const struct bpffs_dir *sensor_pin_dir(const struct sensor *s)
{
	return s->pinned ? &s->pin_dir : NULL;
}

/* cpu is an OS CPU id: the map has one entry per possible CPU. */
static int sensor_core_owner_write(struct sensor *s, int cpu, const struct coloc_core_owner *o)
{
	__u32 key = (__u32)cpu;

	if (cpu < 0 || cpu >= s->nr_possible)
		return -EINVAL;
	return bpf_map__update_elem(s->skel->maps.core_owner, &key, sizeof(key), o, sizeof(*o),
				    BPF_ANY);
}

int sensor_core_owner_set(struct sensor *s, int cpu, __u32 tenant_id, __u64 query, int first_layer,
			  int last_layer)
{
	struct coloc_core_owner o = {
		.tenant_id = tenant_id,
		.state = COLOC_CORE_OWNED,
		.query = query,
		.first_layer = (__u32)first_layer,
		.last_layer = (__u32)last_layer,
		.since_ns = coloc_now_ns(),
	};

	if (tenant_id >= COLOC_MAX_TENANTS || first_layer < 0 || last_layer < first_layer)
		return -EINVAL;
	return sensor_core_owner_write(s, cpu, &o);
}

int sensor_core_owner_clear(struct sensor *s, int cpu)
{
	struct coloc_core_owner o = {
		.tenant_id = COLOC_NO_TENANT,
		.state = COLOC_CORE_FREE,
		.since_ns = coloc_now_ns(),
	};

	return sensor_core_owner_write(s, cpu, &o);
}
