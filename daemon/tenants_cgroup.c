// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A cgroup path a tenant-add names, checked as text and then opened
 * beneath the cgroup root with openat2 (tenants.c): its id, its owner and
 * its path as resolved, one answer for everything refused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include "tenants_internal.h"
#include "utf8.h"

/* A path component that must not appear: ".", "..", "-". */
static bool tenants_bad_component(const char *path)
{
	char copy[PATH_MAX], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", path);
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
		if (!strcmp(c, ".") || !strcmp(c, "..") || !strcmp(c, "-"))
			return true;
	return false;
}

/*
 * tenants_open_beneath where openat2 is missing or refused (systemd's
 * RestrictSUIDSGID=, which colocd's unit sets, answers it ENOSYS): rel's
 * components (checked as text: no ".", ".." or "-") opened one at a time
 * without following a link, each on root_fd's file system.
 */
static int tenants_walk_beneath(int root_fd, const char *rel)
{
	char copy[PATH_MAX], *save = NULL;
	struct stat root_st, st;
	int cur = root_fd;

	if (strlen(rel) >= sizeof(copy) || fstat(root_fd, &root_st))
		return -ENOTDIR;
	strcpy(copy, rel);
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int fd = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int ret = fd < 0 ? -errno : 0;

		if (!ret && (fstat(fd, &st) || st.st_dev != root_st.st_dev))
			ret = -EXDEV;
		if (cur != root_fd)
			close(cur);
		if (ret) {
			if (fd >= 0)
				close(fd);
			return ret;
		}
		cur = fd;
	}
	return cur == root_fd ? -ENOTDIR : cur;
}

/*
 * The cgroup v2 directory `rel` (components joined by '/', none of them
 * ".", ".." or "-") below the directory root_fd, opened O_PATH without
 * leaving it: no symbolic or magic link, no other mount. -errno.
 */
static int tenants_open_beneath(int root_fd, const char *rel)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));

	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		return tenants_walk_beneath(root_fd, rel);
	return fd < 0 ? -errno : (int)fd;
}

/*
 * Resolves a cgroup v2 directory below TENANTS_CGROUP_ROOT and returns its
 * id (the inode number). The path is checked as text first (below
 * TENANTS_CGROUP_ROOT/, no ".", ".." or "-"), then opened beneath the
 * cgroup root with openat2, so root never resolves a client's path
 * elsewhere (a FUSE mount's lookup could block the loop). Anything else
 * gets one and the same answer, so the socket cannot be used to probe
 * which files exist; the root is refused on its own, as attributing every
 * process on the machine to one tenant.
 */
int tenants_cgroup_id(const char *path, char *resolved, __u64 *id, uid_t *owner,
		      struct coloc_err *err)
{
	static const char prefix[] = TENANTS_CGROUP_ROOT "/";
	char copy[PATH_MAX], rel[PATH_MAX] = "", shown[PATH_MAX + 4], *save = NULL;
	const char *below;
	struct statfs sfs;
	struct stat st;
	size_t n = 0;
	int root_fd = -1, fd = -1, ret = -ENOTDIR;
	bool unified = false;

	if (strlen(path) >= PATH_MAX || strncmp(path, prefix, strlen(prefix)) ||
	    tenants_bad_component(path))
		goto bad;
	snprintf(copy, sizeof(copy), "%s", path + strlen(prefix));
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
		n += (size_t)snprintf(rel + n, sizeof(rel) - n, "%s%s", n ? "/" : "", c);
	root_fd = open(TENANTS_CGROUP_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0 || fstatfs(root_fd, &sfs))
		goto bad;
	below = rel;
	/* hybrid systems: v2 mounted at TENANTS_CGROUP_ROOT/unified */
	if (sfs.f_type != CGROUP2_SUPER_MAGIC &&
	    (!strcmp(rel, "unified") || !strncmp(rel, "unified/", 8))) {
		int v2 = openat(root_fd, "unified", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		close(root_fd);
		root_fd = v2;
		unified = true;
		below = rel[7] ? rel + 8 : "";
		if (root_fd < 0 || fstatfs(root_fd, &sfs))
			goto bad;
	}
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		goto bad;
	if (!*below) {
		ret = coloc_err_set(err, -EINVAL,
				    "cgroup %s%s is the cgroup v2 root: it holds every process; "
				    "name a cgroup below it",
				    TENANTS_CGROUP_ROOT, unified ? "/unified" : "");
		goto out;
	}
	fd = tenants_open_beneath(root_fd, below);
	if (fd < 0 || fstatfs(fd, &sfs) || fstat(fd, &st) || sfs.f_type != CGROUP2_SUPER_MAGIC ||
	    !S_ISDIR(st.st_mode))
		goto bad;
	snprintf(resolved, PATH_MAX, "%s%s", prefix, rel);
	/* the path goes back to clients in JSON, which carries UTF-8 only */
	snprintf(shown, sizeof(shown), "%s", resolved);
	if (utf8_sanitize(shown)) {
		ret = coloc_err_set(err, -EINVAL,
				    "cgroup path %s is not valid UTF-8 ('?' marks the bytes); "
				    "rename the cgroup",
				    shown);
		goto out;
	}
	*id = st.st_ino;
	*owner = st.st_uid;
	ret = 0;
	goto out;
bad:
	ret = coloc_err_set(err, -ENOTDIR,
			    "cgroup '%s' is not an existing cgroup v2 directory below %s/ "
			    "named without '.', '..' or '-' (on hybrid systems v2 is "
			    "mounted at %s/unified)",
			    path, TENANTS_CGROUP_ROOT, TENANTS_CGROUP_ROOT);
out:
	if (fd >= 0)
		close(fd);
	if (root_fd >= 0)
		close(root_fd);
	return ret;
}
