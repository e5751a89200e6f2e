/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's event loop: one io_uring that waits on the sensor's ring buffers,
 * the control socket and its connections, signals, and a one-second tick.
 */
#ifndef COLOC_DAEMON_SERVER_H
#define COLOC_DAEMON_SERVER_H

#include "colocd.h"

struct server;

/*
 * Takes the socket's lock (refusing if another colocd holds it), removes a
 * stale socket file and sets up the ring. Call before colocd_start so a
 * second daemon cannot disturb the pins of the first. SIGINT and SIGTERM are
 * blocked and read through a signalfd.
 */
int server_open(struct server **out, const char *socket_path);
/*
 * Creates the listening socket (mode 0660, group coloc when it exists), so
 * that it appears only when d is ready, and serves d until SIGINT or
 * SIGTERM; returns 0 then, or a negative errno.
 */
int server_run(struct server *s, struct colocd *d);
/* Closes connections, removes the socket and its lock file. NULL is fine. */
void server_close(struct server *s);

#endif /* COLOC_DAEMON_SERVER_H */
