// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc_open_beneath() (include/coloc/client.h): a path opened below a
 * directory by openat2, so that what is checked is what is opened (no
 * check by path first, then an open a writer could race with a link).
 * Where openat2 is missing (ENOSYS: before Linux 5.6, or a seccomp
 * profile that does not know it, systemd's RestrictSUIDSGID= among them;
 * EPERM: older container runtimes' default profiles), the path is walked
 * one component at a time with O_NOFOLLOW instead (links then refused even
 * when asked for, a link as the last component too),
 * which is as
 * strict: no absolute path, no link at any component, and no '..' at all
 * (openat2 allows one that stays below).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "coloc/client.h"

/* The flags openat takes beside flags: O_PATH refuses O_NOCTTY in openat2. */
static int beneath_flags(int flags)
{
	return flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NOCTTY);
}

int coloc_open_beneath_walk(int dirfd, const char *path, int flags)
{
	char comp[256];
	int cur = dirfd, fd = -ENOENT;

	if (!*path)
		return -ENOENT;
	if (path[0] == '/')
		return -EXDEV;
	while (*path) {
		size_t k = strcspn(path, "/");
		bool last = !path[k] || !path[k + strspn(path + k, "/")];
		bool slash = path[k] == '/'; /* a last one with a slash must be a directory */

		if (k >= sizeof(comp)) {
			fd = -ENAMETOOLONG;
			break;
		}
		memcpy(comp, path, k);
		comp[k] = '\0';
		path += k;
		path += strspn(path, "/");
		if (!strcmp(comp, "..")) {
			fd = -EXDEV;
			break;
		}
		if (!strcmp(comp, ".") && !last)
			continue;
		fd = openat(cur, comp,
			    last ? beneath_flags(flags) | O_NOFOLLOW | (slash ? O_DIRECTORY : 0) :
				   O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			struct stat st;

			fd = -errno;
			/* O_PATH | O_NOFOLLOW opens a link itself: O_DIRECTORY then says ENOTDIR */
			if (fd == -ENOTDIR &&
			    !fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
				fd = -ELOOP;
		}
		if (cur != dirfd)
			close(cur);
		if (fd < 0 || last)
			return fd;
		cur = fd;
	}
	if (cur != dirfd)
		close(cur);
	return fd;
}

/* The walk, refusing a link as the last component as openat2 does (O_PATH opens one). */
static int beneath_walk_no_link(int dirfd, const char *path, int flags)
{
	int fd = coloc_open_beneath_walk(dirfd, path, flags);
	struct stat st;

	if (fd >= 0 && (flags & O_PATH) && (fstat(fd, &st) || S_ISLNK(st.st_mode))) {
		close(fd);
		return -ELOOP;
	}
	return fd;
}

int coloc_open_beneath(int dirfd, const char *path, int flags, bool links)
{
	struct open_how how = {
		.flags = (uint64_t)beneath_flags(flags),
		.resolve =
			RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (links ? 0 : RESOLVE_NO_SYMLINKS),
	};
	long fd;

	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd < 0 && errno == EINTR);
	if (fd < 0 && (errno == ENOSYS || errno == EPERM)) /* stricter with links: none followed */
		return beneath_walk_no_link(dirfd, path, flags);
	return fd < 0 ? -errno : (int)fd;
}
