// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's --state file: the admitted tenants as submitted (name, model,
 * weights, QoS), so that a restarted daemon submits them again. Written
 * whole to a temporary file beside it, synced, then renamed over it: a
 * crash leaves the old file or the new one, never half of one. Format:
 *   {"tenants":[{"name":S,"model":S,"weights":S|null,"qos_ns":N,"executors":N,
 *                "owner":N},...]}
 * ("executors" is left out for one, and read as one when missing; "owner",
 * the submitter's uid, is read as root's when missing: a file written
 * before tenants had owners holds what root could submit).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "colocd.h"

int colocd_spec_add(struct colocd *d, const struct colocd_spec *spec, struct coloc_err *err)
{
	if (d->nr_specs >= COLOC_MAX_TENANTS)
		return coloc_err_set(err, -ENOSPC, "all %d tenant slots are taken",
				     COLOC_MAX_TENANTS);
	d->specs[d->nr_specs++] = *spec;
	return colocd_state_write(d, err);
}

int colocd_spec_drop(struct colocd *d, const char *name, struct coloc_err *err)
{
	for (int i = 0; i < d->nr_specs; i++)
		if (!strcmp(d->specs[i].name, name)) {
			memmove(&d->specs[i], &d->specs[i + 1],
				(size_t)(d->nr_specs - i - 1) * sizeof(d->specs[0]));
			d->nr_specs--;
			return colocd_state_write(d, err);
		}
	return 0;
}

static int state_write_all(int fd, const char *text, size_t len)
{
	while (len) {
		ssize_t n = write(fd, text, len);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0) {
			text += n;
			len -= (size_t)n;
		}
	}
	return 0;
}

int colocd_state_write(const struct colocd *d, struct coloc_err *err)
{
	const char *path = d->cfg.state_path;
	struct json_object *root, *arr;
	char tmp[PATH_MAX + 16];
	const char *text;
	int fd, ret;

	if (!path)
		return 0;
	root = json_object_new_object();
	arr = json_object_new_array();
	for (int i = 0; i < d->nr_specs; i++) {
		const struct colocd_spec *sp = &d->specs[i];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "name", json_object_new_string(sp->name));
		json_object_object_add(o, "model", json_object_new_string(sp->model));
		json_object_object_add(o, "weights",
				       sp->weights[0] ? json_object_new_string(sp->weights) : NULL);
		json_object_object_add(o, "qos_ns", json_object_new_int64((int64_t)sp->qos_ns));
		if (sp->executors > 1)
			json_object_object_add(o, "executors", json_object_new_int(sp->executors));
		json_object_object_add(o, "owner", json_object_new_int64((int64_t)sp->owner));
		json_object_array_add(arr, o);
	}
	json_object_object_add(root, "tenants", arr);
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = coloc_err_set(err, -errno, "cannot write the state file %s: %s", tmp,
				    strerror(errno));
		json_object_put(root);
		return ret;
	}
	ret = state_write_all(fd, text, strlen(text));
	if (!ret)
		ret = state_write_all(fd, "\n", 1);
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	json_object_put(root);
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return coloc_err_set(err, ret, "cannot write the state file %s: %s", path,
				     strerror(-ret));
	}
	return 0;
}

static const char *state_string(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* One entry of the file into spec; 0 or -EINVAL with err naming it. */
static int state_entry(const char *path, size_t i, struct json_object *o, struct colocd_spec *spec,
		       struct coloc_err *err)
{
	const char *name = state_string(o, "name"), *model = state_string(o, "model");
	const char *weights = state_string(o, "weights");
	struct json_object *q, *e = NULL, *u = NULL;

	memset(spec, 0, sizeof(*spec));
	/* (uid_t)-1 is no one's: chown's "leave it" */
	if (json_object_object_get_ex(o, "owner", &u) &&
	    (!json_object_is_type(u, json_type_int) || json_object_get_int64(u) < 0 ||
	     json_object_get_int64(u) >= (int64_t)UINT32_MAX))
		return coloc_err_set(err, -EINVAL,
				     "%s: tenants[%zu]: \"owner\" must be a uid from 0 to %u", path,
				     i, UINT32_MAX - 1);
	if (json_object_object_get_ex(o, "executors", &e) &&
	    (!json_object_is_type(e, json_type_int) || json_object_get_int64(e) < 1 ||
	     json_object_get_int64(e) > SERVING_MAX_EXECUTORS))
		return coloc_err_set(err, -EINVAL,
				     "%s: tenants[%zu]: \"executors\" must be an integer from 1 "
				     "to %d",
				     path, i, SERVING_MAX_EXECUTORS);
	if (!name || !model || !json_object_object_get_ex(o, "qos_ns", &q) ||
	    !json_object_is_type(q, json_type_int) || json_object_get_int64(q) <= 0 ||
	    strlen(name) >= sizeof(spec->name) || strlen(model) >= sizeof(spec->model) ||
	    (weights && strlen(weights) >= sizeof(spec->weights)))
		return coloc_err_set(err, -EINVAL,
				     "%s: tenants[%zu] needs \"name\", \"model\" (strings) and "
				     "\"qos_ns\" (a positive integer)",
				     path, i);
	snprintf(spec->name, sizeof(spec->name), "%s", name);
	snprintf(spec->model, sizeof(spec->model), "%s", model);
	if (weights)
		snprintf(spec->weights, sizeof(spec->weights), "%s", weights);
	spec->qos_ns = (__u64)json_object_get_int64(q);
	spec->executors = e ? (int)json_object_get_int64(e) : 0;
	spec->owner = u ? (uid_t)json_object_get_int64(u) : 0;
	return 0;
}

int colocd_state_read(const char *path, struct colocd_spec *specs, struct coloc_err *err)
{
	struct json_object *root, *arr;
	size_t n;
	int ret = 0;

	if (access(path, F_OK) && errno == ENOENT)
		return 0;
	root = json_object_from_file(path);
	if (!root)
		return coloc_err_set(err, -EINVAL, "cannot read the state file %s: %s", path,
				     json_util_get_last_err());
	if (!json_object_object_get_ex(root, "tenants", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		json_object_put(root);
		return coloc_err_set(err, -EINVAL, "%s: no \"tenants\" array", path);
	}
	n = json_object_array_length(arr);
	if (n > COLOC_MAX_TENANTS)
		n = COLOC_MAX_TENANTS;
	for (size_t i = 0; i < n && !ret; i++)
		ret = state_entry(path, i, json_object_array_get_idx(arr, i), &specs[i], err);
	json_object_put(root);
	return ret ? ret : (int)n;
}
