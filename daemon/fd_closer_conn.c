// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Closing colocd's own connections (fd_closer.h): an accepted AF_UNIX
 * stream socket's last close frees what its peer wrote into it and colocd
 * did not read, and with it the last references of any descriptor in
 * flight there, written before colocd accepted it or never read. Shut down
 * both ways, the peer can queue nothing more (its sends fail with EPIPE);
 * the kernel then counts the descriptors still queued, consumed OOB skbs
 * included, and shows the count in /proc/self/fdinfo as scm_fds. None:
 * the close frees bytes only, at once. Else, or unknown: the closer
 * thread. docs/design/fd-closer.md, "colocd's own connections".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "fd_closer.h"

/* The descriptors in flight in the queue of AF_UNIX socket fd, or -1 when unknown. */
static int fd_closer_scm_fds(int fd)
{
	char path[64], info[512];
	const char *line;
	int f, n = -1;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -1;
	len = read(f, info, sizeof(info) - 1);
	close(f);
	if (len <= 0)
		return -1;
	info[len] = '\0';
	line = strstr(info, "\nscm_fds:");
	if (!line || sscanf(line + 1, "scm_fds: %d", &n) != 1)
		return -1;
	return n;
}

void fd_closer_close_conn(int fd, uid_t uid)
{
	if (fd < 0)
		return;
	if (!shutdown(fd, SHUT_RDWR) && fd_closer_scm_fds(fd) == 0)
		close(fd);
	else
		fd_closer_close(fd, uid);
}
