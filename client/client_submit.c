// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Submit (include/coloc/client.h): a tenant's model, its weights and an
 * ONNX model's external data files are opened here, with the caller's own
 * permissions (by path, or below a folder without links as
 * coloc_client_submit_at's rules say), and go to colocd as descriptors on
 * the request's line: colocd never opens a path a client names.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "coloc/protocol.h"
#include "client_internal.h"
#include "onnx_scan.h"
#include "trusted_path.h"

/* path, relative to dirfd, opened with flags through no symbolic link at any component. */
static int client_open_no_links(int dirfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)flags,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd;
	int top;

	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd < 0 && errno == EINTR);
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return fd < 0 ? -errno : (int)fd;
	if (path[0] != '/')
		return coloc_open_beneath_walk(dirfd, path, flags);
	top = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return -errno;
	fd = coloc_open_beneath_walk(top, path + strspn(path, "/"), flags);
	close(top);
	return (int)fd;
}

/*
 * How a submit by path opens its files: as root's tools open a model
 * (common/trusted_path.h), through no link and root's own, or with
 * --allow-foreign-owner through no link only; as any other user, as the
 * user may.
 */
enum client_rule { CLIENT_AS_USER, CLIENT_NO_LINKS, CLIENT_ROOTS_OWN };

/*
 * path opened for colocd, with the caller's own permissions (relative to
 * dirfd when it is not AT_FDCWD) and by rule: never blocking on a FIFO,
 * no controlling tty. fd or -errno with the reason.
 */
static int client_open_file(struct coloc_client *c, int dirfd, const char *path, const char *what,
			    enum client_rule rule)
{
	int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, fd;
	char why[PATH_MAX + 96];

	if (rule == CLIENT_AS_USER) {
		fd = openat(dirfd, path, flags);
		if (fd < 0)
			return client_fail(&c->error, -errno, "cannot open %s %s: %s", what, path,
					   strerror(errno));
		return fd;
	}
	fd = client_open_no_links(dirfd, path, flags);
	if (fd == -ELOOP)
		return client_fail(
			&c->error, fd,
			"cannot open %s %s: a symbolic link is on its path, not followed "
			"as root; " TRUSTED_PATH_ADVICE,
			what, path);
	if (fd < 0)
		return client_fail(&c->error, fd, "cannot open %s %s: %s", what, path,
				   strerror(-fd));
	if (rule == CLIENT_ROOTS_OWN && trusted_path_check(dirfd, path, fd, why, sizeof(why))) {
		close(fd);
		return client_fail(&c->error, -EACCES,
				   "cannot submit %s %s as root: it %s; " TRUSTED_PATH_ADVICE, what,
				   path, why);
	}
	return fd;
}

/*
 * An ONNX model's external data file loc checked by colocd's rule before
 * it is opened (relative, no '..' component: colocd refuses the rest, but
 * only after the files were opened and handed over). 0 or -EINVAL.
 */
static int client_check_location(struct coloc_client *c, const char *loc)
{
	bool ok = loc[0] && loc[0] != '/';

	for (const char *p = loc; ok && *p;) {
		size_t k = strcspn(p, "/");

		ok = !(k == 2 && p[0] == '.' && p[1] == '.');
		p += k;
		p += *p == '/';
	}
	if (!ok)
		return client_fail(&c->error, -EINVAL,
				   "external data file '%.200s' is not a relative path below the "
				   "model's directory (no '..')",
				   loc);
	return 0;
}

/*
 * An ONNX model's external data locations (a regular file only: colocd
 * refuses the rest), read with pread, never mapped: a file truncated
 * while it is read is this model's error, not a SIGBUS.
 */
static int client_locations(struct coloc_client *c, int fd, const char *path,
			    char (*locs)[ONNX_SCAN_LOCATION_LEN], int max)
{
	struct stat st;
	int n;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !st.st_size)
		return 0;
	n = onnx_scan_locations_fd(fd, (uint64_t)st.st_size, locs, max);
	if (n == -E2BIG)
		return client_fail(&c->error, n,
				   "%s keeps its tensors in more than %d external data files, the "
				   "most a submit carries; save it with all tensors in one file",
				   path, max);
	if (n == -ENODATA)
		return client_fail(&c->error, -EIO,
				   "%s became shorter while it was read (%lld bytes before): "
				   "written or truncated during the submit; submit it again",
				   path, (long long)st.st_size);
	if (n == -ENOMEM)
		return client_fail(&c->error, n, "out of memory");
	if (n < 0 && n != -EINVAL)
		return client_fail(&c->error, n, "cannot read %s: %s", path, strerror(-n));
	if (n < 0)
		return client_fail(&c->error, n,
				   "%s is not an ONNX model (its protobuf does not parse)", path);
	return n;
}

/* Why coloc_open_beneath() refused path, in words (err < 0). */
static int client_beneath_fail(struct coloc_client *c, int err, const char *what, const char *path)
{
	const char *why = err == -ELOOP  ? "a symbolic link, not followed here" :
			  err == -EXDEV  ? "it leads outside its folder" :
					   strerror(-err);

	return client_fail(&c->error, err, "cannot open %s %s: %s", what, path, why);
}

/*
 * One of a submit's files for colocd: by path and rule (at NULL; relative
 * to dirfd when that is not AT_FDCWD), or by at's rules (below dirfd
 * without links; with links, wherever they lead unless beneath) and then
 * a regular file. fd, or -errno with the reason.
 */
static int client_open_sub(struct coloc_client *c, const struct coloc_submit_files *at, int dirfd,
			   const char *path, const char *what, bool beneath, enum client_rule rule)
{
	struct stat st;
	int fd;

	if (!at)
		return client_open_file(c, dirfd, path, what, rule);
	if (at->links && !beneath) {
		fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			fd = -errno;
	} else {
		fd = coloc_open_beneath(dirfd, path, O_RDONLY | O_NONBLOCK, at->links);
	}
	if (fd < 0)
		return client_beneath_fail(c, fd, what, path);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return client_fail(&c->error, -EINVAL, "cannot open %s %s: not a regular file",
				   what, path);
	}
	return fd;
}

/*
 * The folder an ONNX model's external data are below (O_PATH; as root
 * through no link), or -errno with the reason.
 */
static int client_model_dir(struct coloc_client *c, const struct coloc_submit_files *at,
			    const char *model, enum client_rule rule)
{
	char *dir = strdup(model), *slash;
	int fd;

	if (!dir)
		return client_fail(&c->error, -ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	if (slash)
		slash[1] = '\0';
	if (at && !at->links)
		fd = coloc_open_beneath(at->dirfd, slash ? dir : ".", O_PATH | O_DIRECTORY, false);
	else if (!at && rule != CLIENT_AS_USER)
		fd = client_open_no_links(AT_FDCWD, slash ? dir : ".",
					  O_PATH | O_DIRECTORY | O_CLOEXEC);
	else if ((fd = openat(at ? at->dirfd : AT_FDCWD, slash ? dir : ".",
			      O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		fd = -errno;
	free(dir);
	if (fd < 0)
		return client_fail(&c->error, fd, "cannot open the directory of %s: %s", model,
				   strerror(-fd));
	return fd;
}

/* coloc_client_submit (at NULL: by path) and coloc_client_submit_at. */
static struct json_object *client_submit(struct coloc_client *c, const struct coloc_submit *sub,
					 const struct coloc_submit_files *at)
{
	char(*locs)[ONNX_SCAN_LOCATION_LEN] = NULL;
	struct json_object *req = NULL, *resp = NULL, *ext;
	int fds[COLOC_MAX_REQUEST_FDS], nr = 0, n = 0, dirfd = -1, r;
	const char *model = at ? at->model : sub->model;
	const char *weights = at ? at->weights : sub->weights;
	int top = at ? at->dirfd : AT_FDCWD;
	enum client_rule rule = geteuid()		 ? CLIENT_AS_USER :
				sub->allow_foreign_owner ? CLIENT_NO_LINKS :
							   CLIENT_ROOTS_OWN;
	size_t plen = strlen(model);

	if (!weights != !sub->weights) {
		client_fail(&c->error, -EINVAL,
			    "weights named for colocd but not where to open them");
		return NULL;
	}
	r = client_open_sub(c, at, top, model, "model", false, rule);
	if (r < 0)
		return NULL;
	fds[nr++] = r;
	if (weights) {
		r = client_open_sub(c, at, top, weights, "weights file", false, rule);
		if (r < 0)
			goto out;
		fds[nr++] = r;
	}
	if (plen > 5 && !strcmp(model + plen - 5, ".onnx")) {
		locs = calloc(COLOC_MAX_REQUEST_FDS, sizeof(*locs));
		if (!locs) {
			client_fail(&c->error, -ENOMEM, "out of memory");
			goto out;
		}
		n = client_locations(c, fds[0], model, locs, COLOC_MAX_REQUEST_FDS - nr);
		if (n < 0)
			goto out;
		dirfd = n ? client_model_dir(c, at, model, rule) : -1;
		if (n && dirfd < 0)
			goto out;
	}
	for (int i = 0; i < n; i++) {
		r = client_check_location(c, locs[i]);
		if (!r)
			r = client_open_sub(c, at, dirfd, locs[i], "external data file", true,
					    rule);
		if (r < 0)
			goto out;
		fds[nr++] = r;
	}
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string("submit"));
	json_object_object_add(req, "name", json_object_new_string(sub->name));
	json_object_object_add(req, "model", json_object_new_string(sub->model));
	if (sub->weights)
		json_object_object_add(req, "weights", json_object_new_string(sub->weights));
	if (n) {
		ext = json_object_new_array();
		for (int i = 0; i < n; i++)
			json_object_array_add(ext, json_object_new_string(locs[i]));
		json_object_object_add(req, "external", ext);
	}
	json_object_object_add(req, "qos_ms", json_object_new_double(sub->qos_ms));
	if (sub->executors > 0)
		json_object_object_add(req, "executors", json_object_new_int(sub->executors));
	resp = coloc_client_call_fds(c, req, fds, nr);
out:
	json_object_put(req);
	for (int i = 0; i < nr; i++)
		close(fds[i]);
	if (dirfd >= 0)
		close(dirfd);
	free(locs);
	return resp;
}

struct json_object *coloc_client_submit(struct coloc_client *c, const struct coloc_submit *sub)
{
	return client_submit(c, sub, NULL);
}

struct json_object *coloc_client_submit_at(struct coloc_client *c, const struct coloc_submit *sub,
					   const struct coloc_submit_files *files)
{
	return client_submit(c, sub, files);
}
