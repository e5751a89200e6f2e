// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocd's --state file: the admitted tenants as submitted (name, the
 * client's names of its files, QoS, owner), so that a restarted daemon
 * submits them again. Written whole to a temporary file beside it, synced,
 * then renamed over it: a crash leaves the old file or the new one, never
 * half of one. Format:
 *   {"tenants":[{"name":S,"model":S,"weights":S|null,"external":[S...]?,
 *                "qos_ns":N,"executors":N,"owner":N},...]}
 * ("executors" is left out for one, and read as one when missing; "owner",
 * the submitter's uid, is read as root's when missing: a file written
 * before tenants had owners holds what root could submit).
 *
 * The bytes: colocd never reopens a path a client named, so it keeps its
 * own copy of each admitted tenant's files in the directory STATE.files/
 * (root's, mode 0700, made when missing): NAME.model, NAME.weights,
 * NAME.ext.I. A restart reads those, and only a regular file owned by root
 * and writable by no one else; a tenant whose copies are missing does not
 * come back (its client submits it again).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include "colocd.h"
#include "serving_state.h"
#include "state_writer.h"
#include "submit_files.h"
#include "tenants_key.h"

/* STATE.files/, opened (made when missing) as a directory of root's; fd or -errno. */
static int state_dir_open(const char *state_path, bool create)
{
	char dir[PATH_MAX];
	struct stat st;
	int fd;

	if ((size_t)snprintf(dir, sizeof(dir), "%s.files", state_path) >= sizeof(dir))
		return -ENAMETOOLONG;
	if (create && mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_uid != 0 || (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* The name of the copy of file k of tenant name: 0 the model, 1 the weights, 2 + i external i. */
static void state_file_name(char *buf, size_t len, const char *name, int k)
{
	if (k < 2)
		snprintf(buf, len, "%s.%s", name, k ? "weights" : "model");
	else
		snprintf(buf, len, "%s.ext.%d", name, k - 2);
}

/* A copy of the sealed memfd src as file k of name in dirfd (temp, sync, rename). */
static int state_copy_out(int dirfd, const char *name, int k, int src)
{
	char final[SERVING_NAME_LEN + 32], tmp[SERVING_NAME_LEN + 40];
	struct stat st;
	off_t off = 0;
	int fd, ret = 0;

	state_file_name(final, sizeof(final), name, k);
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	if (fstat(src, &st))
		return -errno;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (!ret && off < st.st_size) {
		ssize_t n = sendfile(fd, src, &off, (size_t)(st.st_size - off));

		if (n <= 0 && !(n < 0 && errno == EINTR))
			ret = n < 0 ? -errno : -EIO;
	}
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	if (!ret && renameat(dirfd, tmp, dirfd, final))
		ret = -errno;
	if (ret)
		unlinkat(dirfd, tmp, 0);
	return ret;
}

static void state_unlink_files(int dirfd, const char *name, int nr_external)
{
	char file[SERVING_NAME_LEN + 32];

	for (int k = 0; k < 2 + nr_external; k++) {
		state_file_name(file, sizeof(file), name, k);
		unlinkat(dirfd, file, 0);
	}
}

int colocd_state_keep_files(const char *path, const char *name, const struct colocd_files *files,
			    int nr_external, struct coloc_err *err)
{
	int dirfd = state_dir_open(path, true), ret;

	if (dirfd < 0)
		return coloc_err_set(err, dirfd, "cannot keep tenant %s's files in %s.files: %s",
				     name, path, strerror(-dirfd));
	state_unlink_files(dirfd, name, COLOC_MAX_REQUEST_FDS);
	ret = state_copy_out(dirfd, name, 0, files->model_fd);
	if (!ret && files->weights_fd >= 0)
		ret = state_copy_out(dirfd, name, 1, files->weights_fd);
	for (int i = 0; i < nr_external && !ret; i++)
		ret = state_copy_out(dirfd, name, 2 + i, files->external_fd[i]);
	if (ret) {
		state_unlink_files(dirfd, name, nr_external);
		coloc_err_set(err, ret, "cannot keep tenant %s's files in %s.files: %s", name, path,
			      strerror(-ret));
	}
	close(dirfd);
	return ret;
}

void colocd_state_drop_files(const char *path, const char *name, int nr_external)
{
	int dirfd = state_dir_open(path, false);

	if (dirfd >= 0) {
		state_unlink_files(dirfd, name, nr_external);
		close(dirfd);
	}
}

/* A duplicate of fd (close-on-exec, above the standard three), -1 for -1; 0 or -errno. */
static int state_dup(int fd, int *out)
{
	*out = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return fd >= 0 && *out < 0 ? -errno : 0;
}

/* The specs to d's writer (off the loop, never failing), or the file written here without one. */
static int state_commit(struct colocd *d, struct coloc_err *err)
{
	if (!d->cfg.state_path)
		return 0;
	if (!d->state_writer)
		return colocd_state_write(d, err);
	state_writer_post(d->state_writer, d->specs, d->nr_specs);
	return 0;
}

int colocd_spec_restore(struct colocd *d, const struct colocd_spec *spec, struct coloc_err *err)
{
	if (d->nr_specs >= COLOC_MAX_TENANTS)
		return coloc_err_set(err, -ENOSPC, "all %d tenant slots are taken",
				     COLOC_MAX_TENANTS);
	/* what its drop will need, taken now: a drop cannot fail */
	if (d->state_writer && state_writer_reserve_drop(d->state_writer))
		return coloc_err_set(err, -ENOMEM, "out of memory recording tenant %s", spec->name);
	d->specs[d->nr_specs++] = *spec;
	return 0;
}

int colocd_spec_add(struct colocd *d, const struct colocd_spec *spec,
		    const struct colocd_files *files, struct coloc_err *err)
{
	int ret = colocd_spec_restore(d, spec, err);

	if (ret)
		return ret;
	if (!d->cfg.state_path)
		return 0;
	if (!d->state_writer)
		ret = colocd_state_keep_files(d->cfg.state_path, spec->name, files,
					      spec->nr_external, err);
	else if ((ret = state_writer_keep_files(d->state_writer, spec->name, files,
						spec->nr_external)))
		coloc_err_set(err, ret, "cannot keep tenant %s's files: %s", spec->name,
			      strerror(-ret));
	if (!ret)
		ret = state_commit(d, err);
	return ret;
}

int colocd_spec_drop(struct colocd *d, const char *name, struct coloc_err *err)
{
	for (int i = 0; i < d->nr_specs; i++)
		if (!strcmp(d->specs[i].name, name)) {
			int nr_external = d->specs[i].nr_external;

			memmove(&d->specs[i], &d->specs[i + 1],
				(size_t)(d->nr_specs - i - 1) * sizeof(d->specs[0]));
			d->nr_specs--;
			if (!d->cfg.state_path)
				return 0;
			if (!d->state_writer)
				colocd_state_drop_files(d->cfg.state_path, name, nr_external);
			else
				state_writer_drop_files(d->state_writer, name, nr_external);
			return state_commit(d, err);
		}
	return 0;
}

int colocd_files_dup(const struct colocd_files *files, int nr_external, struct colocd_files *out)
{
	int ret = 0;

	out->model_fd = out->weights_fd = -1;
	for (int i = 0; i < COLOC_MAX_REQUEST_FDS; i++)
		out->external_fd[i] = -1;
	ret = state_dup(files->model_fd, &out->model_fd);
	if (!ret)
		ret = state_dup(files->weights_fd, &out->weights_fd);
	for (int i = 0; i < nr_external && !ret; i++)
		ret = state_dup(files->external_fd[i], &out->external_fd[i]);
	if (ret)
		colocd_files_close(out, nr_external);
	return ret;
}

void colocd_files_close(struct colocd_files *files, int nr_external)
{
	if (files->model_fd >= 0)
		close(files->model_fd);
	if (files->weights_fd >= 0)
		close(files->weights_fd);
	for (int i = 0; i < nr_external; i++)
		if (files->external_fd[i] >= 0)
			close(files->external_fd[i]);
	files->model_fd = files->weights_fd = -1;
	for (int i = 0; i < nr_external; i++)
		files->external_fd[i] = -1;
}

/* File k of spec from dirfd: root's own, regular, writable by no other; sealed into *out. */
static int state_copy_in(int dirfd, const struct colocd_spec *spec, int k, uint64_t *budget,
			 int *out, struct coloc_err *err)
{
	char file[SERVING_NAME_LEN + 32];
	struct stat st;
	int fd, ret;

	state_file_name(file, sizeof(file), spec->name, k);
	fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return coloc_err_set(err, -errno, "colocd's copy %s of tenant %s: %s", file,
				     spec->name, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
		close(fd);
		return coloc_err_set(
			err, -EPERM,
			"colocd's copy %s of tenant %s is not a regular file of root's "
			"writable by root only",
			file, spec->name);
	}
	ret = submit_file_seal(fd, file, budget, out, err);
	close(fd);
	return ret;
}

int colocd_state_files(const char *path, const struct colocd_spec *spec, struct colocd_files *files,
		       struct coloc_err *err)
{
	uint64_t budget = COLOC_MAX_SUBMIT_BYTES;
	int dirfd = state_dir_open(path, false), ret;

	files->model_fd = files->weights_fd = -1;
	for (int i = 0; i < COLOC_MAX_REQUEST_FDS; i++)
		files->external_fd[i] = -1;
	if (dirfd < 0)
		return coloc_err_set(err, dirfd, "%s.files: %s", path, strerror(-dirfd));
	ret = state_copy_in(dirfd, spec, 0, &budget, &files->model_fd, err);
	if (!ret && spec->weights[0])
		ret = state_copy_in(dirfd, spec, 1, &budget, &files->weights_fd, err);
	for (int i = 0; i < spec->nr_external && !ret; i++)
		ret = state_copy_in(dirfd, spec, 2 + i, &budget, &files->external_fd[i], err);
	close(dirfd);
	if (ret)
		colocd_files_close(files, spec->nr_external);
	return ret;
}

int colocd_state_write(const struct colocd *d, struct coloc_err *err)
{
	if (!d->cfg.state_path)
		return 0;
	return colocd_state_write_specs(d->cfg.state_path, d->specs, d->nr_specs, err);
}

/* path's directory (opened into *dirfd) and its last component (into base); 0 or -errno. */
static int state_split(const char *path, int *dirfd, char *base, size_t len)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	*dirfd = -1;
	if (!slash || !slash[1] || (size_t)(slash - path) >= sizeof(dir) ||
	    (size_t)snprintf(base, len, "%s", slash + 1) >= len)
		return -EINVAL;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	*dirfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return *dirfd < 0 ? -errno : 0;
}

int colocd_state_check_dir(const char *path, struct coloc_err *err)
{
	char base[NAME_MAX + 1];
	struct stat st;
	int dirfd, ret = state_split(path, &dirfd, base, sizeof(base));

	if (ret)
		return coloc_err_set(err, ret, "cannot open the directory of the state file %s: %s",
				     path, strerror(-ret));
	ret = fstat(dirfd, &st) ? -errno : 0;
	close(dirfd);
	if (ret)
		return coloc_err_set(err, ret, "cannot stat the directory of %s: %s", path,
				     strerror(-ret));
	if (st.st_uid != 0)
		return coloc_err_set(err, -EPERM,
				     "the state file's directory (of %s) belongs to uid %u, not "
				     "root: its owner could plant a state naming root's tenants "
				     "theirs; use a directory of root's, e.g. /var/lib/coloc",
				     path, (unsigned int)st.st_uid);
	if (!(st.st_mode & S_ISVTX) &&
	    ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != 0)))
		return coloc_err_set(err, -EPERM,
				     "the state file's directory (of %s) is writable by other "
				     "users (mode %04o): they could plant or swap the state; use a "
				     "directory only root can write, e.g. /var/lib/coloc",
				     path, (unsigned int)(st.st_mode & 07777));
	return 0;
}

/*
 * The temporary file tmp in dirfd, opened for writing without following a
 * link: made new (O_EXCL), or, where one is there, reused only when it is
 * root's with no other name (a leftover of an earlier write: no other
 * user can make a file of root's); any other file of that name is refused,
 * never written or removed. An fd, or -errno with err.
 */
static int state_tmp_open(int dirfd, const char *tmp, const char *path, struct coloc_err *err)
{
	struct stat named, held;
	int fd;

	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 || errno != EEXIST)
		goto out;
	if (fstatat(dirfd, tmp, &named, AT_SYMLINK_NOFOLLOW) || named.st_uid != 0 ||
	    named.st_nlink != 1 || !(S_ISREG(named.st_mode) || S_ISFIFO(named.st_mode))) {
		errno = EEXIST;
		goto out;
	}
	fd = openat(dirfd, tmp,
		    O_WRONLY | O_NOFOLLOW | O_CLOEXEC | (S_ISREG(named.st_mode) ? O_TRUNC : 0));
	if (fd >= 0 && (fstat(fd, &held) || held.st_ino != named.st_ino ||
			held.st_dev != named.st_dev || held.st_uid != 0 || held.st_nlink != 1)) {
		close(fd);
		fd = -1;
		errno = EEXIST;
	}
out:
	if (fd < 0)
		return coloc_err_set(err, -errno,
				     "cannot write the state file %s: its temporary file %s: %s%s",
				     path, tmp, strerror(errno),
				     errno == EEXIST ? " (not root's: remove it)" : "");
	return fd;
}

int colocd_state_write_specs(const char *path, const struct colocd_spec *specs, int nr,
			     struct coloc_err *err)
{
	char base[NAME_MAX + 1], tmp[NAME_MAX + 8];
	int dirfd, fd, ret = state_split(path, &dirfd, base, sizeof(base));

	if (ret)
		return coloc_err_set(err, ret, "cannot write the state file %s: %s", path,
				     strerror(-ret));
	snprintf(tmp, sizeof(tmp), "%s.tmp", base);
	fd = state_tmp_open(dirfd, tmp, path, err);
	if (fd < 0) {
		close(dirfd);
		return fd;
	}
	ret = colocd_state_render(fd, specs, nr);
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	if (!ret && renameat(dirfd, tmp, dirfd, base))
		ret = -errno;
	if (ret)
		unlinkat(dirfd, tmp, 0);
	close(dirfd);
	if (ret)
		return coloc_err_set(err, ret, "cannot write the state file %s: %s", path,
				     strerror(-ret));
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
	struct json_object *q, *e = NULL, *u = NULL, *ext;

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
	if (json_object_object_get_ex(o, "external", &ext)) {
		size_t n = json_object_is_type(ext, json_type_array) ?
				   json_object_array_length(ext) :
				   (size_t)COLOC_MAX_REQUEST_FDS;

		for (size_t k = 0; k < n; k++) {
			struct json_object *v = json_object_array_get_idx(ext, k);

			if (n >= COLOC_MAX_REQUEST_FDS ||
			    !json_object_is_type(v, json_type_string) ||
			    strlen(json_object_get_string(v)) >= COLOCD_LOCATION_LEN)
				return coloc_err_set(err, -EINVAL,
						     "%s: tenants[%zu]: \"external\" must be an "
						     "array of locations",
						     path, i);
			snprintf(spec->external[spec->nr_external++], COLOCD_LOCATION_LEN, "%s",
				 json_object_get_string(v));
		}
	}
	spec->qos_ns = (__u64)json_object_get_int64(q);
	spec->executors = e ? (int)json_object_get_int64(e) : 0;
	spec->owner = u ? (uid_t)json_object_get_int64(u) : 0;
	return 0;
}

/*
 * A member's tenant kept by a colocd from before each owner's names were
 * its own (docs/design/tenant-names.md) is under its bare name: spec takes
 * its key and its copies are renamed to it. A rename already done (a
 * crash before the file was rewritten) finds nothing to rename. 1 when
 * rekeyed, 0 when not needed, -errno with err.
 */
static int state_rekey_one(int dirfd, struct colocd_spec *spec, struct coloc_err *err)
{
	char key[SERVING_NAME_LEN], from[SERVING_NAME_LEN + 32], to[SERVING_NAME_LEN + 32];
	const char *name;
	uid_t named;

	if (!spec->owner || tenants_key_split(spec->name, &named, &name))
		return 0;
	if (tenants_key(key, spec->owner, spec->name))
		return coloc_err_set(err, -ENAMETOOLONG,
				     "uid %u's tenant %s: its name and uid are too long for a "
				     "key (%d characters at most); left under its bare name, "
				     "root's to remove",
				     (unsigned int)spec->owner, spec->name, SERVING_NAME_LEN - 1);
	for (int k = 0; k < 2 + spec->nr_external; k++) {
		state_file_name(from, sizeof(from), spec->name, k);
		state_file_name(to, sizeof(to), key, k);
		if (renameat(dirfd, from, dirfd, to) && errno != ENOENT)
			return coloc_err_set(err, -errno, "renaming colocd's copy %s to %s: %s",
					     from, to, strerror(errno));
	}
	snprintf(spec->name, sizeof(spec->name), "%s", key);
	return 1;
}

int colocd_state_rekey(const char *path, struct colocd_spec *specs, int nr, struct coloc_err *err)
{
	int dirfd = state_dir_open(path, false), rekeyed = 0, failed = 0;

	for (int i = 0; i < nr && dirfd >= 0; i++) {
		int ret = state_rekey_one(dirfd, &specs[i], err);

		rekeyed |= ret > 0;
		failed = failed ?: (ret < 0 ? ret : 0);
	}
	if (dirfd >= 0)
		close(dirfd);
	if (rekeyed) {
		struct coloc_err werr = { 0 };
		int ret = colocd_state_write_specs(path, specs, nr, &werr);

		if (ret)
			return coloc_err_set(err, ret, "%s", coloc_err_str(&werr));
	}
	return failed;
}

int colocd_state_read(const char *path, struct colocd_spec *specs, struct coloc_err *err)
{
	struct json_object *root, *arr;
	size_t n;
	int ret = 0;

	struct stat st = { 0 };
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return coloc_err_set(
			err, -errno, "cannot read the state file %s: %s%s", path, strerror(errno),
			errno == ELOOP ? " (a symbolic link: colocd follows none)" : "");
	/* what root resubmits, with owners, must be a file only root wrote */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
		ret = coloc_err_set(
			err, -EPERM,
			"the state file %s is not a regular file of root's with mode "
			"0600 (owner uid %u, mode %04o): colocd takes tenants and their "
			"owners only from a file only root wrote; remove it",
			path, (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
		close(fd);
		return ret;
	}
	root = json_object_from_fd(fd);
	close(fd);
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
