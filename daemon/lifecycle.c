// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's start and stop: the sensor (which pins the maps), the rolling view
 * it feeds, uncore bandwidth where the machine has an uncore PMU, and the
 * CPU-to-socket map. Start prints, in one line, which signals are live.
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

static int colocd_read_socket(int cpu)
{
	char path[128];
	FILE *f;
	int id = 0;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
		 cpu);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%d", &id) != 1 || id < 0)
		id = 0;
	fclose(f);
	return id;
}

static void colocd_map_sockets(struct colocd *d)
{
	const int *cpus = sensor_cpus(d->sensor);

	d->nr_sockets = 0;
	for (int i = 0; i < sensor_nr_cpus(d->sensor); i++) {
		int socket = colocd_read_socket(cpus[i]);

		d->cpu_socket[i] = socket;
		if (socket + 1 > d->nr_sockets)
			d->nr_sockets = socket + 1;
	}
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
	char pmu_line[384];
	int ret;

	memset(d, 0, sizeof(*d));
	d->cfg = *cfg;
	ret = sensor_open(&d->sensor, &sc, err);
	if (ret)
		return ret;
	d->view = view_new(sensor_nr_cpus(d->sensor), sensor_cpus(d->sensor), cfg->window_ms);
	if (!d->view) {
		colocd_stop(d);
		return coloc_err_set(err, -ENOMEM, "out of memory for the rolling view");
	}
	colocd_map_sockets(d);
	ret = uncore_open(&d->uncore);
	if (ret) {
		fprintf(stderr, "colocd: uncore PMU unusable (%s); no per-socket bandwidth\n",
			strerror(-ret));
		d->uncore = NULL;
	}
	pmu_describe(sensor_pmu(d->sensor), pmu_line, sizeof(pmu_line));
	snprintf(d->signals_line, sizeof(d->signals_line), "%s; %s", pmu_line,
		 d->uncore ? uncore_describe(d->uncore) : "uncore membw: unavailable");
	return 0;
}

void colocd_stop(struct colocd *d)
{
	if (d->uncore)
		uncore_close(d->uncore);
	view_free(d->view);
	sensor_close(d->sensor);
	d->uncore = NULL;
	d->view = NULL;
	d->sensor = NULL;
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

	int n = d->uncore ? uncore_nr_sockets(d->uncore) : 0;

	for (int s = 0; s < n && s < (int)(sizeof(d->uncore_rate) / sizeof(d->uncore_rate[0]));
	     s++) {
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
