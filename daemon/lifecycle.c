// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's start and stop: the topology (read once; its socket numbering is
 * the one the control protocol and uncore bandwidth share), the sensor
 * (which pins the maps), the rolling view it feeds, and uncore bandwidth
 * where the machine has an uncore PMU. Start writes, in one line, which
 * signals are live, for main() to print, and registers the sources these
 * parts own on the event loop: the ring buffer (read when the BPF side
 * wakes colocd for a backlog), a drain timer, and the one-second tick.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include "colocd.h"

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
	struct colocd *d = ctx;

	view_add_record(d->view, rec, size);
}

static void colocd_on_ringbuf(struct loop_source *src, int fd, unsigned int revents, void *ctx)
{
	struct colocd *d = ctx;

	(void)src;
	(void)fd;
	(void)revents;
	sensor_consume(d->sensor);
}

static void colocd_on_drain(struct loop_source *src, __u64 now_ns, void *ctx)
{
	struct colocd *d = ctx;

	(void)src;
	(void)now_ns;
	sensor_consume(d->sensor);
}

/* Once a second: uncore bandwidth rates. */
static void colocd_on_tick(struct loop_source *src, __u64 now_ns, void *ctx)
{
	struct colocd *d = ctx;
	int n = d->uncore ? topology_nr_sockets(d->topo) : 0;

	(void)src;
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
	char pmu_line[384];
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
	if (d->uncore)
		snprintf(d->signals_line, sizeof(d->signals_line), "%s; %s", pmu_line,
			 uncore_describe(d->uncore));
	else
		snprintf(d->signals_line, sizeof(d->signals_line),
			 "%s; uncore membw: unavailable (%s)", pmu_line,
			 coloc_err_str(&uncore_err));
	tenants_init(&d->tenants, d->sensor, d->view, loop);
	ret = colocd_add_sources(d, err);
	if (ret)
		colocd_stop(d);
	return ret;
}

void colocd_stop(struct colocd *d)
{
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
