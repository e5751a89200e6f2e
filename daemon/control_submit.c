// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The submit request (control_internal.h): the cheap checks first (no
 * byte of a file is copied for a submit they refuse), the client's
 * descriptors sealed off the loop (submit_copy.h), the cheap checks again
 * (the tenants may have changed meanwhile), then serving_admit; the answer
 * is deferred until the tenant's executors have described its model and
 * got ready with its profile's kernel versions, and colocd has checked
 * both (serving.h), and --state records the tenant then.
 * See docs/security-submit.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coloc/model_format.h"
#include "control_internal.h"
#include "subid.h"
#include "submit_copy.h"

/* A submit being admitted, until serving answers it (control_submit_admitted). */
struct control_admission {
	struct colocd *d;
	struct server *server; /* NULL: no client waits (a tenant --state brings back) */
	__u64 conn;
	uid_t uid;
	struct colocd_spec spec;
	struct colocd_files files; /* duplicates: --state keeps copies of them */
};

static void control_admission_free(struct control_admission *a)
{
	colocd_files_close(&a->files, a->spec.nr_external);
	free(a);
}

/* The answer to a client's submit: the tenant as admitted, or why not. */
static char *control_admitted_answer(struct control_admission *a, int ret,
				     const struct coloc_err *err, const struct coloc_err *warn)
{
	struct serving_tenant_info info;
	struct json_object *resp;

	if (ret)
		return control_error("%s", err ? coloc_err_str(err) : strerror(-ret));
	resp = control_ok();
	if (warn->code) /* admitted, but --state could not record it */
		json_object_object_add(resp, "warning", control_reason(coloc_err_str(warn)));
	if (!serving_tenant_info(a->d->serving, a->spec.name, &info))
		json_object_object_add(resp, "tenant",
				       control_serving_tenant_json(a->d, &info, a->uid));
	return control_finish(resp);
}

static void control_submit_admitted(void *ctx, const char *name, int ret,
				    const struct coloc_err *err)
{
	struct control_admission *a = ctx;
	struct coloc_err warn = { 0 };
	const char *state_path = a->d->cfg.state_path;
	char *line;

	/* a tenant --state brought back is in the state file already */
	if (!ret && a->server)
		colocd_spec_add(a->d, &a->spec, &a->files, &warn);
	else if (!ret)
		colocd_spec_restore(a->d, &a->spec, &warn);
	if (!a->server) {
		if (ret)
			fprintf(stderr, "colocd: tenant %s from %s did not come back: %s\n", name,
				state_path ? state_path : "the state file",
				err ? coloc_err_str(err) : strerror(-ret));
		else
			printf("colocd: tenant %s submitted again from %s\n", name,
			       state_path ? state_path : "the state file");
		control_admission_free(a);
		return;
	}
	/* a stale profile is the operator's to measure again, not the submitter's */
	if (ret == -ESTALE)
		fprintf(stderr, "colocd: submit of tenant %s refused: %s\n", name,
			err ? coloc_err_str(err) : strerror(-ret));
	line = control_admitted_answer(a, ret, err, &warn);
	/* a client gone meanwhile: -ENOTCONN, nothing to do */
	if (line)
		server_send(a->server, a->conn, line, NULL, 0);
	free(line);
	control_admission_free(a);
}

/* control_submit_spec, with the files' profile key when it was computed off the loop (else NULL). */
static int control_submit_keyed(struct colocd *d, const struct colocd_spec *spec,
				const struct colocd_files *files, struct server_req *sreq,
				uid_t uid, const struct profile_key *key, struct coloc_err *err)
{
	struct serving_external ext[COLOC_MAX_REQUEST_FDS];
	struct control_admission *a = calloc(1, sizeof(*a));
	struct serving_tenant_spec ts = {
		.name = spec->name,
		.model_name = spec->model,
		.model_fd = files->model_fd,
		.weights_fd = files->weights_fd,
		.external = ext,
		.nr_external = spec->nr_external,
		.qos_ns = spec->qos_ns,
		.executors = spec->executors,
		.owner = spec->owner,
		.admitted = control_submit_admitted,
		.admitted_ctx = a,
		.model_keyed = key != NULL,
		.model_key = key ? *key : (struct profile_key){ { 0 } },
	};
	int ret;

	/* a reload made its owner subordinate while its files were copied, or colocd was down */
	if (subid_owner(spec->owner)) {
		free(a);
		return coloc_err_set(err, -EPERM, "its owner, uid %u, is a subordinate id now",
				     (unsigned int)spec->owner);
	}
	if (!a)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	a->d = d;
	a->server = sreq ? sreq->server : NULL;
	a->conn = sreq ? sreq->conn : 0;
	a->uid = uid;
	a->spec = *spec;
	ret = colocd_files_dup(files, spec->nr_external, &a->files);
	if (ret) {
		coloc_err_set(err, ret, "duplicating the submit's files: %s", strerror(-ret));
		control_admission_free(a);
		return ret;
	}
	if (d->draining) {
		control_admission_free(a);
		return coloc_err_set(err, -ESHUTDOWN, "colocd is shutting down");
	}
	for (int i = 0; i < spec->nr_external; i++)
		ext[i] = (struct serving_external){ spec->external[i], files->external_fd[i] };
	/* in the same turn of the loop as the admission that attributes its executors */
	ret = tenants_room(&d->tenants, spec->name, spec->owner, err);
	if (!ret)
		ret = serving_admit(d->serving, &ts, err);
	if (ret) {
		control_admission_free(a);
		return ret;
	}
	if (sreq)
		server_req_defer(sreq);
	return 0;
}

int control_submit_spec(struct colocd *d, const struct colocd_spec *spec,
			const struct colocd_files *files, struct server_req *sreq, uid_t uid,
			struct coloc_err *err)
{
	return control_submit_keyed(d, spec, files, sreq, uid, NULL, err);
}

/*
 * An ONNX external data location as the client sent it: a relative path
 * below the model's directory (no leading '/', no ".." component), as the
 * importer accepts; it is a name only, colocd opens nothing by it.
 */
static bool control_location_ok(const char *loc)
{
	size_t n = strlen(loc);

	if (!n || n >= COLOCD_LOCATION_LEN || loc[0] == '/')
		return false;
	for (const char *p = loc; *p;) {
		size_t k = strcspn(p, "/");

		if (k == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p += k;
		p += *p == '/';
	}
	return true;
}

/* The submit's "external" locations into spec; NULL or the error answer. */
static char *control_submit_external(struct json_object *req, struct colocd_spec *spec)
{
	struct json_object *arr;
	size_t n;

	if (!json_object_object_get_ex(req, "external", &arr))
		return NULL;
	if (!json_object_is_type(arr, json_type_array) ||
	    (n = json_object_array_length(arr)) > COLOC_MAX_REQUEST_FDS - 1)
		return control_error("\"external\" must be an array of at most %d locations",
				     COLOC_MAX_REQUEST_FDS - 1);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);
		const char *loc =
			json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

		if (!loc || !control_location_ok(loc))
			return control_error("\"external\"[%zu] is not a relative path below the "
					     "model's directory (no '..', under %d bytes)",
					     i, COLOCD_LOCATION_LEN);
		for (int k = 0; k < spec->nr_external; k++)
			if (!strcmp(spec->external[k], loc))
				return control_error("\"external\" names '%.200s' twice", loc);
		snprintf(spec->external[spec->nr_external++], COLOCD_LOCATION_LEN, "%s", loc);
	}
	return NULL;
}

/*
 * A submit whose files are being copied (submit_copy.h), until they are
 * in; its hold keeps its place in its owner's quotas meanwhile.
 */
struct control_copying {
	struct colocd *d;
	struct server *server;
	__u64 conn;
	uid_t uid;
	struct colocd_spec spec;
	struct serving_hold *hold;
};

/*
 * What can refuse the submit without its files (serving_admit_check: name,
 * executors, QoS, places, quotas), asked before a byte is copied: a refused
 * submit then costs colocd nothing. With hold, the submit's place in its
 * owner's quotas is held in *hold until serving_release. NULL or the error
 * answer.
 */
static char *control_submit_precheck(struct colocd *d, const struct colocd_spec *spec,
				     struct serving_hold **hold)
{
	struct serving_tenant_spec ts = { .name = spec->name,
					  .model_fd = -1,
					  .weights_fd = -1,
					  .qos_ns = spec->qos_ns,
					  .executors = spec->executors,
					  .owner = spec->owner };
	struct coloc_err err = { 0 };
	int ret;

	if (d->draining)
		return control_error("colocd is shutting down");
	/* its executors' attributed tenant: a submit without one is refused, never half-admitted */
	ret = tenants_room(&d->tenants, spec->name, spec->owner, &err);
	if (ret)
		return control_error("tenant %s: %s", spec->name, coloc_err_str(&err));
	ret = hold ? serving_hold(d->serving, &ts, hold, &err) :
		     serving_admit_check(d->serving, &ts, &err);
	return ret ? control_error("%s", coloc_err_str(&err)) : NULL;
}

/*
 * The files are in (or why not): the cheap checks again, then admission
 * as for any submit; a refusal answers the client here.
 */
static void control_submit_copied(void *ctx, int ret, const int *sealed, int nr,
				  const struct profile_key *key, const struct coloc_err *err)
{
	struct control_copying *p = ctx;
	struct server_req sreq = { .server = p->server, .conn = p->conn, .uid = p->uid };
	struct colocd_files files = { .model_fd = -1, .weights_fd = -1 };
	struct coloc_err aerr = { 0 };
	char *bad = NULL;
	int at = 0;

	serving_release(p->d->serving, p->hold);
	for (int i = 0; i < COLOC_MAX_REQUEST_FDS; i++)
		files.external_fd[i] = -1;
	if (ret == -ECANCELED) { /* colocd is stopping: nobody is answered any more */
		free(p);
		return;
	}
	if (ret)
		bad = control_error("%s", coloc_err_str(err));
	if (!bad)
		bad = control_submit_precheck(p->d, &p->spec, NULL);
	if (!bad) {
		files.model_fd = sealed[at++];
		if (p->spec.weights[0])
			files.weights_fd = sealed[at++];
		for (int i = 0; i < p->spec.nr_external && at < nr; i++)
			files.external_fd[i] = sealed[at++];
		if (control_submit_keyed(p->d, &p->spec, &files, &sreq, p->uid, key, &aerr))
			bad = control_error("%s", coloc_err_str(&aerr));
	}
	/* a client gone meanwhile: -ENOTCONN, nothing to do */
	if (bad)
		server_send(p->server, p->conn, bad, NULL, 0);
	free(bad);
	free(p);
}

/*
 * The descriptors that came with the submit, queued to be checked and
 * copied into sealed memfds off the loop (submit_copy.h): the model, the
 * weights if named, the external data files in order. The answer is
 * deferred: NULL, or the error answer now.
 */
static char *control_submit_files(struct colocd *d, struct server_req *sreq,
				  const struct colocd_spec *spec, uid_t uid)
{
	int want = 1 + (spec->weights[0] != '\0') + spec->nr_external, at = 0;
	struct submit_copy_roles roles = { .weights = spec->weights[0] != '\0',
					   .nr_external = spec->nr_external,
					   .locations = spec->external };
	char what[SUBMIT_COPY_MAX_FILES][SUBMIT_COPY_WHAT_LEN];
	struct control_copying *p;
	struct coloc_err err = { 0 };
	char *bad;
	int ret;

	if (!sreq || sreq->nr_fds != want)
		return control_error("submit takes its files as descriptors sent with the request "
				     "(SCM_RIGHTS: the model, the weights if named, then each "
				     "\"external\" file): %d expected, %d came; colocd opens no "
				     "path a client names (colocctl and libcoloc_client send them)",
				     want, sreq ? sreq->nr_fds : 0);
	if (!d->copier && (ret = submit_copier_new(d->loop, d->cfg.submit_timeout_ms, &d->copier)))
		return control_error("cannot copy the submit's files: %s", strerror(-ret));
	snprintf(what[at++], sizeof(what[0]), "the model");
	if (spec->weights[0])
		snprintf(what[at++], sizeof(what[0]), "the weights");
	for (int i = 0; i < spec->nr_external; i++)
		snprintf(what[at++], sizeof(what[0]), "external data file '%s'", spec->external[i]);
	p = calloc(1, sizeof(*p));
	if (!p)
		return control_error("out of memory");
	*p = (struct control_copying){
		.d = d, .server = sreq->server, .conn = sreq->conn, .uid = uid, .spec = *spec
	};
	bad = control_submit_precheck(d, spec, &p->hold);
	if (bad) {
		free(p);
		return bad;
	}
	if (submit_copier_add(d->copier, uid, serving_submit_bytes_left(d->serving, uid), sreq->fds,
			      what, want, &roles, control_submit_copied, p, &err)) {
		serving_release(d->serving, p->hold);
		free(p);
		return control_error("%s", coloc_err_str(&err));
	}
	server_req_defer(sreq);
	return NULL;
}

char *control_cmd_submit(struct colocd *d, struct json_object *req, uid_t uid,
			 struct server_req *sreq)
{
	const char *name = control_str(req, "name"), *model = control_str(req, "model");
	const char *weights = control_str(req, "weights");
	struct colocd_spec *spec = calloc(1, sizeof(*spec));
	struct json_object *jq, *je;
	char *bad = NULL;
	double qos_ms;

	if (!spec)
		return control_error("out of memory");
	if (!name || !model || !json_object_object_get_ex(req, "qos_ms", &jq) ||
	    !(json_object_is_type(jq, json_type_int) ||
	      json_object_is_type(jq, json_type_double))) {
		bad = control_error("submit needs \"name\", \"model\" (the model file's name) and "
				    "\"qos_ms\" (a number)");
		goto out;
	}
	qos_ms = json_object_get_double(jq);
	if (!(qos_ms > 0 && qos_ms <= 3600000)) {
		bad = control_error("\"qos_ms\" must be above 0 and at most 3600000");
		goto out;
	}
	if (json_object_object_get_ex(req, "executors", &je)) {
		if (!json_object_is_type(je, json_type_int) || json_object_get_int64(je) < 1 ||
		    json_object_get_int64(je) > SERVING_MAX_EXECUTORS) {
			bad = control_error("\"executors\" must be an integer from 1 to %d",
					    SERVING_MAX_EXECUTORS);
			goto out;
		}
		spec->executors = (int)json_object_get_int64(je);
	}
	if (!model[0] || strlen(name) >= sizeof(spec->name) ||
	    strlen(model) >= sizeof(spec->model) ||
	    (weights && (!weights[0] || strlen(weights) >= sizeof(spec->weights)))) {
		bad = control_error("name or file name empty or too long");
		goto out;
	}
	snprintf(spec->name, sizeof(spec->name), "%s", name);
	snprintf(spec->model, sizeof(spec->model), "%s", model);
	if (weights)
		snprintf(spec->weights, sizeof(spec->weights), "%s", weights);
	spec->qos_ns = (__u64)(qos_ms * 1e6);
	spec->owner = uid;
	bad = control_submit_precheck(d, spec, NULL);
	if (!bad)
		bad = control_submit_external(req, spec);
	if (!bad && spec->nr_external && !model_path_is_onnx(spec->model))
		bad = control_error("\"external\" names an ONNX model's external data files; %s is "
				    "a coloc .model file, which has none: drop \"external\"",
				    spec->model);
	/* the answer comes once the files are in and the executors got ready with the model */
	if (!bad)
		bad = control_submit_files(d, sreq, spec, uid);
out:
	free(spec);
	return bad;
}
