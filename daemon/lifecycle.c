// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's start and stop: the topology (read once; its socket numbering is
 * the one the control protocol and uncore bandwidth share), the sensor
 * (which pins the maps), the rolling view it feeds, and uncore bandwidth
 * where the machine has an uncore PMU. Start writes, in one line, which
 * signals are live, for main() to print, and registers the sources these
 * parts own on the event loop: the ring buffer (read when the BPF side
 * wakes colocd for a backlog), a drain timer, and the one-second tick.
 * It also creates the serving core (serving.h) and gives it the loop: its
 * executors' fds as poll sources, one timer that a prepare hook sets to its
 * next deadline before every wait (so no caller of the core re-arms it),
 * and each executor's process attributed to its tenant in the BPF maps.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include "binpath.h"
#include "colocd.h"
#include "file_own.h"
#include "isa_probe.h"
#include "state_writer.h"
#include "submit_copy.h"
#include "mono_clock.h"

/*
 * How often the ring buffer is drained. Each wakeup of colocd preempts a
 * tenant, so not every window: at 10 ms the daemon's own wakeups cost the
 * workloads about 1% (make bench-sensing), at 100 ms they vanish in the
 * noise. The BPF side still wakes colocd early when a backlog builds.
 */
#define COLOCD_DRAIN_MS 100u
#define COLOCD_TICK_NS 1000000000ull

static void colocd_on_record(void *ctx, const void *rec, size_t size)
{
	const struct coloc_cpu_window *w = rec;
	struct colocd *d = ctx;
	struct policy_signal sig;

	view_add_record(d->view, rec, size);
	if (d->serving && size >= sizeof(*w) && level_source_window_signal(&d->level, w, &sig))
		serving_set_core_signal(d->serving, (int)w->cpu, &sig);
}

static void colocd_on_ringbuf(struct loop_source *src, int fd, unsigned int revents, void *ctx)
{
	struct colocd *d = ctx;

	(void)src;
	(void)fd;
	(void)revents;
	sensor_consume(d->sensor);
}

/*
 * Each served tenant's attributed pressure over the view's span, for the
 * policy (its LLC and DRAM fields, live only with a PMU). A tenant the
 * sensor attributes but colocd does not serve is skipped by serving.
 */
static void colocd_tenant_signals(struct colocd *d, __u64 now_ns)
{
	unsigned int span = view_span_windows(d->view, d->cfg.span_ms);
	__u64 now_window = colocd_now_window(d, now_ns);

	for (int i = 0; i < COLOC_MAX_TENANTS; i++) {
		const struct tenant *t = &d->tenants.slots[i];
		struct policy_signal sig = { 0 };
		struct view_signals vs;

		if (!t->used)
			continue;
		view_tenant(d->view, t->id, now_window, span, &vs);
		if (vs.live_mask & (1u << COLOC_CTR_LLC_MISSES)) {
			sig.live |= POLICY_SIG_LLC;
			sig.llc_misses_per_s = vs.llc_misses_per_s;
			sig.llc_miss_ratio = vs.llc_miss_ratio;
		}
		if (vs.live_mask & (1u << COLOC_CTR_DRAM_FILLS)) {
			sig.live |= POLICY_SIG_DRAM;
			sig.dram_gbps = vs.dram_gbps;
		}
		serving_set_tenant_signal(d->serving, t->name, &sig);
	}
}

static void colocd_on_drain(struct loop_source *src, __u64 now_ns, void *ctx)
{
	struct colocd *d = ctx;

	(void)src;
	sensor_consume(d->sensor);
	if (d->serving)
		colocd_tenant_signals(d, now_ns);
}

/* Once a second: uncore bandwidth rates. */
static void colocd_on_tick(struct loop_source *src, __u64 now_ns, void *ctx)
{
	struct colocd *d = ctx;
	int n = d->uncore ? topology_nr_sockets(d->topo) : 0;

	(void)src;
	sandbox_tick(d->sandbox);
	/* a socket without visible memory controllers fails the read and keeps no rate */
	for (int s = 0; s < n; s++) {
		struct colocd_uncore_rate *r = &d->uncore_rate[s];
		__u64 rd, wr;

		if (uncore_read(d->uncore, s, &rd, &wr))
			continue;
		if (r->last_ns && now_ns > r->last_ns) {
			double sec = (now_ns - r->last_ns) / 1e9;

			r->read_gbps = (rd - r->last_read) / sec / 1e9;
			r->write_gbps = (wr - r->last_write) / sec / 1e9;
		}
		r->last_read = rd;
		r->last_write = wr;
		r->last_ns = now_ns;
	}
}

static int colocd_add_sources(struct colocd *d, struct coloc_err *err)
{
	unsigned int drain_ms =
		d->cfg.window_ms > COLOCD_DRAIN_MS ? d->cfg.window_ms : COLOCD_DRAIN_MS;
	__u64 drain_ns = (__u64)drain_ms * 1000000ull;
	int ret;

	ret = loop_add_poll(d->loop, &d->ringbuf_src, sensor_epoll_fd(d->sensor), POLLIN,
			    colocd_on_ringbuf, d);
	if (!ret)
		ret = loop_add_timer(d->loop, &d->drain_src, drain_ns, drain_ns, colocd_on_drain,
				     d);
	if (!ret)
		ret = loop_add_timer(d->loop, &d->tick_src, COLOCD_TICK_NS, COLOCD_TICK_NS,
				     colocd_on_tick, d);
	if (ret)
		return coloc_err_set(err, ret, "cannot register with the event loop: %s",
				     strerror(-ret));
	return 0;
}

#define COLOCD_SERVING_IDLE_NS 1000000000ull /* the longest between two serving ticks */

/*
 * The loop's prepare hook: before each wait, after whatever any callback
 * asked of the serving core, its timer is set to the core's next deadline,
 * and at the latest a second after the last tick.
 */
static void colocd_serving_prepare(struct loop_source *src, void *ctx)
{
	struct colocd *d = ctx;
	int ms = serving_next_timeout_ms(d->serving);
	__u64 now = coloc_now_ns(), due = d->serving_ticked_ns + COLOCD_SERVING_IDLE_NS;

	(void)src;
	if (ms >= 0 && now + (__u64)(ms ? ms : 1) * 1000000ull < due)
		due = now + (__u64)(ms ? ms : 1) * 1000000ull;
	loop_timer_set(d->serving_timer, due > now ? due - now : 0, 0);
}

int colocd_serving_busy(const struct colocd *d)
{
	const char *names[COLOC_MAX_TENANTS];
	int n = d->serving ? serving_tenant_names(d->serving, names, COLOC_MAX_TENANTS) : 0;
	int busy = 0;

	for (int i = 0; i < n && i < COLOC_MAX_TENANTS; i++) {
		struct serving_tenant_info info;

		if (!serving_tenant_info(d->serving, names[i], &info))
			busy += info.queued + info.in_flight;
	}
	return busy;
}

static void colocd_on_serving_timer(struct loop_source *src, __u64 now_ns, void *ctx)
{
	struct colocd *d = ctx;

	(void)src;
	d->serving_ticked_ns = now_ns;
	serving_tick(d->serving);
}

static void colocd_on_exec_fd(struct loop_source *src, int fd, unsigned int revents, void *ctx)
{
	struct colocd *d = ctx;

	(void)src;
	(void)revents;
	serving_handle_fd(d->serving, fd);
}

/* Each executor fd is a loop source of its own: no table to fill, no cap but memory. */
static int colocd_serving_watch(void *ctx, int fd, bool add)
{
	struct colocd *d = ctx;
	struct colocd_exec_fd *e, **pp;
	int ret;

	if (add) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		ret = loop_add_poll(d->loop, &e->src, fd, POLLIN, colocd_on_exec_fd, d);
		if (ret) {
			free(e);
			return ret;
		}
		e->fd = fd;
		e->next = d->exec_fds;
		d->exec_fds = e;
		return 0;
	}
	for (pp = &d->exec_fds; *pp; pp = &(*pp)->next)
		if ((*pp)->fd == fd) {
			e = *pp;
			*pp = e->next;
			loop_source_remove(e->src);
			free(e);
			break;
		}
	return 0;
}

int colocd_await_removal(struct colocd *d, const char *name, struct server *server, __u64 conn)
{
	for (int i = 0; i < COLOCD_MAX_WAITERS; i++) {
		struct colocd_waiter *w = &d->waiters[i];

		if (w->used)
			continue;
		*w = (struct colocd_waiter){ .used = true, .server = server, .conn = conn };
		snprintf(w->name, sizeof(w->name), "%s", name);
		return 0;
	}
	return -ENOSPC;
}

/* Answers the remove requests waiting for name. */
static void colocd_answer_waiters(struct colocd *d, const char *name)
{
	for (int i = 0; i < COLOCD_MAX_WAITERS; i++) {
		struct colocd_waiter *w = &d->waiters[i];

		if (!w->used || strcmp(w->name, name))
			continue;
		server_send(w->server, w->conn, "{\"ok\":true}\n", NULL, 0);
		w->used = false;
	}
}

/*
 * The executors' processes are the tenant's in the BPF maps, under the same
 * name: each leaves by its pidfd when it dies, and the tenant goes with the
 * serving tenant. A failure here leaves the query path as it is; the
 * tenant only goes unmeasured.
 */
static void colocd_serving_changed(void *ctx, const char *name, enum serving_tenant_state state,
				   const pid_t *pids, int nr_pids)
{
	struct colocd *d = ctx;
	struct coloc_err err = { 0 };

	if (state == SERVING_TENANT_STARTING && nr_pids > 0) {
		__s64 tgids[SERVING_MAX_EXECUTORS];
		/* root's add: the executors run as colocd's own user, not the owner */
		struct tenants_add_req req = {
			.name = name, .pids = tgids, .nr_pids = nr_pids, .serving = true
		};
		struct serving_tenant_info info;
		struct tenant *t = tenants_find(&d->tenants, name);

		/* another user's attributed tenant of that name is not handed our executors */
		if (serving_tenant_info(d->serving, name, &info) || (t && t->owner != info.owner))
			return;
		for (int i = 0; i < nr_pids; i++)
			tgids[i] = pids[i];
		/* a new slot counts in the owner's quota and the members' part (submit checked it) */
		req.charge = info.owner;
		tenants_add(&d->tenants, &req, &t, &err);
		/* its owner's own processes are not others to it (serving_cpu_wait.c) */
		if (info.owner && sensor_owner_add(d->sensor, info.owner))
			fprintf(stderr, "colocd: tenant %s: uid %u's tasks cannot be counted\n", name,
				(unsigned int)info.owner);
	} else if (state == SERVING_TENANT_REMOVED) {
		struct serving_tenant_info info;
		struct tenant *t = tenants_find(&d->tenants, name);

		/* the tenant is still listed while this is told: its owner's attribution goes */
		if (t && !serving_tenant_info(d->serving, name, &info) && t->owner == info.owner)
			tenants_remove(&d->tenants, name, 0, &err);
		colocd_answer_waiters(d, name);
	}
}

/*
 * Which tenant's block holds a core, for bpftool (the core_owner map). The
 * tenant id is its slot in the BPF maps; a tenant the maps do not hold (its
 * attribution failed, see colocd_serving_changed) leaves its cores shown
 * free rather than under an id that is not its own. Under --policy os no
 * block holds a core (the kernel shares them all), serving never calls
 * this, and the map shows every core free.
 */
static void colocd_core_changed(void *ctx, int cpu, const char *name, uint64_t query, int first,
				int last)
{
	struct colocd *d = ctx;
	struct tenant *t = name ? tenants_find(&d->tenants, name) : NULL;

	if (!t)
		sensor_core_owner_clear(d->sensor, cpu);
	else
		sensor_core_owner_set(d->sensor, cpu, t->id, query, first, last);
}

/*
 * What others and the tenant ran on each of a tenant's cores, from the
 * sensor (its executors attributed to it by colocd_serving_changed, its
 * owner's tasks): a late command's wait is excused no more
 * (serving_cpu_wait.c).
 */
static int colocd_cpu_times(void *ctx, const char *name, uid_t owner, const int *cpus, int nr,
			    uint64_t *others, uint64_t *own)
{
	struct colocd *d = ctx;
	struct tenant *t = tenants_find(&d->tenants, name);

	if (!t || t->owner != owner)
		return -ENOENT;
	return sensor_cpu_times(d->sensor, t->id, owner, cpus, nr, others, own);
}

/* One line per finished block into --block-log. */
static void colocd_block_done(void *ctx, const struct serving_block_record *r)
{
	struct colocd *d = ctx;

	fprintf(d->block_log,
		"%.3f\t%s\t%llu\t%d\t%d\t%d\t%d\t%.3f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t",
		(coloc_now_ns() - d->block_log_t0) / 1e6, r->tenant, (unsigned long long)r->query,
		r->first, r->last, r->nr_cores, r->corunners, r->level, r->alone_ns / 1e3,
		r->predicted_ns / 1e3, r->measured_ns / 1e3, r->round_trip_ns / 1e3,
		r->switch_ns / 1e3, r->ok);
	/* each layer's version as a digit (EXEC_MAX_VERSIONS <= 10), in layer order */
	for (int l = 0; l < r->last - r->first; l++)
		fputc(r->versions ? '0' + r->versions[l] % 10 : '?', d->block_log);
	fprintf(d->block_log, "\t%d\t%.3f\n", r->clamped, r->core_level);
}

static int open_block_log(struct colocd *d, struct coloc_err *err)
{
	char why[96];
	int fd = file_open_own(d->cfg.block_log, O_WRONLY | O_CREAT, 0600, why, sizeof(why));

	if (fd < 0)
		return coloc_err_set(err, fd, "cannot write the block log %s: it %s",
				     d->cfg.block_log, why);
	/* every tenant's blocks: root's eyes only, an older file's mode included */
	d->block_log = fchmod(fd, 0600) || ftruncate(fd, 0) ? NULL : fdopen(fd, "we");
	if (!d->block_log) {
		close(fd);
		return coloc_err_set(err, -errno, "cannot write the block log %s: %s",
				     d->cfg.block_log, strerror(errno));
	}
	/* a line as each block ends, for tail -f: one write per block, next to its round trip */
	setvbuf(d->block_log, NULL, _IOLBF, 0);
	d->block_log_t0 = coloc_now_ns();
	fputs("end_ms\ttenant\tquery\tfirst\tlast\tcores\tcorunners\tlevel\talone_us\t"
	      "predicted_us\tmeasured_us\tround_trip_us\tswitch_us\tok\tversions\tclamped\t"
	      "core_level\n",
	      d->block_log);
	return 0;
}

/* The hook where a tenant's held cores change: its cpuset follows them. */
static void colocd_tenant_cores(void *ctx, const char *name, const int *cpus, int nr)
{
	struct colocd *d = ctx;
	struct coloc_err err = { 0 };

	/* once per colocd: a cgroup that refuses one write refuses the next ones alike */
	if (sandbox_tenant_set_cpus(d->sandbox, name, cpus, nr, &err) < 0 && !d->cpuset_warned) {
		fprintf(stderr, "colocd: tenant %s: its cpuset does not follow its cores: %s\n",
			name, coloc_err_str(&err));
		d->cpuset_warned = true;
	}
}

/*
 * This machine as profiles name it, its ISA asked once of the executor
 * binary (coloc-executor --print-isa): colocd links no oneDNN.
 */
static int colocd_identify_machine(struct colocd *d, struct coloc_err *err)
{
	char executor[PATH_MAX], isa[PROFILE_ISA_LEN];
	const char *path = d->cfg.executor;
	int ret;

	if (!path && !binpath_find("coloc-executor", executor, sizeof(executor)))
		path = executor;
	ret = isa_probe(path, isa, sizeof(isa), err);
	if (ret)
		return coloc_err_prefix(err,
					"cannot learn this machine's ISA for the profile cache");
	ret = profile_machine_detect_isa(&d->machine, isa);
	if (ret)
		return coloc_err_set(err, ret,
				     "cannot identify this machine for the profile cache: %s",
				     strerror(-ret));
	return 0;
}

static int colocd_start_serving(struct colocd *d, struct coloc_err *err)
{
	char executor[PATH_MAX];
	struct serving_config sc = {
		.executor = d->cfg.executor,
		.cache_dir = d->cfg.cache_dir,
		.machine = &d->machine,
		.policy = d->cfg.policy,
		.late_serve = d->cfg.late_serve,
		.no_plan_ahead = d->cfg.no_plan_ahead,
		.executor_lanes = d->cfg.executor_lanes,
		.watch = colocd_serving_watch,
		.tenant_changed = colocd_serving_changed,
		.core_changed = colocd_core_changed,
		.tenant_cores = colocd_tenant_cores,
		.cpu_times = colocd_cpu_times,
		.max_tenants_per_uid = d->cfg.max_tenants_per_uid,
		.max_executors_per_uid = d->cfg.max_executors_per_uid,
		.max_queued_per_uid = d->cfg.max_queued_per_uid,
		.max_input_bytes_per_uid = (size_t)d->cfg.max_input_mib_per_uid << 20,
		.max_submit_bytes_per_uid = (uint64_t)d->cfg.max_submit_mib_per_uid << 20,
		.max_submit_bytes = (uint64_t)d->cfg.max_submit_mib << 20,
		.ctx = d,
	};
	int ret;

	ret = sandbox_create(&d->cfg.sandbox, &d->sandbox, err);
	if (ret)
		return ret;
	sc.sandbox = d->sandbox;
	printf("colocd: %s\n", sandbox_describe(d->sandbox));

	if (d->cfg.block_log) {
		ret = open_block_log(d, err);
		if (ret)
			return ret;
		sc.block_done = colocd_block_done;
	}

	if (!sc.executor && !binpath_find("coloc-executor", executor, sizeof(executor)))
		sc.executor = executor;
	d->specs = calloc(COLOC_MAX_TENANTS, sizeof(*d->specs));
	if (!d->specs)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	if (d->cfg.state_path && (ret = state_writer_new(d->cfg.state_path, &d->state_writer)))
		return coloc_err_set(err, ret, "cannot start the --state writer: %s",
				     strerror(-ret));
	ret = serving_create(&sc, &d->serving, err);
	if (ret)
		return ret;
	d->serving_ticked_ns = coloc_now_ns();
	ret = loop_add_timer(d->loop, &d->serving_timer, COLOCD_SERVING_IDLE_NS, 0,
			     colocd_on_serving_timer, d);
	if (!ret)
		ret = loop_add_prepare(d->loop, &d->serving_prepare, colocd_serving_prepare, d);
	if (ret)
		return coloc_err_set(err, ret, "cannot register with the event loop: %s",
				     strerror(-ret));
	return 0;
}

int colocd_start(struct colocd *d, const struct colocd_config *cfg, struct loop *loop,
		 struct coloc_err *err)
{
	struct sensor_config sc = {
		.sample_hz = cfg->sample_hz,
		.window_ms = cfg->window_ms,
		.pin_dir = cfg->pin_dir,
		.verbose = cfg->verbose,
		.on_record = colocd_on_record,
		.ctx = d,
	};
	struct coloc_err uncore_err = { 0 };
	char pmu_line[384], level_line[COLOC_ERR_MSG_MAX + 64];
	int ret;

	memset(d, 0, sizeof(*d));
	d->cfg = *cfg;
	d->loop = loop;
	ret = topology_open(NULL, &d->topo, err);
	if (ret)
		return ret;
	d->uncore_rate = calloc((size_t)topology_nr_sockets(d->topo), sizeof(*d->uncore_rate));
	if (!d->uncore_rate) {
		colocd_stop(d);
		return coloc_err_set(err, -ENOMEM, "out of memory");
	}
	sc.topo = d->topo;
	ret = sensor_open(&d->sensor, &sc, err);
	if (ret) {
		coloc_err_prefix(err, "cannot start the sensor");
		colocd_stop(d);
		return ret;
	}
	d->view = view_new(sensor_nr_cpus(d->sensor), sensor_cpus(d->sensor), cfg->window_ms);
	if (!d->view) {
		colocd_stop(d);
		return coloc_err_set(err, -ENOMEM, "out of memory for the rolling view");
	}
	/* without uncore counters the daemon still runs: the signals line says why */
	if (uncore_open_at("/", d->topo, 0, &d->uncore, &uncore_err))
		d->uncore = NULL;
	pmu_describe(sensor_pmu(d->sensor), pmu_line, sizeof(pmu_line));
	ret = colocd_identify_machine(d, err);
	if (ret) {
		colocd_stop(d);
		return ret;
	}
	/* whatever it finds, the daemon runs: the line says which level source it uses */
	level_source_open(&d->level, sensor_pmu(d->sensor), cfg->cache_dir, &d->machine);
	level_source_describe(&d->level, level_line, sizeof(level_line));
	if (d->uncore)
		snprintf(d->signals_line, sizeof(d->signals_line), "%s; %s; %s", pmu_line,
			 uncore_describe(d->uncore), level_line);
	else
		snprintf(d->signals_line, sizeof(d->signals_line),
			 "%s; uncore membw: unavailable (%s); %s", pmu_line,
			 coloc_err_str(&uncore_err), level_line);
	tenants_init(&d->tenants, d->sensor, d->view, loop);
	d->tenants.max_per_uid = d->cfg.max_tenants_per_uid;
	ret = colocd_add_sources(d, err);
	if (!ret)
		ret = colocd_start_serving(d, err);
	if (ret)
		colocd_stop(d);
	return ret;
}

void colocd_stop(struct colocd *d)
{
	/* a submit still being copied is dropped (its client is not answered) */
	submit_copier_free(d->copier);
	d->copier = NULL;
	/* first: its executors are tenants, and its callbacks reach the table */
	serving_destroy(d->serving);
	d->serving = NULL;
	/* what --state still owes is written before colocd goes */
	state_writer_free(d->state_writer);
	d->state_writer = NULL;
	sandbox_free(d->sandbox);
	d->sandbox = NULL;
	if (d->block_log)
		fclose(d->block_log);
	d->block_log = NULL;
	loop_source_remove(d->serving_prepare);
	loop_source_remove(d->serving_timer);
	d->serving_prepare = d->serving_timer = NULL;
	free(d->specs);
	d->specs = NULL;
	tenants_fini(&d->tenants);
	loop_source_remove(d->ringbuf_src);
	loop_source_remove(d->drain_src);
	loop_source_remove(d->tick_src);
	d->ringbuf_src = d->drain_src = d->tick_src = NULL;
	if (d->uncore)
		uncore_close(d->uncore);
	view_free(d->view);
	sensor_close(d->sensor);
	free(d->uncore_rate);
	topology_close(d->topo);
	d->uncore = NULL;
	d->view = NULL;
	d->sensor = NULL;
	d->uncore_rate = NULL;
	d->topo = NULL;
}
