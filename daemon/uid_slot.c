// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A uid slot claimed by its lock file (uid_slot.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include "uid_slot.h"

/*
 * Above the directory, no one but root may rename it away (for a second
 * colocd to lock fresh files of the same slots): each folder up to / is
 * root's and writable by no other user, unless sticky.
 */
static int check_above(int fd, const char *dir, struct coloc_err *err)
{
	struct stat st, up;
	int cur = dup(fd);

	for (int depth = 0; cur >= 0 && depth < 64; depth++) {
		int parent = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (parent < 0 || fstat(cur, &st) || fstat(parent, &up))
			break;
		close(cur);
		cur = parent;
		if (up.st_uid != 0 || (!(up.st_mode & S_ISVTX) &&
				       ((up.st_mode & S_IWOTH) ||
					((up.st_mode & S_IWGRP) && up.st_gid != 0)))) {
			close(cur);
			return coloc_err_set(err, -EPERM,
					     "a folder above the uid slots' directory %s is not "
					     "root's alone (uid %u, mode %04o): another user could "
					     "move the locks away; use a directory of root's",
					     dir, (unsigned int)up.st_uid,
					     (unsigned int)(up.st_mode & 07777));
		}
		if (up.st_ino == st.st_ino && up.st_dev == st.st_dev) {
			close(cur);
			return 0; /* "/" */
		}
	}
	if (cur >= 0)
		close(cur);
	return coloc_err_set(err, -EIO, "cannot walk up from the uid slots' directory %s", dir);
}

/* The directory: root's, writable by root alone, not a link. Made 0700 if missing. */
static int open_dir(const char *dir, struct coloc_err *err)
{
	struct stat st;
	int fd, ret;

	if (!strcmp(dir, UID_SLOT_DEFAULT_DIR) && mkdir("/run/coloc", 0755) && errno != EEXIST)
		return coloc_err_set(err, -errno, "cannot create /run/coloc: %s", strerror(errno));
	if (mkdir(dir, 0700) && errno != EEXIST)
		return coloc_err_set(err, -errno, "cannot create the uid slots' directory %s: %s",
				     dir, strerror(errno));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return coloc_err_set(err, -errno, "cannot open the uid slots' directory %s: %s%s",
				     dir, strerror(errno),
				     errno == ELOOP ? " (a symbolic link; remove it)" : "");
	if (fstat(fd, &st) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return coloc_err_set(err, -EPERM,
				     "the uid slots' directory %s is not root's alone (uid %u, "
				     "mode %04o): another user could plant or hold its lock "
				     "files; remove it or name one of root's (--uid-lock-dir)",
				     dir, (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
	}
	ret = check_above(fd, dir, err);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/* 1 if slot i's lock is now held in *fd, 0 if another colocd holds it, -errno. */
static int try_slot(int dir_fd, const char *dir, int i, int *fd, struct coloc_err *err)
{
	char name[32];
	struct stat st;

	snprintf(name, sizeof(name), "slot-%d", i);
	*fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (*fd < 0)
		return coloc_err_set(err, -errno, "cannot open the uid slot lock %s/%s: %s%s", dir,
				     name, strerror(errno),
				     errno == ELOOP ? " (a symbolic link; remove it)" : "");
	/* no one but root may open it: an open descriptor is all flock needs */
	if (fstat(*fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || st.st_nlink != 1 ||
	    (st.st_mode & 077)) {
		close(*fd);
		*fd = -1;
		return coloc_err_set(err, -EPERM,
				     "the uid slot lock %s/%s is not a plain file of root's, mode "
				     "0600, with one name; remove it",
				     dir, name);
	}
	if (!flock(*fd, LOCK_EX | LOCK_NB))
		return 1;
	if (errno != EWOULDBLOCK)
		return coloc_err_set(err, -errno, "cannot lock %s/%s: %s", dir, name,
				     strerror(errno));
	close(*fd);
	*fd = -1;
	return 0;
}

int uid_slot_claim(const char *dir, uid_t first, uid_t last, struct uid_slot *out,
		   struct coloc_err *err)
{
	uint64_t span = (uint64_t)last - first + 1, size = span / UID_SLOT_COUNT;
	int dir_fd, ret = 0;

	out->fd = -1;
	if (!dir)
		dir = UID_SLOT_DEFAULT_DIR;
	if (last < first || size == 0)
		return coloc_err_set(err, -EINVAL, "the uid range %u-%u is too small for %d slots",
				     first, last, UID_SLOT_COUNT);
	dir_fd = open_dir(dir, err);
	if (dir_fd < 0)
		return dir_fd;
	for (int i = 0; i < UID_SLOT_COUNT && ret == 0; i++) {
		ret = try_slot(dir_fd, dir, i, &out->fd, err);
		if (ret == 1) {
			out->index = i;
			out->first = (uid_t)(first + i * size);
			out->last = i == UID_SLOT_COUNT - 1 ? last : (uid_t)(out->first + size - 1);
			snprintf(out->path, sizeof(out->path), "%s/slot-%d", dir, i);
		}
	}
	close(dir_fd);
	if (ret == 0)
		return coloc_err_set(err, -EUSERS,
				     "every one of the %d executor uid slots of %u-%u is held by "
				     "another colocd (locks in %s): stop one, or give this one a "
				     "range of its own with --uid-range FIRST-LAST",
				     UID_SLOT_COUNT, first, last, dir);
	return ret < 0 ? ret : 0;
}

void uid_slot_release(struct uid_slot *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
