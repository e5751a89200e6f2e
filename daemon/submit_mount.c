// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A submitted file's filesystem type from statx and /proc/self/mountinfo
 * (submit_mount.h). statx(AT_EMPTY_PATH) with no field asked and
 * AT_STATX_DONT_SYNC reaches the filesystem's getattr, which FUSE answers
 * from its cache (no request to its server), and always gives the mount
 * id and the device (overlayfs passes the flag to its layer). The mount
 * is looked up by its id, else (a bind of the same device) by its
 * major:minor, in colocd's table, then in init's (/proc/1: the host's,
 * where colocd runs in a mount namespace of its own, as its systemd unit
 * makes it, with the host's pids): a mount id is unique while its mount
 * lives, whichever table lists it, and the type there is the kernel's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "submit_mount.h"

/* From a mountinfo line: its mount id, its "major:minor", its filesystem type. */
static bool mountinfo_fields(char *line, unsigned long long *id, char **dev, char **type)
{
	char *save = NULL, *sep = strstr(line, " - ");

	if (!sep)
		return false;
	*sep = '\0';
	*type = strtok_r(sep + 3, " \n", &save);
	save = NULL;
	if (!strtok_r(line, " ", &save) || !strtok_r(NULL, " ", &save))
		return false;
	*id = strtoull(line, NULL, 10);
	*dev = strtok_r(NULL, " ", &save);
	return *type && *dev;
}

/*
 * Looks fd's mount up in one mountinfo table: by id (then *by_id), else
 * by device when m->type is still empty. 0, or -errno when unreadable.
 */
static int submit_mount_lookup(const char *table, const struct statx *stx, const char *dev,
			       struct submit_mount *m, bool *by_id)
{
	char *line = NULL, *l_dev, *l_type;
	unsigned long long l_id;
	size_t cap = 0;
	FILE *f = fopen(table, "re");

	if (!f)
		return -errno;
	while (!*by_id && getline(&line, &cap, f) > 0) {
		if (!mountinfo_fields(line, &l_id, &l_dev, &l_type))
			continue;
		*by_id = l_id == stx->stx_mnt_id;
		if (*by_id || (!m->type[0] && !strcmp(l_dev, dev)))
			snprintf(m->type, sizeof(m->type), "%s", l_type);
	}
	free(line);
	fclose(f);
	return 0;
}

int submit_mount_find(int fd, struct submit_mount *m)
{
	struct statx stx;
	char dev[32];
	bool by_id = false;
	int ret;

	m->type[0] = '\0';
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &stx))
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		stx.stx_mnt_id = 0;
	m->block_dev = stx.stx_dev_major != 0;
	snprintf(dev, sizeof(dev), "%u:%u", stx.stx_dev_major, stx.stx_dev_minor);
	ret = submit_mount_lookup("/proc/self/mountinfo", &stx, dev, m, &by_id);
	if (!ret && !by_id)
		submit_mount_lookup("/proc/1/mountinfo", &stx, dev, m, &by_id);
	return ret;
}
