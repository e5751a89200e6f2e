/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * colocd's event loop: one io_uring that waits on the sensor's ring buffers,
 * the control socket and its connections, signals, and a one-second tick.
 */
#ifndef COLOC_DAEMON_SERVER_H
#define COLOC_DAEMON_SERVER_H

#include "colocd.h"
#include "error.h"

struct server;

/*
 * Takes the socket's lock (refusing if another colocd holds it), removes a
 * stale socket file and sets up the ring. Call before colocd_start so a
 * second daemon cannot disturb the pins of the first. SIGINT and SIGTERM are
 * blocked and read through a signalfd. 0, or a negative errno with err
 * saying what is wrong.
 */
int server_open(struct server **out, const char *socket_path, struct coloc_err *err);
/*
 * Creates the listening socket (mode 0660, group coloc when it exists), so
 * that it appears only when d is ready, and serves d until SIGINT or
 * SIGTERM; returns 0 then, or a negative errno with err saying why.
 */
int server_run(struct server *s, struct colocd *d, struct coloc_err *err);
/* The signal that ended server_run(), or 0. */
int server_stop_signal(const struct server *s);
/* Closes connections, removes the socket and its lock file. NULL is fine. */
void server_close(struct server *s);

#endif /* COLOC_DAEMON_SERVER_H */
