/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The last error of a client of the library (colocd's, client.c; the KServe
 * clients, kserve_http.c, kserve_h2.c, kserve_grpc.c): the words its
 * *_error() returns, set in one place. The last one set wins: a client
 * lives on past a failed call.
 */
#ifndef COLOC_CLIENT_CLIENT_ERROR_H
#define COLOC_CLIENT_CLIENT_ERROR_H

struct client_error {
	char msg[512];
};

/* e's message made from fmt; returns code (the caller's -errno), to return in turn. */
int client_fail(struct client_error *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* COLOC_CLIENT_CLIENT_ERROR_H */
