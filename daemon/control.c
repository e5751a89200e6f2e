// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control protocol's request handler (include/coloc/protocol.h): parses
 * one JSON request with json-c, acts on the daemon state, and returns one
 * JSON response line. It owns no I/O: server.c moves the bytes, so the same
 * handler is driven by the socket and by tests.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <json-c/json.h>
#include "colocd.h"
#include "version.h"

static char *control_finish(struct json_object *resp)
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

static char *control_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *control_error(const char *fmt, ...)
{
	struct json_object *resp = json_object_new_object();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(resp, "ok", json_object_new_boolean(0));
	json_object_object_add(resp, "error", json_object_new_string(msg));
	return control_finish(resp);
}

static struct json_object *control_ok(void)
{
	struct json_object *resp = json_object_new_object();

	json_object_object_add(resp, "ok", json_object_new_boolean(1));
	return resp;
}

char *control_oversize_response(void)
{
	return control_error("request larger than %d bytes; closing the connection",
			     COLOC_MAX_REQUEST);
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

static __u64 control_now_window(const struct colocd *d, __u64 now_ns)
{
	return now_ns / ((__u64)d->cfg.window_ms * 1000000ull);
}

static struct json_object *control_tenant_json(struct colocd *d, struct tenant *t, __u64 now_ns)
{
	struct json_object *o = json_object_new_object();
	struct json_object *pids = json_object_new_array();
	struct coloc_tenant_total total;
	struct view_signals s;
	__u32 live = sensor_live_mask(d->sensor);

	json_object_object_add(o, "name", json_object_new_string(t->name));
	json_object_object_add(o, "id", json_object_new_int((int)t->id));
	for (int i = 0; i < t->nr_pids; i++)
		json_object_array_add(pids, json_object_new_int64(t->pids[i]));
	json_object_object_add(o, "pids", pids);
	json_object_object_add(o, "cgroup",
			       t->cgroup[0] ? json_object_new_string(t->cgroup) : NULL);
	view_tenant(d->view, t->id, control_now_window(d, now_ns),
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

static char *control_signals(struct colocd *d, __u64 now_ns)
{
	struct json_object *resp = control_ok();
	struct json_object *cpus = json_object_new_array();
	struct json_object *tenants = json_object_new_array();
	struct json_object *stats = json_object_new_object();
	unsigned int span = view_span_windows(d->view, d->cfg.span_ms);
	__u64 now_window = control_now_window(d, now_ns);
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
			json_object_array_add(tenants,
					      control_tenant_json(d, &d->tenants.slots[t], now_ns));
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

/* A process's Tgid from /proc: its own pid for a process, another for a thread. */
static int control_tgid_of(__u32 pid, __u32 *tgid)
{
	char path[32], line[128];
	int err = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %u", tgid) == 1) {
			err = 0;
			break;
		}
	fclose(f);
	return err;
}

#define CONTROL_CGROUP_ROOT "/sys/fs/cgroup/"

/*
 * Resolves a cgroup v2 directory below /sys/fs/cgroup and returns its id
 * (the inode number). Anything else gets one and the same answer, so the
 * socket cannot be used to probe which files exist.
 */
static int control_cgroup_id(const char *path, char *resolved, __u64 *id)
{
	struct statfs sfs;
	struct stat st;

	if (!realpath(path, resolved) ||
	    strncmp(resolved, CONTROL_CGROUP_ROOT, strlen(CONTROL_CGROUP_ROOT)) ||
	    statfs(resolved, &sfs) || stat(resolved, &st) || sfs.f_type != CGROUP2_SUPER_MAGIC ||
	    !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*id = st.st_ino;
	return 0;
}

static struct tenant *control_owner_of_cgroup(struct colocd *d, __u64 cgid)
{
	for (int i = 0; i < COLOC_MAX_TENANTS; i++)
		if (d->tenants.slots[i].used && d->tenants.slots[i].cgroup[0] &&
		    d->tenants.slots[i].cgroup_id == cgid)
			return &d->tenants.slots[i];
	return NULL;
}

/* Checks every pid of a tenant-add request before anything changes. */
static char *control_check_pids(struct colocd *d, struct json_object *jpids, size_t nr_pids,
				const char *name)
{
	for (size_t i = 0; i < nr_pids; i++) {
		struct json_object *p = json_object_array_get_idx(jpids, i);
		int64_t pid = json_object_get_int64(p);
		struct tenant *owner;
		__u32 tgid;

		if (!json_object_is_type(p, json_type_int) || pid <= 0 || pid > 0x3fffffff)
			return control_error("pids[%zu] is not a process id", i);
		if (control_tgid_of((__u32)pid, &tgid))
			return control_error("no process with pid %lld", (long long)pid);
		if (tgid != (__u32)pid)
			return control_error(
				"pid %lld is a thread of process %u: give the process id "
				"(all its threads belong to the tenant)",
				(long long)pid, tgid);
		owner = tenants_owner_of_pid(&d->tenants, (__u32)pid);
		if (owner && strcmp(owner->name, name))
			return control_error("pid %lld already belongs to tenant '%s'",
					     (long long)pid, owner->name);
	}
	return NULL;
}

static char *control_tenant_add(struct colocd *d, struct json_object *req, __u64 now_ns)
{
	struct json_object *jname, *jpids = NULL, *jcg = NULL;
	char cgroup[PATH_MAX];
	const char *name;
	struct tenant *t, *owner;
	__u64 cgid = 0;
	bool created = false, have_cgroup = false;
	size_t nr_pids = 0;
	char *bad;
	int err;

	if (!json_object_object_get_ex(req, "name", &jname) ||
	    !json_object_is_type(jname, json_type_string))
		return control_error("tenant-add needs \"name\": a string");
	name = json_object_get_string(jname);
	if ((size_t)json_object_get_string_len(jname) != strlen(name) || !tenants_valid_name(name))
		return control_error(
			"bad tenant name '%.80s': use 1-%d characters of A-Z a-z 0-9 _ . -", name,
			COLOC_MAX_NAME - 1);
	if (json_object_object_get_ex(req, "pids", &jpids)) {
		if (!json_object_is_type(jpids, json_type_array))
			return control_error("\"pids\" must be an array of process ids");
		nr_pids = json_object_array_length(jpids);
		if (nr_pids > COLOC_MAX_PIDS_PER_REQUEST)
			return control_error("too many pids (%zu); at most %d per request", nr_pids,
					     COLOC_MAX_PIDS_PER_REQUEST);
	}
	if (json_object_object_get_ex(req, "cgroup", &jcg)) {
		if (!json_object_is_type(jcg, json_type_string))
			return control_error("\"cgroup\" must be a path");
		if (control_cgroup_id(json_object_get_string(jcg), cgroup, &cgid))
			return control_error(
				"cgroup '%.200s' is not an existing cgroup v2 directory "
				"below %s (on hybrid systems v2 is mounted at "
				"%sunified)",
				json_object_get_string(jcg), CONTROL_CGROUP_ROOT,
				CONTROL_CGROUP_ROOT);
		have_cgroup = true;
		owner = control_owner_of_cgroup(d, cgid);
		if (owner && strcmp(owner->name, name))
			return control_error("cgroup %s already belongs to tenant '%s'", cgroup,
					     owner->name);
	}
	if (!nr_pids && !have_cgroup)
		return control_error("tenant-add needs \"pids\" (non-empty) or \"cgroup\"");
	bad = control_check_pids(d, jpids, nr_pids, name);
	if (bad)
		return bad;

	t = tenants_find(&d->tenants, name);
	if (t && have_cgroup && t->cgroup[0] && t->cgroup_id != cgid)
		return control_error(
			"tenant '%s' already has cgroup %s; remove the tenant to change it", name,
			t->cgroup);
	if (!t) {
		t = tenants_create(&d->tenants, name);
		if (!t)
			return control_error("all %d tenant slots are taken; remove one first",
					     COLOC_MAX_TENANTS);
		created = true;
		/* a reused slot must not inherit the previous tenant's numbers */
		sensor_tenant_clear(d->sensor, t->id);
		view_tenant_reset(d->view, t->id);
	}
	for (size_t i = 0; i < nr_pids; i++) {
		__u32 pid = (__u32)json_object_get_int64(json_object_array_get_idx(jpids, i));

		if (!tenants_add_pid(t, pid)) {
			err = -ENOSPC;
			goto fail;
		}
		err = sensor_tenant_add_pid(d->sensor, t->id, pid);
		if (err)
			goto fail;
	}
	if (have_cgroup) {
		err = sensor_tenant_add_cgroup(d->sensor, t->id, cgid);
		if (err)
			goto fail;
		snprintf(t->cgroup, sizeof(t->cgroup), "%s", cgroup);
		t->cgroup_id = cgid;
	}
	struct json_object *resp = control_ok();

	json_object_object_add(resp, "tenant", control_tenant_json(d, t, now_ns));
	return control_finish(resp);
fail:
	if (created) {
		sensor_tenant_clear(d->sensor, t->id);
		tenants_release(t);
	}
	return control_error("cannot attribute to tenant '%s': %s", name,
			     err == -ENOSPC ? "it already has the most pids a tenant can hold" :
					      strerror(-err));
}

static char *control_tenant_remove(struct colocd *d, struct json_object *req)
{
	struct json_object *jname;
	struct tenant *t;

	if (!json_object_object_get_ex(req, "name", &jname) ||
	    !json_object_is_type(jname, json_type_string))
		return control_error("tenant-remove needs \"name\": a string");
	t = tenants_find(&d->tenants, json_object_get_string(jname));
	if (!t)
		return control_error("no tenant named '%.80s'", json_object_get_string(jname));
	sensor_tenant_clear(d->sensor, t->id);
	view_tenant_reset(d->view, t->id);
	tenants_release(t);
	return control_finish(control_ok());
}

static char *control_tenants(struct colocd *d, __u64 now_ns)
{
	struct json_object *resp = control_ok();
	struct json_object *arr = json_object_new_array();

	for (int t = 0; t < COLOC_MAX_TENANTS; t++)
		if (d->tenants.slots[t].used)
			json_object_array_add(arr,
					      control_tenant_json(d, &d->tenants.slots[t], now_ns));
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

char *control_handle(struct colocd *d, const char *line, size_t len, __u64 now_ns)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *req, *jcmd;
	enum json_tokener_error jerr;
	const char *cmd;
	char *resp;

	if (!tok)
		return control_error("out of memory");
	req = json_tokener_parse_ex(tok, line, (int)len);
	jerr = json_tokener_get_error(tok);
	if (!req || jerr != json_tokener_success || json_tokener_get_parse_end(tok) != len) {
		if (req)
			json_object_put(req);
		resp = jerr == json_tokener_continue || jerr == json_tokener_success ?
			       control_error("malformed request: incomplete or trailing JSON") :
			       control_error("malformed request: %s at byte %d",
					     json_tokener_error_desc(jerr),
					     (int)json_tokener_get_parse_end(tok));
		json_tokener_free(tok);
		return resp;
	}
	json_tokener_free(tok);
	if (!json_object_is_type(req, json_type_object)) {
		json_object_put(req);
		return control_error("a request must be a JSON object with a \"cmd\"");
	}
	if (!json_object_object_get_ex(req, "cmd", &jcmd) ||
	    !json_object_is_type(jcmd, json_type_string)) {
		json_object_put(req);
		return control_error("missing \"cmd\": one of ping, signals, tenants, tenant-add, "
				     "tenant-remove");
	}
	cmd = json_object_get_string(jcmd);
	if (!strcmp(cmd, "ping"))
		resp = control_ping();
	else if (!strcmp(cmd, "signals"))
		resp = control_signals(d, now_ns);
	else if (!strcmp(cmd, "tenants"))
		resp = control_tenants(d, now_ns);
	else if (!strcmp(cmd, "tenant-add"))
		resp = control_tenant_add(d, req, now_ns);
	else if (!strcmp(cmd, "tenant-remove"))
		resp = control_tenant_remove(d, req);
	else
		resp = control_error(
			"unknown cmd '%.64s': one of ping, signals, tenants, tenant-add, "
			"tenant-remove",
			cmd);
	json_object_put(req);
	return resp;
}
