// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Reading the model repository (repository.h): a model's folder, its
 * config.json and its highest version, each length and number bounded
 * before use. The gateway runs unprivileged; still, a repository is input,
 * so every name and number read here is checked.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include "coloc/client.h"
#include "coloc/protocol.h"
#include "repository.h"

#define GW_MAX_VERSION 999999999L
#define GW_MAX_ELEMS (COLOC_MAX_PAYLOAD / 4)

int gw_repo_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= GW_NAME_MAX || s[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return 0;
	return 1;
}

/* A whole decimal number without sign or leading zeros, at most GW_MAX_VERSION; or -1. */
static long repo_version_of(const char *s)
{
	long v = 0;

	if (!*s || (s[0] == '0' && s[1]) || strlen(s) > 9)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

int gw_repo_init(struct gw_repo *repo, const char *path, bool follow_links, struct coloc_err *err)
{
	memset(repo, 0, sizeof(*repo));
	repo->follow_links = follow_links;
	if (!realpath(path, repo->path))
		return coloc_err_set(err, -errno, "model repository %s: %s", path, strerror(errno));
	return 0;
}

int gw_repo_open(const struct gw_repo *repo, struct coloc_err *err)
{
	int fd = open(repo->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return coloc_err_set(err, -errno, "model repository %s: %s", repo->path,
				     strerror(errno));
	return fd;
}

/*
 * path below dirfd opened with flags by the repository's rules: by openat2
 * below dirfd and without symbolic links (a link could name a file outside
 * the repository, which the gateway would open and hand to colocd), or,
 * with --repository-links, following links wherever they lead. What is
 * checked is the descriptor opened, never the path before. fd or -errno.
 */
static int repo_openat(const struct gw_repo *repo, int dirfd, const char *path, int flags)
{
	int fd;

	if (!repo->follow_links)
		return coloc_open_beneath(dirfd, path, flags, false);
	fd = openat(dirfd, path, flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NOCTTY));
	return fd < 0 ? -errno : fd;
}

/* Why repo_openat failed, in words. */
static const char *repo_why(int err)
{
	return err == -ELOOP ? "a symbolic link (followed only with --repository-links)" :
	       err == -EXDEV ? "it leads outside the repository" :
			       strerror(-err);
}

/* Whether path below dirfd is of type (S_IFREG, S_IFDIR) by the repository's rules. */
static bool repo_is(const struct gw_repo *repo, int dirfd, const char *path, mode_t type)
{
	int fd = repo_openat(repo, dirfd, path, O_PATH);
	struct stat st;
	bool ok;

	if (fd < 0)
		return false;
	ok = !fstat(fd, &st) && (st.st_mode & S_IFMT) == type;
	close(fd);
	return ok;
}

/* The whole of a small file below dirfd, NUL-terminated (malloc'd), or NULL with err filled. */
static char *repo_read_small(const struct gw_repo *repo, int dirfd, const char *path, size_t max,
			     struct coloc_err *err)
{
	/* a FIFO or a device would block the open or the read: refused by its fstat */
	int fd = repo_openat(repo, dirfd, path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;
	size_t len = 0;

	if (fd < 0) {
		coloc_err_set(err, fd, "%s: %s", path, repo_why(fd));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
		coloc_err_set(err, -EINVAL, "%s: not a regular file of at most %zu bytes", path,
			      max);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		coloc_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

		if (n <= 0) {
			coloc_err_set(err, -EIO, "%s: short read", path);
			free(buf);
			buf = NULL;
			goto out;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
out:
	close(fd);
	return buf;
}

/* One tensor of "input"/"output": {"name":S,"dims":[N...],"data_type":"TYPE_FP32"?}. */
static int repo_parse_tensor(struct json_object *o, struct gw_tensor *t, const char *where,
			     struct coloc_err *err)
{
	struct json_object *v, *dims;
	const char *name;
	size_t nr;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "name", &v) || !json_object_is_type(v, json_type_string))
		return coloc_err_set(err, -EINVAL, "%s: each tensor needs a string \"name\"",
				     where);
	name = json_object_get_string(v);
	if (!gw_repo_name_ok(name))
		return coloc_err_set(err, -EINVAL,
				     "%s: tensor name '%.64s' is not 1..63 of [A-Za-z0-9_.-]",
				     where, name);
	snprintf(t->name, sizeof(t->name), "%s", name);
	if (json_object_object_get_ex(o, "data_type", &v) &&
	    (!json_object_is_type(v, json_type_string) ||
	     strcmp(json_object_get_string(v), "TYPE_FP32")))
		return coloc_err_set(err, -EINVAL, "%s: tensor %s: only \"TYPE_FP32\" is served",
				     where, t->name);
	if (!json_object_object_get_ex(o, "dims", &dims) ||
	    !json_object_is_type(dims, json_type_array))
		return coloc_err_set(err, -EINVAL, "%s: tensor %s needs \"dims\": [N, ...]", where,
				     t->name);
	nr = json_object_array_length(dims);
	if (!nr || nr > GW_REPO_MAX_DIMS)
		return coloc_err_set(err, -EINVAL, "%s: tensor %s: 1 to %d dims", where, t->name,
				     GW_REPO_MAX_DIMS);
	t->nr_dims = (int)nr;
	t->elems = 1;
	for (size_t i = 0; i < nr; i++) {
		struct json_object *d = json_object_array_get_idx(dims, i);
		int64_t n = json_object_is_type(d, json_type_int) ? json_object_get_int64(d) : -1;

		if (n < 1 || n > (int64_t)GW_MAX_ELEMS || t->elems * (uint64_t)n > GW_MAX_ELEMS)
			return coloc_err_set(err, -EINVAL,
					     "%s: tensor %s: dims must be whole numbers >= 1 "
					     "whose product is at most %u",
					     where, t->name, (unsigned int)GW_MAX_ELEMS);
		t->dims[i] = n;
		t->elems *= (uint64_t)n;
	}
	return 0;
}

static int repo_parse_tensors(struct json_object *cfg, const char *key, struct gw_tensor *out,
			      int *nr, const char *where, struct coloc_err *err)
{
	struct json_object *arr;
	size_t n;

	*nr = 0;
	if (!json_object_object_get_ex(cfg, key, &arr))
		return 0;
	n = json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
	if (!n || n > GW_REPO_MAX_TENSORS)
		return coloc_err_set(err, -EINVAL, "%s: \"%s\" wants an array of 1 to %d tensors",
				     where, key, GW_REPO_MAX_TENSORS);
	for (size_t i = 0; i < n; i++) {
		int r = repo_parse_tensor(json_object_array_get_idx(arr, i), &out[i], where, err);

		if (r)
			return r;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(out[j].name, out[i].name))
				return coloc_err_set(err, -EINVAL, "%s: tensor %s named twice",
						     where, out[i].name);
	}
	*nr = (int)n;
	return 0;
}

static const char *const repo_known_keys[] = { "qos_ms", "executors", "weights", "input",
					       "output" };

static int repo_parse_config(const struct gw_repo *repo, int dirfd, const char *path,
			     const char *vdir, struct gw_model_config *cfg, struct coloc_err *err)
{
	char *text = repo_read_small(repo, dirfd, path, GW_REPO_MAX_CONFIG, err);
	struct json_tokener *tok;
	struct json_object *o = NULL, *v;
	int r = -EINVAL;

	if (!text)
		return err ? err->code : -EIO;
	tok = json_tokener_new();
	if (tok) {
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
		o = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
		json_tokener_free(tok);
	}
	free(text);
	if (!o || !json_object_is_type(o, json_type_object)) {
		coloc_err_set(err, -EINVAL, "%s: not a JSON object", path);
		goto out;
	}
	json_object_object_foreach(o, key, val)
	{
		size_t i = 0;

		(void)val;
		while (i < sizeof(repo_known_keys) / sizeof(*repo_known_keys) &&
		       strcmp(key, repo_known_keys[i]))
			i++;
		if (i == sizeof(repo_known_keys) / sizeof(*repo_known_keys)) {
			coloc_err_set(err, -EINVAL, "%s: unknown key \"%.64s\"", path, key);
			goto out;
		}
	}
	if (!json_object_object_get_ex(o, "qos_ms", &v) ||
	    !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) ||
	    !(json_object_get_double(v) > 0 && json_object_get_double(v) <= 3600000)) {
		coloc_err_set(err, -EINVAL, "%s: \"qos_ms\" wants a number of ms above 0", path);
		goto out;
	}
	cfg->qos_ms = json_object_get_double(v);
	if (json_object_object_get_ex(o, "executors", &v)) {
		int64_t n = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;

		if (n < 1 || n > COLOC_MAX_EXECUTORS) {
			coloc_err_set(err, -EINVAL, "%s: \"executors\" wants 1 to %d", path,
				      COLOC_MAX_EXECUTORS);
			goto out;
		}
		cfg->executors = (int)n;
	}
	if (json_object_object_get_ex(o, "weights", &v)) {
		const char *w =
			json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";

		if (!*w || strchr(w, '/') || w[0] == '.') {
			coloc_err_set(err, -EINVAL,
				      "%s: \"weights\" wants a file name in the version folder",
				      path);
			goto out;
		}
		if ((size_t)snprintf(cfg->weights_rel, sizeof(cfg->weights_rel), "%s/%s", vdir,
				     w) >= sizeof(cfg->weights_rel) ||
		    (size_t)snprintf(cfg->weights, sizeof(cfg->weights), "%s/%s", repo->path,
				     cfg->weights_rel) >= sizeof(cfg->weights) ||
		    !repo_is(repo, dirfd, cfg->weights_rel, S_IFREG)) {
			coloc_err_set(err, -ENOENT,
				      "%s: weights %.200s not found in %.200s (a regular file, not "
				      "a symbolic link without --repository-links)",
				      path, w, vdir);
			goto out;
		}
	}
	r = repo_parse_tensors(o, "input", cfg->inputs, &cfg->nr_inputs, path, err);
	if (!r)
		r = repo_parse_tensors(o, "output", cfg->outputs, &cfg->nr_outputs, path, err);
out:
	json_object_put(o);
	return r;
}

/* `input NAME shape=AxBx...` lines of a coloc .model file, when config.json named none. */
static int repo_model_file_inputs(const struct gw_repo *repo, int dirfd,
				  struct gw_model_config *cfg, struct coloc_err *err)
{
	const char *rel = cfg->model_rel;
	int fd = repo_openat(repo, dirfd, rel, O_RDONLY | O_NONBLOCK);
	struct stat st;
	char line[512];
	FILE *f;
	int r = 0;

	if (fd < 0)
		return coloc_err_set(err, fd, "%s: %s", rel, repo_why(fd));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return coloc_err_set(err, -EINVAL, "%s: not a regular file", rel);
	}
	f = fdopen(fd, "r");
	if (!f) {
		r = -errno;
		close(fd);
		return coloc_err_set(err, r, "%s: %s", rel, strerror(-r));
	}
	while (!r && fgets(line, sizeof(line), f)) {
		char name[GW_NAME_MAX], shape[256], *p, *save = NULL;
		struct gw_tensor *t;

		if (strncmp(line, "input", 5) || !isspace((unsigned char)line[5]))
			continue;
		if (sscanf(line + 5, " %63s shape=%255s", name, shape) != 2 ||
		    !gw_repo_name_ok(name) || cfg->nr_inputs == GW_REPO_MAX_TENSORS) {
			r = coloc_err_set(err, -EINVAL,
					  "%s: an input line the gateway cannot read (give the "
					  "inputs in config.json)",
					  rel);
			break;
		}
		t = &cfg->inputs[cfg->nr_inputs];
		memset(t, 0, sizeof(*t));
		snprintf(t->name, sizeof(t->name), "%s", name);
		t->elems = 1;
		for (p = strtok_r(shape, "x", &save); p; p = strtok_r(NULL, "x", &save)) {
			long d = strtol(p, NULL, 10);

			if (d < 1 || d > (long)GW_MAX_ELEMS || t->nr_dims == GW_REPO_MAX_DIMS ||
			    t->elems * (uint64_t)d > GW_MAX_ELEMS) {
				r = coloc_err_set(err, -EINVAL,
						  "%s: input %s: a shape out of range", rel, name);
				break;
			}
			t->dims[t->nr_dims++] = d;
			t->elems *= (uint64_t)d;
		}
		if (!r && !t->nr_dims)
			r = coloc_err_set(err, -EINVAL, "%s: input %s has no shape", rel, name);
		if (!r)
			cfg->nr_inputs++;
	}
	fclose(f);
	return r;
}

/* The highest version folder of the model folder mfd holding a model file, or -1. */
static long repo_best_version(const struct gw_repo *repo, int mfd)
{
	int fd = dup(mfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	long best = -1;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((de = readdir(d))) {
		long v = repo_version_of(de->d_name);
		char m[sizeof(de->d_name) + 16];

		/* a version folder or model file that is a link is not one (unless followed) */
		if (v <= best || !repo_is(repo, mfd, de->d_name, S_IFDIR))
			continue;
		snprintf(m, sizeof(m), "%s/model.model", de->d_name);
		if (repo_is(repo, mfd, m, S_IFREG))
			best = v;
		snprintf(m, sizeof(m), "%s/model.onnx", de->d_name);
		if (repo_is(repo, mfd, m, S_IFREG))
			best = v;
	}
	closedir(d);
	return best;
}

/* REPO/NAME into cfg, every file opened below the repository's folder rfd. */
static int repo_read_model_at(const struct gw_repo *repo, int rfd, const char *name,
			      struct gw_model_config *cfg, struct coloc_err *err)
{
	char path[PATH_MAX], vdir[GW_NAME_MAX + 16];
	int mfd = repo_openat(repo, rfd, name, O_RDONLY | O_DIRECTORY);
	long best;
	int r;

	if (mfd == -ENOENT)
		return coloc_err_set(err, -ENOENT, "no model %s in the repository", name);
	if (mfd == -ENOTDIR || mfd == -ELOOP)
		return coloc_err_set(err, -EINVAL, "%s: not a directory: %s", name, repo_why(mfd));
	if (mfd < 0)
		return coloc_err_set(err, mfd, "%s: %s", name, repo_why(mfd));
	best = repo_best_version(repo, mfd);
	if (best < 0) {
		close(mfd);
		return coloc_err_set(err, -ENOENT,
				     "%s: no version folder (1, 2, ...) holding model.model or "
				     "model.onnx (folders and files; symbolic links only with "
				     "--repository-links)",
				     name);
	}
	snprintf(cfg->version, sizeof(cfg->version), "%ld", best);
	snprintf(vdir, sizeof(vdir), "%s/%ld", name, best);
	snprintf(cfg->model_rel, sizeof(cfg->model_rel), "%s/model.model", vdir);
	if (!repo_is(repo, rfd, cfg->model_rel, S_IFREG))
		snprintf(cfg->model_rel, sizeof(cfg->model_rel), "%s/model.onnx", vdir);
	close(mfd);
	if ((size_t)snprintf(cfg->path, sizeof(cfg->path), "%s/%s", repo->path, cfg->model_rel) >=
	    sizeof(cfg->path))
		return coloc_err_set(err, -ENAMETOOLONG, "%s: the repository's path is too long",
				     name);
	snprintf(path, sizeof(path), "%s/config.json", name);
	r = repo_parse_config(repo, rfd, path, vdir, cfg, err);
	if (!r && !cfg->nr_inputs && strstr(cfg->model_rel, "/model.model"))
		r = repo_model_file_inputs(repo, rfd, cfg, err);
	return r;
}

int gw_repo_read_model(const struct gw_repo *repo, const char *name, struct gw_model_config *cfg,
		       struct coloc_err *err)
{
	int rfd, r;

	memset(cfg, 0, sizeof(*cfg));
	if (!gw_repo_name_ok(name))
		return coloc_err_set(err, -EINVAL,
				     "model name '%.64s' is not 1..63 of [A-Za-z0-9_.-] (not "
				     "starting with '.')",
				     name);
	snprintf(cfg->name, sizeof(cfg->name), "%s", name);
	rfd = gw_repo_open(repo, err);
	if (rfd < 0)
		return rfd;
	r = repo_read_model_at(repo, rfd, name, cfg, err);
	close(rfd);
	return r;
}

static int repo_cmp_names(const void *a, const void *b)
{
	return strcmp(a, b);
}

int gw_repo_list(const struct gw_repo *repo, char (*names)[GW_NAME_MAX], int max,
		 struct coloc_err *err)
{
	int rfd = gw_repo_open(repo, err);
	DIR *d = rfd < 0 ? NULL : fdopendir(rfd);
	struct dirent *de;
	int n = 0;

	if (rfd < 0)
		return rfd;
	if (!d) {
		close(rfd);
		return coloc_err_set(err, -errno, "model repository %s: %s", repo->path,
				     strerror(errno));
	}
	while ((de = readdir(d))) {
		char cfg[sizeof(de->d_name) + 16];

		if (!gw_repo_name_ok(de->d_name))
			continue;
		snprintf(cfg, sizeof(cfg), "%s/config.json", de->d_name);
		if (!repo_is(repo, dirfd(d), cfg, S_IFREG))
			continue;
		if (n == max) {
			closedir(d);
			return coloc_err_set(err, -E2BIG,
					     "model repository %s: more than %d models", repo->path,
					     max);
		}
		/* gw_repo_name_ok bounded it below GW_NAME_MAX */
		memcpy(names[n++], de->d_name, strlen(de->d_name) + 1);
	}
	closedir(d);
	qsort(names, (size_t)n, GW_NAME_MAX, repo_cmp_names);
	return n;
}

static int repo_check_or_fill(struct gw_tensor *t, int *nr, const char *fill_name, uint64_t bytes,
			      const char *what, const char *model, struct coloc_err *err)
{
	uint64_t elems = 0;

	if (bytes % 4)
		return coloc_err_set(err, -EINVAL, "%s: colocd's %s (%llu bytes) is not fp32s",
				     model, what, (unsigned long long)bytes);
	if (!*nr) {
		memset(t, 0, sizeof(*t));
		snprintf(t->name, sizeof(t->name), "%s", fill_name);
		t->nr_dims = 1;
		t->dims[0] = (int64_t)(bytes / 4);
		t->elems = bytes / 4;
		*nr = 1;
		return 0;
	}
	for (int i = 0; i < *nr; i++)
		elems += t[i].elems;
	if (elems * 4 != bytes)
		return coloc_err_set(err, -EINVAL,
				     "%s: the %s shapes hold %llu floats, colocd says the model's "
				     "%s are %llu bytes (%llu floats)",
				     model, what, (unsigned long long)elems, what,
				     (unsigned long long)bytes, (unsigned long long)bytes / 4);
	return 0;
}

int gw_repo_check_sizes(struct gw_model_config *cfg, uint64_t input_bytes, uint64_t output_bytes,
			struct coloc_err *err)
{
	int r = repo_check_or_fill(cfg->inputs, &cfg->nr_inputs, "input", input_bytes, "inputs",
				   cfg->name, err);

	return r ? r :
		   repo_check_or_fill(cfg->outputs, &cfg->nr_outputs, "output", output_bytes,
				      "outputs", cfg->name, err);
}
