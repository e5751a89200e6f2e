// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Getting a pin dir ready. Pinned objects only live on a bpf filesystem,
 * which a fresh machine may not have mounted. A daemon that crashed leaves
 * its pins behind, and they must go before new ones take their names; but
 * only ours: the dir may be shared, so other pins are never touched, and the
 * root of a bpffs is refused outright. A lock on the dir keeps two daemons
 * from pinning into the same place; the dir is removed at exit, so a daemon
 * that locked a dir someone removed meanwhile holds nothing: after locking
 * it checks the path still names the locked dir (st_dev, st_ino), as the
 * socket's lock does, and otherwise tries again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include "bpffs.h"

#define BPFFS_DEFAULT_MOUNT "/sys/fs/bpf"

static bool bpffs_is_bpffs(const char *path)
{
	struct statfs st;

	return !statfs(path, &st) && st.f_type == BPF_FS_MAGIC;
}

/* The longest prefix of path that exists, written into buf. */
static void bpffs_existing_ancestor(const char *path, char *buf, size_t len)
{
	struct stat st;
	char *slash;

	snprintf(buf, len, "%s", path);
	while (stat(buf, &st)) {
		slash = strrchr(buf, '/');
		if (!slash || slash == buf) {
			snprintf(buf, len, "/");
			return;
		}
		*slash = '\0';
	}
}

/* A mount root has a different device than its parent. */
static bool bpffs_is_mount_root(const char *path)
{
	char parent[BPFFS_PATH_MAX + 4];
	struct stat st, pst;

	snprintf(parent, sizeof(parent), "%s/..", path);
	return !stat(path, &st) && !stat(parent, &pst) && st.st_dev != pst.st_dev;
}

static int bpffs_mkdirs(const char *dir)
{
	char path[BPFFS_PATH_MAX + 1];

	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* The number of pins under the given names that were there and are gone now. */
static int bpffs_remove_stale_pins(const char *dir, const char *const *names, int nr_names)
{
	char path[BPFFS_PATH_MAX + 64];
	int removed = 0;

	for (int i = 0; i < nr_names; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!unlink(path))
			removed++;
	}
	return removed;
}

/* True while d->path still names the directory d->lock_fd holds. */
static bool bpffs_path_is_locked_dir(const struct bpffs_dir *d)
{
	struct stat held, named;

	return !fstat(d->lock_fd, &held) && !lstat(d->path, &named) &&
	       held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

static int bpffs_lock(struct bpffs_dir *d, struct coloc_err *err)
{
	int ret;

	for (int tries = 0; tries < 10; tries++) {
		ret = bpffs_mkdirs(d->path);
		if (ret)
			return coloc_err_set(err, ret, "cannot create pin dir %s: %s", d->path,
					     strerror(-ret));
		d->lock_fd = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (d->lock_fd < 0 || flock(d->lock_fd, LOCK_EX | LOCK_NB)) {
			ret = coloc_err_set(err, errno == EWOULDBLOCK ? -EBUSY : -errno,
					    "pin dir %s is in use by another colocd (%s)", d->path,
					    strerror(errno));
			if (d->lock_fd >= 0)
				close(d->lock_fd);
			d->lock_fd = -1;
			return ret;
		}
		if (bpffs_path_is_locked_dir(d))
			return 0;
		close(d->lock_fd);
		d->lock_fd = -1;
	}
	return coloc_err_set(err, -EBUSY, "pin dir %s keeps changing; is another colocd starting?",
			     d->path);
}

int bpffs_open_dir(struct bpffs_dir *d, const char *dir, const char *const *names, int nr_names,
		   struct coloc_err *err)
{
	char anc[BPFFS_PATH_MAX + 1];
	int ret;

	d->lock_fd = -1;
	d->mounted = false;
	d->stale_removed = 0;
	if (dir[0] != '/' || strlen(dir) > BPFFS_PATH_MAX || strstr(dir, "/.."))
		return coloc_err_set(
			err, -EINVAL,
			"pin dir '%s' must be an absolute path of at most %d characters, without '..'",
			dir, BPFFS_PATH_MAX);
	snprintf(d->path, sizeof(d->path), "%s", dir);
	if (!strncmp(dir, BPFFS_DEFAULT_MOUNT "/", sizeof(BPFFS_DEFAULT_MOUNT)) &&
	    !bpffs_is_bpffs(BPFFS_DEFAULT_MOUNT)) {
		if (mount("bpf", BPFFS_DEFAULT_MOUNT, "bpf", 0, "mode=0700"))
			return coloc_err_set(err, -errno, "cannot mount bpffs at %s: %s",
					     BPFFS_DEFAULT_MOUNT, strerror(errno));
		d->mounted = true;
	}
	bpffs_existing_ancestor(dir, anc, sizeof(anc));
	if (!bpffs_is_bpffs(anc))
		return coloc_err_set(err, -ENOTSUP,
				     "pin dir %s is not on a bpf filesystem (mount -t bpf bpf DIR)",
				     dir);
	if (!strcmp(anc, dir) && bpffs_is_mount_root(dir))
		return coloc_err_set(
			err, -EINVAL,
			"pin dir %s is the root of a bpf filesystem; use a directory of its own below it, e.g. %s/coloc",
			dir, dir);
	ret = bpffs_lock(d, err);
	if (ret)
		return ret;
	d->stale_removed = bpffs_remove_stale_pins(dir, names, nr_names);
	return 0;
}

void bpffs_close_dir(struct bpffs_dir *d)
{
	if (d->lock_fd < 0)
		return;
	/* only the dir we locked: the path may name another daemon's by now */
	if (bpffs_path_is_locked_dir(d))
		rmdir(d->path);
	close(d->lock_fd);
	d->lock_fd = -1;
}
