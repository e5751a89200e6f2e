/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The TCP connection each KServe client of the library opens to the
 * gateway (kserve_http.c, kserve_h2.c), made in one place.
 */
#ifndef COLOC_CLIENT_KSERVE_TCP_H
#define COLOC_CLIENT_KSERVE_TCP_H

#include <stddef.h>

/*
 * A TCP connection to target, HOST:PORT with HOST an IPv4 address or
 * "localhost", TCP_NODELAY set (each request is written whole); its
 * descriptor, or -EINVAL (target malformed) or -errno (socket, connect),
 * with why in why (len bytes).
 */
int kserve_tcp_connect(const char *target, char *why, size_t len);

#endif /* COLOC_CLIENT_KSERVE_TCP_H */
