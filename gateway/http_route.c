// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The HTTP front door's paths (http_impl.h): a request's path split and
 * routed to its handler, which only translates: server and model metadata
 * and readiness from models.c, the repository's index, load and unload,
 * an infer to http_infer.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>
#include "version.h"
#include "http_impl.h"

#define HTTP_PATH_MAX 512

/* ---- the path ----------------------------------------------------------------- */

#define HTTP_MAX_SEGS 8

struct http_path {
	int n;
	const char *seg[HTTP_MAX_SEGS];
	char buf[HTTP_PATH_MAX];
};

/* Splits url on '/' (empty segments dropped); -1 when too long or too deep. */
static int http_split(const char *url, struct http_path *p)
{
	char *save = NULL, *s;

	p->n = 0;
	if (strlen(url) >= sizeof(p->buf))
		return -1;
	snprintf(p->buf, sizeof(p->buf), "%s", url);
	for (s = strtok_r(p->buf, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
		if (p->n == HTTP_MAX_SEGS)
			return -1;
		p->seg[p->n++] = s;
	}
	return 0;
}

static bool http_is(const struct http_path *p, int i, const char *s)
{
	return i < p->n && !strcmp(p->seg[i], s);
}

/* ---- server and model metadata ---------------------------------------------------- */

static enum MHD_Result http_server_metadata(struct MHD_Connection *conn)
{
	struct json_object *o = json_object_new_object(), *ext = json_object_new_array();

	json_object_object_add(o, "name", json_object_new_string("coloc-gateway"));
	json_object_object_add(o, "version", json_object_new_string(COLOC_VERSION));
	json_object_array_add(ext, json_object_new_string("binary_tensor_data"));
	json_object_array_add(ext, json_object_new_string("model_repository"));
	json_object_object_add(o, "extensions", ext);
	return http_json(conn, MHD_HTTP_OK, o);
}

static struct json_object *http_tensors(const struct gw_tensor *t, int n)
{
	struct json_object *arr = json_object_new_array();

	for (int i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object(), *shape = json_object_new_array();

		json_object_object_add(o, "name", json_object_new_string(t[i].name));
		json_object_object_add(o, "datatype", json_object_new_string("FP32"));
		for (int d = 0; d < t[i].nr_dims; d++)
			json_object_array_add(shape, json_object_new_int64(t[i].dims[d]));
		json_object_object_add(o, "shape", shape);
		json_object_array_add(arr, o);
	}
	return arr;
}

static enum MHD_Result http_model_metadata(struct MHD_Connection *conn, const struct gw_model *m)
{
	struct json_object *o = json_object_new_object(), *versions = json_object_new_array();

	json_object_object_add(o, "name", json_object_new_string(m->cfg.name));
	json_object_array_add(versions, json_object_new_string(m->cfg.version));
	json_object_object_add(o, "versions", versions);
	json_object_object_add(o, "platform", json_object_new_string("coloc"));
	json_object_object_add(o, "inputs", http_tensors(m->cfg.inputs, m->cfg.nr_inputs));
	json_object_object_add(o, "outputs", http_tensors(m->cfg.outputs, m->cfg.nr_outputs));
	return http_json(conn, MHD_HTTP_OK, o);
}

/* ---- routing -------------------------------------------------------------------- */

static enum MHD_Result http_wrong_method(struct MHD_Connection *conn, const char *want)
{
	return http_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "this path takes %s", want);
}

/* /v2/models/NAME[/versions/V][/ready|/infer] */
static enum MHD_Result http_models(struct http_req *rq, const struct http_path *p, bool get,
				   bool post)
{
	struct MHD_Connection *conn = rq->conn;
	const char *name = p->seg[2], *version = NULL, *action = NULL;
	struct gw_model *m;
	bool infer;
	int i = 3;

	if (http_is(p, i, "versions") && i + 1 < p->n) {
		version = p->seg[i + 1];
		i += 2;
	}
	if (i < p->n)
		action = p->seg[i++];
	if (i != p->n || (action && strcmp(action, "ready") && strcmp(action, "infer")))
		return http_error(conn, MHD_HTTP_NOT_FOUND, "no such path");
	infer = action && !strcmp(action, "infer");
	if (infer ? !post : !get)
		return http_wrong_method(conn, infer ? "POST" : "GET");
	m = gw_models_get(rq->h->ms, name);
	if (!m)
		return http_error(conn, MHD_HTTP_NOT_FOUND, "unknown model '%.64s'", name);
	if (version && m->cfg.version[0] && strcmp(version, m->cfg.version)) {
		gw_models_put(m);
		return http_error(conn, MHD_HTTP_NOT_FOUND,
				  "model %s has no version '%.32s' (it serves %s)", name, version,
				  m->cfg.version);
	}
	if (atomic_load(&m->state) != GW_MODEL_READY) {
		char reason[512];
		enum gw_model_state s = atomic_load(&m->state);

		snprintf(reason, sizeof(reason), "%s", m->reason);
		if (infer)
			atomic_fetch_add(&m->stats.refused_not_ready, 1);
		gw_models_put(m);
		return http_error(conn, infer ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_BAD_REQUEST,
				  "model %s is not ready (%s%s%s)", name, gw_model_state_name(s),
				  reason[0] ? ": " : "", reason);
	}
	if (!action) {
		enum MHD_Result r = http_model_metadata(conn, m);

		gw_models_put(m);
		return r;
	}
	if (!strcmp(action, "ready")) {
		gw_models_put(m);
		return http_empty(conn, MHD_HTTP_OK);
	}
	if (rq->too_large) {
		size_t max = gw_infer_body_max(&m->cfg);

		gw_models_put(m);
		return http_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
				  "the body is longer than model %s's inputs can need (%zu bytes, "
				  "as JSON or with binary data) or than --max-body-bytes (%zu)",
				  name, max, rq->h->opts.max_body);
	}
	return http_infer_start(rq, m); /* puts m */
}

struct gw_model *http_infer_model(const struct gw_http *h, const char *url)
{
	struct http_path p;
	struct gw_model *m;
	int last;

	if (http_split(url, &p) || p.n < 4 || !http_is(&p, 0, "v2") || !http_is(&p, 1, "models"))
		return NULL;
	last = p.n == 6 && http_is(&p, 3, "versions") ? 5 : 3;
	if (p.n != last + 1 || !http_is(&p, last, "infer"))
		return NULL;
	m = gw_models_get(h->ms, p.seg[2]);
	if (m && atomic_load(&m->state) != GW_MODEL_READY) {
		gw_models_put(m);
		m = NULL;
	}
	return m;
}

/* /v2/repository/index, /v2/repository/models/NAME/load|unload */
static enum MHD_Result http_repository(struct http_req *rq, const struct http_path *p)
{
	struct coloc_err err = { 0 };
	int r;

	if (p->n == 3 && http_is(p, 2, "index"))
		return http_json(rq->conn, MHD_HTTP_OK, gw_models_index(rq->h->ms));
	if (p->n != 5 || !http_is(p, 2, "models") ||
	    !(http_is(p, 4, "load") || http_is(p, 4, "unload")))
		return http_error(rq->conn, MHD_HTTP_NOT_FOUND, "no such path");
	if (!rq->h->opts.model_control)
		return http_error(rq->conn, MHD_HTTP_FORBIDDEN, "%s", GW_MODEL_CONTROL_OFF);
	if (!gw_repo_name_ok(p->seg[3]))
		return http_error(rq->conn, MHD_HTTP_BAD_REQUEST,
				  "model names are 1..63 of [A-Za-z0-9_.-]");
	if (http_is(p, 4, "load"))
		r = gw_models_load(rq->h->ms, p->seg[3], false, &err);
	else
		r = gw_models_unload(rq->h->ms, p->seg[3], &err);
	if (r)
		return http_error(rq->conn,
				  r == -ENOENT ? MHD_HTTP_NOT_FOUND :
				  r == -EBUSY  ? MHD_HTTP_CONFLICT :
						 MHD_HTTP_BAD_REQUEST,
				  "%s", coloc_err_str(&err));
	return http_empty(rq->conn, MHD_HTTP_OK);
}

enum MHD_Result http_route(struct http_req *rq, const char *url, const char *method)
{
	struct MHD_Connection *conn = rq->conn;
	bool get = !strcmp(method, MHD_HTTP_METHOD_GET);
	bool post = !strcmp(method, MHD_HTTP_METHOD_POST);
	struct http_path p;

	if (http_split(url, &p) || !http_is(&p, 0, "v2"))
		return http_error(conn, MHD_HTTP_NOT_FOUND, "no such path (the API is under /v2)");
	if (p.n == 1)
		return get ? http_server_metadata(conn) : http_wrong_method(conn, "GET");
	if (http_is(&p, 1, "health") && p.n == 3 &&
	    (http_is(&p, 2, "live") || http_is(&p, 2, "ready"))) {
		if (!get)
			return http_wrong_method(conn, "GET");
		if (http_is(&p, 2, "live") || gw_models_server_ready(rq->h->ms))
			return http_empty(conn, MHD_HTTP_OK);
		return http_error(conn, MHD_HTTP_BAD_REQUEST,
				  "not ready: models are loading or one is not ready (see POST "
				  "/v2/repository/index)");
	}
	if (http_is(&p, 1, "models") && p.n >= 3)
		return http_models(rq, &p, get, post);
	if (http_is(&p, 1, "repository"))
		return post ? http_repository(rq, &p) : http_wrong_method(conn, "POST");
	return http_error(conn, MHD_HTTP_NOT_FOUND, "no such path");
}
