// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control connection (control.h): libcoloc_client's JSON calls behind
 * one lock, reconnecting once when the connection was lost.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coloc/client.h"
#include "control.h"

struct gw_ctl {
	pthread_mutex_t lock;
	struct coloc_client *c;
	char socket_path[108];
};

int gw_ctl_open(const char *socket_path, struct gw_ctl **out, struct coloc_err *err)
{
	struct gw_ctl *ctl = calloc(1, sizeof(*ctl));

	*out = NULL;
	if (!ctl)
		return coloc_err_set(err, -ENOMEM, "out of memory");
	if (strlen(socket_path) >= sizeof(ctl->socket_path)) {
		free(ctl);
		return coloc_err_set(err, -ENAMETOOLONG, "socket path too long: %.200s",
				     socket_path);
	}
	snprintf(ctl->socket_path, sizeof(ctl->socket_path), "%s", socket_path);
	pthread_mutex_init(&ctl->lock, NULL);
	*out = ctl;
	return 0;
}

void gw_ctl_close(struct gw_ctl *ctl)
{
	if (!ctl)
		return;
	coloc_client_close(ctl->c);
	pthread_mutex_destroy(&ctl->lock);
	free(ctl);
}

/* Under the lock: the response, with one reconnect after a transport failure. */
static struct json_object *ctl_call_locked(struct gw_ctl *ctl, struct json_object *req,
					   struct coloc_err *err)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		struct json_object *resp;
		int r;

		if (!ctl->c && (r = coloc_client_connect(ctl->socket_path, &ctl->c))) {
			ctl->c = NULL;
			coloc_err_set(err, r, "cannot reach colocd: %s", strerror(-r));
			return NULL;
		}
		resp = coloc_client_call(ctl->c, req);
		if (resp)
			return resp;
		if (attempt)
			coloc_err_set(err, -EPIPE, "colocd: %s", coloc_client_error(ctl->c));
		coloc_client_close(ctl->c);
		ctl->c = NULL;
	}
	return NULL;
}

struct json_object *gw_ctl_call(struct gw_ctl *ctl, struct json_object *req, struct coloc_err *err)
{
	struct json_object *resp;

	pthread_mutex_lock(&ctl->lock);
	resp = ctl_call_locked(ctl, req, err);
	if (resp && !coloc_client_ok(ctl->c, resp)) {
		coloc_err_set(err, -EINVAL, "%s", coloc_client_error(ctl->c));
		json_object_put(resp);
		resp = NULL;
	}
	pthread_mutex_unlock(&ctl->lock);
	return resp;
}

/*
 * As colocctl submit does: the gateway opens the model, its weights and an
 * ONNX model's external data with its own permissions and hands them to
 * colocd as descriptors (coloc_client_submit_at: below the repository's
 * folder repo_fd, no symbolic links unless links); colocd opens no path.
 */
int gw_ctl_submit(struct gw_ctl *ctl, int repo_fd, bool links, const struct gw_model_config *cfg,
		  struct coloc_err *err)
{
	struct coloc_submit_files at = { .dirfd = repo_fd,
					 .model = cfg->model_rel,
					 .weights = cfg->weights[0] ? cfg->weights_rel : NULL,
					 .links = links };
	struct coloc_submit sub = { .name = cfg->tenant,
				    .model = cfg->path,
				    .weights = cfg->weights[0] ? cfg->weights : NULL,
				    .qos_ms = cfg->qos_ms,
				    .executors = cfg->executors };
	struct json_object *resp = NULL;
	int r = 0;

	pthread_mutex_lock(&ctl->lock);
	if (!ctl->c && (r = coloc_client_connect(ctl->socket_path, &ctl->c))) {
		ctl->c = NULL;
		coloc_err_set(err, r, "cannot reach colocd: %s", strerror(-r));
	} else {
		resp = coloc_client_submit_at(ctl->c, &sub, &at);
		if (!resp) {
			r = coloc_err_set(err, -EPIPE, "colocd: %s", coloc_client_error(ctl->c));
			coloc_client_close(ctl->c);
			ctl->c = NULL;
		} else if (!coloc_client_ok(ctl->c, resp)) {
			r = coloc_err_set(err, -EINVAL, "%s", coloc_client_error(ctl->c));
		}
	}
	pthread_mutex_unlock(&ctl->lock);
	json_object_put(resp);
	return r;
}

struct json_object *gw_ctl_tenant(struct gw_ctl *ctl, const char *name, struct coloc_err *err)
{
	struct json_object *req = json_object_new_object(), *resp, *arr, *t = NULL;

	json_object_object_add(req, "cmd", json_object_new_string("status"));
	json_object_object_add(req, "name", json_object_new_string(name));
	resp = gw_ctl_call(ctl, req, err);
	json_object_put(req);
	if (!resp) {
		if (strstr(err->msg, "no tenant named"))
			err->code = -ENOENT;
		return NULL;
	}
	if (json_object_object_get_ex(resp, "tenants", &arr) &&
	    json_object_is_type(arr, json_type_array) && json_object_array_length(arr) == 1)
		t = json_object_get(json_object_array_get_idx(arr, 0));
	else
		coloc_err_set(err, -EPROTO, "colocd's status of %s names no tenant", name);
	json_object_put(resp);
	return t;
}

int gw_ctl_remove(struct gw_ctl *ctl, const char *name, struct coloc_err *err)
{
	struct json_object *req = json_object_new_object(), *resp;

	json_object_object_add(req, "cmd", json_object_new_string("remove"));
	json_object_object_add(req, "name", json_object_new_string(name));
	resp = gw_ctl_call(ctl, req, err);
	json_object_put(req);
	json_object_put(resp);
	return resp ? 0 : err->code;
}
