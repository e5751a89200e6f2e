/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The kernel send buffer of each connection the gateway accepts, capped,
 * so that what a client does not read stays within a bound the gateway
 * sets instead of autotuning up to net.ipv4.tcp_wmem's maximum
 * (docs/gateway.md, Memory: "What the kernel holds").
 */
#ifndef COLOC_GATEWAY_SEND_BUFFER_H
#define COLOC_GATEWAY_SEND_BUFFER_H

#include <stdbool.h>
#include <microhttpd.h>

/* HTTP and gRPC connections: the kernel doubles it, 512 KiB held a connection at most */
#define GW_SEND_BUFFER_BYTES (256 << 10)

/* fd's SO_SNDBUF set to bytes; false (errno) when the kernel refused it. */
bool gw_send_buffer_cap(int fd, int bytes);
/* The same on a libmicrohttpd connection's socket. */
bool gw_send_buffer_cap_mhd(struct MHD_Connection *conn, int bytes);

#endif
