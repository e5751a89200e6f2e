// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's start and stop: the topology (read once; its socket numbering is
 * the one the control protocol and uncore bandwidth share), the sensor
 * (which pins the maps), the rolling view it feeds, and uncore bandwidth
 * where the machine has an uncore PMU. Start writes, in one line, which
 * signals are live, for main() to print.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "colocd.h"

static void colocd_on_record(void *ctx, const void *rec, size_t size)
{
	struct colocd *d = ctx;

	view_add_record(d->view, rec, size);
}

int colocd_start(struct colocd *d, const struct colocd_config *cfg, struct coloc_err *err)
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
	ret = topology_open(NULL, &d->topo, err);
	if (ret)
		return ret;
	d->uncore_rate = calloc((size_t)topology_nr_sockets(d->topo), sizeof(*d->uncore_rate));
	if (!d->uncore_rate) {
		colocd_stop(d);
		return coloc_err_set(err, -ENOMEM, "out of memory");
	}
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
	return 0;
}

void colocd_stop(struct colocd *d)
{
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

/* Forgets processes that exited, so a recycled pid is not charged to a tenant. */
static void colocd_prune_exited(struct colocd *d)
{
	char path[32];

	for (int i = 0; i < COLOC_MAX_TENANTS; i++) {
		struct tenant *t = &d->tenants.slots[i];

		for (int k = t->used ? t->nr_pids - 1 : -1; k >= 0; k--) {
			snprintf(path, sizeof(path), "/proc/%u", t->pids[k]);
			if (!access(path, F_OK))
				continue;
			sensor_tenant_remove_pid(d->sensor, t->pids[k]);
			tenants_remove_pid(t, t->pids[k]);
		}
	}
}

void colocd_tick(struct colocd *d, __u64 now_ns)
{
	colocd_prune_exited(d);

	int n = d->uncore ? topology_nr_sockets(d->topo) : 0;

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
