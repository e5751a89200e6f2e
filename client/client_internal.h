/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Between the client library's files: the connection (client.c), its bytes
 * both ways (client_io.c: a read buffer that holds whatever arrived, answer
 * lines and the raw output bytes after infer answers; sends that carry
 * descriptors), submit (client_submit.c) and infer (client_infer.c).
 */
#ifndef COLOC_CLIENT_INTERNAL_H
#define COLOC_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>
#include "coloc/client.h"
#include "client_error.h"

struct coloc_client {
	int fd;
	size_t sndbuf_for; /* the largest infer input the socket's send buffer was sized for */
	int io_timeout_ms; /* 0: sends and outputs wait for ever */
	bool use_memfd; /* coloc_client_infer's input through input_fd */
	int input_fd; /* the connection's input memfd (-1 until needed), input_map its pages */
	void *input_map;
	size_t input_cap;
	size_t sent; /* bytes of the last send that left */
	char *buf; /* bytes received, not yet taken */
	size_t len, cap;
	struct client_error error; /* set with client_fail() */
};

/* The end of the first line in the buffer, or NULL. */
char *client_line_end(struct coloc_client *c);
/*
 * Sends all of the nr_iov buffers in iov (advanced as they go), reading
 * answers meanwhile; fds (nr_fds of them, may be 0) ride on the first bytes
 * sent. 0 or -errno with the reason.
 */
int client_send_iov_fds(struct coloc_client *c, struct iovec *iov, int nr_iov, const int *fds,
			int nr_fds);
/* Waits until the buffer holds a line and need more bytes after it: 1, 0 (time up), -errno. */
int client_wait_for(struct coloc_client *c, size_t need_after_line, int timeout_ms);
/* Takes n bytes off the buffer's start. */
void client_consume(struct coloc_client *c, size_t n);

/* Unmaps and closes the connection's input memfd, if it has one. */
void client_input_memfd_drop(struct coloc_client *c);

#endif
