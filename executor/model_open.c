// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Opens a model file for any entry point: a coloc .model through
 * model_parse(), or an .onnx through the in-memory importer, whose weights
 * buffer is handed to the executor as a sealed memfd (model_open.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_file.h"
#include "model_open.h"
#include "profile.h"

bool model_open_opts_given(const struct onnx_import_opts *opts)
{
	return opts && ((opts->batch && opts->batch != 1) || opts->nr_dims);
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A read-only, sealed memfd holding len bytes of data; fd or -errno. */
static int sealed_memfd(const char *name, const unsigned char *data, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int ret;

	if (fd < 0)
		return -errno;
	ret = write_all(fd, data, len);
	if (!ret &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL))
		ret = -errno;
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

int model_open(const char *path, const struct onnx_import_opts *opts, struct model_source *src,
	       struct coloc_err *err)
{
	return model_open_hashed(path, opts, src, NULL, NULL, err);
}

/* The whole file behind fd, read once into a new buffer (NUL-terminated); 0 or -errno. */
static int read_fd(const char *name, int fd, char **out, size_t *len, struct coloc_err *err)
{
	struct stat st;
	size_t got = 0;
	char *buf;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return coloc_err_set(err, -EINVAL, "%s: not a regular file", name);
	if ((unsigned long long)st.st_size > ONNX_MAX_FILE_BYTES)
		return coloc_err_set(err, -E2BIG,
				     "%s: %lld bytes; the most a model file may have "
				     "is 2 GiB (larger models keep their tensors in external data)",
				     name, (long long)st.st_size);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return coloc_err_set(err, -ENOMEM, "%s: out of memory", name);
	while (got < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return coloc_err_set(err, n < 0 ? -errno : -EIO, "%s: read failed", name);
		}
		got += (size_t)n;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}

/* Parses the bytes buf of the model called name with the import options o into src. */
static int open_bytes(const char *name, char *buf, size_t len, const struct onnx_import_opts *o,
		      struct model_source *src, struct coloc_err *err)
{
	struct onnx_import im;
	int ret, wfd;

	if (!model_path_is_onnx(name)) {
		src->model = model_parse(name, buf, len, err);
		return src->model ? 0 : (err && err->code ? err->code : -EINVAL);
	}
	ret = onnx_import_buffer(name, buf, len, o, &im, err);
	if (ret)
		return ret;
	wfd = sealed_memfd("coloc-onnx-weights", im.weights, im.weights_len);
	if (wfd < 0) {
		onnx_import_free(&im);
		return coloc_err_set(err, wfd, "%s: cannot hold the imported weights in memory: %s",
				     name, strerror(-wfd));
	}
	src->model = im.model;
	im.model = NULL;
	onnx_import_free(&im);
	src->onnx = true;
	src->weights_fd = wfd;
	snprintf(src->weights_path, sizeof(src->weights_path), "/proc/self/fd/%d", wfd);
	return 0;
}

int model_open_fd(const char *name, int fd, const struct onnx_import_opts *opts,
		  struct model_source *src, struct coloc_err *err)
{
	static const struct onnx_external_fd none[1];
	struct onnx_import_opts o = opts ? *opts : (struct onnx_import_opts){ .batch = 1 };
	size_t len = 0;
	char *buf = NULL;
	int ret;

	*src = (struct model_source){ .weights_fd = -1 };
	if (!model_path_is_onnx(name) && model_open_opts_given(opts))
		return coloc_err_set(err, -EINVAL,
				     "%s: --batch and --dim apply to ONNX files (*.onnx) only",
				     name);
	ret = read_fd(name, fd, &buf, &len, err);
	if (ret)
		return ret;
	/* never by path: an empty table refuses every external location */
	if (!o.external) {
		o.external = none;
		o.nr_external = 0;
	}
	ret = open_bytes(name, buf, len, &o, src, err);
	free(buf);
	return ret;
}

void model_source_close(struct model_source *src)
{
	model_free(src->model);
	if (src->weights_fd >= 0)
		close(src->weights_fd);
	*src = (struct model_source){ .weights_fd = -1 };
}

void model_source_drop_weights(struct model_source *src)
{
	if (src->weights_fd >= 0)
		close(src->weights_fd);
	src->weights_fd = -1;
	src->weights_path[0] = '\0';
}

static int dim_cmp(const void *a, const void *b)
{
	return strcmp(((const struct onnx_dim_value *)a)->name,
		      ((const struct onnx_dim_value *)b)->name);
}

/* hash, the file's bytes' hash, with an ONNX model's import options added. */
static uint64_t hash_with_opts(const char *path, const struct onnx_import_opts *opts, uint64_t hash)
{
	struct onnx_dim_value dims[ONNX_MAX_DIM_VALUES];
	char kv[ONNX_DIM_NAME_LEN + 32];
	int n;

	/* Default options keep the file's own hash, the key coloc-profile always used. */
	if (!model_path_is_onnx(path) || !model_open_opts_given(opts))
		return hash;
	n = snprintf(kv, sizeof(kv), "batch=%lld;", (long long)(opts->batch ? opts->batch : 1));
	hash = profile_fnv1a64(kv, (size_t)n, hash);
	/* Sorted, so that the order of the --dim options does not matter. */
	memcpy(dims, opts->dims, sizeof(dims[0]) * opts->nr_dims);
	qsort(dims, opts->nr_dims, sizeof(dims[0]), dim_cmp);
	for (int i = 0; i < opts->nr_dims; i++) {
		n = snprintf(kv, sizeof(kv), "%s=%lld;", dims[i].name, (long long)dims[i].value);
		hash = profile_fnv1a64(kv, (size_t)n, hash);
	}
	return hash;
}

int model_open_hash(const char *path, const struct onnx_import_opts *opts, uint64_t *hash)
{
	int ret = profile_hash_file(path, hash);

	if (!ret)
		*hash = hash_with_opts(path, opts, *hash);
	return ret;
}

int model_open_hashed(const char *path, const struct onnx_import_opts *opts,
		      struct model_source *src, uint64_t *hash, struct model_owners *owners,
		      struct coloc_err *err)
{
	struct onnx_import_opts o = opts ? *opts : (struct onnx_import_opts){ .batch = 1 };
	struct model_file mf;
	size_t len = 0;
	char *buf = NULL;
	int ret;

	*src = (struct model_source){ .weights_fd = -1 };
	if (!model_path_is_onnx(path) && model_open_opts_given(opts))
		return coloc_err_set(err, -EINVAL,
				     "%s: --batch and --dim apply to ONNX files (*.onnx) only; a "
				     "coloc model states its own shapes",
				     path);
	ret = model_file_open(path, &mf, err);
	if (ret)
		return ret;
	if (owners)
		*owners = (struct model_owners){ .file = mf.name_uid,
						 .dir = mf.dir_st.st_uid,
						 .dir_mode = mf.dir_st.st_mode };
	ret = read_fd(path, mf.fd, &buf, &len, err);
	if (!ret) {
		if (hash)
			*hash = hash_with_opts(path, opts,
					       profile_fnv1a64(buf, len, PROFILE_FNV1A64_INIT));
		if (!o.external) {
			o.has_dir_fd = true;
			o.dir_fd = mf.dir_fd;
		}
		ret = open_bytes(path, buf, len, &o, src, err);
	}
	free(buf);
	model_file_close(&mf);
	return ret;
}
