/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* "ADDR:PORT" (IPv4, or [IPv6]) into a socket address, for the gateway's listeners. */
#ifndef COLOC_GATEWAY_ADDR_H
#define COLOC_GATEWAY_ADDR_H

#include <sys/socket.h>

/* 0, or -EINVAL when s is not ADDR:PORT with a port of 1..65535 (0 only if any_port). */
int gw_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len, int any_port);

#endif /* COLOC_GATEWAY_ADDR_H */
