// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Getting a pin dir ready. Pinned objects only live on a bpf filesystem, which
 * a fresh machine may not have mounted; a daemon that crashed leaves its pins
 * behind, and they must go before new ones take their names.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
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

static int bpffs_mkdirs(const char *dir)
{
	char path[512];
	size_t len = strlen(dir);

	if (!len || len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, len + 1);
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

static int bpffs_remove_stale_pins(const char *dir)
{
	struct dirent *de;
	char path[768];
	int removed = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!unlink(path))
			removed++;
	}
	closedir(d);
	if (removed)
		fprintf(stderr, "colocd: removed %d stale pin(s) from %s left by an earlier run\n",
			removed, dir);
	return 0;
}

int bpffs_prepare_dir(const char *dir)
{
	int err;

	if (dir[0] != '/') {
		fprintf(stderr, "colocd: pin dir '%s' must be an absolute path\n", dir);
		return -EINVAL;
	}
	if (!strncmp(dir, BPFFS_DEFAULT_MOUNT "/", sizeof(BPFFS_DEFAULT_MOUNT)) &&
	    !bpffs_is_bpffs(BPFFS_DEFAULT_MOUNT)) {
		if (mount("bpf", BPFFS_DEFAULT_MOUNT, "bpf", 0, "mode=0700")) {
			err = -errno;
			fprintf(stderr, "colocd: cannot mount bpffs at %s: %s\n",
				BPFFS_DEFAULT_MOUNT, strerror(errno));
			return err;
		}
		fprintf(stderr, "colocd: mounted bpffs at %s\n", BPFFS_DEFAULT_MOUNT);
	}
	err = bpffs_mkdirs(dir);
	if (err) {
		fprintf(stderr, "colocd: cannot create pin dir %s: %s\n", dir, strerror(-err));
		return err;
	}
	if (!bpffs_is_bpffs(dir)) {
		fprintf(stderr, "colocd: pin dir %s is not on a bpf filesystem (mount -t bpf)\n",
			dir);
		return -ENOTSUP;
	}
	return bpffs_remove_stale_pins(dir);
}

void bpffs_remove_dir(const char *dir)
{
	rmdir(dir);
}
