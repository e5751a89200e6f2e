/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's 'coloc' group against the node's (host_group.c): in a container
 * the image's /etc/group fixes the group's gid, and colocd admits a peer
 * by that gid, so where the node gives the gid to another group, that
 * group's processes would be colocd's members (s21 second review, LOW 1).
 */
#ifndef COLOC_DAEMON_HOST_GROUP_H
#define COLOC_DAEMON_HOST_GROUP_H

#include <stddef.h>
#include "error.h"
#include "loop.h"
#include "server.h"

/*
 * Reads path, the node's group file (root's, through a read-only mount of
 * its /etc). -EEXIST with err naming the group when one
 * other than 'coloc' holds colocd's group's gid there; else 0 with the
 * start-up log's line in line: the check passed, or, a note and no
 * refusal, the node's own 'coloc' group has another gid (its members
 * cannot reach the socket). 0 and "" when colocd has no 'coloc' group
 * (it serves root alone). -errno when path is not root's.
 */
int host_group_check(const char *path, char *line, size_t len, struct coloc_err *err);

/*
 * The check again while colocd runs (host_group_watch.c): when path
 * changes (looked at every 2 s) and on host_group_reload() (SIGHUP). Where
 * another group now holds the gid, server admits no peer but root and
 * closes the members' connections, until a check finds the gid free; one
 * log line a check. 0, or -errno with err.
 */
int host_group_watch(struct loop *loop, struct server *server, const char *path,
		     struct coloc_err *err);
void host_group_reload(void);

#endif /* COLOC_DAEMON_HOST_GROUP_H */
