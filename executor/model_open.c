// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Opens a model file for any entry point: a coloc .model through
 * model_parse(), or an .onnx through the in-memory importer, whose weights
 * buffer is handed to the executor as a sealed memfd (model_open.h). The
 * tools' files (the model, a .model's weights, an ONNX model's external
 * data, found by the scan the client runs: onnx_scan.h) are opened once
 * each, keyed (profile_key.h) and parsed from the same descriptors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_file.h"
#include "model_open.h"
#include "onnx_scan.h"
#include "profile.h"
#include "trusted_path.h"

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
	return model_open_keyed(path, NULL, opts, src, NULL, err);
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

/*
 * An ONNX model's import options as the key's 'O' part (profile_key.h):
 * "" when none is given (the key coloc-profile always used), else
 * "batch=N;" then each "NAME=VALUE;" sorted by name, so that the order of
 * the --dim options does not matter.
 */
static void options_text(const char *path, const struct onnx_import_opts *opts, char *buf,
			 size_t len)
{
	struct onnx_dim_value dims[ONNX_MAX_DIM_VALUES];
	size_t at;

	buf[0] = '\0';
	if (!model_path_is_onnx(path) || !model_open_opts_given(opts))
		return;
	at = (size_t)snprintf(buf, len, "batch=%lld;", (long long)(opts->batch ? opts->batch : 1));
	memcpy(dims, opts->dims, sizeof(dims[0]) * opts->nr_dims);
	qsort(dims, opts->nr_dims, sizeof(dims[0]), dim_cmp);
	for (int i = 0; i < opts->nr_dims && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s=%lld;", dims[i].name,
				       (long long)dims[i].value);
}

/* The files of a model as the tools open them: each once, kept open until closed. */
struct model_files {
	struct model_file mf;
	char *buf; /* the model's bytes */
	size_t len;
	int weights_fd; /* a .model's weights, sealed in a memfd; -1 if none */
	char (*locs)[ONNX_SCAN_LOCATION_LEN];
	struct onnx_external_fd *ext; /* an ONNX model's external data, by location */
	int nr_ext;
};

static void model_files_close(struct model_files *f)
{
	for (int i = 0; i < f->nr_ext; i++)
		close(f->ext[i].fd);
	if (f->weights_fd >= 0)
		close(f->weights_fd);
	free(f->ext);
	free(f->locs);
	free(f->buf);
	model_file_close(&f->mf);
}

/* The file behind fd (st_size bytes) copied by the kernel into a new sealed memfd; fd or -errno. */
static int sealed_copy(int fd, off_t size)
{
	int mfd = memfd_create("coloc-weights", MFD_CLOEXEC | MFD_ALLOW_SEALING), ret = 0;
	off_t off = 0;

	if (mfd < 0)
		return -errno;
	while (!ret && off < size) {
		ssize_t n = sendfile(mfd, fd, &off, (size_t)(size - off));

		if (n < 0 && errno != EINTR)
			ret = -errno;
		else if (n == 0)
			ret = -EIO; /* shrank meanwhile */
	}
	if (!ret && fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL))
		ret = -errno;
	if (ret) {
		close(mfd);
		return ret;
	}
	return mfd;
}

/*
 * weights (a path) opened once as model files are, copied into a sealed
 * memfd at *out (what is keyed and loaded).
 */
static int open_weights(const char *weights, bool owner_rule, int *out, struct coloc_err *err)
{
	struct model_file wf;
	int ret = model_file_open(weights, owner_rule, &wf, err);

	if (ret)
		return ret;
	*out = sealed_copy(wf.fd, wf.st.st_size);
	model_file_close(&wf);
	if (*out < 0)
		return coloc_err_set(err, *out, "%s: cannot copy the weights into memory: %s",
				     weights, strerror(-*out));
	return 0;
}

/*
 * Every external data location an ONNX model names, opened below its
 * directory; with opts->owner_rule only those that pass
 * trusted_path_check(), refused before a byte is read.
 */
static int open_externals(const char *path, const struct onnx_import_opts *opts,
			  struct model_files *f, struct coloc_err *err)
{
	int n;

	f->locs = calloc(MODEL_MAX_EXTERNAL_FILES, sizeof(*f->locs));
	if (!f->locs)
		return coloc_err_set(err, -ENOMEM, "%s: out of memory", path);
	n = onnx_scan_locations(f->buf, f->len, f->locs, MODEL_MAX_EXTERNAL_FILES);
	if (n == -E2BIG)
		return coloc_err_set(err, n, "%s: more than %d external data files", path,
				     MODEL_MAX_EXTERNAL_FILES);
	if (n <= 0) /* not a ModelProto to the scan: the importer says what is wrong */
		return 0;
	f->ext = calloc((size_t)n, sizeof(*f->ext));
	if (!f->ext)
		return coloc_err_set(err, -ENOMEM, "%s: out of memory", path);
	for (int i = 0; i < n; i++) {
		const char *what = NULL;
		int fd = model_external_open(f->mf.dir_fd, f->locs[i], &what);

		if (fd < 0)
			return coloc_err_set(err, fd, "%s: external data file '%.128s' %s", path,
					     f->locs[i], what ? what : strerror(-fd));
		if (opts && opts->owner_rule) {
			char why[PATH_MAX + 96];

			if (trusted_path_check(f->mf.dir_fd, f->locs[i], fd, why, sizeof(why))) {
				close(fd);
				return coloc_err_set(
					err, -EACCES,
					"%s: external data file %.128s %s: " TRUSTED_PATH_ADVICE,
					path, f->locs[i], why);
			}
		}
		f->ext[f->nr_ext++] = (struct onnx_external_fd){ f->locs[i], fd };
	}
	return 0;
}

/* The model at path and what it reads (weights: NULL for none), each opened once, into f. */
static int model_files_open(const char *path, const char *weights,
			    const struct onnx_import_opts *opts, struct model_files *f,
			    struct coloc_err *err)
{
	bool owner_rule = opts && opts->owner_rule;
	int ret;

	*f = (struct model_files){ .weights_fd = -1 };
	f->mf.fd = f->mf.dir_fd = -1;
	if (!model_path_is_onnx(path) && model_open_opts_given(opts))
		return coloc_err_set(err, -EINVAL,
				     "%s: --batch and --dim apply to ONNX files (*.onnx) only; a "
				     "coloc model states its own shapes",
				     path);
	if (model_path_is_onnx(path) && weights)
		return coloc_err_set(err, -EINVAL,
				     "%s: an ONNX model's weights are in the file (or its external "
				     "data); a weights file applies to a coloc .model only",
				     path);
	ret = model_file_open(path, owner_rule, &f->mf, err);
	if (ret)
		return ret;
	ret = read_fd(path, f->mf.fd, &f->buf, &f->len, err);
	if (!ret && weights)
		ret = open_weights(weights, owner_rule, &f->weights_fd, err);
	if (!ret && model_path_is_onnx(path))
		ret = open_externals(path, opts, f, err);
	return ret;
}

/* The profile key of f's files (profile_key.h). */
static int model_files_key(const char *path, const struct onnx_import_opts *opts,
			   const struct model_files *f, struct profile_key *key,
			   struct coloc_err *err)
{
	struct profile_key_external *ext = NULL;
	char options[ONNX_MAX_DIM_VALUES * (ONNX_DIM_NAME_LEN + 24) + 32];
	struct profile_key_input in = {
		.model = f->buf,
		.model_len = f->len,
		.model_fd = -1,
		.weights_fd = f->weights_fd,
		.nr_external = f->nr_ext,
		.options = options,
	};
	int ret;

	options_text(path, opts, options, sizeof(options));
	if (f->nr_ext) {
		ext = calloc((size_t)f->nr_ext, sizeof(*ext));
		if (!ext)
			return coloc_err_set(err, -ENOMEM, "%s: out of memory", path);
		for (int i = 0; i < f->nr_ext; i++)
			ext[i] = (struct profile_key_external){ f->ext[i].location, f->ext[i].fd };
	}
	in.external = ext;
	ret = profile_key_compute(&in, key, err);
	free(ext);
	return ret;
}

int model_open_key(const char *path, const char *weights, const struct onnx_import_opts *opts,
		   struct profile_key *key, struct coloc_err *err)
{
	struct model_files f;
	int ret = model_files_open(path, weights, opts, &f, err);

	if (!ret)
		ret = model_files_key(path, opts, &f, key, err);
	model_files_close(&f);
	return ret;
}

int model_open_keyed(const char *path, const char *weights, const struct onnx_import_opts *opts,
		     struct model_source *src, struct profile_key *key, struct coloc_err *err)
{
	static const struct onnx_external_fd none[1];
	struct onnx_import_opts o = opts ? *opts : (struct onnx_import_opts){ .batch = 1 };
	struct model_files f;
	int ret;

	*src = (struct model_source){ .weights_fd = -1 };
	ret = model_files_open(path, weights, opts, &f, err);
	if (!ret && key)
		ret = model_files_key(path, opts, &f, key, err);
	if (!ret) {
		/* the descriptors keyed, never a path again */
		o.external = f.ext ? f.ext : none;
		o.nr_external = f.nr_ext;
		o.has_dir_fd = false;
		ret = open_bytes(path, f.buf, f.len, &o, src, err);
	}
	if (!ret && f.weights_fd >= 0) {
		src->weights_fd = f.weights_fd;
		f.weights_fd = -1;
		snprintf(src->weights_path, sizeof(src->weights_path), "/proc/self/fd/%d",
			 src->weights_fd);
	}
	model_files_close(&f);
	return ret;
}
