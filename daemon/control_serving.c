// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control protocol's commands on submitted tenants other than submit
 * and infer (include/coloc/protocol.h): list, status, restart and remove,
 * and a serving tenant as JSON (control_serving_tenant_json, which submit's
 * answer uses too). What a caller sees of tenants not its own: their name,
 * state and owner, nothing more (docs/security-owners.md). A remove waits
 * for the tenant's drain in the daemon core (colocd_await_removal).
 * Dispatched by control.c.
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
#include "policy.h"
#include "tenants_key.h"
#include "util.h"

static double control_ms(uint64_t ns)
{
	return (double)ns / 1e6;
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

	json_object_object_add(o, "name", json_object_new_string(tenants_key_name(in->name)));
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
	json_object_object_add(o, "inputs_mapped",
			       json_object_new_int64((int64_t)in->inputs_mapped));
	json_object_object_add(o, "early_rings",
			       json_object_new_int64((int64_t)in->early_rings));
	json_object_object_add(o, "clamped_times",
			       json_object_new_int64((int64_t)in->clamped_times));
	json_object_object_add(o, "overruns", json_object_new_int64((int64_t)in->overruns));
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

char *control_cmd_list(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
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

			json_object_object_add(
				o, "tenant",
				json_object_new_string(tenants_key_name(cores[i].tenant)));
			json_object_object_add(
				o, "owner", json_object_new_int64(tenants_key_owner(cores[i].tenant)));
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

char *control_cmd_status(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
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
		return control_error("no tenant named '%.80s'", only);
	}
	resp = control_ok();
	json_object_object_add(resp, "tenants", arr);
	json_object_object_add(resp, "cores", control_cores_json(d, uid));
	json_object_object_add(resp, "policy_errors",
			       json_object_new_int64((int64_t)policy_errors));
	json_object_object_add(resp, "last_policy_error", control_reason(perr ? perr : ""));
	return control_finish(resp);
}

char *control_cmd_restart(struct colocd *d, struct json_object *req, uid_t uid, __u64 now_ns)
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

char *control_cmd_remove(struct colocd *d, struct json_object *req, uid_t uid,
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
