// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control protocol's commands on processes attributed to tenants
 * (tenants.c) and on what colocd senses (include/coloc/protocol.h): ping,
 * signals, tenants, tenant-add and tenant-remove, each answered at once as
 * one JSON line. What a caller sees of tenants not its own: their name and
 * owner, nothing more (docs/security-owners.md). Dispatched by control.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include "control.h"
#include "control_internal.h"
#include "tenants_key.h"
#include "util.h"
#include "version.h"

static struct json_object *control_live_names(__u32 mask)
{
	struct json_object *arr = json_object_new_array();

	if (mask & COLOC_LIVE_TASK_CLOCK)
		json_object_array_add(arr, json_object_new_string("task_clock"));
	for (int c = 0; c < COLOC_NR_COUNTERS; c++)
		if (mask & (1u << c))
			json_object_array_add(arr, json_object_new_string(pmu_counter_name(c)));
	return arr;
}

/* The derived signals, each only where the counters behind it were read. */
static void control_add_signals(struct json_object *o, const struct view_signals *s)
{
	__u32 m = s->live_mask;

	json_object_object_add(o, "windows", json_object_new_int(s->windows));
	control_add_double(o, "busy", s->busy);
	if (m & (1u << COLOC_CTR_CTX_SWITCHES))
		control_add_double(o, "ctx_switches_per_s", s->ctx_switches_per_s);
	if (m & (1u << COLOC_CTR_MIGRATIONS))
		control_add_double(o, "migrations_per_s", s->migrations_per_s);
	if (m & (1u << COLOC_CTR_PAGE_FAULTS))
		control_add_double(o, "page_faults_per_s", s->page_faults_per_s);
	if ((m & (1u << COLOC_CTR_CYCLES)) && (m & (1u << COLOC_CTR_INSTRUCTIONS)))
		control_add_double(o, "ipc", s->ipc);
	if ((m & (1u << COLOC_CTR_LLC_MISSES)) && (m & (1u << COLOC_CTR_INSTRUCTIONS)))
		control_add_double(o, "llc_mpki", s->llc_mpki);
	if ((m & (1u << COLOC_CTR_LLC_MISSES)) && (m & (1u << COLOC_CTR_LLC_REFS)))
		control_add_double(o, "llc_miss_ratio", s->llc_miss_ratio);
	if (m & (1u << COLOC_CTR_LLC_MISSES))
		control_add_double(o, "llc_misses_per_s", s->llc_misses_per_s);
	if (m & (1u << COLOC_CTR_DRAM_FILLS))
		control_add_double(o, "dram_gbps", s->dram_gbps);
	json_object_object_add(o, "live", control_live_names(m));
}

static struct json_object *control_tenant_json(struct colocd *d, struct tenant *t, uid_t uid,
					       __u64 now_ns)
{
	struct json_object *o = json_object_new_object();
	struct json_object *pids;
	struct coloc_tenant_total total;
	struct view_signals s;
	__u32 live = sensor_live_mask(d->sensor);

	json_object_object_add(o, "name", json_object_new_string(tenants_key_name(t->name)));
	json_object_object_add(o, "owner", json_object_new_int64(t->owner));
	/* another user's: its processes, cgroup and numbers are its own business */
	if (!tenants_visible(t, uid))
		return o;
	pids = json_object_new_array();
	json_object_object_add(o, "id", json_object_new_int((int)t->id));
	for (int i = 0; i < t->nr_procs; i++)
		json_object_array_add(pids, json_object_new_int64(t->procs[i]->pid));
	json_object_object_add(o, "pids", pids);
	json_object_object_add(o, "cgroup",
			       t->cgroup[0] ? json_object_new_string(t->cgroup) : NULL);
	view_tenant(d->view, t->id, colocd_now_window(d, now_ns),
		    view_span_windows(d->view, d->cfg.span_ms), &s);
	control_add_signals(o, &s);
	if (!sensor_tenant_total(d->sensor, t->id, &total)) {
		json_object_object_add(o, "on_cpu_ns",
				       json_object_new_int64((int64_t)total.on_cpu_ns));
		if (live & (1u << COLOC_CTR_LLC_MISSES))
			json_object_object_add(
				o, "llc_misses",
				json_object_new_int64((int64_t)total.counters.llc_misses));
		if (live & (1u << COLOC_CTR_DRAM_FILLS))
			json_object_object_add(
				o, "dram_bytes",
				json_object_new_int64((int64_t)(total.counters.dram_fills *
								COLOC_DRAM_LINE_BYTES)));
	}
	return o;
}

static struct json_object *control_sockets_json(struct colocd *d, const struct view_signals *cpu)
{
	struct json_object *arr = json_object_new_array();
	__u32 live = sensor_live_mask(d->sensor);

	for (int s = 0; s < topology_nr_sockets(d->topo); s++) {
		struct json_object *o = json_object_new_object();
		double busy = 0, dram = 0;
		int n = 0;

		for (int i = 0; i < sensor_nr_cpus(d->sensor); i++) {
			if (topology_cpu_socket(d->topo, sensor_cpus(d->sensor)[i]) != s)
				continue;
			n++;
			busy += cpu[i].busy;
			dram += cpu[i].dram_gbps;
		}
		json_object_object_add(o, "socket", json_object_new_int(s));
		json_object_object_add(o, "package_id",
				       json_object_new_int(topology_socket_package_id(d->topo, s)));
		json_object_object_add(o, "cpus", json_object_new_int(n));
		control_add_double(o, "busy", busy);
		if (live & (1u << COLOC_CTR_DRAM_FILLS))
			control_add_double(o, "dram_gbps", dram);
		if (d->uncore_rate[s].last_ns) {
			control_add_double(o, "uncore_read_gbps", d->uncore_rate[s].read_gbps);
			control_add_double(o, "uncore_write_gbps", d->uncore_rate[s].write_gbps);
		}
		json_object_array_add(arr, o);
	}
	return arr;
}

static char *control_signals(struct colocd *d, uid_t uid, __u64 now_ns)
{
	struct json_object *resp = control_ok();
	struct json_object *cpus = json_object_new_array();
	struct json_object *tenants = json_object_new_array();
	struct json_object *stats = json_object_new_object();
	unsigned int span = view_span_windows(d->view, d->cfg.span_ms);
	__u64 now_window = colocd_now_window(d, now_ns);
	int nr = sensor_nr_cpus(d->sensor);
	struct view_signals *per_cpu = calloc(nr, sizeof(*per_cpu));
	struct coloc_sensor_stats st;

	if (!per_cpu) {
		json_object_put(resp);
		return control_error("out of memory");
	}
	json_object_object_add(resp, "window_ms", json_object_new_int((int)d->cfg.window_ms));
	json_object_object_add(resp, "span_ms",
			       json_object_new_int((int)(span * d->cfg.window_ms)));
	json_object_object_add(resp, "signals", json_object_new_string(d->signals_line));
	json_object_object_add(resp, "pmu",
			       json_object_new_boolean(sensor_pmu(d->sensor)->present));
	for (int i = 0; i < nr; i++) {
		struct json_object *o = json_object_new_object();

		view_cpu(d->view, i, now_window, span, &per_cpu[i]);
		json_object_object_add(o, "cpu", json_object_new_int(sensor_cpus(d->sensor)[i]));
		json_object_object_add(o, "socket",
				       json_object_new_int(topology_cpu_socket(
					       d->topo, sensor_cpus(d->sensor)[i])));
		control_add_signals(o, &per_cpu[i]);
		json_object_array_add(cpus, o);
	}
	json_object_object_add(resp, "cpus", cpus);
	json_object_object_add(resp, "sockets", control_sockets_json(d, per_cpu));
	for (int t = 0; t < COLOC_MAX_TENANTS; t++)
		if (d->tenants.slots[t].used)
			json_object_array_add(
				tenants, control_tenant_json(d, &d->tenants.slots[t], uid, now_ns));
	json_object_object_add(resp, "tenants", tenants);
	if (!sensor_stats(d->sensor, &st)) {
		json_object_object_add(stats, "samples",
				       json_object_new_int64((int64_t)st.samples));
		json_object_object_add(stats, "switches",
				       json_object_new_int64((int64_t)st.switches));
		json_object_object_add(stats, "records",
				       json_object_new_int64((int64_t)st.records));
		json_object_object_add(stats, "drops", json_object_new_int64((int64_t)st.drops));
	}
	json_object_object_add(resp, "sensor", stats);
	free(per_cpu);
	return control_finish(resp);
}

/* The pids of a tenant-add, as numbers; -EINVAL for anything else. */
static int control_pids(struct json_object *jpids, __s64 *pids, size_t *nr, size_t *bad)
{
	*nr = json_object_array_length(jpids);
	if (*nr > COLOC_MAX_PIDS_PER_REQUEST)
		return -E2BIG;
	for (size_t i = 0; i < *nr; i++) {
		struct json_object *p = json_object_array_get_idx(jpids, i);

		if (!json_object_is_type(p, json_type_int)) {
			*bad = i;
			return -EINVAL;
		}
		pids[i] = json_object_get_int64(p);
	}
	return 0;
}

char *control_tenant_add(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
{
	struct json_object *jname, *jpids = NULL, *jcg = NULL, *resp;
	struct tenants_add_req add = { .uid = uid };
	struct coloc_err err = { 0 };
	__s64 pids[COLOC_MAX_PIDS_PER_REQUEST];
	struct tenant *t;
	size_t bad = 0;
	int ret;

	if (!json_object_object_get_ex(req, "name", &jname) ||
	    !json_object_is_type(jname, json_type_string))
		return control_error("tenant-add needs \"name\": a string");
	add.name = json_object_get_string(jname);
	if (json_object_object_get_ex(req, "pids", &jpids)) {
		if (!json_object_is_type(jpids, json_type_array))
			return control_error("\"pids\" must be an array of process ids");
		ret = control_pids(jpids, pids, &add.nr_pids, &bad);
		if (ret == -E2BIG)
			return control_error("too many pids (%zu); at most %d per request",
					     add.nr_pids, COLOC_MAX_PIDS_PER_REQUEST);
		if (ret)
			return control_error("pids[%zu] is not a process id", bad);
		add.pids = pids;
	}
	if (json_object_object_get_ex(req, "cgroup", &jcg)) {
		if (!json_object_is_type(jcg, json_type_string))
			return control_error("\"cgroup\" must be a path");
		add.cgroup = json_object_get_string(jcg);
	}
	if (tenants_add(&d->tenants, &add, &t, &err))
		return control_error("%s", coloc_err_str(&err));
	resp = control_ok();
	json_object_object_add(resp, "tenant", control_tenant_json(d, t, uid, now_ns));
	return control_finish(resp);
}

static char *control_tenant_remove(struct colocd *d, struct json_object *req, uid_t uid)
{
	struct coloc_err err = { 0 };
	struct json_object *jname;

	if (!json_object_object_get_ex(req, "name", &jname) ||
	    !json_object_is_type(jname, json_type_string))
		return control_error("tenant-remove needs \"name\": a string");
	if (tenants_remove(&d->tenants, json_object_get_string(jname), uid, &err))
		return control_error("%s", coloc_err_str(&err));
	return control_finish(control_ok());
}

static char *control_tenants(struct colocd *d, uid_t uid, __u64 now_ns)
{
	struct json_object *resp = control_ok();
	struct json_object *arr = json_object_new_array();

	for (int t = 0; t < COLOC_MAX_TENANTS; t++)
		if (d->tenants.slots[t].used)
			json_object_array_add(
				arr, control_tenant_json(d, &d->tenants.slots[t], uid, now_ns));
	json_object_object_add(resp, "tenants", arr);
	return control_finish(resp);
}

static char *control_ping(void)
{
	struct json_object *resp = control_ok();

	json_object_object_add(resp, "version", json_object_new_string(COLOC_VERSION));
	json_object_object_add(resp, "pid", json_object_new_int(getpid()));
	return control_finish(resp);
}

char *control_cmd_ping(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
{
	(void)d;
	(void)req;
	(void)uid;
	(void)now_ns;
	return control_ping();
}

char *control_cmd_signals(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
{
	(void)req;
	return control_signals(d, uid, now_ns);
}

char *control_cmd_tenants(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
{
	(void)req;
	return control_tenants(d, uid, now_ns);
}

char *control_cmd_tenant_remove(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
{
	(void)now_ns;
	return control_tenant_remove(d, req, uid);
}
