// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Admitting a tenant into the serving core (serving.h): the checks that
 * read no file (serving_admit_check: name, executors, QoS, a free place,
 * the owner's quotas), which colocd runs before it copies a client's
 * files, then the sealed files taken, the profile found and the table
 * built, the executors started. Owners' authority over their tenants is
 * here too (serving_authorize).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model_open.h"
#include "profile_table.h"
#include "sandbox.h"
#include "serving_internal.h"
#include "submit_files.h"

static bool name_valid(const char *name)
{
	size_t n = strlen(name);

	if (!n || n >= SERVING_NAME_LEN || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

/* One query's input and output bytes, in shm.h's layout. */
static int model_io_bytes(const struct model *m, size_t *in, size_t *out)
{
	bool *read = calloc(m->nr_layers, sizeof(*read));

	if (!read)
		return -ENOMEM;
	*in = *out = 0;
	for (int l = 0; l < m->nr_layers; l++)
		for (int k = 0; k < m->layers[l].nr_inputs; k++)
			read[m->layers[l].inputs[k]] = true;
	for (int l = 0; l < m->nr_layers; l++) {
		size_t bytes = (size_t)model_shape_elems(&m->layers[l].out) * sizeof(float);

		if (m->layers[l].op == MODEL_OP_INPUT)
			*in += bytes;
		if (!read[l])
			*out += bytes;
	}
	free(read);
	return 0;
}

/* out.versions holds a whole model of the largest tenant for each decision a round may take. */
static int grow_versions(struct serving *s, int nr_layers)
{
	int want = SV_MAX_TENANTS * SERVING_MAX_EXECUTORS * nr_layers;
	uint8_t *v;

	if (want <= s->max_versions)
		return 0;
	v = realloc(s->versions, (size_t)want);
	if (!v)
		return -ENOMEM;
	s->versions = v;
	s->max_versions = want;
	return 0;
}

/* A duplicate of a sealed memfd of the submit (submit_files.h) into *out; 0 or -errno. */
static int take_sealed(int fd, const char *what, int *out, struct coloc_err *err)
{
	*out = -1;
	if (fd < 0 || submit_file_check_sealed(fd))
		return coloc_err_set(err, -EBADF, "%s is not a sealed copy of a submitted file",
				     what);
	*out = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (*out < 0)
		return coloc_err_set(err, -errno, "%s: fcntl: %s", what, strerror(errno));
	return 0;
}

/* The submitted files into t: duplicates of the sealed memfds; 0 or -errno. */
static int take_files(struct sv_tenant *t, const struct serving_tenant_spec *spec,
		      struct coloc_err *err)
{
	int ret;

	t->model_fd = t->weights_fd = -1;
	if (spec->nr_external < 0 || spec->nr_external > COLOC_MAX_REQUEST_FDS ||
	    (spec->nr_external && !spec->external))
		return coloc_err_set(err, -EINVAL, "tenant %s: %d external data files; at most %d",
				     spec->name, spec->nr_external, COLOC_MAX_REQUEST_FDS);
	t->model_name = strdup(spec->model_name);
	if (!t->model_name)
		return coloc_err_set(err, -ENOMEM, "out of memory admitting %s", spec->name);
	ret = take_sealed(spec->model_fd, "the model", &t->model_fd, err);
	if (!ret && spec->weights_fd >= 0)
		ret = take_sealed(spec->weights_fd, "the weights", &t->weights_fd, err);
	for (int i = 0; i < spec->nr_external && !ret; i++) {
		struct execproc_file *f = &t->external[t->nr_external];

		ret = take_sealed(spec->external[i].fd, "an external data file", &f->fd, err);
		if (ret)
			break;
		f->location = strdup(spec->external[i].location);
		if (!f->location) {
			close(f->fd);
			return coloc_err_set(err, -ENOMEM, "out of memory admitting %s",
					     spec->name);
		}
		t->nr_external++;
	}
	return ret;
}

/*
 * The model read from t's sealed copy, in colocd: its layers for the
 * profile table and the I/O sizes.
 */
static int open_model(struct sv_tenant *t, struct coloc_err *err)
{
	struct onnx_external_fd ext[COLOC_MAX_REQUEST_FDS];
	struct onnx_import_opts io = { .batch = 1, .external = ext, .nr_external = t->nr_external };
	struct model_source src;
	int ret;

	for (int i = 0; i < t->nr_external; i++)
		ext[i] = (struct onnx_external_fd){ t->external[i].location, t->external[i].fd };
	ret = model_open_fd(t->model_name, t->model_fd, &io, &src, err);
	if (ret)
		return ret;
	model_source_drop_weights(&src);
	t->model = src.model;
	return 0;
}

/* What owner's tenants hold: how many, their executors and their queries. */
void sv_owner_usage(const struct serving *s, uid_t owner, int *tenants, int *executors, int *queued)
{
	*tenants = *executors = *queued = 0;
	for (int i = 0; i < SV_MAX_TENANTS; i++) {
		const struct sv_tenant *t = &s->tenants[i];

		if (!t->used || t->owner != owner)
			continue;
		(*tenants)++;
		*executors += t->nr_exec;
		*queued += t->nr_queries;
	}
}

/* A new tenant of spec within its owner's quotas; root is held to the global limits only. */
static int check_admit_quota(const struct serving *s, const struct serving_tenant_spec *spec,
			     struct coloc_err *err)
{
	int tenants, executors, queued, want = spec->executors > 0 ? spec->executors : 1;

	if (!spec->owner)
		return 0;
	sv_owner_usage(s, spec->owner, &tenants, &executors, &queued);
	if (s->max_tenants_per_uid && tenants >= s->max_tenants_per_uid)
		return coloc_err_set(err, -EDQUOT,
				     "tenant %s: uid %u already has %d serving tenants, its quota "
				     "(colocd --max-tenants-per-uid raises it)",
				     spec->name, (unsigned int)spec->owner, tenants);
	if (s->max_executors_per_uid && executors + want > s->max_executors_per_uid)
		return coloc_err_set(err, -EDQUOT,
				     "tenant %s: %d more executors would take uid %u past its "
				     "quota of %d (it has %d; colocd --max-executors-per-uid "
				     "raises it)",
				     spec->name, want, (unsigned int)spec->owner,
				     s->max_executors_per_uid, executors);
	return 0;
}

int serving_authorize(const struct serving *s, const char *name, uid_t uid, struct coloc_err *err)
{
	const struct sv_tenant *t = sv_find_tenant(s, name);

	if (!t)
		return coloc_err_set(err, -ENOENT, "no tenant %s", name);
	if (uid && t->owner != uid)
		return coloc_err_set(err, -EPERM, "tenant %s belongs to another user", name);
	return 0;
}

/* A free place among the tenants, or NULL. */
static struct sv_tenant *free_place(const struct serving *s)
{
	for (int i = 0; i < SV_MAX_TENANTS; i++)
		if (!s->tenants[i].used)
			return (struct sv_tenant *)&s->tenants[i];
	return NULL;
}

int serving_admit_check(const struct serving *s, const struct serving_tenant_spec *spec,
			struct coloc_err *err)
{
	int ret;

	if (!spec->name || !name_valid(spec->name))
		return coloc_err_set(err, -EINVAL,
				     "tenant name '%s' is not 1 to %d of letters, digits, '_', "
				     "'.' and '-'",
				     spec->name ? spec->name : "", SERVING_NAME_LEN - 1);
	if (sv_find_tenant(s, spec->name))
		return coloc_err_set(err, -EEXIST, "tenant %s exists; remove it first", spec->name);
	if (spec->executors < 0 || spec->executors > SERVING_MAX_EXECUTORS)
		return coloc_err_set(err, -EINVAL, "tenant %s: %d executors; 1 to %d", spec->name,
				     spec->executors, SERVING_MAX_EXECUTORS);
	if (!spec->qos_ns || spec->qos_ns > SERVING_MAX_QOS_NS)
		return coloc_err_set(err, -EINVAL,
				     "tenant %s: a QoS target above 0 and at most %llu s",
				     spec->name, SERVING_MAX_QOS_NS / 1000000000ull);
	ret = check_admit_quota(s, spec, err);
	if (ret)
		return ret;
	if (!free_place(s))
		return coloc_err_set(err, -ENOSPC, "%d tenants are served, the most colocd takes",
				     SV_MAX_TENANTS);
	return 0;
}

int serving_admit(struct serving *s, const struct serving_tenant_spec *spec, struct coloc_err *err)
{
	struct sv_tenant *t;
	struct profile *p;
	uint64_t hash;
	int ret;

	ret = serving_admit_check(s, spec, err);
	if (ret)
		return ret;
	if (!spec->model_name || spec->model_fd < 0)
		return coloc_err_set(err, -EINVAL, "tenant %s: no model file", spec->name);
	if (spec->weights_fd >= 0 && model_path_is_onnx(spec->model_name))
		return coloc_err_set(
			err, -EINVAL,
			"tenant %s: %s is an ONNX model, whose weights are in the file; "
			"drop the weights file",
			spec->name, spec->model_name);
	t = free_place(s);
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", spec->name);
	t->owner = spec->owner;
	t->qos_ns = spec->qos_ns;
	t->nr_exec = spec->executors > 0 ? spec->executors : 1;
	ret = take_files(t, spec, err);
	if (!ret)
		ret = open_model(t, err);
	if (!ret && (ret = submit_file_hash(t->model_fd, &hash)))
		coloc_err_set(err, ret, "hashing the model: %s", strerror(-ret));
	if (ret)
		goto fail;
	p = profile_table_find_hashed(t->model->name, hash, spec->model_name, s->cache_dir, err);
	if (!p) {
		ret = err ? err->code : -ENOENT;
		goto fail;
	}
	ret = profile_table_build(p, t->model, &t->table, err);
	profile_free(p);
	if (ret)
		goto fail;
	t->solo_ns = policy_model_solo_ns(&t->table.model, s->nr_cpus);
	if (!t->solo_ns || spec->qos_ns < t->solo_ns) {
		ret = coloc_err_set(err, -ERANGE,
				    "tenant %s: QoS %.3f ms is below model %s's profiled solo "
				    "latency %.3f ms on all %d served cores",
				    spec->name, spec->qos_ns / 1e6, t->model->name,
				    t->solo_ns / 1e6, s->nr_cpus);
		goto fail;
	}
	ret = model_io_bytes(t->model, &t->in_bytes, &t->out_bytes);
	if (!ret)
		ret = grow_versions(s, t->model->nr_layers);
	for (int i = 0; i < t->nr_exec && !ret; i++) {
		t->ex[i].blk_versions = calloc(t->model->nr_layers, 1);
		if (!t->ex[i].blk_versions)
			ret = -ENOMEM;
	}
	t->scratch = t->nr_exec > 1 ? malloc(t->in_bytes ? t->in_bytes : 1) : NULL;
	if (ret || (t->nr_exec > 1 && !t->scratch)) {
		ret = coloc_err_set(err, -ENOMEM, "out of memory admitting %s", spec->name);
		goto fail;
	}
	if (s->sandbox) {
		ret = sandbox_tenant_open(s->sandbox, t->name, err);
		if (ret)
			goto fail;
		t->sandboxed = true;
	}
	t->used = true;
	t->order = s->next_order++;
	ret = sv_start_executors(s, t, err);
	if (ret)
		goto fail;
	return 0;
fail:
	sv_free_tenant(s, t);
	return ret;
}
