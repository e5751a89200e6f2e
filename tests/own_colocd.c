// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A test's own colocd (own_colocd.h): made ready, started, stopped and removed. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "own_colocd.h"
#include "testutil.h"

int own_colocd_prepare(struct own_colocd *d, const char *name, const char *cache_dir, bool hostile,
		       char *why, size_t len)
{
	const char *root = getenv("COLOC_ROOT");
	char out[4096], path[PATH_MAX + 64];

	memset(d, 0, sizeof(*d));
	d->cache_dir = cache_dir;
	if (geteuid() != 0) {
		snprintf(why, len, "needs root to run colocd");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/models/mobilenet_v2.model", root ? root : ".");
	if (!realpath(path, d->model)) {
		snprintf(why, len, "%.900s not found (set COLOC_ROOT to the repo root)", path);
		return 1;
	}
	if (tu_mount_bpffs()) {
		snprintf(why, len, "cannot mount bpffs at /sys/fs/bpf");
		return -1;
	}
	if (tu_quick_profile(d->model, cache_dir, out, sizeof(out))) {
		snprintf(why, len, "no quick profile of %s: %s", d->model, out);
		return -1;
	}
	snprintf(d->dir, sizeof(d->dir), "/tmp/coloc-%s-XXXXXX", name);
	if (!mkdtemp(d->dir)) {
		d->dir[0] = '\0';
		snprintf(why, len, "cannot make a directory in /tmp");
		return -1;
	}
	snprintf(d->sock, sizeof(d->sock), "%s/colocd.sock", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/colocd.log", d->dir);
	snprintf(d->blocks, sizeof(d->blocks), "%s/blocks.tsv", d->dir);
	snprintf(d->pin, sizeof(d->pin), "/sys/fs/bpf/coloc-%s-test-%d", name, getpid());
	/* the hostile executor, with the real one beside it for the honest tenants */
	if (hostile && tu_hostile_executor_dir(d->dir, d->executor, sizeof(d->executor))) {
		snprintf(why, len, "cannot link the hostile executor into %s", d->dir);
		return -1;
	}
	return 0;
}

pid_t own_colocd_start(struct own_colocd *d, const char *const *extra)
{
	const char *args[17] = { "--cache-dir", d->cache_dir };
	int n = 2;

	if (d->executor[0]) {
		args[n++] = "--executor";
		args[n++] = d->executor;
		args[n++] = "--block-log";
		args[n++] = d->blocks;
	}
	for (int i = 0; extra && extra[i] && n < 16; i++)
		args[n++] = extra[i];
	d->pid = tu_start_colocd_with(d->sock, d->pin, d->log, args);
	return d->pid;
}

int own_colocd_finish(struct own_colocd *d)
{
	int ret = 0;

	if (d->pid > 0)
		tu_stop_colocd(d->pid);
	d->pid = 0;
	if (d->dir[0] && tu_remove_tree(d->dir))
		ret = -1;
	return ret;
}
