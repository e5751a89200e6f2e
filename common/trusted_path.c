// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The rule for a model's files that root's tools open by a user's path
 * (trusted_path.h): the file is the process's own, and each directory up
 * to "/" is found by ".." from the one that holds it, so a link or a
 * relative path on the way changes nothing about which directories are
 * looked at.
 */
#define _GNU_SOURCE
#include "trusted_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_own.h"

/* The directory's path, for a message only ("?" where it cannot be read). */
static void dir_name(int fd, char *name, size_t len)
{
	char proc[32];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, name, len - 1);
	if (n < 0)
		snprintf(name, len, "?");
	else
		name[n] = '\0';
}

static int dir_refused(int fd, const struct stat *st, char *why, size_t len)
{
	char name[PATH_MAX];

	dir_name(fd, name, sizeof(name));
	if (st->st_uid != 0 && st->st_uid != geteuid())
		snprintf(why, len, "lies in %.256s, owned by uid %lu, not root", name,
			 (unsigned long)st->st_uid);
	else
		snprintf(why, len, "lies in %.256s, which others may write (mode %04lo)", name,
			 (unsigned long)(st->st_mode & 07777));
	return -EPERM;
}

int trusted_dir_check(int dir_fd, char *why, size_t len)
{
	struct stat root, st, up;
	int cur = dir_fd, ret = 0;

	if (stat("/", &root) || fstat(dir_fd, &st)) {
		ret = -errno;
		snprintf(why, len, "has a directory that cannot be examined");
		return ret;
	}
	for (;;) {
		int parent;

		/*
		 * Above the file's own directory a sticky one may be writable by
		 * others (/tmp): none of them can rename or remove the entry of
		 * ours below it, and that entry is checked next.
		 */
		if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
		    ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
		     (cur == dir_fd || !(st.st_mode & S_ISVTX)))) {
			ret = dir_refused(cur, &st, why, len);
			break;
		}
		if (st.st_dev == root.st_dev && st.st_ino == root.st_ino)
			break;
		parent = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0 || fstat(parent, &up)) {
			ret = -errno;
			snprintf(why, len, "has a directory above it that cannot be examined");
			if (parent >= 0)
				close(parent);
			break;
		}
		if (cur != dir_fd)
			close(cur);
		cur = parent;
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino)
			break; /* the top of this process's root: checked as st */
		st = up;
	}
	if (cur != dir_fd)
		close(cur);
	return ret;
}

int trusted_path_check(int at_fd, const char *path, int fd, char *why, size_t len)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st, entry;
	int dir_fd, ret;

	ret = file_own_check(fd, why, len);
	if (ret)
		return ret;
	if ((size_t)snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path + 1) : 1,
			     slash ? path : ".") >= sizeof(dir)) {
		snprintf(why, len, "has a path too long");
		return -ENAMETOOLONG;
	}
	dir_fd = openat(at_fd, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		ret = -errno;
		snprintf(why, len, "has a directory that cannot be opened (%s)", strerror(-ret));
		return ret;
	}
	/* one name (file_own_check), so the directory that holds it is this one */
	if (fstat(fd, &st) ||
	    fstatat(dir_fd, slash ? slash + 1 : path, &entry, AT_SYMLINK_NOFOLLOW) ||
	    st.st_dev != entry.st_dev || st.st_ino != entry.st_ino) {
		snprintf(why, len, "was replaced while it was opened");
		close(dir_fd);
		return -EAGAIN;
	}
	ret = trusted_dir_check(dir_fd, why, len);
	close(dir_fd);
	return ret;
}
