// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A submitted file's filesystem type from statx and /proc/self/mountinfo
 * (submit_mount.h). statx(AT_EMPTY_PATH) with no field asked and
 * AT_STATX_DONT_SYNC reaches the filesystem's getattr, which FUSE answers
 * from its cache (no request to its server), and always gives the mount
 * id and the device (overlayfs passes the flag to its layer). The mount
 * is looked up by its id, else (a bind of the same device) by its
 * major:minor.
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

int submit_mount_find(int fd, struct submit_mount *m)
{
	struct statx stx;
	char dev[32], *line = NULL, *l_dev, *l_type;
	unsigned long long l_id;
	size_t cap = 0;
	FILE *f;

	m->type[0] = '\0';
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &stx))
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		stx.stx_mnt_id = 0;
	m->block_dev = stx.stx_dev_major != 0;
	snprintf(dev, sizeof(dev), "%u:%u", stx.stx_dev_major, stx.stx_dev_minor);
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		if (!mountinfo_fields(line, &l_id, &l_dev, &l_type))
			continue;
		if (l_id == stx.stx_mnt_id || (!m->type[0] && !strcmp(l_dev, dev))) {
			snprintf(m->type, sizeof(m->type), "%s", l_type);
			if (l_id == stx.stx_mnt_id)
				break;
		}
	}
	free(line);
	fclose(f);
	return 0;
}
