// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A tensor's bytes from an external data file (ONNX's data_location
 * EXTERNAL): the location stays below the model's directory; the file is
 * one handed over with the model or one opened beneath that directory
 * without following links (model_file.c); it is a regular file holding the
 * bytes asked for and, where the options ask (external_own), the user's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "huge_alloc.h"
#include "model_file.h"
#include "onnx_internal.h"
#include "trusted_path.h"

/*
 * Whether a relative path stays below its directory: no leading '/', no
 * ".." component (ONNX Runtime's rule for external data locations).
 */
static bool path_stays_below(const char *p)
{
	if (!*p || *p == '/')
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");

		if (n == 2 && s[0] == '.' && s[1] == '.')
			return false;
		s += n;
		s += *s == '/';
	}
	return true;
}

/*
 * The external data file at loc below the model's directory: the one the
 * caller opened (opts->dir_fd) or the name's, opened for this file only.
 */
static int external_open(const struct onnx_ctx *c, const char *loc, const char **what)
{
	if (c->opts && c->opts->has_dir_fd)
		return model_external_open(c->opts->dir_fd, loc, what);
	return model_external_open_beside(c->file, loc, what);
}

int onnx_external_bytes(struct onnx_ctx *c, const Onnx__TensorProto *t, const char *name,
			size_t want, uint8_t **out)
{
	const char *loc = NULL, *slash = strrchr(c->file, '/');
	long long off = 0, len = -1;
	const char *what = NULL;
	char path[PATH_MAX], why[PATH_MAX + 96];
	struct stat st;
	size_t got = 0;
	bool own = true;
	uint8_t *buf;
	int fd, ret;

	for (size_t i = 0; i < t->n_external_data; i++) {
		const Onnx__StringStringEntryProto *e = t->external_data[i];
		char *end;

		if (!e->key || !e->value)
			continue;
		if (!strcmp(e->key, "location")) {
			loc = e->value;
		} else if (!strcmp(e->key, "offset") || !strcmp(e->key, "length")) {
			long long v;

			errno = 0;
			v = strtoll(e->value, &end, 10);
			if (errno || end == e->value || *end || v < 0)
				return onnx_refuse(c, -EINVAL,
						   "tensor '%.64s': external data %s '%.32s' is "
						   "not a byte count",
						   name, e->key, e->value);
			*(!strcmp(e->key, "offset") ? &off : &len) = v;
		}
	}
	if (!loc)
		return onnx_refuse(c, -EINVAL,
				   "tensor '%.64s' is in external data with no location", name);
	if (!path_stays_below(loc))
		return onnx_refuse(c, -EPERM,
				   "tensor '%.64s': external data location '%.128s' is not a "
				   "path below the model's directory",
				   name, loc);
	if (len >= 0 && (unsigned long long)len != want)
		return onnx_refuse(c, -EINVAL,
				   "tensor '%.64s': external data length %lld, but its shape "
				   "and type take %zu bytes",
				   name, len, want);
	if (c->opts && c->opts->external) {
		fd = -1;
		for (int i = 0; i < c->opts->nr_external && fd < 0; i++)
			if (!strcmp(c->opts->external[i].location, loc))
				fd = c->opts->external[i].fd;
		if (fd < 0)
			return onnx_refuse(c, -ENOENT,
					   "tensor '%.64s': external data file '%.128s' was not "
					   "handed over with the model",
					   name, loc);
		snprintf(path, sizeof(path), "'%.128s'", loc);
		own = false;
	} else {
		if ((size_t)snprintf(path, sizeof(path), "%.*s%s",
				     slash ? (int)(slash - c->file + 1) : 0, c->file,
				     loc) >= sizeof(path))
			return onnx_refuse(c, -ENAMETOOLONG,
					   "tensor '%.64s': external data path too long", name);
		fd = external_open(c, loc, &what);
		if (fd < 0)
			return onnx_refuse(c, fd, "tensor '%.64s': external data file %.256s %s",
					   name, path, what ? what : strerror(-fd));
		if (c->opts && c->opts->owner_rule &&
		    trusted_path_check(AT_FDCWD, path, fd, why, sizeof(why))) {
			close(fd);
			return coloc_err_set(c->err, -EACCES,
					     "%s: tensor '%.64s': external data file %.256s %s: %s",
					     c->file, name, path, why, TRUSTED_PATH_ADVICE);
		}
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (unsigned long long)off + want > (unsigned long long)st.st_size) {
		if (own)
			close(fd);
		return onnx_refuse(c, -EINVAL,
				   "tensor '%.64s': external data file %.256s has no %zu bytes at "
				   "offset %lld",
				   name, path, want, off);
	}
	buf = huge_alloc(want);
	if (!buf) {
		if (own)
			close(fd);
		return coloc_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
	}
	while (got < want) {
		ssize_t n = pread(fd, buf + got, want - got, (off_t)off + (off_t)got);

		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			if (own)
				close(fd);
			free(buf);
			return onnx_refuse(c, ret, "tensor '%.64s': reading %.256s failed", name,
					   path);
		}
		got += (size_t)n;
	}
	if (own)
		close(fd);
	*out = buf;
	return 0;
}
