/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What uncore.c (opening and reading), uncore_discover.c (the channels
 * found) and uncore_sysfs.c (sysfs read and encoded) share. Nothing
 * outside them includes it; the rest of colocd sees uncore.h.
 */
#ifndef COLOC_DAEMON_UNCORE_INTERNAL_H
#define COLOC_DAEMON_UNCORE_INTERNAL_H

#include <stddef.h>
#include "topology.h"
#include "uncore.h"

struct uncore {
	int nr_channels;
	struct uncore_channel *channels;
	int *read_fds;
	int *write_fds;
	int nr_sockets; /* with at least one channel */
	int nr_topology_sockets;
	char describe[320];
};

/* path's text into buf (len bytes at most), trailing white space cut; 0 or -errno. */
int uncore_read_text(const char *path, char *buf, size_t len);
/* path's number, in [lo, hi]; 0, -errno, or -EINVAL. */
int uncore_read_long(const char *path, long lo, long hi, long *out);
/* Whether a channel of u is on socket. */
bool uncore_has_channel_on(const struct uncore *u, int socket);
/* u's channels found under root's sysfs, their sockets from topo; 0 or -errno. */
int uncore_discover(struct uncore *u, const char *root, const struct topology *topo);

#endif /* COLOC_DAEMON_UNCORE_INTERNAL_H */
