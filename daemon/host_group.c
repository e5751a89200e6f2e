// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * host_group.h: the node's group file read with fgetgrent (opened as
 * root's tools open what they trust: file_open_own_or_root), each group
 * compared with colocd's own 'coloc' group by gid and by name.
 * docs/operators.md, "The coloc group's gid".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "coloc/protocol.h"
#include "file_own.h"
#include "host_group.h"

int host_group_check(const char *path, char *line, size_t len, struct coloc_err *err)
{
	struct group *own = getgrnam(COLOC_GROUP), *g;
	long node_gid = -1;
	char why[96];
	int fd, ret = 0;
	gid_t gid;
	FILE *f;

	line[0] = '\0';
	if (!own)
		return 0;
	gid = own->gr_gid;
	fd = file_open_own_or_root(path, why, sizeof(why));
	if (fd < 0)
		return coloc_err_set(err, fd, "--host-group-file %s %s: not read (the node's "
				     "group file, root's, writable by no group or other)", path, why);
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return coloc_err_set(err, -ENOMEM, "out of memory");
	}
	while ((g = fgetgrent(f))) {
		if (!strcmp(g->gr_name, COLOC_GROUP)) {
			node_gid = g->gr_gid;
		} else if (g->gr_gid == gid) {
			ret = coloc_err_set(err, -EEXIST,
					    "gid %u, colocd's '" COLOC_GROUP "' group, is group "
					    "'%.64s' in %s: its members would be colocd's; build the "
					    "image with a gid no group of any node holds (COLOC_GID=N "
					    "tools/build-image.sh) and name it in the manifests",
					    (unsigned int)gid, g->gr_name, path);
			break;
		}
	}
	fclose(f);
	if (ret)
		return ret;
	if (node_gid >= 0 && node_gid != gid)
		snprintf(line, len, "group '" COLOC_GROUP "' is gid %ld in %s, %u here: the node's "
			 "members of it cannot reach the socket (COLOC_GID=%ld tools/build-image.sh "
			 "gives the image the node's)", node_gid, path, (unsigned int)gid, node_gid);
	else
		snprintf(line, len, "group '" COLOC_GROUP "' checked against %s: no other group "
			 "there holds gid %u", path, (unsigned int)gid);
	return 0;
}
