// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control protocol's request handler (include/coloc/protocol.h): parses
 * one JSON request with json-c in strict mode, calls the module that owns
 * the state (tenants.c for tenants, the sensor and view for signals), and
 * returns one JSON response line, always valid UTF-8. It owns no I/O and no
 * state: server.c moves the bytes, so the same handler is driven by the
 * socket and by tests.
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
#include "utf8.h"
#include "util.h"
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
	/* file names and cut messages may hold any bytes; the response may not */
	utf8_sanitize(msg);
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
	for (int i = 0; i < t->nr_procs; i++)
		json_object_array_add(pids, json_object_new_int64(t->procs[i]->pid));
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

static char *control_tenant_add(struct colocd *d, struct json_object *req, __u64 now_ns)
{
	struct json_object *jname, *jpids = NULL, *jcg = NULL, *resp;
	struct tenants_add_req add = { 0 };
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
	json_object_object_add(resp, "tenant", control_tenant_json(d, t, now_ns));
	return control_finish(resp);
}

static char *control_tenant_remove(struct colocd *d, struct json_object *req)
{
	struct coloc_err err = { 0 };
	struct json_object *jname;

	if (!json_object_object_get_ex(req, "name", &jname) ||
	    !json_object_is_type(jname, json_type_string))
		return control_error("tenant-remove needs \"name\": a string");
	if (tenants_remove(&d->tenants, json_object_get_string(jname), &err))
		return control_error("%s", coloc_err_str(&err));
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

/* A command and its handler: a new command is one entry. */
struct control_cmd {
	const char *name;
	char *(*handle)(struct colocd *d, struct json_object *req, __u64 now_ns);
};

static char *control_cmd_ping(struct colocd *d, struct json_object *req, __u64 now_ns)
{
	(void)d;
	(void)req;
	(void)now_ns;
	return control_ping();
}

static char *control_cmd_signals(struct colocd *d, struct json_object *req, __u64 now_ns)
{
	(void)req;
	return control_signals(d, now_ns);
}

static char *control_cmd_tenants(struct colocd *d, struct json_object *req, __u64 now_ns)
{
	(void)req;
	return control_tenants(d, now_ns);
}

static char *control_cmd_tenant_remove(struct colocd *d, struct json_object *req, __u64 now_ns)
{
	(void)now_ns;
	return control_tenant_remove(d, req);
}

static const struct control_cmd control_cmds[] = {
	{ "ping", control_cmd_ping },
	{ "signals", control_cmd_signals },
	{ "tenants", control_cmd_tenants },
	{ "tenant-add", control_tenant_add },
	{ "tenant-remove", control_cmd_tenant_remove },
};

#define CONTROL_CMD_LIST "one of ping, signals, tenants, tenant-add, tenant-remove"

/* True when some string in o, at any depth, holds a NUL (json-c keeps "\u0000"). */
static bool control_has_nul(struct json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_string:
		return strlen(json_object_get_string(o)) != (size_t)json_object_get_string_len(o);
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			if (control_has_nul(json_object_array_get_idx(o, i)))
				return true;
		return false;
	case json_type_object: {
		json_object_object_foreach(o, key, val)
		{
			if (control_has_nul(val))
				return true;
			(void)key;
		}
		return false;
	}
	default:
		return false;
	}
}

/*
 * What json-c 0.16's strict mode still lets through, found on the raw line:
 * a 'name' in single quotes, NaN and Infinity, a number ending in '.', a
 * raw control character inside a string. NULL if none, else what it is,
 * with its offset in *at.
 */
static const char *control_loose_json(const char *line, size_t len, size_t *at)
{
	bool in_string = false;

	for (*at = 0; *at < len; (*at)++) {
		unsigned char c = (unsigned char)line[*at];

		if (in_string) {
			if (c == '\\')
				(*at)++;
			else if (c == '"')
				in_string = false;
			else if (c < 0x20)
				return "a raw control character in a string (write it as an escape)";
		} else if (c == '"') {
			in_string = true;
		} else if (c == '\'') {
			return "a single quote (strict JSON quotes with \")";
		} else if (c == 'N' || c == 'I') {
			return "NaN or Infinity (not JSON numbers)";
		} else if (c == '.' &&
			   (*at + 1 >= len || line[*at + 1] < '0' || line[*at + 1] > '9')) {
			return "a number ending in '.'";
		}
	}
	return NULL;
}

/*
 * Strict JSON (no comments, single quotes or trailing commas), valid UTF-8,
 * one value filling the whole line. NULL with *resp set on failure.
 */
static struct json_object *control_parse(const char *line, size_t len, char **resp)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *req;
	enum json_tokener_error jerr;
	const char *loose;
	size_t at;

	if (!tok) {
		*resp = control_error("out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	req = json_tokener_parse_ex(tok, line, (int)len);
	jerr = json_tokener_get_error(tok);
	loose = req && jerr == json_tokener_success ? control_loose_json(line, len, &at) : NULL;
	if (loose) {
		json_object_put(req);
		json_tokener_free(tok);
		*resp = control_error("malformed request: %s at byte %zu", loose, at);
		return NULL;
	}
	if (!req || jerr != json_tokener_success || json_tokener_get_parse_end(tok) != len) {
		if (req)
			json_object_put(req);
		req = NULL;
		*resp = jerr == json_tokener_continue || jerr == json_tokener_success ?
				control_error("malformed request: incomplete or trailing JSON") :
				control_error("malformed request: %s at byte %d (strict JSON: no "
					      "comments, single quotes or trailing commas; UTF-8)",
					      json_tokener_error_desc(jerr),
					      (int)json_tokener_get_parse_end(tok));
	}
	json_tokener_free(tok);
	return req;
}

char *control_handle(struct colocd *d, const char *line, size_t len, __u64 now_ns)
{
	struct json_object *req, *jcmd;
	const char *cmd;
	char *resp = NULL;

	req = control_parse(line, len, &resp);
	if (!req)
		return resp;
	if (!json_object_is_type(req, json_type_object))
		resp = control_error("a request must be a JSON object with a \"cmd\"");
	else if (control_has_nul(req))
		resp = control_error("a string in the request holds a NUL character (\\u0000)");
	else if (!json_object_object_get_ex(req, "cmd", &jcmd) ||
		 !json_object_is_type(jcmd, json_type_string))
		resp = control_error("missing \"cmd\": " CONTROL_CMD_LIST);
	if (resp) {
		json_object_put(req);
		return resp;
	}
	cmd = json_object_get_string(jcmd);
	for (size_t i = 0; i < ARRAY_SIZE(control_cmds) && !resp; i++)
		if (!strcmp(cmd, control_cmds[i].name))
			resp = control_cmds[i].handle(d, req, now_ns);
	/* cut to 64 bytes; control_error drops a character the cut split */
	if (!resp)
		resp = control_error("unknown cmd '%.64s': " CONTROL_CMD_LIST, cmd);
	json_object_put(req);
	return resp;
}
