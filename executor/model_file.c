// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Opens a model file and its ONNX external data by path for the
 * command-line tools: each name resolved once, as root through no link
 * anywhere on the path, external data below the model's directory through
 * no link and never blocking (model_file.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "file_own.h"
#include "model_file.h"
#include "trusted_path.h"

#define READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/* What a file that is not a regular one is, for a message. */
static const char *kind_of(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "is a FIFO";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "is a device";
	if (S_ISDIR(mode))
		return "is a directory";
	if (S_ISSOCK(mode))
		return "is a socket";
	return "is not a regular file";
}

/* fd when it is a regular file; otherwise closed, -EINVAL and *what says what it is. */
static int regular_only(int fd, const char **what)
{
	struct stat st;

	if (fstat(fd, &st)) {
		int ret = -errno;

		close(fd);
		*what = "cannot be examined";
		return ret;
	}
	if (S_ISREG(st.st_mode))
		return fd;
	close(fd);
	*what = kind_of(st.st_mode);
	return -EINVAL;
}

/*
 * loc below dir_fd one component at a time with O_NOFOLLOW: a regular
 * file's fd (READ_FLAGS), or with dir a directory's (O_PATH); ".." only
 * with dir (a model's path may climb; external data may not).
 */
static int walk_nofollow(int dir_fd, const char *loc, bool dir, const char **what)
{
	char comp[NAME_MAX + 1];
	int cur = dir_fd, fd;

	*what = NULL;
	for (const char *s = loc;;) {
		size_t n = strcspn(s, "/");
		bool last = !s[n] || !s[n + strspn(s + n, "/")];

		if (n > NAME_MAX) {
			fd = -ENAMETOOLONG;
			break;
		}
		memcpy(comp, s, n);
		comp[n] = '\0';
		s += n + strspn(s + n, "/");
		if (!n || !strcmp(comp, ".")) {
			if (!last)
				continue;
			snprintf(comp, sizeof(comp), ".");
		}
		if (!dir && !strcmp(comp, "..")) {
			fd = -EPERM;
			break;
		}
		fd = openat(cur, comp,
			    last && !dir ? READ_FLAGS | O_NOFOLLOW :
					   O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			struct stat st;

			fd = -errno;
			/* a link where a directory is wanted: ENOTDIR from O_DIRECTORY */
			if (fd == -ENOTDIR && !fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) &&
			    S_ISLNK(st.st_mode))
				fd = -ELOOP;
		}
		if (cur != dir_fd)
			close(cur);
		if (fd < 0 || last)
			break;
		cur = fd;
	}
	if (fd == -ELOOP)
		*what = "is a symbolic link or lies under one";
	return fd < 0 || dir ? fd : regular_only(fd, what);
}

int model_external_open_nofollow(int dir_fd, const char *loc, const char **what)
{
	return walk_nofollow(dir_fd, loc, false, what);
}

int model_external_open(int dir_fd, const char *loc, const char **what)
{
	struct open_how how = {
		.flags = READ_FLAGS,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dir_fd, loc, &how, sizeof(how));

	*what = NULL;
	if (fd < 0 && (errno == ENOSYS || errno == E2BIG))
		return model_external_open_nofollow(dir_fd, loc, what);
	if (fd < 0) {
		int ret = -errno;

		if (ret == -ELOOP)
			*what = "is a symbolic link or lies under one";
		else if (ret == -EXDEV)
			*what = "is not below the model's directory";
		return ret;
	}
	return regular_only((int)fd, what);
}

int model_external_open_beside(const char *name, const char *loc, const char **what)
{
	const char *slash = strrchr(name, '/');
	char dir[PATH_MAX];
	int dir_fd, fd;

	*what = NULL;
	if ((size_t)snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - name + 1) : 1,
			     slash ? name : ".") >= sizeof(dir))
		return -ENAMETOOLONG;
	dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return -errno;
	fd = model_external_open(dir_fd, loc, what);
	close(dir_fd);
	return fd;
}

int model_dir_open_nofollow(const char *dir)
{
	int start = open(*dir == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC), fd;
	const char *what;

	if (start < 0)
		return -errno;
	fd = walk_nofollow(start, dir, true, &what);
	close(start);
	return fd;
}

/*
 * The model's directory (O_PATH). As root through no symbolic link on the
 * whole path (openat2 RESOLVE_NO_SYMLINKS from "/" or the working
 * directory, or one component at a time): a link leads wherever its owner
 * points it, and a member's link would choose which of root's directories
 * root reads (review of 2026-12-06 12:40, LOW 6). -ELOOP for a link.
 */
static int dir_open(const char *dir, bool no_links)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (!no_links)
		fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	else
		fd = syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof(how));
	if (fd >= 0)
		return (int)fd;
	if (!no_links || (errno != ENOSYS && errno != E2BIG))
		return -errno;
	return model_dir_open_nofollow(dir);
}

/* path's directory into dir (".", "/" or the part before the last '/'); *base its last part. */
static int split_dir(const char *path, char *dir, size_t len, const char **base,
		     struct coloc_err *err)
{
	const char *slash = strrchr(path, '/');

	*base = slash ? slash + 1 : path;
	if (!slash || slash == path)
		snprintf(dir, len, "%s", slash ? "/" : ".");
	else if ((size_t)(slash - path) >= len)
		return coloc_err_set(err, -ENAMETOOLONG, "%s: path too long", path);
	else
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
	return 0;
}

static int link_refused(const char *path, int ret, struct coloc_err *err)
{
	if (geteuid() == 0 && ret == -ELOOP)
		return coloc_err_set(err, ret,
				     "%s: a symbolic link is on the path: as root, no link is "
				     "followed (whoever may change it chooses what root reads); "
				     "give the real path",
				     path);
	return coloc_err_set(err, ret, "%s: %s", path, strerror(-ret));
}

static int owner_refused(const char *path, int ret, const char *why, struct coloc_err *err)
{
	return coloc_err_set(err, ret == -EPERM ? -EACCES : ret, "%s: %s: " TRUSTED_PATH_ADVICE,
			     path, why);
}

int model_file_open(const char *path, bool owner_rule, struct model_file *mf, struct coloc_err *err)
{
	const char *base, *what;
	bool root = geteuid() == 0;
	char dir[PATH_MAX], why[PATH_MAX + 96];
	int ret;

	*mf = (struct model_file){ .dir_fd = -1, .fd = -1 };
	ret = split_dir(path, dir, sizeof(dir), &base, err);
	if (ret)
		return ret;
	mf->dir_fd = dir_open(dir, root);
	ret = mf->dir_fd < 0 ? mf->dir_fd : fstat(mf->dir_fd, &mf->dir_st) ? -errno : 0;
	if (!ret && !*base) {
		model_file_close(mf);
		return coloc_err_set(err, -EISDIR, "%s: names a directory, not a model file", path);
	}
	if (!ret) {
		mf->fd = openat(mf->dir_fd, base, READ_FLAGS | (root ? O_NOFOLLOW : 0));
		ret = mf->fd < 0 ? -errno : 0;
	}
	if (ret) {
		model_file_close(mf);
		return link_refused(path, ret, err);
	}
	ret = regular_only(mf->fd, &what);
	if (ret < 0) {
		mf->fd = -1;
		model_file_close(mf);
		return coloc_err_set(err, ret, "%s: %s; a model is a regular file", path, what);
	}
	if (fstat(mf->fd, &mf->st)) {
		ret = -errno;
		model_file_close(mf);
		return coloc_err_set(err, ret, "%s: %s", path, strerror(-ret));
	}
	if (owner_rule) {
		ret = trusted_path_check(mf->dir_fd, base, mf->fd, why, sizeof(why));
		if (ret) {
			model_file_close(mf);
			return owner_refused(path, ret, why, err);
		}
	}
	return 0;
}

int model_file_create(const char *path, bool owner_rule, struct coloc_err *err)
{
	bool root = geteuid() == 0;
	const char *base;
	char dir[PATH_MAX], why[PATH_MAX + 96];
	int dir_fd, fd, ret;

	ret = split_dir(path, dir, sizeof(dir), &base, err);
	if (ret)
		return ret;
	dir_fd = dir_open(dir, root);
	if (dir_fd < 0)
		return link_refused(path, dir_fd, err);
	if (!owner_rule) {
		fd = openat(dir_fd, base,
			    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK |
				    (root ? O_NOFOLLOW : 0),
			    0644);
		ret = fd < 0 ? -errno : 0;
		close(dir_fd);
		return ret ? link_refused(path, ret, err) : fd;
	}
	ret = trusted_dir_check(dir_fd, why, sizeof(why));
	if (ret) {
		close(dir_fd);
		return owner_refused(path, ret, why, err);
	}
	fd = file_open_own_at(dir_fd, base, O_WRONLY | O_CREAT, 0644, why, sizeof(why));
	close(dir_fd);
	if (fd < 0)
		return owner_refused(path, fd, why, err);
	if (ftruncate(fd, 0)) {
		ret = -errno;
		close(fd);
		return coloc_err_set(err, ret, "%s: %s", path, strerror(-ret));
	}
	return fd;
}

void model_file_close(struct model_file *mf)
{
	if (mf->fd >= 0)
		close(mf->fd);
	if (mf->dir_fd >= 0)
		close(mf->dir_fd);
	mf->fd = mf->dir_fd = -1;
}
