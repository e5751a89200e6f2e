// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The metrics listener (metrics.h). Families are tables: each entry names
 * a metric, its type and help, and where its value comes from (a counter
 * of the gateway, or a key of colocd's JSON), so a new series is one line.
 * Every family's samples are printed together, after its HELP and TYPE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include "http_conns.h"
#include "http_deadline.h"
#include "metrics.h"
#include "mono_clock.h"
#include "send_buffer.h"

/*
 * One scraper needs a connection or two: a client holding the port's
 * connections (review s18 LOW 1) is kept to these, and each request must
 * arrive whole and be answered within the deadline, as on the infer port.
 * Many clients holding them all (review s19 LOW 1: any local user binds
 * any 127.0.0.0/8 address): at MX_CONNS a new connection cuts the one
 * whose deadline comes first, waiting for its request or for its answer to
 * be taken (review s20 LOW 1: requests pipelined and never read), so a
 * scrape, whose request comes at once and whose answer is read at once,
 * gets in; libmicrohttpd's own limit leaves room for those cut while they
 * close. An answer is ~5 KB: MX_SEND_BUFFER_BYTES keeps what the kernel
 * holds for a client that does not read to a few of them (review s20
 * MEDIUM 1).
 */
#define MX_CONNS 256u
#define MX_CONNS_MHD (2 * MX_CONNS)
#define MX_CONNS_PER_CLIENT 4
#define MX_REQUEST_TIMEOUT_MS 5000
#define MX_SEND_BUFFER_BYTES (16 << 10)

struct gw_metrics {
	struct MHD_Daemon *d;
	struct gw_models *ms;
	struct gw_ctl *ctl;
	struct gw_http_conns *conns;
	struct gw_http_deadline *dl;
	atomic_uint open; /* connections started and not closed */
};

static void mx_header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values are colocd's names ([A-Za-z0-9_.-]); escaped anyway, as the format asks. */
static void mx_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* ---- the gateway's own counters, per model ---------------------------------------- */

static const struct {
	const char *name, *help;
	size_t offset; /* in struct gw_model_stats */
} mx_model_counters[] = {
	{ "coloc_inference_request_success", "Inference requests answered with outputs",
	  offsetof(struct gw_model_stats, success) },
	{ "coloc_inference_request_failure", "Inference requests that failed after being forwarded",
	  offsetof(struct gw_model_stats, failure) },
	{ "coloc_inference_count", "Inferences run (one per request: batch size 1)",
	  offsetof(struct gw_model_stats, count) },
	{ "coloc_inference_request_duration_us",
	  "Cumulative time from a request's arrival at the gateway to its answer",
	  offsetof(struct gw_model_stats, request_us) },
	{ "coloc_inference_queue_duration_us",
	  "Cumulative time queries waited in colocd (latency minus executor time)",
	  offsetof(struct gw_model_stats, queue_us) },
	{ "coloc_inference_compute_duration_us", "Cumulative time executors ran the queries",
	  offsetof(struct gw_model_stats, compute_us) },
};

/* A counter of one label: each of its values' counts in struct gw_model_stats. */
struct mx_labelled {
	const char *value;
	size_t offset;
};

static const struct mx_labelled mx_refusals[] = {
	{ "queue_full", offsetof(struct gw_model_stats, refused_full) },
	{ "timeout", offsetof(struct gw_model_stats, refused_timeout) },
	{ "bad_request", offsetof(struct gw_model_stats, refused_bad_request) },
	{ "not_ready", offsetof(struct gw_model_stats, refused_not_ready) },
	{ NULL, 0 },
};

static const struct mx_labelled mx_protocols[] = {
	{ "http", offsetof(struct gw_model_stats, requests_http) },
	{ "grpc", offsetof(struct gw_model_stats, requests_grpc) },
	{ NULL, 0 },
};

struct mx_model_pass {
	FILE *f;
	size_t offset;
	const char *metric, *label, *value; /* an extra label="value", or label NULL */
};

static void mx_model_labels(FILE *f, const struct gw_model *m)
{
	fputs("{model=\"", f);
	mx_label(f, m->cfg.name);
	fputs("\",version=\"", f);
	mx_label(f, m->cfg.version);
	fputc('"', f);
}

static void mx_model_sample(struct gw_model *m, void *arg)
{
	struct mx_model_pass *p = arg;
	atomic_ullong *v = (atomic_ullong *)((char *)&m->stats + p->offset);

	pthread_rwlock_rdlock(&m->lock);
	fputs(p->metric, p->f);
	mx_model_labels(p->f, m);
	if (p->label)
		fprintf(p->f, ",%s=\"%s\"", p->label, p->value);
	pthread_rwlock_unlock(&m->lock);
	fprintf(p->f, "} %llu\n", (unsigned long long)atomic_load(v));
}

static void mx_model_ready(struct gw_model *m, void *arg)
{
	FILE *f = arg;

	pthread_rwlock_rdlock(&m->lock);
	fputs("coloc_model_ready", f);
	mx_model_labels(f, m);
	pthread_rwlock_unlock(&m->lock);
	fprintf(f, "} %d\n", atomic_load(&m->state) == GW_MODEL_READY);
}

/* A counter's header, then a sample a model and value of its label (values end at NULL). */
static void mx_write_labelled(struct mx_model_pass *p, struct gw_models *ms, const char *metric,
			      const char *help, const char *label, const struct mx_labelled *values)
{
	p->metric = metric;
	mx_header(p->f, metric, "counter", help);
	p->label = label;
	for (const struct mx_labelled *v = values; v->value; v++) {
		p->value = v->value;
		p->offset = v->offset;
		gw_models_each(ms, mx_model_sample, p);
	}
}

static void mx_write_models(FILE *f, struct gw_models *ms)
{
	struct mx_model_pass p = { .f = f };

	for (size_t i = 0; i < sizeof(mx_model_counters) / sizeof(*mx_model_counters); i++) {
		p.metric = mx_model_counters[i].name;
		p.offset = mx_model_counters[i].offset;
		mx_header(f, p.metric, "counter", mx_model_counters[i].help);
		gw_models_each(ms, mx_model_sample, &p);
	}
	mx_write_labelled(&p, ms, "coloc_gateway_refusals_total",
			  "Requests the gateway refused or gave up on, by reason", "reason",
			  mx_refusals);
	mx_write_labelled(&p, ms, "coloc_gateway_requests_total",
			  "Infer requests the gateway received, by front door", "protocol",
			  mx_protocols);
	mx_header(f, "coloc_model_ready", "gauge", "1 when the model is loaded and warmed up");
	gw_models_each(ms, mx_model_ready, f);
}

/* ---- colocd's numbers, by table ----------------------------------------------------- */

struct mx_field {
	const char *name, *type, *help;
	const char *key; /* in each object of the array */
	const char *label_value; /* an extra label="value" pair, or NULL */
};

/* Serving tenants, from status: label tenant. */
static const struct mx_field mx_tenant_fields[] = {
	{ "coloc_tenant_qos_target_ms", "gauge", "The tenant's QoS target", "qos_ms", NULL },
	{ "coloc_tenant_solo_ms", "gauge", "Profiled latency alone on all served cores", "solo_ms",
	  NULL },
	{ "coloc_tenant_within_qos_ratio", "gauge", "Share of served queries within QoS",
	  "within_qos", NULL },
	{ "coloc_tenant_queries_total", "counter", "Queries by outcome", "offered",
	  "outcome=\"offered\"" },
	{ "coloc_tenant_queries_total", NULL, NULL, "served", "outcome=\"served\"" },
	{ "coloc_tenant_queries_total", NULL, NULL, "dropped", "outcome=\"dropped\"" },
	{ "coloc_tenant_queries_total", NULL, NULL, "rejected", "outcome=\"rejected\"" },
	{ "coloc_tenant_queries_total", NULL, NULL, "failed", "outcome=\"failed\"" },
	{ "coloc_tenant_queued", "gauge", "Queries waiting in colocd", "queued", NULL },
	{ "coloc_tenant_in_flight", "gauge", "Queries running", "in_flight", NULL },
	{ "coloc_tenant_offered_rate", "gauge", "Queries offered per second (last 10 s)",
	  "offered_rate", NULL },
	{ "coloc_tenant_served_rate", "gauge", "Queries served per second (last 10 s)",
	  "served_rate", NULL },
	{ "coloc_tenant_latency_ms", "gauge", "Latency quantiles over the last 1024 served",
	  "p50_ms", "quantile=\"0.5\"" },
	{ "coloc_tenant_latency_ms", NULL, NULL, "p95_ms", "quantile=\"0.95\"" },
	{ "coloc_tenant_latency_ms", NULL, NULL, "p99_ms", "quantile=\"0.99\"" },
	{ "coloc_tenant_executors", "gauge", "Executor processes", "executors", NULL },
	{ "coloc_tenant_moved_total", "counter", "Queries moved to an idle executor", "moved",
	  NULL },
};

/* CPUs, from signals: label cpu. */
static const struct mx_field mx_cpu_fields[] = {
	{ "coloc_cpu_busy_ratio", "gauge", "Share of the window the CPU ran tasks", "busy", NULL },
	{ "coloc_cpu_context_switches_per_second", "gauge", "Context switches",
	  "ctx_switches_per_s", NULL },
	{ "coloc_cpu_migrations_per_second", "gauge", "Task migrations onto the CPU",
	  "migrations_per_s", NULL },
	{ "coloc_cpu_page_faults_per_second", "gauge", "Page faults", "page_faults_per_s", NULL },
	{ "coloc_cpu_ipc", "gauge", "Instructions per cycle (PMU only)", "ipc", NULL },
	{ "coloc_cpu_llc_mpki", "gauge", "LLC misses per kilo-instruction (PMU only)", "llc_mpki",
	  NULL },
	{ "coloc_cpu_llc_miss_ratio", "gauge", "LLC miss ratio (PMU only)", "llc_miss_ratio",
	  NULL },
	{ "coloc_cpu_dram_gbps", "gauge", "DRAM traffic (PMU only)", "dram_gbps", NULL },
};

/* Attributed tenants, from signals: label tenant. */
static const struct mx_field mx_signal_tenant_fields[] = {
	{ "coloc_tenant_cpu_busy", "gauge", "CPUs' worth the tenant's tasks ran over the span",
	  "busy", NULL },
	{ "coloc_tenant_on_cpu_ns_total", "counter", "Time the tenant's tasks held a CPU",
	  "on_cpu_ns", NULL },
};

static void mx_write_table(FILE *f, struct json_object *arr, const struct mx_field *fields,
			   size_t nr, const char *label, const char *label_key)
{
	for (size_t i = 0; i < nr; i++) {
		const struct mx_field *fl = &fields[i];

		if (fl->type)
			mx_header(f, fl->name, fl->type, fl->help);
		for (size_t k = 0; k < json_object_array_length(arr); k++) {
			struct json_object *o = json_object_array_get_idx(arr, k), *v, *id;

			if (!json_object_object_get_ex(o, fl->key, &v) ||
			    !(json_object_is_type(v, json_type_double) ||
			      json_object_is_type(v, json_type_int)) ||
			    !json_object_object_get_ex(o, label_key, &id))
				continue;
			fprintf(f, "%s{%s=\"", fl->name, label);
			mx_label(f, json_object_get_string(id));
			fputc('"', f);
			if (fl->label_value)
				fprintf(f, ",%s", fl->label_value);
			if (json_object_is_type(v, json_type_int))
				fprintf(f, "} %lld\n", (long long)json_object_get_int64(v));
			else
				fprintf(f, "} %.9g\n", json_object_get_double(v));
		}
	}
}

static struct json_object *mx_array(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) &&
			       json_object_is_type(v, json_type_array) ?
		       v :
		       NULL;
}

/* Cores a tenant's blocks hold now, from status "cores". */
static void mx_write_cores_held(FILE *f, struct json_object *tenants, struct json_object *cores)
{
	mx_header(f, "coloc_tenant_cores_held", "gauge", "Cores the tenant's blocks hold now");
	for (size_t i = 0; i < json_object_array_length(tenants); i++) {
		struct json_object *t = json_object_array_get_idx(tenants, i), *name;
		int held = 0;

		if (!json_object_object_get_ex(t, "name", &name))
			continue;
		for (size_t c = 0; cores && c < json_object_array_length(cores); c++) {
			struct json_object *core = json_object_array_get_idx(cores, c), *v;

			if (json_object_object_get_ex(core, "tenant", &v) &&
			    !strcmp(json_object_get_string(v), json_object_get_string(name)))
				held++;
		}
		fputs("coloc_tenant_cores_held{tenant=\"", f);
		mx_label(f, json_object_get_string(name));
		fprintf(f, "\"} %d\n", held);
	}
	mx_header(f, "coloc_core_held", "gauge", "1 while a block holds the core");
	for (size_t c = 0; cores && c < json_object_array_length(cores); c++) {
		struct json_object *core = json_object_array_get_idx(cores, c), *cpu, *busy;

		if (json_object_object_get_ex(core, "cpu", &cpu) &&
		    json_object_object_get_ex(core, "busy", &busy))
			fprintf(f, "coloc_core_held{cpu=\"%d\"} %d\n", json_object_get_int(cpu),
				json_object_get_boolean(busy));
	}
}

static struct json_object *mx_call(struct gw_ctl *ctl, const char *cmd)
{
	struct json_object *req = json_object_new_object(), *resp;
	struct coloc_err err = { 0 };

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	resp = gw_ctl_call(ctl, req, &err);
	json_object_put(req);
	return resp;
}

/*
 * colocd's status and signals as of at most MX_CACHE_NS ago (each a
 * reference for the caller to put): a flood of scrapes costs colocd two
 * commands a second, not two a scrape.
 */
#define MX_CACHE_NS 1000000000ull
static struct {
	pthread_mutex_t lock;
	uint64_t at_ns;
	struct json_object *status, *signals;
} mx_cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void mx_colocd(struct gw_ctl *ctl, struct json_object **status,
		      struct json_object **signals)
{
	uint64_t now = coloc_now_ns();

	pthread_mutex_lock(&mx_cache.lock);
	if (!mx_cache.at_ns || now - mx_cache.at_ns >= MX_CACHE_NS || !mx_cache.status ||
	    !mx_cache.signals) {
		json_object_put(mx_cache.status);
		json_object_put(mx_cache.signals);
		mx_cache.status = mx_call(ctl, "status");
		mx_cache.signals = mx_call(ctl, "signals");
		mx_cache.at_ns = now;
	}
	*status = json_object_get(mx_cache.status);
	*signals = json_object_get(mx_cache.signals);
	pthread_mutex_unlock(&mx_cache.lock);
}

/*
 * Of colocd's tenants (an array of objects with "name"), those this gateway
 * serves: the metrics port answers anyone who reaches it, and colocd's other
 * tenants (other users', other gateways') are not theirs to list. A new
 * array (put it), or NULL.
 */
static struct json_object *mx_own_tenants(struct json_object *tenants, struct gw_models *ms)
{
	struct json_object *own;

	if (!tenants)
		return NULL;
	own = json_object_new_array();
	for (size_t i = 0; own && i < json_object_array_length(tenants); i++) {
		struct json_object *t = json_object_array_get_idx(tenants, i), *name, *owner;
		struct gw_model *m;

		/* a name is its owner's: another uid's tenant of a model's name is not the model's */
		if (!json_object_object_get_ex(t, "name", &name) ||
		    !json_object_is_type(name, json_type_string) ||
		    !json_object_object_get_ex(t, "owner", &owner) ||
		    json_object_get_int64(owner) != (int64_t)getuid())
			continue;
		m = gw_models_get_tenant(ms, json_object_get_string(name));
		if (!m)
			continue;
		gw_models_put(m);
		json_object_array_add(own, json_object_get(t));
	}
	return own;
}

static void mx_write_number(FILE *f, struct json_object *o, const char *key, const char *name,
			    const char *type, const char *help)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return;
	mx_header(f, name, type, help);
	fprintf(f, "%s %lld\n", name, (long long)json_object_get_int64(v));
}

void gw_metrics_write(FILE *f, struct gw_models *ms, struct gw_ctl *ctl)
{
	struct json_object *status, *signals, *sensor = NULL;

	mx_colocd(ctl, &status, &signals);

	mx_write_models(f, ms);
	mx_header(f, "coloc_colocd_up", "gauge", "1 when colocd answered this scrape");
	fprintf(f, "coloc_colocd_up %d\n", status && signals);
	if (status) {
		struct json_object *tenants = mx_own_tenants(mx_array(status, "tenants"), ms);

		if (tenants) {
			mx_write_table(f, tenants, mx_tenant_fields,
				       sizeof(mx_tenant_fields) / sizeof(*mx_tenant_fields),
				       "tenant", "name");
			mx_write_cores_held(f, tenants, mx_array(status, "cores"));
		}
		json_object_put(tenants);
		mx_write_number(f, status, "policy_errors", "coloc_policy_errors_total", "counter",
				"Decisions of the policy that colocd refused");
	}
	if (signals) {
		struct json_object *cpus = mx_array(signals, "cpus");
		struct json_object *tenants = mx_own_tenants(mx_array(signals, "tenants"), ms);

		if (cpus)
			mx_write_table(f, cpus, mx_cpu_fields,
				       sizeof(mx_cpu_fields) / sizeof(*mx_cpu_fields), "cpu",
				       "cpu");
		if (tenants)
			mx_write_table(f, tenants, mx_signal_tenant_fields,
				       sizeof(mx_signal_tenant_fields) /
					       sizeof(*mx_signal_tenant_fields),
				       "tenant", "name");
		json_object_put(tenants);
		json_object_object_get_ex(signals, "sensor", &sensor);
		mx_write_number(f, sensor, "samples", "coloc_sensor_samples_total", "counter",
				"Sampling windows the BPF sensor closed");
		mx_write_number(f, sensor, "records", "coloc_sensor_records_total", "counter",
				"Ring-buffer records read from the BPF sensor");
		mx_write_number(f, sensor, "drops", "coloc_sensor_drops_total", "counter",
				"Ring-buffer records the BPF sensor dropped");
	}
	json_object_put(status);
	json_object_put(signals);
}

static enum MHD_Result mx_access(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **con_cls)
{
	struct gw_metrics *mx = cls;
	struct MHD_Response *resp;
	enum MHD_Result r;
	unsigned int status = MHD_HTTP_OK;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)version;
	(void)upload;
	if (!*con_cls) {
		*con_cls = mx;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	gw_http_deadline_received(conn, 0);
	f = open_memstream(&text, &len);
	if (!f)
		return MHD_NO;
	if (strcmp(url, "/metrics")) {
		status = MHD_HTTP_NOT_FOUND;
		fputs("metrics are at /metrics\n", f);
	} else if (strcmp(method, MHD_HTTP_METHOD_GET)) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		fputs("GET /metrics\n", f);
	} else {
		gw_metrics_write(f, mx->ms, mx->ctl);
	}
	if (fclose(f)) {
		free(text);
		return MHD_NO;
	}
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static void mx_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)con_cls;
	(void)toe;
	gw_http_deadline_answered(conn);
}

static void mx_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		      enum MHD_ConnectionNotificationCode code)
{
	struct gw_metrics *mx = cls;

	gw_http_deadline_notify(mx->dl, conn, socket_context, code);
	gw_http_conns_notify(mx->conns, conn, code);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		gw_send_buffer_cap_mhd(conn, MX_SEND_BUFFER_BYTES);
		atomic_fetch_add(&mx->open, 1);
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
		atomic_fetch_sub(&mx->open, 1);
}

/* The client's limit, then, at MX_CONNS, the connection whose deadline comes first cut. */
static enum MHD_Result mx_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
	struct gw_metrics *mx = cls;

	if (gw_http_conns_accept(mx->conns, addr, len) == MHD_NO)
		return MHD_NO;
	/* refused now, its client's count is given back at the next accept (http_conns.c) */
	if (atomic_load(&mx->open) >= MX_CONNS && !gw_http_deadline_cut_soonest(mx->dl))
		return MHD_NO;
	return MHD_YES;
}

/* What gw_metrics_start made, beside the daemon, released. */
static void mx_free(struct gw_metrics *mx)
{
	gw_http_deadline_stop(mx->dl);
	gw_http_conns_destroy(mx->conns);
	free(mx);
}

int gw_metrics_start(const struct sockaddr_storage *addr, struct gw_models *ms, struct gw_ctl *ctl,
		     struct gw_metrics **out, struct coloc_err *err)
{
	struct gw_metrics *mx = calloc(1, sizeof(*mx));
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	int r;

	*out = NULL;
	if (!mx)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	mx->ms = ms;
	mx->ctl = ctl;
	mx->conns = gw_http_conns_create(MX_CONNS_PER_CLIENT, NULL);
	if (!mx->conns) {
		free(mx);
		return coloc_err_set(err, -ENOMEM, "out of memory");
	}
	r = gw_http_deadline_start(MX_REQUEST_TIMEOUT_MS, 0, &mx->dl, err);
	if (r) {
		mx_free(mx);
		return r;
	}
	if (addr->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	mx->d = MHD_start_daemon(flags, 0, mx_accept, mx, mx_access, mx,
				 MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_CONNECTION_LIMIT, MX_CONNS_MHD,
				 MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_NOTIFY_COMPLETED,
				 mx_completed, mx, MHD_OPTION_NOTIFY_CONNECTION, mx_notify, mx,
				 MHD_OPTION_END);
	if (!mx->d) {
		mx_free(mx);
		return coloc_err_set(err, -EADDRINUSE,
				     "cannot listen for metrics (address in use or not this "
				     "machine's?)");
	}
	*out = mx;
	return 0;
}

int gw_metrics_port(struct gw_metrics *mx)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(mx->d, MHD_DAEMON_INFO_BIND_PORT);

	return info ? info->port : -1;
}

void gw_metrics_stop(struct gw_metrics *mx)
{
	if (!mx)
		return;
	MHD_stop_daemon(mx->d);
	pthread_mutex_lock(&mx_cache.lock);
	json_object_put(mx_cache.status);
	json_object_put(mx_cache.signals);
	mx_cache.status = mx_cache.signals = NULL;
	mx_cache.at_ns = 0;
	pthread_mutex_unlock(&mx_cache.lock);
	mx_free(mx);
}
