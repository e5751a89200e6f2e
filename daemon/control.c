// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control protocol's request handler (include/coloc/protocol.h): takes
 * one JSON request (parsed in strict mode by server_request.c as the server
 * framed its line, an infer's input bytes read with it), calls the module that owns
 * the state (tenants.c for attributed processes, serving.c for submitted
 * tenants and their queries, the sensor and view for signals), and returns
 * one JSON response line, always valid UTF-8. It does no I/O of its own:
 * server.c moves the bytes (an infer's binary input and output included),
 * serving_state.c writes --state, so the same handler is driven by the
 * socket and by tests. Nor does it keep state: an answer owed later rides
 * in the callback's context (an infer's, an admission's) or waits in the
 * daemon core (a remove, colocd_await_removal). submit, whose answer waits
 * for the admission, is in control_submit.c.
 *
 * Every request carries the caller's uid. The module that owns a tenant
 * says whether the caller may act on it (serving_authorize, tenants.c);
 * here, what a caller sees of tenants not its own: their name, state and
 * owner, nothing more (docs/security-owners.md).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <json-c/json.h>
#include "control.h"
#include "control_internal.h"
#include "policy.h"
#include "utf8.h"
#include "util.h"
#include "version.h"

char *control_finish(struct json_object *resp)
{
	const char *text = json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text);
	char *line = malloc(len + 2);

	if (line) {
		memcpy(line, text, len);
		line[len] = '\n';
		line[len + 1] = '\0';
	}
	json_object_put(resp);
	return line;
}

char *control_error(const char *fmt, ...)
{
	struct json_object *resp = json_object_new_object();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* file names and cut messages may hold any bytes; the response may not */
	utf8_sanitize(msg);
	json_object_object_add(resp, "ok", json_object_new_boolean(0));
	json_object_object_add(resp, "error", json_object_new_string(msg));
	return control_finish(resp);
}

struct json_object *control_ok(void)
{
	struct json_object *resp = json_object_new_object();

	json_object_object_add(resp, "ok", json_object_new_boolean(1));
	return resp;
}

static void control_add_double(struct json_object *o, const char *key, double v)
{
	json_object_object_add(o, key, json_object_new_double(v));
}

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

	json_object_object_add(o, "name", json_object_new_string(t->name));
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

static char *control_tenant_add(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
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

/* A command and its handler: a new command is one entry. */
struct control_cmd {
	const char *name;
	char *(*handle)(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns);
	/* instead, for commands that may answer later or read a payload */
	char *(*handle_conn)(struct colocd *d, struct json_object *req, uid_t uid,
			     struct server_req *sreq);
};

static char *control_cmd_ping(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
{
	(void)d;
	(void)req;
	(void)uid;
	(void)now_ns;
	return control_ping();
}

static char *control_cmd_signals(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
{
	(void)req;
	return control_signals(d, uid, now_ns);
}

static char *control_cmd_tenants(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
{
	(void)req;
	return control_tenants(d, uid, now_ns);
}

static char *control_cmd_tenant_remove(struct colocd *d, struct json_object *req, uid_t uid,
				       __u64 now_ns)
{
	(void)now_ns;
	return control_tenant_remove(d, req, uid);
}

/* ---- submitted tenants (serving.h) ------------------------------------------ */

const char *control_str(struct json_object *req, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

bool control_uint(struct json_object *req, const char *key, uint64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0)
		return false;
	*out = (uint64_t)json_object_get_int64(v);
	return true;
}

static double control_ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

struct json_object *control_reason(const char *r)
{
	char buf[512];

	if (!r[0])
		return NULL;
	snprintf(buf, sizeof(buf), "%.500s", r);
	utf8_sanitize(buf);
	return json_object_new_string(buf);
}

/* Every executor's pid, 0 for one not running. */
static struct json_object *control_pids_json(const struct serving_tenant_info *in)
{
	struct json_object *arr = json_object_new_array();

	for (int x = 0; x < in->executors; x++)
		json_object_array_add(arr, json_object_new_int(in->pids[x]));
	return arr;
}

/* {"queued":{"p50_ms":F,"p95_ms":F},...}: each part of the served queries' latency */
static struct json_object *control_parts_json(const struct serving_stats_summary *st)
{
	struct json_object *o = json_object_new_object();

	for (int p = 0; p < SERVING_NR_PARTS; p++) {
		struct json_object *part = json_object_new_object();

		control_add_double(part, "p50_ms", control_ms(st->part_p50_ns[p]));
		control_add_double(part, "p95_ms", control_ms(st->part_p95_ns[p]));
		json_object_object_add(o, serving_part_names[p], part);
	}
	return o;
}

/* What anyone may see of a serving tenant: its name, state and owner. */
static struct json_object *control_serving_public_json(const struct serving_tenant_info *in)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(in->name));
	json_object_object_add(o, "state", json_object_new_string(serving_state_name(in->state)));
	json_object_object_add(o, "owner", json_object_new_int64(in->owner));
	return o;
}

static bool control_serving_visible(const struct serving_tenant_info *in, uid_t uid)
{
	return !uid || in->owner == uid;
}

struct json_object *control_serving_tenant_json(struct colocd *d,
						const struct serving_tenant_info *in, uid_t uid)
{
	struct json_object *o = control_serving_public_json(in);
	const struct serving_stats_summary *st = &in->stats;

	if (!control_serving_visible(in, uid))
		return o;
	json_object_object_add(o, "reason", control_reason(in->reason));
	json_object_object_add(o, "note", control_reason(in->note));
	json_object_object_add(o, "isolation", control_reason(in->isolation));
	for (int i = 0; i < d->nr_specs; i++)
		if (!strcmp(d->specs[i].name, in->name))
			json_object_object_add(o, "model",
					       json_object_new_string(d->specs[i].model));
	json_object_object_add(o, "pid", json_object_new_int(in->pid));
	json_object_object_add(o, "executors", json_object_new_int(in->executors));
	json_object_object_add(o, "pids", control_pids_json(in));
	json_object_object_add(o, "moved", json_object_new_int64((int64_t)in->moved));
	json_object_object_add(o, "clamped_times",
			       json_object_new_int64((int64_t)in->clamped_times));
	control_add_double(o, "qos_ms", control_ms(in->qos_ns));
	control_add_double(o, "solo_ms", control_ms(in->solo_ns));
	json_object_object_add(o, "input_bytes", json_object_new_int64((int64_t)in->in_bytes));
	json_object_object_add(o, "output_bytes", json_object_new_int64((int64_t)in->out_bytes));
	json_object_object_add(o, "queued", json_object_new_int(in->queued));
	json_object_object_add(o, "in_flight", json_object_new_int(in->in_flight));
	control_add_double(o, "offered_rate", st->offered_rate);
	control_add_double(o, "served_rate", st->served_rate);
	control_add_double(o, "p50_ms", control_ms(st->p50_ns));
	control_add_double(o, "p95_ms", control_ms(st->p95_ns));
	control_add_double(o, "p99_ms", control_ms(st->p99_ns));
	json_object_object_add(o, "parts", control_parts_json(st));
	control_add_double(o, "within_qos", st->within_qos);
	json_object_object_add(o, "offered", json_object_new_int64((int64_t)st->offered));
	json_object_object_add(o, "served", json_object_new_int64((int64_t)st->served));
	json_object_object_add(o, "dropped", json_object_new_int64((int64_t)st->dropped));
	json_object_object_add(o, "rejected", json_object_new_int64((int64_t)st->rejected));
	json_object_object_add(o, "failed", json_object_new_int64((int64_t)st->failed));
	json_object_object_add(o, "blocks", json_object_new_int64((int64_t)st->blocks));
	json_object_object_add(o, "commands", json_object_new_int64((int64_t)st->commands));
	json_object_object_add(o, "yields", json_object_new_int64((int64_t)st->yields));
	/* null until a block has run: no prediction has been checked yet */
	json_object_object_add(o, "prediction_mape",
			       st->blocks ? json_object_new_double(st->prediction_mape) : NULL);
	json_object_object_add(o, "prediction_bias",
			       st->blocks ? json_object_new_double(st->prediction_bias) : NULL);
	json_object_object_add(o, "last_drop", control_reason(in->last_drop));
	json_object_object_add(o, "last_reject", control_reason(in->last_reject));
	json_object_object_add(o, "last_failure", control_reason(in->last_failure));
	return o;
}

static char *control_cmd_list(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
{
	const char *names[COLOC_MAX_TENANTS];
	int n = serving_tenant_names(d->serving, names, COLOC_MAX_TENANTS);
	struct json_object *resp = control_ok(), *arr = json_object_new_array();

	(void)req;
	(void)now_ns;
	for (int i = 0; i < n && i < COLOC_MAX_TENANTS; i++) {
		struct serving_tenant_info info;
		struct json_object *o;

		if (serving_tenant_info(d->serving, names[i], &info))
			continue;
		o = control_serving_public_json(&info);
		if (!control_serving_visible(&info, uid)) {
			json_object_array_add(arr, o);
			continue;
		}
		control_add_double(o, "qos_ms", control_ms(info.qos_ns));
		json_object_object_add(o, "pid", json_object_new_int(info.pid));
		json_object_object_add(o, "executors", json_object_new_int(info.executors));
		json_object_array_add(arr, o);
	}
	json_object_object_add(resp, "tenants", arr);
	return control_finish(resp);
}

static struct json_object *control_cores_json(struct colocd *d, uid_t uid)
{
	struct serving_core_info cores[POLICY_MAX_CPUS];
	int n = serving_cores(d->serving, cores, POLICY_MAX_CPUS);
	struct json_object *arr = json_object_new_array();

	for (int i = 0; i < n && i < POLICY_MAX_CPUS; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "cpu", json_object_new_int(cores[i].cpu));
		json_object_object_add(o, "busy", json_object_new_boolean(cores[i].busy));
		json_object_object_add(
			o, "slowdown",
			cores[i].slowdown > 0 ? json_object_new_double(cores[i].slowdown) : NULL);
		/* os: the core runs several tenants' blocks at once, none holds it */
		if (cores[i].shared) {
			json_object_object_add(o, "shared", json_object_new_boolean(true));
			json_object_object_add(o, "blocks",
					       json_object_new_int(cores[i].nr_blocks));
		} else if (cores[i].busy) {
			struct json_object *v = json_object_new_array();

			json_object_object_add(o, "tenant",
					       json_object_new_string(cores[i].tenant));
			/* whose a core is, is public; which query and layers run there is not */
			if (serving_authorize(d->serving, cores[i].tenant, uid, NULL)) {
				json_object_put(v);
				json_object_array_add(arr, o);
				continue;
			}
			json_object_object_add(o, "query",
					       json_object_new_int64((int64_t)cores[i].query_id));
			json_object_object_add(o, "first_layer",
					       json_object_new_int(cores[i].first_layer));
			json_object_object_add(o, "last_layer",
					       json_object_new_int(cores[i].last_layer));
			for (int l = 0; l < cores[i].last_layer - cores[i].first_layer; l++)
				json_object_array_add(v, json_object_new_int(cores[i].versions[l]));
			json_object_object_add(o, "versions", v);
		}
		json_object_array_add(arr, o);
	}
	return arr;
}

static char *control_cmd_status(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
{
	const char *names[COLOC_MAX_TENANTS], *only = control_str(req, "name"), *perr;
	int n = serving_tenant_names(d->serving, names, COLOC_MAX_TENANTS);
	struct json_object *resp, *arr;
	uint64_t policy_errors = serving_policy_errors(d->serving, &perr);
	struct coloc_err err = { 0 };
	bool found = false;

	(void)now_ns;
	/* another user's tenant by name: refused, not shown in part */
	if (only && serving_authorize(d->serving, only, uid, &err) == -EPERM)
		return control_error("%s", coloc_err_str(&err));
	arr = json_object_new_array();
	for (int i = 0; i < n && i < COLOC_MAX_TENANTS; i++) {
		struct serving_tenant_info info;

		if ((only && strcmp(only, names[i])) ||
		    serving_tenant_info(d->serving, names[i], &info))
			continue;
		found = true;
		json_object_array_add(arr, control_serving_tenant_json(d, &info, uid));
	}
	if (only && !found) {
		json_object_put(arr);
		return control_error("no tenant named '%.64s'", only);
	}
	resp = control_ok();
	json_object_object_add(resp, "tenants", arr);
	json_object_object_add(resp, "cores", control_cores_json(d, uid));
	json_object_object_add(resp, "policy_errors",
			       json_object_new_int64((int64_t)policy_errors));
	json_object_object_add(resp, "last_policy_error", control_reason(perr ? perr : ""));
	return control_finish(resp);
}

static char *control_cmd_restart(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
{
	const char *name = control_str(req, "name");
	struct coloc_err err = { 0 };
	int ret;

	(void)now_ns;
	if (!name)
		return control_error("restart needs \"name\": a string");
	if (d->draining)
		return control_error("colocd is shutting down");
	if (serving_authorize(d->serving, name, uid, &err))
		return control_error("%s", coloc_err_str(&err));
	ret = serving_restart(d->serving, name, &err);
	if (ret)
		return control_error("%s", coloc_err_str(&err));
	return control_finish(control_ok());
}

static char *control_cmd_remove(struct colocd *d, struct json_object *req, uid_t uid,
				struct server_req *sreq)
{
	const char *name = control_str(req, "name");
	struct serving_tenant_info info;
	struct coloc_err err = { 0 };
	int ret;

	if (!name)
		return control_error("remove needs \"name\": a string");
	if (serving_authorize(d->serving, name, uid, &err))
		return control_error("%s", coloc_err_str(&err));
	ret = serving_remove(d->serving, name, &err);
	if (ret)
		return control_error("%s", coloc_err_str(&err));
	coloc_err_clear(&err);
	/* the tenant is no longer admitted: a restart must not bring it back */
	colocd_spec_drop(d, name, &err);
	if (serving_tenant_info(d->serving, name, &info) == -ENOENT || !sreq)
		return control_finish(control_ok());
	/* too many removes waiting: answer now, the drain goes on */
	if (colocd_await_removal(d, name, sreq->server, sreq->conn))
		return control_finish(control_ok());
	server_req_defer(sreq);
	return NULL;
}

static const struct control_cmd control_cmds[] = {
	{ "ping", control_cmd_ping, NULL },
	{ "signals", control_cmd_signals, NULL },
	{ "tenants", control_cmd_tenants, NULL },
	{ "tenant-add", control_tenant_add, NULL },
	{ "tenant-remove", control_cmd_tenant_remove, NULL },
	{ "submit", NULL, control_cmd_submit },
	{ "list", control_cmd_list, NULL },
	{ "status", control_cmd_status, NULL },
	{ "restart", control_cmd_restart, NULL },
	{ "remove", NULL, control_cmd_remove },
	{ "infer", NULL, control_cmd_infer },
};

#define CONTROL_CMD_LIST                                                                   \
	"one of ping, signals, tenants, tenant-add, tenant-remove, submit, list, status, " \
	"remove, restart, infer"

char *control_handle(struct colocd *d, struct server_req *sreq, uid_t uid, const char *line,
		     size_t len, __u64 now_ns)
{
	struct json_object *req, *jcmd;
	const char *cmd;
	char *resp = NULL, why[COLOC_ERR_MSG_MAX];

	/* the server parsed the line as it framed it; a line from elsewhere is parsed here */
	req = sreq && sreq->request ? json_object_get(sreq->request) :
				      server_parse_request(line, len, why, sizeof(why));
	if (!req)
		return control_error("%s", why);
	if (!json_object_object_get_ex(req, "cmd", &jcmd) ||
	    !json_object_is_type(jcmd, json_type_string))
		resp = control_error("missing \"cmd\": " CONTROL_CMD_LIST);
	if (resp) {
		json_object_put(req);
		return resp;
	}
	cmd = json_object_get_string(jcmd);
	for (size_t i = 0; i < ARRAY_SIZE(control_cmds) && !resp; i++)
		if (!strcmp(cmd, control_cmds[i].name)) {
			if (control_cmds[i].handle_conn)
				resp = control_cmds[i].handle_conn(d, req, uid, sreq);
			else
				resp = control_cmds[i].handle(d, req, uid, now_ns);
			/* an answer owed: the server knows from sreq */
			if (!resp && sreq && sreq->deferred) {
				json_object_put(req);
				return NULL;
			}
			if (!resp)
				resp = control_error("out of memory");
		}
	/* cut to 64 bytes; control_error drops a character the cut split */
	if (!resp)
		resp = control_error("unknown cmd '%.64s': " CONTROL_CMD_LIST, cmd);
	json_object_put(req);
	return resp;
}

char *control_serve(void *ctx, struct server_req *req, const char *line, size_t len)
{
	if (!line)
		return control_error("request larger than %d bytes; closing the connection",
				     COLOC_MAX_REQUEST);
	return control_handle(ctx, req, req->uid, line, len, loop_now_ns());
}
