// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * host_group.h's check again while colocd runs: on SIGHUP, and when the
 * node's group file changes (its inode, size or times, looked at with a
 * stat every HOST_GROUP_LOOK_NS: a bind mount of the node's /etc sees a
 * rename into place as an inotify watch of the file would not). Where
 * another group now holds the coloc gid, the server admits no member by it
 * (server_refuse_group) until a check finds it free again; each verdict
 * that changes is logged. docs/operators.md, "The coloc group's gid".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "host_group.h"

#define HOST_GROUP_LOOK_NS 2000000000ull

static struct {
	const char *path;
	struct server *server;
	struct stat seen;
	bool refused;
} hg;

/* The file checked again (why: what made colocd look), the server told. */
static void host_group_recheck(const char *why)
{
	struct coloc_err err = { 0 };
	char line[512];
	int r = host_group_check(hg.path, line, sizeof(line), &err);

	if (r == -EEXIST) {
		int n = server_refuse_group(hg.server, true);

		fprintf(stderr,
			"colocd: %s: %s; members refused, %d of their connections "
			"closed, root served on\n",
			why, coloc_err_str(&err), n);
		hg.refused = true;
	} else if (r) {
		fprintf(stderr, "colocd: %s: %s; members still %s\n", why, coloc_err_str(&err),
			hg.refused ? "refused" : "served");
	} else {
		if (hg.refused)
			server_refuse_group(hg.server, false);
		printf("colocd: %s: %s%s\n", why, line[0] ? line : "no 'coloc' group here",
		       hg.refused ? "; members served again" : "");
		hg.refused = false;
	}
}

/* The file's identity and times now (all zero when it cannot be seen). */
static void host_group_stat(struct stat *st)
{
	if (stat(hg.path, st))
		memset(st, 0, sizeof(*st));
}

static bool host_group_same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void host_group_look(struct loop_source *src, __u64 now_ns, void *ctx)
{
	struct stat st;

	(void)src;
	(void)now_ns;
	(void)ctx;
	host_group_stat(&st);
	if (host_group_same(&st, &hg.seen))
		return;
	hg.seen = st;
	host_group_recheck("the node's group file changed");
}

int host_group_watch(struct loop *loop, struct server *server, const char *path,
		     struct coloc_err *err)
{
	int r;

	hg.path = path;
	hg.server = server;
	host_group_stat(&hg.seen);
	r = loop_add_timer(loop, NULL, HOST_GROUP_LOOK_NS, HOST_GROUP_LOOK_NS, host_group_look,
			   NULL);
	if (r)
		return coloc_err_set(err, r, "cannot watch --host-group-file %s: %s", path,
				     strerror(-r));
	return 0;
}

void host_group_reload(void)
{
	if (!hg.path)
		return;
	host_group_stat(&hg.seen);
	host_group_recheck("SIGHUP");
}
